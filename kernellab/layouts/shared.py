"""Swizzled shared-memory layouts: in-dim `offset` (element offset in the buffer) -> tensor
coordinates.

Rows are stored along order[1], columns along order[0]. Element (row, col) lives at
row * cols + col', col' = ((col // vec) ^ phase) * vec + col % vec with
phase = (row // per_phase) % max_phase: consecutive rows start their vec-element chunks on
different banks. XOR with the phase is its own inverse, so the same formula maps an offset
back to its column, and since phase * vec only copies bits of row into bits of col, the map
is linear: row bit 2**k adds vec * ((2**k // per_phase) % max_phase) to the column.
max_phase = 1 gives the plain (unswizzled) row-major layout in `order`.
"""

from __future__ import annotations

from collections.abc import Sequence

from kernellab.layouts.linear import LinearLayout, log2
from kernellab.layouts.named import NvmmaShared, SwizzledShared
from kernellab.layouts.tiling import check_order, fit_to_shape, identity_1d, labelled

SHARED_IN_DIMS = ("offset", "block")


def swizzled_shared(
    vec: int, per_phase: int, max_phase: int, order: Sequence[int], shape: Sequence[int]
) -> LinearLayout:
    record = SwizzledShared(vec, per_phase, max_phase, order)
    for name in ("vec", "per_phase", "max_phase"):
        log2(getattr(record, name), name)
    rank = len(shape)
    check_order(record.order, rank)
    if rank == 1:
        tile = identity_1d(int(shape[0]), "offset", "dim0")
    else:
        col_dim, row_dim = record.order[0], record.order[1]
        cols, rows = int(shape[col_dim]), int(shape[row_dim])
        bases = [(0, 1 << i) for i in range(log2(cols, "shape"))]
        for i in range(log2(rows, "shape")):
            row = 1 << i
            bases.append((row, (vec * ((row // per_phase) % max_phase)) % cols))
        tile = LinearLayout({"offset": bases}, (rows, cols), (f"dim{row_dim}", f"dim{col_dim}"))
        for d in record.order[2:]:
            tile = tile * identity_1d(int(shape[d]), "offset", f"dim{d}")
    return labelled(fit_to_shape(tile, shape, SHARED_IN_DIMS), record)


def nvmma_swizzle(swizzle_bytes: int, element_bits: int) -> tuple[int, int, int, int]:
    """(elements per block row, vec, per_phase, max_phase) of an NVMMA layout: a block row is
    `swizzle_bytes` long, its 16-byte chunks XORed with (row / per_phase) % max_phase; these
    are the address bits the hardware's 128/64/32-byte swizzle modes XOR (bits 4-6 with 7-9)."""
    width = swizzle_bytes * 8 // element_bits
    vec = 128 // element_bits
    return width, vec, 128 // swizzle_bytes, swizzle_bytes // 16


def nvmma_shared(
    swizzle_bytes: int, element_bits: int, transposed: bool, shape: Sequence[int]
) -> LinearLayout:
    """#ttg.nvmma_shared: the contiguous dim (the last if not `transposed`, else the one before
    it) cut into blocks of `swizzle_bytes`; a block holds every row (the other of the last two
    dims), each row swizzled as nvmma_swizzle says; blocks follow each other. Leading dims
    (a 3-D TMA tile's, a ring's) stack whole 2-D tiles, outermost last."""
    record = NvmmaShared(swizzle_bytes, element_bits, bool(transposed))
    rank = len(shape)
    if rank < 2:
        raise ValueError(f"nvmma_shared layouts have at least 2 dims; got shape {list(shape)}")
    col_dim, row_dim = (rank - 2, rank - 1) if transposed else (rank - 1, rank - 2)
    cols, rows = int(shape[col_dim]), int(shape[row_dim])
    width, vec, per_phase, max_phase = nvmma_swizzle(swizzle_bytes, element_bits)
    width = min(width, cols)
    bases = [(0, 1 << i) for i in range(log2(width, "shape"))]
    for i in range(log2(rows, "shape")):
        row = 1 << i
        bases.append((row, (vec * ((row // per_phase) % max_phase)) % width))
    bases += [(0, width << j) for j in range(log2(cols // width, "shape"))]
    tile = LinearLayout({"offset": bases}, (rows, cols), (f"dim{row_dim}", f"dim{col_dim}"))
    for d in reversed(range(rank - 2)):
        tile = tile * identity_1d(int(shape[d]), "offset", f"dim{d}")
    return labelled(fit_to_shape(tile, shape, SHARED_IN_DIMS), record)
