"""fence_insertion: `ttng.fence_async_shared` after the threads' own writes of a buffer that a
warp-group dot reads (Triton's fence insertion on Hopper).

wgmma reads its shared operands through the async proxy, which sees the threads' ordinary
stores (`ttg.local_alloc %tile`, `ttg.local_store`) only after `fence.proxy.async` in the writing
threads; the barrier that must separate writers and readers anyway follows (the lowering's
barrier tracker places it). Buffers filled by cp.async are fenced at their wait
(backends/nvidia/lowering/async_copy.py) and TMA writes them in the async proxy itself, so only
the ordinary writes get a fence here: one, right after the write, so a buffer staged once before
a loop (attention's Q) is fenced once, not at every dot that reads it.
"""

from __future__ import annotations

from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from kernellab.ir import ttg, ttng
from kernellab.passes.rewrite import Rewrites

NAME = "fence-insertion"


def run(module: ModuleOp) -> Rewrites:
    rewrites = Rewrites()
    read_by_dots = {
        alloc
        for op in module.walk()
        if isinstance(op, ttng.WarpGroupDotOp)
        for operand in (op.a, op.b)
        if (alloc := _allocation(operand)) is not None
    }
    writes = [op for op in module.walk()
              if (isinstance(op, ttg.LocalAllocOp) and op.src is not None and op in read_by_dots)
              or (isinstance(op, ttg.LocalStoreOp) and _allocation(op.dst) in read_by_dots)]  # fmt: skip
    for write in writes:
        if not isinstance(write.next_op, ttng.FenceAsyncSharedOp):
            Rewriter.insert_op(ttng.FenceAsyncSharedOp(), InsertPoint.after(write))
            rewrites.note("fence-async-shared")
    return rewrites


def _allocation(value: SSAValue) -> ttg.LocalAllocOp | None:
    """The local_alloc whose buffer `value` (a memdesc, or a view of one) is."""
    op = value.owner
    while isinstance(op, ttg.MemDescIndexOp):
        op = op.src.owner
    return op if isinstance(op, ttg.LocalAllocOp) else None
