"""End to end on a real GPU (`-m gpu`; skipped without torch + CUDA): Triton's tutorial kernels
from kernellab.examples (vector add, fused softmax, layer norm forward, matmul with autotuning
and a leaky-ReLU epilogue) launched on torch CUDA tensors and checked element by element against
float64 references; the disk cache reused by a second process; warm launches queued on torch's
current stream; a failing device_assert reported (in a subprocess: it leaves the CUDA context
unusable).
"""

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import kernellab as kl
from kernellab import examples
from kernellab.examples import (
    add,
    add_kernel,
    layer_norm_config,
    layer_norm_kernel,
    layer_norm_reference,
    softmax_config,
    softmax_persistent_kernel,
    softmax_reference,
)

pytestmark = pytest.mark.gpu

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="module")
def torch(cuda_torch):
    return cuda_torch


def to_cuda(torch, array: np.ndarray):
    return torch.from_numpy(np.ascontiguousarray(array)).cuda()


def nan_like(torch, shape, dtype):
    return torch.full(shape, float("nan"), dtype=dtype, device="cuda")


def assert_close64(actual, expected, rtol, atol, what=""):
    """Every element within atol + rtol*|expected| of a float64 reference; NaN never passes."""
    actual = np.asarray(actual, dtype=np.float64)
    expected = np.asarray(expected, dtype=np.float64)
    assert actual.shape == expected.shape
    bound = atol + rtol * np.abs(expected)
    bad = ~(np.abs(actual - expected) <= bound)
    if bad.any():
        i = tuple(int(v) for v in np.argwhere(bad)[0])
        raise AssertionError(
            f"{what}: {int(bad.sum())} of {bad.size} elements off; first at {i}: got {actual[i]!r}, "
            f"expected {expected[i]!r} (bound {np.broadcast_to(bound, expected.shape)[i]:.3g})"
        )


def child_env(**extra) -> dict:
    path = os.pathsep.join(p for p in (REPO, os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "PYTHONPATH": path, "PYTHONUNBUFFERED": "1", **extra}


def run_child(tmp_path, name: str, code: str, **env) -> tuple[dict | None, str]:
    """Run `code` as a script file (kernels need their source) in a fresh process; returns the
    JSON it printed after 'RESULT ' (None if it printed none) and its whole output."""
    script = tmp_path / f"{name}.py"
    script.write_text(textwrap.dedent(code))
    run = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, env=child_env(**env),
        timeout=240, cwd=str(tmp_path),
    )  # fmt: skip
    output = run.stdout + run.stderr
    for line in run.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT ") :]), output
    return None, output


# -- 01 vector add ---------------------------------------------------------------------------


@pytest.mark.parametrize("size", [1, 98432, (1 << 20) + 3])
def test_vector_add_matches_torch(torch, size):
    x = torch.rand(size, device="cuda")
    y = torch.rand(size, device="cuda")
    out = add(x, y, torch.full_like(x, float("nan")))
    torch.cuda.synchronize()
    assert torch.equal(out, x + y)  # one correctly rounded fp32 add: bit for bit


# -- 02 fused softmax (the tutorial's persistent version) ------------------------------------


@pytest.mark.parametrize("shape", [(1823, 781), (37, 300), (64, 4096)])
def test_fused_softmax_matches_float64(torch, shape):
    rng = np.random.default_rng()
    x_np = (rng.standard_normal(shape) * 3).astype(np.float32)
    x = to_cuda(torch, x_np)
    n_rows, n_cols = shape
    y = nan_like(torch, shape, torch.float32)
    block, num_warps = softmax_config(n_cols)
    programs = min(n_rows, 132 * 4)
    softmax_persistent_kernel[(programs,)](y, x, x.stride(0), y.stride(0), n_rows, n_cols,
                                           BLOCK_SIZE=block, num_stages=2, num_warps=num_warps)  # fmt: skip
    torch.cuda.synchronize()
    ref = softmax_reference(x_np)
    got = y.cpu().numpy()
    # fp32 exp (approximate on GPUs: a few ulp), an fp32 sum and one division
    assert_close64(got, ref, rtol=1e-5, atol=1e-8, what="softmax")
    assert_close64(got.sum(axis=1), np.ones(n_rows), rtol=0, atol=1e-5, what="row sums")
    assert torch.allclose(y, torch.softmax(x, dim=1), rtol=1e-5, atol=1e-7)


# -- 05 layer norm forward -------------------------------------------------------------------


@pytest.mark.parametrize("M, N, block", [(24, 300, None), (64, 4096, None), (16, 1000, 256)])
def test_layer_norm_forward_matches_float64(torch, M, N, block):
    rng = np.random.default_rng()
    eps = 1e-5
    x_np = (-2.3 + 0.5 * rng.standard_normal((M, N))).astype(np.float16)
    w_np = rng.uniform(0.5, 1.5, N).astype(np.float16)
    b_np = rng.uniform(-1, 1, N).astype(np.float16)
    x, w, b = to_cuda(torch, x_np), to_cuda(torch, w_np), to_cuda(torch, b_np)
    y = nan_like(torch, (M, N), torch.float16)
    mean = nan_like(torch, (M,), torch.float32)
    rstd = nan_like(torch, (M,), torch.float32)
    BLOCK_SIZE, num_warps = layer_norm_config(block or N, 2)  # `block`: several passes a row
    layer_norm_kernel[(M,)](x, y, w, b, mean, rstd, x.stride(0), N, eps,
                            BLOCK_SIZE=BLOCK_SIZE, num_warps=num_warps)  # fmt: skip
    torch.cuda.synchronize()
    ref_y, ref_mean, ref_rstd = layer_norm_reference(x_np, w_np, b_np, eps)
    assert_close64(mean.cpu().numpy(), ref_mean, rtol=1e-5, atol=0, what="mean")
    assert_close64(rstd.cpu().numpy(), ref_rstd, rtol=1e-4, atol=0, what="rstd")
    # y is stored as fp16: half an ulp of rounding, plus fp32 error in the statistics
    assert_close64(y.cpu().numpy(), ref_y, rtol=2**-11, atol=1e-4, what="y")


# -- 03 matrix multiplication (autotuned, grouped ordering, leaky-ReLU epilogue) --------------


matmul_kernel = kl.autotune(
    configs=[
        kl.Config({"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 8},
                  num_stages=3, num_warps=4),
        kl.Config({"BLOCK_SIZE_M": 32, "BLOCK_SIZE_N": 32, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 4},
                  num_stages=3, num_warps=4),
    ],
    key=["M", "N", "K"],
)(examples.matmul_kernel)  # fmt: skip


@pytest.mark.parametrize("M, N, K", [(72, 80, 56), (512, 384, 256)])
@pytest.mark.parametrize("activation", ["", "leaky_relu"])
def test_matmul_matches_float64(torch, M, N, K, activation):
    rng = np.random.default_rng()
    a_np = rng.standard_normal((M, K)).astype(np.float16)
    b_np = rng.standard_normal((K, N)).astype(np.float16)
    a, b = to_cuda(torch, a_np), to_cuda(torch, b_np)
    c = nan_like(torch, (M, N), torch.float16)
    grid = lambda META: (kl.cdiv(M, META["BLOCK_SIZE_M"]) * kl.cdiv(N, META["BLOCK_SIZE_N"]),)
    matmul_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                        c.stride(0), c.stride(1), ACTIVATION=activation)  # fmt: skip
    torch.cuda.synchronize()
    a64, b64 = a_np.astype(np.float64), b_np.astype(np.float64)
    ref = a64 @ b64
    # fp16 products are exact in fp32; the fp32 sum errs by at most (K+1) 2^-24 sum|a||b|
    sum_bound = (K + 1) * 2.0**-24 * (np.abs(a64) @ np.abs(b64))
    if activation == "leaky_relu":
        ref = np.where(ref >= 0, ref, 0.01 * ref)
    # then one rounding to fp16 (half an ulp: 2^-11 relative)
    assert_close64(c.cpu().numpy(), ref, rtol=2**-11 + 1e-6, atol=sum_bound + 1e-6, what="c")
    assert matmul_kernel.best_config in matmul_kernel.configs


# -- the disk cache across processes ---------------------------------------------------------

CACHE_CHILD = """
import json, sys
import torch
import kernellab as kl
import kernellab.language as tl

@kl.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)

n = 100_003
x = torch.randn(n, device="cuda")
y = torch.randn(n, device="cuda")
out = torch.full((n,), float("nan"), device="cuda")
ck = add_kernel[(kl.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
torch.cuda.synchronize()
print("RESULT " + json.dumps({
    "cache_hit": bool(ck.metadata.get("cache_hit")),
    "correct": bool(torch.equal(out, x + y)),
    "target": str(ck.metadata.get("target")),
}))
"""


def test_a_new_process_reuses_the_disk_cache(torch, tmp_path):
    cache = tmp_path / "cache"
    first, out1 = run_child(tmp_path, "first", CACHE_CHILD, KERNELLAB_CACHE_DIR=str(cache))
    assert first is not None, out1
    assert first["correct"] and not first["cache_hit"], first
    assert first["target"].startswith("sm_"), first
    assert cache.is_dir() and any(cache.iterdir()), "the first process wrote no cache entry"
    second, out2 = run_child(tmp_path, "second", CACHE_CHILD, KERNELLAB_CACHE_DIR=str(cache))
    assert second is not None, out2
    assert second["correct"] and second["cache_hit"], second


# -- warm launches go on torch's current stream ----------------------------------------------


def test_warm_launches_queue_on_torchs_current_stream(torch):
    n = 1 << 22
    x = torch.randn(n, device="cuda")
    y = torch.randn(n, device="cuda")
    out = nan_like(torch, (n,), torch.float32)
    grid = (kl.cdiv(n, 1024),)
    add_kernel[grid](x, y, out, n, BLOCK_SIZE=1024)  # compiles and loads: warm from here on
    # load the check's own kernels now: CUDA loads modules lazily, and a first isnan taking
    # longer than the sleep below would let the queued kernel finish before the check ran
    assert not bool(torch.isnan(out).all().item())
    torch.cuda.synchronize()
    stream = torch.cuda.Stream()
    can_sleep = hasattr(torch.cuda, "_sleep")
    for factor in (2.0, 3.0, 5.0):
        out.fill_(float("nan"))
        torch.cuda.synchronize()
        with torch.cuda.stream(stream):
            if can_sleep:
                torch.cuda._sleep(200_000_000)  # the stream is busy for about 0.1 s first
            y2 = y * factor  # queued behind the sleep: the kernel must wait for it
            slept = torch.cuda.Event()
            slept.record(stream)
            add_kernel[grid](x, y2, out, n, BLOCK_SIZE=1024)
            done = torch.cuda.Event()
            done.record(stream)
        if can_sleep:
            untouched = bool(torch.isnan(out).all().item())
            # if the sleep still runs after that check (other processes may hold the GPU for
            # longer than it lasts), a kernel queued behind it cannot have written anything yet
            if not slept.query():
                assert untouched, "the kernel ran before its stream's earlier work"
        done.synchronize()  # waits for `stream` only
        assert torch.equal(out, x + y * factor)


# -- device_assert on the GPU ----------------------------------------------------------------

ASSERT_CHILD = """
import ctypes, json
import torch
import kernellab as kl
import kernellab.language as tl
from kernellab.backends.nvidia import driver

@kl.jit(debug=True)
def check_positive(x_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    tl.device_assert(x > 0, "x must be positive")

x = torch.rand(16, device="cuda") + 0.5
check_positive[(1,)](x, BLOCK=16)
driver.synchronize()
passed = True
x[5] = -1.0
error = ""
try:
    check_positive[(1,)](x, BLOCK=16)
    driver.synchronize()
except Exception as e:
    error = f"{type(e).__name__}: {e}"
ctypes.CDLL(None).fflush(None)
print("RESULT " + json.dumps({"passed_when_true": passed, "error": error}), flush=True)
"""


def test_a_failing_device_assert_is_reported(torch, tmp_path):
    result, output = run_child(tmp_path, "assert", ASSERT_CHILD)
    assert result is not None, output
    assert result["passed_when_true"]
    assert "CUDA_ERROR_ASSERT" in result["error"], output
    assert "restart" in result["error"].lower(), result["error"]
    assert "x must be positive" in output, output  # the driver prints the failed assertion
