"""Float conversions with an explicit rounding mode, fp8 (e4m3fn, e5m2) included.

Narrowing to fp8 rounds to nearest even (or toward zero for rounding="rtz") and saturates
finite values to the largest finite fp8 value, as PTX's `cvt.rn.satfinite`; NaN stays NaN.
  sm_90 (rtne): `cvt.rn.satfinite.{e4m3x2,e5m2x2}.f32` (inline PTX; sm_89+ instruction).
  sm_80, and rtz: integer arithmetic on the fp32 bits: for normal results add the rounding
    increment below the kept mantissa bits (carry into the exponent is the right answer) and
    rebias the exponent; subnormal results are rint(|x|·2^k) computed exactly in fp32
    (scaling by a power of two is exact); then clamp to the largest finite code.
Widening from fp8 is exact: e5m2 is the top byte of an fp16; e4m3fn is rebuilt from its
fields (sm_90: `cvt.rn.f16x2.e4m3x2`).
Sources wider than fp32 are first rounded to fp32 with round-to-odd, so the second rounding
is correct; fp16/bf16 sources widen to fp32 exactly.
"""

from __future__ import annotations

import llvmlite.ir as ir
from xdsl.dialects import builtin

from kernellab.backends.llvm.float_casts import fp_ext, fp_trunc, round_to_odd_f32
from kernellab.backends.llvm.types import BF16, F16, F32, F64, I16, I32, I8, is_fp8, llty

# per format: (mantissa bits, exponent bias, largest finite code, NaN code, subnormal scale)
_E4M3 = (3, 7, 0x7E, 0x7F, 9)
_E5M2 = (2, 15, 0x7B, 0x7F, 16)


def _fmt(t):
    return _E4M3 if isinstance(t, builtin.Float8E4M3FNType) else _E5M2


def _ptx_name(t) -> str:
    return "e4m3" if isinstance(t, builtin.Float8E4M3FNType) else "e5m2"


def fp8_to_f32(ctx, x, src):
    b = ctx.b
    if isinstance(src, builtin.Float8E5M2Type):
        h = b.bitcast(b.shl(b.zext(x, I16), I16(8)), F16)
        return b.fpext(h, F32)
    if ctx.target.arch >= 90:
        h2 = ctx.asm(I32, "cvt.rn.f16x2.e4m3x2 $0, $1;", "=r,h", [b.zext(x, I16)], side_effect=False)
        h = b.bitcast(b.trunc(h2, I16), F16)
        return b.fpext(h, F32)
    xi = b.zext(x, I32)
    sign = b.shl(b.and_(xi, I32(0x80)), I32(24))
    e = b.and_(b.lshr(xi, I32(3)), I32(0xF))
    m = b.and_(xi, I32(7))
    normal_bits = b.or_(b.shl(b.add(e, I32(127 - 7)), I32(23)), b.shl(m, I32(20)))
    sub = b.fmul(b.uitofp(m, F32), ir.Constant(F32, 2.0**-9))
    mag = b.select(b.icmp_unsigned("==", e, I32(0)), b.bitcast(sub, I32), normal_bits)
    is_nan = b.icmp_unsigned("==", b.and_(xi, I32(0x7F)), I32(0x7F))
    mag = b.select(is_nan, I32(0x7FC00000), mag)
    return b.bitcast(b.or_(mag, sign), F32)


def f32_to_fp8(ctx, x, dst, rounding: str):
    b = ctx.b
    if rounding == "rtne" and ctx.target.arch >= 90:
        r = ctx.asm(I16, f"cvt.rn.satfinite.{_ptx_name(dst)}x2.f32 $0, $2, $1;", "=h,r,r",
                    [b.bitcast(x, I32), I32(0)], side_effect=False)  # fmt: skip
        return b.trunc(r, I8)
    mbits, bias, max_code, nan_code, sub_scale = _fmt(dst)
    bits = b.bitcast(x, I32)
    sign = b.trunc(b.lshr(b.and_(bits, I32(0x80000000)), I32(24)), I8)
    a = b.and_(bits, I32(0x7FFFFFFF))
    drop = 23 - mbits
    if rounding == "rtz":
        rounded = a
    else:
        lsb = b.and_(b.lshr(a, I32(drop)), I32(1))
        rounded = b.add(a, b.add(I32((1 << (drop - 1)) - 1), lsb))
    normal = b.sub(b.lshr(rounded, I32(drop)), I32((127 - bias) << mbits))
    normal = b.select(b.icmp_signed(">", normal, I32(max_code)), I32(max_code), normal)
    # below the smallest normal (2^(1-bias)): count steps of 2^(1-bias-mbits)
    absf = b.bitcast(a, F32)
    scaled = b.fmul(absf, ir.Constant(F32, float(2**sub_scale)))
    steps = ctx.call("llvm.trunc.f32" if rounding == "rtz" else "llvm.roundeven.f32", F32, [scaled])
    sub = b.fptoui(steps, I32)
    min_normal_bits = (127 + 1 - bias) << 23
    mag = b.select(b.icmp_unsigned("<", a, I32(min_normal_bits)), sub, normal)
    mag = b.select(b.icmp_unsigned(">", a, I32(0x7F800000)), I32(nan_code), mag)
    return b.or_(b.trunc(mag, I8), sign)


def _to_f32(ctx, x, src):
    b = ctx.b
    if is_fp8(src):
        return fp8_to_f32(ctx, x, src)
    ty = llty(src)
    if ty == F32:
        return x
    if ty in (F16, BF16):
        return b.fpext(x, F32)
    raise NotImplementedError(ty)


def _rz(ctx, x, dst_ty):
    """Round toward zero to a narrower float type."""
    names = {(F32, F16): "f16.f32", (F32, BF16): "bf16.f32", (F64, F32): "f32.f64",
             (F64, F16): "f16.f64", (F64, BF16): "bf16.f64"}  # fmt: skip
    name = names[(x.type, dst_ty)]
    reg = {F16: "h", BF16: "h", F32: "r", F64: "l"}
    src = x if x.type != F32 else ctx.b.bitcast(x, I32)
    out_int = {F16: I16, BF16: I16, F32: I32}[dst_ty]
    r = ctx.asm(out_int, f"cvt.rz.{name} $0, $1;", f"={reg[dst_ty]},{'d' if x.type == F64 else 'r'}",
                [src], side_effect=False)  # fmt: skip
    return ctx.b.bitcast(r, dst_ty)


def convert_float(ctx, x, src, dst, rounding: str = "rtne"):
    """x (of IR float type src) → IR float type dst."""
    b = ctx.b
    if is_fp8(dst):
        if is_fp8(src) and type(src) is type(dst):
            return x
        if llty(src) == F64:
            f = _rz(ctx, x, F32) if rounding == "rtz" else round_to_odd_f32(ctx, x)
        else:
            f = _to_f32(ctx, x, src)
        return f32_to_fp8(ctx, f, dst, rounding)
    dty = llty(dst)
    if is_fp8(src):
        f = fp8_to_f32(ctx, x, src)
        if dty == F32:
            return f
        if dty == F64:
            return b.fpext(f, F64)
        return b.fptrunc(f, dty)  # exact: every fp8 value fits fp16 and bf16
    sty = llty(src)
    widths = {F16: 16, BF16: 16, F32: 32, F64: 64}
    if sty == dty:
        return x
    if widths[dty] > widths[sty] or (sty == F16 and dty == BF16) or (sty == BF16 and dty == F16):
        if {sty, dty} == {F16, BF16}:
            mid = b.fpext(x, F32)
            return _rz(ctx, mid, dty) if rounding == "rtz" else b.fptrunc(mid, dty)
        return fp_ext(ctx, x, dty)
    if rounding == "rtz":
        if sty == BF16 or (sty == F16 and dty == BF16):
            return _rz(ctx, b.fpext(x, F32), dty)
        return _rz(ctx, x, dty)
    return fp_trunc(ctx, x, dty)
