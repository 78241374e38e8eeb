"""Helpers the TTGIR passes share: Triton's blocked-layout builder, layout inference through
shape ops, inserting convert_layout, and which ops apply element by element.

`blocked_for(shape, size_per_thread, order, num_warps)` spreads the 32 lanes of a warp, then the
warps, over the dims fastest-first (`order[0]` first), giving each dim no more threads than it
has `size_per_thread` chunks; whatever lanes and warps are left go to the slowest dim (they then
hold duplicates when the tensor is too small). With size_per_thread all 1 and order = dims
reversed this is Triton's default encoding (getDefaultBlockedEncoding).
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute, Operation, SSAValue

from xdsl.rewriter import Rewriter

from kernellab.ir import arith, tt, ttg

# tt ops whose every result element comes from the operands' elements at the same position
ELEMENTWISE_TT_OPS = (
    tt.AddPtrOp, tt.IntToPtrOp, tt.PtrToIntOp, tt.BitcastOp, tt.FpToFpOp, tt.MulhiUIOp,
    tt.PreciseSqrtOp, tt.PreciseDivFOp, tt.ClampFOp, tt.ExternElementwiseOp,
)  # fmt: skip


def is_elementwise(op: Operation) -> bool:
    """arith/math ops (constants aside: they have no operands to follow) and ELEMENTWISE_TT_OPS."""
    return (
        op.name.startswith(("arith.", "math.")) and not isinstance(op, arith.ConstantOp)
    ) or isinstance(op, ELEMENTWISE_TT_OPS)


def blocked_for(
    shape: Sequence[int],
    size_per_thread: Sequence[int],
    order: Sequence[int],
    num_warps: int,
    threads_per_warp: int = 32,
) -> ttg.BlockedEncodingAttr:
    rank = len(shape)
    lanes, warps = [1] * rank, [1] * rank
    lanes_left, warps_left = threads_per_warp, num_warps
    for d in order[:-1]:
        chunks = max(1, shape[d] // size_per_thread[d])
        lanes[d] = min(chunks, lanes_left)
        lanes_left //= lanes[d]
        warps[d] = min(max(1, chunks // lanes[d]), warps_left)
        warps_left //= warps[d]
    lanes[order[-1]] = lanes_left
    warps[order[-1]] = warps_left
    return ttg.BlockedEncodingAttr(size_per_thread, lanes, warps, order)


def transposing_blocked(shape: Sequence[int], k_dim: int, num_warps: int) -> ttg.BlockedEncodingAttr:
    """A 2-D tile read MN-major (dim 1 - k_dim contiguous in global memory) and written
    K-major into an NVMMA buffer of 32-bit elements: one element per thread and access, each
    warp 2 along K by 16 along MN. One access then reads 2 lines of 64 contiguous bytes and
    writes 16 different banks twice (2 consecutive K of 16 consecutive lines, whose chunks the
    swizzle puts on 8 bank groups): a 2-way conflict, taken for half the lines of the
    conflict-free 4 x 8 (4 lines of 32 bytes), since the copies' global side is what they wait
    on: on an H200 (2026-11-28, tf32 4096^3, B row-major) 4 x 8 gave 219-221 TFLOP/s with
    128x256x32 tiles and 177 with 128x128x32 on 4 warps, 2 x 16 235-242 and 197-198 (1 x 32,
    one line and 4-way: 224-225 and 174-175). Warps go along K as far as it reaches, then along
    MN: a thread's elements along MN are then 16 apart, so several share one run of contiguous
    addresses, whose first pointer the copies offset by constants. A thread copying more than
    32 elements of the tile keeps 4 x 8, whose runs span half the rows: 2 x 16 left it twice the
    pointers across the loop, which spilled beside 128 accumulators (128x256x64 on 8 warps,
    180-182 TFLOP/s against 188-191)."""
    mn_dim = 1 - k_dim
    per_thread = shape[0] * shape[1] // (32 * num_warps)
    lanes_k = 2 if per_thread <= 32 else 4
    lanes, warps = [1, 1], [1, 1]
    lanes[k_dim], lanes[mn_dim] = lanes_k, 32 // lanes_k
    warps[k_dim] = max(1, min(num_warps, shape[k_dim] // lanes_k))
    warps[mn_dim] = num_warps // warps[k_dim]
    return ttg.BlockedEncodingAttr([1, 1], lanes, warps, [mn_dim, k_dim])


def default_blocked(shape: Sequence[int], num_warps: int, threads_per_warp: int = 32, elements_per_thread: int = 1):
    """Triton's default layout: one element per thread per step (or `elements_per_thread`
    consecutive ones, as far as the last dim has them), last dim fastest."""
    rank = len(shape)
    size = [1] * rank
    if rank:
        size[-1] = max(1, min(elements_per_thread, shape[-1]))
    return blocked_for(shape, size, list(reversed(range(rank))), num_warps, threads_per_warp)


def permuted(encoding: Attribute, order: Sequence[int]) -> Attribute | None:
    """The blocked encoding of tt.trans's result (result dim i = operand dim order[i])."""
    if not isinstance(encoding, ttg.BlockedEncodingAttr):
        return None
    inverse = [order.index(d) for d in range(len(order))]
    return ttg.BlockedEncodingAttr(
        [encoding.size_per_thread[d] for d in order],
        [encoding.threads_per_warp[d] for d in order],
        [encoding.warps_per_cta[d] for d in order],
        [inverse[d] for d in encoding.order],
    )


def retyped(t: Attribute, encoding: Attribute | None) -> Attribute:
    """`t` with `encoding` if `t` is a tensor type, else `t` unchanged."""
    return ttg.with_encoding(t, encoding) if isinstance(t, TensorType) else t


def convert_before(value: SSAValue, encoding: Attribute, op: Operation) -> SSAValue:
    """`value` in `encoding`: itself, or a new ttg.convert_layout inserted before `op`."""
    if ttg.encoding_of(value.type) == encoding:
        return value
    convert = ttg.ConvertLayoutOp(value, ttg.with_encoding(value.type, encoding))
    op.parent_block().insert_op_before(convert, op)
    return convert.result


def relayout(op: Operation, layout: ttg.BlockedEncodingAttr) -> bool:
    """Put the memory op `op` in `layout`: convert its tensor operands in, and its results back
    out for their users (False if it already was)."""
    if all(
        ttg.encoding_of(v.type) == layout for v in op.operands if isinstance(v.type, TensorType)
    ):
        return False
    for i, value in enumerate(op.operands):
        if isinstance(value.type, TensorType):
            op.operands[i] = convert_before(value, layout, op)
    for result in list(op.results):
        old = result.type
        new = Rewriter.replace_value_with_new_type(result, ttg.with_encoding(old, layout))
        back = ttg.ConvertLayoutOp(new, old)
        op.parent_block().insert_op_after(back, op)
        new.replace_uses_with_if(back.result, lambda use, back=back: use.operation is not back)
    return True
