"""Shared fixtures: backends, seeded random inputs, poisoned outputs, device transfers.

Every builtin test takes the `launch` fixture, which runs a kernel on one backend:

- "interpreter": the numpy interpreter, always. The same specialization is then compiled for
  the GPU targets in $KERNELLAB_TEST_GPU_TARGETS (a comma list; default "sm_80,sm_90,gfx942";
  "none" turns it off), through LLVM IR and PTX to a cubin with nvJitLink (NVIDIA) or to AMDGPU
  assembly (gfx942), so a machine without a GPU checks that every test kernel lowers and assembles (skipped, and said so in the summary,
  where no PTX assembler can be loaded).
- "cpu": the native CPU backend (`target="cpu"`: LLVM code for this machine, run on a thread
  pool), differential against the interpreter exactly as "cuda" below (inputs too), without a
  GPU; tests of what only the interpreter does (access traces, its error messages) skip it.
- "cuda" (marked `gpu`; selected with `-m gpu`, skipped without a CUDA device): the arrays are
  copied to torch CUDA tensors (same strides; bf16/fp8 through their bit patterns), the kernel
  runs on the GPU, the results come back into the caller's arrays, and the test's own checks
  run on them. Differential check: the same launch also runs on the interpreter from the same
  inputs, and every array argument (inputs too: a stray write is caught) must agree with it —
  integers and booleans exactly, floats within `differential_tolerance` (room for the GPU's
  approximate math such as ex2.approx and for another summation order). Kernels with atomics
  are not compared (their results may depend on the order the lanes won).

Inputs come from `rng` (seeded from a logged random seed: a failing test prints it; rerun with
KERNELLAB_TEST_SEED=<seed>), outputs start `poison`ed so an element the kernel forgot to write
can never pass by accident. The session compiles into a fresh KERNELLAB_CACHE_DIR unless one is
set, so no test sees kernels from an earlier run.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import io
import os
import shutil
import tempfile

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
    try:
        return bool(torch.cuda.is_available())
    except Exception:
        return False


BACKENDS = [
    pytest.param("interpreter", id="interpreter"),
    pytest.param("cpu", id="cpu"),
    pytest.param("cuda", id="cuda", marks=pytest.mark.gpu),
]

# Tests that must not run on the CPU backend, with the reason.
CPU_SKIPS: dict[str, str] = {}

# Tests that must not run on the GPU backend, with the reason (they are covered elsewhere).
CUDA_SKIPS = {
    "test_device_assert_raises_when_false": (
        "a failed device_assert leaves the process's CUDA context unusable; "
        "tests/test_gpu_smoke.py checks it in a subprocess"
    ),
}


@pytest.fixture(scope="module")
def cuda_torch():
    """torch with a CUDA device to run on: the GPU tests' host side (they alias it as `torch`);
    skips without one."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch sees no CUDA device")
    return torch


@pytest.fixture(scope="module")
def hopper_torch(cuda_torch):
    """cuda_torch on a Hopper GPU, for wgmma and TMA; skips on others."""
    if cuda_torch.cuda.get_device_capability() != (9, 0):
        pytest.skip("needs a Hopper GPU (compute capability 9.0)")
    return cuda_torch


@pytest.fixture(params=BACKENDS)
def backend(request) -> str:
    if request.param == "cuda" and not cuda_available():
        pytest.skip("no CUDA device visible (needs torch with CUDA)")
    return request.param


_SESSION_CACHE: list[str] = []


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs an NVIDIA GPU (skipped without one)")
    if not os.environ.get("KERNELLAB_CACHE_DIR"):
        path = tempfile.mkdtemp(prefix="kernellab-test-cache-")
        os.environ["KERNELLAB_CACHE_DIR"] = path
        _SESSION_CACHE.append(path)
    if not os.environ.get("KERNELLAB_CACHE_KEY_FILE"):  # the user's own key stays untouched
        keys = tempfile.mkdtemp(prefix="kernellab-test-key-")
        os.environ["KERNELLAB_CACHE_KEY_FILE"] = os.path.join(keys, "cache-key")
        _SESSION_CACHE.append(keys)


def pytest_unconfigure(config):
    for path in _SESSION_CACHE:
        shutil.rmtree(path, ignore_errors=True)
        if os.environ.get("KERNELLAB_CACHE_DIR") == path:
            del os.environ["KERNELLAB_CACHE_DIR"]
    _SESSION_CACHE.clear()


def pytest_collection_modifyitems(config, items):
    for item in items:
        callspec = getattr(item, "callspec", None)
        if callspec is None or callspec.params.get("backend") not in ("cuda", "cpu"):
            continue
        skips = CUDA_SKIPS if callspec.params["backend"] == "cuda" else CPU_SKIPS
        reason = skips.get(getattr(item, "originalname", item.name))
        if reason:
            item.add_marker(pytest.mark.skip(reason=reason))


# -- moving arrays to and from a backend -----------------------------------------------------

# numpy dtype → torch dtype name. Everything but bool travels as a same-width signed integer
# (which every torch version converts from numpy) and is viewed as its real dtype on the GPU.
_TORCH_NAME = {
    np.dtype(np.bool_): "bool",
    np.dtype(np.int8): "int8", np.dtype(np.int16): "int16",
    np.dtype(np.int32): "int32", np.dtype(np.int64): "int64",
    np.dtype(np.uint8): "uint8", np.dtype(np.uint16): "uint16",
    np.dtype(np.uint32): "uint32", np.dtype(np.uint64): "uint64",
    np.dtype(np.float16): "float16", np.dtype(np.float32): "float32", np.dtype(np.float64): "float64",
    np.dtype(ml_dtypes.bfloat16): "bfloat16",
    np.dtype(ml_dtypes.float8_e4m3fn): "float8_e4m3fn",
    np.dtype(ml_dtypes.float8_e5m2): "float8_e5m2",
}  # fmt: skip
_CARRIER = {1: np.int8, 2: np.int16, 4: np.int32, 8: np.int64}

# dtypes numpy cannot compute with natively (ml_dtypes): floats for the helpers below
_ML_DTYPES = {
    np.dtype(ml_dtypes.bfloat16),
    np.dtype(ml_dtypes.float8_e4m3fn),
    np.dtype(ml_dtypes.float8_e5m2),
}


def _torch_dtype(torch, dtype: np.dtype):
    name = _TORCH_NAME.get(np.dtype(dtype))
    if name is None:
        raise TypeError(f"no torch dtype for numpy {dtype}")
    tdtype = getattr(torch, name, None)
    if tdtype is None:
        pytest.skip(f"torch {torch.__version__} has no torch.{name}")
    return tdtype


def _strided_layout(array: np.ndarray):
    """(extent, element strides) of a non-contiguous array that a kernel addresses through its
    own strides, or None for a contiguous one (or one that can't be reproduced: negative
    strides), which travels as a contiguous copy."""
    if array.flags.c_contiguous or array.size == 0:
        return None
    item = array.itemsize
    if any(s < 0 or s % item for s in array.strides):
        return None
    strides = tuple(s // item for s in array.strides)
    extent = 1 + sum((n - 1) * s for n, s in zip(array.shape, strides))
    return extent, strides


def _span(array: np.ndarray, extent: int) -> np.ndarray:
    """A contiguous copy of the memory from `array`'s first to its last element."""
    return np.lib.stride_tricks.as_strided(array, shape=(extent,), strides=(array.itemsize,)).copy()


def clone_array(array: np.ndarray) -> np.ndarray:
    """A copy with the same element strides (gaps included), so a kernel indexing it with
    the original's strides sees the same elements."""
    layout = _strided_layout(array)
    if layout is None:
        return array.copy()
    extent, strides = layout
    buffer = _span(array, extent)
    return np.lib.stride_tricks.as_strided(
        buffer, shape=array.shape, strides=tuple(s * array.itemsize for s in strides)
    )


def to_device(array: np.ndarray, backend: str):
    """The array as the backend takes it: the numpy array itself, or a CUDA torch tensor with
    the same dtype (bf16/fp8 from their bit patterns), shape and element strides."""
    if backend == "interpreter":
        return array
    import torch

    tdtype = _torch_dtype(torch, array.dtype)
    layout = _strided_layout(array)
    host = np.ascontiguousarray(array) if layout is None else _span(array, layout[0])
    if array.dtype == np.bool_:
        device = torch.from_numpy(host).cuda()
    else:
        device = torch.from_numpy(host.view(_CARRIER[array.itemsize])).cuda().view(tdtype)
    if layout is not None:
        device = device.as_strided(array.shape, layout[1])
    return device


def from_device(value, backend: str, dtype) -> np.ndarray:
    """The inverse of `to_device`: the tensor's elements as a numpy array of `dtype`."""
    if backend == "interpreter":
        return value
    import torch

    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return value.cpu().numpy()
    carrier = _CARRIER[dtype.itemsize]
    return value.view(_torch_dtype(torch, np.dtype(carrier))).cpu().numpy().view(dtype)


# -- the differential check ------------------------------------------------------------------


def differential_tolerance(dtype) -> float:
    """Relative tolerance between a GPU result and the interpreter's: two units in the last
    place of the array's dtype, but no tighter than 2^-16 (about 128 fp32 ulps: room for
    approximate transcendental functions and for sums taken in another order)."""
    return max(2 * ulp_tolerance(dtype), 2.0**-16)


def assert_matches_interpreter(gpu, interp, what: str = "array") -> None:
    """GPU result vs interpreter result: ints/bools bit-exact; floats within
    rtol * |interp| + rtol * max|interp| (NaN where the interpreter has NaN, same infinities)."""
    gpu, interp = np.asarray(gpu), np.asarray(interp)
    assert gpu.shape == interp.shape, f"{what}: shape {gpu.shape} != {interp.shape}"
    if not is_float(interp.dtype):
        bad = gpu != interp
        if bad.any():
            where = [tuple(int(i) for i in w) for w in np.argwhere(bad)[:5]]
            raise AssertionError(
                f"GPU and interpreter disagree on {what} ({interp.dtype}) at {int(bad.sum())} of "
                f"{bad.size} elements; first at "
                + ", ".join(
                    f"{w}: GPU {gpu[w].item()!r}, interpreter {interp[w].item()!r}" for w in where
                )
            )
        return
    g, r = f64(gpu), f64(interp)
    rtol = differential_tolerance(interp.dtype)
    finite = np.isfinite(r)
    scale = float(np.abs(r[finite]).max()) if finite.any() else 0.0
    info = ml_dtypes.finfo(interp.dtype) if interp.dtype in _ML_DTYPES else np.finfo(interp.dtype)
    atol = max(rtol * scale, float(info.tiny))  # tiny: denormals flushed on one side only
    with np.errstate(invalid="ignore"):
        close = np.abs(g - r) <= rtol * np.abs(r) + atol
    bad = np.where(np.isnan(r), ~np.isnan(g), np.where(np.isinf(r), g != r, ~close))
    if bad.any():
        where = [tuple(int(i) for i in w) for w in np.argwhere(bad)[:5]]
        raise AssertionError(
            f"GPU and interpreter disagree on {what} ({interp.dtype}) at {int(bad.sum())} of "
            f"{bad.size} elements (rtol {rtol:.3g}, atol {atol:.3g}); first at "
            + ", ".join(f"{w}: GPU {float(g[w])!r}, interpreter {float(r[w])!r}" for w in where)
        )


_STATS = {
    "compared with the interpreter": 0,
    "not compared (atomics)": 0,
    "checked against the test's own bound": 0,
    "assembled for GPU targets": 0,
}


def _has_atomics(compiled) -> bool:
    asm = getattr(compiled, "asm", None)
    try:
        text = asm.get("ttir") if asm is not None else None
    except Exception:
        text = None
    return isinstance(text, str) and "tt.atomic" in text


def _flush_c_stdio() -> None:
    """Push device printf output (written by the CUDA driver through C stdio) to fd 1 now,
    where capfd sees it."""
    try:
        ctypes.CDLL(None).fflush(None)
    except Exception:
        pass


def _arg_name(kernel, index: int) -> str:
    names = getattr(kernel, "arg_names", None)
    if names is None and hasattr(kernel, "fn"):
        names = getattr(kernel.fn, "arg_names", None)
    if names and index < len(names):
        return f"argument {index} ({names[index]!r})"
    return f"argument {index}"


# -- compiling the interpreter's specialization for GPU targets (CPU machines) ---------------


DEFAULT_GPU_TARGETS = "sm_80,sm_90,gfx942"
# what the AMD target refuses with a message, by the reason the summary counts
AMD_REFUSALS = {"LDS": "bytes of LDS (shared memory)"}


def gpu_targets() -> list[str]:
    value = os.environ.get("KERNELLAB_TEST_GPU_TARGETS", DEFAULT_GPU_TARGETS)
    if value.strip().lower() in ("", "0", "none", "off", "no") or _NO_TOOLCHAIN:
        return []
    return [t.strip() for t in value.split(",") if t.strip()]


_NO_TOOLCHAIN: list[str] = []  # why cubins can't be made here (then the check is off)


_ASSEMBLED: set = set()


def assemble_for_gpu(kernel, args, kwargs, targets) -> None:
    """Compile `kernel[...](*args, **kwargs)`'s specialization for each GPU target through to
    a cubin (no GPU needed). Autotuned/heuristic kernels are skipped (their configs decide)."""
    from kernellab.runtime.jit import JITFunction

    if not isinstance(kernel, JITFunction) or not targets:
        return
    import kernellab as kl

    bound = kernel.binder.bind(tuple(args), dict(kwargs))
    signature, constexprs, attrs = kernel.binder.compile_args(bound)
    options = dict(bound.options)
    if kernel.debug is not None:
        options.setdefault("debug", kernel.debug)
    for target in targets:
        key = (id(kernel), bound.key, target)
        if key in _ASSEMBLED:
            continue
        from kernellab.backends.nvidia.cubin import ToolchainUnavailableError

        try:
            with contextlib.redirect_stdout(io.StringIO()):  # static_print already printed once
                compiled = kl.compile(
                    kernel, signature=signature, constexprs=constexprs, attrs=attrs or None,
                    target=target, **options,
                )  # fmt: skip
        except ToolchainUnavailableError as e:
            _NO_TOOLCHAIN.append(str(e).splitlines()[0] if str(e) else type(e).__name__)
            return
        except Exception as e:  # noqa: BLE001 - what AMD can't take is counted, not hidden
            reason = next((why for why, text in AMD_REFUSALS.items() if text in str(e)), None)
            if not target.startswith("gfx") or reason is None:
                raise
            label = f"not assembled for AMD ({reason})"
            _STATS[label] = _STATS.get(label, 0) + 1
            continue
        if target.startswith("gfx"):  # AMD, compile-only: LLVM's AMDGPU assembly
            assert "s_endpgm" in compiled.asm["amdgcn"], f"{target}: the compile made no AMDGPU code"
        else:
            cubin = compiled.asm["cubin"]
            assert isinstance(cubin, bytes) and cubin, f"{target}: the compile made no cubin"
        _ASSEMBLED.add(key)
        _STATS["assembled for GPU targets"] += 1


# -- the launch fixture ----------------------------------------------------------------------


@pytest.fixture
def launch(backend):
    """`launch(kernel, grid, *args, **meta)`: run `kernel[grid]` on the backend; numpy array
    arguments are copied there and back, so the caller reads results from its own arrays.
    On the GPU the launch is also run on the interpreter and the two compared.

    `launch.own_bound(...)` skips that comparison, for a kernel that rounds an intermediate
    (a dot's result cast to fp16 and fed to another dot): its sums run in another order on
    each side, an intermediate may round one ulp apart, and the difference legitimately
    exceeds the differential tolerance. The caller then checks against its own float64 bound."""

    def run_interpreter(kernel, grid, *args, **kwargs):
        result = kernel[grid](*args, **kwargs)
        assemble_for_gpu(kernel, args, kwargs, gpu_targets())
        return result

    def run_cuda(kernel, grid, *args, compare=True, **kwargs):
        import torch

        # the same array passed twice stays one buffer (aliasing is part of the kernel's contract)
        unique: dict[int, int] = {}  # id(array) → first argument index
        for i, a in enumerate(args):
            if isinstance(a, np.ndarray):
                unique.setdefault(id(a), i)
        reference = {i: clone_array(args[i]) for i in unique.values()}  # before anything runs
        device = {i: to_device(args[i], "cuda") for i in unique.values()}
        device_args = [device[unique[id(a)]] if isinstance(a, np.ndarray) else a for a in args]
        compiled = kernel[grid](*device_args, **kwargs)
        torch.cuda.synchronize()
        _flush_c_stdio()
        for i in unique.values():
            args[i][...] = from_device(device[i], "cuda", args[i].dtype)
        if _has_atomics(compiled):
            _STATS["not compared (atomics)"] += 1
            return compiled
        if not compare:
            _STATS["checked against the test's own bound"] += 1
            return compiled
        interp_args = [reference[unique[id(a)]] if isinstance(a, np.ndarray) else a for a in args]
        with contextlib.redirect_stdout(io.StringIO()):  # prints were the GPU's to make
            kernel[grid](*interp_args, **kwargs)
        for i in unique.values():
            assert_matches_interpreter(args[i], reference[i], _arg_name(kernel, i))
        _STATS["compared with the interpreter"] += 1
        return compiled

    def run_cpu(kernel, grid, *args, compare=True, **kwargs):
        unique: dict[int, int] = {}
        for i, a in enumerate(args):
            if isinstance(a, np.ndarray):
                unique.setdefault(id(a), i)
        reference = {i: clone_array(args[i]) for i in unique.values()}  # before anything runs
        compiled = kernel[grid](*args, target="cpu", **kwargs)
        _flush_c_stdio()
        if _has_atomics(compiled):
            _STATS["not compared (atomics)"] += 1
            return compiled
        if not compare:
            _STATS["checked against the test's own bound"] += 1
            return compiled
        interp_args = [reference[unique[id(a)]] if isinstance(a, np.ndarray) else a for a in args]
        with contextlib.redirect_stdout(io.StringIO()):  # prints were the CPU's to make
            kernel[grid](*interp_args, **kwargs)
        for i in unique.values():
            assert_matches_interpreter(args[i], reference[i], _arg_name(kernel, i))
        _STATS["compared with the interpreter"] += 1
        return compiled

    if backend == "cuda":
        run = run_cuda
        run.own_bound = functools.partial(run_cuda, compare=False)
    elif backend == "cpu":
        run = run_cpu
        run.own_bound = functools.partial(run_cpu, compare=False)
    else:
        run = run_interpreter
        run.own_bound = run_interpreter
    return run


def pytest_sessionfinish(session, exitstatus):
    workeroutput = getattr(session.config, "workeroutput", None)  # a pytest-xdist worker
    if workeroutput is not None:
        workeroutput["kernellab_stats"] = dict(_STATS)
        workeroutput["kernellab_no_toolchain"] = list(_NO_TOOLCHAIN[:1])


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):  # pytest-xdist, on the controller: add up the workers' counts
    output = getattr(node, "workeroutput", None) or {}
    for what, n in output.get("kernellab_stats", {}).items():
        _STATS[what] = _STATS.get(what, 0) + n
    if output.get("kernellab_no_toolchain") and not _NO_TOOLCHAIN:
        _NO_TOOLCHAIN.extend(output["kernellab_no_toolchain"])


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    parts = [f"{n} {what}" for what, n in _STATS.items() if n]
    if parts:
        terminalreporter.write_line("kernellab launches: " + ", ".join(parts))
    if _NO_TOOLCHAIN:
        terminalreporter.write_line(
            "kernellab: test kernels were NOT assembled for GPU targets: " + _NO_TOOLCHAIN[0]
        )


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


def toward_zero_reference(x: np.ndarray, dtype) -> np.ndarray:
    """x rounded toward zero to a float format of at most 16 bits, by search over every finite
    value of the format (independent of any rounding code under test); magnitudes beyond the
    largest saturate."""
    values = np.arange(2 ** (8 * np.dtype(dtype).itemsize)).astype(f"u{np.dtype(dtype).itemsize}")
    with np.errstate(invalid="ignore"):  # the NaN bit patterns
        values = values.view(dtype).astype(np.float64)
    table = np.unique(np.abs(values[np.isfinite(values)]))
    mag = table[np.searchsorted(table, np.abs(x.astype(np.float64)), side="right") - 1]
    return np.copysign(mag, x).astype(dtype)


def poison(shape, dtype) -> np.ndarray:
    """An output buffer no correct kernel result can equal by accident: NaN for floats,
    0xA5 bytes for integers."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f" or dtype in _ML_DTYPES:
        return np.full(shape, np.nan, dtype=dtype)
    if dtype == np.bool_:
        raise ValueError("a bool buffer cannot be poisoned; store booleans into int8")
    out = np.empty(shape, dtype=dtype)
    out.view(np.uint8)[...] = INT_SENTINEL_BYTE
    return out


def is_float(dtype) -> bool:
    dtype = np.dtype(dtype)
    return dtype.kind == "f" or dtype in _ML_DTYPES


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
    return float(ml_dtypes.finfo(dtype).eps) if dtype in _ML_DTYPES else float(np.finfo(dtype).eps)


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
