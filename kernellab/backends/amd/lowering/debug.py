"""tt.print (device_print) → the HIP device library's hostcall printf (`__ockl_printf_begin`,
`__ockl_printf_append_string_n`, `__ockl_printf_append_args`: AMDGPU has no variadic calls),
in the core's line format (printing.py); tt.assert (device_assert) → the message printed, then
`llvm.trap` in the failing lane. Compile-only: the ockl functions come from ROCm's device
libraries at link time."""

from __future__ import annotations

import llvmlite.ir as ir

from kernellab.backends.llvm.printing import assert_holds, lower_print
from kernellab.backends.llvm.types import F64, I32, I64, PTR, VOID
from kernellab.ir import tt

_ARGS_PER_CALL = 7


def _as_i64(b, v):
    if isinstance(v.type, ir.PointerType):
        return b.ptrtoint(v, I64)
    if v.type == F64:
        return b.bitcast(v, I64)
    if isinstance(v.type, ir.IntType) and v.type.width < 64:
        return b.zext(v, I64)
    return v


def _printf(ctx, fmt: str, values: list) -> None:
    b = ctx.b
    begin = ctx.intrinsic("__ockl_printf_begin", I64, [I64])
    string = ctx.intrinsic("__ockl_printf_append_string_n", I64, [I64, PTR, I64, I32])
    append = ctx.intrinsic("__ockl_printf_append_args", I64, [I64, I32] + [I64] * _ARGS_PER_CALL + [I32])
    desc = b.call(begin, [I64(0)])
    desc = b.call(string, [desc, ctx.cstring(fmt), I64(len(fmt.encode()) + 1), I32(0 if values else 1)])
    args = [_as_i64(b, v) for v in values]
    for i in range(0, len(args), _ARGS_PER_CALL):
        chunk = args[i : i + _ARGS_PER_CALL]
        last = I32(1 if i + _ARGS_PER_CALL >= len(args) else 0)
        desc = b.call(append, [desc, I32(len(chunk)), *chunk, *[I64(0)] * (_ARGS_PER_CALL - len(chunk)), last])


def _print(ctx, op):
    lower_print(ctx, op, _printf)


def _assert(ctx, op):
    b = ctx.b
    with b.if_then(b.not_(assert_holds(ctx, op)), likely=False):
        _printf(ctx, f"device assertion failed: {op.message.data}\n", [])
        ctx.call("llvm.trap", VOID, [])


RULES = {
    tt.PrintOp: _print,
    tt.AssertOp: _assert,
}
