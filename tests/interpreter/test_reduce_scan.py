"""tt.reduce and tt.scan: recognised single-op regions, generic regions, argmax, scans."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from interp_helpers import poisoned, reduce_region, run, tile_io

P, R, C = 3, 8, 32


def reduce_body(region: str, t: str, axis: int, out_len: int) -> str:
    kept = R if axis == 1 else C
    return f"""%red = "tt.reduce"(%x) <{{axis = {axis} : i32}}> {region} : (tensor<{R}x{C}x{t}>) -> tensor<{kept}x{t}>
    %out = tt.reshape %red : tensor<{kept}x{t}> -> tensor<{out_len}x{t}>"""


def run_reduce(region, x, t, axis):
    kept = R if axis == 1 else C
    out = poisoned(P * kept, x.dtype)
    run(tile_io(t, R, C, t, kept, reduce_body(region, t, axis, kept)), [x.ravel(), out], (P,))
    return out.reshape(P, kept)


@pytest.mark.parametrize("axis", [0, 1])
def test_sum_and_max_over_an_axis(axis):
    x = np.random.default_rng().standard_normal((P, R, C), dtype=np.float32)
    np.testing.assert_allclose(run_reduce(reduce_region("addf", "f32"), x, "f32", axis),
                               x.astype(np.float64).sum(axis=axis + 1), rtol=1e-5, atol=1e-5)  # fmt: skip
    np.testing.assert_array_equal(run_reduce(reduce_region("maxnumf", "f32"), x, "f32", axis), x.max(axis=axis + 1))


def test_integer_reductions_wrap():
    x = np.random.default_rng().integers(-(2**31), 2**31, (P, R, C), dtype=np.int32)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(run_reduce(reduce_region("addi", "i32"), x, "i32", 1), x.sum(axis=2, dtype=np.int32))
    np.testing.assert_array_equal(run_reduce(reduce_region("xori", "i32"), x, "i32", 1), np.bitwise_xor.reduce(x, axis=2))
    umax = np.maximum.reduce(x.view(np.uint32), axis=2).view(np.int32)
    np.testing.assert_array_equal(run_reduce(reduce_region("maxui", "i32"), x, "i32", 1), umax)


def test_max_propagates_nan():
    x = np.random.default_rng().standard_normal((P, R, C), dtype=np.float32)
    x[0, 2, 5] = np.nan
    got = run_reduce(reduce_region("maximumf", "f32"), x, "f32", 1)
    np.testing.assert_array_equal(got, x.max(axis=2))
    assert np.isnan(got[0, 2])


GENERIC_SUM = """({
    ^bb0(%a: f32, %b: f32):
      %two = arith.constant 2.0 : f32
      %a2 = arith.mulf %a, %two : f32
      %s = arith.addf %a2, %b : f32
      %half = arith.constant 0.5 : f32
      %h = arith.mulf %s, %half : f32
      %hb = arith.mulf %b, %half : f32
      %r = arith.addf %h, %hb : f32
      tt.reduce.return %r : f32
    })"""


def test_generic_combine_region_is_evaluated():
    """A region the fast path does not recognise (a + b spelled out in many ops)."""
    x = np.random.default_rng().integers(-50, 50, (P, R, C)).astype(np.float32)  # exact in any order
    got = run_reduce(GENERIC_SUM, x, "f32", 1)
    np.testing.assert_array_equal(got, x.sum(axis=2))


def argmax_body(t="f32"):
    return f"""%idx1 = tt.make_range {{start = 0 : i32, end = {C} : i32}} : tensor<{C}xi32>
    %idx2 = tt.expand_dims %idx1 {{axis = 0 : i32}} : tensor<{C}xi32> -> tensor<1x{C}xi32>
    %idx = tt.broadcast %idx2 : tensor<1x{C}xi32> -> tensor<{R}x{C}xi32>
    %red:2 = "tt.reduce"(%x, %idx) <{{axis = 1 : i32}}> ({{
    ^bb0(%va: {t}, %ia: i32, %vb: {t}, %ib: i32):
      %gt = arith.cmpf ogt, %va, %vb : {t}
      %eq = arith.cmpf oeq, %va, %vb : {t}
      %lt = arith.cmpi slt, %ia, %ib : i32
      %tie = arith.andi %eq, %lt : i1
      %take = arith.ori %gt, %tie : i1
      %v = arith.select %take, %va, %vb : i1, {t}
      %i = arith.select %take, %ia, %ib : i1, i32
      tt.reduce.return %v, %i : {t}, i32
    }}) : (tensor<{R}x{C}x{t}>, tensor<{R}x{C}xi32>) -> (tensor<{R}x{t}>, tensor<{R}xi32>)
    %out = tt.reshape %red#1 : tensor<{R}xi32> -> tensor<{R}xi32>"""


def test_argmax_two_operand_region_picks_first_maximum():
    x = np.random.default_rng().integers(0, 5, (P, R, C)).astype(np.float32)  # many ties
    out = poisoned(P * R, np.int32)
    run(tile_io("f32", R, C, "i32", R, argmax_body()), [x.ravel(), out], (P,))
    np.testing.assert_array_equal(out.reshape(P, R), x.argmax(axis=2))


def test_bf16_sum_rounds_every_step():
    x = np.random.default_rng().standard_normal((P, R, C)).astype(ml_dtypes.bfloat16)
    got = run_reduce(reduce_region("addf", "bf16"), x, "bf16", 1).astype(np.float32)
    # the documented order: a tree pairing element i with i + n/2, rounded to bf16 each step
    ref = x.astype(np.float32)
    while ref.shape[-1] > 1:
        h = ref.shape[-1] // 2
        ref = (ref[..., :h] + ref[..., h:]).astype(ml_dtypes.bfloat16).astype(np.float32)
    np.testing.assert_array_equal(got, ref[..., 0])


def scan_body(region_op, t, reverse="false", axis=1):
    return f"""%sc = "tt.scan"(%x) <{{axis = {axis} : i32, reverse = {reverse}}}> {reduce_region(region_op, t, "tt.scan.return")} : (tensor<{R}x{C}x{t}>) -> tensor<{R}x{C}x{t}>
    %out = tt.reshape %sc : tensor<{R}x{C}x{t}> -> tensor<{R * C}x{t}>"""


@pytest.mark.parametrize("reverse", ["false", "true"])
def test_cumsum_and_cummax(reverse):
    rng = np.random.default_rng()
    x = rng.integers(-1000, 1000, (P, R, C), dtype=np.int32)
    flip = (lambda a: a[..., ::-1]) if reverse == "true" else (lambda a: a)
    out = poisoned(P * R * C, np.int32)
    run(tile_io("i32", R, C, "i32", R * C, scan_body("addi", "i32", reverse)), [x.ravel(), out], (P,))
    np.testing.assert_array_equal(out.reshape(P, R, C), flip(np.cumsum(flip(x), axis=2)))
    y = rng.standard_normal((P, R, C), dtype=np.float32)
    out = poisoned(P * R * C, np.float32)
    run(tile_io("f32", R, C, "f32", R * C, scan_body("maxnumf", "f32", reverse)), [y.ravel(), out], (P,))
    np.testing.assert_array_equal(out.reshape(P, R, C), flip(np.maximum.accumulate(flip(y), axis=2)))


def test_generic_scan_region_along_axis_0():
    """A non-commutative associative combine (2x2 matrix-like affine maps: (a, b) then (c, d)
    → (a*c, b*c + d)), scanned with Hillis-Steele, matches a sequential scan."""
    rng = np.random.default_rng()
    a = rng.integers(-3, 4, (P, R, C)).astype(np.int32)
    body = f"""%bf = tt.reshape %flat : tensor<{R * C}xi32> -> tensor<{R}x{C}xi32>
    %sc:2 = "tt.scan"(%x, %bf) <{{axis = 0 : i32, reverse = false}}> ({{
    ^bb0(%a1: i32, %b1: i32, %a2: i32, %b2: i32):
      %a = arith.muli %a1, %a2 : i32
      %t = arith.muli %b1, %a2 : i32
      %bb = arith.addi %t, %b2 : i32
      tt.scan.return %a, %bb : i32, i32
    }}) : (tensor<{R}x{C}xi32>, tensor<{R}x{C}xi32>) -> (tensor<{R}x{C}xi32>, tensor<{R}x{C}xi32>)
    %out = tt.reshape %sc#1 : tensor<{R}x{C}xi32> -> tensor<{R * C}xi32>"""
    # both operands start as the same tile: pairs (a_i, a_i)
    out = poisoned(P * R * C, np.int32)
    text = tile_io("i32", R, C, "i32", R * C, body)
    run(text, [a.ravel(), out], (P,))
    ea, eb = a.astype(np.int64).copy(), a.astype(np.int64).copy()
    for r in range(1, R):
        ea[:, r], eb[:, r] = ea[:, r - 1] * ea[:, r], eb[:, r - 1] * ea[:, r] + eb[:, r]
    np.testing.assert_array_equal(out.reshape(P, R, C), eb.astype(np.int32))
