"""tt.dot as FMA: each thread computes its accumulator registers as Σ_k a[m,k]·b[k,n].

The operands must give every thread the A rows and B columns of its accumulator elements for
all k. Whatever dot-operand layouts the TTGIR passes chose, the lowering states exactly what
it needs — layouts derived from the accumulator's (A: register r·k ↦ (m of r, k); lanes and
warps as the accumulator's, projected onto m; B likewise onto n) — and moves the operands
there with convert.py (the layout core's conversion_plan: register permutation, warp shuffles
or shared memory).

Arithmetic is done in the accumulator's type: fp16/bf16/fp8 inputs are converted exactly to
fp32 (or the accumulator's float type), int8 inputs sign-extended to int32; `fma` rounds once
per step. K is summed in increasing order. fp32 × fp32 follows input_precision as tensor cores
would, and exactly as the interpreter does: "tf32" rounds each operand element with
`cvt.rna.tf32.f32` (nearest, ties away from zero; sm_80+) before its FMA; "tf32x3" splits each
operand into big = tf32(x) and small = tf32(x − big) and accumulates small·big, big·small,
big·big (three FMAs per k); "ieee" multiplies the fp32 values.
"""

from __future__ import annotations

import llvmlite.ir as ir

from kernellab.backends.nvidia.lowering.convert import convert, convert_scratch_bytes
from kernellab.backends.nvidia.lowering.core import LoweringError, lowers, scratch
from kernellab.backends.nvidia.lowering.layout import Lay, coords_of, flat_of
from kernellab.backends.nvidia.lowering.mma import is_mma_dot, lower_mma_dot, tf32_bits
from kernellab.backends.nvidia.lowering.types import BF16, F16, F32, F64, is_fp8, llty
from kernellab.ir import tt, ttg


def operand_layouts(c: Lay, a_shape, b_shape) -> tuple[Lay, Lay]:
    """The layouts (over A's and B's shapes) the FMA loop reads, derived from C's layout."""
    rank = c.rank
    K = a_shape[-1]

    def proj_a(f):
        co = coords_of(f, c.shape)
        return flat_of(tuple(co[:-1]) + (0,), a_shape)

    def proj_b(f):
        co = coords_of(f, c.shape)
        return flat_of(tuple(co[:-2]) + (0, co[-1]), b_shape)

    kbits = K.bit_length() - 1
    a_k = tuple(1 << i for i in range(kbits))  # k is A's last dim: flat step 1
    b_k = tuple(flat_of((0,) * (rank - 2) + (1 << i, 0), b_shape) for i in range(kbits))
    a = Lay(tuple(a_shape), tuple(proj_a(x) for x in c.reg) + a_k,
            tuple(proj_a(x) for x in c.lane), tuple(proj_a(x) for x in c.warp))  # fmt: skip
    b = Lay(tuple(b_shape), tuple(proj_b(x) for x in c.reg) + b_k,
            tuple(proj_b(x) for x in c.lane), tuple(proj_b(x) for x in c.warp))  # fmt: skip
    return a, b


def _layouts(ctx, op):
    c_lay = ctx.lay(op.c.type)
    a_shape = tuple(op.a.type.get_shape())
    b_shape = tuple(op.b.type.get_shape())
    return (c_lay, *operand_layouts(c_lay, a_shape, b_shape))


@scratch(tt.DotOp)
def _dot_scratch(ctx, op) -> int:
    if is_mma_dot(op):
        return 0
    c_lay, a_need, b_need = _layouts(ctx, op)
    a_lay, b_lay = ctx.lay(op.a.type), ctx.lay(op.b.type)
    return max(
        convert_scratch_bytes(a_lay, a_need, op.a.type.element_type),
        convert_scratch_bytes(b_lay, b_need, op.b.type.element_type),
    )


def _operand_reader(ctx, value, tv, need: Lay, op):
    """fn(register of `need`) -> LLVM value. An operand loaded from shared memory by
    ttg.local_load is re-read element by element as the k loop needs it (short live ranges:
    only one k-slice of A and B is held at a time; the local_load's own loads are dead);
    otherwise the registers are moved into `need` up front."""
    from kernellab.backends.nvidia.lowering.shape import _buf_interval, smem_offset
    from kernellab.backends.nvidia.lowering.types import I8, I32, bitwidth

    owner = value.owner
    if isinstance(owner, ttg.LocalLoadOp) and owner.src in ctx.smem.buffers:
        buf = ctx.get(owner.src)
        b = ctx.b
        ety = llty(buf.elem)
        nbytes = max(1, bitwidth(buf.elem) // 8)
        ctx.smem_access(_buf_interval(ctx, owner.src), write=False)
        memo: dict = {}

        def read(r):
            f = need.reg_flat[r]
            v = memo.get(f)
            if v is None:
                coords = [ctx.coord(need, r, d) for d in range(need.rank)]
                off = smem_offset(ctx, buf, coords)
                ptr = ctx.smem_ptr(b.add(I32(buf.offset), b.mul(off, I32(nbytes))))
                v = b.load(ptr, typ=ety)
                memo[f] = v
            return v

        return read
    moved = convert(ctx, tv, need, op)
    return lambda r: moved.regs[r]


def tf32_round(ctx, v):
    """fp32 → fp32 rounded to tf32 (the rounded value, low 13 bits zero)."""
    return ctx.b.bitcast(tf32_bits(ctx, v), F32)


def to_acc_type(ctx, v, src_elem, acc_elem):
    b = ctx.b
    aty = llty(acc_elem)
    if v.type == aty and not is_fp8(src_elem):
        return v
    if isinstance(aty, ir.IntType):
        w = v.type.width
        if w < aty.width:
            return b.sext(v, aty)
        if w > aty.width:
            return b.trunc(v, aty)
        return v
    if is_fp8(src_elem):
        from kernellab.backends.nvidia.lowering.fp8 import convert_float

        return convert_float(ctx, v, src_elem, acc_elem, "rtne")
    if isinstance(v.type, ir.IntType):  # int inputs into a float accumulator
        return b.sitofp(v, aty)
    order = {F16: 16, BF16: 16, F32: 32, F64: 64}
    if order[v.type] < order[aty]:
        if v.type == BF16 and aty == F64:
            return b.fpext(b.fpext(v, F32), F64)
        return b.fpext(v, aty)
    return b.fptrunc(v, aty)


@lowers(tt.DotOp)
def _dot(ctx, op):
    if is_mma_dot(op):
        return lower_mma_dot(ctx, op)
    b = ctx.b
    a_tv, b_tv, c_tv = ctx.get(op.a), ctx.get(op.b), ctx.get(op.c)
    c_lay, a_need, b_need = _layouts(ctx, op)
    if c_tv.lay != c_lay:
        raise LoweringError("tt.dot accumulator layout mismatch")
    a_get = _operand_reader(ctx, op.a, a_tv, a_need, op)
    b_get = _operand_reader(ctx, op.b, b_tv, b_need, op)
    acc_elem = op.d.type.element_type
    aty = llty(acc_elem)
    a_elem, b_elem = op.a.type.element_type, op.b.type.element_type
    f32 = llty(a_elem) == F32 and llty(b_elem) == F32
    precision = op.input_precision.data if f32 else "ieee"
    memo: dict = {}

    def rounded(v, part):
        """The fp32 operand element v's tf32 "big" or "small" part (fp32), memoised."""
        key = (id(v), part)
        if key not in memo:
            if part == "big":
                r = tf32_round(ctx, v)
            else:
                r = tf32_round(ctx, b.fsub(v, rounded(v, "big")))
            memo[key] = (r, v)  # v kept alive: its id stays unique while memoised
        return memo[key][0]

    def conv(v, elem, part=None):
        """Operand element v in the accumulator's type; part "big"/"small": its tf32 part."""
        key = (id(v), part, "acc")
        if key not in memo:
            r = v if part is None else rounded(v, part)
            memo[key] = (to_acc_type(ctx, r, elem, acc_elem), v)
        return memo[key][0]

    K = op.a.type.get_shape()[-1]
    nc = len(c_lay.reg)
    out = list(c_tv.regs)
    canonical = c_lay.canonical_regs
    is_int = isinstance(aty, ir.IntType)
    fma = None if is_int else ctx.intrinsic(f"llvm.fma.{ {F16: 'f16', BF16: 'bf16', F32: 'f32', F64: 'f64'}[aty] }",
                                             aty, [aty, aty, aty])  # fmt: skip
    for k in range(K):
        for r in canonical:
            av, bv = a_get(r + (k << nc)), b_get(r + (k << nc))
            if is_int:
                out[r] = b.add(b.mul(conv(av, a_elem), conv(bv, b_elem)), out[r])
            elif precision == "tf32":
                out[r] = b.call(fma, [conv(av, a_elem, "big"), conv(bv, b_elem, "big"), out[r]])
            elif precision == "tf32x3":
                a_big, b_big = conv(av, a_elem, "big"), conv(bv, b_elem, "big")
                out[r] = b.call(fma, [conv(av, a_elem, "small"), b_big, out[r]])
                out[r] = b.call(fma, [a_big, conv(bv, b_elem, "small"), out[r]])
                out[r] = b.call(fma, [a_big, b_big, out[r]])
            else:
                out[r] = b.call(fma, [conv(av, a_elem), conv(bv, b_elem), out[r]])
    for r in range(c_lay.nregs):
        canon = c_lay.reg_of_flat[c_lay.reg_flat[r]]
        out[r] = out[canon]
    from kernellab.backends.nvidia.lowering.types import TV

    ctx.set(op.d, TV(out, c_lay, acc_elem))
