"""Every mma.sync instruction tile of an MMA v2 accumulator or dot operand, in register order,
is the PTX ISA fragment (Matrix fragments for mma.m16n8k8/k16/k32): the MMA lowering passes a
tile's registers to mma.sync in register order, so a mismatch here is a wrong result there."""

from __future__ import annotations

import itertools

import pytest

from kernellab.layouts import NvidiaMma, dot_operand, nvidia_mma_v2


def isa_a(k_width: int, lane: int, i: int) -> tuple[int, int]:
    """A (16 x 8*k_width), element i of lane: row groupID (+8 for the second k_width-group of
    each register pair), col threadID_in_group*k_width + i%k_width (+4*k_width for the second
    half)."""
    g, t = lane // 4, lane % 4
    j = i // k_width
    return g + 8 * (j & 1), t * k_width + i % k_width + 4 * k_width * (j >> 1)


def isa_b(k_width: int, lane: int, i: int) -> tuple[int, int]:
    """B (8*k_width x 8): row (K) threadID_in_group*k_width + i%k_width (+4*k_width for the
    second register), col groupID."""
    g, t = lane // 4, lane % 4
    j = i // k_width
    return t * k_width + i % k_width + 4 * k_width * j, g


def isa_c(lane: int, i: int) -> tuple[int, int]:
    return lane // 4 + 8 * (i >> 1), (lane % 4) * 2 + (i & 1)


def _tiles(layout, tile):
    """register lists per instruction tile (as the lowering groups them: (batch,) row tile,
    column tile), warp 0 lane 0."""
    out = {}
    for r in range(layout.num_registers):
        *batch, row, col = layout.apply(register=r)
        out.setdefault((*batch, row // tile[0], col // tile[1]), []).append(r)
    return out


def _check(layout, tile, isa, fragment_size, warps):
    tiles = _tiles(layout, tile)
    for regs in tiles.values():
        assert len(regs) == fragment_size
        for w, lane in itertools.product(range(warps), range(32)):
            for i, r in enumerate(regs):
                *batch, row, col = layout.apply(register=r, lane=lane, warp=w)
                *base_batch, base_row, base_col = layout.apply(register=regs[0], warp=w)
                got = (row - (base_row // tile[0]) * tile[0], col - (base_col // tile[1]) * tile[1])
                assert got == isa(lane, i) and batch == base_batch, (r, lane, w, i)


K_WIDTHS = {1: 8, 2: 16, 4: 32}  # kWidth (tf32, 16-bit, 8-bit) -> instruction K


@pytest.mark.parametrize("k_width", sorted(K_WIDTHS))
@pytest.mark.parametrize("warps", [(1, 1), (2, 2), (4, 1), (1, 4)])
@pytest.mark.parametrize("shape", [(64, 64, 64), (32, 128, 32)])
def test_every_instruction_tile_is_the_isa_fragment(k_width, warps, shape):
    m, n, k = shape
    mma = NvidiaMma(2, warps, (16, 8))
    kk = K_WIDTHS[k_width]
    nwarps = warps[0] * warps[1]
    _check(nvidia_mma_v2(warps, [m, n]), (16, 8), isa_c, 4, nwarps)
    a = dot_operand(0, mma, k_width, [m, k])
    _check(a, (16, kk), lambda lane, i: isa_a(k_width, lane, i), 4 * k_width, nwarps)
    b = dot_operand(1, mma, k_width, [k, n])
    _check(b, (kk, 8), lambda lane, i: isa_b(k_width, lane, i), 2 * k_width, nwarps)


@pytest.mark.parametrize("k_width", sorted(K_WIDTHS))
@pytest.mark.parametrize("warps, batch", [(1, 2), (4, 8), (4, 2), (2, 1)])
def test_batched_tiles_are_the_isa_fragment_within_one_batch_element(k_width, warps, batch):
    """A 3-D dot's layouts (warps along the batch, as accelerate_matmul picks): every
    instruction tile lies in one batch element and is the PTX fragment there."""
    m, n, kk = 32, 16, K_WIDTHS[k_width]
    k = 2 * kk
    mma = NvidiaMma(2, (warps, 1, 1), (1, 16, 8))
    acc = nvidia_mma_v2(mma.warps_per_cta, [batch, m, n])
    _check(acc, (16, 8), isa_c, 4, warps)
    a = dot_operand(0, mma, k_width, [batch, m, k])
    _check(a, (16, kk), lambda lane, i: isa_a(k_width, lane, i), 4 * k_width, warps)
    b = dot_operand(1, mma, k_width, [batch, k, n])
    _check(b, (kk, 8), lambda lane, i: isa_b(k_width, lane, i), 2 * k_width, warps)
    # every element of every batch element is computed (more warps than batch elements: twice)
    owned = {acc.apply(register=r, lane=ln, warp=w)
             for r in range(acc.num_registers)
             for ln in range(32) for w in range(warps)}  # fmt: skip
    assert len(owned) == batch * m * n
    assert acc.num_registers * 32 * warps == batch * m * n * max(1, warps // batch)


def test_isa_formulas_match_the_documented_f16_cases():
    # PTX ISA m16n8k16 .f16: a0,a1 (g, 2t..), a2,a3 (g+8, ..), a4,a5 (g, 2t+8..), a6,a7 (g+8, 2t+8..)
    assert [isa_a(2, 5, i) for i in range(8)] == [
        (1, 2), (1, 3), (9, 2), (9, 3), (1, 10), (1, 11), (9, 10), (9, 11)
    ]  # fmt: skip
    # b0,b1 (2t.., g), b2,b3 (2t+8.., g); tf32 m16n8k8: a0 (g, t), a1 (g+8, t), a2 (g, t+4)
    assert [isa_b(2, 5, i) for i in range(4)] == [(2, 1), (3, 1), (10, 1), (11, 1)]
    assert [isa_a(1, 5, i) for i in range(4)] == [(1, 1), (9, 1), (1, 5), (9, 5)]
    assert [isa_b(1, 5, i) for i in range(2)] == [(1, 1), (5, 1)]
    # int8 m16n8k32: a0..a3 (g, 4t..), a4..a7 (g+8, ..), a8..a11 (g, 4t+16..); b0..b3 (4t.., g), b4..b7 (4t+16.., g)
    assert isa_a(4, 5, 9) == (1, 21) and isa_a(4, 5, 4) == (9, 4) and isa_b(4, 5, 5) == (21, 1)
