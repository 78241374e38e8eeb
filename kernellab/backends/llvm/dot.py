"""tt.dot as FMA: each thread computes its accumulator registers as Σ_k a[m,k]·b[k,n].

The TTGIR passes give the operands the dot-operand layouts of the accumulator's (#ttg.dot_op
of its blocked layout, kernellab.layouts.dot_operand): every thread holds the A rows and B
columns of its accumulator elements for all k. The loop reads them from those layouts as the
types say; it computes no layout of its own.

Arithmetic is done in the accumulator's type: fp16/bf16/fp8 inputs are converted exactly to
fp32 (or the accumulator's float type), int8 inputs sign-extended to int32; `fma` rounds once
per step. K is summed in increasing order: straight-line code for small dots, a loop over K
(operands re-read from shared memory at a runtime k) for large ones. An fp16 accumulator is
worked in fp32 and rounded to fp16 once per K chunk of the mma.sync instruction for the inputs
(16 or 32), as the tensor cores do, instead of after every multiply-add. fp32 × fp32 follows
input_precision as tensor cores would, and exactly as the interpreter does: "tf32" rounds
each operand element with `cvt.rna.tf32.f32` (nearest, ties away from zero; sm_80+) before
its FMA; "tf32x3" splits each operand into big = tf32(x) and small = tf32(x − big) and
accumulates small·big, big·small, big·big (three FMAs per k); "ieee" multiplies the fp32
values.
"""

from __future__ import annotations

from dataclasses import dataclass

import llvmlite.ir as ir
from xdsl.dialects import builtin

from kernellab.backends.llvm.errors import LoweringError
from kernellab.backends.llvm.layout import Lay, coords_of, flat_of
from kernellab.backends.llvm.shared_buffers import base_offset, buffer_interval, smem_offset
from kernellab.backends.llvm.types import (
    BF16, F16, F32, F64, I32, TV, SmemBuf, bitwidth, float_suffix, is_fp8, llty,
)
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


@dataclass(frozen=True)
class ReadByTheDot:
    """What a ttg.local_load leaves in place of its registers when its only user is an FMA
    dot (read_by_fma_dot): nothing is loaded there; the dot reads the buffer element by
    element as its K loop needs them."""

    buf: SmemBuf


def read_by_fma_dot(ctx, op) -> bool:
    """`op` (a ttg.local_load) has one use, an FMA dot's operand, and reads a buffer of its own."""
    uses = list(op.result.uses)
    encoding = ttg.encoding_of(op.result.type)
    return (len(uses) == 1 and isinstance(uses[0].operation, tt.DotOp)
            and isinstance(encoding, ttg.DotOperandEncodingAttr)
            and isinstance(encoding.parent, ttg.BlockedEncodingAttr)
            and ttg.memdesc_root(op.src) in ctx.smem.buffers)  # fmt: skip


class _Operand:
    """One dot operand as the K loop reads it: `read(row, k)` is the element at register-part
    flat index `row` (its k = 0 element) plus k along K, k an int or an i32 value. An operand
    left in shared memory (ReadByTheDot) is read from the buffer element by element as the
    loop needs it (short live ranges: one k-slice of A and B at a time), which also lets K be
    a runtime loop index; otherwise it is the register holding the element (K must then be
    unrolled)."""

    def __init__(self, ctx, value, lay: Lay, k_dim: int, k_stride: int):
        self.ctx, self.lay, self.k_dim, self.k_stride = ctx, lay, k_dim, k_stride
        operand = ctx.get(value)
        self.buf = operand.buf if isinstance(operand, ReadByTheDot) else None
        if self.buf is None:
            self.regs = operand.regs
        else:
            ctx.smem_access(buffer_interval(ctx, value.owner.src), write=False)
        self._coords: dict = {}

    @property
    def in_shared(self) -> bool:
        return self.buf is not None

    def read_address(self, row: int) -> list:
        """The coordinates of the element at `row` (k = 0: K's is 0, since lanes and warps
        repeat along K), computed once."""
        coords = self._coords.get(row)
        if coords is None:
            r = self.lay.reg_of_flat[row]
            coords = [self.ctx.coord(self.lay, r, d) for d in range(self.lay.rank)]
            self._coords[row] = coords
        return coords

    def read(self, row: int, k):
        if self.buf is None:
            return self.regs[self.lay.reg_of_flat[row | k * self.k_stride]]
        ctx, b, buf = self.ctx, self.ctx.b, self.buf
        coords = list(self.read_address(row))
        coords[self.k_dim] = I32(k) if isinstance(k, int) else k
        off = smem_offset(ctx, buf, coords)
        nbytes = max(1, bitwidth(buf.elem) // 8)
        ptr = ctx.smem_ptr(b.add(base_offset(ctx, buf), b.mul(off, I32(nbytes))))
        return b.load(ptr, typ=llty(buf.elem))


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


LOOP_BODY_PRODUCTS = 512
"""Products per thread a dot emits as straight-line code. A dot with more (operands in shared
memory) runs K as a loop whose body covers at most this many: the code, LLVM's and ptxas's
time, and the registers live at once stay bounded. Unrolled, 128x128x64 in fp32 on 4 warps
took 13 s to compile and spilled 36 KB; 64x64x64 took 3 s instead of 0.6 s."""


def _rounding_group(a_elem, acc_elem) -> int | None:
    """K elements summed in fp32 before each rounding to a narrow float accumulator: the K of
    the mma.sync instruction for those inputs, which rounds its fp16 result once per
    instruction (None: the accumulator is the working type)."""
    if llty(acc_elem) not in (F16, BF16):
        return None
    return 256 // bitwidth(a_elem)


def _dot(ctx, op):
    b = ctx.b
    c_tv = ctx.get(op.c)
    c_lay = ctx.lay(op.c.type)
    a_lay, b_lay = _operand_layout(ctx, op, op.a, 0), _operand_layout(ctx, op, op.b, 1)
    rank = c_lay.rank
    a_op = _Operand(ctx, op.a, a_lay, rank - 1, 1)
    b_op = _Operand(ctx, op.b, b_lay, rank - 2, flat_of((0,) * (rank - 2) + (1, 0), b_lay.shape))
    acc_elem = op.d.type.element_type
    group = _rounding_group(op.a.type.element_type, acc_elem)
    work_elem = builtin.f32 if group else acc_elem
    mac = _multiply_add(ctx, op, work_elem)
    K = op.a.type.get_shape()[-1]
    operands = operand_flats(c_lay, a_lay.shape, b_lay.shape)
    canonical = c_lay.canonical_regs
    pairs = [operands(r, 0) for r in canonical]  # (A row, B column) of each element at k = 0
    work = [to_acc_type(ctx, c_tv.regs[r], acc_elem, work_elem) for r in canonical]

    def k_steps(work, k0, count):
        for j in range(count):
            k = k0 + j if isinstance(k0, int) else (b.add(k0, I32(j)) if j else k0)
            a_vals, b_vals = {}, {}
            for i, (row, col) in enumerate(pairs):
                if row not in a_vals:
                    a_vals[row] = a_op.read(row, k)
                if col not in b_vals:
                    b_vals[col] = b_op.read(col, k)
                work[i] = mac(a_vals[row], b_vals[col], work[i])
            if group and (j + 1) % group == 0:  # round as the instruction does, go on in fp32
                narrow = [to_acc_type(ctx, w, work_elem, acc_elem) for w in work]
                work = [to_acc_type(ctx, w, acc_elem, work_elem) for w in narrow]
        return work

    step = 1  # K steps per loop iteration
    while step < K and 2 * step * len(pairs) * mac.terms <= LOOP_BODY_PRODUCTS:
        step *= 2
    step = max(step, min(group or 1, K))
    if step == K or not (a_op.in_shared and b_op.in_shared):
        work = k_steps(work, 0, K)
    else:
        work = _k_loop(ctx, work, K, step, k_steps, a_op, b_op, pairs)
    out = list(c_tv.regs)
    for r, w in zip(canonical, work):
        out[r] = to_acc_type(ctx, w, work_elem, acc_elem)
    for r in range(c_lay.nregs):
        out[r] = out[c_lay.reg_of_flat[c_lay.reg_flat[r]]]
    ctx.set(op.d, TV(out, c_lay, acc_elem))


def _k_loop(ctx, work, K: int, step: int, k_steps, a_op, b_op, pairs):
    """`work` after k_steps over K in a loop of K / step iterations of `step` (unrolled) k's."""
    for row, col in pairs:  # the operands' addresses at k = 0, computed once before the loop
        a_op.read_address(row)
        b_op.read_address(col)
    return counted_loop(ctx, work, K, step, lambda values, k0: k_steps(values, k0, step))


def counted_loop(ctx, values: list, count: int, step: int, body, name: str = "dot.k") -> list:
    """`values` (LLVM scalars or vectors) after body(values, i) for i = 0, step, ... < count,
    as an LLVM loop whose phis carry them: code size independent of `count`."""
    b = ctx.b
    pre = b.block
    loop = ctx.fn.append_basic_block(name)
    exit_ = ctx.fn.append_basic_block(f"{name}.exit")
    b.branch(loop)
    b.position_at_end(loop)
    i = b.phi(I32, name=f"{name}0")
    i.add_incoming(I32(0), pre)
    phis = []
    for v in values:
        p = b.phi(v.type, name=f"{name}.acc")
        p.add_incoming(v, pre)
        phis.append(p)
    values = body(list(phis), i)
    latch = b.block
    nxt = b.add(i, I32(step))
    i.add_incoming(nxt, latch)
    for p, v in zip(phis, values):
        p.add_incoming(v, latch)
    b.cbranch(b.icmp_unsigned("<", nxt, I32(count)), loop, exit_)
    b.position_at_end(exit_)
    return values


def _multiply_add(ctx, op, work_elem):
    """fn(a element, b element, acc) -> acc + a·b in the working type, as input_precision
    says; `.terms`: the multiply-adds per product."""
    b = ctx.b
    wty = llty(work_elem)
    a_elem, b_elem = op.a.type.element_type, op.b.type.element_type
    f32 = llty(a_elem) == F32 and llty(b_elem) == F32
    precision = op.input_precision.data if f32 else "ieee"
    memo: dict = {}

    def part(v, elem, which=None):
        """Operand element v in the working type; which "big"/"small": its tf32 part. One
        conversion per element and k step (an element meets many of the other operand's)."""
        key = (id(v), which)
        if key not in memo:
            if which == "big":
                r = ctx.target.tf32_round(ctx, v)
            elif which == "small":
                r = ctx.target.tf32_round(ctx, b.fsub(v, part(v, elem, "big")))
            else:
                r = to_acc_type(ctx, v, elem, work_elem)
            memo[key] = (r, v)  # v kept alive: its id stays unique while memoised
        return memo[key][0]

    if isinstance(wty, ir.IntType):

        def mac(av, bv, acc):
            return b.add(b.mul(part(av, a_elem), part(bv, b_elem)), acc)

        mac.terms = 1
        return mac
    fma = ctx.intrinsic(f"llvm.fma.{float_suffix(wty)}", wty, [wty, wty, wty])

    def mac(av, bv, acc):
        if precision == "tf32":
            return b.call(fma, [part(av, a_elem, "big"), part(bv, b_elem, "big"), acc])
        if precision == "tf32x3":
            a_big, b_big = part(av, a_elem, "big"), part(bv, b_elem, "big")
            acc = b.call(fma, [part(av, a_elem, "small"), b_big, acc])
            acc = b.call(fma, [a_big, part(bv, b_elem, "small"), acc])
            return b.call(fma, [a_big, b_big, acc])
        return b.call(fma, [part(av, a_elem), part(bv, b_elem), acc])

    mac.terms = 3 if precision == "tf32x3" else 1
    return mac


# op class -> fn(ctx, op) emitting its LLVM IR
RULES = {
    tt.DotOp: _dot,
}
