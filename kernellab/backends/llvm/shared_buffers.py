"""Shared-memory buffers (ttg.memdesc values): their element offsets as the buffer's
#ttg.swizzled_shared encoding says (rows of `vec`-element groups XORed with the row phase),
and whole-tensor stores into and loads out of them, with the barrier bookkeeping."""

from __future__ import annotations

from kernellab.backends.llvm.layout import Lay, _log2
from kernellab.backends.llvm.smem import Interval
from kernellab.backends.llvm.types import I8, I32, TV, SmemBuf, bitwidth, llty
from kernellab.ir import ttg


def smem_buf_of(ctx, value) -> SmemBuf:
    t = value.type
    enc = t.encoding
    shape = tuple(t.shape)
    if isinstance(enc, ttg.SwizzledSharedEncodingAttr):
        return SmemBuf(ctx.smem.buffers[value], shape, t.element_type, tuple(enc.order),
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
    if buf.max_phase > 1:
        phase = b.and_(b.lshr(row, I32(_log2(buf.per_phase))), I32(buf.max_phase - 1))
        vec_shift = _log2(buf.vec)
        col = b.xor(col, b.shl(phase, I32(vec_shift)))
    off = b.add(b.mul(row, I32(ncol)), col)
    stride = ncol * buf.shape[row_dim]
    for d in order[2:]:
        off = b.add(off, b.mul(coords[d], I32(stride)))
        stride *= buf.shape[d]
    return off


def store_tensor(ctx, buf: SmemBuf, tv: TV, iv):
    b = ctx.b
    lay = tv.lay
    ety = llty(tv.elem)
    store_ty = I8 if bitwidth(tv.elem) == 1 else ety
    nbytes = max(1, bitwidth(tv.elem) // 8)
    ctx.smem_access(iv, write=True)
    for r in lay.canonical_regs:
        coords = [ctx.coord(lay, r, d) for d in range(lay.rank)]
        off = smem_offset(ctx, buf, coords)
        ptr = ctx.smem_ptr(b.add(I32(buf.offset), b.mul(off, I32(nbytes))))
        v = tv.regs[r]
        if store_ty is not ety:
            v = b.zext(v, store_ty)
        b.store(v, ptr)


def load_tensor(ctx, buf: SmemBuf, lay: Lay, elem, iv) -> TV:
    b = ctx.b
    ety = llty(elem)
    load_ty = I8 if bitwidth(elem) == 1 else ety
    nbytes = max(1, bitwidth(elem) // 8)
    ctx.smem_access(iv, write=False)
    out, memo = [], {}
    for r in range(lay.nregs):
        f = lay.reg_flat[r]
        if f in memo:
            out.append(memo[f])
            continue
        coords = [ctx.coord(lay, r, d) for d in range(lay.rank)]
        off = smem_offset(ctx, buf, coords)
        ptr = ctx.smem_ptr(b.add(I32(buf.offset), b.mul(off, I32(nbytes))))
        v = b.load(ptr, typ=load_ty)
        if load_ty is not ety:
            v = b.trunc(v, ety)
        memo[f] = v
        out.append(v)
    return TV(out, lay, elem)


def buffer_interval(ctx, value):
    off = ctx.smem.buffers[value]
    return Interval(off, off + ctx.smem.buffer_size[value])
