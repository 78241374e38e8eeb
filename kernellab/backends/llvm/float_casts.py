"""Float widening and narrowing with one rounding, shared by the elementwise casts and a
target's float conversions (fp8): f64 narrows to f16/bf16 through round-to-odd f32 so the
second rounding is correct."""

from __future__ import annotations

import llvmlite.ir as ir

from kernellab.backends.llvm.types import BF16, F16, F32, F64, I32


def fp_ext(ctx, x, dst):
    b = ctx.b
    if x.type == BF16 and dst == F64:
        return b.fpext(b.fpext(x, F32), F64)
    return b.fpext(x, dst)


def fp_trunc(ctx, x, dst):
    """Round-to-nearest-even narrowing; f64 → bf16/f16 rounds once (cvt.rn.*.f64 or exact via
    round-to-odd to f32 first)."""
    b = ctx.b
    if x.type == F64 and dst in (F16, BF16):
        return b.fptrunc(round_to_odd_f32(ctx, x), dst)
    return b.fptrunc(x, dst)


def round_to_odd_f32(ctx, x):
    """f64 → f32 rounded toward zero with the sticky bit ORed into the last place, so that a
    second rounding (to bf16/f16) gives the correctly rounded result."""
    b = ctx.b
    t = ctx.target.f64_to_f32_toward_zero(ctx, x)
    back = b.fpext(t, F64)
    inexact = b.fcmp_ordered("!=", back, x)
    bits = b.bitcast(t, I32)
    bits = b.or_(bits, b.zext(inexact, I32))
    finite = b.fcmp_ordered("<", ctx.call("llvm.fabs.f32", F32, [t]), ir.Constant(F32, float("inf")))
    return b.select(finite, b.bitcast(bits, F32), t)
