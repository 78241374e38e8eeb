"""Conversion plans: the kind is the cheapest that works, and the data says where each value
comes from. Checked against brute force over every element."""

from __future__ import annotations

import itertools

import pytest

from kernellab.layouts import blocked, conversion_plan, nvidia_mma_v2, slice_layout


def holders(layout):
    """coordinate -> set of (register, lane, warp) holding it."""
    table = {}
    for r, l, w in itertools.product(
        range(layout.num_registers), range(layout.num_lanes), range(layout.num_warps)
    ):
        table.setdefault(layout.apply(register=r, lane=l, warp=w), set()).add((r, l, w))
    return table


def cheapest_kind(src, dst):
    """The least data movement any lowering could get away with, by brute force."""
    held = holders(src)
    need = "registers"
    for r, l, w in itertools.product(
        range(dst.num_registers), range(dst.num_lanes), range(dst.num_warps)
    ):
        sources = held[dst.apply(register=r, lane=l, warp=w)]
        if any(sl == l and sw == w for _, sl, sw in sources):
            continue
        if any(sw == w for _, _, sw in sources):
            need = "shuffle" if need == "registers" else need
        else:
            return "shared"
    return need


def check_sources(plan):
    """Every destination value is found where the plan says."""
    src, dst = plan.src, plan.dst
    for r, l, w in itertools.product(
        range(dst.num_registers), range(dst.num_lanes), range(dst.num_warps)
    ):
        sr, sl = int(plan.src_register[r, l, w]), int(plan.src_lane[r, l, w])
        assert src.apply(register=sr, lane=sl, warp=w) == dst.apply(register=r, lane=l, warp=w)


def test_same_layout_is_a_noop():
    layout = blocked([1, 8], [8, 4], [8, 1], [1, 0], [128, 32])
    plan = conversion_plan(layout, blocked([1, 8], [8, 4], [8, 1], [1, 0], [128, 32]))
    assert plan.kind == "noop"
    assert plan.register_map == tuple(range(16))


def test_register_order_change_stays_in_registers():
    src = blocked([2, 2], [1, 32], [1, 1], [1, 0], [2, 64])
    dst = blocked([2, 2], [1, 32], [1, 1], [0, 1], [2, 64])
    plan = conversion_plan(src, dst)
    assert plan.kind == "registers"
    assert plan.register_map == (0, 2, 1, 3)
    check_sources(plan)


def test_different_size_per_thread_within_a_warp_shuffles():
    src = blocked([1], [32], [1], [0], [64])  # lane l: l, l + 32
    dst = blocked([2], [32], [1], [0], [64])  # lane l: 2l, 2l + 1
    plan = conversion_plan(src, dst)
    assert plan.kind == "shuffle"
    assert plan.register_map is None
    assert [int(x) for x in plan.src_lane[:, 20, 0]] == [8, 9]
    assert [int(x) for x in plan.src_register[:, 20, 0]] == [1, 1]
    check_sources(plan)


def test_transposed_order_goes_through_shared_memory():
    src = blocked([1, 4], [8, 4], [4, 1], [1, 0], [32, 32])
    dst = blocked([4, 1], [4, 8], [1, 4], [0, 1], [32, 32])
    plan = conversion_plan(src, dst, elem_bytes=2)
    assert plan.kind == "shared"
    assert plan.scratch_elements == 32 * 32
    assert plan.shared.out_shape == (32, 32)
    assert plan.swizzle is not None and str(plan.swizzle).startswith("#ttg.swizzled_shared<{")
    assert "through shared memory" in str(plan)


def test_shared_plan_without_swizzle_search_keeps_kind_and_data():
    src = blocked([1, 4], [8, 4], [4, 1], [1, 0], [32, 32])
    dst = blocked([4, 1], [4, 8], [1, 4], [0, 1], [32, 32])
    plan = conversion_plan(src, dst, elem_bytes=2, suggest_swizzle=False)
    assert plan.kind == "shared" and plan.scratch_elements == 32 * 32
    assert plan.shared is None and plan.swizzle is None and plan.store is None
    assert str(plan) == "through shared memory: 1024 elements staged"
    # the other kinds do not depend on the flag
    same = blocked([1, 4], [8, 4], [4, 1], [1, 0], [32, 32])
    assert conversion_plan(src, same, suggest_swizzle=False).kind == "noop"


def test_rank3_and_broadcast_sources_plan_in_registers_or_shuffles():
    # rank 3: the leading dim held in registers in one layout, the order swapped in the other
    src = blocked([2, 1, 4], [1, 8, 4], [1, 4, 1], [2, 1, 0], [2, 32, 16])
    dst = blocked([2, 1, 4], [1, 8, 4], [1, 4, 1], [0, 2, 1], [2, 32, 16])
    plan = conversion_plan(src, dst)
    assert plan.kind == "registers"
    for lane in (0, 5, 31):
        for warp in range(4):
            s, d = src.coords_of_thread(lane, warp), dst.coords_of_thread(lane, warp)
            assert [s[r] for r in plan.register_map] == d
    # a source broadcast over lanes (duplicated data): any holder will do, no shared memory
    bsrc = blocked([1, 4], [32, 1], [4, 1], [1, 0], [16, 4])  # lanes 16..31 repeat 0..15
    bdst = blocked([1, 1], [4, 8], [4, 1], [1, 0], [16, 4])
    bplan = conversion_plan(bsrc, bdst)
    assert bplan.kind == "shuffle"
    for lane in range(32):
        for warp in range(4):
            want = bdst.coords_of_thread(lane, warp)
            for r in range(bdst.num_registers):
                sl, sr = int(bplan.src_lane[r, lane, warp]), int(bplan.src_register[r, lane, warp])
                assert bsrc.coords_of_thread(sl, warp)[sr] == want[r]


def test_suggested_swizzle_beats_no_swizzle():
    acc = nvidia_mma_v2([2, 2], [64, 64])
    out = blocked([1, 8], [4, 8], [4, 1], [1, 0], [64, 64])
    plan = conversion_plan(acc, out, elem_bytes=2)
    assert plan.kind == "shared"
    assert plan.store.max_ways == 1 and plan.load.max_ways == 1


def test_slice_to_slice_conversions():
    wide = blocked([1, 1], [8, 4], [4, 1], [1, 0], [64, 32])
    rows = slice_layout(wide, 1)
    # 8 rows per warp vs 32 rows per warp: rows change warps
    assert (
        conversion_plan(
            rows, slice_layout(blocked([1, 1], [32, 1], [1, 4], [1, 0], [64, 32]), 1)
        ).kind
        == "shared"
    )
    same_rows = slice_layout(blocked([1, 2], [8, 4], [4, 1], [1, 0], [64, 32]), 1)
    assert conversion_plan(rows, same_rows).kind == "noop"
    regrouped = slice_layout(blocked([1, 1], [8, 4], [4, 1], [0, 1], [64, 32]), 1)
    plan = conversion_plan(rows, regrouped)
    assert plan.kind == cheapest_kind(rows, regrouped)


def _random_layout(rng, shape, warps):
    rank = len(shape)
    spt = [int(2 ** rng.integers(0, 3)) for _ in range(rank)]
    tpw = [int(2**b) for b in rng.multinomial(5, [1 / rank] * rank)]
    wpc = [int(2**b) for b in rng.multinomial(warps, [1 / rank] * rank)]
    order = [int(d) for d in rng.permutation(rank)]
    return blocked(spt, tpw, wpc, order, shape)


@pytest.mark.parametrize("shape", [(16, 16), (8, 32), (64,)])
def test_random_conversions_pick_the_cheapest_kind(rng, shape):
    for _ in range(12):
        warps = int(rng.integers(0, 3))
        src, dst = _random_layout(rng, shape, warps), _random_layout(rng, shape, warps)
        if len(shape) == 2 and rng.random() < 0.3:
            dst = slice_layout(_random_layout(rng, (*shape, 4), warps), 2)
        plan = conversion_plan(src, dst, elem_bytes=4)
        expected = cheapest_kind(src, dst)
        if src.equivalent(dst):
            expected = "noop"
        assert plan.kind == expected
        if plan.kind != "shared":
            check_sources(plan)


def test_mismatched_layouts_are_rejected():
    a = blocked([1], [32], [4], [0], [128])
    with pytest.raises(ValueError, match="shapes"):
        conversion_plan(a, blocked([1], [32], [4], [0], [256]))
    with pytest.raises(ValueError, match="warps"):
        conversion_plan(a, blocked([1], [32], [2], [0], [128]))
