"""tt.gather on the CPU as a loop: with one thread holding the whole tensor, the source vector
is put in flat order (one shufflevector) and stored to the op's scratch (one store); the flat
offsets are one vector computation, the index (modulo the axis size, as in the core's rule)
shifted into place, ORed with a constant vector holding each result lane's coordinates on the
other axes; then an LLVM loop loads each result element from its offset into a stack array,
read back as the result vector (the op's scratch holds the three arrays). Code size does not grow with the tile, where the core's rule
is one scalar load per element and an `llvm.masked.gather` of the whole tensor is scalarized
by x86's code generator in superlinear time (7 s for 4096 lanes, minutes for 16384). Layouts with lanes or warps (a
kernel the CPU pipeline gave several warps never gathers) take the core's rule.
"""

from __future__ import annotations

import llvmlite.ir as ir

from kernellab.backends.cpu.lowering.vectors import VTV, as_vector, constant_vector, permute, splat, vector_type
from kernellab.backends.llvm import gather as core_gather
from kernellab.backends.llvm.dot import counted_loop
from kernellab.backends.llvm.layout import Lay, layout_of_type
from kernellab.backends.llvm.smem_vectors import smem_elem_bytes
from kernellab.backends.llvm.types import I1, I8, I32, bitwidth, llty
from kernellab.ir import tt


def _one_thread(lay: Lay) -> bool:
    return not lay.lane and not lay.warp


def _accepts(op) -> bool:
    return all(_one_thread(layout_of_type(v.type)) for v in (op.src, op.indices, op.result))


def _bits_type(e):
    """The type the values travel as: i8 for i1, an integer of the width for floats."""
    ety = llty(e)
    if ety == I1:
        return I8
    if isinstance(ety, (ir.IntType, ir.PointerType)):
        return ety
    return ir.IntType(bitwidth(e))


def _parts(src_bytes: int, n: int) -> tuple[int, int]:
    """Byte offsets in the scratch of the flat offsets (i32) and of the loaded result, after
    the source's `src_bytes`."""
    offsets_at = -(-src_bytes // 16) * 16
    return offsets_at, offsets_at + -(-4 * n // 16) * 16


def scratch(ctx, op) -> int:
    """The source, the result's flat offsets and the result itself (the loop's buffers)."""
    if not _accepts(op):
        return core_gather.gather_scratch(ctx, op)
    e = op.src.type.element_type
    n = ctx.lay(op.result.type).nregs
    return _parts(ctx.lay(op.src.type).numel * smem_elem_bytes(e), n)[1] + n * smem_elem_bytes(e)


def _gather(ctx, op):
    b = ctx.b
    axis = op.axis.value.data
    e = op.src.type.element_type
    src_lay, idx_lay, res_lay = ctx.lay(op.src.type), ctx.lay(op.indices.type), ctx.lay(op.result.type)
    ety, mty = llty(e), _bits_type(e)
    src = permute(ctx, as_vector(ctx, ctx.get(op.src), src_lay), [src_lay.reg_of_flat[f] for f in range(src_lay.numel)])
    if ety == I1:
        src = b.zext(src, vector_type(I8, src_lay.numel))
    elif mty is not ety:
        src = b.bitcast(src, vector_type(mty, src_lay.numel))
    iv = ctx.scratch_interval(op)
    base = ctx.smem_ptr(ctx.scratch_offset(op))
    ctx.smem_access(iv, write=True)
    b.store(src, base).align = smem_elem_bytes(e)

    n = res_lay.nregs
    vty = vector_type(mty, n)
    idx = as_vector(ctx, ctx.get(op.indices), idx_lay)
    if idx_lay != res_lay:
        idx = permute(ctx, idx, [idx_lay.reg_of_flat[res_lay.reg_flat[r]] for r in range(n)])
    width = idx.type.element.width
    if width > 32:
        idx = b.trunc(idx, vector_type(I32, n))
    elif width < 32:
        idx = b.sext(idx, vector_type(I32, n))
    size = src_lay.shape[axis]
    idx = b.and_(idx, splat(ctx, I32(size - 1), n))
    low = src_lay.dim_shift(axis)
    if low:
        idx = b.shl(idx, splat(ctx, I32(low), n))
    res_high, src_high = low + (res_lay.shape[axis].bit_length() - 1), low + (size.bit_length() - 1)
    rest = []
    for f in res_lay.reg_flat:  # this thread's flat index is the register's own
        rest.append(I32((f & ((1 << low) - 1)) | ((f >> res_high) << src_high)))
    offsets = b.or_(idx, constant_vector(rest))
    offsets_at, out_at = _parts(src_lay.numel * smem_elem_bytes(e), n)
    b.store(offsets, ctx.smem_ptr(ctx.scratch_offset(op) + offsets_at)).align = 4
    ctx.smem_access(iv, write=False)
    offsets_base, out_base = (ctx.smem_ptr(ctx.scratch_offset(op) + at) for at in (offsets_at, out_at))

    def element(values, r):
        offset = b.load(b.gep(offsets_base, [r], source_etype=I32), typ=I32)
        value = b.load(b.gep(base, [offset], source_etype=mty), typ=mty)
        b.store(value, b.gep(out_base, [r], source_etype=mty))
        return values

    counted_loop(ctx, [], n, 1, element, name="gather")
    v = b.load(out_base, typ=vty)
    v.align = smem_elem_bytes(e)  # a vector's natural alignment is its size
    if ety == I1:
        v = b.icmp_unsigned("!=", v, ir.Constant(vty, [I8(0)] * n))
    elif mty is not ety:
        v = b.bitcast(v, vector_type(ety, n))
    ctx.set(op.result, VTV(ctx, v, res_lay, e))


def rules() -> dict:
    core = core_gather.RULES[tt.GatherOp]

    def lower(ctx, op):
        (_gather if _accepts(op) else core)(ctx, op)

    return {tt.GatherOp: lower}


SCRATCH = {tt.GatherOp: scratch}


__all__ = ["rules", "SCRATCH"]
