"""Float `%` (C's fmod) exactly, for the targets whose LLVM backend expands `frem` as
x - trunc(x / y)·y (NVPTX, AMDGPU): there the quotient, rounded to nearest, lands on the next
integer when the true one is just below it, and the result comes out about y off and of the
wrong sign (fp32 x = 119.359406, y = 1.1935941: x / y rounds to 100.0, giving -7.6e-6 where
fmod is 1.19359). fmod's result is always exact, so an exact algorithm costs little:

    r = |x|
    while r >= |y|:
        t = |y|·2^(kP), the largest such multiple with t·2^P > r     (P: 20 bits for fp32, 49 for fp64)
        q = trunc(r / t)                 q < 2^P; at most one too big, never too small
        r = fma(-q, t, r)                exact: r and q·t are multiples of ulp(t), |result| < t
        if r < 0: r += t                 exact for the same reason
    result = copysign(r, x)

The division is IEEE (correctly rounded: it never rounds a quotient below an integer it reaches),
and all steps stay inside the significand. One pass does for |x / y| < 2^P, a few for the
largest exponent gaps. NaN for a NaN operand, an infinite x or y == 0; x itself where |x| < |y|
(y infinite included). The algorithm is one internal function per float type, called per element.
"""

from __future__ import annotations

import llvmlite.ir as ir

from kernellab.backends.llvm.types import F32, F64

_SCALE_BITS = {F32: 20, F64: 49}  # a few bits below the significand's: q·t stays exact


def exact_fmod(ctx, x: ir.Value, y: ir.Value) -> ir.Value:
    """fmod(x, y) on fp32 or fp64 scalars, through the module's `kl_fmod_<type>`."""
    return ctx.b.call(fmod_function(ctx.mod, x.type), [x, y])


def fmod_function(module: ir.Module, ty) -> ir.Function:
    """`T kl_fmod_<T>(T x, T y)` in `module`, defined once."""
    name = f"kl_fmod_{'f32' if ty == F32 else 'f64'}"
    fn = module.globals.get(name)
    if fn is not None:
        return fn
    fn = ir.Function(module, ir.FunctionType(ty, [ty, ty]), name)
    fn.linkage = "internal"
    x, y = fn.args
    blocks = ("entry", "nan", "reduce", "small", "pass", "scale", "divide", "done")
    entry, nan, reduce_, small, pass_, scale, divide, done = (fn.append_basic_block(n) for n in blocks)
    b = ir.IRBuilder(entry)

    def intrinsic(name, *args):
        f = module.globals.get(f"{name}.{ty.intrinsic_name}") or ir.Function(
            module, ir.FunctionType(ty, [ty] * len(args)), f"{name}.{ty.intrinsic_name}"
        )
        return b.call(f, list(args))

    inf, zero, shift = ir.Constant(ty, float("inf")), ir.Constant(ty, 0.0), ir.Constant(ty, 2.0 ** _SCALE_BITS[ty])
    ax, ay = intrinsic("llvm.fabs", x), intrinsic("llvm.fabs", y)
    invalid = b.or_(b.fcmp_unordered("uno", x, y), b.or_(b.fcmp_ordered("==", ax, inf), b.fcmp_ordered("==", ay, zero)))
    b.cbranch(invalid, nan, reduce_)

    b.position_at_end(nan)
    b.ret(ir.Constant(ty, float("nan")))

    b.position_at_end(reduce_)
    b.cbranch(b.fcmp_ordered(">=", ax, ay), pass_, small)

    b.position_at_end(small)
    b.ret(x)

    # one pass: scale |y| up by 2^P while that stays within r, then take q·t off r
    b.position_at_end(pass_)
    r = b.phi(ty, name="r")
    r.add_incoming(ax, reduce_)
    b.branch(scale)
    b.position_at_end(scale)
    t = b.phi(ty, name="t")
    t.add_incoming(ay, pass_)
    bigger = b.fmul(t, shift)
    t.add_incoming(bigger, scale)
    b.cbranch(b.fcmp_ordered("<=", bigger, r), scale, divide)

    b.position_at_end(divide)
    q = intrinsic("llvm.trunc", b.fdiv(r, t))
    rest = intrinsic("llvm.fma", b.fneg(q), t, r)
    rest = b.select(b.fcmp_ordered("<", rest, zero), b.fadd(rest, t), rest)
    r.add_incoming(rest, divide)
    b.cbranch(b.fcmp_ordered(">=", rest, ay), pass_, done)

    b.position_at_end(done)
    b.ret(intrinsic("llvm.copysign", rest, x))
    return fn
