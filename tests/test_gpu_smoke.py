"""End to end on a real GPU (`-m gpu`; skipped without torch + CUDA): Triton's tutorial kernels
(vector add, fused softmax, layer norm forward, matmul with autotuning and a leaky-ReLU epilogue)
launched on torch CUDA tensors and checked element by element against float64 references; the
disk cache reused by a second process; warm launches queued on torch's current stream; a failing
device_assert reported (in a subprocess: it leaves the CUDA context unusable).
"""

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import kernellab as kl
import kernellab.language as tl

pytestmark = pytest.mark.gpu

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="module")
def torch():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch sees no CUDA device")
    return torch


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


@kl.jit
def add_kernel(x_ptr, y_ptr, output_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    block_start = pid * BLOCK_SIZE
    offsets = block_start + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    output = x + y
    tl.store(output_ptr + offsets, output, mask=mask)


def add(torch, x, y):
    output = torch.full_like(x, float("nan"))
    n_elements = output.numel()
    grid = lambda meta: (kl.cdiv(n_elements, meta["BLOCK_SIZE"]),)
    add_kernel[grid](x, y, output, n_elements, BLOCK_SIZE=1024)
    return output


@pytest.mark.parametrize("size", [1, 98432, (1 << 20) + 3])
def test_vector_add_matches_torch(torch, size):
    x = torch.rand(size, device="cuda")
    y = torch.rand(size, device="cuda")
    out = add(torch, x, y)
    torch.cuda.synchronize()
    assert torch.equal(out, x + y)  # one correctly rounded fp32 add: bit for bit


# -- 02 fused softmax (the tutorial's persistent version) ------------------------------------


@kl.jit
def softmax_kernel(output_ptr, input_ptr, input_row_stride, output_row_stride, n_rows, n_cols,
                   BLOCK_SIZE: tl.constexpr, num_stages: tl.constexpr):  # fmt: skip
    row_start = tl.program_id(0)
    row_step = tl.num_programs(0)
    for row_idx in tl.range(row_start, n_rows, row_step, num_stages=num_stages):
        row_start_ptr = input_ptr + row_idx * input_row_stride
        col_offsets = tl.arange(0, BLOCK_SIZE)
        input_ptrs = row_start_ptr + col_offsets
        mask = col_offsets < n_cols
        row = tl.load(input_ptrs, mask=mask, other=-float("inf"))
        row_minus_max = row - tl.max(row, axis=0)
        numerator = tl.exp(row_minus_max)
        denominator = tl.sum(numerator, axis=0)
        softmax_output = numerator / denominator
        output_row_start_ptr = output_ptr + row_idx * output_row_stride
        output_ptrs = output_row_start_ptr + col_offsets
        tl.store(output_ptrs, softmax_output, mask=mask)


@pytest.mark.parametrize("shape", [(1823, 781), (37, 300), (64, 4096)])
def test_fused_softmax_matches_float64(torch, shape):
    rng = np.random.default_rng()
    x_np = (rng.standard_normal(shape) * 3).astype(np.float32)
    x = to_cuda(torch, x_np)
    n_rows, n_cols = shape
    y = nan_like(torch, shape, torch.float32)
    block = kl.next_power_of_2(n_cols)
    num_warps = 4 if block <= 2048 else 8 if block <= 4096 else 16
    programs = min(n_rows, 132 * 4)
    softmax_kernel[(programs,)](y, x, x.stride(0), y.stride(0), n_rows, n_cols,
                                BLOCK_SIZE=block, num_stages=2, num_warps=num_warps)  # fmt: skip
    torch.cuda.synchronize()
    z = x_np.astype(np.float64)
    e = np.exp(z - z.max(axis=1, keepdims=True))
    ref = e / e.sum(axis=1, keepdims=True)
    got = y.cpu().numpy()
    # fp32 exp (approximate on GPUs: a few ulp), an fp32 sum and one division
    assert_close64(got, ref, rtol=1e-5, atol=1e-8, what="softmax")
    assert_close64(got.sum(axis=1), np.ones(n_rows), rtol=0, atol=1e-5, what="row sums")
    assert torch.allclose(y, torch.softmax(x, dim=1), rtol=1e-5, atol=1e-7)


# -- 05 layer norm forward -------------------------------------------------------------------


@kl.jit
def _layer_norm_fwd_fused(X, Y, W, B, Mean, Rstd, stride, N, eps, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    Y += row * stride
    X += row * stride
    mean = 0
    _mean = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        a = tl.load(X + cols, mask=cols < N, other=0.0).to(tl.float32)
        _mean += a
    mean = tl.sum(_mean, axis=0) / N
    _var = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        x = tl.load(X + cols, mask=cols < N, other=0.0).to(tl.float32)
        x = tl.where(cols < N, x - mean, 0.0)
        _var += x * x
    var = tl.sum(_var, axis=0) / N
    rstd = 1 / tl.sqrt(var + eps)
    tl.store(Mean + row, mean)
    tl.store(Rstd + row, rstd)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        mask = cols < N
        w = tl.load(W + cols, mask=mask)
        b = tl.load(B + cols, mask=mask)
        x = tl.load(X + cols, mask=mask, other=0.0).to(tl.float32)
        x_hat = (x - mean) * rstd
        y = x_hat * w + b
        tl.store(Y + cols, y, mask=mask)


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
    BLOCK_SIZE = block or min(65536 // 2, kl.next_power_of_2(N))
    num_warps = min(max(BLOCK_SIZE // 256, 1), 8)
    _layer_norm_fwd_fused[(M,)](x, y, w, b, mean, rstd, x.stride(0), N, eps,
                                BLOCK_SIZE=BLOCK_SIZE, num_warps=num_warps)  # fmt: skip
    torch.cuda.synchronize()
    x64 = x_np.astype(np.float64)
    ref_mean = x64.mean(axis=1)
    ref_rstd = 1 / np.sqrt(x64.var(axis=1) + eps)
    ref_y = (x64 - ref_mean[:, None]) * ref_rstd[:, None] * w_np.astype(np.float64) + b_np
    assert_close64(mean.cpu().numpy(), ref_mean, rtol=1e-5, atol=0, what="mean")
    assert_close64(rstd.cpu().numpy(), ref_rstd, rtol=1e-4, atol=0, what="rstd")
    # y is stored as fp16: half an ulp of rounding, plus fp32 error in the statistics
    assert_close64(y.cpu().numpy(), ref_y, rtol=2**-11, atol=1e-4, what="y")


# -- 03 matrix multiplication (autotuned, grouped ordering, leaky-ReLU epilogue) --------------


@kl.autotune(
    configs=[
        kl.Config({"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 8},
                  num_stages=3, num_warps=4),
        kl.Config({"BLOCK_SIZE_M": 32, "BLOCK_SIZE_N": 32, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 4},
                  num_stages=3, num_warps=4),
    ],
    key=["M", "N", "K"],
)  # fmt: skip
@kl.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                  stride_cm, stride_cn, BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr,
                  BLOCK_SIZE_K: tl.constexpr, GROUP_SIZE_M: tl.constexpr,
                  ACTIVATION: tl.constexpr):  # fmt: skip
    pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_SIZE_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    offs_am = (pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)) % M
    offs_bn = (pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)) % N
    offs_k = tl.arange(0, BLOCK_SIZE_K)
    a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
    accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for k in range(tl.cdiv(K, BLOCK_SIZE_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_SIZE_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_SIZE_K, other=0.0)
        accumulator = tl.dot(a, b, accumulator)
        a_ptrs += BLOCK_SIZE_K * stride_ak
        b_ptrs += BLOCK_SIZE_K * stride_bk
    if ACTIVATION == "leaky_relu":
        accumulator = leaky_relu(accumulator)
    c = accumulator.to(tl.float16)
    offs_cm = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    offs_cn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
    tl.store(c_ptrs, c, mask=c_mask)


@kl.jit
def leaky_relu(x):
    return tl.where(x >= 0, x, 0.01 * x)


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
    torch.cuda.synchronize()
    stream = torch.cuda.Stream()
    can_sleep = hasattr(torch.cuda, "_sleep")
    for factor in (2.0, 3.0, 5.0):
        out.fill_(float("nan"))
        torch.cuda.synchronize()
        with torch.cuda.stream(stream):
            if can_sleep:
                torch.cuda._sleep(50_000_000)  # the stream is busy for tens of ms first
            y2 = y * factor  # queued behind the sleep: the kernel must wait for it
            add_kernel[grid](x, y2, out, n, BLOCK_SIZE=1024)
            done = torch.cuda.Event()
            done.record(stream)
        if can_sleep and not stream.query():
            # still sleeping: a kernel queued behind it cannot have written anything yet
            assert bool(torch.isnan(out).all().item()), (
                "the kernel ran before its stream's earlier work"
            )
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
