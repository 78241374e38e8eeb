"""fp8 ↔ fp32 in integer arithmetic on the bits, for every target and every fp8 format Triton
has: e4m3fn and e5m2 (NVIDIA's and OCP's), e4m3fnuz and e5m2fnuz (AMD MI300's). A target with
conversion instructions (NVIDIA sm_90's `cvt ... e4m3x2`) uses them for the cases they cover
and this for the rest.

Narrowing rounds to nearest even (or toward zero for rounding="rtz") and saturates finite values
to the largest finite fp8 value, as PTX's `cvt.rn.satfinite` and the interpreter do; NaN stays
NaN. Normal results add the rounding increment below the kept mantissa bits (a carry into the
exponent is the right answer) and rebias the exponent; results below the smallest normal are
rint(|x|·2^k), exact in fp32 since scaling by a power of two is. The fnuz formats have no
negative zero (0x80 is their NaN): a value that rounds to zero is +0.
Widening is exact: the fields are rebuilt as an fp32 (subnormals as m·2^(1-bias-mbits)).
"""

from __future__ import annotations

from dataclasses import dataclass

import llvmlite.ir as ir
from xdsl.dialects import builtin

from kernellab.backends.llvm.float_casts import round_to_odd_f32
from kernellab.backends.llvm.types import F32, F64, I32, I8, is_fp8, llty


@dataclass(frozen=True)
class Fp8Format:
    mbits: int  # mantissa bits (the exponent has the other 7 - mbits)
    bias: int
    max_code: int  # the largest finite value's code, without the sign
    nan_code: int  # the (positive) NaN written for NaN inputs
    fnuz: bool = False  # no inf, no -0: 0x80 is the one NaN
    ieee_specials: bool = False  # an all-ones exponent is inf (mantissa 0) or NaN, as IEEE

    @property
    def subnormal_scale(self) -> int:
        """k with 2^-k the subnormal step, 2^(1 - bias - mbits)."""
        return self.bias + self.mbits - 1


FORMATS = {
    builtin.Float8E4M3FNType: Fp8Format(mbits=3, bias=7, max_code=0x7E, nan_code=0x7F),
    builtin.Float8E5M2Type: Fp8Format(mbits=2, bias=15, max_code=0x7B, nan_code=0x7F, ieee_specials=True),
    builtin.Float8E4M3FNUZType: Fp8Format(mbits=3, bias=8, max_code=0x7F, nan_code=0x80, fnuz=True),
    builtin.Float8E5M2FNUZType: Fp8Format(mbits=2, bias=16, max_code=0x7F, nan_code=0x80, fnuz=True),
}


def fp8_to_f32(ctx, x, src):
    """fp8 bits `x` (i8) of format `src` as an exact f32."""
    fmt = FORMATS[type(src)]
    b = ctx.b
    xi = b.zext(x, I32)
    sign = b.shl(b.and_(xi, I32(0x80)), I32(24))
    emask = (1 << (7 - fmt.mbits)) - 1
    e = b.and_(b.lshr(xi, I32(fmt.mbits)), I32(emask))
    m = b.and_(xi, I32((1 << fmt.mbits) - 1))
    normal = b.or_(b.shl(b.add(e, I32(127 - fmt.bias)), I32(23)), b.shl(m, I32(23 - fmt.mbits)))
    subnormal = b.fmul(b.uitofp(m, F32), ir.Constant(F32, 2.0**-fmt.subnormal_scale))
    mag = b.select(b.icmp_unsigned("==", e, I32(0)), b.bitcast(subnormal, I32), normal)
    if fmt.ieee_specials:
        top = b.icmp_unsigned("==", e, I32(emask))
        special = b.select(b.icmp_unsigned("==", m, I32(0)), I32(0x7F800000), I32(0x7FC00000))
        mag = b.select(top, special, mag)
    elif fmt.fnuz:
        return b.bitcast(b.select(b.icmp_unsigned("==", xi, I32(0x80)), I32(0x7FC00000), b.or_(mag, sign)), F32)
    else:  # e4m3fn: all ones is NaN, the rest of the top exponent is finite
        mag = b.select(b.icmp_unsigned("==", b.and_(xi, I32(0x7F)), I32(0x7F)), I32(0x7FC00000), mag)
    return b.bitcast(b.or_(mag, sign), F32)


def f32_to_fp8(ctx, x, dst, rounding: str):
    """f32 `x` as fp8 bits (i8) of format `dst`, rounded ("rtne" or "rtz") and saturated."""
    fmt = FORMATS[type(dst)]
    b = ctx.b
    bits = b.bitcast(x, I32)
    sign = b.lshr(b.and_(bits, I32(0x80000000)), I32(24))
    a = b.and_(bits, I32(0x7FFFFFFF))
    drop = 23 - fmt.mbits
    if rounding == "rtz":
        rounded = a
    else:
        lsb = b.and_(b.lshr(a, I32(drop)), I32(1))
        rounded = b.add(a, b.add(I32((1 << (drop - 1)) - 1), lsb))
    normal = b.sub(b.lshr(rounded, I32(drop)), I32((127 - fmt.bias) << fmt.mbits))
    normal = b.select(b.icmp_signed(">", normal, I32(fmt.max_code)), I32(fmt.max_code), normal)
    # below the smallest normal (2^(1-bias)): count steps of the subnormal spacing
    scaled = b.fmul(b.bitcast(a, F32), ir.Constant(F32, float(2**fmt.subnormal_scale)))
    steps = ctx.call("llvm.trunc.f32" if rounding == "rtz" else "llvm.roundeven.f32", F32, [scaled])
    min_normal_bits = (127 + 1 - fmt.bias) << 23
    mag = b.select(b.icmp_unsigned("<", a, I32(min_normal_bits)), b.fptoui(steps, I32), normal)
    is_nan = b.icmp_unsigned(">", a, I32(0x7F800000))
    if fmt.fnuz:  # zero has no sign; NaN is 0x80 whatever the input's sign
        signed = b.select(b.icmp_unsigned("==", mag, I32(0)), I32(0), b.or_(mag, sign))
        return b.trunc(b.select(is_nan, I32(fmt.nan_code), signed), I8)
    mag = b.select(is_nan, I32(fmt.nan_code), mag)
    return b.trunc(b.or_(mag, sign), I8)


def convert(ctx, x, src, dst, rounding: str, widen=fp8_to_f32, narrow=f32_to_fp8):
    """x of IR float type `src` → `dst`, one of them fp8, through an f32 that holds the source
    exactly (f64 sources: rounded to odd, or toward zero for "rtz", so the second rounding is
    right). `widen` and `narrow` are a target's versions of the two conversions."""
    b = ctx.b
    if is_fp8(dst):
        if type(src) is type(dst):
            return x
        if llty(src) == F64:
            f = ctx.target.f64_to_f32_toward_zero(ctx, x) if rounding == "rtz" else round_to_odd_f32(ctx, x)
        elif is_fp8(src):
            f = widen(ctx, x, src)
        else:
            f = x if llty(src) == F32 else b.fpext(x, F32)
        return narrow(ctx, f, dst, rounding)
    f = widen(ctx, x, src)
    dty = llty(dst)
    if dty == F32:
        return f
    return b.fpext(f, F64) if dty == F64 else b.fptrunc(f, dty)  # exact: fp8 fits fp16 and bf16


__all__ = ["FORMATS", "Fp8Format", "fp8_to_f32", "f32_to_fp8", "convert"]
