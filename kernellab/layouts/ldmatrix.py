"""ldmatrix and stmatrix: which shared-memory rows each lane addresses when a warp loads a
16-bit MMA dot operand with ldmatrix.sync.aligned.m8n8.x4, or stores a 16-bit MMA accumulator
with stmatrix.sync.aligned.m8n8.x4 (PTX ISA; 2-D, or batched 3-D: the same rows within each
batch element), as layouts.

ldmatrix.x4 loads four 8x8 matrices of 16-bit elements: lane 8j+i gives the address of row i
of matrix j (8 elements, 16 contiguous bytes), and register j of lane t receives elements
2(t%4), 2(t%4)+1 of row t/4 of matrix j; with .trans, rows 2(t%4), 2(t%4)+1 of column t/4.
In a dot-operand layout of 16-bit elements (kWidth 2) register bit 0 and lane bits 0-1 step
along one dim, lane bits 2-4 along the other, and register bits 1-2 pick four 8x8 blocks.
When the first three step along the buffer's contiguous dim, each of the 8 rows a lane group
addresses is 8 of its elements (plain ldmatrix); when lane bits 2-4 do, the rows are read
transposed (.trans). The lanes' row addresses form a distributed layout: lanes = 3
row-select bases then 2 matrix-select bases, registers = the operand's register bits above the
four matrices (one ldmatrix.x4 each), warps as the operand's.

stmatrix.x4 (sm_90) is the same exchange the other way: register j of lane t gives elements
2(t%4), 2(t%4)+1 of row t/4 of matrix j, lane 8j+i addresses row i of matrix j. An MMA v2 or
v3 accumulator of 16-bit elements (the epilogue's `acc.to(f16)`) has exactly a non-transposed
operand's fragment (register bit 0 and lane bits 0-1 along N, lane bits 2-4 along M, register
bits 1-2 the next 8 rows and columns), so stmatrix_rows is ldmatrix_rows along the last dim.

The same rows, with the 8 elements of each row as registers, are the access pattern the
shared layout of the operand's buffer (or a conversion's staging buffer) is chosen for
(best_swizzle): one rule for the layout the lowering reads and the swizzle the compiler picks.
"""

from __future__ import annotations

from kernellab.layouts.linear import LinearLayout


def ldmatrix_rows(
    operand: LinearLayout, op_idx: int, contiguous_dim: int
) -> tuple[LinearLayout, bool] | None:
    """(the row-address layout, .trans?) for loading the 16-bit dot operand `operand` (a
    kWidth-2 MMA v2 dot_operand layout) from a buffer whose `contiguous_dim` is contiguous, or
    None when ldmatrix.x4 cannot produce it (too few registers, rows not 16-byte aligned)."""
    rank = len(operand.out_shape)
    if rank not in (2, 3):
        return None
    reg = operand.bases.get("register", ())
    lane = operand.bases.get("lane", ())
    warp = operand.bases.get("warp", ())
    if len(reg) < 3 or len(lane) != 5:
        return None
    trans = contiguous_dim != (rank - 1 if op_idx == 0 else rank - 2)  # not along K
    pair_and_lanes = (reg[0], *lane[:2])
    row_elements = lane[2:] if trans else pair_and_lanes
    row_select = pair_and_lanes if trans else lane[2:]
    if list(row_elements) != _unit_steps(contiguous_dim, rank):
        return None
    if any(base[contiguous_dim] % 8 for base in (*row_select, *reg[1:], *warp)):
        return None
    rows = LinearLayout(
        {"register": reg[3:], "lane": (*row_select, *reg[1:3]), "warp": warp},
        operand.out_shape,
        operand.out_dims,
    )
    return rows, trans


def ldmatrix_access(operand: LinearLayout, op_idx: int, contiguous_dim: int) -> LinearLayout | None:
    """The ldmatrix reads as a register layout (each lane's 8-element row as registers, then
    the row-address layout's registers), for bank-conflict analysis; None if ldmatrix
    does not apply."""
    found = ldmatrix_rows(operand, op_idx, contiguous_dim)
    if found is None:
        return None
    rows = found[0].bases
    return LinearLayout(
        {
            "register": (*_unit_steps(contiguous_dim, len(operand.out_shape)), *rows["register"]),
            "lane": rows["lane"],
            "warp": rows["warp"],
        },
        operand.out_shape,
        operand.out_dims,
    )


def stmatrix_rows(fragment: LinearLayout) -> LinearLayout | None:
    """The row-address layout for storing the 16-bit `fragment` (an MMA accumulator, or any
    layout with its register/lane structure) with stmatrix.x4 into a buffer whose last dim is
    contiguous, or None when stmatrix.x4 cannot store it."""
    found = ldmatrix_rows(fragment, 0, len(fragment.out_shape) - 1)
    return None if found is None else found[0]


def stmatrix_access(fragment: LinearLayout) -> LinearLayout | None:
    """stmatrix's writes as a register layout (each lane's 8-element row as registers), for
    choosing the staging buffer's swizzle; None if stmatrix does not apply."""
    return ldmatrix_access(fragment, 0, len(fragment.out_shape) - 1)


def _unit_steps(dim: int, rank: int) -> list[tuple[int, ...]]:
    return [tuple(1 << i if d == dim else 0 for d in range(rank)) for i in range(3)]
