"""tt.dot on the CPU: a register-blocked micro-kernel, as BLAS libraries do.

With one thread holding A, B and C whole, C += A·B is an outer-product loop over k. The
operands go row-major into stack arrays once, C into a third. C is then covered by micro-tiles
of MR rows × NV host vectors (`micro_tile`: the most accumulators that fit the host's vector
registers beside NV vectors of B and a broadcast of A, e.g. 4 × 4 zmm for fp32 on AVX-512);
an LLVM loop over the micro-tiles loads each block, runs the k loop on it in registers (step k:
NV loads of row k of B, MR broadcasts of a[m, k], MR·NV FMAs) and stores it back. Code size
stays linear in the tile (straight-line code for every k made a 16×32×64 int8 dot take minutes
to compile), and the tile may be larger than the register file: the earlier form held every
row of C across the k loop, so a 16×32 fp32 tile took all 32 zmm registers and LLVM rotated
and spilled them each step. K is summed in increasing order, each step one rounding,
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

from kernellab.backends.cpu.host import vector_registers
from kernellab.backends.cpu.lowering.vectors import VTV, as_vector, permute, splat, vector_type
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
    *batch, M, N = c_lay.shape
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
    c_flat = _convert(ctx, permute(ctx, acc, [c_lay.reg_of_flat[f] for f in range(c_lay.numel)]), work_ty)
    c_slot = _to_stack(ctx, c_flat)
    tile = micro_tile(work_ty, M, N, len(a_parts), len(b_parts), vector_registers())
    _tile_loop(ctx, tile, work_ty, M, N, K, rows_total, group, acc_ty, precision, a_parts, b_parts, c_slot)
    c_flat = ctx.b.load(c_slot, typ=c_flat.type)
    out = permute(ctx, _convert(ctx, c_flat, acc_ty), [c_lay.reg_flat[r] for r in range(c_lay.nregs)])
    ctx.set(op.d, VTV(ctx, out, c_lay, op.d.type.element_type))


def micro_tile(work_ty, M: int, N: int, a_terms: int, b_terms: int, registers: tuple[int, int]) -> tuple[int, int, int]:
    """(rows, vectors per row, lanes per vector) of the accumulator block the k loop keeps in
    `registers` (how many, bytes each): the most accumulators that fit beside the B vectors and
    the broadcast A values (two registers spare), then the fewest loads per step; rows divide
    M, vectors are whole registers (or all of N when a row is narrower)."""
    count, size = registers
    lanes = min(N, size * 8 // _bits(work_ty))
    best = None
    mr = 1
    while mr <= M:
        nv = 1
        while nv * lanes <= N:
            if mr * nv + nv * b_terms + a_terms <= count - 2:
                key = (mr * nv, -(mr * a_terms + nv * b_terms))
                if best is None or key > best[0]:
                    best = (key, (mr, nv, lanes))
            nv *= 2
        mr *= 2
    return best[1] if best else (1, 1, lanes)


def _bits(ty) -> int:
    return ty.width if isinstance(ty, ir.IntType) else _WIDTH[ty]


def _tile_loop(ctx, tile, work_ty, M, N, K, rows_total, group, acc_ty, precision, a_parts, b_parts, c_slot):
    """C += A·B one micro-tile at a time (an LLVM loop over them): its accumulators loaded from
    the C array, the k loop over them in registers, stored back. Each element still sums k in
    increasing order, so the result is the same as one k loop over whole rows."""
    b = ctx.b
    mr, nv, lanes = tile
    cols = N // (nv * lanes)
    vec_ty = vector_type(work_ty, lanes)
    per_iteration = min(group or 1, K)

    def at(base, index):
        return b.gep(base, [index], source_etype=work_ty)

    def one_tile(_, t):
        r0 = b.mul(b.udiv(t, I32(cols)), I32(mr))
        c0 = b.mul(b.urem(t, I32(cols)), I32(nv * lanes))
        places = [at(c_slot, b.add(b.mul(b.add(r0, I32(m)), I32(N)), b.add(c0, I32(v * lanes))))
                  for m in range(mr) for v in range(nv)]  # fmt: skip
        regs = [b.load(p, typ=vec_ty) for p in places]
        step = _multiply_add(ctx, work_ty, tile, N, K, precision, a_parts, b_parts, r0, c0, M)

        def iteration(regs, k0):
            for j in range(per_iteration):
                regs = step(regs, b.add(k0, I32(j)) if j else k0)
            if group:  # round as the instruction does, go on in fp32
                regs = [_convert(ctx, _convert(ctx, r, acc_ty), work_ty) for r in regs]
            return regs

        regs = core_dot.counted_loop(ctx, regs, K, per_iteration, iteration)
        for r, p in zip(regs, places):
            b.store(r, b.bitcast(p, vec_ty.as_pointer()))  # llvmlite keeps the slot's own pointee
        return []

    core_dot.counted_loop(ctx, [], (rows_total // mr) * cols, 1, one_tile, name="dot.tile")


def _multiply_add(ctx, work_ty, tile, N: int, K: int, precision: str, a_parts, b_parts, r0, c0, M: int):
    """fn(regs, k) -> regs after step k: the micro-tile's row m (row r0 + m of C, in batch
    i = r0 // M) += a[r0 + m, k] · B[i, k, c0:c0 + width] (tf32x3: three terms, small·big,
    big·small, big·big, in the core's order)."""
    b = ctx.b
    mr, nv, lanes = tile
    vec_ty = vector_type(work_ty, lanes)
    is_int = isinstance(work_ty, ir.IntType)
    fma = None if is_int else ctx.intrinsic(f"llvm.fma.{vector_name(vec_ty)}", vec_ty, [vec_ty, vec_ty, vec_ty])
    terms = [(1, 0), (0, 1), (0, 0)] if precision == "tf32x3" else [(0, 0)]  # (A part, B part)
    b_base = b.add(b.mul(b.udiv(r0, I32(M)), I32(K * N)), c0)  # batch i's B, column c0
    a_base = b.mul(r0, I32(K))

    def load(parts, index, ty):
        return [b.load(b.gep(p, [index], source_etype=work_ty), typ=ty) for p in parts]

    def step(regs: list, k):
        b_row = b.add(b_base, b.mul(k, I32(N)))
        b_vecs = [load(b_parts, b.add(b_row, I32(v * lanes)), vec_ty) for v in range(nv)]
        out = []
        for m in range(mr):
            a_mk = [splat(ctx, a, lanes) for a in load(a_parts, b.add(a_base, b.add(k, I32(m * K))), work_ty)]
            for v in range(nv):
                reg = regs[m * nv + v]
                for ia, ib in terms:
                    x, y = a_mk[ia], b_vecs[v][ib]
                    reg = b.add(b.mul(x, y), reg) if is_int else b.call(fma, [x, y, reg])
                out.append(reg)
        return out

    return step


def rules() -> dict:
    core = core_dot.RULES[tt.DotOp]

    def lower(ctx, op):
        (_dot if _accepts(ctx, op) else core)(ctx, op)

    return {tt.DotOp: lower}


__all__ = ["rules", "micro_tile"]
