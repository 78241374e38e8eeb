"""What the axis analysis proves about a value, read by the lowering: its AxisInfo, and from its
constancy which registers of a thread hold equal values, so an element-wise op computes each
distinct value once (a mask `cols < n` with n a multiple of 16 is one compare per 4-vector, not
one per element: fewer instructions, and no per-element index kept live to recompute it)."""

from __future__ import annotations

from xdsl.dialects.builtin import TensorType

from kernellab.backends.llvm.layout import Lay
from kernellab.passes.ttgir.axis_info import AxisInfo


def axis_info(value) -> AxisInfo | None:
    """The value's AxisInfo, or None where the analysis has none."""
    try:
        return AxisInfo.of(value)
    except Exception:  # noqa: BLE001 - no analysis for this value: assume nothing
        return None


def constancy(value) -> tuple[int, ...] | None:
    """Per dim, the aligned runs over which the tensor `value`'s elements are equal (None: not
    a tensor, or nothing known)."""
    if not isinstance(value.type, TensorType):
        return None
    info = axis_info(value)
    return None if info is None else info.constancy


def equal_registers(lay: Lay, runs: tuple[int, ...] | None) -> tuple[int, ...] | None:
    """For each register of a tensor laid out as `lay` whose elements are equal along dim d
    within aligned runs of `runs[d]` (powers of two), the first register that holds the same
    value; None when no two are known equal. Flipping a register basis whose offset along every
    dim is below that dim's run keeps the element inside its run."""
    if runs is None or len(runs) != lay.rank or not lay.reg:
        return None
    same = 0
    for i, basis in enumerate(lay.reg):
        if all(lay.dim_part(basis, d) < c for d, c in enumerate(runs)):
            same |= 1 << i
    if not same:
        return None
    return tuple(r & ~same for r in range(lay.nregs))
