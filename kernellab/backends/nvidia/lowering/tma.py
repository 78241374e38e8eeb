"""Hopper's Tensor Memory Accelerator and mbarriers (sm_90a): the TTGIR of passes/ttgir/tma.py.

One thread (thread 0) initialises a barrier, announces the bytes to come
(`mbarrier.arrive.expect_tx`) and issues the copies (`cp.async.bulk.tensor.2d`, one per
swizzle-wide panel of the NVMMA buffer: the box is the panel, its rows swizzled by the TMA the
way the layout says); every thread then spins on `mbarrier.try_wait.parity`. The tensor map is
a by-value kernel parameter whose generic address (`cvta.param`, the parameter being a grid
constant) the instructions take. TMA coordinates run innermost dim first.

Barriers: the init is a shared-memory write the other threads must see before they wait (a
`bar.sync` after it, or after the last of a ring's inits); a copy overwrites its buffer behind the threads' backs, so it waits for
their pending accesses to those bytes first (as cp.async does; pending writes are fenced into
the async proxy first); the inval waits for every thread to have left the wait. A store to global memory reads its buffer after the threads'
writes (`fence.proxy.async` then, through the tracker, a `bar.sync`), and thread 0 waits for
the read (`cp.async.bulk.wait_group.read 0`) before anything may reuse the bytes.
"""

from __future__ import annotations

import llvmlite.ir as ir

from kernellab.backends.llvm.shared_buffers import base_offset, buffer_interval
from kernellab.backends.llvm.types import I32, I64, mem_bytes
from kernellab.backends.nvidia.lowering.wgmma import FENCE_ASYNC_PROXY
from kernellab.ir import ttng

VOID = ir.VoidType()


def _smem_address(ctx, value):
    """i32 shared-memory address of a buffer's first byte (what PTX's shared state space takes)."""
    return ctx.b.ptrtoint(ctx.smem_ptr(base_offset(ctx, ctx.get(value))), I32)


def _one_thread(text: str) -> str:
    """`text` run by one thread alone: the one whose operand $0 (`_leader`) is not 0."""
    return f"{{ .reg .pred leader; setp.ne.u32 leader, $0, 0; @leader {text} }}"


def _leader(ctx, pred=None):
    """i32: 1 in thread 0 (where `pred`, an i1, holds), else 0."""
    first = ctx.b.icmp_unsigned("==", ctx.tid, I32(0))
    if pred is not None:
        first = ctx.b.and_(first, pred)
    return ctx.b.zext(first, I32)


def _tile(buf) -> tuple[int, int]:
    """(rows, columns) of the tile the TMA moves: columns along the buffer's contiguous dim
    (a transposed NVMMA buffer holds the tile of its transposed shape)."""
    return buf.shape[buf.order[1]], buf.shape[buf.order[0]]


def _init(ctx, op: ttng.InitBarrierOp) -> None:
    if not isinstance(op.prev_op, ttng.InitBarrierOp):  # the first of a run (a ring's slots)
        ctx.smem_access(buffer_interval(ctx, op.alloc), write=True)
    bar = _smem_address(ctx, op.alloc)
    count = op.count.value.data
    ctx.asm(VOID, _one_thread(f"mbarrier.init.shared::cta.b64 [$1], {count};"), "r,r", [_leader(ctx), bar])
    if not isinstance(op.next_op, ttng.InitBarrierOp):
        ctx.barriers.barrier()  # every thread sees the initialised barriers before it waits


def _expect(ctx, op: ttng.BarrierExpectOp) -> None:
    bar = _smem_address(ctx, op.alloc)
    text = f"mbarrier.arrive.expect_tx.shared::cta.b64 _, [$1], {op.size.value.data};"
    ctx.asm(VOID, _one_thread(text), "r,r", [_leader(ctx, ctx.get(op.pred)), bar])


def _copy_in(ctx, op: ttng.AsyncTMACopyGlobalToLocalOp) -> None:
    buf = ctx.get(op.result)
    iv = buffer_interval(ctx, op.result)
    if any(write and p.overlaps(iv) for p, write in ctx.barriers.pending):
        ctx.asm(VOID, FENCE_ASYNC_PROXY, "", [])  # the threads' writes, ordered before the copy's
    ctx.barriers.before_async_write(iv)
    rows, cols = _tile(buf)
    panel_cols = buf.block_cols or cols
    panel_bytes = rows * panel_cols * mem_bytes(buf.elem)
    dst = _smem_address(ctx, op.result)
    bar = _smem_address(ctx, op.barrier)
    tmap = ctx.b.ptrtoint(ctx.get(op.desc), I64)
    row, col = (ctx.get(c) for c in op.coord)
    leader = _leader(ctx, ctx.get(op.pred))
    copy = (
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes "
        "[$1], [$2, {$3, $4}], [$5];"
    )
    for p in range(cols // panel_cols):
        at = ctx.b.add(dst, I32(p * panel_bytes))
        inner = ctx.b.add(col, I32(p * panel_cols))
        ctx.asm(VOID, _one_thread(copy), "r,r,l,r,r,r", [leader, at, tmap, inner, row, bar])


def _wait(ctx, op: ttng.WaitBarrierOp) -> None:
    bar = _smem_address(ctx, op.alloc)
    text = (
        "{ .reg .pred done; wait_${:uid}: "
        "mbarrier.try_wait.parity.shared::cta.b64 done, [$0], $1; "
        "@!done bra.uni wait_${:uid}; }"
    )
    ctx.asm(VOID, text, "r,r", [bar, ctx.get(op.phase)])


def _inval(ctx, op: ttng.InvalBarrierOp) -> None:
    if not isinstance(op.prev_op, ttng.InvalBarrierOp):
        ctx.barriers.barrier()  # every thread has left its waits
    bar = _smem_address(ctx, op.alloc)
    ctx.asm(VOID, _one_thread("mbarrier.inval.shared::cta.b64 [$1];"), "r,r", [_leader(ctx), bar])
    if not isinstance(op.next_op, ttng.InvalBarrierOp):  # thread 0 wrote the bytes
        ctx.smem_access(buffer_interval(ctx, op.alloc), write=True)


def _fence(ctx, op: ttng.FenceAsyncSharedOp) -> None:
    ctx.asm(VOID, FENCE_ASYNC_PROXY, "", [])


def _copy_out(ctx, op: ttng.AsyncTMACopyLocalToGlobalOp) -> None:
    ctx.smem_access(buffer_interval(ctx, op.src), write=False)  # after the threads' writes
    buf = ctx.get(op.src)
    rows, cols = _tile(buf)
    panel_cols = buf.block_cols or cols
    panel_bytes = rows * panel_cols * mem_bytes(buf.elem)
    src = _smem_address(ctx, op.src)
    tmap = ctx.b.ptrtoint(ctx.get(op.desc), I64)
    row, col = (ctx.get(c) for c in op.coord)
    leader = _leader(ctx)
    copy = "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [$1, {$2, $3}], [$4];"
    for p in range(cols // panel_cols):
        at = ctx.b.add(src, I32(p * panel_bytes))
        inner = ctx.b.add(col, I32(p * panel_cols))
        ctx.asm(VOID, _one_thread(copy), "r,l,r,r,r", [leader, tmap, inner, row, at])
    ctx.asm(VOID, _one_thread("cp.async.bulk.commit_group;"), "r", [leader])


def _store_wait(ctx, op: ttng.AsyncTMAStoreWaitOp) -> None:
    text = f"cp.async.bulk.wait_group.read {op.pendings.value.data};"
    ctx.asm(VOID, _one_thread(text), "r", [_leader(ctx)])


# op class -> fn(ctx, op): NVIDIA's rules for TMA copies and mbarriers
RULES = {
    ttng.InitBarrierOp: _init,
    ttng.BarrierExpectOp: _expect,
    ttng.AsyncTMACopyGlobalToLocalOp: _copy_in,
    ttng.WaitBarrierOp: _wait,
    ttng.InvalBarrierOp: _inval,
    ttng.FenceAsyncSharedOp: _fence,
    ttng.AsyncTMACopyLocalToGlobalOp: _copy_out,
    ttng.AsyncTMAStoreWaitOp: _store_wait,
}
