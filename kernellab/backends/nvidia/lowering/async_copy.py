"""The software pipeliner's ops on sm_80+: global → shared copies with `cp.async`, commit
groups and waits.

A copy moves each thread's runs of registers that are contiguous in global memory (the load's
vector width: AxisInfo and the layout, as for tt.load) and in the shared buffer (inside one
swizzle group, aligned) as one `cp.async` of 4, 8 or 16 bytes; 16-byte copies bypass L1
(`.cg`), as Triton's do. A copy narrower than the global run it belongs to (a tile
transposed into a K-major buffer) offsets the run's first pointer by constants; shared
addresses are the thread's part of the buffer's offsets plus a constant per register
(`_destination_pointers`). A masked-off run is copied with source size 0, which fills its
destination with zeros and reads nothing.

Barriers. Copies write shared memory behind the threads' backs, so the barrier tracker learns
about them at the wait: `ttg.async_wait` is `cp.async.wait_group N` (this thread's copies have
landed), then a `bar.sync` (every thread's have landed, and every read issued before the wait
is done); a ring handed over by mbarriers learns it at its barriers' waits instead
(lowering/tma.py: `cp.async.mbarrier.arrive.noinc` signals a slot's copies). wgmma reads the copies after that with no proxy fence, as in Triton's and
ThunderKittens' Hopper kernels (`fence.proxy.async` there measured 1.5-2% of attention at head
dim 64 on an H200); the threads' ordinary writes of its operands are fenced
(passes/ttgir/fence_insertion.py). A copy itself only needs the bytes it overwrites to be free of pending accesses; in a
pipelined loop the wait's barrier has already freed the slot it writes.
"""

from __future__ import annotations

import llvmlite.ir as ir

from kernellab.backends.llvm.axis_facts import axis_info
from kernellab.backends.llvm.errors import LoweringError
from kernellab.backends.llvm.layout import Lay
from kernellab.backends.llvm.memory import vector_width
from kernellab.backends.llvm.shared_buffers import base_offset, buffer_interval, element_pointer, vector_run
from kernellab.backends.llvm.types import I8, I32, I64, mem_bytes
from kernellab.ir import ttg
from kernellab.layouts import from_encoding
from kernellab.layouts.banks import offsets

COPY_BYTES = (4, 8, 16)


def _async_copy(ctx, op: ttg.AsyncCopyGlobalToLocalOp) -> None:
    b = ctx.b
    buf = ctx.get(op.result)
    lay = ctx.lay(op.src.type)
    elem = buf.elem
    nbytes = mem_bytes(elem)
    run = min(vector_width(ctx, op.src, op.mask, lay, elem), vector_run(lay, buf))
    size = run * nbytes
    if size not in COPY_BYTES:
        raise LoweringError(
            f"an asynchronous copy moves {size} bytes per thread; cp.async needs 4, 8 or 16 "
            "(the pipeliner should not have chosen this load)"
        )
    ctx.barriers.before_async_write(buffer_interval(ctx, op.result))
    ptrs = _source_pointers(ctx, op.src, lay, nbytes)
    masks = ctx.regs(op.mask, lay) if op.mask is not None else None
    dst = _destination_pointers(ctx, op, buf, lay, nbytes)
    cache = ".cg" if size == 16 else ".ca"
    text = f"cp.async{cache}.shared.global [$0], [$1], {size}, $2;"
    for r0 in range(0, lay.nregs, run):
        if lay.reg_of_flat[lay.reg_flat[r0]] != r0:  # a duplicate of an earlier run
            continue
        src_size = I32(size)
        if masks is not None:
            src_size = b.select(masks[r0], I32(size), I32(0))
        smem = b.ptrtoint(dst(r0), I32)
        gmem = b.ptrtoint(ptrs(r0), I64)
        ctx.asm(ir.VoidType(), text, "r,l,r", [smem, gmem, src_size], side_effect=True)
    ctx.set(op.token, None)


def _destination_pointers(ctx, op, buf, lay, nbytes: int):
    """fn(register r) -> its shared-memory pointer. The buffer's layout (kernellab.layouts,
    linear) composed with the copy's is a layout of element offsets, read like any layout: a
    register's offset is the thread's part, computed once per distinct lane and warp bases (so
    tiles copied alike, attention's K and V, share it), plus the register's constant, an add
    where their bits are disjoint (else an XOR). A tile's copies are then one address register
    plus immediates, and no offset register per element stays live across a loop (a tile
    transposed into a K-major buffer, one element per copy). A layout the core does not
    describe on this shape uses each register's own (element_pointer)."""
    view = op.result
    try:
        hardware = offsets(lay.linear, from_encoding(view.type.encoding, view.type.shape))
    except ValueError:  # a layout the core does not describe on this shape
        return element_pointer(ctx, buf, lay)
    offset_lay = Lay(hardware)
    b = ctx.b
    base = base_offset(ctx, buf)
    thread = ctx.smem_ptr(b.add(base, b.mul(ctx.thread_flat(offset_lay), I32(nbytes))))

    def ptr(r):
        constant = offset_lay.reg_flat[r]
        if constant & offset_lay.thread_bits:  # the bits meet: the register's own XOR
            return ctx.smem_ptr(b.add(base, b.mul(ctx.flat_index(offset_lay, r), I32(nbytes))))
        # off the thread's pointer, so LLVM hoists no thread-plus-constant sum out of a loop
        return b.gep(thread, [I32(constant * nbytes)], source_etype=I8) if constant else thread

    return ptr


def _source_pointers(ctx, src, lay, nbytes: int):
    """fn(register r) -> its global pointer, taken from the thread's register at the start of
    r's aligned block of contiguous addresses (AxisInfo contiguity along the pointers' most
    contiguous dim) plus a constant byte offset. A copy narrower than those blocks (a tile
    transposed into a K-major buffer by 4-byte copies) then keeps one 64-bit pointer live per
    block, not one per element."""
    ptrs = ctx.regs(src, lay)
    info = axis_info(src)
    if info is None:
        return lambda r: ptrs[r]
    d = max(range(lay.rank), key=lambda i: info.contiguity[i])
    block = min(info.contiguity[d], lay.shape[d])
    block = 1 << (block.bit_length() - 1)
    shift = lay.dim_shift(d)
    low = (block - 1) << shift
    if block == 1 or any(b & lay.thread_bits for b in lay.reg):  # coordinates not thread | register
        return lambda r: ptrs[r]

    def ptr(r):
        flat = lay.reg_flat[r]
        head = lay.reg_of_flat.get(flat & ~low, r)
        if head == r:
            return ptrs[r]
        return ctx.b.gep(ptrs[head], [I64(((flat & low) >> shift) * nbytes)], source_etype=I8)

    return ptr


def _commit_group(ctx, op: ttg.AsyncCommitGroupOp) -> None:
    ctx.asm(ir.VoidType(), "cp.async.commit_group;", "", [], side_effect=True)
    ctx.set(op.result, None)


def _wait(ctx, op: ttg.AsyncWaitOp) -> None:
    ctx.asm(ir.VoidType(), f"cp.async.wait_group {op.pending};", "", [], side_effect=True)
    ctx.barriers.barrier()
    ctx.set(op.result, None)


# op class -> fn(ctx, op): NVIDIA's rules for the pipeliner's ops
RULES = {
    ttg.AsyncCopyGlobalToLocalOp: _async_copy,
    ttg.AsyncCommitGroupOp: _commit_group,
    ttg.AsyncWaitOp: _wait,
}
