"""reduce_data_duplication: route conversions into dot-operand layouts through shared memory.

A dot operand layout holds every element of A's rows (or B's columns) in many threads at once:
converting a register tensor into it means each element is read by several threads. Doing that
explicitly — `ttg.local_alloc` of the source (each element written once) then `ttg.local_load`
into the dot-operand layout — makes the shared-memory traffic visible to the lowering's memory
allocator and barrier placement, as in Triton. A conversion in which every thread already holds
the elements it needs (an MMA v3 accumulator into the register A operand of the next
warp-group dot: attention's P) moves nothing between threads and stays a conversion into an MMA
operand, done in registers.

Shared layout: the swizzle kernellab.layouts.best_swizzle picks (fewest bank-conflict
wavefronts) for the accesses the lowering makes — the one rule the lab's swizzle explorer
draws. The FMA dot's tile is written from the source layout and read in the dot-operand layout
one element per thread and instruction (the local_alloc stores and the FMA loop's reads are
scalar), so both accesses are modelled without their register bases. An MMA parent's 16-bit
operand is read by ldmatrix.x4, 16-byte rows at the addresses kernellab.layouts.ldmatrix gives
along the dim the tile is written along (a thread's consecutive registers, else a warp's
consecutive lanes), which the buffer is then contiguous along; other MMA operands are read as
whole fragments.
"""

from __future__ import annotations

from xdsl.dialects.builtin import ModuleOp
from xdsl.rewriter import Rewriter

from kernellab.ir import ttg
from kernellab.layouts import LinearLayout, best_swizzle, conversion_plan, from_encoding, ldmatrix_access
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
        # MMA operands only: the FMA dot reads its operands from shared memory in its K loop
        if isinstance(dst.parent, ttg.NvidiaMmaEncodingAttr) and _thread_local(src, dst, shape):
            continue
        memdesc = ttg.MemDescType(
            shape, op.src.type.element_type, shared_encoding(src, dst, shape, element_bytes(op.src.type))
        )
        alloc = ttg.LocalAllocOp(memdesc, op.src)
        load = ttg.LocalLoadOp(alloc.result, op.result.type)
        Rewriter.replace_op(op, [alloc, load])
        changed = True
    return changed


def _thread_local(src, dst, shape) -> bool:
    """Whether each thread already holds every element it needs in `dst`."""
    plan = conversion_plan(from_encoding(src, shape), from_encoding(dst, shape), suggest_swizzle=False)
    return plan.kind in ("noop", "registers")


def shared_encoding(src, dst: ttg.DotOperandEncodingAttr, shape, elem_bytes: int):
    """The swizzled shared layout a tile in layout `src` is staged in to be read as `dst`."""
    layout, _ = best_swizzle(staging_accesses(src, dst, shape, elem_bytes), elem_bytes)
    record = layout.encoding
    return ttg.SwizzledSharedEncodingAttr(record.vec, record.per_phase, record.max_phase, list(record.order))


def staging_accesses(src, dst: ttg.DotOperandEncodingAttr, shape, elem_bytes: int) -> list[LinearLayout]:
    """[write, read]: the register layouts of one warp's shared-memory accesses when a tile in
    layout `src` is stored and read back as the dot operand `dst` (the lab draws these too)."""
    write, read = from_encoding(src, shape), from_encoding(dst, shape)
    if isinstance(dst.parent, ttg.BlockedEncodingAttr):
        return [_one_element(write), _one_element(read)]
    if elem_bytes == 2:
        read = ldmatrix_access(read, dst.op_idx, _contiguous_dim(write)) or read
    return [write, read]


def _one_element(layout: LinearLayout) -> LinearLayout:
    """One scalar access of every thread: `layout` without its registers (each register is
    its own instruction, with the same bank pattern up to an XOR of the address)."""
    return LinearLayout({**layout.bases, "register": []}, layout.out_shape, layout.out_dims)


def _contiguous_dim(layout: LinearLayout) -> int:
    """The dim whose consecutive elements `layout` puts in consecutive registers of a thread,
    else in consecutive lanes (the highest dim if neither)."""
    for name in ("register", "lane"):
        for base in layout.bases.get(name, ()):
            if base.count(1) == 1 and base.count(0) == len(base) - 1:
                return base.index(1)
    return len(layout.out_shape) - 1
