"""Element-wise arithmetic: signedness, wrapping, NaN rules, casts, bf16/fp8 rounding, math."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest
from conftest import toward_zero_reference
from interp_helpers import run_elementwise

N, PROGRAMS = 64, 4
BF16 = ml_dtypes.bfloat16


def rand_ints(dtype, size=N * PROGRAMS):
    info = np.iinfo(dtype)
    return np.random.default_rng().integers(info.min, info.max, size, dtype=dtype, endpoint=True)


def binary(op, x, y, t, out_t=None, out_dtype=None):
    body = f"%out = arith.{op} %x0, %x1 : tensor<{N}x{t}>"
    return run_elementwise(body, [x, y], [t, t], out_t or t, out_dtype or x.dtype, PROGRAMS)


@pytest.mark.parametrize("op,ref", [
    ("addi", lambda a, b: a + b), ("subi", lambda a, b: a - b), ("muli", lambda a, b: a * b),
    ("andi", np.bitwise_and), ("ori", np.bitwise_or), ("xori", np.bitwise_xor),
    ("maxsi", np.maximum), ("minsi", np.minimum),
    ("maxui", lambda a, b: np.maximum(a.view(np.uint32), b.view(np.uint32)).view(np.int32)),
    ("minui", lambda a, b: np.minimum(a.view(np.uint32), b.view(np.uint32)).view(np.int32)),
])  # fmt: skip
def test_int32_ops_wrap(op, ref):
    x, y = rand_ints(np.int32), rand_ints(np.int32)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(binary(op, x, y, "i32"), ref(x, y))


def test_signed_division_truncates_and_unsigned_divides_bits():
    x, y = rand_ints(np.int32), rand_ints(np.int8).astype(np.int32)
    y[y == 0] = 3
    x[:4], y[:4] = [-7, 7, -7, np.iinfo(np.int32).min], [2, -2, -2, -1]
    quotient = [int(a / b) if b != -1 else -a for a, b in zip(x.tolist(), y.tolist())]
    quotient = np.array(quotient, np.int64).astype(np.int32)
    np.testing.assert_array_equal(binary("divsi", x, y, "i32"), quotient)
    np.testing.assert_array_equal(binary("remsi", x, y, "i32"), x - (quotient * y))
    ux, uy = x.view(np.uint32), y.view(np.uint32)
    np.testing.assert_array_equal(binary("divui", x, y, "i32").view(np.uint32), ux // uy)
    np.testing.assert_array_equal(binary("remui", x, y, "i32").view(np.uint32), ux % uy)


def test_division_by_zero_does_not_crash():
    x, y = rand_ints(np.int32), np.zeros(N * PROGRAMS, np.int32)
    out = binary("divsi", x, y, "i32")
    assert out.dtype == np.int32 and out.shape == x.shape


def test_shifts_and_unsigned_compare():
    x, s = rand_ints(np.int32), np.random.default_rng().integers(0, 32, N * PROGRAMS, dtype=np.int32)
    np.testing.assert_array_equal(binary("shrsi", x, s, "i32"), x >> s)
    np.testing.assert_array_equal(binary("shrui", x, s, "i32"), (x.view(np.uint32) >> s.astype(np.uint32)).view(np.int32))
    np.testing.assert_array_equal(binary("shli", x, s, "i32"), (x.astype(np.int64) << s).astype(np.int32))
    y = rand_ints(np.int32)
    for pred, ref in [("slt", x < y), ("ult", x.view(np.uint32) < y.view(np.uint32)),
                      ("uge", x.view(np.uint32) >= y.view(np.uint32)), ("sge", x >= y)]:  # fmt: skip
        body = f"%out = arith.cmpi {pred}, %x0, %x1 : tensor<{N}xi32>"
        got = run_elementwise(body, [x, y], ["i32", "i32"], "i1", np.bool_, PROGRAMS)
        np.testing.assert_array_equal(got, ref, err_msg=pred)


@pytest.mark.parametrize("cast,src,dst,ref", [
    ("extsi", np.int8, np.int32, lambda a: a.astype(np.int32)),
    ("extui", np.int8, np.int32, lambda a: a.view(np.uint8).astype(np.int32)),
    ("trunci", np.int32, np.int8, lambda a: a.astype(np.int8)),
    ("sitofp", np.int32, np.float64, lambda a: a.astype(np.float64)),
    ("uitofp", np.int32, np.float64, lambda a: a.view(np.uint32).astype(np.float64)),
])  # fmt: skip
def test_integer_casts(cast, src, dst, ref):
    names = {np.int8: "i8", np.int32: "i32", np.float64: "f64"}
    x = rand_ints(src)
    body = f"%out = arith.{cast} %x0 : tensor<{N}x{names[src]}> to tensor<{N}x{names[dst]}>"
    got = run_elementwise(body, [x], [names[src]], names[dst], dst, PROGRAMS)
    np.testing.assert_array_equal(got, ref(x))


def test_float_to_int_saturates_like_the_gpu():
    x = np.random.default_rng().standard_normal(N * PROGRAMS) * 1e10
    x[:3] = [np.nan, np.inf, -np.inf]
    body = f"%out = arith.fptosi %x0 : tensor<{N}xf64> to tensor<{N}xi32>"
    got = run_elementwise(body, [x], ["f64"], "i32", np.int32, PROGRAMS)
    info = np.iinfo(np.int32)
    expected = np.trunc(np.clip(np.nan_to_num(x, nan=0.0), info.min, info.max)).astype(np.int32)
    np.testing.assert_array_equal(got, expected)


def test_nan_rules_of_min_and_max():
    rng = np.random.default_rng()
    x, y = rng.standard_normal(N * PROGRAMS, dtype=np.float32), rng.standard_normal(N * PROGRAMS, dtype=np.float32)
    x[::3], y[::5] = np.nan, np.nan
    np.testing.assert_array_equal(binary("maximumf", x, y, "f32"), np.maximum(x, y))
    np.testing.assert_array_equal(binary("minimumf", x, y, "f32"), np.minimum(x, y))
    np.testing.assert_array_equal(binary("maxnumf", x, y, "f32"), np.fmax(x, y))
    np.testing.assert_array_equal(binary("minnumf", x, y, "f32"), np.fmin(x, y))
    for pred, ref in [("olt", x < y), ("ult", ~(x >= y)), ("une", x != y), ("uno", np.isnan(x) | np.isnan(y))]:
        body = f"%out = arith.cmpf {pred}, %x0, %x1 : tensor<{N}xf32>"
        got = run_elementwise(body, [x, y], ["f32", "f32"], "i1", np.bool_, PROGRAMS)
        np.testing.assert_array_equal(got, ref, err_msg=pred)


@pytest.mark.parametrize("op,ref", [("addf", np.add), ("subf", np.subtract), ("mulf", np.multiply), ("divf", np.divide)])
def test_bf16_arithmetic_rounds_each_op(op, ref):
    rng = np.random.default_rng()
    x = rng.standard_normal(N * PROGRAMS).astype(BF16)
    y = (rng.standard_normal(N * PROGRAMS) * 3).astype(BF16)
    expected = ref(x.astype(np.float64), y.astype(np.float64)).astype(np.float32).astype(BF16)
    got = binary(op, x, y, "bf16")
    assert got.dtype == BF16
    np.testing.assert_array_equal(got.astype(np.float32), expected.astype(np.float32))


def test_bf16_chain_matches_per_op_rounding():
    """(x * y + x) / y in bf16: every intermediate rounded, as ml_dtypes does op by op."""
    rng = np.random.default_rng()
    x, y = rng.standard_normal(N * PROGRAMS).astype(BF16), (rng.random(N * PROGRAMS) + 0.5).astype(BF16)
    body = f"""%m = arith.mulf %x0, %x1 : tensor<{N}xbf16>
    %s = arith.addf %m, %x0 : tensor<{N}xbf16>
    %out = arith.divf %s, %x1 : tensor<{N}xbf16>"""
    got = run_elementwise(body, [x, y], ["bf16", "bf16"], "bf16", BF16, PROGRAMS)
    expected = ((x * y) + x) / y  # ml_dtypes rounds after each op
    np.testing.assert_array_equal(got.astype(np.float32), expected.astype(np.float32))


def test_f64_to_bf16_rounds_once():
    x = np.array([1 + 2**-8 + 2**-30, -(1 + 2**-8 + 2**-30), 1 + 2**-8, 3.0] * 64)
    body = f"%out = arith.truncf %x0 : tensor<{N}xf64> to tensor<{N}xbf16>"
    got = run_elementwise(body, [x], ["f64"], "bf16", BF16, PROGRAMS).astype(np.float64)
    np.testing.assert_array_equal(got, np.array([1 + 2**-7, -(1 + 2**-7), 1.0, 3.0] * 64))


@pytest.mark.parametrize("fp8,name,limit", [(ml_dtypes.float8_e4m3fn, "f8E4M3FN", 448.0), (ml_dtypes.float8_e5m2, "f8E5M2", 57344.0)])
def test_fp_to_fp_rounds_to_nearest_even_and_saturates(fp8, name, limit):
    x = np.random.default_rng().standard_normal(N * PROGRAMS).astype(np.float32) * 8
    x[:4] = [1e6, -1e6, np.nan, limit]
    body = f"%out = tt.fp_to_fp %x0 {{rounding = \"rtne\"}} : tensor<{N}xf32> -> tensor<{N}x{name}>"
    got = run_elementwise(body, [x], ["f32"], name, fp8, PROGRAMS)
    expected = np.clip(x, -limit, limit).astype(fp8)
    np.testing.assert_array_equal(got.astype(np.float32)[4:], expected.astype(np.float32)[4:])
    assert got.astype(np.float32)[0] == limit and got.astype(np.float32)[1] == -limit
    assert np.isnan(got.astype(np.float32)[2])


def _random_magnitudes(lo_exp: float, hi_exp: float) -> np.ndarray:
    rng = np.random.default_rng()
    return 2.0 ** rng.uniform(lo_exp, hi_exp, N * PROGRAMS) * rng.choice([-1, 1], N * PROGRAMS)


@pytest.mark.parametrize("name,dtype", [("f16", np.float16), ("bf16", BF16),
                                        ("f8E4M3FN", ml_dtypes.float8_e4m3fn),
                                        ("f8E5M2", ml_dtypes.float8_e5m2)])  # fmt: skip
@pytest.mark.parametrize("src,src_dtype", [("f32", np.float32), ("f64", np.float64)])
def test_fp_to_fp_round_toward_zero(name, dtype, src, src_dtype):
    """rtz never rounds outward: overflow gives the largest finite value, subnormals truncate."""
    top = float(ml_dtypes.finfo(dtype).max)
    x = _random_magnitudes(-26, min(np.log2(top) + 1, 127.9))
    x[:2] = [np.finfo(np.float32).max, -np.finfo(np.float32).max]  # beyond every format here
    x = x.astype(src_dtype)
    body = f"%out = tt.fp_to_fp %x0 {{rounding = \"rtz\"}} : tensor<{N}x{src}> -> tensor<{N}x{name}>"
    got = run_elementwise(body, [x], [src], name, dtype, PROGRAMS).astype(np.float64)
    np.testing.assert_array_equal(got, toward_zero_reference(x, dtype).astype(np.float64))
    assert got[0] == top and got[1] == -top


def test_f64_to_f32_round_toward_zero():
    x = _random_magnitudes(-150, 128)
    x[:2] = [1e300, -1e300]
    body = f"%out = tt.fp_to_fp %x0 {{rounding = \"rtz\"}} : tensor<{N}xf64> -> tensor<{N}xf32>"
    got = run_elementwise(body, [x], ["f64"], "f32", np.float32, PROGRAMS)
    with np.errstate(over="ignore"):
        nearest = x.astype(np.float32)
    outward = np.abs(nearest.astype(np.float64)) > np.abs(x)
    expected = np.where(outward, np.nextafter(nearest, np.float32(0)), nearest)
    np.testing.assert_array_equal(got, expected)
    assert got[0] == np.finfo(np.float32).max and got[1] == -np.finfo(np.float32).max


@pytest.mark.parametrize("op,ref,lo,hi", [
    ("exp", np.exp, -5, 5), ("exp2", np.exp2, -5, 5), ("log", np.log, 0.1, 9), ("log2", np.log2, 0.1, 9),
    ("sqrt", np.sqrt, 0, 9), ("rsqrt", lambda v: 1 / np.sqrt(v), 0.1, 9), ("sin", np.sin, -5, 5),
    ("cos", np.cos, -5, 5), ("absf", np.abs, -5, 5), ("floor", np.floor, -5, 5), ("ceil", np.ceil, -5, 5),
    ("erf", np.vectorize(math.erf), -3, 3),
])  # fmt: skip
def test_math_ops_against_float64(op, ref, lo, hi):
    x = np.random.default_rng().uniform(lo, hi, N * PROGRAMS).astype(np.float32)
    got = run_elementwise(f"%out = math.{op} %x0 : tensor<{N}xf32>", [x], ["f32"], "f32", np.float32, PROGRAMS)
    np.testing.assert_allclose(got, ref(x.astype(np.float64)), rtol=2e-7, atol=1e-7)


def test_fma_mulhi_and_clamp():
    rng = np.random.default_rng()
    a, b, c = (rng.standard_normal(N * PROGRAMS, dtype=np.float32) for _ in range(3))
    body = f"%out = math.fma %x0, %x1, %x2 : tensor<{N}xf32>"
    got = run_elementwise(body, [a, b, c], ["f32"] * 3, "f32", np.float32, PROGRAMS)
    np.testing.assert_array_equal(got, (a.astype(np.float64) * b + c).astype(np.float32))

    x, y = rand_ints(np.int32), rand_ints(np.int32)
    body = f"%out = tt.mulhiui %x0, %x1 : tensor<{N}xi32>"
    got = run_elementwise(body, [x, y], ["i32", "i32"], "i32", np.int32, PROGRAMS).view(np.uint32)
    wide = x.view(np.uint32).astype(np.uint64) * y.view(np.uint32).astype(np.uint64)
    np.testing.assert_array_equal(got, (wide >> np.uint64(32)).astype(np.uint32))

    x64, y64 = rand_ints(np.int64), rand_ints(np.int64)
    body = f"%out = tt.mulhiui %x0, %x1 : tensor<{N}xi64>"
    got = run_elementwise(body, [x64, y64], ["i64", "i64"], "i64", np.int64, PROGRAMS).view(np.uint64)
    expected = [(int(p) * int(q)) >> 64 for p, q in zip(x64.view(np.uint64), y64.view(np.uint64))]
    np.testing.assert_array_equal(got, np.array(expected, np.uint64))

    a[::4] = np.nan
    lo, hi = np.full_like(a, -0.5), np.full_like(a, 0.75)
    for mode, expected in [("all", np.where(np.isnan(a), a, np.clip(a, -0.5, 0.75))), ("none", np.fmin(np.fmax(a, lo), hi))]:
        body = f"%out = tt.clampf %x0, %x1, %x2, propagateNan = \"{mode}\" : tensor<{N}xf32>"
        got = run_elementwise(body, [a, lo, hi], ["f32"] * 3, "f32", np.float32, PROGRAMS)
        np.testing.assert_array_equal(got, expected)


def test_select_with_per_program_scalar_condition():
    """A scalar condition (one per program) picks whole tensors."""
    rng = np.random.default_rng()
    x, y = rng.standard_normal(N * PROGRAMS, dtype=np.float32), rng.standard_normal(N * PROGRAMS, dtype=np.float32)
    body = f"""%two = arith.constant 2 : i32
    %odd = arith.remsi %pid, %two : i32
    %zero = arith.constant 0 : i32
    %cond = arith.cmpi ne, %odd, %zero : i32
    %out = arith.select %cond, %x0, %x1 : i1, tensor<{N}xf32>"""
    got = run_elementwise(body, [x, y], ["f32", "f32"], "f32", np.float32, PROGRAMS).reshape(PROGRAMS, N)
    odd = (np.arange(PROGRAMS) % 2 == 1)[:, None]
    np.testing.assert_array_equal(got, np.where(odd, x.reshape(PROGRAMS, N), y.reshape(PROGRAMS, N)))
