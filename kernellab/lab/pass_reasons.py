"""Why a pass changed nothing, when the reason is a fact an analysis proved (or could not).

"coalesce: no change" alone reads like a broken pass; the reason is usually that the axis
analysis could not prove what a wider access needs. `why_unchanged(name, ir_before)` reads the
IR the pass saw, checks the same facts the pass checks (no compiling) and says which one left
it nothing to do: for coalesce, per memory op, how many elements a thread moves at once and
which fact limits it; for accelerate_matmul, remove_layout_conversions,
reduce_data_duplication and pipeline, that the IR holds nothing the pass rewrites (no dot, no
conversion, no loop that asks for stages); for fuse_nested_loops, that no loop asks for
flatten=True, or why the nest under one cannot be fused. Where the reason is not such a fact, it says nothing.
"""

from __future__ import annotations

ARGUMENT_HINT = (
    "a launch with 16-byte-aligned arrays and sizes that are multiples of 16 records these facts "
    "(tt.divisibility = 16); with kl.compile pass attrs={name: {'tt.divisibility': 16}}"
)


def why_unchanged(name: str, ir_before: str, num_stages: int | None = None) -> str | None:
    """The analysis facts that left pass `name` nothing to change, or None when it has none.
    `num_stages`: the kernel's option, which the pipeline pass reads beside the IR."""
    explain = _EXPLAIN.get(name)
    if explain is None or not ir_before:
        return None
    try:
        from kernellab.ir import parse_module

        return explain(parse_module(ir_before), num_stages)
    except Exception:  # an explanation is a nicety: never let it break the viewer
        return None


def _dots(module) -> list:
    from kernellab.passes.ttgir.pipeline_loops import DOTS

    return [op for op in module.walk() if isinstance(op, DOTS)]


def _no_dot(what: str) -> str:
    return f"the kernel has no tt.dot (tl.dot): {what}"


def _accelerate_matmul(module, num_stages) -> str | None:
    # a dot left on FMA is named with its reason in the pass's own summary
    return None if _dots(module) else _no_dot("there is nothing for tensor cores to compute")


def _remove_layout_conversions(module, num_stages) -> str | None:
    from kernellab.ir import ttg

    if any(isinstance(op, ttg.ConvertLayoutOp) for op in module.walk()):
        return None  # which conversions pay for themselves is a cost model, not a fact
    return "the IR it saw has no ttg.convert_layout: every value is already in the layout its users read"


def _reduce_data_duplication(module, num_stages) -> str | None:
    from kernellab.ir import ttg

    if not _dots(module):
        return _no_dot("no tensor is converted into a dot-operand layout")
    for op in module.walk():
        if isinstance(op, ttg.ConvertLayoutOp) and isinstance(
            ttg.encoding_of(op.result.type), ttg.DotOperandEncodingAttr
        ) and isinstance(ttg.encoding_of(op.src.type), ttg.DISTRIBUTED_ENCODINGS):
            return None
    return ("no ttg.convert_layout goes from registers into a dot-operand layout: the dots read "
            "their operands from shared memory already")  # fmt: skip


def _pipeline(module, num_stages) -> str | None:
    from xdsl.dialects import scf

    from kernellab.passes.ttgir.pipeline_loops import DOTS, loop_stages

    loops = [op for op in module.walk() if isinstance(op, scf.ForOp)]
    if not loops:
        return "the kernel has no loop: pipelining overlaps a loop's next loads with this iteration's math"
    default = 3 if num_stages is None else num_stages
    if any(loop_stages(loop, default) >= 2 for loop in loops):
        return None  # a loop asked for stages; why its loads could not be copied is not one fact
    with_dot = [loop for loop in loops if any(isinstance(op, DOTS) for op in loop.body.block.ops)]
    if with_dot and "tt.num_stages" not in with_dot[0].attributes:
        return (f"num_stages={default}: a loop needs 2 stages or more to have the next loads in "
                "flight while it computes")  # fmt: skip
    if with_dot:
        return "its dot loop asks for fewer than 2 stages (tl.range(..., num_stages=N))"
    return ("no loop holds a tt.dot or asks for stages with tl.range(..., num_stages=N); other "
            "loops are pipelined only on request")  # fmt: skip


def _fuse_nested_loops(module, num_stages) -> str | None:
    from xdsl.dialects import scf

    from kernellab.passes.fuse_nested_loops import FLATTEN, find_nest

    loops = [op for op in module.walk() if isinstance(op, scf.ForOp) and FLATTEN in op.attributes]
    if not loops:
        return ("no loop asks for it with tl.range(..., flatten=True): loop nests are pipelined "
                "one innermost loop at a time")  # fmt: skip
    reasons = [found for found in map(find_nest, loops) if isinstance(found, str)]
    return "; ".join(reasons) or None


def _coalesce(module, num_stages) -> str | None:
    from xdsl.dialects.builtin import TensorType

    from kernellab.ir import tt
    from kernellab.lab.graphs import value_names
    from kernellab.passes.ttgir.axis_info import analyze, element_bytes, order_from_contiguity
    from kernellab.passes.ttgir.coalesce import MEMORY_OPS

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


_EXPLAIN = {
    "coalesce": _coalesce,
    "accelerate_matmul": _accelerate_matmul,
    "remove_layout_conversions": _remove_layout_conversions,
    "reduce_data_duplication": _reduce_data_duplication,
    "pipeline": _pipeline,
    "fuse_nested_loops": _fuse_nested_loops,
}

__all__ = ["why_unchanged"]
