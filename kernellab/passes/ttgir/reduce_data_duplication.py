"""reduce_data_duplication: route conversions into dot-operand layouts through shared memory.

A dot operand layout holds every element of A's rows (or B's columns) in many threads at once:
converting a register tensor into it means each element is read by several threads. Doing that
explicitly — `ttg.local_alloc` of the source (each element written once) then `ttg.local_load`
into the dot-operand layout — makes the shared-memory traffic visible to the lowering's memory
allocator and barrier placement, as in Triton.

Shared layout: for an FMA dot (blocked parent) each thread reads whole rows/columns, so the
tile is stored plainly in the source's dim order (vec = perPhase = maxPhase = 1). For an MMA
parent, kernellab.layouts.best_swizzle picks the swizzle that serves the operand's reads with
the fewest wavefronts (the reads repeat for every use; the buffer is contiguous along the
source's fastest dim, so its stores are full 16-byte rows): ldmatrix's rows (ldmatrix_access,
16-bit operands) or, where ldmatrix does not apply, the operand layout's own registers.
"""

from __future__ import annotations

from xdsl.dialects.builtin import ModuleOp
from xdsl.rewriter import Rewriter

from kernellab.ir import ttg
from kernellab.layouts import best_swizzle, from_encoding, ldmatrix_access
from kernellab.passes.ttgir.axis_info import element_bytes

NAME = "reduce_data_duplication"


def run(module: ModuleOp) -> bool:
    changed = False
    for op in list(module.walk()):
        if not isinstance(op, ttg.ConvertLayoutOp):
            continue
        src, dst = ttg.encoding_of(op.src.type), ttg.encoding_of(op.result.type)
        if not isinstance(dst, ttg.DotOperandEncodingAttr) or not isinstance(
            src, ttg.DISTRIBUTED_ENCODINGS
        ):
            continue
        shape = op.src.type.get_shape()
        order = _order(src, len(shape))
        memdesc = ttg.MemDescType(
            shape,
            op.src.type.element_type,
            shared_encoding(dst, shape, order, element_bytes(op.src.type)),
        )
        alloc = ttg.LocalAllocOp(memdesc, op.src)
        load = ttg.LocalLoadOp(alloc.result, op.result.type)
        Rewriter.replace_op(op, [alloc, load])
        changed = True
    return changed


def _order(encoding, rank: int) -> list[int]:
    while isinstance(encoding, (ttg.SliceEncodingAttr, ttg.DotOperandEncodingAttr)):
        encoding = encoding.parent
    if isinstance(encoding, ttg.BlockedEncodingAttr) and encoding.rank == rank:
        return list(encoding.order)
    return list(reversed(range(rank)))


def shared_encoding(dot: ttg.DotOperandEncodingAttr, shape, order, elem_bytes: int):
    """The swizzled shared layout a tile is staged in before it is read as the dot operand
    `dot`."""
    if not isinstance(dot.parent, ttg.NvidiaMmaEncodingAttr):
        return ttg.SwizzledSharedEncodingAttr(1, 1, 1, order)
    operand = from_encoding(dot, shape)
    reads = ldmatrix_access(operand, dot.op_idx, order[0]) or operand
    shared, _ = best_swizzle([reads], elem_bytes)
    chosen = shared.encoding
    return ttg.SwizzledSharedEncodingAttr(
        chosen.vec, chosen.per_phase, chosen.max_phase, list(chosen.order)
    )
