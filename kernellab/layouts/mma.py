"""NVIDIA tensor-core accumulator layouts: mma.sync m16n8 (MMA v2, Ampere) and wgmma (MMA v3,
Hopper), built from the one per-warp tile shape the PTX ISA documents for both.

Per warp, a tile of `rows x cols` (rows along `outer`, cols along `inner`) is held as:
k_width consecutive registers along inner, 4 lanes along inner, 8 lanes along outer, then
registers repeating rows/8 times along outer and cols/(4*k_width) times along inner. For the
m16n8 accumulator (k_width 2) that is PTX's fragment: row = lane/4 (+8 for c2, c3),
col = (lane%4)*2 + (i & 1).
"""

from __future__ import annotations

from collections.abc import Sequence

from kernellab.layouts.linear import LinearLayout, log2
from kernellab.layouts.named import NvidiaMma
from kernellab.layouts.tiling import empty_over, fit_to_shape, identity_1d, identity_nd, labelled


def warp_tile(
    rows: int, cols: int, k_width: int, inner: int, outer: int, rep_order
) -> LinearLayout:
    """One warp's registers and lanes over a rows x cols tile (see the module docstring)."""
    if rows % 8 or cols % (4 * k_width):
        raise ValueError(f"an mma tile of {rows}x{cols} does not fit k_width {k_width}")
    inner_name, outer_name = f"dim{inner}", f"dim{outer}"
    return (
        empty_over(rep_order)
        * identity_1d(k_width, "register", inner_name)
        * identity_1d(4, "lane", inner_name)
        * identity_1d(8, "lane", outer_name)
        * identity_1d(rows // 8, "register", outer_name)
        * identity_1d(cols // (4 * k_width), "register", inner_name)
    )


def warp_order(version_major: int, rank: int = 2) -> tuple[int, ...]:
    """Ampere numbers warps row-major (N first, a batch dim last); Hopper column-major, so
    that the four warps of a warp group stack along M as wgmma requires."""
    return tuple(reversed(range(rank))) if version_major == 2 else (0, 1)


def _check_warps(warps_per_cta: Sequence[int], ranks=(2,)) -> tuple[int, ...]:
    if len(warps_per_cta) not in ranks:
        raise ValueError(
            f"these MMA layouts have rank {' or '.join(map(str, ranks))}; got warps_per_cta "
            f"{list(warps_per_cta)}"
        )
    for w in warps_per_cta:
        log2(w, "warps_per_cta")
    return tuple(int(w) for w in warps_per_cta)


def _mma(record: NvidiaMma, rows: int, cols: int, shape: Sequence[int]) -> LinearLayout:
    rank = len(record.warps_per_cta)
    rep_order = tuple(reversed(range(rank)))  # N, then M, then the batch
    tile = warp_tile(rows, cols, 2, inner=rank - 1, outer=rank - 2, rep_order=rep_order)
    warps = identity_nd("warp", record.warps_per_cta, warp_order(record.version_major, rank))
    tile = tile * warps.transpose_outs(tile.out_dims)
    return labelled(fit_to_shape(tile, shape), record)


def mma_v2_instr_shape(rank: int) -> tuple[int, ...]:
    """instrShape of an MMA v2 layout: [16, 8], with a 1 for a leading batch dim."""
    return (1,) * (rank - 2) + (16, 8)


def nvidia_mma_v2(warps_per_cta: Sequence[int], shape: Sequence[int]) -> LinearLayout:
    """#ttg.nvidia_mma v2 (mma.sync m16n8kK accumulator) on `shape`, 2-D or batched 3-D (each
    batch element its own m16n8 tiles); repeats N, then M, then the batch."""
    warps = _check_warps(warps_per_cta, ranks=(2, 3))
    if len(shape) != len(warps):
        raise ValueError(
            f"an MMA v2 layout with warps_per_cta {list(warps)} needs rank {len(warps)}, got "
            f"shape {list(shape)}"
        )
    return _mma(NvidiaMma(2, warps, mma_v2_instr_shape(len(warps))), 16, 8, shape)


def nvidia_mma_v3(
    warps_per_cta: Sequence[int], instr_shape: Sequence[int], shape: Sequence[int]
) -> LinearLayout:
    """#ttg.nvidia_mma v3 (wgmma m64nNk accumulator): each warp 16 rows x N columns, warp
    groups of 4 warps stacked along M."""
    wm, _ = _check_warps(warps_per_cta)
    if wm % 4:
        raise ValueError(f"wgmma needs warps_per_cta[0] to be a multiple of 4, got {wm}")
    if len(instr_shape) != 3 or instr_shape[0] != 16 or instr_shape[1] % 8:
        raise ValueError(
            f"wgmma instr_shape must be [16, N, K] with N % 8 == 0, got {list(instr_shape)}"
        )
    return _mma(NvidiaMma(3, warps_per_cta, instr_shape), 16, int(instr_shape[1]), shape)
