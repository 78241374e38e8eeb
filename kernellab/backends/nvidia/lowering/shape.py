"""Shape ops, layout conversions and shared-memory descriptors.

splat / make_range build registers directly. ttg.convert_layout is `convert.convert`, planned
by the layout core's conversion_plan. broadcast, expand_dims, reshape, trans and split first
pull the result layout back through the op's index map (remap.py) to a layout over the source
shape, and join / cat view their two operands as one tensor with an extra register bit; either
way the op becomes one same-shape conversion, emitted by `convert` as well.
ttg.local_alloc / local_store / local_load read and write a buffer whose element offsets follow
its #ttg.swizzled_shared encoding (rows of `vec`-element groups XORed with the row phase).
"""

from __future__ import annotations

from xdsl.dialects.builtin import TensorType

from kernellab.backends.nvidia.lowering.convert import convert, convert_scratch_bytes
from kernellab.backends.nvidia.lowering.core import LoweringError, lowers, scratch
from kernellab.backends.nvidia.lowering.layout import Lay, _log2, coords_of, flat_of
from kernellab.backends.nvidia.lowering.mma import (
    LdmatrixOperand,
    feeds_one_mma_dot,
    ldmatrix_rows_of,
)
from kernellab.backends.nvidia.lowering.remap import pull_back
from kernellab.backends.nvidia.lowering.types import I8, I32, TV, SmemBuf, bitwidth, llty
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


def _conversions(ctx, op):
    """The op as same-shape conversions: a list of (sources, source Lay, target Lay, element
    type, [(result, dst Lay, first register)]) — result takes the target's registers from
    `first` on, relabelled with its own layout."""
    if isinstance(op, ttg.ConvertLayoutOp):
        src_lay, dst_lay = ctx.lay(op.src.type), ctx.lay(op.result.type)
        return [((op.src,), src_lay, dst_lay, op.src.type.element_type, [(op.result, dst_lay, 0)])]
    if isinstance(op, (tt.BroadcastOp, tt.ExpandDimsOp, tt.ReshapeOp, tt.TransOp)):
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
        return [((op.src,), src_lay, want, src_t.element_type, [(op.result, dst_lay, 0)])]
    if isinstance(op, (tt.JoinOp, tt.CatOp)):
        src_t, dst_t = op.lhs.type, op.result.type
        lay = ctx.lay(src_t)
        dst_lay = ctx.lay(dst_t)
        shape = tuple(dst_t.get_shape())
        if isinstance(op, tt.JoinOp):
            virt = virtual_pair(lay, lay.nregs, 1, shape, shift=1)
        else:
            virt = virtual_pair(lay, lay.nregs, lay.numel, shape)
        return [((op.lhs, op.rhs), virt, dst_lay, src_t.element_type, [(op.result, dst_lay, 0)])]
    if isinstance(op, tt.SplitOp):
        # both halves at once: the target is the lhs result pulled back, plus a top register
        # bit for the split dim (flat bit 0), so its upper half of registers is the rhs
        src_t = op.src.type
        src_lay = ctx.lay(src_t)
        shape = tuple(src_t.get_shape())
        outs = [(res, ctx.lay(res.type)) for res in (op.out_lhs, op.out_rhs)]
        targets = []
        for res, dst_lay in outs:
            want = pull_back(dst_lay, lambda f: f << 1, shape)
            both = Lay(shape, want.reg + (1,), want.lane, want.warp)
            targets.append((both, dst_lay))
        e = src_t.element_type
        (lhs, lhs_lay), (rhs, rhs_lay) = outs
        n = lhs_lay.nregs
        if targets[0][0] == targets[1][0]:
            return [((op.src,), src_lay, targets[0][0], e, [(lhs, lhs_lay, 0), (rhs, rhs_lay, n)])]
        return [
            ((op.src,), src_lay, targets[0][0], e, [(lhs, lhs_lay, 0)]),
            ((op.src,), src_lay, targets[1][0], e, [(rhs, rhs_lay, rhs_lay.nregs)]),
        ]
    raise LoweringError(f"no plan for {op.name}")


@scratch(tt.BroadcastOp, tt.ExpandDimsOp, tt.ReshapeOp, tt.TransOp, ttg.ConvertLayoutOp,
         tt.JoinOp, tt.CatOp, tt.SplitOp)  # fmt: skip
def _shape_scratch(ctx, op) -> int:
    if not isinstance(op.results[0].type, TensorType) or ttg.encoding_of(op.results[0].type) is None:
        return 0
    need = 0
    for srcs, src_lay, target, e, _ in _conversions(ctx, op):
        need = max(need, convert_scratch_bytes(src_lay, target, e))
        if len(srcs) == 2:  # join / cat: rhs first converted to lhs's layout
            lhs_lay, rhs_lay = ctx.lay(srcs[0].type), ctx.lay(srcs[1].type)
            need = max(need, convert_scratch_bytes(rhs_lay, lhs_lay, e))
    return need


@lowers(tt.BroadcastOp, tt.ExpandDimsOp, tt.ReshapeOp, tt.TransOp, ttg.ConvertLayoutOp,
        tt.JoinOp, tt.CatOp, tt.SplitOp)  # fmt: skip
def _shape_op(ctx, op):
    for srcs, src_lay, target, e, results in _conversions(ctx, op):
        if len(srcs) == 2:
            lhs, rhs = ctx.get(srcs[0]), ctx.get(srcs[1])
            if rhs.lay != lhs.lay:
                rhs = convert(ctx, rhs, lhs.lay, op)
            moved = convert(ctx, TV(lhs.regs + rhs.regs, src_lay, e), target, op).regs
        else:
            src = ctx.get(srcs[0])
            if isinstance(src, TV):
                moved = convert(ctx, src, target, op).regs
            else:  # a scalar: every register holds it
                moved = [src] * target.nregs
        for res, dst_lay, first in results:
            ctx.set(res, TV(moved[first : first + dst_lay.nregs], dst_lay, e))


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
    lay, interval = ctx.lay(t), _buf_interval(ctx, op.src)
    encoding = ttg.encoding_of(t)
    rows = None
    if isinstance(encoding, ttg.DotOperandEncodingAttr):
        rows = ldmatrix_rows_of(buf, encoding, encoding.op_idx)
    if rows is None:
        ctx.set(op.result, _load_tensor(ctx, buf, lay, t.element_type, interval))
        return
    offset_of = lambda coords: smem_offset(ctx, buf, coords)  # noqa: E731
    operand = LdmatrixOperand(buf, lay, *rows, t.element_type, interval, offset_of)
    ctx.set(op.result, operand if feeds_one_mma_dot(op.result) else operand.tensor(ctx))


@lowers(ttg.LocalDeallocOp)
def _local_dealloc(ctx, op):
    pass
