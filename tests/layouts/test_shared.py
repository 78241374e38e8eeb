"""Swizzled shared layouts and bank-conflict counting."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from kernellab.layouts import (
    LinearLayout,
    analyze,
    bank_conflicts,
    bank_map,
    blocked,
    nvidia_mma_v2,
    swizzled_shared,
)

from .reference import bank_ways, swizzled_offset


@pytest.mark.parametrize("order", [[1, 0], [0, 1]])
def test_swizzle_matches_the_xor_formula(rng, order):
    for _ in range(20):
        vec, per_phase, max_phase = (int(2 ** rng.integers(0, 4)) for _ in range(3))
        shape = [int(2 ** rng.integers(0, 7)) for _ in range(2)]
        layout = swizzled_shared(vec, per_phase, max_phase, order, shape)
        assert layout.in_dims == ("offset", "block")
        col_dim, row_dim = order
        cols = shape[col_dim]
        inverse = layout.invert()  # bijective: every element has exactly one slot
        for coords in itertools.product(range(shape[0]), range(shape[1])):
            row, col = coords[row_dim], coords[col_dim]
            expected = swizzled_offset(row, col, vec, per_phase, max_phase, cols)
            assert inverse.apply(*coords) == (expected, 0), (vec, per_phase, max_phase, shape)


def test_known_small_swizzle_table():
    layout = swizzled_shared(1, 1, 4, [1, 0], [4, 4])
    table = layout.table(("offset",)).reshape(4, 4)  # slot -> flat coordinate
    rows, cols = np.divmod(table, 4)
    np.testing.assert_array_equal(rows, np.repeat(np.arange(4), 4).reshape(4, 4))
    np.testing.assert_array_equal(cols, [[0, 1, 2, 3], [1, 0, 3, 2], [2, 3, 0, 1], [3, 2, 1, 0]])


def test_max_phase_one_is_row_major_in_order():
    layout = swizzled_shared(8, 4, 1, [0, 1], [8, 16])
    for offset in range(128):
        assert layout.apply(offset=offset) == (offset % 8, offset // 8)
    assert (
        str(layout.encoding)
        == "#ttg.swizzled_shared<{vec = 8, perPhase = 4, maxPhase = 1, order = [0, 1]}>"
    )


def test_column_access_of_f16_rows_conflicts_8_ways_unless_swizzled():
    # each lane reads 8 f16 (16 bytes) of its own row: one 128-byte row per lane
    column = blocked([1, 8], [32, 1], [1, 1], [1, 0], [32, 64])
    plain = swizzled_shared(1, 1, 1, [1, 0], [32, 64])
    swizzled = swizzled_shared(8, 1, 8, [1, 0], [32, 64])
    assert bank_conflicts(column, plain, 2) == 8
    assert bank_conflicts(column, swizzled, 2) == 1
    banks = bank_map(column, swizzled, 2)
    assert banks.shape == (32, 4)
    assert sorted(banks[:8].ravel().tolist()) == list(range(32))  # a quarter warp covers all banks
    # a row access (lanes along the row) is conflict-free either way
    row = blocked([1, 8], [4, 8], [1, 1], [1, 0], [32, 64])
    assert bank_conflicts(row, plain, 2) == bank_conflicts(row, swizzled, 2) == 1


def test_f32_column_access_is_32_way_and_broadcast_is_free():
    # lane l holds row l; its registers step along the row two columns apart (no vectors)
    column = LinearLayout(
        {
            "register": [(0, 2), (0, 4), (0, 8), (0, 16), (0, 1)],
            "lane": [(1 << i, 0) for i in range(5)],
        },
        (32, 32),
    )
    plain = swizzled_shared(1, 1, 1, [1, 0], [32, 32])
    assert bank_conflicts(column, plain, 4) == 32
    assert bank_conflicts(column, swizzled_shared(1, 1, 32, [1, 0], [32, 32]), 4) == 1
    # every lane reading the same element is a broadcast
    same = blocked([1, 1], [1, 32], [1, 1], [1, 0], [1, 1])
    assert bank_conflicts(same, swizzled_shared(1, 1, 1, [1, 0], [1, 1]), 4) == 1


def _brute_conflicts(reg, shared, elem_bytes, warp=0):
    inverse = shared.invert()
    slot = {}
    for r in range(reg.num_registers):
        for lane in range(reg.num_lanes):
            slot[r, lane] = inverse.apply(*reg.apply(register=r, lane=lane, warp=warp))[0]

    def contiguous(vec):
        return all(
            slot[start + v, lane] == slot[start, lane] + v and slot[start, lane] % vec == 0
            for start in range(0, reg.num_registers, vec)
            for v in range(vec)
            for lane in range(reg.num_lanes)
        )

    vec = 1
    while vec * 2 * elem_bytes <= 16 and vec * 2 <= reg.num_registers and contiguous(vec * 2):
        vec *= 2
    worst = 0
    for start in range(0, reg.num_registers, vec):
        addresses = [slot[start, lane] * elem_bytes for lane in range(reg.num_lanes)]
        worst = max(worst, bank_ways(addresses, vec * elem_bytes))
    return vec, worst


@pytest.mark.parametrize("elem_bytes", [1, 2, 4, 8])
def test_bank_conflicts_match_a_brute_force_count(rng, elem_bytes):
    shape = [32, 64]
    for _ in range(12):
        spt = [1, int(2 ** rng.integers(0, 4))]
        lane_bits = int(rng.integers(0, 6))
        tpw = [2 ** (5 - lane_bits), 2**lane_bits]
        order = [1, 0] if rng.random() < 0.7 else [0, 1]
        reg = blocked(spt, tpw, [1, 1], order, shape)
        vec, per_phase, max_phase = (int(2 ** rng.integers(0, 4)) for _ in range(3))
        shared = swizzled_shared(vec, per_phase, max_phase, [1, 0], shape)
        access = analyze(reg, shared, elem_bytes)
        expected_vec, expected = _brute_conflicts(reg, shared, elem_bytes)
        assert access.vec == expected_vec
        assert access.max_ways == expected, (spt, tpw, order, vec, per_phase, max_phase)


def test_mma_accumulator_store_needs_a_swizzle():
    acc = nvidia_mma_v2([1, 1], [16, 64])
    plain = swizzled_shared(1, 1, 1, [1, 0], [16, 64])
    assert bank_conflicts(acc, plain, 2) == 8  # 8 rows of 128 bytes, all on banks 0..3
    assert bank_conflicts(acc, swizzled_shared(8, 1, 8, [1, 0], [16, 64]), 2) == 1
