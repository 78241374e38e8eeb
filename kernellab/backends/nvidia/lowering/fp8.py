"""NVIDIA's float conversions with an explicit rounding mode: PTX `cvt.rz` for narrowing toward
zero, and fp8 through the core's conversions (backends/llvm/fp8.py) with sm_90's instructions
where they apply:
  e4m3fn/e5m2 narrowing, rtne, sm_90: `cvt.rn.satfinite.{e4m3x2,e5m2x2}.f32` (inline PTX;
    sm_89+), which saturates as the core's integer version does on sm_80 and for rtz;
  e4m3fn widening, sm_90: `cvt.rn.f16x2.e4m3x2`; e5m2 widening: the top byte of an fp16.
The fnuz formats (AMD's) are refused before the lowering (backend.py).
"""

from __future__ import annotations

from xdsl.dialects import builtin

from kernellab.backends.llvm import fp8 as core_fp8
from kernellab.backends.llvm.float_casts import fp_ext, fp_trunc
from kernellab.backends.llvm.types import BF16, F16, F32, F64, I16, I32, I8, is_fp8, llty


def _ptx_name(t) -> str | None:
    """The PTX name of an fp8 format with sm_90 conversion instructions."""
    return {builtin.Float8E4M3FNType: "e4m3", builtin.Float8E5M2Type: "e5m2"}.get(type(t))


def fp8_to_f32(ctx, x, src):
    b = ctx.b
    if isinstance(src, builtin.Float8E5M2Type):  # e5m2 is the top byte of an fp16
        h = b.bitcast(b.shl(b.zext(x, I16), I16(8)), F16)
        return b.fpext(h, F32)
    if isinstance(src, builtin.Float8E4M3FNType) and ctx.target.arch >= 90:
        h2 = ctx.asm(I32, "cvt.rn.f16x2.e4m3x2 $0, $1;", "=r,h", [b.zext(x, I16)], side_effect=False)
        h = b.bitcast(b.trunc(h2, I16), F16)
        return b.fpext(h, F32)
    return core_fp8.fp8_to_f32(ctx, x, src)


def f32_to_fp8(ctx, x, dst, rounding: str):
    b = ctx.b
    name = _ptx_name(dst)
    if rounding == "rtne" and ctx.target.arch >= 90 and name:
        r = ctx.asm(I16, f"cvt.rn.satfinite.{name}x2.f32 $0, $2, $1;", "=h,r,r",
                    [b.bitcast(x, I32), I32(0)], side_effect=False)  # fmt: skip
        return b.trunc(r, I8)
    return core_fp8.f32_to_fp8(ctx, x, dst, rounding)


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
    if is_fp8(src) or is_fp8(dst):
        return core_fp8.convert(ctx, x, src, dst, rounding, widen=fp8_to_f32, narrow=f32_to_fp8)
    dty = llty(dst)
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
