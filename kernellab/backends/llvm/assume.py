"""tt.assume → llvm.assume on every target: the promise (e.g. `n % 16 == 0`) reaches LLVM's
optimizer, which may vectorize or drop checks by it. One call per distinct register of a
tensor condition."""

from __future__ import annotations

import llvmlite.ir as ir

from kernellab.backends.llvm.types import TV
from kernellab.ir import tt


def _assume(ctx, op):
    cond = ctx.get(op.condition)
    values = [cond.regs[r] for r in cond.lay.canonical_regs] if isinstance(cond, TV) else [cond]
    for value in values:
        ctx.call("llvm.assume", ir.VoidType(), [value])


# op class -> fn(ctx, op) emitting its LLVM IR
RULES = {
    tt.AssumeOp: _assume,
}
