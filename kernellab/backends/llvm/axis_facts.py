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


def equal_registers(lay: Lay, value) -> tuple[int, ...] | None:
    """For each register of `value` (laid out as `lay`), the first register that provably holds
    the same value; None when no two are known equal. Values are equal along dim d within
    aligned runs of constancy[d] (a power of two), so flipping a register basis whose offset
    along every dim is below that dim's constancy stays inside a run."""
    if not isinstance(value.type, TensorType) or not lay.reg:
        return None
    info = axis_info(value)
    if info is None or info.rank != lay.rank:
        return None
    same = 0
    for i, basis in enumerate(lay.reg):
        if all(lay.dim_part(basis, d) < c for d, c in enumerate(info.constancy)):
            same |= 1 << i
    if not same:
        return None
    return tuple(r & ~same for r in range(lay.nregs))
