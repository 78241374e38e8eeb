"""Blocked and slice layouts against the seed example and a naive reference."""

from __future__ import annotations

import itertools
import math

import pytest

from kernellab.layouts import blocked, describe_blocked, max_contiguous_registers, slice_layout

from .reference import blocked_coords, blocked_registers


def test_seed_example_thread_ownership():
    layout = blocked([1, 8], [8, 4], [8, 1], [1, 0], [128, 32])
    assert (layout.num_registers, layout.num_lanes, layout.num_warps) == (16, 32, 8)
    t0 = layout.coords_of_thread(lane=0, warp=0)
    assert t0 == [(0, c) for c in range(8)] + [(64, c) for c in range(8)]
    assert layout.coords_of_thread(lane=1, warp=0)[:8] == [(0, c) for c in range(8, 16)]
    assert layout.coords_of_thread(lane=3, warp=0)[:8] == [(0, c) for c in range(24, 32)]
    assert layout.coords_of_thread(lane=4, warp=0)[0] == (1, 0)
    assert layout.coords_of_thread(lane=0, warp=1)[0] == (8, 0)
    assert layout.coords_of_thread(lane=31, warp=7)[-1] == (64 + 63, 31)
    assert layout.free_variable_masks() == {"register": 0, "lane": 0, "warp": 0, "block": 0}
    assert max_contiguous_registers(layout, 1) == 8
    assert max_contiguous_registers(layout, [0, 1]) == 1
    assert describe_blocked([1, 8], [8, 4], [8, 1], [1, 0]) == (
        "#ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [8, 1], order = [1, 0]}>"
    )
    assert str(layout.encoding) == describe_blocked([1, 8], [8, 4], [8, 1], [1, 0])


def test_seed_example_as_table():
    layout = blocked([1, 8], [8, 4], [8, 1], [1, 0], [128, 32])
    table = layout.as_table()
    assert table.shape == (16, 32, 8)
    assert sorted(table.ravel().tolist()) == list(range(128 * 32))  # every element exactly once
    assert table[9, 1, 2] == (64 + 16) * 32 + 8 + 1


def _random_blocked_params(rng, rank):
    spt = [int(2 ** rng.integers(0, 3)) for _ in range(rank)]
    lane_bits = rng.multinomial(5, [1 / rank] * rank)
    warp_bits = rng.multinomial(int(rng.integers(0, 4)), [1 / rank] * rank)
    tpw = [int(2**b) for b in lane_bits]
    wpc = [int(2**b) for b in warp_bits]
    order = [int(d) for d in rng.permutation(rank)]
    shape = [int(2 ** rng.integers(0, 6)) for _ in range(rank)]
    return spt, tpw, wpc, order, shape


@pytest.mark.parametrize("rank", [1, 2, 3])
def test_blocked_matches_the_naive_definition(rng, rank):
    for _ in range(25):
        spt, tpw, wpc, order, shape = _random_blocked_params(rng, rank)
        layout = blocked(spt, tpw, wpc, order, shape)
        assert layout.out_shape == tuple(shape)
        assert layout.num_registers == blocked_registers(spt, tpw, wpc, shape)
        table = layout.table_by_dim(("register", "lane", "warp"))
        for r, l, w in itertools.product(
            range(layout.num_registers), range(math.prod(tpw)), range(math.prod(wpc))
        ):
            expected = blocked_coords(spt, tpw, wpc, order, shape, r, l, w)
            got = tuple(int(t[r, l, w]) for t in table)
            assert got == expected, (spt, tpw, wpc, order, shape, r, l, w)


def test_smaller_tensor_broadcasts_lanes_and_warps():
    layout = blocked([1], [32], [4], [0], [64])
    assert layout.num_registers == 1
    assert layout.bases["warp"] == ((32,), (0,))
    assert layout.free_variable_masks()["warp"] == 0b10
    assert (
        layout.coords_of_thread(lane=5, warp=2) == layout.coords_of_thread(lane=5, warp=0) == [(5,)]
    )
    # more elements per thread than the tensor has: registers duplicate, not disappear
    tiny = blocked([4], [32], [1], [0], [2])
    assert tiny.num_registers == 4
    assert tiny.coords_of_thread(0) == [(0,), (1,), (0,), (1,)]


def test_larger_tensor_repeats_fastest_dim_first():
    layout = blocked([1, 1], [4, 8], [1, 1], [1, 0], [8, 16])
    assert layout.bases["register"] == ((0, 8), (4, 0))
    col_major = blocked([1, 1], [4, 8], [1, 1], [0, 1], [8, 16])
    assert col_major.bases["register"] == ((4, 0), (0, 8))


def test_slice_of_seed_example():
    parent = blocked([1, 8], [8, 4], [8, 1], [1, 0], [128, 32])
    rows = slice_layout(parent, 1)
    assert rows.out_shape == (128,)
    assert rows.num_registers == 2  # the 8 column registers collapse; the repetition stays
    assert rows.coords_of_thread(0) == [(0,), (64,)]
    assert rows.coords_of_thread(4) == [(1,), (65,)]
    assert rows.free_variable_masks()["lane"] == 0b11  # 4 lanes share each row
    assert str(rows.encoding).startswith("#ttg.slice<{dim = 1, parent = #ttg.blocked<{")
    cols = slice_layout(parent, 0)
    assert cols.out_shape == (32,)
    assert cols.bases["register"] == ((1,), (2,), (4,))
    assert cols.free_variable_masks() == {"register": 0, "lane": 0b11100, "warp": 0b111, "block": 0}


@pytest.mark.parametrize("rank", [2, 3])
def test_slice_keeps_each_threads_projected_elements(rng, rank):
    for _ in range(15):
        spt, tpw, wpc, order, shape = _random_blocked_params(rng, rank)
        dim = int(rng.integers(0, rank))
        parent_shape = list(shape)
        parent_shape[dim] = int(2 ** rng.integers(0, 4))
        parent = blocked(spt, tpw, wpc, order, parent_shape)
        sliced = slice_layout(parent, dim)
        for l, w in itertools.product(range(math.prod(tpw)), range(math.prod(wpc))):
            held = {
                tuple(c for i, c in enumerate(x) if i != dim) for x in parent.coords_of_thread(l, w)
            }
            assert set(sliced.coords_of_thread(l, w)) == held
        # no register is all-zero unless it is register 0 of a one-register layout
        assert all(any(b) for b in sliced.bases["register"])
        # the parent's size along the sliced dim does not matter
        parent_shape[dim] = 1
        assert slice_layout(blocked(spt, tpw, wpc, order, parent_shape), dim).equivalent(sliced)


def test_bad_parameters_are_rejected():
    with pytest.raises(ValueError, match="power of two"):
        blocked([3, 1], [8, 4], [1, 1], [1, 0], [16, 16])
    with pytest.raises(ValueError, match="permutation"):
        blocked([1, 1], [8, 4], [1, 1], [1, 1], [16, 16])
    with pytest.raises(ValueError, match="rank"):
        blocked([1], [8, 4], [1, 1], [1, 0], [16, 16])
