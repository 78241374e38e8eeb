"""Target hooks written in plain LLVM IR, for targets without an instruction of their own
(the CPU, AMD GPUs): vector loads and stores under a mask (`llvm.masked.load`/`store`),
atomics as LLVM atomics, the high half of a product by widening, float narrowing toward zero,
and tf32 rounding on the bits. A target's `Target` methods call these; LLVM's back end picks
the instructions (vmovups/vmaskmov on x86, global_load_dwordx4 on AMDGPU).

`guard(ctx, op, addr, nbytes, pred) -> pred` lets a target add its own check to every access
(the CPU's bounds checks under debug=True); None adds nothing.
"""

from __future__ import annotations

import llvmlite.ir as ir

from kernellab.backends.llvm import fp8
from kernellab.backends.llvm.errors import LoweringError
from kernellab.backends.llvm.float_casts import fp_ext, fp_trunc
from kernellab.backends.llvm.types import BF16, F16, F32, F64, I1, I8, I32, bitwidth, is_fp8, llty, mem_llty

_RMW = {"add": "add", "fadd": "fadd", "max": "max", "min": "min", "umax": "umax", "umin": "umin",
        "and": "and", "or": "or", "xor": "xor", "exch": "xchg"}  # fmt: skip


def _bytes(ty) -> int:
    if isinstance(ty, ir.PointerType):
        return 8
    if isinstance(ty, ir.IntType):
        return max(1, ty.width // 8)
    return {F16: 2, BF16: 2, F32: 4, F64: 8}[ty]


def vector_name(vty: ir.VectorType) -> str:
    """LLVM's overload suffix of a vector type: v4f32, v2i64, v8p1."""
    e = vty.element
    if isinstance(e, ir.PointerType):
        return f"v{vty.count}p{e.addrspace}"
    if isinstance(e, ir.IntType):
        return f"v{vty.count}i{e.width}"
    return f"v{vty.count}" + {F16: "f16", BF16: "bf16", F32: "f32", F64: "f64"}[e]


def _splat_i1(b, pred, vec: int):
    mask = ir.Constant(ir.VectorType(I1, vec), None)
    for i in range(vec):
        mask = b.insert_element(mask, pred, I32(i))
    return mask


def _to_mem(b, v, mty):
    return b.zext(v, I8) if v.type == I1 and mty == I8 else v


def _from_mem(b, v, ety):
    return b.icmp_unsigned("!=", v, I8(0)) if ety == I1 else v


def load(ctx, op, addr, pred, others, elem, vec: int, guard=None) -> list:
    """`vec` consecutive elements at `addr` (aligned to the whole vector, as the core's vector
    width promises) under `pred`; masked-off elements are `others` (None: undefined)."""
    b = ctx.b
    mty, ety = mem_llty(elem), llty(elem)
    vty = ir.VectorType(mty, vec)
    align = vec * _bytes(mty)
    if guard is not None:
        pred = guard(ctx, op, addr, align, pred)
    if pred is None:
        v = b.load(addr, typ=vty)
        v.align = align
    else:
        passthru = ir.Constant(vty, None)
        if others is not None:
            for i, o in enumerate(others):
                passthru = b.insert_element(passthru, _to_mem(b, o, mty), I32(i))
        mask = _splat_i1(b, pred, vec)
        fn = ctx.intrinsic(f"llvm.masked.load.{vector_name(vty)}.p{addr.type.addrspace}", vty,
                           [addr.type, I32, mask.type, vty])  # fmt: skip
        v = b.call(fn, [addr, I32(align), mask, passthru])
    return [_from_mem(b, b.extract_element(v, I32(i)), ety) for i in range(vec)]


def store(ctx, op, addr, pred, values: list, elem, guard=None) -> None:
    b = ctx.b
    mty = mem_llty(elem)
    vec = len(values)
    vty = ir.VectorType(mty, vec)
    align = vec * _bytes(mty)
    if guard is not None:
        pred = guard(ctx, op, addr, align, pred)
    v = ir.Constant(vty, None)
    for i, x in enumerate(values):
        v = b.insert_element(v, _to_mem(b, x, mty), I32(i))
    if pred is None:
        b.store(v, addr).align = align
        return
    fn = ctx.intrinsic(f"llvm.masked.store.{vector_name(vty)}.p{addr.type.addrspace}", ir.VoidType(),
                       [vty, addr.type, I32, ir.VectorType(I1, vec)])  # fmt: skip
    b.call(fn, [v, addr, I32(align), _splat_i1(b, pred, vec)])


def atomic(ctx, op, kind: str, addr, val, cmp, pred, elem, guard=None):
    """One LLVM atomic (seq_cst) under `pred`; a masked-off element's old value is undefined,
    as on the GPU. Float compare-and-swap compares the bits."""
    b = ctx.b
    ety = llty(elem)
    if guard is not None:
        pred = guard(ctx, op, addr, max(1, bitwidth(elem) // 8), pred)
    if kind not in _RMW and kind != "cas":
        raise LoweringError(f"atomic {kind} is not supported by the {ctx.target.name} lowering")
    if pred is not None:
        before = b.block
        then = b.append_basic_block("atomic")
        after = b.append_basic_block("atomic.end")
        b.cbranch(pred, then, after)
        b.position_at_end(then)
    if kind == "cas":
        if isinstance(ety, (ir.IntType, ir.PointerType)):
            old = b.extract_value(b.cmpxchg(addr, cmp, val, "seq_cst", "seq_cst"), 0)
        else:
            ity = ir.IntType(bitwidth(elem))
            pair = b.cmpxchg(addr, b.bitcast(cmp, ity), b.bitcast(val, ity), "seq_cst", "seq_cst")
            old = b.bitcast(b.extract_value(pair, 0), ety)
    elif kind in ("max", "min", "umax", "umin") and not isinstance(ety, ir.IntType):
        old = b.atomic_rmw("f" + kind.removeprefix("u"), addr, val, "seq_cst")
    else:
        old = b.atomic_rmw(_RMW[kind], addr, val, "seq_cst")
    if pred is None:
        return old
    done = b.block
    b.branch(after)
    b.position_at_end(after)
    phi = b.phi(ety)
    phi.add_incoming(old, done)
    phi.add_incoming(ir.Constant(ety, None), before)
    return phi


def mulhi(ctx, x, y):
    b = ctx.b
    wide = ir.IntType(2 * x.type.width)
    p = b.mul(b.zext(x, wide), b.zext(y, wide))
    return b.trunc(b.lshr(p, ir.Constant(wide, x.type.width)), x.type)


def toward_zero(ctx, x, dty):
    """x narrowed to float type `dty` rounded toward zero: the nearest value, stepped one ulp
    toward zero when it lies farther from zero than x (an overflow to inf becomes the largest
    finite value the same way); NaN stays NaN."""
    b = ctx.b
    r = b.fptrunc(x, dty)
    back = b.fpext(r, x.type)
    fabs = "llvm.fabs." + {F32: "f32", F64: "f64"}[x.type]
    farther = b.fcmp_ordered(">", ctx.call(fabs, x.type, [back]), ctx.call(fabs, x.type, [x]))
    ity = ir.IntType({F16: 16, BF16: 16, F32: 32}[dty])
    stepped = b.bitcast(b.sub(b.bitcast(r, ity), ir.Constant(ity, 1)), dty)
    return b.select(farther, stepped, r)


def convert_float(ctx, x, src, dst, rounding: str):
    """x of IR float type `src` → `dst` ("rtne" or "rtz"); fp8 in integer arithmetic (fp8.py)."""
    if is_fp8(src) or is_fp8(dst):
        return fp8.convert(ctx, x, src, dst, rounding)
    b = ctx.b
    sty, dty = llty(src), llty(dst)
    widths = {F16: 16, BF16: 16, F32: 32, F64: 64}
    if sty == dty:
        return x
    if {sty, dty} == {F16, BF16}:
        mid = b.fpext(x, F32)
        return toward_zero(ctx, mid, dty) if rounding == "rtz" else b.fptrunc(mid, dty)
    if widths[dty] > widths[sty]:
        return fp_ext(ctx, x, dty)
    if rounding == "rtz":
        return toward_zero(ctx, x, dty)
    return fp_trunc(ctx, x, dty)


def tf32_round(ctx, x):
    """fp32 x rounded to the nearest tf32 (10 mantissa bits), ties away from zero: add half of
    the dropped place and clear the 13 low bits (finite values; inf and NaN pass through)."""
    b = ctx.b
    bits = b.bitcast(x, I32)
    rounded = b.and_(b.add(bits, I32(0x1000)), I32(~0x1FFF))
    finite = b.icmp_unsigned("<", b.and_(bits, I32(0x7F800000)), I32(0x7F800000))
    return b.bitcast(b.select(finite, rounded, bits), F32)


class PortableArithmetic:
    """The Target arithmetic hooks in plain LLVM, for a target class to inherit."""

    def mulhi(self, ctx, x, y):
        return mulhi(ctx, x, y)

    def f64_to_f32_toward_zero(self, ctx, x):
        return toward_zero(ctx, x, F32)

    def convert_float(self, ctx, x, src, dst, rounding: str):
        return convert_float(ctx, x, src, dst, rounding)

    def tf32_round(self, ctx, x):
        return tf32_round(ctx, x)


__all__ = ["PortableArithmetic", "load", "store", "atomic", "mulhi", "toward_zero", "convert_float", "tf32_round", "vector_name"]
