"""Moving a tensor's elements between layouts: in registers when possible, else via shared memory.

Every shape op and layout conversion is "result element at flat index d = source element at
flat index g(d)" with g affine over GF(2) on the bits of the flat index (identity for
convert_layout/reshape/expand_dims, a bit permutation for trans, a bit selection for
broadcast, ...). Pulling the result layout back through g gives a layout `want` over the
source shape: result register r of thread (l, w) needs source element want(r, l, w) ^ c.

If `want` has the source's lane and warp bases, every thread already holds what it needs, at
a register index known at compile time: the conversion is a register permutation (or a no-op).
Otherwise the source is written to shared memory (indexed by its flat index, padded one
element per row to spread banks), a barrier separates the writes from the reads, and every
thread reads its result registers back.
"""

from __future__ import annotations

from kernellab.backends.nvidia.lowering.layout import Lay, _log2
from kernellab.backends.nvidia.lowering.types import I32, I8, TV, bitwidth, llty, mem_bytes


def pull_back(dst: Lay, g, src_shape) -> Lay:
    """The layout over the source shape whose register/lane/warp bases are g(dst bases)."""
    return Lay(tuple(src_shape), tuple(g(b) for b in dst.reg), tuple(g(b) for b in dst.lane),
               tuple(g(b) for b in dst.warp))  # fmt: skip


def register_plan(src: Lay, want: Lay, c: int = 0) -> list[int] | None:
    """Source register for each result register, or None if data must cross threads."""
    if want.lane != src.lane or want.warp != src.warp:
        # bases may differ only where both sides are broadcast (zero) — anything else moves data
        return None
    out = []
    table = src.reg_of_flat
    for f in want.reg_flat:
        r = table.get(f ^ c)
        if r is None:
            return None
        out.append(r)
    return out


def pad_shift(shape) -> int:
    return _log2(max(32, shape[-1] if shape else 1))


def padded_elems(shape) -> int:
    n = 1
    for s in shape:
        n *= s
    return n + (n >> pad_shift(shape)) + 1


def smem_elem_bytes(elem) -> int:
    return max(1, (bitwidth(elem) + 7) // 8)


def scratch_bytes_for(src: Lay, want: Lay, elem, c: int = 0) -> int:
    if register_plan(src, want, c) is not None:
        return 0
    return padded_elems(src.shape) * smem_elem_bytes(elem)


def _addr(ctx, flat, shift: int):
    b = ctx.b
    return b.add(flat, b.lshr(flat, I32(shift)))


def move(ctx, src: TV, want: Lay, dst: Lay, c: int = 0, op=None) -> TV:
    """The result TV (layout `dst`) whose register r holds src element want(r) ^ c."""
    plan = register_plan(src.lay, want, c)
    if plan is not None:
        return TV([src.regs[r] for r in plan], dst, src.elem)
    return TV(through_smem(ctx, src, want, c, op), dst, src.elem)


def through_smem(ctx, src: TV, want: Lay, c: int, op=None) -> list:
    b = ctx.b
    base = ctx.scratch_offset(op)
    iv = ctx.scratch_interval(op)
    ety = llty(src.elem)
    nbytes = smem_elem_bytes(src.elem)
    store_ty = I8 if bitwidth(src.elem) == 1 else ety
    shift = pad_shift(src.lay.shape)
    lay = src.lay

    ctx.smem_access(iv, write=True)
    for r in lay.canonical_regs:
        v = src.regs[r]
        if store_ty is not ety:
            v = b.zext(v, store_ty)
        idx = _addr(ctx, ctx.flat_index(lay, r), shift)
        ptr = ctx.smem_ptr(b.add(I32(base), b.mul(idx, I32(nbytes))))
        b.store(v, ptr)
    ctx.smem_access(iv, write=False)
    out = []
    memo = {}
    for r in range(want.nregs):
        f = want.reg_flat[r] ^ c
        if f in memo:
            out.append(memo[f])
            continue
        flat = ctx.thread_flat(want)
        if f:
            flat = b.xor(flat, I32(f)) if f & want.thread_bits else b.or_(flat, I32(f))
        idx = _addr(ctx, flat, shift)
        ptr = ctx.smem_ptr(b.add(I32(base), b.mul(idx, I32(nbytes))))
        v = b.load(ptr, typ=store_ty)
        if store_ty is not ety:
            v = b.trunc(v, ety)
        memo[f] = v
        out.append(v)
    return out


__all__ = ["pull_back", "register_plan", "move", "scratch_bytes_for", "mem_bytes"]
