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


def exp2_f32(ctx, x):
    """2^x on a vector of f32, NaN in NaN out."""
    b = ctx.b
    n = x.type.count

    def const(v):
        return splat(ctx, ir.Constant(F32, v), n)

    def call(name, *args):
        return ctx.call(f"{name}.v{n}f32", x.type, list(args))

    # compare-and-select clamps (one vmaxps/vminps each; maxnum would add NaN fix-ups), NaN
    # lanes pass through and are put back by the last select
    low, high = const(_LOWEST), const(_HIGHEST)
    clamped = b.select(b.fcmp_ordered("<", x, low), low, x)
    clamped = b.select(b.fcmp_ordered(">", clamped, high), high, clamped)
    whole = call("llvm.roundeven", clamped)
    f = b.fsub(clamped, whole)
    p = const(_EXP2_TAYLOR[0])
    for c in _EXP2_TAYLOR[1:]:
        p = call("llvm.fma", p, f, const(c))
    ity = vector_type(I32, n)
    e = b.fptosi(whole, ity)
    half = b.ashr(e, ir.Constant(ity, [I32(1)] * n))  # e = half + rest, both in [-76, 65]
    rest = b.sub(e, half)
    for k in (half, rest):
        biased = b.shl(b.add(k, ir.Constant(ity, [I32(127)] * n)), ir.Constant(ity, [I32(23)] * n))
        p = b.fmul(p, b.bitcast(biased, x.type))
    is_nan = b.fcmp_unordered("uno", x, x)
    return b.select(is_nan, x, p)


_ATANH_TO_LOG2 = tuple(2 / (k * math.log(2)) for k in (9, 7, 5, 3, 1))  # t^9 … t^1, for Horner in t²
_SQRT2_BITS = 0x3FB504F3  # √2 as fp32 bits


def _ratio(ctx, m, one):
    """(m - 1)/(m + 1) to about half an ulp: m - 1 is exact, m + 1 is kept as a rounded sum and
    its rounding error (TwoSum), and the quotient is corrected by its residual (an FMA), so
    log2 near 1 keeps its relative accuracy."""
    b = ctx.b
    fma = f"llvm.fma.v{m.type.count}f32"
    f = b.fsub(m, one)
    d = b.fadd(m, one)
    virtual = b.fsub(d, m)
    d_err = b.fadd(b.fsub(m, b.fsub(d, virtual)), b.fsub(one, virtual))  # m + 1 = d + d_err exactly
    q = b.fdiv(f, d)
    residual = ctx.call(fma, m.type, [b.fneg(q), d, f])  # f - q·d, exact
    return b.fadd(q, b.fdiv(b.fsub(residual, b.fmul(q, d_err)), d))


def log2_f32(ctx, x):
    """log2 of a vector of f32, with IEEE's special cases."""
    b = ctx.b
    n = x.type.count
    ity = vector_type(I32, n)

    def const(v):
        return splat(ctx, ir.Constant(F32, v), n)

    def iconst(v):
        return ir.Constant(ity, [I32(v)] * n)

    subnormal = b.fcmp_ordered("<", x, const(2.0**-126))
    scaled = b.select(subnormal, b.fmul(x, const(2.0**23)), x)
    bits = b.bitcast(scaled, ity)
    e = b.sub(b.lshr(bits, iconst(23)), b.select(subnormal, iconst(127 + 23), iconst(127)))
    m_bits = b.or_(b.and_(bits, iconst(0x7FFFFF)), iconst(0x3F800000))  # m in [1, 2)
    above = b.icmp_unsigned(">", m_bits, iconst(_SQRT2_BITS))  # m in (√2, 2): halve it
    m = b.bitcast(b.sub(m_bits, b.select(above, iconst(1 << 23), iconst(0))), x.type)
    e = b.add(e, b.zext(above, ity))
    t = _ratio(ctx, m, const(1.0))
    t2 = b.fmul(t, t)
    p = const(_ATANH_TO_LOG2[0])
    for c in _ATANH_TO_LOG2[1:]:
        p = ctx.call(f"llvm.fma.v{n}f32", x.type, [p, t2, const(c)])
    result = ctx.call(f"llvm.fma.v{n}f32", x.type, [p, t, b.sitofp(e, x.type)])  # one rounding
    result = b.select(b.fcmp_ordered("==", x, const(0.0)), const(float("-inf")), result)
    result = b.select(b.fcmp_ordered("==", x, const(float("inf"))), x, result)
    invalid = b.fcmp_unordered("uno", x, x)
    invalid = b.or_(invalid, b.fcmp_ordered("<", x, const(0.0)))
    return b.select(invalid, const(float("nan")), result)


__all__ = ["exp2_f32", "log2_f32"]
