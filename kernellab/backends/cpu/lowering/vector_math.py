"""fp32 math written out on whole vectors, where LLVM's intrinsic would become one libm call per
lane: x86 and AArch64 have no vector exp2 instruction, so `llvm.exp2.v1024f32` is 1024 calls
to `exp2f`, and a softmax row spends its time there instead of in memory.

exp2(x) = 2^n · 2^f with n = round(x) and f = x - n in [-1/2, 1/2]: 2^f from its Taylor
series to degree 7 (truncation below 6e-9 relative, so within about one ulp after rounding in
the Horner steps; the GPUs' `ex2.approx` allows two), and 2^n applied in two halves so that
every factor is a normal float and a subnormal or infinite result is rounded once, by the last
multiply, as a correctly scaled product is.
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


__all__ = ["exp2_f32"]
