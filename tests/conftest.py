"""Shared fixtures: backends, seeded random inputs, poisoned outputs, device transfers.

Every builtin test takes the `launch` fixture, which runs a kernel on one backend: the numpy
interpreter always, an NVIDIA GPU under `-m gpu` when one is visible (skipped otherwise).
Inputs come from `rng` (seeded from a logged random seed: a failing test prints it; rerun with
KERNELLAB_TEST_SEED=<seed>), outputs start `poison`ed so an element the kernel forgot to write
can never pass by accident.
"""

from __future__ import annotations

import functools
import os

import ml_dtypes
import numpy as np
import pytest

# -- backends --------------------------------------------------------------------------------


@functools.cache
def cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


BACKENDS = [
    pytest.param("interpreter", id="interpreter"),
    pytest.param("cuda", id="cuda", marks=pytest.mark.gpu),
]


@pytest.fixture(params=BACKENDS)
def backend(request) -> str:
    if request.param == "cuda" and not cuda_available():
        pytest.skip("no CUDA device visible (needs torch with CUDA)")
    return request.param


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs an NVIDIA GPU (skipped without one)")


# -- moving arrays to and from a backend -----------------------------------------------------

# numpy dtypes torch cannot hold directly travel as same-width integers and are viewed back
_TORCH_VIEW = {
    np.dtype(ml_dtypes.bfloat16): ("uint16", "bfloat16"),
    np.dtype(ml_dtypes.float8_e4m3fn): ("uint8", "float8_e4m3fn"),
    np.dtype(ml_dtypes.float8_e5m2): ("uint8", "float8_e5m2"),
}


def to_device(array: np.ndarray, backend: str):
    """The array as the backend takes it: the numpy array itself, or a CUDA torch tensor."""
    if backend == "interpreter":
        return array
    import torch

    view = _TORCH_VIEW.get(array.dtype)
    if view is None:
        return torch.from_numpy(np.ascontiguousarray(array)).cuda()
    raw = torch.from_numpy(np.ascontiguousarray(array).view(view[0])).cuda()
    return raw.view(getattr(torch, view[1]))


def from_device(value, backend: str, dtype) -> np.ndarray:
    """The inverse of `to_device`, as a numpy array of `dtype`."""
    if backend == "interpreter":
        return value
    import torch

    view = _TORCH_VIEW.get(np.dtype(dtype))
    if view is None:
        return value.cpu().numpy()
    return value.view(getattr(torch, view[0])).cpu().numpy().view(dtype)


@pytest.fixture
def launch(backend):
    """`launch(kernel, grid, *args, **meta)`: run `kernel[grid]` on the backend; numpy array
    arguments are copied there and back, so the caller reads results from its own arrays."""

    def run(kernel, grid, *args, **kwargs):
        device_args = [to_device(a, backend) if isinstance(a, np.ndarray) else a for a in args]
        kernel[grid](*device_args, **kwargs)
        for host, dev in zip(args, device_args):
            if isinstance(host, np.ndarray) and dev is not host:
                host[...] = from_device(dev, backend, host.dtype)

    return run


# -- random inputs and poisoned outputs ------------------------------------------------------


def _initial_seed() -> int:
    env = os.environ.get("KERNELLAB_TEST_SEED")
    return int(env) if env else int(np.random.SeedSequence().entropy % 2**32)


@pytest.fixture
def rng(request) -> np.random.Generator:
    """A fresh generator per test, seeded from a seed that a failing test reports."""
    seed = _initial_seed()
    request.node.user_properties.append(("rng seed", seed))
    return np.random.default_rng(seed)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.failed:
        for name, value in item.user_properties:
            if name == "rng seed":
                report.sections.append(("rng seed", f"rerun with KERNELLAB_TEST_SEED={value}"))


INT_SENTINEL_BYTE = 0xA5  # 0xA5A5...: far outside the small random inputs (int8: -91, rare)


def poison(shape, dtype) -> np.ndarray:
    """An output buffer no correct kernel result can equal by accident: NaN for floats,
    0xA5 bytes for integers."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f" or dtype in _TORCH_VIEW:
        return np.full(shape, np.nan, dtype=dtype)
    if dtype == np.bool_:
        raise ValueError("a bool buffer cannot be poisoned; store booleans into int8")
    out = np.empty(shape, dtype=dtype)
    out.view(np.uint8)[...] = INT_SENTINEL_BYTE
    return out


def is_float(dtype) -> bool:
    dtype = np.dtype(dtype)
    return dtype.kind == "f" or dtype in _TORCH_VIEW


def random_array(rng, shape, dtype, low=None, high=None) -> np.ndarray:
    """Random values of `dtype` in [low, high), never zero. Floats default to ±[0.1, 4)
    (random sign), integers to the dtype's range capped at ±100."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if is_float(dtype):
        if low is None and high is None:
            mag = rng.uniform(0.1, 4.0, shape)
            values = np.where(rng.random(shape) < 0.5, -mag, mag)
        else:
            values = rng.uniform(low, high, shape)
            values[values == 0] = (high if high is not None else 1.0) / 2
        return values.astype(dtype)
    info = np.iinfo(dtype)
    lo = max(info.min, -100) if low is None else low
    hi = min(info.max, 100) if high is None else high
    values = rng.integers(lo, hi, shape, dtype=np.int64, endpoint=False)
    values[values == 0] = 1 if hi > 1 else lo
    return values.astype(dtype)


# dtypes by name, as the tests parametrize them: numpy dtype of the array and `tl` name
NP_DTYPES = {
    "int8": np.int8, "int16": np.int16, "int32": np.int32, "int64": np.int64,
    "uint8": np.uint8, "uint16": np.uint16, "uint32": np.uint32, "uint64": np.uint64,
    "float16": np.float16, "bfloat16": ml_dtypes.bfloat16, "float32": np.float32,
    "float64": np.float64, "float8e4nv": ml_dtypes.float8_e4m3fn,
    "float8e5": ml_dtypes.float8_e5m2,
}  # fmt: skip


def f64(array) -> np.ndarray:
    """The values as float64 (the reference precision); works for bf16/fp8 too."""
    return np.asarray(array).astype(np.float64)


def ulp_tolerance(dtype) -> float:
    """Relative size of one unit in the last place of `dtype` (2^-mantissa_bits)."""
    dtype = np.dtype(dtype)
    return float(ml_dtypes.finfo(dtype).eps) if dtype in _TORCH_VIEW else float(np.finfo(dtype).eps)


def assert_close(actual, expected, rtol=0.0, atol=0.0):
    """Every element within `atol + rtol*|expected|` (atol may be an array of per-element
    bounds); NaN only where NaN is expected."""
    actual, expected = f64(actual), f64(expected)
    assert actual.shape == expected.shape, f"shape {actual.shape} != expected {expected.shape}"
    tol = np.broadcast_to(atol + rtol * np.abs(expected), expected.shape)
    nan_expected = np.isnan(expected)
    bad = np.where(nan_expected, ~np.isnan(actual), ~(np.abs(actual - expected) <= tol))
    if bad.any():
        where = np.argwhere(bad)[:5]
        lines = [
            f"  at {tuple(int(i) for i in w)}: got {actual[tuple(w)]!r}, expected "
            f"{expected[tuple(w)]!r} (tolerance {tol[tuple(w)]:.3g})"
            for w in where
        ]
        err = np.abs(actual - expected)[~nan_expected & bad]
        raise AssertionError(
            f"{int(bad.sum())} of {bad.size} elements differ (max error "
            f"{err.max() if err.size else float('nan'):.3g}):\n" + "\n".join(lines)
        )


def assert_equal(actual, expected):
    """Exact, element by element (NaN equal to NaN); dtype-independent value comparison."""
    actual = np.asarray(actual)
    expected = np.asarray(expected)
    assert actual.shape == expected.shape, f"shape {actual.shape} != expected {expected.shape}"
    if is_float(actual.dtype) or is_float(expected.dtype):
        np.testing.assert_array_equal(f64(actual), f64(expected))
    else:
        np.testing.assert_array_equal(actual.astype(object), expected.astype(object))


def fp32_sum_bound(terms, axis=0) -> np.ndarray:
    """Error bound of an fp32 sum (any order) of `terms` along `axis`, each term itself
    rounded once: (n + 1) * 2^-24 * sum(|terms|)."""
    terms = np.abs(f64(terms))
    return (terms.shape[axis] + 1) * 2.0**-24 * terms.sum(axis=axis)


def cdiv(a: int, b: int) -> int:
    return -(-a // b)
