"""tt.gather: result[..., i, ...] = src[..., index[..., i, ...], ...], within warps or through
shared memory.

Within warps, when the layouts allow it (kernellab.layouts.gather.shuffle_plan: each warp holds
the whole axis of the source for its result elements; convert_to_ttgpuir gives 2-D and larger
gathers such layouts): for every result element a thread computes the flat source index, from
it the source lane and the registers that may hold the element, shuffles each of those
registers from that lane and keeps the one the index names. No shared memory, no barrier.

Otherwise through shared memory. The index value of a result element is data, so no layout conversion can move the source
element into place: the whole source goes to the op's scratch in flat row-major order (every
thread stores the elements it holds, a vector per run of registers), a barrier, then each
thread loads, for every element it holds of the result, the source element at flat index
(its result coordinates with the coordinate on `axis` replaced by the index value). The barrier
tracker (smem.py) puts the barrier between the stores and the loads, and another before the
next write to the same bytes.

The index must be in the result's layout (a conversion first where it is not). An index
outside [0, n) is undefined in Triton; here its low bits are taken (the index modulo n, n
being a power of two), so a bad index reads a wrong element of `src` but never memory outside
the scratch buffer.
"""

from __future__ import annotations

from kernellab.backends.llvm.convert import convert, convert_scratch_bytes
from kernellab.backends.llvm.layout import Lay, _log2
from kernellab.backends.llvm.remap import staging_run
from kernellab.backends.llvm.smem_vectors import aligned_run, load_run, smem_elem_bytes, store_runs
from kernellab.backends.llvm.types import I32, TV
from kernellab.backends.llvm.warp_shuffle import shuffle
from kernellab.ir import tt
from kernellab.layouts.gather import GatherShuffles, shuffle_plan


def _plan(ctx, op) -> GatherShuffles | None:
    """The warp shuffles of this gather, or None when it goes through shared memory."""
    return shuffle_plan(ctx.lay(op.src.type).linear, ctx.lay(op.result.type).linear, op.axis.value.data)


def gather_scratch(ctx, op) -> int:
    """Bytes for the source tensor in flat order (none within warps), and for the index's
    conversion, if any."""
    src_lay = ctx.lay(op.src.type)
    need = 0 if _plan(ctx, op) else src_lay.numel * smem_elem_bytes(op.src.type.element_type)
    idx_lay, res_lay = ctx.lay(op.indices.type), ctx.lay(op.result.type)
    if idx_lay != res_lay:
        need = max(need, convert_scratch_bytes(idx_lay, res_lay, op.indices.type.element_type))
    return need


def source_offset(b, flat, index, src: Lay, res: Lay, axis: int):
    """i32 flat index into `src` of the result element at flat index `flat` (in `res`) whose
    coordinate on `axis` becomes `index` (i32, already within the axis): the dims after `axis`
    keep their bits, the dims before it move up by the difference of the axis sizes."""
    low = src.dim_shift(axis)  # dims after `axis` have the same sizes in both shapes
    parts = [b.shl(index, I32(low)) if low else index]
    if low:
        parts.append(b.and_(flat, I32((1 << low) - 1)))
    if axis:
        res_high, src_high = low + _log2(res.shape[axis]), low + _log2(src.shape[axis])
        high = b.lshr(flat, I32(res_high))
        parts.append(b.shl(high, I32(src_high)))
    out = parts[0]
    for p in parts[1:]:
        out = b.or_(out, p)
    return out


def index_i32(b, value, n: int):
    """An integer index as i32 taken modulo the power of two `n` (the low bits decide)."""
    width = value.type.width
    if width > 32:
        value = b.trunc(value, I32)
    elif width < 32:
        value = b.sext(value, I32)
    return b.and_(value, I32(n - 1))


def _gather(ctx, op):
    axis = op.axis.value.data
    src = ctx.get(op.src)
    res_lay = ctx.lay(op.result.type)
    idx = ctx.get(op.indices)
    if idx.lay != res_lay:
        idx = convert(ctx, idx, res_lay, op)
    plan = _plan(ctx, op)
    gathered = (_within_warps if plan else _through_shared)(ctx, op, src, idx, res_lay, axis, plan)
    ctx.set(op.result, TV([gathered[f] for f in res_lay.reg_flat], res_lay, src.elem))


def _within_warps(ctx, op, src, idx, res_lay, axis, plan: GatherShuffles) -> dict:
    """Result register part → value: each candidate register shuffled from the source lane,
    the one the index names selected."""
    b, src_lay = ctx.b, src.lay
    n = src_lay.shape[axis]
    dynamic_bits = [j for j in range(len(plan.register_masks)) if plan.dynamic >> j & 1]
    out = {}
    for r in res_lay.canonical_regs:
        flat = ctx.flat_index(res_lay, r)
        offset = source_offset(b, flat, index_i32(b, idx.regs[r], n), src_lay, res_lay, axis)
        lane = _bits_of(ctx, offset, plan.lane_masks)
        candidates = plan.candidates(res_lay.reg_flat[r])
        chosen = _bits_of(ctx, offset, [plan.register_masks[j] for j in dynamic_bits]) if len(candidates) > 1 else None
        value = None
        for k, register in enumerate(candidates):
            fetched = shuffle(ctx, src.regs[register], lane, "idx") if plan.lane_masks else src.regs[register]
            value = fetched if value is None else b.select(b.icmp_unsigned("==", chosen, I32(k)), fetched, value)
        out[res_lay.reg_flat[r]] = value
    return out


def _bits_of(ctx, value, masks):
    """i32 whose bit j is the parity of value & masks[j] (a shift where the mask is one bit)."""
    b = ctx.b
    out = I32(0)
    for j, mask in enumerate(masks):
        if not mask:
            continue
        picked = b.and_(value, I32(mask))
        if mask & (mask - 1):
            picked = b.and_(ctx.call("llvm.ctpop.i32", I32, [picked]), I32(1))
        else:
            picked = b.lshr(picked, I32(mask.bit_length() - 1))
        out = b.or_(out, b.shl(picked, I32(j)) if j else picked)
    return out


def _through_shared(ctx, op, src, idx, res_lay, axis, plan) -> dict:
    """Result register part → value: the source stored to the scratch, one load per element."""
    b = ctx.b
    e, src_lay = src.elem, src.lay
    nbytes = smem_elem_bytes(e)
    base = ctx.scratch_offset(op)
    iv = ctx.scratch_interval(op)

    def ptr(flat):
        return ctx.smem_ptr(b.add(I32(base), b.mul(flat, I32(nbytes))))

    ctx.smem_access(iv, write=True)
    run = aligned_run(staging_run(src_lay, e), base, e)
    store_runs(ctx, src.regs, src_lay, e, run, lambda r: ptr(ctx.flat_index(src_lay, r)))
    ctx.smem_access(iv, write=False)
    n = src_lay.shape[axis]
    by_flat = {}
    for r in res_lay.canonical_regs:
        i = index_i32(b, idx.regs[r], n)
        offset = source_offset(b, ctx.flat_index(res_lay, r), i, src_lay, res_lay, axis)
        by_flat[res_lay.reg_flat[r]] = load_run(ctx, e, 1, ptr(offset))[0]
    return by_flat


RULES = {tt.GatherOp: _gather}
SCRATCH = {tt.GatherOp: gather_scratch}
