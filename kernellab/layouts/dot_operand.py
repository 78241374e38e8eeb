"""Dot-operand layouts: how the A (op_idx 0, M x K) and B (op_idx 1, K x N) operands of a dot
are spread over threads, given the layout of the dot's result (the parent).

MMA parents: the per-warp tile is the PTX ISA fragment of mma.sync m16n8k(8*k_width/...):
A is 16 x (8*k_width), B is (8*k_width) x 8, each thread holding k_width consecutive K
elements per register group (k_width = 32 bits / element bits for mma.sync). Warps are those
of the accumulator with the warps along K made duplicates; repetitions go K first.

Blocked parent (the FMA dot, what kernellab lowers tl.dot to): each thread needs the whole K
extent of its rows (A) or columns (B) to run its multiply-add loop, so the operand is the
parent layout with size_per_thread along K widened to all of K and the lanes and warps that
the parent spread along that dim turned into duplicates.
"""

from __future__ import annotations

from collections.abc import Sequence

from kernellab.layouts.linear import LinearLayout
from kernellab.layouts.mma import warp_order, warp_tile
from kernellab.layouts.named import Blocked, DotOperand, NvidiaMma
from kernellab.layouts.tiling import (
    empty_over,
    fit_to_shape,
    identity_1d,
    identity_nd,
    labelled,
    zeros_1d,
)


def _broadcast_along(in_dim: str, sizes: Sequence[int], order: Sequence[int], k_dim: int):
    """Identity over `sizes` in `order`, except that indices along k_dim hold duplicates."""
    layout = empty_over(order, in_dim)
    for d in order:
        make = zeros_1d if d == k_dim else identity_1d
        layout = layout * make(sizes[d], in_dim, f"dim{d}")
    return layout


def _mma_operand(op_idx: int, mma: NvidiaMma, k_width: int, shape) -> LinearLayout:
    if op_idx == 1 and mma.version_major == 3:
        raise ValueError("wgmma reads operand B from shared memory; it has no register layout")
    if k_width < 1 or k_width & (k_width - 1):
        raise ValueError(f"k_width must be a power of two >= 1 for an MMA parent, got {k_width}")
    rank = len(shape)
    k_dim = rank - 1 if op_idx == 0 else rank - 2
    other = 2 * rank - 3 - k_dim  # the last two dims are M, K (A) or K, N (B)
    rows, cols = (16, 8 * k_width) if op_idx == 0 else (8, 8 * k_width)
    # rows are along the non-K dim (outer), cols along K (inner); K-fastest repetition, then
    # the other dim, then the batch
    rep_order = (k_dim, other, *reversed(range(rank - 2)))
    tile = warp_tile(rows, cols, k_width, inner=k_dim, outer=other, rep_order=rep_order)
    order = warp_order(mma.version_major, rank)
    warps = _broadcast_along("warp", mma.warps_per_cta, order, k_dim)
    return fit_to_shape(tile * warps.transpose_outs(tile.out_dims), shape)


def _fma_operand(op_idx: int, parent: Blocked, shape) -> LinearLayout:
    rank = len(shape)
    k_dim = rank - 1 if op_idx == 0 else rank - 2
    per_thread = list(parent.size_per_thread)
    per_thread[k_dim] = int(shape[k_dim])
    order = parent.order
    tile = (
        identity_nd("register", per_thread, order)
        * _broadcast_along("lane", parent.threads_per_warp, order, k_dim)
        * _broadcast_along("warp", parent.warps_per_cta, order, k_dim)
    )
    return fit_to_shape(tile, shape)


def dot_operand(op_idx: int, parent, k_width: int, shape: Sequence[int]) -> LinearLayout:
    """#ttg.dot_op<{opIdx, parent, kWidth}> on `shape`. `parent` is a NvidiaMma or Blocked
    record, or a LinearLayout built by nvidia_mma_v2/v3 or blocked (its .encoding is used)."""
    if isinstance(parent, LinearLayout):
        parent = parent.encoding
    if op_idx not in (0, 1):
        raise ValueError(f"op_idx must be 0 (A) or 1 (B), got {op_idx}")
    if isinstance(parent, NvidiaMma):
        if len(shape) != len(parent.warps_per_cta):
            raise ValueError(
                f"an MMA dot operand has its parent's rank {len(parent.warps_per_cta)}, got "
                f"shape {list(shape)}"
            )
        layout = _mma_operand(op_idx, parent, int(k_width), shape)
    elif isinstance(parent, Blocked):
        # rank 2 (M x K / K x N) or rank 3 with a leading batch dim (B x M x K / B x K x N)
        if len(shape) not in (2, 3) or len(parent.order) != len(shape):
            raise ValueError(
                f"an FMA dot operand needs rank 2 or 3 matching its blocked parent's rank "
                f"{len(parent.order)}, got shape {list(shape)}"
            )
        layout = _fma_operand(op_idx, parent, shape)
        k_width = 0
    else:
        raise TypeError(f"a dot operand's parent must be an MMA or blocked layout, got {parent!r}")
    return labelled(layout, DotOperand(op_idx, parent, int(k_width)))
