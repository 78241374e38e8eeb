"""Math builtins (tl.exp ... tl.umulhi), the tl.math namespace, Python min/max on scalars."""

import math

import numpy as np
import pytest
from conftest import assert_close, assert_equal, cdiv, f64, poison, random_array

import kernellab as kl
import kernellab.language as tl

N, BLOCK = 1000, 256
GRID = (cdiv(N, BLOCK),)


@kl.jit
def unary_math_kernel(x_ptr, out_ptr, n, FN: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    if FN == "exp":
        y = tl.exp(x)
    elif FN == "exp2":
        y = tl.exp2(x)
    elif FN == "log":
        y = tl.log(x)
    elif FN == "log2":
        y = tl.log2(x)
    elif FN == "sqrt":
        y = tl.sqrt(x)
    elif FN == "sqrt_rn":
        y = tl.sqrt_rn(x)
    elif FN == "rsqrt":
        y = tl.rsqrt(x)
    elif FN == "sin":
        y = tl.sin(x)
    elif FN == "cos":
        y = tl.cos(x)
    elif FN == "abs":
        y = tl.abs(x)
    elif FN == "floor":
        y = tl.floor(x)
    elif FN == "ceil":
        y = tl.ceil(x)
    elif FN == "erf":
        y = tl.erf(x)
    elif FN == "sigmoid":
        y = tl.sigmoid(x)
    elif FN == "math.exp":
        y = tl.math.exp(x)
    elif FN == "math.log":
        y = tl.math.log(x)
    elif FN == "math.sqrt":
        y = tl.math.sqrt(x)
    elif FN == "math.cos":
        y = tl.math.cos(x)
    elif FN == "method.exp":
        y = x.exp()
    tl.store(out_ptr + offs, y, mask=mask)


_erf = np.vectorize(math.erf)

# name: (float64 reference, input range, exact?) — exact ones are correctly rounded (or
# trivially exact) operations, compared bit for bit
UNARY = {
    "exp": (np.exp, (-10, 10), False),
    "exp2": (np.exp2, (-10, 10), False),
    "log": (np.log, (0.01, 100), False),
    "log2": (np.log2, (0.01, 100), False),
    "sqrt": (np.sqrt, (0.01, 100), False),
    "sqrt_rn": (np.sqrt, (0.01, 100), True),
    "rsqrt": (lambda x: 1 / np.sqrt(x), (0.01, 100), False),
    "sin": (np.sin, (-10, 10), False),
    "cos": (np.cos, (-10, 10), False),
    "abs": (np.abs, (-10, 10), True),
    "floor": (np.floor, (-10, 10), True),
    "ceil": (np.ceil, (-10, 10), True),
    "erf": (_erf, (-3, 3), False),
    "sigmoid": (lambda x: 1 / (1 + np.exp(-x)), (-10, 10), False),
    "math.exp": (np.exp, (-10, 10), False),
    "math.log": (np.log, (0.01, 100), False),
    "math.sqrt": (np.sqrt, (0.01, 100), False),
    "math.cos": (np.cos, (-10, 10), False),
    "method.exp": (np.exp, (-10, 10), False),
}
# fp32 transcendental functions may be a few ulp off (GPU approximations); fp64 ones not
TOL = {np.float32: {"rtol": 2e-6, "atol": 1e-6}, np.float64: {"rtol": 1e-13, "atol": 1e-14}}


def run_unary(launch, fn, x):
    out = poison(N, x.dtype)
    launch(unary_math_kernel, GRID, x, out, N, FN=fn, BLOCK=BLOCK)
    return out


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["fp32", "fp64"])
@pytest.mark.parametrize("fn", list(UNARY))
def test_unary_math(launch, rng, fn, dtype):
    reference, (low, high), exact = UNARY[fn]
    if fn == "sqrt_rn" and dtype == np.float64:
        pytest.skip("Triton defines sqrt_rn for fp32 only")
    x = random_array(rng, N, dtype, low, high)
    out = run_unary(launch, fn, x)
    if exact:  # numpy's fp32 sqrt, abs, floor, ceil are exact/correctly rounded too
        assert_equal(out, reference(f64(x)).astype(dtype))
    else:
        assert_close(out, reference(f64(x)), **TOL[dtype])


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64], ids=["int8", "int32", "int64"])
def test_abs_of_integers(launch, rng, dtype):
    x = random_array(rng, N, dtype)
    assert_equal(run_unary(launch, "abs", x), np.abs(x))


# -- two- and three-operand functions ------------------------------------------------------


@kl.jit
def nary_math_kernel(x_ptr, y_ptr, z_ptr, out_ptr, n, FN: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    z = tl.load(z_ptr + offs, mask=mask)
    if FN == "fma":
        r = tl.fma(x, y, z)
    elif FN == "fdiv":
        r = tl.fdiv(x, y)
    elif FN == "fdiv_ieee":
        r = tl.fdiv(x, y, ieee_rounding=True)
    elif FN == "div_rn":
        r = tl.div_rn(x, y)
    elif FN == "cdiv":
        r = tl.cdiv(x, y)
    elif FN == "umulhi":
        r = tl.umulhi(x, y)
    elif FN == "math.fma":
        r = tl.math.fma(x, y, z)
    tl.store(out_ptr + offs, r, mask=mask)


def run_nary(launch, fn, x, y, z=None, out_dtype=None):
    out = poison(N, out_dtype or x.dtype)
    z = x if z is None else z
    launch(nary_math_kernel, GRID, x, y, z, out, N, FN=fn, BLOCK=BLOCK)
    return out


@pytest.mark.parametrize("fn", ["fma", "math.fma"])
def test_fma_rounds_once(launch, rng, fn):
    """fma(x, y, z) is x*y+z rounded once: within one ulp of the exact result, even where
    x*y and z nearly cancel (an unfused multiply-add fails there)."""
    x, y = random_array(rng, N, np.float32), random_array(rng, N, np.float32)
    z = random_array(rng, N, np.float32)
    z[::3] = -(x[::3] * y[::3])  # the fp32 product: cancellation exposes the product's rounding
    out = run_nary(launch, fn, x, y, z)
    exact = f64(x) * f64(y) + f64(z)  # exact in float64 for fp32 inputs
    assert np.all(np.abs(f64(out) - exact) <= np.spacing(np.abs(exact).astype(np.float32))), (
        "fma is not within one ulp of the exactly rounded result"
    )


def test_fdiv(launch, rng):
    x, y = random_array(rng, N, np.float32), random_array(rng, N, np.float32)
    assert_close(run_nary(launch, "fdiv", x, y), f64(x) / f64(y), rtol=1e-6)


@pytest.mark.parametrize("fn", ["div_rn", "fdiv_ieee"])
def test_correctly_rounded_division(launch, rng, fn):
    x, y = random_array(rng, N, np.float32), random_array(rng, N, np.float32)
    assert_equal(run_nary(launch, fn, x, y), x / y)  # numpy's fp32 division is IEEE


@pytest.mark.parametrize("dtype", [np.int32, np.int64], ids=["int32", "int64"])
def test_cdiv(launch, rng, dtype):
    x = random_array(rng, N, dtype, 1, 10_000)
    y = random_array(rng, N, dtype, 1, 100)
    assert_equal(run_nary(launch, "cdiv", x, y), (x + y - 1) // y)


def test_umulhi_uint32(launch, rng):
    x = rng.integers(1, 2**32, N, dtype=np.uint64).astype(np.uint32)
    y = rng.integers(1, 2**32, N, dtype=np.uint64).astype(np.uint32)
    expected = ((x.astype(np.uint64) * y.astype(np.uint64)) >> np.uint64(32)).astype(np.uint32)
    assert_equal(run_nary(launch, "umulhi", x, y), expected)


def test_umulhi_int32_is_unsigned_high_word(launch, rng):
    """tl.umulhi multiplies the bit patterns as unsigned (tt.mulhiui), whatever the sign."""
    x = rng.integers(-(2**31), 2**31, N, dtype=np.int64).astype(np.int32)
    y = rng.integers(-(2**31), 2**31, N, dtype=np.int64).astype(np.int32)
    ux, uy = x.view(np.uint32).astype(np.uint64), y.view(np.uint32).astype(np.uint64)
    expected = ((ux * uy) >> np.uint64(32)).astype(np.uint32).view(np.int32)
    assert_equal(run_nary(launch, "umulhi", x, y), expected)


def test_umulhi_uint64(launch, rng):
    x = rng.integers(1, 2**64, N, dtype=np.uint64)
    y = rng.integers(1, 2**64, N, dtype=np.uint64)
    expected = np.array([(int(a) * int(b)) >> 64 for a, b in zip(x, y)], dtype=np.uint64)
    assert_equal(run_nary(launch, "umulhi", x, y), expected)


# -- constexpr math and Python min/max on scalars ----------------------------------------


@kl.jit
def min_max_builtins_kernel(out_ptr, a, b, fa, fb, A: tl.constexpr, B: tl.constexpr):
    tl.store(out_ptr + 0, min(a, b))
    tl.store(out_ptr + 1, max(a, b))
    tl.store(out_ptr + 2, min(fa, fb))
    tl.store(out_ptr + 3, max(fa, fb))
    tl.store(out_ptr + 4, min(A, B))
    tl.store(out_ptr + 5, max(A, B))


def test_python_min_max_on_scalars(launch, rng):
    """The builtins min/max work on runtime scalars (ints, floats) and on constexprs."""
    a, b = (int(v) for v in rng.integers(1, 1000, 2))
    fa, fb = (float(v) for v in rng.uniform(-10, 10, 2).astype(np.float32))
    A, B = (int(v) for v in rng.integers(1, 100, 2))
    out = poison(6, np.float64)
    launch(min_max_builtins_kernel, (1,), out, a, b, fa, fb, A=A, B=B)
    expected = [min(a, b), max(a, b), min(fa, fb), max(fa, fb), min(A, B), max(A, B)]
    assert_equal(out, np.array(expected, dtype=np.float64))


@kl.jit
def cdiv_scalars_kernel(out_ptr, a, b, A: tl.constexpr, B: tl.constexpr):
    tl.store(out_ptr + 0, tl.cdiv(a, b))
    tl.store(out_ptr + 1, tl.cdiv(A, B))


def test_cdiv_on_scalars_and_constexprs(launch, rng):
    a, b = (int(v) for v in rng.integers(2, 1000, 2))
    A, B = (int(v) for v in rng.integers(2, 100, 2))
    out = poison(2, np.int32)
    launch(cdiv_scalars_kernel, (1,), out, a, b, A=A, B=B)
    assert_equal(out, np.array([cdiv(a, b), cdiv(A, B)], dtype=np.int32))
