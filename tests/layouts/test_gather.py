"""The warp-local gather's shuffle plan, checked against a brute-force walk over every result
element, every index value and every thread."""

import itertools

import numpy as np
import pytest

from kernellab.layouts import blocked
from kernellab.layouts.gather import MAX_CANDIDATES, shuffle_plan, source_flat


def _flat(coords, shape):
    return int(np.ravel_multi_index(tuple(coords), tuple(shape)))


def _parity(x):
    return bin(x).count("1") & 1


def _holder(layout, shape, flat, warp, lanes, regs):
    """Every (register, lane) of `warp` holding flat element `flat` under `layout`."""
    return {
        (r, lane)
        for r in range(regs)
        for lane in range(lanes)
        if _flat(layout.apply(register=r, lane=lane, warp=warp), shape) == flat
    }


def _check_plan(src, res, axis):
    """For every result element each thread holds and every index value: the lane and the
    register the plan computes (among its candidates) hold the source element, in that warp."""
    plan = shuffle_plan(src, res, axis)
    assert plan is not None
    src_shape, res_shape = src.out_shape, res.out_shape
    regs, lanes, warps = res.num_registers, res.num_lanes, res.num_warps
    src_regs = src.num_registers
    for w, lane, r in itertools.product(range(warps), range(lanes), range(regs)):
        res_flat = _flat(res.apply(register=r, lane=lane, warp=w), res_shape)
        candidates = plan.candidates(_flat(res.apply(register=r), res_shape))
        assert len(candidates) <= MAX_CANDIDATES
        for index in range(src_shape[axis]):
            f = source_flat(res_flat, index, src_shape, res_shape, axis)
            src_lane = sum(_parity(f & m) << j for j, m in enumerate(plan.lane_masks))
            src_reg = sum(_parity(f & m) << j for j, m in enumerate(plan.register_masks))
            assert src_reg in candidates
            assert src_reg < src_regs
            assert _flat(src.apply(register=src_reg, lane=src_lane, warp=w), src_shape) == f


CASES = [  # src layout params, src shape, index shape, axis
    (((1, 4), (4, 8), (4, 1), (1, 0)), (16, 32), (16, 32), 1),  # fp32 rows loaded 4-wide
    (((1, 1), (1, 32), (4, 1), (1, 0)), (16, 64), (16, 64), 1),  # two registers per row
    (((1, 2), (2, 16), (2, 1), (1, 0)), (4, 64), (4, 32), 1),  # index narrower than the source
    (((1, 1), (2, 16), (1, 1), (1, 0)), (2, 16), (2, 16), 1),  # fewer elements than threads
    (((2, 1), (16, 2), (1, 4), (0, 1)), (32, 8), (16, 8), 0),  # column gathers, lanes along dim 0
    (((1, 1, 4), (1, 4, 8), (2, 1, 1), (2, 1, 0)), (4, 4, 32), (4, 4, 32), 2),
]


@pytest.mark.parametrize(("params", "src_shape", "index_shape", "axis"), CASES)
def test_the_plan_finds_every_source_element(params, src_shape, index_shape, axis):
    _check_plan(blocked(*params, src_shape), blocked(*params, index_shape), axis)


def test_too_many_candidate_registers_has_no_plan():
    """Eight registers of each row per thread: eight shuffles per element cost more than
    shared memory."""
    layout = (1, 8), (1, 32), (4, 1), (1, 0)
    assert shuffle_plan(blocked(*layout, (4, 256)), blocked(*layout, (4, 256)), 1) is None
    assert MAX_CANDIDATES == 4


def test_warps_along_the_axis_have_no_plan():
    layout = (1, 2), (2, 16), (1, 2), (1, 0)
    assert shuffle_plan(blocked(*layout, (4, 64)), blocked(*layout, (4, 32)), 1) is None


def test_a_default_layout_that_splits_the_axis_over_warps_has_no_plan():
    """Triton's default layout for 16x32 with 4 warps puts warps along dim 0: a gather along
    dim 0 must then read other warps' elements."""
    default = blocked((1, 1), (1, 32), (4, 1), (1, 0), (16, 32))
    assert shuffle_plan(default, default, 0) is None


def test_a_default_layout_can_already_be_warp_local():
    """The same layout gathers along dim 1 within each warp: every row is in one warp's lanes."""
    default = blocked((1, 1), (1, 32), (4, 1), (1, 0), (16, 32))
    _check_plan(default, blocked((1, 1), (1, 32), (4, 1), (1, 0), (16, 8)), 1)


def test_index_in_another_layout_than_the_source():
    """Lanes along the axis in the source, registers along it in the index: still warp-local,
    each thread choosing among the source's registers along the axis."""
    src = blocked((1, 2), (2, 16), (4, 1), (1, 0), (8, 32))
    res = blocked((1, 4), (4, 8), (2, 2), (1, 0), (8, 32))
    assert shuffle_plan(src, res, 1) is None  # res splits rows over warps differently
    res = blocked((4, 1), (8, 4), (1, 4), (0, 1), (8, 32))
    assert shuffle_plan(src, res, 1) is None
    res = blocked((1, 4), (2, 16), (4, 1), (1, 0), (8, 64))
    _check_plan(src, res, 1)
