"""The lowering core's exact float `%` (backends/llvm/fmod.py, what the GPU targets run in
place of LLVM's frem expansion), JIT-compiled alone by llvmlite on the host and compared
bit for bit with numpy's fmod: fmod is exact, so any difference is a bug. The inputs are the
ones a rounded quotient gets wrong (x / y just below an integer), exponent gaps that need
several passes, subnormals, signed zeros, infinities and NaNs."""

import ctypes

import llvmlite.ir as ir
import numpy as np
import pytest

from kernellab.backends.llvm.fmod import fmod_function
from kernellab.backends.llvm.types import F32, F64
from tests.backends.llvm_jit import jit_function


def compiled(ty):
    module = ir.Module("fmod")
    fn = fmod_function(module, ty)
    fn.linkage = "external"  # callable from the host
    return jit_function(module, fn.name, ctypes.c_float if ty == F32 else ctypes.c_double)


def cases(rng, dtype, n=20000):
    info = np.finfo(dtype)
    y = rng.uniform(0.1, 4.0, n).astype(dtype) * rng.choice([-1, 1], n).astype(dtype)
    k = rng.integers(1, 200, n).astype(dtype)
    # x/y a hair below the integer k: the rounded quotient is k, the true one k - tiny
    below = (k * y).astype(dtype)
    below = np.nextafter(below, np.zeros_like(below)).astype(dtype)
    plain = rng.uniform(-20, 20, n).astype(dtype)
    huge = (rng.uniform(0.5, 1, n) * info.max).astype(dtype) * rng.choice([-1, 1], n).astype(dtype)
    tiny = (rng.uniform(1, 1000, n) * info.smallest_subnormal).astype(dtype)
    specials = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, info.max, info.tiny, info.smallest_subnormal], dtype)
    xs = np.concatenate([below, plain, huge, huge, tiny, specials.repeat(len(specials))])
    ys = np.concatenate([y, y, y, tiny, y, np.tile(specials, len(specials))])
    return xs, ys


@pytest.mark.parametrize("ty,dtype", [(F32, np.float32), (F64, np.float64)], ids=["fp32", "fp64"])
def test_exact_fmod_matches_numpy_bit_for_bit(ty, dtype):
    f = compiled(ty)
    rng = np.random.default_rng()
    xs, ys = cases(rng, dtype)
    got = np.array([f(float(x), float(y)) for x, y in zip(xs, ys)], dtype)
    with np.errstate(invalid="ignore"):
        want = np.fmod(xs, ys)
    same = (got.view(np.uint64 if dtype == np.float64 else np.uint32) == want.view(np.uint64 if dtype == np.float64 else np.uint32))
    same |= np.isnan(got) & np.isnan(want)
    bad = np.flatnonzero(~same)
    assert bad.size == 0, [(xs[i], ys[i], got[i], want[i]) for i in bad[:5]]


def test_a_quotient_just_below_an_integer_is_not_rounded_up():
    f = compiled(F32)
    x, y = np.float32(119.359406), np.float32(1.1935941)  # x / y rounds to 100.0
    assert np.float32(x / y) == 100 and np.fmod(x, y) > 1.19
    assert f(float(x), float(y)) == np.fmod(x, y)
