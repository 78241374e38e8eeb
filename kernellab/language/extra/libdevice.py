"""`libdevice`: the math functions Triton exposes as `triton.language.extra.libdevice`, written
in the block language so they run on every backend with the same code.

Each function computes in fp64 (fp32 inputs widen, the result rounds back once), from the
primitives every backend has: exp, log, sqrt, sin, cos, erf, floor, where and bit operations,
with the reductions and cancellation-free forms below. For fp32 (and narrower) inputs that
gives results within an ulp of the correctly rounded value; for fp64 inputs within a few ulps
(pow: within |y·log x| ulps). Integer inputs are refused: convert them first.

With the launch option `extern_libs={'libdevice': '.../libdevice.10.bc'}`, an NVIDIA compile
calls NVIDIA's function instead (`asin` → `__nv_asinf` on fp32, `__nv_asin` on fp64; the
`extern=` of each function below) and links the bitcode into the kernel; other dtypes, other
backends and a missing file run the code here.

    from kernellab.language.extra import libdevice
    y = libdevice.asin(x)
"""

from __future__ import annotations

from kernellab.language.builtins import (
    abs as _abs,
    ceil as _ceil,
    cos as _cos,
    div_rn as _div_rn,
    erf as _erf,
    exp as _exp,
    exp2 as _exp2,
    floor as _floor,
    full,
    fma as _fma,
    log as _log,
    log2 as _log2,
    maximum,
    minimum,
    sin as _sin,
    sqrt as _sqrt,
    static_assert,
    static_range,
    where,
)
from kernellab.language.core import ExternSymbols, constexpr, float64, int64, kernel_function

_PI = 3.141592653589793
_LN10 = 2.302585092994046
_LN10_LO = -2.1707562233822494e-16  # ln 10 − _LN10
_LN10_HI26 = 2.3025850653648376  # _LN10 with its low 27 mantissa bits cleared (exact products)
_LN10_TAIL = _LN10 - _LN10_HI26
_SPLIT = 134217729.0  # 2^27 + 1: Veltkamp's splitter for fp64
_LOG2_10 = 3.321928094887362
_TAN_PI_8 = 0.41421356237309503
_SIGN = -0x8000000000000000  # the fp64 sign bit, as an int64


def _nv(name: str, fp32: str | None = None, fp64: str | None = None) -> ExternSymbols:
    """NVIDIA libdevice's functions for `name` (`__nv_<name>f` on fp32, `__nv_<name>` on fp64):
    what an NVIDIA compile with extern_libs={'libdevice': path} calls instead of the code here."""
    return ExternSymbols("libdevice", {"fp32": fp32 or f"__nv_{name}f", "fp64": fp64 or f"__nv_{name}"})


def _nv_fp32(symbol: str) -> ExternSymbols:
    return ExternSymbols("libdevice", {"fp32": symbol})


# -- fp64 cores --------------------------------------------------------------------------------


@kernel_function
def _wide(x):
    """`x` as fp64, after checking that it is a float."""
    static_assert(
        x.dtype.is_floating(),
        "libdevice math functions take floats; convert integers first, e.g. x.to(tl.float32)",
    )
    return x.to(float64)


@kernel_function
def _copysign64(magnitude, sign):
    bits = magnitude.to(int64, bitcast=True) & ~_SIGN
    return (bits | (sign.to(int64, bitcast=True) & _SIGN)).to(float64, bitcast=True)


@kernel_function
def _atan64(t):
    """atan: |t| mapped into [0, 1] (π/2 − atan(1/t)), then into [−tan(π/8), tan(π/8)]
    (π/4 + atan((t−1)/(t+1))), halved once (atan u = 2·atan(u / (1 + sqrt(1 + u²)))), and an
    odd series of 12 terms (|h| ≤ tan(π/16): the next term is below 2^-53)."""
    a = _abs(t)
    inverted = a > 1
    a = where(inverted, 1 / a, a)
    shifted = a > _TAN_PI_8
    a = where(shifted, (a - 1) / (a + 1), a)
    h = a / (1 + _sqrt(1 + a * a))
    h2 = h * h
    series = full(h2.shape, 1 / 23, float64)
    for i in static_range(11):
        k: constexpr = 10 - i
        series = series * h2 + (1 - 2 * (k % 2)) / (2 * k + 1)
    r = 2 * h * series
    r = where(shifted, _PI / 4 + r, r)
    r = where(inverted, _PI / 2 - r, r)
    return _copysign64(r, t)


@kernel_function
def _expm1_64(x):
    """e^x − 1 without cancellation near 0 (Kahan: (u − 1)·x / log u with u = e^x)."""
    u = _exp(x)
    um1 = u - 1
    r = where(um1 == 0, x, um1 * x / _log(u))
    r = where(um1 == -1, -1.0, r)  # x far below 0
    return where(u == float("inf"), u, r)


@kernel_function
def _log1p64(x):
    """log(1 + x) without cancellation near 0 (Kahan: log u · x / (u − 1) with u = 1 + x)."""
    u = 1 + x
    um1 = u - 1
    r = where(um1 == 0, x, _log(u) * x / um1)
    return where(u == float("inf"), u, r)


# -- public functions --------------------------------------------------------------------------


@kernel_function(extern=_nv("tan"))
def tan(x):
    w = _wide(x)
    return (_sin(w) / _cos(w)).to(x.dtype)


@kernel_function(extern=_nv("atan"))
def atan(x):
    return _atan64(_wide(x)).to(x.dtype)


@kernel_function(extern=_nv("atan2"))
def atan2(y, x):
    """The angle of (x, y) in [−π, π], with C's special cases for zeros and infinities."""
    wy, wx = _wide(y), _wide(x)
    negative_x = wx.to(int64, bitcast=True) < 0  # x < 0 or x == -0.0
    pi = _copysign64(full(wy.shape, _PI, float64), wy)
    half_pi = _copysign64(full(wy.shape, _PI / 2, float64), wy)
    r = _atan64(wy / wx)
    r = where(negative_x, r + pi, r)
    r = where(wx == 0, where(wy == 0, where(negative_x, pi, wy), half_pi), r)
    corner = _copysign64(_PI / 4 * where(negative_x, 3.0, 1.0).to(float64), wy)
    inf = float("inf")
    r = where(_abs(wy) == inf, where(_abs(wx) == inf, corner, half_pi), r)
    return r.to(y.dtype)


@kernel_function(extern=_nv("asin"))
def asin(x):
    w = _wide(x)
    return _atan64(w / _sqrt((1 - w) * (1 + w))).to(x.dtype)


@kernel_function(extern=_nv("acos"))
def acos(x):
    """π/2 − asin(x), written as 2·atan(sqrt((1 − x)/(1 + x))) to stay exact near x = 1."""
    w = _wide(x)
    return (2 * _atan64(_sqrt((1 - w) / (1 + w)))).to(x.dtype)


@kernel_function(extern=_nv("sinh"))
def sinh(x):
    w = _wide(x)
    e = _expm1_64(_abs(w))
    return _copysign64(0.5 * e + 0.5 * e / (e + 1), w).to(x.dtype)


@kernel_function(extern=_nv("cosh"))
def cosh(x):
    w = _abs(_wide(x))
    e = _exp(0.5 * w)  # e² would overflow where cosh still fits
    return (0.5 * e * e + 0.5 / (e * e)).to(x.dtype)


@kernel_function(extern=_nv("tanh"))
def tanh(x):
    w = _wide(x)
    e = _expm1_64(-2 * _abs(w))
    return _copysign64(-e / (e + 2), w).to(x.dtype)


@kernel_function(extern=_nv("asinh"))
def asinh(x):
    w = _wide(x)
    a = _abs(w)
    small = _log1p64(a + a * a / (1 + _sqrt(1 + a * a)))
    return _copysign64(where(a > 1e150, _log(a) + _log(2.0), small), w).to(x.dtype)


@kernel_function(extern=_nv("acosh"))
def acosh(x):
    w = _wide(x)
    d = w - 1
    near = _log1p64(d + _sqrt(d * (w + 1)))
    return where(w > 1e150, _log(w) + _log(2.0), near).to(x.dtype)


@kernel_function(extern=_nv("atanh"))
def atanh(x):
    w = _wide(x)
    a = _abs(w)
    return _copysign64(0.5 * _log1p64(2 * a / (1 - a)), w).to(x.dtype)


@kernel_function(extern=_nv("exp"))
def exp(x):
    return _exp(_wide(x)).to(x.dtype)


@kernel_function(extern=_nv("exp2"))
def exp2(x):
    return _exp2(_wide(x)).to(x.dtype)


@kernel_function(extern=_nv("exp10"))
def exp10(x):
    """e^(x·ln 10) with the product's rounding error (exact, from Veltkamp halves of x and
    ln 10) and ln 10's own tail applied as a first-order correction: without it the error
    would grow with |x·ln 10|."""
    w = _wide(x)
    p = w * _LN10
    c = w * _SPLIT
    hi = c - (c - w)
    lo = w - hi
    error = ((hi * _LN10_HI26 - p) + hi * _LN10_TAIL + lo * _LN10_HI26) + lo * _LN10_TAIL
    r = _exp(p)
    return where(_abs(p) < 700, r + r * (error + w * _LN10_LO), r).to(x.dtype)


@kernel_function(extern=_nv("expm1"))
def expm1(x):
    return _expm1_64(_wide(x)).to(x.dtype)


@kernel_function(extern=_nv("log"))
def log(x):
    return _log(_wide(x)).to(x.dtype)


@kernel_function(extern=_nv("log2"))
def log2(x):
    return _log2(_wide(x)).to(x.dtype)


@kernel_function(extern=_nv("log10"))
def log10(x):
    return (_log(_wide(x)) / _LN10).to(x.dtype)


@kernel_function(extern=_nv("log1p"))
def log1p(x):
    return _log1p64(_wide(x)).to(x.dtype)


@kernel_function(extern=_nv("pow"))
def pow(x, y):
    """x^y with C's rules: a negative base needs an integer exponent (odd keeps the sign),
    x^0 = 1 and 1^y = 1 for every y (NaN included)."""
    wx, wy = _wide(x), _wide(y)
    r = _exp(wy * _log(_abs(wx)))
    integer = _floor(wy) == wy
    odd = integer & (_abs(wy) < 9007199254740992.0) & ((wy.to(int64) % 2) != 0)
    r = where(wx < 0, where(integer, where(odd, -r, r), float("nan")), r)
    r = where((wy == 0) | (wx == 1), 1.0, r)
    return r.to(x.dtype)


@kernel_function(extern=_nv("sqrt"))
def sqrt(x):
    return _sqrt(_wide(x)).to(x.dtype)


@kernel_function(extern=_nv("rsqrt"))
def rsqrt(x):
    return (1 / _sqrt(_wide(x))).to(x.dtype)


@kernel_function(extern=_nv("cbrt"))
def cbrt(x):
    """The real cube root: exp(log|x| / 3) and one Newton step, with the sign of x."""
    w = _wide(x)
    a = _abs(w)
    r = _exp(_log(a) / 3)
    r = where((a == 0) | (a == float("inf")), a, r - (r * r * r - a) / (3 * r * r))
    return _copysign64(r, w).to(x.dtype)


@kernel_function(extern=_nv("hypot"))
def hypot(x, y):
    wx, wy = _abs(_wide(x)), _abs(_wide(y))
    big, small = maximum(wx, wy), minimum(wx, wy)
    q = small / big
    r = where(big == 0, big, big * _sqrt(1 + q * q))
    return where((wx == float("inf")) | (wy == float("inf")), float("inf"), r).to(x.dtype)


@kernel_function(extern=_nv("erf"))
def erf(x):
    return _erf(_wide(x)).to(x.dtype)


@kernel_function(extern=_nv("sin"))
def sin(x):
    return _sin(_wide(x)).to(x.dtype)


@kernel_function(extern=_nv("cos"))
def cos(x):
    return _cos(_wide(x)).to(x.dtype)


@kernel_function(extern=_nv("fmod"))
def fmod(x, y):
    """C's fmod: x − n·y with n = trunc(x / y), exact (the sign of x)."""
    return x % y


@kernel_function(extern=_nv("floor"))
def floor(x):
    return _floor(x)


@kernel_function(extern=_nv("ceil"))
def ceil(x):
    return _ceil(x)


@kernel_function(extern=_nv("trunc"))
def trunc(x):
    return where(x < 0, _ceil(x), _floor(x))


@kernel_function(extern=_nv("round"))
def round(x):
    """Nearest integer, halves away from zero."""
    t = trunc(x)
    return where(_abs(x - t) >= 0.5, t + where(x < 0, -1.0, 1.0).to(x.dtype), t)


@kernel_function(extern=_nv("rint"))
def rint(x):
    """Nearest integer, halves to even."""
    f = _floor(x)
    d = x - f
    up = (d > 0.5) | ((d == 0.5) & (f % 2 != 0))
    return where(up, f + 1, f)


@kernel_function(extern=_nv("nearbyint"))
def nearbyint(x):
    return rint(x)


@kernel_function(extern=_nv("fma"))
def fma(x, y, z):
    return _fma(x, y, z)


@kernel_function(extern=_nv("copysign"))
def copysign(x, y):
    return _copysign64(_wide(x), _wide(y)).to(x.dtype)


@kernel_function
def ldexp(x, n):
    return (_wide(x) * _exp2(n.to(float64))).to(x.dtype)


@kernel_function
def isnan(x):
    return x != x


@kernel_function
def isinf(x):
    return _abs(x) == float("inf")


@kernel_function
def isfinited(x):
    return _abs(x) < float("inf")


@kernel_function
def finitef(x):
    return _abs(x) < float("inf")


@kernel_function
def signbit(x):
    return _wide(x).to(int64, bitcast=True) < 0


@kernel_function(extern=_nv_fp32("__nv_fast_expf"))
def fast_expf(x):
    return _exp(x)


@kernel_function(extern=_nv_fp32("__nv_fast_logf"))
def fast_logf(x):
    return _log(x)


@kernel_function(extern=_nv_fp32("__nv_fast_fdividef"))
def fast_dividef(x, y):
    return x / y


@kernel_function(extern=_nv("div_rn", "__nv_fdiv_rn", "__nv_ddiv_rn"))
def div_rn(x, y):
    return _div_rn(x, y)


@kernel_function(extern=_nv("fmax"))
def fmax(x, y):
    return maximum(x, y)


@kernel_function(extern=_nv("fmin"))
def fmin(x, y):
    return minimum(x, y)


@kernel_function(extern=_nv("fabs"))
def abs(x):
    return _abs(x)
