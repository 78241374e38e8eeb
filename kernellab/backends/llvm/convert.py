"""Converting a tensor between two layouts of one shape, as `kernellab.layouts.conversion_plan`
decides (the layout core plans; this module only emits).

Every conversion in the lowering comes through `convert`: `ttg.convert_layout`, the shape ops
once remap.py has reduced them to a same-shape conversion, the reductions' last step and the
dot operands. The plan's kind picks the code:
  noop      -> the source registers are reused as they are;
  registers -> destination register r is source register plan.src_register[r] (a select chain
               over the candidates where that register depends on the thread);
  shuffle   -> `shfl.sync.idx` from lane plan.src_lane[r] for every candidate source register,
               then the same select chain;
  shared    -> remap.through_smem: stores, a barrier, loads, in the staging layout that
               layouts.staging chooses for both sides' accesses (the lab's choice too); where
               the target has matrix stores (stmatrix) and the source is a 16-bit
               MMA-accumulator-shaped fragment, the stores are stmatrix.x4.
Where one destination register would need more than MAX_CANDIDATES candidate source registers
the select chain would cost more than the round trip through shared memory, so it goes there.
"""

from __future__ import annotations

from dataclasses import dataclass

from kernellab.backends.llvm.layout import Lay
from kernellab.backends.llvm.remap import smem_elem_bytes, through_smem
from kernellab.backends.llvm.types import I32, TV
from kernellab.backends.llvm.warp_shuffle import shuffle
from kernellab.layouts import LinearLayout, conversion_plan, staging

MAX_CANDIDATES = 4


def _span(vectors) -> list[int]:
    out = [0]
    for v in vectors:
        if v and v not in out:
            out = out + [x ^ v for x in out]
    return sorted(set(out))


@dataclass(frozen=True)
class Emission:
    """What `convert` emits: `kind` (noop / registers / shuffle / shared) and, for registers and
    shuffle, per destination register its constant source register and lane delta; plus the
    lane/warp bases of the thread-dependent parts of both (for shared, see `staging_for`)."""

    kind: str
    reg_const: tuple[int, ...] = ()
    lane_const: tuple[int, ...] = ()
    reg_by_lane: tuple[int, ...] = ()
    reg_by_warp: tuple[int, ...] = ()
    lane_by_lane: tuple[int, ...] = ()
    lane_by_warp: tuple[int, ...] = ()

    @property
    def candidates(self) -> list[int]:
        """Thread-dependent offsets XORed onto reg_const (just [0] when none)."""
        return _span(self.reg_by_lane + self.reg_by_warp)

    @property
    def lane_varies(self) -> bool:
        return any(self.lane_by_lane) or any(self.lane_by_warp)


_CACHE: dict = {}


def emission_for(src: Lay, dst: Lay, elem) -> Emission:
    """The plan for src -> dst (computed once per pair and element size)."""
    nbytes = smem_elem_bytes(elem)
    key = (src, dst, nbytes)
    em = _CACHE.get(key)
    if em is not None:
        return em
    if src.shape != dst.shape:
        raise ValueError(f"convert needs one shape, got {src.shape} and {dst.shape}")
    plan = conversion_plan(src.linear, dst.linear, nbytes, suggest_swizzle=False)
    if plan.kind in ("noop", "shared"):
        em = Emission(plan.kind)
    else:
        d = plan.deltas
        ri, li = d.out_dims.index("register"), d.out_dims.index("lane")
        consts = [d.apply(register=r) for r in range(dst.nregs)]
        lane_b = d.bases.get("lane", ())
        warp_b = d.bases.get("warp", ())
        em = Emission(
            plan.kind,
            reg_const=tuple(c[ri] for c in consts),
            lane_const=tuple(c[li] for c in consts),
            reg_by_lane=tuple(b[ri] for b in lane_b),
            reg_by_warp=tuple(b[ri] for b in warp_b),
            lane_by_lane=tuple(b[li] for b in lane_b),
            lane_by_warp=tuple(b[li] for b in warp_b),
        )
        if len(em.candidates) > MAX_CANDIDATES:
            em = Emission("shared")
    _CACHE[key] = em
    return em


_STAGING: dict = {}


def staging_for(src: Lay, dst: Lay, elem, matrix_stores: bool) -> tuple[LinearLayout, Lay | None]:
    """A "shared" conversion's staging layout and, when the stores are stmatrix.x4, their
    row-address layout: `kernellab.layouts.staging`, the choice the lab shows too."""
    nbytes = smem_elem_bytes(elem)
    key = (src, dst, nbytes, matrix_stores)
    found = _STAGING.get(key)
    if found is None:
        shared, _, _, rows = staging(src.linear, dst.linear, nbytes, matrix_stores)
        found = _STAGING[key] = (shared, Lay(rows) if rows is not None else None)
    return found


def convert_scratch_bytes(src: Lay, dst: Lay, elem) -> int:
    """Shared-memory scratch `convert(src -> dst)` needs (0 unless it goes through shared): the
    whole tensor, whatever the staging layout (a bijection onto its elements)."""
    if emission_for(src, dst, elem).kind != "shared":
        return 0
    return src.numel * smem_elem_bytes(elem)


def convert(ctx, src: TV, dst: Lay, op=None) -> TV:
    """`src` re-laid out as `dst` (same shape)."""
    em = emission_for(src.lay, dst, src.elem)
    if em.kind == "noop":
        return TV(list(src.regs), dst, src.elem)
    if em.kind == "shared":
        staging, rows = staging_for(src.lay, dst, src.elem, ctx.target.matrix_stores)
        return TV(through_smem(ctx, src, dst, staging, rows, op), dst, src.elem)
    b = ctx.b
    cands = em.candidates
    # thread-dependent parts, computed once per thread in the prologue
    reg_var = (
        ctx._emit_index_terms([(ctx.lane, em.reg_by_lane), (ctx.warp, em.reg_by_warp)])
        if len(cands) > 1
        else None
    )
    lane_var = (
        ctx._emit_index_terms([(ctx.lane, em.lane_by_lane), (ctx.warp, em.lane_by_warp)])
        if em.lane_varies
        else None
    )
    lane_base = ctx.lane if lane_var is None else b.xor(ctx.lane, lane_var)
    out, memo = [], {}
    for r in range(dst.nregs):
        rc, lc = em.reg_const[r], em.lane_const[r]
        key = (rc, lc)
        if key in memo:
            out.append(memo[key])
            continue
        src_lane = None
        if lane_var is not None or lc:
            src_lane = b.xor(lane_base, I32(lc)) if lc else lane_base
        values = []
        for c in cands:
            v = src.regs[rc ^ c]
            if src_lane is not None:
                v = shuffle(ctx, v, src_lane, "idx")
            values.append(v)
        v = values[0]
        for c, alt in zip(cands[1:], values[1:]):
            v = b.select(b.icmp_unsigned("==", reg_var, I32(c)), alt, v)
        memo[key] = v
        out.append(v)
    return TV(out, dst, src.elem)


__all__ = ["convert", "convert_scratch_bytes", "emission_for", "staging_for", "MAX_CANDIDATES"]
