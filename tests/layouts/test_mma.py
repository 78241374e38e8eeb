"""MMA accumulator and dot-operand layouts against the PTX ISA's fragment layouts."""

from __future__ import annotations

import itertools

import pytest

from kernellab.layouts import (
    NvidiaMma,
    blocked,
    dot_operand,
    max_contiguous_registers,
    nvidia_mma_v2,
    nvidia_mma_v3,
)


def ptx_m16n8_accumulator(lane: int, i: int) -> tuple[int, int]:
    """PTX ISA, mma.m16n8k*: c0..c3 at row groupID (+8 for c2, c3), col 2*threadID_in_group + (i & 1)."""
    return lane // 4 + 8 * (i >> 1), (lane % 4) * 2 + (i & 1)


def test_mma_v2_single_warp_is_the_ptx_accumulator_fragment():
    layout = nvidia_mma_v2([1, 1], [16, 8])
    assert layout.num_registers == 4
    for lane, i in itertools.product(range(32), range(4)):
        assert layout.apply(register=i, lane=lane) == ptx_m16n8_accumulator(lane, i)
    assert max_contiguous_registers(layout, 1) == 2


@pytest.mark.parametrize("warps", [(1, 1), (2, 2), (4, 1), (1, 4), (4, 2)])
@pytest.mark.parametrize("shape", [(64, 64), (128, 32), (32, 128)])
def test_mma_v2_warps_and_repetitions(warps, shape):
    wm, wn = warps
    layout = nvidia_mma_v2(warps, shape)
    M, N = shape
    reps_m, reps_n = max(1, M // (16 * wm)), max(1, N // (8 * wn))
    assert layout.num_registers == 4 * reps_m * reps_n
    for r, lane, w in itertools.product(range(layout.num_registers), range(32), range(wm * wn)):
        i, rep = r % 4, r // 4
        rep_n, rep_m = rep % reps_n, rep // reps_n  # repetitions walk N first
        warp_m, warp_n = w // wn, w % wn  # Ampere numbers warps row-major
        row, col = ptx_m16n8_accumulator(lane, i)
        expected = (
            (rep_m * 16 * wm + warp_m * 16 + row) % M,
            (rep_n * 8 * wn + warp_n * 8 + col) % N,
        )
        assert layout.apply(register=r, lane=lane, warp=w) == expected


@pytest.mark.parametrize("warps", [(4, 1), (8, 1), (4, 2)])
@pytest.mark.parametrize("n", [16, 64, 128])
def test_mma_v3_is_the_wgmma_accumulator_fragment(warps, n):
    wm, wn = warps
    shape = (16 * wm, n * wn)
    layout = nvidia_mma_v3(warps, [16, n, 16], shape)
    assert layout.num_registers == n // 2
    for i, lane, w in itertools.product(range(n // 2), range(32), range(wm * wn)):
        warp_m, warp_n = w % wm, w // wm  # column-major: warp groups stack along M
        expected = (
            warp_m * 16 + lane // 4 + 8 * ((i >> 1) & 1),
            warp_n * n + (lane % 4) * 2 + (i & 1) + 8 * (i >> 2),
        )
        assert layout.apply(register=i, lane=lane, warp=w) == expected
    assert "versionMajor = 3" in str(layout.encoding) and f"instrShape = [16, {n}, 16]" in str(
        layout.encoding
    )


def test_mma_v3_rejects_warps_that_are_not_warp_groups():
    with pytest.raises(ValueError, match="multiple of 4"):
        nvidia_mma_v3([2, 2], [16, 64, 16], [64, 64])


def test_dot_operand_a_f16_is_the_ptx_m16n8k16_fragment():
    a = dot_operand(0, NvidiaMma(2, (1, 1), (16, 8)), 2, [16, 16])
    assert a.num_registers == 8
    for lane, i in itertools.product(range(32), range(8)):
        # a0,a1: (g, 2t + i); a2,a3: row + 8; a4..a7: col + 8
        expected = (lane // 4 + 8 * ((i >> 1) & 1), (lane % 4) * 2 + (i & 1) + 8 * (i >> 2))
        assert a.apply(register=i, lane=lane) == expected


def test_dot_operand_b_f16_is_the_ptx_m16n8k16_fragment():
    b = dot_operand(1, NvidiaMma(2, (1, 1), (16, 8)), 2, [16, 8])
    assert b.num_registers == 4
    for lane, i in itertools.product(range(32), range(4)):
        # b0,b1: (k = 2t + i, n = g); b2,b3: k + 8
        assert b.apply(register=i, lane=lane) == (
            (lane % 4) * 2 + (i & 1) + 8 * (i >> 1),
            lane // 4,
        )


def test_dot_operand_a_int8_is_the_ptx_m16n8k32_fragment():
    a = dot_operand(0, NvidiaMma(2, (1, 1), (16, 8)), 4, [16, 32])
    for lane, i in itertools.product(range(32), range(16)):
        expected = (lane // 4 + 8 * ((i >> 2) & 1), (lane % 4) * 4 + (i & 3) + 16 * (i >> 3))
        assert a.apply(register=i, lane=lane) == expected


def test_dot_operand_a_tf32_is_the_ptx_m16n8k8_fragment():
    a = dot_operand(0, NvidiaMma(2, (1, 1), (16, 8)), 1, [16, 8])
    for lane in range(32):
        g, t = lane // 4, lane % 4
        assert a.coords_of_thread(lane) == [(g, t), (g + 8, t), (g, t + 4), (g + 8, t + 4)]


def test_dot_operands_duplicate_across_the_other_operands_warps():
    mma = nvidia_mma_v2([2, 2], [64, 64])
    a = dot_operand(0, mma, 2, [64, 32])
    b = dot_operand(1, mma, 2, [32, 64])
    # warp bit 0 moves along N in the accumulator: A does not care, B does
    assert a.free_variable_masks()["warp"] == 0b01
    assert b.free_variable_masks()["warp"] == 0b10
    for lane in range(32):
        assert a.coords_of_thread(lane, 0) == a.coords_of_thread(lane, 1)
        assert b.coords_of_thread(lane, 0) == b.coords_of_thread(lane, 2)
    # the accumulator rows a warp computes are the A rows it holds
    for w in range(4):
        acc_rows = {c[0] for l in range(32) for c in mma.coords_of_thread(l, w)}
        a_rows = {c[0] for l in range(32) for c in a.coords_of_thread(l, w)}
        assert acc_rows == a_rows
    # repetitions go along K first
    assert a.bases["register"][3] == (0, 16)


def test_dot_operand_for_a_blocked_parent_gives_each_thread_all_of_k():
    parent = blocked([2, 2], [4, 8], [2, 2], [1, 0], [64, 64])
    a = dot_operand(0, parent, 0, [64, 16])
    b = dot_operand(1, parent, 0, [16, 64])
    assert str(a.encoding) == "#ttg.dot_op<{opIdx = 0, parent = " + str(parent.encoding) + "}>"
    for lane, w in itertools.product(range(32), range(4)):
        acc = parent.coords_of_thread(lane, w)
        rows, cols = {m for m, _ in acc}, {n for _, n in acc}
        assert set(a.coords_of_thread(lane, w)) == {(m, k) for m in rows for k in range(16)}
        assert set(b.coords_of_thread(lane, w)) == {(k, n) for k in range(16) for n in cols}
    with pytest.raises(ValueError, match="shared memory"):
        dot_operand(1, nvidia_mma_v3([4, 1], [16, 64, 16], [64, 64]), 2, [16, 64])
