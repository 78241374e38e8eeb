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

from kernellab.backends.llvm.convert import convert, convert_scratch_bytes
from kernellab.backends.llvm.dot import ReadByTheDot, read_by_fma_dot
from kernellab.backends.llvm.errors import LoweringError
from kernellab.backends.llvm.layout import Lay, coords_of, derived, flat_of
from kernellab.backends.llvm.remap import pull_back
from kernellab.backends.llvm.shared_buffers import (
    buffer_interval,
    load_tensor,
    slot_of,
    smem_buf_of,
    store_tensor,
)
from kernellab.backends.llvm.types import I32, TV
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


def virtual_pair(lhs: Lay, which_basis: int, shape, shift: int = 0) -> Lay:
    """Layout of two same-layout tensors seen as one: an extra register bit selects rhs."""
    return derived(lhs, lambda f: f << shift, shape, (which_basis,))


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
            virt = virtual_pair(lay, 1, shape, shift=1)
        else:
            virt = virtual_pair(lay, lay.numel, shape)
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
            both = derived(dst_lay, lambda f: f << 1, shape, (1,))
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


# ops that become same-shape conversions (see _conversions)
_CONVERSION_OPS = (tt.BroadcastOp, tt.ExpandDimsOp, tt.ReshapeOp, tt.TransOp, ttg.ConvertLayoutOp,
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


def _splat(ctx, op):
    lay = ctx.lay(op.result.type)
    x = ctx.get(op.src)
    if isinstance(x, TV):  # splat of a 0-d or 1-element tensor
        x = x.regs[0]
    ctx.set(op.result, TV([x] * lay.nregs, lay, op.result.type.element_type))


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


def _local_alloc(ctx, op):
    buf = smem_buf_of(ctx, op.result)
    ctx.set(op.result, buf)
    if op.src is not None:
        store_tensor(ctx, buf, ctx.get(op.src), buffer_interval(ctx, op.result))


def _local_store(ctx, op):
    buf = ctx.get(op.dst)
    store_tensor(ctx, buf, ctx.get(op.src), buffer_interval(ctx, op.dst))


def _local_load(ctx, op):
    buf = ctx.get(op.src)
    if read_by_fma_dot(ctx, op):
        ctx.set(op.result, ReadByTheDot(buf))
        return
    t = op.result.type
    ctx.set(op.result, load_tensor(ctx, buf, ctx.lay(t), t.element_type, buffer_interval(ctx, op.src)))


def _local_dealloc(ctx, op):
    pass


def _memdesc_index(ctx, op):
    ctx.set(op.result, slot_of(ctx, ctx.get(op.src), ctx.get(op.index)))


# op class -> fn(ctx, op) emitting its LLVM IR
RULES = {
    **{cls: _shape_op for cls in _CONVERSION_OPS},
    tt.SplatOp: _splat,
    tt.MakeRangeOp: _make_range,
    ttg.LocalAllocOp: _local_alloc,
    ttg.LocalStoreOp: _local_store,
    ttg.LocalLoadOp: _local_load,
    ttg.LocalDeallocOp: _local_dealloc,
    ttg.MemDescIndexOp: _memdesc_index,
}


# op class -> fn(ctx, op) -> bytes of shared-memory scratch it needs
SCRATCH = {cls: _shape_scratch for cls in _CONVERSION_OPS}
