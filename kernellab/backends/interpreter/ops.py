"""Element-wise ops: arith, math and the scalar-like tt ops, as numpy functions per dtype.

`binary_fn(name, dtype)` etc. return plain numpy callables so reductions can reuse them.
Integers are stored signed; unsigned ops read the same bits as unsigned. Integer overflow
wraps and division by zero yields 0 instead of trapping (numpy warnings are silenced for the
whole run). bf16/fp8 arithmetic runs in float32 and rounds back after every op.
"""

from __future__ import annotations

import math

import numpy as np
from xdsl.dialects import builtin
from kernellab.ir import math as xmath

from kernellab.backends.interpreter.compiler import builds
from kernellab.backends.interpreter.dtypes import (
    F32,
    F64,
    FP8E4B8,
    FP8E5B16,
    NARROW_FLOATS,
    np_dtype,
    round_float,
    unsigned,
)
from kernellab.ir import arith, tt


# ----------------------------------------------------------------------------- helpers


def _narrow(fn, dt: np.dtype):
    """`fn` evaluated in float32 and rounded to the narrow float `dt` (bf16/fp8)."""
    if dt not in NARROW_FLOATS:
        return fn
    return lambda *xs: fn(*(x.astype(F32) for x in xs)).astype(dt)


def _on_unsigned(fn):
    """`fn` applied to the operands' bits read as unsigned; the result read back as signed."""

    def run(a, b):
        r = fn(unsigned(a), unsigned(b))
        return r.view(a.dtype) if r.dtype != np.bool_ else r

    return run


def _divsi(a, b):
    """Signed division truncating toward zero (C semantics); x / 0 gives 0."""
    q = np.floor_divide(a, b)
    r = np.remainder(a, b)
    return q + ((r != 0) & ((a ^ b) < 0)).astype(q.dtype)


def _via_uint8(fn):
    """Run an integer op on i1 operands as 8-bit integers and keep the low bit."""
    return lambda a, b: (fn(a.astype(np.int8), b.astype(np.int8)) & 1).astype(np.bool_)


_INT_BINARY = {
    "addi": np.add, "subi": np.subtract, "muli": np.multiply,
    "divsi": _divsi, "divui": _on_unsigned(np.floor_divide),
    "remsi": np.fmod, "remui": _on_unsigned(np.remainder),
    "andi": np.bitwise_and, "ori": np.bitwise_or, "xori": np.bitwise_xor,
    "shli": np.left_shift, "shrsi": np.right_shift, "shrui": _on_unsigned(np.right_shift),
    "maxsi": np.maximum, "minsi": np.minimum,
    "maxui": _on_unsigned(np.maximum), "minui": _on_unsigned(np.minimum),
}  # fmt: skip
# i1 is one bit: add/sub are xor, mul is and; as signed values true is -1 (so smaller).
BOOL_BINARY = {
    "addi": np.logical_xor, "subi": np.logical_xor, "muli": np.logical_and,
    "andi": np.logical_and, "ori": np.logical_or, "xori": np.logical_xor,
    "maxui": np.logical_or, "minui": np.logical_and,
    "maxsi": np.logical_and, "minsi": np.logical_or,
}  # fmt: skip
_FLOAT_BINARY = {
    "addf": np.add, "subf": np.subtract, "mulf": np.multiply, "divf": np.divide,
    "remf": np.fmod, "maximumf": np.maximum, "minimumf": np.minimum,
    "maxnumf": np.fmax, "minnumf": np.fmin,
    "powf": np.power, "atan2": np.arctan2, "copysign": np.copysign,
}  # fmt: skip


def binary_fn(name: str, dt: np.dtype):
    """The numpy function computing `arith.<name>` (or a binary math op) on dtype `dt`."""
    if name in _FLOAT_BINARY:
        return _narrow(_FLOAT_BINARY[name], dt)
    if dt == np.bool_:
        return BOOL_BINARY.get(name) or _via_uint8(_INT_BINARY[name])
    return _INT_BINARY[name]


def elementwise(c, op, fn):
    """An instruction applying `fn` to the op's operands, writing its single result."""
    ins = [c.slot(v) for v in op.operands]
    o = c.slot(op.results[0])
    if len(ins) == 1:
        (a,) = ins

        def run1(fr):
            e = fr.env
            e[o] = fn(e[a])

        return run1
    if len(ins) == 2:
        a, b = ins

        def run2(fr):
            e = fr.env
            e[o] = fn(e[a], e[b])

        return run2

    def run(fr):
        e = fr.env
        e[o] = fn(*[e[s] for s in ins])

    return run


# ------------------------------------------------------------------------------- arith


@builds(arith.ConstantOp)
def _constant(c, op):
    attr, dt = op.value, np_dtype(op.result.type)
    shape = tt.shape_of(op.result.type)
    if isinstance(attr, builtin.DenseIntOrFPElementsAttr):
        values = attr.get_values()
    else:
        values = [attr.value.data]
    array = constant_array(values, dt)  # xDSL expands a splat to one value per element
    c.const(op.result, np.broadcast_to(array.reshape(shape) if array.size > 1 else array, (1, *shape)))


def constant_array(values, dt: np.dtype) -> np.ndarray:
    """Python numbers (from an IR attribute) as an array of `dt`, wrapped like the IR does."""
    if dt == np.bool_:
        return np.array([bool(v) for v in values])
    if dt.kind == "i":
        mask = (1 << (8 * dt.itemsize)) - 1
        return np.array([int(v) & mask for v in values], dtype=f"u{dt.itemsize}").view(dt)
    return round_float(np.array(values, dtype=F64), dt)


@builds(*arith.BINARY_OPS.values())
def _binary(c, op):
    return elementwise(c, op, binary_fn(op.name.split(".")[1], np_dtype(op.result.type)))


@builds(arith.NegfOp)
def _negf(c, op):
    return elementwise(c, op, _narrow(np.negative, np_dtype(op.result.type)))


def _signed_bools(x):
    return -x.astype(np.int8)


_CMPI = {
    "eq": np.equal, "ne": np.not_equal,
    "slt": np.less, "sle": np.less_equal, "sgt": np.greater, "sge": np.greater_equal,
    "ult": _on_unsigned(np.less), "ule": _on_unsigned(np.less_equal),
    "ugt": _on_unsigned(np.greater), "uge": _on_unsigned(np.greater_equal),
}  # fmt: skip


def _unordered(ordered):
    """An unordered predicate: true when either operand is NaN or `ordered`'s negation holds."""
    return lambda a, b: ~ordered(a, b)


_CMPF = {
    "false": lambda a, b: np.zeros(np.broadcast_shapes(a.shape, b.shape), bool),
    "true": lambda a, b: np.ones(np.broadcast_shapes(a.shape, b.shape), bool),
    "oeq": np.equal, "ogt": np.greater, "oge": np.greater_equal,
    "olt": np.less, "ole": np.less_equal,
    "one": lambda a, b: (a < b) | (a > b),
    "ord": lambda a, b: ~(np.isnan(a) | np.isnan(b)),
    "ueq": lambda a, b: ~((a < b) | (a > b)),
    "ugt": _unordered(np.less_equal), "uge": _unordered(np.less),
    "ult": _unordered(np.greater_equal), "ule": _unordered(np.greater),
    "une": np.not_equal,
    "uno": lambda a, b: np.isnan(a) | np.isnan(b),
}  # fmt: skip


@builds(arith.CmpiOp)
def _cmpi(c, op):
    fn = _CMPI[op.predicate_name]
    if np_dtype(op.lhs.type) == np.bool_ and op.predicate_name[0] == "s":
        signed = fn
        fn = lambda a, b: signed(_signed_bools(a), _signed_bools(b))  # noqa: E731
    return elementwise(c, op, fn)


@builds(arith.CmpfOp)
def _cmpf(c, op):
    dt = np_dtype(op.lhs.type)
    fn = _CMPF[op.predicate_name]
    if dt in NARROW_FLOATS:
        exact = fn
        fn = lambda a, b: exact(a.astype(F32), b.astype(F32))  # noqa: E731
    return elementwise(c, op, fn)


@builds(arith.SelectOp)
def _select(c, op):
    rank = len(tt.shape_of(op.result.type))
    if tt.shape_of(op.cond.type) or rank == 0:
        return elementwise(c, op, np.where)
    trailing = (1,) * rank  # a scalar condition picks whole tensors per program
    return elementwise(c, op, lambda cond, a, b: np.where(cond.reshape(cond.shape + trailing), a, b))


def _fptoint(dst: np.dtype, is_unsigned: bool):
    """Float → integer truncating toward zero, saturating like the GPU (NaN → 0)."""
    target = np.dtype(f"u{dst.itemsize}") if is_unsigned else dst
    if dst == np.bool_:
        return lambda x: np.trunc(x.astype(F64)) != 0
    info = np.iinfo(target)
    hi = float(np.nextafter(float(info.max), 0)) if target.itemsize == 8 else float(info.max)

    def run(x):
        f = np.clip(x.astype(F64), float(info.min), hi)
        f = np.where(np.isnan(f), 0.0, f)
        return f.astype(target).view(dst)

    return run


def cast_fn(name: str, src: np.dtype, dst: np.dtype):
    """The numpy function computing `arith.<name>` from dtype `src` to `dst`."""
    if name == "extsi":
        return (lambda x: -(x.astype(dst))) if src == np.bool_ else (lambda x: x.astype(dst))
    if name == "extui":
        return lambda x: unsigned(x).astype(dst)
    if name == "trunci":
        return (lambda x: (x & 1).astype(np.bool_)) if dst == np.bool_ else (lambda x: x.astype(dst))
    if name in ("extf", "truncf"):
        return lambda x: round_float(x.astype(F64) if x.dtype in NARROW_FLOATS else x, dst)
    if name == "sitofp":
        src_fn = _signed_bools if src == np.bool_ else (lambda x: x)
        return lambda x: round_float(src_fn(x).astype(F64), dst)
    if name == "uitofp":
        return lambda x: round_float(unsigned(x).astype(F64), dst)
    if name in ("fptosi", "fptoui"):
        return _fptoint(dst, name == "fptoui")
    if name == "bitcast":
        return lambda x: x.view(dst)
    raise NotImplementedError(name)


@builds(*arith.CAST_OPS.values())
def _cast(c, op):
    src, dst = np_dtype(op.input.type), np_dtype(op.result.type)
    return elementwise(c, op, cast_fn(op.name.split(".")[1], src, dst))


# -------------------------------------------------------------------------------- math


def _round_half_away(x):
    r = np.trunc(x)
    return np.where(np.abs(x - r) >= 0.5, r + np.sign(x), r)


_erf64 = np.frompyfunc(math.erf, 1, 1)


def _erf(x):
    return _erf64(x.astype(F64)).astype(F64).astype(x.dtype)


def _rsqrt(x):
    return 1 / np.sqrt(x)


_FLOAT_UNARY = {
    xmath.ExpOp: np.exp, xmath.Exp2Op: np.exp2, xmath.ExpM1Op: np.expm1,
    xmath.LogOp: np.log, xmath.Log2Op: np.log2, xmath.Log10Op: np.log10, xmath.Log1pOp: np.log1p,
    xmath.SqrtOp: np.sqrt, xmath.RsqrtOp: _rsqrt, xmath.CbrtOp: np.cbrt,
    xmath.SinOp: np.sin, xmath.CosOp: np.cos, xmath.TanOp: np.tan,
    xmath.SinhOp: np.sinh, xmath.CoshOp: np.cosh, xmath.TanhOp: np.tanh,
    xmath.AsinOp: np.arcsin, xmath.AcosOp: np.arccos, xmath.AtanOp: np.arctan,
    xmath.AsinhOp: np.arcsinh, xmath.AcoshOp: np.arccosh, xmath.AtanhOp: np.arctanh,
    xmath.AbsFOp: np.abs, xmath.FloorOp: np.floor, xmath.CeilOp: np.ceil,
    xmath.TruncOp: np.trunc, xmath.RoundOp: _round_half_away, xmath.RoundEvenOp: np.rint,
    xmath.ErfOp: _erf, tt.PreciseSqrtOp: np.sqrt,
}  # fmt: skip
_FLOAT_BINARY_OPS = {
    xmath.PowFOp: "powf", xmath.Atan2Op: "atan2", xmath.CopySignOp: "copysign",
    tt.PreciseDivFOp: "divf",
}  # fmt: skip


@builds(*_FLOAT_UNARY)
def _float_unary(c, op):
    return elementwise(c, op, _narrow(_FLOAT_UNARY[type(op)], np_dtype(op.results[0].type)))


@builds(*_FLOAT_BINARY_OPS)
def _float_binary(c, op):
    return elementwise(c, op, binary_fn(_FLOAT_BINARY_OPS[type(op)], np_dtype(op.results[0].type)))


@builds(xmath.FmaOp)
def _fma(c, op):
    """a*b+c computed in float64 (exact product for fp32 and narrower) and rounded once."""
    dt = np_dtype(op.result.type)
    return elementwise(c, op, lambda a, b, d: round_float(
        a.astype(F64) * b.astype(F64) + d.astype(F64), dt) if dt != F64 else a * b + d)


@builds(xmath.FPowIOp)
def _fpowi(c, op):
    dt = np_dtype(op.result.type)
    return elementwise(c, op, lambda a, n: round_float(np.power(a.astype(F64), n.astype(F64)), dt))


@builds(xmath.IPowIOp)
def _ipowi(c, op):
    def ipow(a, n):
        out, base, n = np.ones_like(a), a.copy(), n.copy()
        while np.any(n > 0):
            out = np.where(n & 1, out * base, out)
            base, n = base * base, n >> 1
        return np.where(n < 0, 0, out)

    return elementwise(c, op, ipow)


@builds(xmath.AbsIOp)
def _absi(c, op):
    return elementwise(c, op, np.abs)


def _popcount(x):
    u = unsigned(x)
    bits = np.unpackbits(u.reshape(u.shape + (1,)).view(np.uint8), axis=-1)
    return bits.sum(axis=-1).astype(x.dtype)


def _count_leading_zeros(x):
    width = 8 * x.dtype.itemsize
    u = unsigned(x).astype(np.uint64)
    n = np.zeros(x.shape, np.int64)
    for shift in (32, 16, 8, 4, 2, 1):
        if shift >= width:
            continue
        hi = (u >> np.uint64(width - shift)) == 0
        n += np.where(hi, shift, 0)
        u = np.where(hi, u << np.uint64(shift), u) & np.uint64((1 << width) - 1)
    return (n + ((u >> np.uint64(width - 1)) == 0)).astype(x.dtype)


def _count_trailing_zeros(x):
    u = unsigned(x)
    lowest = u & (~u + np.array(1, u.dtype))  # isolate the lowest set bit
    width = 8 * x.dtype.itemsize
    return np.where(u == 0, width, width - 1 - _count_leading_zeros(lowest.view(x.dtype))).astype(x.dtype)


@builds(xmath.CtPopOp, xmath.CountLeadingZerosOp, xmath.CountTrailingZerosOp)
def _bit_counts(c, op):
    fn = {xmath.CtPopOp: _popcount, xmath.CountLeadingZerosOp: _count_leading_zeros,
          xmath.CountTrailingZerosOp: _count_trailing_zeros}[type(op)]  # fmt: skip
    return elementwise(c, op, fn)


# ------------------------------------------------------------------------ tt scalar-like


def _mulhi(a, b):
    """High half of the unsigned product of two integers of the same width."""
    width = 8 * a.dtype.itemsize
    ua, ub = unsigned(a), unsigned(b)
    if width < 64:
        wide = ua.astype(np.uint64) * ub.astype(np.uint64)
        return (wide >> np.uint64(width)).astype(ua.dtype).view(a.dtype)
    lo_mask, s = np.uint64(0xFFFFFFFF), np.uint64(32)
    a_lo, a_hi, b_lo, b_hi = ua & lo_mask, ua >> s, ub & lo_mask, ub >> s
    ll, lh, hl, hh = a_lo * b_lo, a_lo * b_hi, a_hi * b_lo, a_hi * b_hi
    mid = (ll >> s) + (lh & lo_mask) + (hl & lo_mask)
    return (hh + (lh >> s) + (hl >> s) + (mid >> s)).view(a.dtype)


@builds(tt.MulhiUIOp)
def _mulhiui(c, op):
    return elementwise(c, op, _mulhi)


@builds(tt.ClampFOp)
def _clampf(c, op):
    dt = np_dtype(op.result.type)
    if op.propagateNan.data == "all":
        fn = lambda x, lo, hi: np.where(np.isnan(x), x, np.fmin(np.fmax(x, lo), hi))  # noqa: E731
    else:
        fn = lambda x, lo, hi: np.fmin(np.fmax(x, lo), hi)  # noqa: E731
    return elementwise(c, op, _narrow(fn, dt))


def _round_toward_zero(x: np.ndarray, dst: np.dtype) -> np.ndarray:
    """`x` rounded toward zero to `dst`: the nearest value, one ulp smaller in magnitude where
    rounding went outward. Every float format is sign-magnitude, so decrementing the bit pattern
    steps toward zero (and turns an overflow to inf into the largest finite value). In the fnuz
    formats the step below -min_subnormal would be 0x80, their NaN: zero is +0 there."""
    x = x.astype(F64)
    r = round_float(x, dst)
    outward = np.abs(r.astype(F64)) > np.abs(x)
    bits = unsigned(r)
    stepped = np.where(outward, bits - np.array(1, bits.dtype), bits)
    if dst in (FP8E4B8, FP8E5B16):
        stepped = np.where(outward & (stepped == 0x80), np.array(0, bits.dtype), stepped)
    return stepped.view(dst)


@builds(tt.FpToFpOp)
def _fp_to_fp(c, op):
    """Float conversion rounding as the op says ("rtne" unless "rtz"); narrowing to fp8
    saturates (satfinite)."""
    dst = np_dtype(op.result.type)
    if op.rounding is not None and op.rounding.data == "rtz":
        return elementwise(c, op, lambda x: _round_toward_zero(x, dst))
    return elementwise(c, op, lambda x: round_float(x.astype(F64) if x.dtype in NARROW_FLOATS else x, dst))


@builds(tt.BitcastOp)
def _bitcast(c, op):
    if isinstance(tt.element_type(op.result.type), tt.PointerType):
        return elementwise(c, op, lambda x: x)  # pointers are addresses whatever they point to
    dst = np_dtype(op.result.type)
    return elementwise(c, op, lambda x: x.view(dst))

