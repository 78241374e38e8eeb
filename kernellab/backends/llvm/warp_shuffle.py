"""A warp shuffle of any scalar (pointers, floats, 8- to 64-bit ints) through the target's
32-bit shuffle: narrower values widened, 64-bit ones as two halves."""

from __future__ import annotations

import llvmlite.ir as ir

from kernellab.backends.llvm.types import I32, I64


def shuffle(ctx, v, lane_arg, kind: str = "bfly"):
    """Warp shuffle of any scalar value (`kind`: bfly / up / idx / down)."""
    b = ctx.b
    ty = v.type

    def shfl32(x):
        return ctx.target.shuffle_i32(ctx, x, lane_arg, kind)

    if isinstance(ty, ir.PointerType):
        return b.inttoptr(shuffle(ctx, b.ptrtoint(v, I64), lane_arg, kind), ty)
    if isinstance(ty, ir.IntType):
        w = ty.width
        if w == 32:
            return shfl32(v)
        if w < 32:
            return b.trunc(shfl32(b.zext(v, I32)), ty)
        lo = b.trunc(v, I32)
        hi = b.trunc(b.lshr(v, ir.Constant(ty, 32)), I32)
        lo, hi = shfl32(lo), shfl32(hi)
        return b.or_(b.zext(lo, I64), b.shl(b.zext(hi, I64), ir.Constant(I64, 32)))
    w = {"float": 32, "double": 64, "half": 16, "bfloat": 16}[str(ty)]
    return b.bitcast(shuffle(ctx, b.bitcast(v, ir.IntType(w)), lane_arg, kind), ty)
