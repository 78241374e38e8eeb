"""kernellab.language.extra.libdevice against numpy in float64: fp32 results within an ulp or
two of the correctly rounded value, fp64 within a few ulps (pow: within |y·log x| ulps)."""

import numpy as np
import pytest
from conftest import assert_close, assert_equal, f64, poison

import kernellab as kl
import kernellab.language as tl
from kernellab.language.extra import libdevice


@kl.jit
def unary_kernel(x_ptr, out_ptr, FN: tl.constexpr, N: tl.constexpr):
    offs = tl.arange(0, N)
    tl.store(out_ptr + offs, getattr(libdevice, FN)(tl.load(x_ptr + offs)))


@kl.jit
def binary_kernel(x_ptr, y_ptr, out_ptr, FN: tl.constexpr, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    tl.store(out_ptr + offs, getattr(libdevice, FN)(x, y))


def _round_half_away(v):
    return np.sign(v) * np.floor(np.abs(v) + 0.5)


# name → (numpy reference, input range, special inputs placed at the start)
UNARY = {
    "asin": (np.arcsin, (-1, 1), [1e-9, -1.0, 1.0, 0.999]),
    "acos": (np.arccos, (-1, 1), [1e-9, -1.0, 1.0, 0.999]),
    "atan": (np.arctan, (-20, 20), [1e-9, 1e10, -1e10, 0.4142]),
    "sinh": (np.sinh, (-5, 5), [1e-9, -1e-7, 20.0, -20.0]),
    "cosh": (np.cosh, (-5, 5), [1e-9, 0.0, 20.0, -20.0]),
    "tanh": (np.tanh, (-5, 5), [1e-9, -1e-7, 30.0, -30.0]),
    "asinh": (np.arcsinh, (-50, 50), [1e-9, -1e-7, 1e20, -1e20]),
    "acosh": (np.arccosh, (1, 50), [1.0, 1.0000001, 1e20, 2.0]),
    "atanh": (np.arctanh, (-1, 1), [1e-9, -1e-7, 0.999, -0.999]),
    "tan": (np.tan, (-1.5, 1.5), [1e-9, -1e-7, 1.0, -1.0]),
    "expm1": (np.expm1, (-5, 5), [1e-9, -1e-12, -40.0, 30.0]),
    "log1p": (np.log1p, (-0.99, 10), [1e-9, -1e-12, 1e10, -0.5]),
    "log10": (np.log10, (1e-3, 1e3), [1.0, 10.0, 1e-20, 1e20]),
    "exp10": (lambda v: 10.0**v, (-10, 10), [0.0, 1.0, -20.0, 2.5]),
    "cbrt": (np.cbrt, (-100, 100), [0.0, -8.0, 27.0, 1e-20]),
    "round": (_round_half_away, (-10, 10), [0.5, -0.5, 2.5, 0.49999997]),
    "rint": (np.rint, (-10, 10), [0.5, -0.5, 2.5, 3.5]),
    "trunc": (np.trunc, (-10, 10), [0.5, -0.5, -2.7, 2.7]),
    "erf": (np.vectorize(__import__("math").erf), (-4, 4), [0.0, 1e-9, 3.0, -3.0]),
}


def _inputs(rng, name, dtype, n=256):
    _, (lo, hi), special = UNARY[name]
    x = rng.uniform(lo, hi, n)
    x[: len(special)] = special
    return x.astype(dtype)


def _ulps(dtype) -> float:
    return float(np.finfo(dtype).eps)


@pytest.mark.parametrize("name", sorted(UNARY))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_unary(launch, rng, name, dtype):
    x = _inputs(rng, name, dtype)
    out = poison(x.shape, dtype)
    launch(unary_kernel, (1,), x, out, FN=name, N=x.size)
    expected = UNARY[name][0](f64(x))
    ulps = 1.0 if dtype == np.float32 else 8.0
    assert_close(out, expected, rtol=ulps * _ulps(dtype), atol=float(np.finfo(dtype).tiny))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_atan2_quadrants_and_special_cases(launch, rng, dtype):
    y = rng.uniform(-3, 3, 256)
    x = rng.uniform(-3, 3, 256)
    specials = [(0.0, 1.0), (0.0, -1.0), (1.0, 0.0), (-1.0, 0.0), (np.inf, np.inf),
                (np.inf, -np.inf), (-np.inf, 2.0), (2.0, -np.inf), (-0.0, -0.0), (0.0, 0.0)]  # fmt: skip
    for i, (sy, sx) in enumerate(specials):
        y[i], x[i] = sy, sx
    y, x = y.astype(dtype), x.astype(dtype)
    out = poison(x.shape, dtype)
    launch(binary_kernel, (1,), y, x, out, FN="atan2", N=256)
    ulps = 2.0 if dtype == np.float32 else 8.0  # fp64: the 8-ulp bound of test_unary
    assert_close(out, np.arctan2(f64(y), f64(x)), rtol=ulps * _ulps(dtype))
    assert_equal(np.signbit(out[:10]), np.signbit(np.arctan2(y[:10], x[:10])))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_pow(launch, rng, dtype):
    x = rng.uniform(0.1, 4, 256)
    y = rng.uniform(-6, 6, 256)
    cases = [(-2.0, 3.0), (-2.0, 2.0), (-2.0, 0.5), (0.0, 2.0), (0.25, -1.0), (1.0, np.nan),
             (np.nan, 0.0), (3.0, 0.0), (-1.5, -3.0)]  # fmt: skip
    for i, (cx, cy) in enumerate(cases):
        x[i], y[i] = cx, cy
    x, y = x.astype(dtype), y.astype(dtype)
    out = poison(x.shape, dtype)
    launch(binary_kernel, (1,), x, y, out, FN="pow", N=256)
    with np.errstate(all="ignore"):
        expected = np.power(f64(x), f64(y))
    ulps = 1.0 if dtype == np.float32 else 4 + 1.5 * np.max(np.abs(f64(y) * np.log(np.abs(f64(x)) + 1e-300))[9:])
    assert_close(out, expected, rtol=ulps * _ulps(dtype))


@pytest.mark.parametrize("name", ["hypot", "fmod", "copysign"])
def test_binary_exact_ones(launch, rng, name):
    x = rng.uniform(-100, 100, 256).astype(np.float32)
    y = rng.uniform(-10, 10, 256).astype(np.float32)
    out = poison(x.shape, np.float32)
    launch(binary_kernel, (1,), x, y, out, FN=name, N=256)
    expected = {"hypot": np.hypot, "fmod": np.fmod, "copysign": np.copysign}[name](f64(x), f64(y))
    assert_close(out, expected, rtol=_ulps(np.float32) / 2 if name == "hypot" else 0.0)


@kl.jit
def classify_kernel(x_ptr, out_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    code = libdevice.isnan(x).to(tl.int32) + 2 * libdevice.isinf(x).to(tl.int32)
    code += 4 * libdevice.signbit(x).to(tl.int32) + 8 * libdevice.isfinited(x).to(tl.int32)
    tl.store(out_ptr + offs, code)


def test_classification(launch, rng):
    x = rng.uniform(-5, 5, 64).astype(np.float32)
    x[:6] = [np.nan, np.inf, -np.inf, -0.0, 0.0, -np.nan]
    out = poison(64, np.int32)
    launch(classify_kernel, (1,), x, out, N=64)
    expected = np.isnan(x) + 2 * np.isinf(x) + 4 * np.signbit(x) + 8 * np.isfinite(x)
    assert_equal(out[:5], expected[:5].astype(np.int32))
    assert_equal(out[6:], expected[6:].astype(np.int32))  # -nan's sign bit is the GPU's choice


def test_integer_inputs_are_refused():
    x = np.arange(16, dtype=np.int32)
    with pytest.raises(kl.CompilationError, match="libdevice math functions take floats"):
        unary_kernel[(1,)](x, x, FN="asin", N=16)
