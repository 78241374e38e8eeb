"""Why a pass changed nothing, when the reason is a fact an analysis proved (or could not).

"coalesce: no change" alone reads like a broken pass; the reason is usually that the axis
analysis could not prove what a wider access needs. `why_unchanged(name, ir_before)` reads the
IR the pass saw, runs the same analysis the pass runs (no compiling), and says, per memory op,
how many elements a thread moves at once and which fact limits it.
"""

from __future__ import annotations

ARGUMENT_HINT = (
    "a launch with 16-byte-aligned arrays and sizes that are multiples of 16 records these facts "
    "(tt.divisibility = 16); with kl.compile pass attrs={name: {'tt.divisibility': 16}}"
)


def why_unchanged(name: str, ir_before: str) -> str | None:
    """The analysis facts that left pass `name` nothing to change, or None when it has none."""
    if name != "coalesce" or not ir_before:
        return None
    try:
        return _coalesce(ir_before)
    except Exception:  # an explanation is a nicety: never let it break the viewer
        return None


def _coalesce(ir_before: str) -> str | None:
    from xdsl.dialects.builtin import TensorType

    from kernellab.ir import parse_module, tt
    from kernellab.lab.graphs import value_names
    from kernellab.passes.ttgir.axis_info import analyze, element_bytes, order_from_contiguity
    from kernellab.passes.ttgir.coalesce import MEMORY_OPS

    module = parse_module(ir_before)
    analysis = analyze(module)
    names = value_names(module)
    parts, limited = [], False
    for op in module.walk():
        if not isinstance(op, MEMORY_OPS) or not isinstance(op.ptr.type, TensorType):
            continue
        info = analysis[op.ptr]
        order = order_from_contiguity(info)
        d = order[0]
        size = element_bytes(tt.pointee_like(op.ptr.type))
        widest = max(1, 16 // size)
        contiguous = min(info.contiguity[d], op.ptr.type.get_shape()[d])
        aligned = max(1, info.divisibility[d] // size)
        mask = analysis.mask_alignment(getattr(op, "mask", None), order)
        width = max(1, min(contiguous, aligned, mask, widest))
        what = f"{op.name} of %{names.get(op.ptr, '?')}"
        if width >= widest:
            parts.append(f"{what}: {width} elements per thread ({width * size} bytes, the widest access)")
            continue
        limited = True
        why = []
        if contiguous <= width:
            why.append(f"its addresses are contiguous only in runs of {contiguous}")
        if aligned <= width:
            why.append(f"its pointers are only known to be {info.divisibility[d]}-byte aligned")
        if mask <= width:
            why.append(f"its mask is known constant only in runs of {mask}")
        parts.append(f"{what}: {width} element{'s' if width > 1 else ''} per thread, because "
                     + " and ".join(why))  # fmt: skip
    if not parts:
        return None
    text = "the axis analysis gives " + "; ".join(parts) + ", which is the layout the ops have already"
    return text + (f" ({ARGUMENT_HINT})" if limited else "")


__all__ = ["why_unchanged"]
