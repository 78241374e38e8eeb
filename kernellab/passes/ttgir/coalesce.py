"""coalesce: give every load, store and atomic on a tensor of pointers the blocked layout that
makes its memory access fast.

A warp's access is fast when each thread moves one aligned vector of up to 16 bytes and the 32
threads' vectors are adjacent (full coalescing). So the pass orders the dims by the pointers'
contiguity (AxisInfo), gives each thread as many elements along the most contiguous dim as one
aligned vector holds — bounded by the contiguity, by the pointers' alignment in bytes and by the
mask's constancy (a vector needs one mask bit for all its elements) — then fills the warp's
lanes along that dim and spreads the warps over the rest. A thread is not given more elements
than the tensor has per thread.

Loads of the same shape and dim order share the widest of their vectors, so the values they
feed into one computation meet in one layout (a load wider than its alignment still lowers to
narrower instructions). Stores keep their own width: a store may not write a wider vector than
its alignment allows. The op's operands are converted to the chosen layout and its result back;
remove_layout_conversions then moves whole computations into the memory ops' layouts. Each
memory op moved is counted on a `Rewrites` (relayout-load, relayout-store, ...).
"""

from __future__ import annotations

from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Operation

from kernellab.ir import tt, ttg
from kernellab.passes.rewrite import Rewrites
from kernellab.passes.ttgir.axis_info import AxisInfoAnalysis, analyze, order_from_contiguity
from kernellab.passes.ttgir.encodings import blocked_for, relayout

NAME = "coalesce"

MEMORY_OPS = (tt.LoadOp, tt.StoreOp, tt.AtomicRMWOp, tt.AtomicCASOp)


def run(module: ModuleOp) -> Rewrites:
    analysis = analyze(module)
    warps, lanes = ttg.num_warps(module), ttg.threads_per_warp(module)
    ops = [
        op
        for op in module.walk()
        if isinstance(op, MEMORY_OPS) and isinstance(op.ptr.type, TensorType)
    ]
    plans = {op: _plan(op, analysis) for op in ops}
    widest: dict[tuple, int] = {}
    for op, (key, width) in plans.items():
        widest[key] = max(widest.get(key, 1), width)
    rewrites = Rewrites()
    for op, (key, width) in plans.items():
        shape, order = key
        if isinstance(op, tt.LoadOp):
            width = widest[key]
        per_thread_max = max(1, _numel(shape) // (warps * lanes))
        size_per_thread = [1] * len(shape)
        size_per_thread[order[0]] = min(width, per_thread_max)
        layout = blocked_for(shape, size_per_thread, order, warps, lanes)
        if relayout(op, layout):
            rewrites.note(f"relayout-{op.name.removeprefix('tt.')}")
    return rewrites


def _numel(shape) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


def _plan(op: Operation, analysis: AxisInfoAnalysis) -> tuple[tuple, int]:
    """((shape, dim order), elements per thread) for one memory op."""
    info = analysis[op.ptr]
    order = tuple(order_from_contiguity(info))
    width = analysis.ptr_vector_elems(op.ptr, order)
    mask = getattr(op, "mask", None)
    width = min(width, analysis.mask_alignment(mask, order))
    return (tuple(op.ptr.type.get_shape()), order), width
