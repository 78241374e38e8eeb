"""tt.gather on the CPU as three vector instructions: with one thread holding the whole
tensor, the source vector is put in flat order (one shufflevector) and stored to the op's
scratch (one store), and the result is one `llvm.masked.gather` from the flat offsets: the
index (modulo the axis size, as in the core's rule) shifted into place, ORed with a constant
vector holding each result lane's coordinates on the other axes. Code size stays linear in the
tile, where the core's rule is one scalar load per element. Layouts with lanes or warps (a
kernel the CPU pipeline gave several warps never gathers) take the core's rule.
"""

from __future__ import annotations

import llvmlite.ir as ir

from kernellab.backends.cpu.lowering.vectors import VTV, as_vector, constant_vector, permute, splat, undefined, vector_type
from kernellab.backends.llvm import gather as core_gather
from kernellab.backends.llvm.layout import Lay, layout_of_type
from kernellab.backends.llvm.portable import vector_name
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
    ptrs = b.gep(base, [offsets], source_etype=mty)
    ptrs.type = vector_type(base.type, n)
    vty = vector_type(mty, n)
    ones = ir.Constant(vector_type(I1, n), [I1(1)] * n)
    fn = ctx.intrinsic(f"llvm.masked.gather.{vector_name(vty)}.{vector_name(ptrs.type)}", vty,
                       [ptrs.type, I32, ones.type, vty])  # fmt: skip
    ctx.smem_access(iv, write=False)
    v = b.call(fn, [ptrs, I32(smem_elem_bytes(e)), ones, undefined(vty)])
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


__all__ = ["rules"]
