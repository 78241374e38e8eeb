"""tt.print (device_print) → vprintf, tt.assert (device_assert) → __assertfail.

device_print prints the lines the core's printing.py formats, through CUDA's vprintf (its
arguments packed in a stack struct). Line order across threads is the GPU's.

device_assert: each thread checks its elements; the first failing one calls __assertfail with
the message, file, line and function name (the launch then fails with an assertion error).
"""

from __future__ import annotations

import llvmlite.ir as ir
from xdsl.dialects.builtin import FileLineColLoc, TensorType

from kernellab.backends.llvm.printing import lower_print
from kernellab.backends.llvm.types import I32, I64, PTR
from kernellab.ir import tt


def _vprintf(ctx, fmt: str, values: list):
    b = ctx.b
    vprintf = ctx.intrinsic("vprintf", I32, [PTR, PTR])
    fmt_ptr = ctx.cstring(fmt)
    if values:
        struct = ir.LiteralStructType([v.type for v in values])
        slot = _alloca(ctx, struct)
        for i, v in enumerate(values):
            p = b.gep(slot, [I32(0), I32(i)], source_etype=struct)
            b.store(v, p)
        args = slot
    else:
        args = ir.Constant(PTR, None)
    b.call(vprintf, [fmt_ptr, args])


def _alloca(ctx, ty):
    """An alloca in the entry block (so it is allocated once), as an opaque pointer."""
    slot = ctx.pro.alloca(ty)
    return ir.FormattedConstant(PTR, slot.get_reference()) if not slot.type.is_opaque else slot


def _print(ctx, op):
    lower_print(ctx, op, _vprintf)


def _assert(ctx, op):
    b = ctx.b
    cond = ctx.get(op.condition)
    if isinstance(op.condition.type, TensorType):
        conds = [cond.regs[r] for r in cond.lay.canonical_regs]
    else:
        conds = [cond]
    ok = conds[0]
    for c in conds[1:]:
        ok = b.and_(ok, c)
    loc = op.location
    file, line = ("<unknown>", 0)
    if isinstance(loc, FileLineColLoc):
        file, line = loc.filename.data, loc.line.data
    fail = ctx.intrinsic("__assertfail", ir.VoidType(), [PTR, PTR, I32, PTR, I64])
    with b.if_then(b.not_(ok), likely=False):
        b.call(fail, [ctx.cstring(op.message.data), ctx.cstring(file), I32(line),
                      ctx.cstring(ctx.func_op.sym_name.data), I64(1)])  # fmt: skip


# op class -> fn(ctx, op) emitting its LLVM IR
RULES = {
    tt.PrintOp: _print,
    tt.AssertOp: _assert,
}
