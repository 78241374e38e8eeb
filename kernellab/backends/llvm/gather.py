"""tt.gather through shared memory: result[..., i, ...] = src[..., index[..., i, ...], ...].

The index value of a result element is data, so no layout conversion can move the source
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
from kernellab.ir import tt


def gather_scratch(ctx, op) -> int:
    """Bytes for the source tensor in flat order (and for the index's conversion, if any)."""
    src_lay = ctx.lay(op.src.type)
    need = src_lay.numel * smem_elem_bytes(op.src.type.element_type)
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
    b = ctx.b
    axis = op.axis.value.data
    src = ctx.get(op.src)
    res_lay = ctx.lay(op.result.type)
    idx = ctx.get(op.indices)
    if idx.lay != res_lay:
        idx = convert(ctx, idx, res_lay, op)
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
    ctx.set(op.result, TV([by_flat[f] for f in res_lay.reg_flat], res_lay, e))


RULES = {tt.GatherOp: _gather}
SCRATCH = {tt.GatherOp: gather_scratch}
