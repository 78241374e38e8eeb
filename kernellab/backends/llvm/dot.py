"""tt.dot as FMA: each thread computes its accumulator registers as Σ_k a[m,k]·b[k,n].

The TTGIR passes give the operands the dot-operand layouts of the accumulator's (#ttg.dot_op
of its blocked layout, kernellab.layouts.dot_operand): every thread holds the A rows and B
columns of its accumulator elements for all k. The loop reads them from those layouts as the
types say; it computes no layout of its own.

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

from kernellab.backends.llvm.errors import LoweringError
from kernellab.backends.llvm.layout import Lay, coords_of, flat_of
from kernellab.backends.llvm.shared_buffers import base_offset, buffer_interval, smem_offset
from kernellab.backends.llvm.types import BF16, F16, F32, F64, I32, TV, bitwidth, float_suffix, is_fp8, llty
from kernellab.ir import tt, ttg


def _operand_layout(ctx, op, value, op_idx: int) -> Lay:
    """The layout of dot operand `value` from its type, which must be the dot-operand layout
    of the accumulator's (the FMA loop reads each thread's rows/columns from it)."""
    encoding = ttg.encoding_of(value.type)
    parent = ttg.encoding_of(op.c.type)
    if not (isinstance(encoding, ttg.DotOperandEncodingAttr) and encoding.op_idx == op_idx
            and encoding.parent == parent):  # fmt: skip
        raise LoweringError(
            f"tt.dot operand {'AB'[op_idx]} must have layout #ttg.dot_op<{{opIdx = {op_idx}}}> of "
            f"the accumulator's layout, got {encoding}"
        )
    return ctx.lay(value.type)


def operand_flats(c: Lay, a_shape, b_shape):
    """fn(accumulator register r, k) -> (A, B) register-part flat indices of a[.., m, k] and
    b[.., k, n] for r's element c[.., m, n] (the operands' thread parts are c's projected, as
    their dot-operand layouts have it)."""
    rank = c.rank
    b_k = flat_of((0,) * (rank - 2) + (1, 0), b_shape)  # one row of B

    def flats(r: int, k: int) -> tuple[int, int]:
        co = coords_of(c.reg_flat[r], c.shape)
        a_row = flat_of(co[:-1] + (0,), a_shape)
        b_col = flat_of(co[:-2] + (0, co[-1]), b_shape)
        return a_row | k, b_col | k * b_k

    return flats


def _operand_reader(ctx, value, tv, lay: Lay):
    """fn(flat register part of an element of `lay`) -> LLVM value. An operand loaded from
    shared memory by ttg.local_load is re-read element by element as the k loop needs it (short
    live ranges: only one k-slice of A and B is held at a time; the local_load's own loads are
    dead); otherwise it is the register holding that element."""
    owner = value.owner
    if isinstance(owner, ttg.LocalLoadOp) and ttg.memdesc_root(owner.src) in ctx.smem.buffers:
        buf = ctx.get(owner.src)
        b = ctx.b
        ety = llty(buf.elem)
        nbytes = max(1, bitwidth(buf.elem) // 8)
        ctx.smem_access(buffer_interval(ctx, owner.src), write=False)
        memo: dict = {}

        def read(f):
            v = memo.get(f)
            if v is None:
                r = lay.reg_of_flat[f]
                coords = [ctx.coord(lay, r, d) for d in range(lay.rank)]
                off = smem_offset(ctx, buf, coords)
                ptr = ctx.smem_ptr(b.add(base_offset(ctx, buf), b.mul(off, I32(nbytes))))
                v = b.load(ptr, typ=ety)
                memo[f] = v
            return v

        return read
    return lambda f: tv.regs[lay.reg_of_flat[f]]


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
        return ctx.target.convert_float(ctx, v, src_elem, acc_elem, "rtne")
    if isinstance(v.type, ir.IntType):  # int inputs into a float accumulator
        return b.sitofp(v, aty)
    order = {F16: 16, BF16: 16, F32: 32, F64: 64}
    if order[v.type] < order[aty]:
        if v.type == BF16 and aty == F64:
            return b.fpext(b.fpext(v, F32), F64)
        return b.fpext(v, aty)
    return b.fptrunc(v, aty)


def _dot(ctx, op):
    b = ctx.b
    a_tv, b_tv, c_tv = ctx.get(op.a), ctx.get(op.b), ctx.get(op.c)
    c_lay = ctx.lay(op.c.type)
    a_lay, b_lay = _operand_layout(ctx, op, op.a, 0), _operand_layout(ctx, op, op.b, 1)
    a_get = _operand_reader(ctx, op.a, a_tv, a_lay)
    b_get = _operand_reader(ctx, op.b, b_tv, b_lay)
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
                r = ctx.target.tf32_round(ctx, v)
            else:
                r = ctx.target.tf32_round(ctx, b.fsub(v, rounded(v, "big")))
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
    operands = operand_flats(c_lay, a_lay.shape, b_lay.shape)
    out = list(c_tv.regs)
    canonical = c_lay.canonical_regs
    is_int = isinstance(aty, ir.IntType)
    fma = None if is_int else ctx.intrinsic(f"llvm.fma.{float_suffix(aty)}", aty, [aty, aty, aty])
    for k in range(K):
        for r in canonical:
            a_flat, b_flat = operands(r, k)
            av, bv = a_get(a_flat), b_get(b_flat)
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
    ctx.set(op.d, TV(out, c_lay, acc_elem))


# op class -> fn(ctx, op) emitting its LLVM IR
RULES = {
    tt.DotOp: _dot,
}
