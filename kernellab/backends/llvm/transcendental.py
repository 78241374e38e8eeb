"""Transcendental functions emitted as plain LLVM IR (no libdevice).

fp32 (errors measured against math.* in float64 on dense grids, see tests):
  log/log2: x = m·2^e with m in [√½, √2); log(m) = log1p(f), f = m-1, through s = f/(2+f)
    and the odd series 2·atanh(s) (|s| ≤ 0.172, 4 terms); ≤ 1 ulp.
  sin/cos: reduction k = rint(x·2/π), r = x - k·π/2 in fp64 with a 3-part π/2 (exact for
    |x| < 2^30), then Taylor polynomials in fp64 on |r| ≤ π/4; correctly rounded almost always.
  erf: |x| < 1: x + x·Q(x²) (degree 6, fitted by reweighted least squares on Chebyshev nodes);
    1 ≤ |x| < 3.92: 1 - 2^G(|x| - 2.5) with G a degree-11 fit of log2(erfc); beyond: ±1.
    ≤ 2.5 ulp.
fp64: exp/exp2 (range reduction by ln 2, Taylor to r^13), log/log2 (same scheme as fp32 with
  8 series terms), sin/cos (Taylor to r^19/r^20), erf (Maclaurin series for |x| < 1, Taylor
  series around 1.25, 1.75, 2.25 up to 2.5, continued fraction for erfc beyond): ≤ 2 ulp.
"""

from __future__ import annotations

import math

import llvmlite.ir as ir

from kernellab.backends.llvm.types import F32, F64, I32, I64

PIO2 = (1.5707963267948966, 6.123233995736766e-17, -1.4973849048591698e-33)
TWO_OVER_PI = 0.6366197723675814
LN2 = 0.6931471805599453
LN2_HI_D, LN2_LO_D = 0.6931467056274414, 4.7493250390316726e-07
LOG2E = 1.4426950408889634

ERF_Q = [0.12837916573540387, -0.3761262584834516, 0.11283585339173385, -0.026853818396520623,
         0.005188338351614724, -0.0008010278255124181, 7.854119927190595e-05]  # fmt: skip
ERF_G = [-11.262853678793798, -7.7222859765762415, -1.3617508186990401, -0.015664869265902548,
         0.003124178011870704, -0.0006073350702577307, 0.00011102309524546605,
         -1.8326583600791757e-05, 2.648330240440089e-06, -2.7237056010598337e-07,
         -5.6448781649010016e-08, 2.9074702645459638e-08]  # fmt: skip


def _c(ty, v):
    return ir.Constant(ty, float(v))


def _fma(ctx, a, b, c):
    return ctx.call(f"llvm.fma.{'f32' if a.type == F32 else 'f64'}", a.type, [a, b, c])


def horner(ctx, coeffs, u):
    """c0 + u*(c1 + u*(c2 + ...)) with fma."""
    ty = u.type
    acc = _c(ty, coeffs[-1])
    for c in reversed(coeffs[:-1]):
        acc = _fma(ctx, acc, u, _c(ty, c))
    return acc


def _select_special(ctx, x, res):
    """log's special cases: +inf → +inf, 0 → -inf, x < 0 or NaN → NaN."""
    b = ctx.b
    ty = x.type
    res = b.select(b.fcmp_ordered("==", x, _c(ty, float("inf"))), _c(ty, float("inf")), res)
    res = b.select(b.fcmp_ordered("==", x, _c(ty, 0.0)), _c(ty, float("-inf")), res)
    bad = b.fcmp_unordered("<", x, _c(ty, 0.0))
    return b.select(bad, _c(ty, float("nan")), res)


def _log_parts(ctx, x):
    """(e as float, log1p(f)) with x = 2^e·(1+f), 1+f in [√½, √2)."""
    dk, f, hfsq, tail = _log_terms(ctx, x)
    b = ctx.b
    return dk, b.fsub(f, b.fsub(hfsq, tail))


def _log_terms(ctx, x):
    """(e as float, f, f²/2, s·(f²/2 + R(s²))) with x = 2^e·(1+f), 1+f in [√½, √2), s = f/(2+f):
    log1p(f) = f - (f²/2 - that last term)."""
    b = ctx.b
    ty = x.type
    if ty == F32:
        ity, mant_bits, bias, one_bits, tiny, scale_bits = I32, 23, 127, 0x3F800000, 2.0**-126, 23
        exp_mask = 0xFF
        nterms = [2 / 3, 2 / 5, 2 / 7, 2 / 9]
    else:
        ity, mant_bits, bias, one_bits, tiny, scale_bits = I64, 52, 1023, 0x3FF0000000000000, 2.0**-1022, 54
        exp_mask = 0x7FF
        nterms = [2 / (2 * k + 1) for k in range(1, 10)]
    is_tiny = b.fcmp_ordered("<", x, _c(ty, tiny))
    xs = b.select(is_tiny, b.fmul(x, _c(ty, 2.0**scale_bits)), x)
    bits = b.bitcast(xs, ity)
    e = b.sub(b.and_(b.lshr(bits, ir.Constant(ity, mant_bits)), ir.Constant(ity, exp_mask)), ir.Constant(ity, bias))
    e = b.sub(e, b.select(is_tiny, ir.Constant(ity, scale_bits), ir.Constant(ity, 0)))
    mbits = b.or_(b.and_(bits, ir.Constant(ity, (1 << mant_bits) - 1)), ir.Constant(ity, one_bits))
    m = b.bitcast(mbits, ty)
    big = b.fcmp_ordered(">", m, _c(ty, 1.4142135623730951))
    m = b.select(big, b.fmul(m, _c(ty, 0.5)), m)
    e = b.add(e, b.zext(big, ity))
    f = b.fsub(m, _c(ty, 1.0))
    s = b.fdiv(f, b.fadd(f, _c(ty, 2.0)))
    z = b.fmul(s, s)
    r = b.fmul(z, horner(ctx, nterms, z))  # 2s^2/3 + 2s^4/5 + ...
    hfsq = b.fmul(_c(ty, 0.5), b.fmul(f, f))
    return b.sitofp(e, ty), f, hfsq, b.fmul(s, b.fadd(hfsq, r))


def log_f32(ctx, x):
    dk, l1p = _log_parts(ctx, x)
    res = _fma(ctx, dk, _c(F32, 0.693145751953125), _fma(ctx, dk, _c(F32, 1.428606765330187e-06), l1p))
    return _select_special(ctx, x, res)


def log2_f32(ctx, x):
    dk, l1p = _log_parts(ctx, x)
    res = _fma(ctx, l1p, _c(F32, LOG2E), dk)
    return _select_special(ctx, x, res)


def log_f64(ctx, x):
    dk, l1p = _log_parts(ctx, x)
    res = _fma(ctx, dk, _c(F64, LN2_HI_D), _fma(ctx, dk, _c(F64, LN2_LO_D), l1p))
    return _select_special(ctx, x, res)


# 1/ln 2 as a 33-bit head (its products with a 21-bit head of log1p are exact) and the rest
LOG2E_HI, LOG2E_LO = 1.4426950407214463, 1.6751713164886512e-10


def log2_f64(ctx, x):
    """e + log1p(f)/ln 2 within an ulp: log1p(f) as a head of its top 21 bits (f - f²/2 with the
    low mantissa word cleared) and the rest, each times 1/ln 2 split the same way, e added to
    the exact head product with the rounding error carried into the tail. One rounding of
    log1p times one of 1/ln 2 alone came to 2 ulps where e = 0 (x = 0.714...)."""
    b = ctx.b
    dk, f, hfsq, tail = _log_terms(ctx, x)
    head = b.fsub(f, hfsq)
    head = b.bitcast(b.and_(b.bitcast(head, I64), ir.Constant(I64, 0xFFFFFFFF00000000)), F64)
    rest = b.fadd(b.fsub(b.fsub(f, head), hfsq), tail)
    hi = b.fmul(head, _c(F64, LOG2E_HI))
    lo = _fma(ctx, rest, _c(F64, LOG2E_HI), b.fmul(b.fadd(rest, head), _c(F64, LOG2E_LO)))
    total = b.fadd(dk, hi)
    lo = b.fadd(lo, b.fadd(b.fsub(dk, total), hi))
    return _select_special(ctx, x, b.fadd(total, lo))


# ------------------------------------------------------------------------------ sin/cos


def _sincos_reduce(ctx, xd):
    """(r, quadrant i32) with xd = r + quadrant·π/2 (mod 2π), |r| ≤ π/4, in fp64."""
    b = ctx.b
    k = ctx.call("llvm.rint.f64", F64, [b.fmul(xd, _c(F64, TWO_OVER_PI))])
    r = _fma(ctx, b.fneg(k), _c(F64, PIO2[0]), xd)
    r = _fma(ctx, b.fneg(k), _c(F64, PIO2[1]), r)
    r = _fma(ctx, b.fneg(k), _c(F64, PIO2[2]), r)
    q = ctx.call("llvm.fptosi.sat.i64.f64", I64, [k])
    q = b.and_(b.trunc(q, I32), I32(3))
    return r, q


def _sin_cos_poly(ctx, r, nsin: int, ncos: int):
    b = ctx.b
    z = b.fmul(r, r)
    # sin r = r + r^3 * S(z); cos r = 1 - z/2 + z^2 * C(z)
    s_coef = [(-1) ** k / math.factorial(2 * k + 1) for k in range(1, nsin + 1)]
    c_coef = [(-1) ** k / math.factorial(2 * k) for k in range(2, ncos + 2)]
    sin_r = _fma(ctx, b.fmul(z, r), horner(ctx, s_coef, z), r)
    cos_r = _fma(ctx, b.fmul(z, z), horner(ctx, c_coef, z), _fma(ctx, z, _c(F64, -0.5), _c(F64, 1.0)))
    return sin_r, cos_r


def _sincos(ctx, xd, which: str, nsin: int, ncos: int):
    b = ctx.b
    r, q = _sincos_reduce(ctx, xd)
    if which == "cos":
        q = b.and_(b.add(q, I32(1)), I32(3))
    s, c = _sin_cos_poly(ctx, r, nsin, ncos)
    # quadrant 0: s, 1: c, 2: -s, 3: -c
    odd = b.icmp_unsigned("!=", b.and_(q, I32(1)), I32(0))
    neg = b.icmp_unsigned("!=", b.and_(q, I32(2)), I32(0))
    v = b.select(odd, c, s)
    return b.select(neg, b.fneg(v), v)


def sin_f32(ctx, x):
    return ctx.b.fptrunc(_sincos(ctx, ctx.b.fpext(x, F64), "sin", 5, 5), F32)


def cos_f32(ctx, x):
    return ctx.b.fptrunc(_sincos(ctx, ctx.b.fpext(x, F64), "cos", 5, 5), F32)


def sin_f64(ctx, x):
    return _sincos(ctx, x, "sin", 9, 9)


def cos_f64(ctx, x):
    return _sincos(ctx, x, "cos", 9, 9)


# ------------------------------------------------------------------------------------ erf


def erf_f32(ctx, x):
    b = ctx.b
    t = ctx.call("llvm.fabs.f32", F32, [x])
    z = b.fmul(t, t)
    small = _fma(ctx, x, horner(ctx, ERF_Q, z), x)
    g = horner(ctx, ERF_G, b.fsub(t, _c(F32, 2.5)))
    big = b.fsub(_c(F32, 1.0), ctx.target.exp2_approx_f32(ctx, g))
    big = b.select(b.fcmp_ordered(">=", t, _c(F32, 3.92)), _c(F32, 1.0), big)
    big = ctx.call("llvm.copysign.f32", F32, [big, x])
    return b.select(b.fcmp_ordered("<", t, _c(F32, 1.0)), small, big)


def _erf_taylor_at(t0: float, terms: int = 20) -> list[float]:
    """erf's Taylor coefficients around t0, in powers of h = t - t0: erf(t0), then
    (2/√π)·e^(-t0²)·(-1)^n·H_n(t0)/(n+1)! (erf's derivatives are the Gaussian times Hermite
    polynomials, H_{n+1} = 2t·H_n - 2n·H_{n-1}). On |h| ≤ 1/4 the 20th term is below 1e-19."""
    scale = 2 / math.sqrt(math.pi) * math.exp(-t0 * t0)
    previous, hermite = 0.0, 1.0
    coeffs = [math.erf(t0)]
    for n in range(terms):
        coeffs.append(scale * (-1) ** n * hermite / math.factorial(n + 1))
        previous, hermite = hermite, 2 * t0 * hermite - 2 * n * previous
    return coeffs


# |x| < 1: erf's Maclaurin series in x² (its terms fall below 2^-60 by the 22nd)
ERF_F64_SMALL = [2 / math.sqrt(math.pi) * (-1) ** n / (math.factorial(n) * (2 * n + 1)) for n in range(22)]
# 1 ≤ |x| < 2.5: Taylor series around the middle of each quarter-wide interval. The Maclaurin
# series there loses up to 5 bits to cancellation (its terms reach e^(x²) times the result).
ERF_F64_CENTERS = (1.25, 1.75, 2.25)
ERF_F64_MIDDLE = [_erf_taylor_at(c) for c in ERF_F64_CENTERS]


def erf_f64(ctx, x):
    """Maclaurin series for |x| < 1, Taylor series around 1.25, 1.75 or 2.25 up to 2.5, and
    1 - erfc from a continued fraction beyond (|x| ≥ 6: ±1)."""
    b = ctx.b
    t = ctx.call("llvm.fabs.f64", F64, [x])
    small = b.fmul(x, horner(ctx, ERF_F64_SMALL, b.fmul(t, t)))
    middle = None
    for center, coeffs in reversed(list(zip(ERF_F64_CENTERS, ERF_F64_MIDDLE))):
        near = horner(ctx, coeffs, b.fsub(t, _c(F64, center)))
        middle = near if middle is None else b.select(b.fcmp_ordered("<", t, _c(F64, center + 0.25)), near, middle)
    middle = ctx.call("llvm.copysign.f64", F64, [middle, x])
    # erfc(t) = exp(-t^2)/sqrt(pi) / (t + (1/2)/(t + 1/(t + (3/2)/(t + 2/(t + ...)))))
    tc = b.select(b.fcmp_ordered("<", t, _c(F64, 2.5)), _c(F64, 2.5), t)
    acc = tc
    for k in range(60, 0, -1):
        acc = b.fadd(tc, b.fdiv(_c(F64, k / 2), acc))
    e = exp_f64(ctx, b.fneg(b.fmul(tc, tc)))
    erfc = b.fdiv(b.fmul(e, _c(F64, 1 / math.sqrt(math.pi))), acc)
    big = b.fsub(_c(F64, 1.0), erfc)
    big = b.select(b.fcmp_ordered(">=", t, _c(F64, 6.0)), _c(F64, 1.0), big)
    big = ctx.call("llvm.copysign.f64", F64, [big, x])
    big = b.select(b.fcmp_ordered("<", t, _c(F64, 2.5)), middle, big)
    return b.select(b.fcmp_unordered("<", t, _c(F64, 1.0)), small, big)


# ------------------------------------------------------------------------------ exp f64


def _scale_pow2(ctx, p, k):
    """p · 2^k for i32 k in [-1100, 1100] without overflow in the scale factors."""
    b = ctx.b
    k1 = b.ashr(k, I32(1))
    k2 = b.sub(k, k1)

    def pow2(n):
        bits = b.shl(b.zext(b.add(n, I32(1023)), I64), ir.Constant(I64, 52))
        return b.bitcast(bits, F64)

    return b.fmul(b.fmul(p, pow2(k1)), pow2(k2))


def _exp_poly(ctx, r):

    coeffs = [1 / math.factorial(n) for n in range(14)]
    return horner(ctx, coeffs, r)


def exp_f64(ctx, x):
    b = ctx.b
    xc = ctx.call("llvm.maxnum.f64", F64, [ctx.call("llvm.minnum.f64", F64, [x, _c(F64, 710.0)]), _c(F64, -746.0)])
    k = ctx.call("llvm.rint.f64", F64, [b.fmul(xc, _c(F64, LOG2E))])
    r = _fma(ctx, b.fneg(k), _c(F64, LN2_HI_D), xc)
    r = _fma(ctx, b.fneg(k), _c(F64, LN2_LO_D), r)
    p = _exp_poly(ctx, r)
    ki = ctx.call("llvm.fptosi.sat.i32.f64", I32, [k])
    res = _scale_pow2(ctx, p, ki)
    return b.select(b.fcmp_unordered("uno", x, x), x, res)


def exp2_f64(ctx, x):
    b = ctx.b
    xc = ctx.call("llvm.maxnum.f64", F64, [ctx.call("llvm.minnum.f64", F64, [x, _c(F64, 1025.0)]), _c(F64, -1076.0)])
    k = ctx.call("llvm.rint.f64", F64, [xc])
    f = b.fsub(xc, k)
    r = b.fmul(f, _c(F64, LN2))
    p = _exp_poly(ctx, r)
    ki = ctx.call("llvm.fptosi.sat.i32.f64", I32, [k])
    res = _scale_pow2(ctx, p, ki)
    return b.select(b.fcmp_unordered("uno", x, x), x, res)
