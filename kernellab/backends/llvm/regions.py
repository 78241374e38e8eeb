"""Lowering the ops of a region (loop bodies, if branches, reduce/scan combiners) and carrying
values across block boundaries: a scalar is one LLVM value, a tensor what its `carried()`
lists (one per register; one vector on the CPU), a shared-memory buffer none (its descriptor
is a compile-time fact)."""

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


def flatten(x, like=None) -> list:
    """The LLVM values that carry `x` across a block boundary, as `like` (the value that
    fixes the phis, default x itself) carries it."""
    if isinstance(x, TV):
        return x.carried() if like is None else like.carry(x)
    if isinstance(x, SmemBuf):
        return []
    return [x]


def unflatten(template, values: list, pos: int):
    """Rebuild a value shaped like `template` from values[pos:]; returns (value, new pos)."""
    if isinstance(template, TV):
        n = len(template.carried())
        return template.rebuilt(values[pos : pos + n]), pos + n
    if isinstance(template, SmemBuf):
        return template, pos
    return values[pos], pos + 1
