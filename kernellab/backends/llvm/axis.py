"""Shared by the reductions and scans: the combine region as a function, and flat-index
arithmetic along one axis of a layout."""

from __future__ import annotations

from kernellab.backends.llvm.layout import Lay, _log2
from kernellab.backends.llvm.regions import lower_body


def combiner(ctx, region, n: int):
    """fn(a: list, b: list) -> list emitting the combine region for one pair."""
    block = region.block

    def combine(a, b):
        for arg, v in zip(block.args, list(a) + list(b)):
            ctx.set(arg, v)
        term = lower_body(ctx, block)
        return [ctx.get(v) for v in term.operands]

    return combine


def axis_mask(lay: Lay, axis: int) -> int:
    return (lay.shape[axis] - 1) << lay.dim_shift(axis)


def compress(flat: int, lay: Lay, axis: int) -> int:
    """Flat index in the reduced shape of a flat index (of lay's shape) with the axis removed."""
    shift = lay.dim_shift(axis)
    bits = _log2(lay.shape[axis])
    low = flat & ((1 << shift) - 1)
    high = flat >> (shift + bits)
    return (high << shift) | low
