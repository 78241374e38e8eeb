"""Hopper's Tensor Memory Accelerator and mbarriers (sm_90a): the TTGIR of passes/ttgir/tma.py.

One thread (thread 0) initialises a barrier, announces the bytes to come
(`mbarrier.arrive.expect_tx`) and issues the copies (`cp.async.bulk.tensor.2d` / `.3d`, one
per swizzle-wide panel of the NVMMA buffer and, for a 3-D tile, per batch slice: the box is the
panel of one slice, its rows swizzled by the TMA the way the layout says); every thread then
spins on `mbarrier.try_wait.parity`. The tensor map is
a by-value kernel parameter whose generic address (`cvta.param`, the parameter being a grid
constant) the instructions take. TMA coordinates run innermost dim first.

Barriers: the init is a shared-memory write the other threads must see before they wait (a
`bar.sync` after it, or after the last of a ring's inits); a copy overwrites its buffer behind the threads' backs, so it waits for
their pending accesses to those bytes first (as cp.async does; pending writes are fenced into
the async proxy first); the inval waits for every thread to have left the wait. A store to global memory reads its buffer after the threads'
writes (`fence.proxy.async` then, through the tracker, a `bar.sync`), and thread 0 waits for
the read (`cp.async.bulk.wait_group.read 0`) before anything may reuse the bytes.

Tensor maps the kernel builds (`ttng.tensormap_create`, as Triton builds them on Hopper): each
program's maps live in its region of the launch's global scratch (the hidden last kernel
parameter `global_scratch`, `ttg.global_scratch_memory_size` bytes per program, the region at
the program's linear id). Warp 0 zeroes a 128-byte aligned map in shared memory, thread 0
writes its fields there (`tensormap.replace.tile.*`: the address, rank - 1, the box, the dims
and byte strides innermost first, the element strides 1, the element type, interleave,
swizzle and fill), and the warp copies it to its global slot with the release fence into the
tensor-map proxy (`tensormap.cp_fenceproxy...release.gpu.sync.aligned`), waiting for that copy
to have read the shared bytes. Before the slot is rewritten thread 0 waits for its earlier bulk
stores (which may still read the old map). `ttng.tensormap_fenceproxy_acquire` is the
reader's half (`fence.proxy.tensormap::generic.acquire.gpu` on the slot, in warp 0, which
issues the copies); the copies take the slot's generic address.
"""

from __future__ import annotations

import llvmlite.ir as ir

from kernellab.backends.llvm.shared_buffers import base_offset, buffer_interval
from kernellab.backends.llvm.smem import Interval
from kernellab.backends.llvm.types import I8, I32, I64, mem_bytes
from kernellab.backends.nvidia.lowering.wgmma import FENCE_ASYNC_PROXY
from kernellab.ir import ttg, ttng

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


def _tile(buf) -> tuple[int, int, int]:
    """(batch slices, rows, columns) of the tile the TMA moves: columns along the buffer's
    contiguous dim (a transposed NVMMA buffer holds the tile of its transposed shape), the
    slices of a 3-D tile along its leading dim (one 2-D tile after another)."""
    batch = buf.shape[buf.order[2]] if len(buf.shape) == 3 else 1
    return batch, buf.shape[buf.order[1]], buf.shape[buf.order[0]]


def _boxes(ctx, buf, coords):
    """(shared byte offset, coordinates innermost first) of each box copy of a tile: one per
    batch slice and swizzle-wide panel, at tensor coordinates `coords` (outermost first)."""
    batch, rows, cols = _tile(buf)
    panel_cols = buf.block_cols or cols
    panel_bytes = rows * panel_cols * mem_bytes(buf.elem)
    *outer, row, col = coords
    for s in range(batch):
        for p in range(cols // panel_cols):
            inner = ctx.b.add(col, I32(p * panel_cols))
            at = (s * (cols // panel_cols) + p) * panel_bytes
            yield at, [inner, row, *(ctx.b.add(c, I32(s)) for c in outer)]


def _coordinates(n: int, first: int) -> str:
    return "{" + ", ".join(f"${first + i}" for i in range(n)) + "}"


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
    dst = _smem_address(ctx, op.result)
    bar = _smem_address(ctx, op.barrier)
    tmap = _map_address(ctx, op.desc)
    leader = _leader(ctx, ctx.get(op.pred))
    rank = len(op.coord)
    copy = (
        f"cp.async.bulk.tensor.{rank}d.shared::cluster.global.mbarrier::complete_tx::bytes "
        f"[$1], [$2, {_coordinates(rank, 3)}], [${3 + rank}];"
    )
    for at, coords in _boxes(ctx, buf, [ctx.get(c) for c in op.coord]):
        args = [leader, ctx.b.add(dst, I32(at)), tmap, *coords, bar]
        ctx.asm(VOID, _one_thread(copy), "r,r,l" + ",r" * (rank + 1), args)


def _map_address(ctx, value):
    """i64 generic address of a tensor map: a by-value parameter's, or a global slot's."""
    ptr = ctx.get(value)
    if ptr.type.addrspace != 0:
        ptr = ctx.b.addrspacecast(ptr, ir.PointerType())
    return ctx.b.ptrtoint(ptr, I64)


def _wait(ctx, op: ttng.WaitBarrierOp) -> None:
    bar = _smem_address(ctx, op.alloc)
    text = (
        "{ .reg .pred done; wait_${:uid}: "
        "mbarrier.try_wait.parity.shared::cta.b64 done, [$0], $1; "
        "@!done bra.uni wait_${:uid}; }"
    )
    ctx.asm(VOID, text, "r,r", [bar, ctx.get(op.phase)])
    for dep in op.deps:  # the barriers' protocol orders these buffers' accesses, not a bar.sync
        ctx.barriers.ordered(buffer_interval(ctx, dep))


def _arrive(ctx, op: ttng.ArriveBarrierOp) -> None:
    text = "{ .reg .pred p; setp.ne.u32 p, $0, 0; @p mbarrier.arrive.shared::cta.b64 _, [$1]; }"
    ctx.asm(VOID, text, "r,r", [ctx.b.zext(ctx.get(op.pred), I32), _smem_address(ctx, op.alloc)])


def _copies_arrive(ctx, op: ttng.AsyncCopyMbarrierArriveOp) -> None:
    text = "cp.async.mbarrier.arrive.noinc.shared::cta.b64 [$0];"
    ctx.asm(VOID, text, "r", [_smem_address(ctx, op.alloc)])


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
    src = _smem_address(ctx, op.src)
    tmap = _map_address(ctx, op.desc)
    leader = _leader(ctx)
    rank = len(op.coord)
    copy = f"cp.async.bulk.tensor.{rank}d.global.shared::cta.bulk_group [$1, {_coordinates(rank, 2)}], [${2 + rank}];"
    for at, coords in _boxes(ctx, buf, [ctx.get(c) for c in op.coord]):
        args = [leader, tmap, *coords, ctx.b.add(src, I32(at))]
        ctx.asm(VOID, _one_thread(copy), "r,l" + ",r" * (rank + 1), args)
    ctx.asm(VOID, _one_thread("cp.async.bulk.commit_group;"), "r", [leader])


def _store_wait(ctx, op: ttng.AsyncTMAStoreWaitOp) -> None:
    text = f"cp.async.bulk.wait_group.read {op.pendings.value.data};"
    ctx.asm(VOID, _one_thread(text), "r", [_leader(ctx)])
    # only thread 0 knows the copies' reads are done: a write to their buffers (the next tile's,
    # where the store stays in flight across a loop) must come after a barrier behind this wait
    for iv in _bulk_store_sources(ctx):
        ctx.barriers.read_asynchronously(iv)


def _bulk_store_sources(ctx) -> list[Interval]:
    """The buffers the function's TMA stores read."""
    out = []
    for op in ctx.func_op.walk():
        if isinstance(op, ttng.AsyncTMACopyLocalToGlobalOp) and buffer_interval(ctx, op.src) not in out:
            out.append(buffer_interval(ctx, op.src))
    return out


SCRATCH_PARAM = "global_scratch"  # the hidden kernel parameter of a kernel that builds maps
MAP_BYTES = 128
MAP_STAGING = MAP_BYTES + MAP_BYTES - 16  # shared bytes holding a 128-byte aligned map


def _scratch_alloc(ctx, op: ttg.GlobalScratchAllocOp) -> None:
    """This program's `nbytes` at `offset` in its region of the launch's global scratch."""
    target, b = ctx.target, ctx.b
    x, y, z = (b.zext(target.program_id(ctx, axis), I64) for axis in range(3))
    nx, ny = (b.zext(target.num_programs(ctx, axis), I64) for axis in range(2))
    linear = b.add(x, b.mul(nx, b.add(y, b.mul(ny, z))))  # i64: a grid may hold 2^31 programs
    per_program = ctx.module_op.attributes[ttg.SCRATCH_SIZE_ATTR].value.data
    offset = b.add(b.mul(linear, I64(per_program)), I64(op.offset.value.data))
    ctx.set(op.result, b.gep(ctx.hidden[SCRATCH_PARAM], [offset], source_etype=I8))


def _staging_offset(ctx, op) -> int:
    """Where in its shared scratch `op` stages the map: the first 128-byte boundary (the
    shared array itself is 1024-byte aligned)."""
    offset = ctx.scratch_offset(op)
    return offset + (-offset % MAP_BYTES)


def _tensormap_create(ctx, op: ttng.TensormapCreateOp) -> None:
    b = ctx.b
    at = _staging_offset(ctx, op)
    ctx.smem_access(Interval(at, at + MAP_BYTES), write=True)
    smem = b.zext(b.ptrtoint(ctx.smem_ptr(at), I32), I64)
    slot = b.ptrtoint(ctx.get(op.desc_ptr), I64)
    leader = _leader(ctx)
    warp0 = b.zext(b.icmp_unsigned("<", ctx.tid, I32(32)), I32)
    ctx.asm(VOID, _one_thread("cp.async.bulk.wait_group 0;"), "r", [leader])  # stores on the old map
    zero = "{ .reg .pred w; setp.ne.u32 w, $0, 0; @w st.shared.b32 [$1], 0; @w bar.warp.sync -1; }"
    ctx.asm(VOID, zero, "r,l", [warp0, b.add(smem, b.zext(b.shl(ctx.lane, I32(2)), I64))])

    def replace(field: str, width: int, value, index: int | None = None) -> None:
        """One field; `value` an int is an immediate (the enum fields take only those)."""
        at_index = "" if index is None else f" {index},"
        if isinstance(value, int):
            text = f"tensormap.replace.tile.{field}.shared::cta.b1024.b{width} [$1],{at_index} {value};"
            ctx.asm(VOID, _one_thread(text), "r,l", [leader, smem])
            return
        text = f"tensormap.replace.tile.{field}.shared::cta.b1024.b{width} [$1],{at_index} $2;"
        ctx.asm(VOID, _one_thread(text), f"r,l,{'l' if width == 64 else 'r'}", [leader, smem, value])

    replace("global_address", 64, b.ptrtoint(ctx.get(op.global_address), I64))
    box = op.box.get_values()
    replace("rank", 32, len(box) - 1)
    nbytes = mem_bytes(op.global_address.type.pointee)
    for i, size in enumerate(reversed(box)):
        replace("box_dim", 32, size, i)
    for i, dim in enumerate(reversed(op.global_dim)):
        replace("global_dim", 32, b.trunc(ctx.get(dim), I32), i)
    for i, stride in enumerate(reversed(op.global_stride)):
        replace("global_stride", 64, b.mul(ctx.get(stride), I64(nbytes)), i)
    for i in range(len(box)):
        replace("element_stride", 32, 1, i)
    replace("elemtype", 32, op.elem_type.value.data)
    replace("interleave_layout", 32, 0)
    replace("swizzle_mode", 32, op.swizzle_mode.value.data)
    replace("fill_mode", 32, op.fill_mode.value.data)
    copy = (
        "{ .reg .pred w; setp.ne.u32 w, $0, 0; "
        f"@w tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.gpu.sync.aligned [$1], [$2], {MAP_BYTES}; "
        "@w cp.async.bulk.commit_group; @w cp.async.bulk.wait_group.read 0; }"
    )
    ctx.asm(VOID, copy, "r,l,l", [warp0, slot, smem])


def _tensormap_acquire(ctx, op: ttng.TensormapFenceproxyAcquireOp) -> None:
    warp0 = ctx.b.zext(ctx.b.icmp_unsigned("<", ctx.tid, I32(32)), I32)
    text = f"{{ .reg .pred w; setp.ne.u32 w, $0, 0; @w fence.proxy.tensormap::generic.acquire.gpu [$1], {MAP_BYTES}; }}"
    ctx.asm(VOID, text, "r,l", [warp0, ctx.b.ptrtoint(ctx.get(op.desc_ptr), I64)])


# op class -> shared scratch bytes
SCRATCH = {ttng.TensormapCreateOp: lambda ctx, op: MAP_STAGING}

# op class -> fn(ctx, op): NVIDIA's rules for TMA copies and mbarriers
RULES = {
    ttng.InitBarrierOp: _init,
    ttng.BarrierExpectOp: _expect,
    ttng.AsyncTMACopyGlobalToLocalOp: _copy_in,
    ttng.WaitBarrierOp: _wait,
    ttng.ArriveBarrierOp: _arrive,
    ttng.AsyncCopyMbarrierArriveOp: _copies_arrive,
    ttng.InvalBarrierOp: _inval,
    ttng.FenceAsyncSharedOp: _fence,
    ttng.AsyncTMACopyLocalToGlobalOp: _copy_out,
    ttng.AsyncTMAStoreWaitOp: _store_wait,
    ttg.GlobalScratchAllocOp: _scratch_alloc,
    ttng.TensormapCreateOp: _tensormap_create,
    ttng.TensormapFenceproxyAcquireOp: _tensormap_acquire,
}
