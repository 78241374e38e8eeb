"""tt.dot on the CPU: a loop over k of vector multiply-adds into an accumulator held in
registers.

With one thread holding A, B and C whole, C += A·B is an outer-product loop over k: C's rows
are M vectors of N lanes, and step k adds a[m, k] (broadcast) × row k of B to each, one vector
FMA per row. The operands go row-major into stack arrays once, and the k loop reads row k of B
and column k of A from them: the loop body is M FMAs whatever K is, so LLVM's code generation
stays linear in the tile (straight-line code for every k made a 16×32×64 int8 dot take minutes
to compile). The rows stay in the host's vector registers across the K steps when the tile
fits them (AVX-512 has 32 registers of 16 fp32: a 16×32 accumulator takes all of them; pick
BLOCK_M × BLOCK_N ≤ 256 fp32 there). K is summed in increasing order, each step one rounding,
as the interpreter does. Floats follow input_precision like the interpreter: for fp32 × fp32,
"tf32" rounds each operand to tf32 first, "tf32x3" accumulates small·big, big·small and
big·big of the operands' tf32 parts, "ieee" multiplies the values; fp16/bf16 operands widen
exactly to the accumulator's type. Integer operands are sign-extended to the int32 (or int64)
accumulator, products added with wraparound as on the GPU. fp8 operands, and operands read
from shared memory, take the core's per-register loop.
"""

from __future__ import annotations

import llvmlite.ir as ir
from xdsl.dialects import builtin

from kernellab.backends.cpu.lowering.vectors import VTV, as_vector, concat, permute, splat, vector_type
from kernellab.backends.llvm import dot as core_dot
from kernellab.backends.llvm.portable import vector_name
from kernellab.backends.llvm.types import BF16, F16, F32, F64, I32, PTR, TV, llty
from kernellab.ir import tt

_FLOATS = (builtin.Float16Type, builtin.BFloat16Type, builtin.Float32Type, builtin.Float64Type)


def _accepts(ctx, op) -> bool:
    acc = op.d.type.element_type
    a, b = op.a.type.element_type, op.b.type.element_type
    if not all(isinstance(ctx.get(v), TV) for v in (op.a, op.b)):
        return False
    if isinstance(acc, builtin.IntegerType):
        return isinstance(a, builtin.IntegerType) and isinstance(b, builtin.IntegerType)
    return isinstance(acc, _FLOATS) and isinstance(a, _FLOATS) and isinstance(b, _FLOATS)


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


def _row_major(ctx, value, work_ty):
    """Operand `value` as one row-major vector in the working type (exact widening)."""
    b = ctx.b
    lay = ctx.lay(value.type)
    vec = as_vector(ctx, ctx.get(value), lay)
    vec = permute(ctx, vec, [lay.reg_of_flat[f] for f in range(lay.numel)])
    if vec.type.element == work_ty:
        return vec
    if isinstance(work_ty, ir.IntType):
        return b.sext(vec, vector_type(work_ty, vec.type.count))
    if vec.type.element == BF16 and work_ty == F64:  # as the core does: through fp32
        vec = b.fpext(vec, vector_type(F32, vec.type.count))
    return b.fpext(vec, vector_type(work_ty, vec.type.count))


def _parts(ctx, vec, precision: str) -> list:
    """The operand vectors the k loop multiplies: [x], [tf32(x)], or tf32x3's [big, small]."""
    if precision == "tf32":
        return [_tf32(ctx, vec)]
    if precision == "tf32x3":
        big = _tf32(ctx, vec)
        return [big, _tf32(ctx, ctx.b.fsub(vec, big))]
    return [vec]


def _to_stack(ctx, vec):
    """A stack slot holding `vec` (allocated once in the prologue, written here)."""
    slot = ctx.pro.alloca(vec.type)
    ctx.b.store(vec, slot)
    return ctx.pro.bitcast(slot, PTR)


_WIDTH = {F16: 16, BF16: 16, F32: 32, F64: 64}


def _convert(ctx, vec, ty):
    """Float vector `vec` in type `ty` (widened exactly, or narrowed with rounding)."""
    if vec.type.element == ty:
        return vec
    cast = ctx.b.fpext if _WIDTH[vec.type.element] < _WIDTH[ty] else ctx.b.fptrunc
    return cast(vec, vector_type(ty, vec.type.count))


def _dot(ctx, op):
    c_lay = ctx.lay(op.c.type)
    shape = c_lay.shape
    *batch, M, N = shape
    rows_total = M * (batch[0] if batch else 1)
    K = op.a.type.get_shape()[-1]
    acc_ty = llty(op.d.type.element_type)
    group = core_dot._rounding_group(op.a.type.element_type, op.d.type.element_type)
    work_ty = F32 if group else acc_ty
    f32 = llty(op.a.type.element_type) == F32 and llty(op.b.type.element_type) == F32
    precision = op.input_precision.data if f32 else "ieee"
    a_parts = [_to_stack(ctx, v) for v in _parts(ctx, _row_major(ctx, op.a, work_ty), precision)]
    b_parts = [_to_stack(ctx, v) for v in _parts(ctx, _row_major(ctx, op.b, work_ty), precision)]
    acc = as_vector(ctx, ctx.get(op.c), c_lay)
    rows = [_convert(ctx, permute(ctx, acc, [c_lay.reg_of_flat[i * N + n] for n in range(N)]), work_ty)
            for i in range(rows_total)]  # fmt: skip
    step = _multiply_add(ctx, work_ty, M, N, K, precision, a_parts, b_parts)
    per_iteration = min(group or 1, K)

    def iteration(rows, k0):
        for j in range(per_iteration):
            rows = step(rows, ctx.b.add(k0, I32(j)) if j else k0)
        if group:  # round as the instruction does, go on in fp32
            rows = [_convert(ctx, _convert(ctx, r, acc_ty), work_ty) for r in rows]
        return rows

    rows = core_dot.counted_loop(ctx, rows, K, per_iteration, iteration)
    row_major = concat(ctx, [_convert(ctx, r, acc_ty) for r in rows])
    out = permute(ctx, row_major, [c_lay.reg_flat[r] for r in range(c_lay.nregs)])
    ctx.set(op.d, VTV(ctx, out, c_lay, op.d.type.element_type))


def _multiply_add(ctx, work_ty, M: int, N: int, K: int, precision: str, a_parts, b_parts):
    """fn(rows, k) -> rows after step k: row (i, m) += a[i, m, k] · B[i, k, :] for each batch
    index i (tf32x3: three terms, small·big, big·small, big·big, in the core's order)."""
    b = ctx.b
    row_ty = vector_type(work_ty, N)
    is_int = isinstance(work_ty, ir.IntType)
    fma = None if is_int else ctx.intrinsic(f"llvm.fma.{vector_name(row_ty)}", row_ty, [row_ty, row_ty, row_ty])
    terms = [(1, 0), (0, 1), (0, 0)] if precision == "tf32x3" else [(0, 0)]  # (A part, B part)

    def load(parts, index, ty):
        return [b.load(b.gep(p, [index], source_etype=work_ty), typ=ty) for p in parts]

    def step(rows: list, k):
        out, b_row = [], None
        for r, row in enumerate(rows):
            i, m = divmod(r, M)
            if m == 0:  # row k of this batch's B
                b_row = load(b_parts, b.add(b.mul(k, I32(N)), I32(i * K * N)), row_ty)
            a_mk = [splat(ctx, a, N) for a in load(a_parts, b.add(k, I32((i * M + m) * K)), work_ty)]
            for ia, ib in terms:
                row = b.add(b.mul(a_mk[ia], b_row[ib]), row) if is_int else b.call(fma, [a_mk[ia], b_row[ib], row])
            out.append(row)
        return out

    return step


def rules() -> dict:
    core = core_dot.RULES[tt.DotOp]

    def lower(ctx, op):
        (_dot if _accepts(ctx, op) else core)(ctx, op)

    return {tt.DotOp: lower}


__all__ = ["rules"]
