"""Shape ops, layout conversions and shared-memory descriptors.

splat / make_range build registers directly; broadcast, expand_dims, reshape, trans, join,
split, cat and ttg.convert_layout are all `remap.move` with the op's index map (see remap.py):
a register permutation when the layouts allow it, shared memory otherwise.
ttg.local_alloc / local_store / local_load read and write a buffer whose element offsets follow
its #ttg.swizzled_shared encoding (rows of `vec`-element groups XORed with the row phase).
"""

from __future__ import annotations

from xdsl.dialects.builtin import TensorType

from kernellab.backends.nvidia.lowering.core import LoweringError, lowers, scratch
from kernellab.backends.nvidia.lowering.layout import Lay, coords_of, flat_of, _log2
from kernellab.backends.nvidia.lowering.remap import move, pull_back, scratch_bytes_for
from kernellab.backends.nvidia.lowering.types import I32, I8, TV, SmemBuf, bitwidth, llty
from kernellab.ir import tt, ttg


# ------------------------------------------------------------------------- index maps


def _identity(f):
    return f


def broadcast_map(src_shape, dst_shape):
    def g(f):
        c = coords_of(f, dst_shape)
        return flat_of([0 if s == 1 else x for x, s in zip(c, src_shape)], src_shape)

    return g


def trans_map(order, src_shape, dst_shape):
    def g(f):
        c = coords_of(f, dst_shape)
        src = [0] * len(src_shape)
        for i, o in enumerate(order):
            src[o] = c[i]
        return flat_of(src, src_shape)

    return g


def virtual_pair(lhs: Lay, rhs_regs_count: int, which_basis: int, shape, shift: int = 0) -> Lay:
    """Layout of two same-layout tensors seen as one: an extra register bit selects rhs."""
    return Lay(
        tuple(shape),
        tuple(b << shift for b in lhs.reg) + (which_basis,),
        tuple(b << shift for b in lhs.lane),
        tuple(b << shift for b in lhs.warp),
    )


def _plan(ctx, op):
    """(source TV or None, source Lay, want Lay, dst Lay, constant c, element type) per result."""
    if isinstance(op, (tt.BroadcastOp, tt.ExpandDimsOp, tt.ReshapeOp, tt.TransOp, ttg.ConvertLayoutOp)):
        src_t, dst_t = op.src.type, op.result.type
        src_lay, dst_lay = ctx.lay(src_t), ctx.lay(dst_t)
        src_shape, dst_shape = tuple(src_t.get_shape()), tuple(dst_t.get_shape())
        if isinstance(op, tt.BroadcastOp):
            g = broadcast_map(src_shape, dst_shape)
        elif isinstance(op, tt.TransOp):
            g = trans_map(list(op.order.get_values()), src_shape, dst_shape)
        else:
            g = _identity
        want = pull_back(dst_lay, g, src_shape)
        return [(op.src, src_lay, want, dst_lay, 0, src_t.element_type, op.result)]
    if isinstance(op, (tt.JoinOp, tt.CatOp)):
        src_t, dst_t = op.lhs.type, op.result.type
        lay = ctx.lay(src_t)
        dst_lay = ctx.lay(dst_t)
        shape = tuple(dst_t.get_shape())
        if isinstance(op, tt.JoinOp):
            virt = virtual_pair(lay, lay.nregs, 1, shape, shift=1)
        else:
            virt = virtual_pair(lay, lay.nregs, lay.numel, shape)
        return [((op.lhs, op.rhs), virt, dst_lay, dst_lay, 0, src_t.element_type, op.result)]
    if isinstance(op, tt.SplitOp):
        src_t = op.src.type
        src_lay = ctx.lay(src_t)
        out = []
        for k, res in enumerate((op.out_lhs, op.out_rhs)):
            dst_lay = ctx.lay(res.type)
            want = pull_back(dst_lay, lambda f: f << 1, tuple(src_t.get_shape()))
            out.append((op.src, src_lay, want, dst_lay, k, src_t.element_type, res))
        return out
    raise LoweringError(f"no plan for {op.name}")


@scratch(tt.BroadcastOp, tt.ExpandDimsOp, tt.ReshapeOp, tt.TransOp, ttg.ConvertLayoutOp,
         tt.JoinOp, tt.CatOp, tt.SplitOp)  # fmt: skip
def _shape_scratch(ctx, op) -> int:
    if not isinstance(op.results[0].type, TensorType) or ttg.encoding_of(op.results[0].type) is None:
        return 0
    return max(scratch_bytes_for(src, want, e, c) for _, src, want, _, c, e, _ in _plan(ctx, op))


@lowers(tt.BroadcastOp, tt.ExpandDimsOp, tt.ReshapeOp, tt.TransOp, ttg.ConvertLayoutOp,
        tt.JoinOp, tt.CatOp, tt.SplitOp)  # fmt: skip
def _shape_op(ctx, op):
    for i, (srcv, src_lay, want, dst_lay, c, e, res) in enumerate(_plan(ctx, op)):
        if isinstance(srcv, tuple):
            lhs, rhs = ctx.get(srcv[0]), ctx.get(srcv[1])
            if rhs.lay != lhs.lay:
                rhs = move(ctx, rhs, lhs.lay, lhs.lay, 0, op)
            src = TV(lhs.regs + rhs.regs, src_lay, e)
        else:
            src = ctx.get(srcv)
            if not isinstance(src, TV):  # a scalar: splat it
                src = TV([src] * src_lay.nregs, src_lay, e)
        ctx.set(res, move(ctx, src, want, dst_lay, c, op))


@lowers(tt.SplatOp)
def _splat(ctx, op):
    lay = ctx.lay(op.result.type)
    x = ctx.get(op.src)
    if isinstance(x, TV):  # splat of a 0-d or 1-element tensor
        x = x.regs[0]
    ctx.set(op.result, TV([x] * lay.nregs, lay, op.result.type.element_type))


@lowers(tt.MakeRangeOp)
def _make_range(ctx, op):
    lay = ctx.lay(op.result.type)
    start = op.start.value.data
    b = ctx.b
    out = []
    for r in range(lay.nregs):
        v = ctx.coord(lay, r, 0)
        if start:
            v = b.add(v, I32(start))
        out.append(v)
    ctx.set(op.result, TV(out, lay, op.result.type.element_type))


# --------------------------------------------------------------------- shared memory


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


def _store_tensor(ctx, buf: SmemBuf, tv: TV, iv):
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


def _load_tensor(ctx, buf: SmemBuf, lay: Lay, elem, iv) -> TV:
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


def _buf_interval(ctx, value):
    from kernellab.backends.nvidia.lowering.smem import Interval

    off = ctx.smem.buffers[value]
    return Interval(off, off + ctx.smem.buffer_size[value])


@lowers(ttg.LocalAllocOp)
def _local_alloc(ctx, op):
    buf = smem_buf_of(ctx, op.result)
    ctx.set(op.result, buf)
    if op.src is not None:
        _store_tensor(ctx, buf, ctx.get(op.src), _buf_interval(ctx, op.result))


@lowers(ttg.LocalStoreOp)
def _local_store(ctx, op):
    buf = ctx.get(op.dst)
    _store_tensor(ctx, buf, ctx.get(op.src), _buf_interval(ctx, op.dst))


@lowers(ttg.LocalLoadOp)
def _local_load(ctx, op):
    buf = ctx.get(op.src)
    t = op.result.type
    ctx.set(op.result, _load_tensor(ctx, buf, ctx.lay(t), t.element_type, _buf_interval(ctx, op.src)))


@lowers(ttg.LocalDeallocOp)
def _local_dealloc(ctx, op):
    pass
