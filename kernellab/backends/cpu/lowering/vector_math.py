"""fp32 math written out on whole vectors, where LLVM's intrinsic would become one libm call per
lane: x86 and AArch64 have no vector exp2 or log2 instruction, so `llvm.exp2.v1024f32` is 1024
calls to `exp2f`, and a softmax row spends its time there instead of in memory.

exp2(x) = 2^n · 2^f with n = round(x) and f = x - n in [-1/2, 1/2]: 2^f from its Taylor
series to degree 7 (truncation below 6e-9 relative, so within about one ulp after rounding in
the Horner steps; the GPUs' `ex2.approx` allows two), and 2^n applied in two halves so that
every factor is a normal float and a subnormal or infinite result is rounded once, by the last
multiply, as a correctly scaled product is.

log2(x) = e + log2(m) with x = m·2^e, m in [√½, √2) (subnormal x scaled by 2^23 first), and
log2(m) = (2/ln 2)·atanh(t), t = (m-1)/(m+1), |t| ≤ 0.172, from atanh's odd series to t^9
(truncation below 4e-10 relative); m-1 is exact, so results near x = 1 keep their relative
accuracy. 0 gives -inf, negative numbers and NaN give NaN, inf gives inf.
"""

from __future__ import annotations

import math

import llvmlite.ir as ir

from kernellab.backends.cpu.lowering.vectors import splat, vector_type
from kernellab.backends.llvm.types import F32, I32

# 2^f = sum (f ln 2)^k / k!: the coefficients of f^k, highest first for Horner
_EXP2_TAYLOR = tuple(math.log(2) ** k / math.factorial(k) for k in range(7, -1, -1))
# beyond these 2^x is 0 (below half the smallest subnormal, 2^-150) or inf (at least 2^128)
_LOWEST, _HIGHEST = -151.0, 129.0


def _floats(ctx, value: float, n: int):
    """<n x float> with every lane `value`."""
    return splat(ctx, ir.Constant(F32, value), n)


def _ints(value: int, n: int):
    """<n x i32> with every lane `value`."""
    return ir.Constant(vector_type(I32, n), [I32(value)] * n)


def _intrinsic(ctx, name: str, *args):
    """LLVM's f32 vector intrinsic `name` (e.g. "llvm.fma") on `args`."""
    vty = args[0].type
    return ctx.call(f"{name}.v{vty.count}f32", vty, list(args))


def exp2_f32(ctx, x):
    """2^x on a vector of f32, NaN in NaN out."""
    b = ctx.b
    n = x.type.count
    # compare-and-select clamps (one vmaxps/vminps each; maxnum would add NaN fix-ups), NaN
    # lanes pass through and are put back by the last select
    low, high = _floats(ctx, _LOWEST, n), _floats(ctx, _HIGHEST, n)
    clamped = b.select(b.fcmp_ordered("<", x, low), low, x)
    clamped = b.select(b.fcmp_ordered(">", clamped, high), high, clamped)
    whole = _intrinsic(ctx, "llvm.roundeven", clamped)
    f = b.fsub(clamped, whole)
    p = _floats(ctx, _EXP2_TAYLOR[0], n)
    for c in _EXP2_TAYLOR[1:]:
        p = _intrinsic(ctx, "llvm.fma", p, f, _floats(ctx, c, n))
    e = b.fptosi(whole, vector_type(I32, n))
    half = b.ashr(e, _ints(1, n))  # e = half + rest, both in [-76, 65]
    rest = b.sub(e, half)
    for k in (half, rest):
        biased = b.shl(b.add(k, _ints(127, n)), _ints(23, n))
        p = b.fmul(p, b.bitcast(biased, x.type))
    is_nan = b.fcmp_unordered("uno", x, x)
    return b.select(is_nan, x, p)


_ATANH_TO_LOG2 = tuple(2 / (k * math.log(2)) for k in (9, 7, 5, 3, 1))  # t^9 … t^1, for Horner in t²
_SQRT2_BITS = 0x3FB504F3  # √2 as fp32 bits


def _ratio(ctx, m):
    """(m - 1)/(m + 1) to about half an ulp: m - 1 is exact, m + 1 is kept as a rounded sum and
    its rounding error (TwoSum), and the quotient is corrected by its residual (an FMA), so
    log2 near 1 keeps its relative accuracy."""
    b = ctx.b
    one = _floats(ctx, 1.0, m.type.count)
    f = b.fsub(m, one)
    d = b.fadd(m, one)
    virtual = b.fsub(d, m)
    d_err = b.fadd(b.fsub(m, b.fsub(d, virtual)), b.fsub(one, virtual))  # m + 1 = d + d_err exactly
    q = b.fdiv(f, d)
    residual = _intrinsic(ctx, "llvm.fma", b.fneg(q), d, f)  # f - q·d, exact
    return b.fadd(q, b.fdiv(b.fsub(residual, b.fmul(q, d_err)), d))


def log2_f32(ctx, x):
    """log2 of a vector of f32, with IEEE's special cases."""
    b = ctx.b
    n = x.type.count
    subnormal = b.fcmp_ordered("<", x, _floats(ctx, 2.0**-126, n))
    scaled = b.select(subnormal, b.fmul(x, _floats(ctx, 2.0**23, n)), x)
    bits = b.bitcast(scaled, vector_type(I32, n))
    e = b.sub(b.lshr(bits, _ints(23, n)), b.select(subnormal, _ints(127 + 23, n), _ints(127, n)))
    m_bits = b.or_(b.and_(bits, _ints(0x7FFFFF, n)), _ints(0x3F800000, n))  # m in [1, 2)
    above = b.icmp_unsigned(">", m_bits, _ints(_SQRT2_BITS, n))  # m in (√2, 2): halve it
    m = b.bitcast(b.sub(m_bits, b.select(above, _ints(1 << 23, n), _ints(0, n))), x.type)
    e = b.add(e, b.zext(above, e.type))
    t = _ratio(ctx, m)
    t2 = b.fmul(t, t)
    p = _floats(ctx, _ATANH_TO_LOG2[0], n)
    for c in _ATANH_TO_LOG2[1:]:
        p = _intrinsic(ctx, "llvm.fma", p, t2, _floats(ctx, c, n))
    result = _intrinsic(ctx, "llvm.fma", p, t, b.sitofp(e, x.type))  # one rounding
    result = b.select(b.fcmp_ordered("==", x, _floats(ctx, 0.0, n)), _floats(ctx, float("-inf"), n), result)
    result = b.select(b.fcmp_ordered("==", x, _floats(ctx, float("inf"), n)), x, result)
    invalid = b.fcmp_unordered("uno", x, x)
    invalid = b.or_(invalid, b.fcmp_ordered("<", x, _floats(ctx, 0.0, n)))
    return b.select(invalid, _floats(ctx, float("nan"), n), result)


__all__ = ["exp2_f32", "log2_f32"]
