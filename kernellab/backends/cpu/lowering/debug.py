"""tt.print (device_print) → the C library's printf, flushed after each print so the lines
reach a notebook in order; tt.assert (device_assert) → the launch status record (checks.py),
which the launcher turns into an AssertionError naming the line and the program."""

from __future__ import annotations

import llvmlite.ir as ir

from kernellab.backends.cpu.lowering.checks import FAILED_ASSERT, record_failure
from kernellab.backends.llvm.printing import assert_holds, lower_print
from kernellab.backends.llvm.types import I32, PTR
from kernellab.ir import tt


def _printf(ctx, fmt: str, values: list) -> None:
    printf = ctx.mod.globals.get("printf") or ir.Function(ctx.mod, ir.FunctionType(I32, [PTR], var_arg=True), "printf")
    fflush = ctx.intrinsic("fflush", I32, [PTR])
    ctx.b.call(printf, [ctx.cstring(fmt), *values])
    ctx.b.call(fflush, [ir.Constant(PTR, None)])


def _print(ctx, op):
    lower_print(ctx, op, _printf)


def _assert(ctx, op):
    b = ctx.b
    with b.if_then(b.not_(assert_holds(ctx, op)), likely=False):
        record_failure(ctx, op, FAILED_ASSERT, f"device assertion failed: {op.message.data}")


# op class -> fn(ctx, op) emitting its LLVM IR
RULES = {
    tt.PrintOp: _print,
    tt.AssertOp: _assert,
}
