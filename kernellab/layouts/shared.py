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
from kernellab.layouts.named import SwizzledShared
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
