"""Shape ops and layout conversions on the CPU as one `shufflevector` each: with one thread
holding the whole tensor, tt.broadcast, tt.expand_dims, tt.reshape, tt.trans and
ttg.convert_layout only reorder (or repeat) the registers of one vector. Each result register
takes the source register that holds its element (broadcast dims read index 0 of the source,
expand_dims drops the new dim, reshape keeps the row-major flat index, trans permutes the
dims). Other shape ops (join, split, ...) take the core's rules.
"""

from __future__ import annotations

from xdsl.dialects.builtin import TensorType

from kernellab.backends.cpu.lowering.vectors import VTV, as_vector, permute
from kernellab.backends.llvm import shape as core_shape
from kernellab.backends.llvm.layout import coords_of, flat_of, layout_of_type
from kernellab.ir import tt, ttg


def _source_coords(op, coords):
    if isinstance(op, tt.BroadcastOp):
        src = op.src.type.get_shape()
        return tuple(0 if s == 1 else c for c, s in zip(coords, src))
    if isinstance(op, tt.ExpandDimsOp):
        axis = op.axis.value.data
        return coords[:axis] + coords[axis + 1 :]
    if isinstance(op, tt.ReshapeOp):  # row-major: the flat index stays
        return coords_of(flat_of(coords, op.result.type.get_shape()), op.src.type.get_shape())
    if isinstance(op, tt.TransOp):  # result dim i is source dim order[i]
        src = [0] * len(coords)
        for i, d in enumerate(op.order.get_values()):
            src[d] = coords[i]
        return tuple(src)
    return coords


def _accepts(op) -> bool:
    src, dst = op.operands[0].type, op.results[0].type
    if not (isinstance(src, TensorType) and isinstance(dst, TensorType)):
        return False
    if ttg.encoding_of(src) is None or ttg.encoding_of(dst) is None:
        return False
    lay = layout_of_type(src)
    return not lay.lane and not lay.warp


def _permute(ctx, op):
    src_v, res = op.operands[0], op.results[0]
    src_lay, dst_lay = ctx.lay(src_v.type), ctx.lay(res.type)
    vec = as_vector(ctx, ctx.get(src_v), src_lay)
    picks = []
    for r in range(dst_lay.nregs):
        coords = _source_coords(op, coords_of(dst_lay.reg_flat[r], dst_lay.shape))
        picks.append(src_lay.reg_of_flat[flat_of(coords, src_lay.shape)])
    ctx.set(res, VTV(ctx, permute(ctx, vec, picks), dst_lay, res.type.element_type))


def rules() -> dict:
    out = {}
    for cls in (tt.BroadcastOp, tt.ExpandDimsOp, tt.ReshapeOp, tt.TransOp, ttg.ConvertLayoutOp):
        core = core_shape.RULES[cls]

        def lower(ctx, op, core=core):
            (_permute if _accepts(op) else core)(ctx, op)

        out[cls] = lower
    return out


__all__ = ["rules"]
