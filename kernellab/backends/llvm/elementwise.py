"""Element-wise ops: arith, math and scalar-like tt ops, mapped over a tensor's registers.

Registers that compute from the same inputs are computed once (a splat + splat stays one
instruction). Accuracy choices (fp32):
  - exp: the target's approximate exp2 of x·log2 e (NVIDIA: `ex2.approx.f32`, Triton's fast
    path): relative error about 2^-21 plus |x|·2^-24 from rounding the product; exp2 likewise,
    except that on NVIDIA it is `ex2.approx.ftz.f32` as Triton's (libdevice's exp2f with
    flush-to-zero): results below 2^-126 are 0, and softmax-style loops save three
    instructions per element.
  - log, log2, sin, cos, erf: our own implementations (transcendental.py), within 2 ulp of the
    correctly rounded result over the whole range (sin/cos: |x| < 2^30).
  - sqrt: `sqrt.approx.f32` like Triton's tl.sqrt; tl.sqrt_rn (tt.precise_sqrt) is sqrt.rn.
    rsqrt: `rsqrt.approx.f32`.
  - `/` on fp32: `div.full.f32` as Triton (max 2 ulp); tl.div_rn (tt.precise_divf): div.rn.
  - fp16/bf16 division and remainder are computed in fp32 and rounded once (the interpreter
    does the same); other fp16/bf16 arithmetic is native (add.rn.bf16 on sm_90, fma.rn.bf16
    on sm_80).
  - fp64: exact ops are LLVM's (IEEE); transcendental functions use transcendental.py's f64 versions.
"""

from __future__ import annotations

import math

import llvmlite.ir as ir
from xdsl.dialects import builtin
from kernellab.ir import math as xmath
from xdsl.dialects.builtin import TensorType

from kernellab.backends.llvm import transcendental
from kernellab.backends.llvm.addressing import element_address
from kernellab.backends.llvm.axis_facts import constancy, equal_registers
from kernellab.backends.llvm.context import opaque
from kernellab.backends.llvm.errors import LoweringError
from kernellab.backends.llvm.float_casts import fp_ext, fp_trunc
from kernellab.backends.llvm.fmod import exact_fmod
from kernellab.backends.llvm.types import (
    BF16, F16, F32, F64, I1, I32, I64, TV, float_suffix, is_fp8, llty, mem_llty,
)  # fmt: skip
from kernellab.ir import arith, tt


# ------------------------------------------------------------------------------- mapping


def map_op(ctx, op, fn, result_index: int = 0):
    """Apply `fn(*operand_values)` per register (or once for scalars) and bind the result.
    A register the axis analysis proves equal to an earlier one reuses its value."""
    res = op.results[result_index]
    t = res.type
    if isinstance(t, TensorType):
        lay = ctx.lay(t)
        ins = [ctx.regs(v, lay) for v in op.operands]
        equal = equal_registers(lay, constancy(res))
        memo: dict = {}
        out = []
        for r in range(lay.nregs):
            if equal is not None and equal[r] != r:
                out.append(out[equal[r]])
                continue
            args = [x[r] for x in ins]
            key = tuple(id(a) for a in args)
            v = memo.get(key)
            if v is None:
                v = fn(*args)
                memo[key] = v
            out.append(v)
        ctx.set(res, TV(out, lay, t.element_type))
    else:
        ctx.set(res, fn(*[ctx.get(v) for v in op.operands]))


def elem(t):
    return tt.element_type(t)


# ----------------------------------------------------------------------------- constants


def const_value(t, value):
    """An llvmlite constant of scalar IR type `t`."""
    ty = llty(t)
    if isinstance(t, builtin.IntegerType):
        w = t.width.data
        v = int(value) & ((1 << w) - 1)
        if w > 1 and v >= 1 << (w - 1):
            v -= 1 << w
        if w == 1:
            v = v & 1
        return ir.Constant(ty, v)
    if is_fp8(t):
        import ml_dtypes
        import numpy as np

        dt = ml_dtypes.float8_e4m3fn if isinstance(t, builtin.Float8E4M3FNType) else ml_dtypes.float8_e5m2
        return ir.Constant(ty, int(np.array([value], dtype=dt).view(np.uint8)[0]))
    if ty == BF16:
        return BF16(float(value))
    if ty in (F16, F32):  # rounded once to the type, as numpy rounds
        import numpy as np

        return ir.Constant(ty, float((np.float16 if ty == F16 else np.float32)(value)))
    return ir.Constant(ty, float(value))


def _constant(ctx, op):
    attr = op.value
    t = op.result.type
    if isinstance(attr, builtin.DenseIntOrFPElementsAttr):
        values = attr.get_values()
        lay = ctx.lay(t)
        e = t.element_type
        first = values[0]
        if all(v == first for v in values) or (isinstance(first, float) and all(math.isnan(v) for v in values)):
            c = const_value(e, first)
            ctx.set(op.result, TV([c] * lay.nregs, lay, e))
            return
        ctx.set(op.result, TV(_nonuniform_constant(ctx, op, values, lay, e), lay, e))
        return
    ctx.set(op.result, const_value(t, attr.value.data))


def _nonuniform_constant(ctx, op, values, lay, e):
    """A tensor constant with different elements: a global table indexed by flat index."""
    ty = llty(e)
    arr_ty = ir.ArrayType(ty, len(values))
    g = ir.GlobalVariable(ctx.mod, arr_ty, f"const.{len(ctx.mod.globals)}", addrspace=1)
    g.global_constant = True
    g.linkage = "internal"
    g.initializer = ir.Constant(arr_ty, [const_value(e, v) for v in values])
    out = []
    for r in range(lay.nregs):
        idx = ctx.flat_index(lay, r)
        p = ctx.b.gep(opaque(g), [idx], source_etype=ty)
        out.append(ctx.b.load(p, typ=ty))
    return out


# ------------------------------------------------------------------------------ helpers


def _intr_suffix(ty) -> str:
    if isinstance(ty, ir.IntType):
        return f"i{ty.width}"
    name = float_suffix(ty)
    if name is None:
        raise LoweringError(f"no intrinsic suffix for {ty}")
    return name


def intr(ctx, base: str, *args, ret=None):
    ty = args[0].type
    return ctx.call(f"{base}.{_intr_suffix(ty)}", ret or ty, list(args))


def via_f32(ctx, fn, *args):
    """Evaluate `fn` on fp16/bf16 values in fp32 and round back once."""
    ty = args[0].type
    if ty in (F16, BF16):
        b = ctx.b
        r = fn(*[b.fpext(a, F32) for a in args])
        return b.fptrunc(r, ty)
    return fn(*args)


# --------------------------------------------------------------------------- integer ops


_INT_BINARY = {
    "addi": "add", "subi": "sub", "muli": "mul", "divsi": "sdiv", "divui": "udiv",
    "remsi": "srem", "remui": "urem", "andi": "and_", "ori": "or_", "xori": "xor",
    "shli": "shl", "shrsi": "ashr", "shrui": "lshr",
}  # fmt: skip
_INT_MINMAX = {"maxsi": "llvm.smax", "minsi": "llvm.smin", "maxui": "llvm.umax", "minui": "llvm.umin"}
_FLOAT_MINMAX = {
    "maximumf": "llvm.maximum", "minimumf": "llvm.minimum",
    "maxnumf": "llvm.maxnum", "minnumf": "llvm.minnum",
}  # fmt: skip


def int_binary(ctx, name: str):
    b = ctx.b
    if name in _INT_BINARY:
        method = getattr(b, _INT_BINARY[name])
        return lambda x, y: method(x, y)
    if name in _INT_MINMAX:
        return lambda x, y: intr(ctx, _INT_MINMAX[name], x, y)
    raise LoweringError(f"no integer op {name}")


def fdiv(ctx, x, y):
    """`/` on floats: the target's fp32 division (NVIDIA: div.full.f32, as Triton), IEEE
    otherwise."""
    b = ctx.b
    if x.type == F32:
        return ctx.target.fdiv_f32(ctx, x, y)
    if x.type == F64:
        return b.fdiv(x, y)
    return via_f32(ctx, lambda p, q: b.fdiv(p, q), x, y)


def float_binary(ctx, name: str):
    b = ctx.b
    flags = ("contract",) if ctx.fp_fusion else ()
    if name == "addf":
        return lambda x, y: b.fadd(x, y, flags=flags)
    if name == "subf":
        return lambda x, y: b.fsub(x, y, flags=flags)
    if name == "mulf":
        return lambda x, y: b.fmul(x, y, flags=flags)
    if name == "divf":
        return lambda x, y: fdiv(ctx, x, y)
    if name == "remf":  # exactly: LLVM's GPU backends expand frem with a rounded quotient
        return lambda x, y: via_f32(ctx, lambda p, q: exact_fmod(ctx, p, q), x, y)
    if name in _FLOAT_MINMAX:
        return lambda x, y: intr(ctx, _FLOAT_MINMAX[name], x, y)
    raise LoweringError(f"no float op {name}")


def binary_fn(ctx, name: str, t):
    """A python function emitting arith.<name> on two llvm values of element type `t`."""
    if name in _INT_BINARY or name in _INT_MINMAX:
        return int_binary(ctx, name)
    return float_binary(ctx, name)


def _binary_rule(name: str):
    def lower(ctx, op):
        map_op(ctx, op, binary_fn(ctx, name, elem(op.result.type)))

    return lower


def _negf(ctx, op):
    map_op(ctx, op, lambda x: ctx.b.fneg(x))


# ----------------------------------------------------------------------------- compares

_CMPI = {
    "eq": ("s", "=="), "ne": ("s", "!="), "slt": ("s", "<"), "sle": ("s", "<="),
    "sgt": ("s", ">"), "sge": ("s", ">="), "ult": ("u", "<"), "ule": ("u", "<="),
    "ugt": ("u", ">"), "uge": ("u", ">="),
}  # fmt: skip
_CMPF = {
    "oeq": ("o", "=="), "ogt": ("o", ">"), "oge": ("o", ">="), "olt": ("o", "<"),
    "ole": ("o", "<="), "one": ("o", "!="), "ord": ("o", "ord"), "ueq": ("u", "=="),
    "ugt": ("u", ">"), "uge": ("u", ">="), "ult": ("u", "<"), "ule": ("u", "<="),
    "une": ("u", "!="), "uno": ("u", "uno"),
}  # fmt: skip


def cmpi_fn(ctx, pred: str):
    kind, sym = _CMPI[pred]
    b = ctx.b
    if kind == "s":
        return lambda x, y: b.icmp_signed(sym, x, y)
    return lambda x, y: b.icmp_unsigned(sym, x, y)


def cmpf_fn(ctx, pred: str):
    b = ctx.b
    if pred == "false":
        return lambda x, y: I1(0)
    if pred == "true":
        return lambda x, y: I1(1)
    kind, sym = _CMPF[pred]
    if kind == "o":
        return lambda x, y: b.fcmp_ordered(sym, x, y)
    return lambda x, y: b.fcmp_unordered(sym, x, y)


def _cmpi(ctx, op):
    map_op(ctx, op, cmpi_fn(ctx, op.predicate_name))


def _cmpf(ctx, op):
    map_op(ctx, op, cmpf_fn(ctx, op.predicate_name))


def _select(ctx, op):
    map_op(ctx, op, lambda c, x, y: ctx.b.select(c, x, y))


# -------------------------------------------------------------------------------- casts


def cast_fn(ctx, name: str, src_t, dst_t):
    b = ctx.b
    dst = llty(dst_t)
    if name == "extsi":
        return lambda x: b.sext(x, dst)
    if name == "extui":
        return lambda x: b.zext(x, dst)
    if name == "trunci":
        return lambda x: b.trunc(x, dst)
    if name == "extf":
        return lambda x: fp_ext(ctx, x, dst)
    if name == "truncf":
        return lambda x: fp_trunc(ctx, x, dst)
    if name == "sitofp":
        return lambda x: int_to_fp(ctx, x, dst, signed=True)
    if name == "uitofp":
        return lambda x: int_to_fp(ctx, x, dst, signed=False)
    if name in ("fptosi", "fptoui"):
        signed = name == "fptosi"
        return lambda x: fp_to_int(ctx, x, dst, signed)
    if name == "bitcast":
        return lambda x: b.bitcast(x, dst)
    raise LoweringError(f"no cast {name}")


def int_to_fp(ctx, x, dst, signed: bool):
    b = ctx.b
    if dst in (F16, BF16) and x.type.width > 16:
        # exact in f64 for ≤ 32-bit ints, then one rounding (via round-to-odd f32)
        wide = b.sitofp(x, F64) if signed else b.uitofp(x, F64)
        return fp_trunc(ctx, wide, dst)
    return b.sitofp(x, dst) if signed else b.uitofp(x, dst)


def fp_to_int(ctx, x, dst, signed: bool):
    """Truncating conversion that saturates at the integer range, NaN → 0 (as the GPU does)."""
    b = ctx.b
    if x.type in (F16, BF16):
        x = b.fpext(x, F32)
    if dst.width == 1:
        return b.fcmp_unordered("!=", x, ir.Constant(x.type, 0.0))
    name = "llvm.fptosi.sat" if signed else "llvm.fptoui.sat"
    return ctx.call(f"{name}.i{dst.width}.{_intr_suffix(x.type)}", dst, [x])


def _cast_rule(name: str):
    def lower(ctx, op):
        fn = cast_fn(ctx, name, elem(op.input.type), elem(op.result.type))
        map_op(ctx, op, fn)

    return lower


# ----------------------------------------------------------------------------- math ops


def _unary_math(f32_fn, f64_fn=None):
    def lower(ctx, op):
        def fn(x):
            if x.type == F64:
                if f64_fn is None:
                    raise LoweringError(f"{op.name} on fp64 is not supported by the {ctx.target.name} lowering")
                return f64_fn(ctx, x)
            return via_f32(ctx, lambda v: f32_fn(ctx, v), x)

        map_op(ctx, op, fn)

    return lower


LOG2E = 1.4426950408889634
LN2 = 0.6931471805599453


def exp_f32(ctx, x):
    b = ctx.b
    return ctx.target.exp2_approx_f32(ctx, b.fmul(x, ir.Constant(F32, LOG2E)))


def exp2_f32(ctx, x):
    return ctx.target.exp2_approx_f32(ctx, x, flush_subnormal=True)


def sqrt_f32(ctx, x):
    return ctx.target.sqrt_approx_f32(ctx, x)


def rsqrt_f32(ctx, x):
    return ctx.target.rsqrt_approx_f32(ctx, x)


def rsqrt_f64(ctx, x):
    b = ctx.b
    return b.fdiv(ir.Constant(F64, 1.0), ctx.call("llvm.sqrt.f64", F64, [x]))


def _native_unary(base: str):
    def lower(ctx, op):
        map_op(ctx, op, lambda x: intr(ctx, base, x))

    return lower


def _absi(ctx, op):
    map_op(ctx, op, lambda x: ctx.call(f"llvm.abs.{_intr_suffix(x.type)}", x.type, [x, I1(0)]))


def _clz(ctx, op):
    map_op(ctx, op, lambda x: ctx.call(f"llvm.ctlz.{_intr_suffix(x.type)}", x.type, [x, I1(0)]))


def _ctz(ctx, op):
    map_op(ctx, op, lambda x: ctx.call(f"llvm.cttz.{_intr_suffix(x.type)}", x.type, [x, I1(0)]))


def _fma(ctx, op):
    map_op(ctx, op, lambda x, y, z: intr(ctx, "llvm.fma", x, y, z))


def _precise_div(ctx, op):
    b = ctx.b
    map_op(ctx, op, lambda x, y: via_f32(ctx, lambda p, q: b.fdiv(p, q), x, y))


def _mulhi(ctx, op):
    def fn(x, y):
        if x.type in (I32, I64):
            return ctx.target.mulhi(ctx, x, y)
        b = ctx.b
        w = x.type.width
        wide = ir.IntType(2 * w)
        p = b.mul(b.zext(x, wide), b.zext(y, wide))
        return b.trunc(b.lshr(p, ir.Constant(wide, w)), x.type)

    map_op(ctx, op, fn)


def _clampf(ctx, op):
    b = ctx.b
    keep_nan = op.propagateNan.data == "all"

    def fn(x, lo, hi):
        def core(x, lo, hi):
            r = intr(ctx, "llvm.minnum", intr(ctx, "llvm.maxnum", x, lo), hi)
            if keep_nan:
                r = b.select(b.fcmp_unordered("uno", x, x), x, r)
            return r

        return core(x, lo, hi)

    map_op(ctx, op, fn)


def _copysign(ctx, op):
    map_op(ctx, op, lambda x, y: intr(ctx, "llvm.copysign", x, y))


# ------------------------------------------------------------------------ tt element ops


def _bitcast(ctx, op):
    dst = elem(op.result.type)
    if isinstance(dst, tt.PointerType):
        map_op(ctx, op, lambda x: x)  # opaque pointers: nothing to do
        return
    ty = llty(dst)
    map_op(ctx, op, lambda x: ctx.b.bitcast(x, ty))


def _int_to_ptr(ctx, op):
    ty = llty(elem(op.result.type))
    map_op(ctx, op, lambda x: ctx.b.inttoptr(x, ty))


def _ptr_to_int(ctx, op):
    ty = llty(elem(op.result.type))
    map_op(ctx, op, lambda x: ctx.b.ptrtoint(x, ty))


def _addptr(ctx, op):
    pointee = elem(op.ptr.type).pointee
    ety = mem_llty(pointee)
    b, made = ctx.b, {}
    map_op(ctx, op, lambda p, off: element_address(b, p, off, ety, made))


def _fp_to_fp(ctx, op):
    src, dst = elem(op.src.type), elem(op.result.type)
    rounding = op.rounding.data if op.rounding is not None else "rtne"
    map_op(ctx, op, lambda x: ctx.target.convert_float(ctx, x, src, dst, rounding))


def _sqrt_f64(ctx, x):
    return ctx.call("llvm.sqrt.f64", F64, [x])


def _precise_sqrt_f32(ctx, x):
    return ctx.call("llvm.sqrt.f32", F32, [x])


def _extern_elementwise(ctx, op):
    """A call of the library function per register; the target's pipeline links its bitcode
    (NVIDIA: the link-extern-libs pass), so here it is only declared."""
    symbol, ret = op.symbol.data, llty(elem(op.result.type))
    map_op(ctx, op, lambda *xs: ctx.call(symbol, ret, list(xs)))


# op class -> fn(ctx, op) emitting its LLVM IR
RULES = {
    **{cls: _binary_rule(name) for name, cls in arith.BINARY_OPS.items()},
    **{cls: _cast_rule(name) for name, cls in arith.CAST_OPS.items()},
    xmath.ExpOp: _unary_math(exp_f32, transcendental.exp_f64),
    xmath.Exp2Op: _unary_math(exp2_f32, transcendental.exp2_f64),
    xmath.LogOp: _unary_math(transcendental.log_f32, transcendental.log_f64),
    xmath.Log2Op: _unary_math(transcendental.log2_f32, transcendental.log2_f64),
    xmath.SinOp: _unary_math(transcendental.sin_f32, transcendental.sin_f64),
    xmath.CosOp: _unary_math(transcendental.cos_f32, transcendental.cos_f64),
    xmath.ErfOp: _unary_math(transcendental.erf_f32, transcendental.erf_f64),
    xmath.SqrtOp: _unary_math(sqrt_f32, _sqrt_f64),
    xmath.RsqrtOp: _unary_math(rsqrt_f32, rsqrt_f64),
    tt.PreciseSqrtOp: _unary_math(_precise_sqrt_f32, _sqrt_f64),
    xmath.FloorOp: _native_unary("llvm.floor"),
    xmath.CeilOp: _native_unary("llvm.ceil"),
    xmath.AbsFOp: _native_unary("llvm.fabs"),
    xmath.TruncOp: _native_unary("llvm.trunc"),
    xmath.RoundEvenOp: _native_unary("llvm.roundeven"),
    xmath.RoundOp: _native_unary("llvm.round"),
    xmath.CtPopOp: _native_unary("llvm.ctpop"),
    arith.ConstantOp: _constant,
    arith.NegfOp: _negf,
    arith.CmpiOp: _cmpi,
    arith.CmpfOp: _cmpf,
    arith.SelectOp: _select,
    xmath.AbsIOp: _absi,
    xmath.CountLeadingZerosOp: _clz,
    xmath.CountTrailingZerosOp: _ctz,
    xmath.FmaOp: _fma,
    tt.PreciseDivFOp: _precise_div,
    tt.MulhiUIOp: _mulhi,
    tt.ClampFOp: _clampf,
    xmath.CopySignOp: _copysign,
    tt.BitcastOp: _bitcast,
    tt.IntToPtrOp: _int_to_ptr,
    tt.PtrToIntOp: _ptr_to_int,
    tt.AddPtrOp: _addptr,
    tt.FpToFpOp: _fp_to_fp,
    tt.ExternElementwiseOp: _extern_elementwise,
}
