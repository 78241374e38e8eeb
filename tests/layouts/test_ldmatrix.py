"""ldmatrix row addresses against the PTX ISA's ldmatrix semantics, and the swizzle chosen for
the ldmatrix access pattern."""

from __future__ import annotations

import pytest

from kernellab.layouts import (
    NvidiaMma,
    bank_conflicts,
    best_swizzle,
    dot_operand,
    ldmatrix_access,
    ldmatrix_rows,
    swizzled_shared,
)


def _operand(op_idx, warps, shape):
    return dot_operand(op_idx, NvidiaMma(2, warps, (16, 8)), 2, shape)


@pytest.mark.parametrize("op_idx", [0, 1])
@pytest.mark.parametrize("contiguous_dim", [0, 1])
@pytest.mark.parametrize("warps", [(1, 1), (2, 2), (1, 4), (4, 1)])
def test_ldmatrix_delivers_the_dot_operand_registers(op_idx, contiguous_dim, warps):
    """Simulate ldmatrix.x4 (lane 8j+i addresses row i of matrix j; lane t receives in register
    j elements 2(t%4), +1 of row t/4, or with .trans rows 2(t%4), +1 of column t/4) and
    compare with what the operand layout puts in registers (outer, j, pair element)."""
    shape = [64, 32] if op_idx == 0 else [32, 64]
    operand = _operand(op_idx, warps, shape)
    rows, trans = ldmatrix_rows(operand, op_idx, contiguous_dim)
    assert trans == (contiguous_dim != 1 - op_idx)  # A is K-contiguous plain, B N-contiguous .trans
    for warp in range(warps[0] * warps[1]):
        for outer in range(rows.num_registers):
            for t in range(32):
                for j in range(4):
                    for h in range(2):
                        if trans:
                            lane, along = 8 * j + 2 * (t % 4) + h, t // 4
                        else:
                            lane, along = 8 * j + t // 4, 2 * (t % 4) + h
                        got = list(rows.apply(register=outer, lane=lane, warp=warp))
                        got[contiguous_dim] += along
                        want = operand.apply(register=(outer << 3) | (j << 1) | h, lane=t, warp=warp)
                        assert tuple(got) == want


def test_ldmatrix_needs_four_matrices_and_16_bit_fragments():
    assert ldmatrix_rows(_operand(1, (1, 1), [16, 8]), 1, 1) is None  # one k16n8 tile: x2 only
    tf32 = dot_operand(0, NvidiaMma(2, (1, 1), (16, 8)), 1, [16, 16])
    assert ldmatrix_rows(tf32, 0, 1) is None


def test_the_swizzle_for_ldmatrix_is_conflict_free_where_the_plain_layout_is_not():
    operand = _operand(0, (2, 2), [64, 64])
    access = ldmatrix_access(operand, 0, 1)
    plain = swizzled_shared(1, 1, 1, [1, 0], [64, 64])
    assert bank_conflicts(access, plain, 2) == 8  # 8 rows of 128 bytes: one bank group
    shared, _ = best_swizzle([access], 2)
    assert bank_conflicts(access, shared, 2) == 1
    assert shared.encoding.vec >= 8  # rows of 8 elements stay contiguous for ldmatrix
