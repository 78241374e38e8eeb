"""tt.dot on the CPU: vectorized FMAs over the whole accumulator held in registers.

With one thread holding A, B and C whole, C += A·B is an outer-product loop over k: C's rows
are M vectors of N lanes, and step k adds a[m, k] (broadcast) × row k of B to each, one vector
FMA per row. The rows stay in the host's vector registers across the K steps when the tile
fits them (AVX-512 has 32 registers of 16 fp32: a 16×32 accumulator takes all of them; pick
BLOCK_M × BLOCK_N ≤ 256 fp32 there). K is summed in increasing order, each step one rounding,
as the interpreter does. fp32 follows
input_precision like the interpreter: "tf32" rounds each operand to tf32 first, "ieee" not;
fp16/bf16 operands widen exactly to fp32. Other cases (int8, tf32x3, operands in shared
memory) take the core's per-register FMA loop.
"""

from __future__ import annotations

import llvmlite.ir as ir
from xdsl.dialects import builtin

from kernellab.backends.cpu.lowering.vectors import VTV, as_vector, concat, lane_mask, splat, undefined, vector_type
from kernellab.backends.llvm import dot as core_dot
from kernellab.backends.llvm.layout import flat_of
from kernellab.backends.llvm.portable import vector_name
from kernellab.backends.llvm.types import F32, I32, TV, llty
from kernellab.ir import tt

_WIDENED = (builtin.Float16Type, builtin.BFloat16Type, builtin.Float32Type)


def _accepts(ctx, op) -> bool:
    acc = op.d.type.element_type
    a, b = op.a.type.element_type, op.b.type.element_type
    if isinstance(acc, builtin.Float16Type):  # fp16 × fp16 into fp16: FMAs in fp16
        if not (isinstance(a, builtin.Float16Type) and isinstance(b, builtin.Float16Type)):
            return False
    elif not isinstance(acc, builtin.Float32Type) or not isinstance(a, _WIDENED) or not isinstance(b, _WIDENED):
        return False
    if len(op.d.type.get_shape()) != 2 or not all(isinstance(ctx.get(v), TV) for v in (op.a, op.b)):
        return False
    f32 = isinstance(a, builtin.Float32Type) and isinstance(b, builtin.Float32Type)
    return not f32 or op.input_precision.data in ("ieee", "tf32")


def _tf32(ctx, vec):
    """Each lane rounded to tf32 (nearest, ties away), as the target's tf32_round."""
    b = ctx.b
    n = vec.type.count
    ity = vector_type(I32, n)

    def const(v):
        return ir.Constant(ity, [I32(v)] * n)

    bits = b.bitcast(vec, ity)
    rounded = b.and_(b.add(bits, const(0x1000)), const(~0x1FFF))
    finite = b.icmp_unsigned("<", b.and_(bits, const(0x7F800000)), const(0x7F800000))
    return b.bitcast(b.select(finite, rounded, bits), vec.type)


def _operand(ctx, op, value, precision: str, acc_ty):
    lay = ctx.lay(value.type)
    vec = as_vector(ctx, ctx.get(value), lay)
    if vec.type.element != acc_ty:
        vec = ctx.b.fpext(vec, vector_type(acc_ty, vec.type.count))  # exact
    elif acc_ty == F32 and precision == "tf32" and op.a.type.element_type == op.b.type.element_type:
        vec = _tf32(ctx, vec)
    return lay, vec


def _dot(ctx, op):
    b = ctx.b
    c_lay = ctx.lay(op.c.type)
    precision = op.input_precision.data
    acc_ty = llty(op.d.type.element_type)
    a_lay, a_vec = _operand(ctx, op, op.a, precision, acc_ty)
    b_lay, b_vec = _operand(ctx, op, op.b, precision, acc_ty)
    acc = as_vector(ctx, ctx.get(op.c), c_lay)
    M, N = c_lay.shape
    K = op.a.type.get_shape()[-1]
    row_ty = vector_type(acc_ty, N)
    fma = ctx.intrinsic(f"llvm.fma.{vector_name(row_ty)}", row_ty, [row_ty, row_ty, row_ty])

    def pick(vec, lanes_):
        if lanes_ == list(range(vec.type.count)):
            return vec
        return b.shuffle_vector(vec, undefined(vec.type), lane_mask(tuple(lanes_)))

    rows = [pick(acc, [c_lay.reg_of_flat[flat_of((m, n), c_lay.shape)] for n in range(N)]) for m in range(M)]
    for k in range(K):
        b_row = pick(b_vec, [b_lay.reg_of_flat[flat_of((k, n), b_lay.shape)] for n in range(N)])
        for m in range(M):  # a[m, k] as a scalar, broadcast: no shuffle of the whole of A
            a_mk = b.extract_element(a_vec, I32(a_lay.reg_of_flat[flat_of((m, k), a_lay.shape)]))
            rows[m] = b.call(fma, [splat(ctx, a_mk, N), b_row, rows[m]])
    row_major = concat(ctx, rows)
    out = pick(row_major, [c_lay.reg_flat[r] for r in range(c_lay.nregs)])
    ctx.set(op.d, VTV(ctx, out, c_lay, op.d.type.element_type))


def rules() -> dict:
    core = core_dot.RULES[tt.DotOp]

    def lower(ctx, op):
        (_dot if _accepts(ctx, op) else core)(ctx, op)

    return {tt.DotOp: lower}


__all__ = ["rules"]
