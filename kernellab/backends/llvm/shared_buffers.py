"""Shared-memory buffers (ttg.memdesc values): their element offsets as the buffer's
#ttg.swizzled_shared encoding says (rows of `vec`-element groups XORed with the row phase),
and whole-tensor stores into and loads out of them (vectorized where the layouts keep runs
contiguous and aligned), with the barrier bookkeeping."""

from __future__ import annotations

from dataclasses import replace

from kernellab.backends.llvm.layout import Lay, _log2
from kernellab.backends.llvm.smem import Interval
from kernellab.backends.llvm.smem_vectors import (
    aligned_run,
    load_runs,
    max_run,
    smem_elem_bytes,
    store_runs,
)
from kernellab.backends.llvm.types import I32, TV, SmemBuf
from kernellab.ir import ttg
from kernellab.layouts import nvmma_swizzle


def base_offset(ctx, buf: SmemBuf):
    """i32 byte offset of `buf`'s first element in the dynamic shared array."""
    if buf.slot_offset is None:
        return I32(buf.offset)
    return ctx.b.add(I32(buf.offset), buf.slot_offset)


def slot_of(ctx, ring: SmemBuf, index) -> SmemBuf:
    """Slot `index` (an i32 value) of a ring: its leading dim dropped, the offset moved."""
    slot_bytes = smem_elem_bytes(ring.elem)
    for s in ring.shape[1:]:
        slot_bytes *= s
    dynamic = ctx.b.mul(index, I32(slot_bytes))
    if ring.slot_offset is not None:
        dynamic = ctx.b.add(ring.slot_offset, dynamic)
    order = tuple(d - 1 for d in ring.order if d != 0)
    return replace(ring, shape=ring.shape[1:], order=order, slot_offset=dynamic)


def smem_buf_of(ctx, value) -> SmemBuf:
    t = value.type
    enc = t.encoding
    shape = tuple(t.shape)
    if isinstance(enc, ttg.SHARED_ENCODINGS):
        ring_dims = len(shape) - len(enc.order)  # a ring's leading dims are its outermost
        order = tuple(d + ring_dims for d in enc.order) + tuple(reversed(range(ring_dims)))
        if isinstance(enc, ttg.NVMMASharedEncodingAttr):
            width, vec, per_phase, max_phase = nvmma_swizzle(enc.swizzle_bytes, enc.element_bits)
            cols = shape[order[0]]
            return SmemBuf(ctx.smem.buffers[value], shape, t.element_type, order, vec, per_phase,
                           max_phase, block_cols=width if width < cols else 0)  # fmt: skip
        return SmemBuf(ctx.smem.buffers[value], shape, t.element_type, order,
                       enc.vec, enc.per_phase, enc.max_phase)  # fmt: skip
    order = tuple(reversed(range(len(shape))))
    return SmemBuf(ctx.smem.buffers[value], shape, t.element_type, order)


def smem_offset(ctx, buf: SmemBuf, coords: list):
    """i32 element offset of `coords` (i32 values) in `buf` (swizzled as its encoding says)."""
    b = ctx.b
    order = buf.order
    rank = len(buf.shape)
    if rank == 1:
        return coords[0]
    col_dim, row_dim = order[0], order[1]
    col, row = coords[col_dim], coords[row_dim]
    ncol = buf.shape[col_dim]
    block = None
    if buf.block_cols:  # column blocks of block_cols, each holding every row
        block = b.lshr(col, I32(_log2(buf.block_cols)))
        col = b.and_(col, I32(buf.block_cols - 1))
        ncol = buf.block_cols
    if buf.max_phase > 1:
        phase = b.and_(b.lshr(row, I32(_log2(buf.per_phase))), I32(buf.max_phase - 1))
        vec_shift = _log2(buf.vec)
        col = b.xor(col, b.shl(phase, I32(vec_shift)))
    off = b.add(b.mul(row, I32(ncol)), col)
    if block is not None:
        off = b.add(off, b.mul(block, I32(ncol * buf.shape[row_dim])))
        ncol = buf.shape[col_dim]
    stride = ncol * buf.shape[row_dim]
    for d in order[2:]:
        off = b.add(off, b.mul(coords[d], I32(stride)))
        stride *= buf.shape[d]
    return off


def vector_run(lay: Lay, buf: SmemBuf) -> int:
    """Registers per shared access of `buf` in layout `lay`: a run contiguous along the buffer's
    fastest dim (Lay.contiguous_run), inside one `vec` group when the swizzle can XOR bits at
    or above log2(vec) (a row phase other than 0 exists), of at most 16 aligned bytes."""
    limit = min(buf.shape[buf.order[0]], max_run(buf.elem))
    if len(buf.shape) > 1 and buf.max_phase > 1 and buf.shape[buf.order[1]] > buf.per_phase:
        limit = min(limit, buf.vec)
    return lay.contiguous_run(buf.order[0], aligned_run(limit, buf.offset, buf.elem))


def element_pointer(ctx, buf: SmemBuf, lay: Lay):
    """fn(register r) -> the shared-memory pointer of `lay`'s register r in `buf`."""
    nbytes = smem_elem_bytes(buf.elem)

    def ptr(r):
        off = smem_offset(ctx, buf, [ctx.coord(lay, r, d) for d in range(lay.rank)])
        return ctx.smem_ptr(ctx.b.add(base_offset(ctx, buf), ctx.b.mul(off, I32(nbytes))))

    return ptr


def store_tensor(ctx, buf: SmemBuf, tv: TV, iv):
    ctx.smem_access(iv, write=True)
    store_runs(ctx, tv.regs, tv.lay, tv.elem, vector_run(tv.lay, buf), element_pointer(ctx, buf, tv.lay))


def load_tensor(ctx, buf: SmemBuf, lay: Lay, elem, iv) -> TV:
    ctx.smem_access(iv, write=False)
    return TV(load_runs(ctx, lay, elem, vector_run(lay, buf), element_pointer(ctx, buf, lay)), lay, elem)


def buffer_interval(ctx, value):
    """The bytes barrier tracking attributes to a memdesc value: its whole buffer (a ring's
    slot is chosen at run time, so accesses to it count as accesses to the ring)."""
    root = ttg.memdesc_root(value)
    off = ctx.smem.buffers[root]
    return Interval(off, off + ctx.smem.buffer_size[root])
