"""Lowering the ops of a region (loop bodies, if branches, reduce/scan combiners) and carrying
values across block boundaries: a scalar is one LLVM value, a tensor one per register, a
shared-memory buffer none (its descriptor is a compile-time fact)."""

from __future__ import annotations

from xdsl.dialects import scf

from kernellab.backends.llvm.types import TV, SmemBuf
from kernellab.ir import tt

_TERMINATORS = (scf.YieldOp, scf.ConditionOp, tt.ReturnOp, tt.ReduceReturnOp, tt.ScanReturnOp)


def lower_body(ctx, block):
    """Lower every op of `block` except its terminator, which is returned."""
    term = None
    for op in block.ops:
        if isinstance(op, _TERMINATORS):
            term = op
            break
        ctx.lower_op(op)
    return term


def flatten(x) -> list:
    if isinstance(x, TV):
        return list(x.regs)
    if isinstance(x, SmemBuf):
        return []
    return [x]


def unflatten(template, values: list, pos: int):
    """Rebuild a value shaped like `template` from values[pos:]; returns (value, new pos)."""
    if isinstance(template, TV):
        n = len(template.regs)
        return TV(list(values[pos : pos + n]), template.lay, template.elem), pos + n
    if isinstance(template, SmemBuf):
        return template, pos
    return values[pos], pos + 1
