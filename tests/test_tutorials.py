"""Triton's tutorial kernels, written as the tutorials write them with only the imports changed.

Host code uses numpy instead of torch (strides in elements come from `stride`), and the GPU
occupancy arithmetic of the softmax tutorial is replaced by a fixed program count; the kernels
are unchanged. Results are checked element by element against float64 numpy references.
"""

import numpy as np
import pytest
from conftest import poison

import kernellab as triton
import kernellab.language as tl
from kernellab.examples import matmul_persistent_kernel


def stride(x: np.ndarray, dim: int) -> int:
    """torch's `x.stride(dim)`: the step in elements."""
    return x.strides[dim] // x.itemsize


# -- 01 vector add ---------------------------------------------------------------------------


@triton.jit
def add_kernel(x_ptr, y_ptr, output_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    block_start = pid * BLOCK_SIZE
    offsets = block_start + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    output = x + y
    tl.store(output_ptr + offsets, output, mask=mask)


def add(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    output = np.full_like(x, np.nan)
    n_elements = output.size
    grid = lambda meta: (triton.cdiv(n_elements, meta["BLOCK_SIZE"]),)  # noqa: E731
    add_kernel[grid](x, y, output, n_elements, BLOCK_SIZE=1024)
    return output


def test_01_vector_add():
    rng = np.random.default_rng()
    size = 98432
    x = rng.random(size, dtype=np.float32)
    y = rng.random(size, dtype=np.float32)
    np.testing.assert_allclose(add(x, y), x.astype(np.float64) + y, rtol=2**-24, atol=0)


# -- 02 fused softmax ------------------------------------------------------------------------


@triton.jit
def softmax_kernel(output_ptr, input_ptr, input_row_stride, output_row_stride, n_rows, n_cols,
                   BLOCK_SIZE: tl.constexpr, num_stages: tl.constexpr):  # fmt: skip
    # starting row of the program
    row_start = tl.program_id(0)
    row_step = tl.num_programs(0)
    for row_idx in tl.range(row_start, n_rows, row_step, num_stages=num_stages):
        # The stride represents how much we need to increase the pointer to advance 1 row
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


def softmax(x: np.ndarray, num_programs: int = 8) -> np.ndarray:
    n_rows, n_cols = x.shape
    BLOCK_SIZE = triton.next_power_of_2(n_cols)
    num_warps = 8
    num_stages = 2
    y = np.full_like(x, np.nan)
    kernel = softmax_kernel.warmup(y, x, stride(x, 0), stride(y, 0), n_rows, n_cols,
                                   BLOCK_SIZE=BLOCK_SIZE, num_stages=num_stages,
                                   num_warps=num_warps, grid=(1,))  # fmt: skip
    num_programs = min(num_programs, n_rows)
    kernel[(num_programs, 1, 1)](y, x, stride(x, 0), stride(y, 0), n_rows, n_cols, BLOCK_SIZE, num_stages)
    return y


def softmax_reference(x: np.ndarray) -> np.ndarray:
    z = x.astype(np.float64)
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


@pytest.mark.parametrize("shape", [(37, 300), (5, 64)])
def test_02_fused_softmax(shape):
    rng = np.random.default_rng()
    x = (rng.standard_normal(shape) * 3).astype(np.float32)
    y = softmax(x)
    np.testing.assert_allclose(y, softmax_reference(x), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(y.sum(axis=1), 1.0, rtol=1e-5)


def test_02_softmax_on_a_strided_view():
    rng = np.random.default_rng()
    wide = rng.standard_normal((20, 256)).astype(np.float32)
    x = wide[:, :200]  # rows 256 elements apart
    np.testing.assert_allclose(softmax(x, num_programs=3), softmax_reference(x), rtol=1e-5, atol=1e-7)


# -- 03 matrix multiplication ----------------------------------------------------------------


def get_autotune_config():
    return [
        triton.Config({"BLOCK_SIZE_M": 32, "BLOCK_SIZE_N": 32, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 2},
                      num_stages=3, num_warps=4),
        triton.Config({"BLOCK_SIZE_M": 16, "BLOCK_SIZE_N": 32, "BLOCK_SIZE_K": 16, "GROUP_SIZE_M": 4},
                      num_stages=4, num_warps=2),
    ]  # fmt: skip


@triton.autotune(configs=get_autotune_config(), key=["M", "N", "K"])
@triton.jit
def matmul_kernel(
    # Pointers to matrices
    a_ptr, b_ptr, c_ptr,
    # Matrix dimensions
    M, N, K,
    # The stride variables represent how much to increase the ptr by when moving by 1
    # element in a particular dimension.
    stride_am, stride_ak,
    stride_bk, stride_bn,
    stride_cm, stride_cn,
    # Meta-parameters
    BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
    GROUP_SIZE_M: tl.constexpr,
    ACTIVATION: tl.constexpr,
):  # fmt: skip
    """Kernel for computing the matmul C = A x B.
    A has shape (M, K), B has shape (K, N) and C has shape (M, N)
    """
    # Map program ids `pid` to the block of C it should compute, in grouped ordering.
    pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_SIZE_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m

    # Pointers for the first blocks of A and B.
    offs_am = (pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)) % M
    offs_bn = (pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)) % N
    offs_k = tl.arange(0, BLOCK_SIZE_K)
    a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)

    # Iterate to compute a block of the C matrix, accumulating in fp32.
    accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_SIZE_K)):
        # Load the next block of A and B, generate a mask by checking the K dimension.
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_SIZE_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_SIZE_K, other=0.0)
        accumulator = tl.dot(a, b, accumulator)
        a_ptrs += BLOCK_SIZE_K * stride_ak
        b_ptrs += BLOCK_SIZE_K * stride_bk
    # Fuse an activation while the accumulator is still in fp32.
    if ACTIVATION == "leaky_relu":
        accumulator = leaky_relu(accumulator)
    c = accumulator.to(tl.float16)

    # Write back the block of the output matrix C with masks.
    offs_cm = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    offs_cn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
    tl.store(c_ptrs, c, mask=c_mask)


@triton.jit
def leaky_relu(x):
    return tl.where(x >= 0, x, 0.01 * x)


def matmul(a: np.ndarray, b: np.ndarray, activation: str = "") -> np.ndarray:
    assert a.shape[1] == b.shape[0], "Incompatible dimensions"
    assert a.flags.c_contiguous, "Matrix A must be contiguous"
    M, K = a.shape
    K, N = b.shape
    c = np.full((M, N), np.nan, dtype=np.float16)
    grid = lambda META: (triton.cdiv(M, META["BLOCK_SIZE_M"]) * triton.cdiv(N, META["BLOCK_SIZE_N"]),)  # noqa: E731
    matmul_kernel[grid](
        a, b, c,
        M, N, K,
        stride(a, 0), stride(a, 1),
        stride(b, 0), stride(b, 1),
        stride(c, 0), stride(c, 1),
        ACTIVATION=activation,
    )  # fmt: skip
    return c


@pytest.mark.parametrize("activation", ["", "leaky_relu"])
@pytest.mark.parametrize("transposed_b", [False, True])
def test_03_matmul_grouped_with_epilogue(activation, transposed_b):
    rng = np.random.default_rng()
    M, N, K = 72, 80, 56  # not multiples of the block sizes: masks and wrap-around matter
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((N, K)).astype(np.float16).T if transposed_b else rng.standard_normal((K, N)).astype(np.float16)
    c = matmul(a, b, activation)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    if activation == "leaky_relu":
        ref = np.where(ref >= 0, ref, 0.01 * ref)
    # fp16 products are exact in fp32; the result is rounded once to fp16 (half an ulp: 2^-11)
    np.testing.assert_allclose(c.astype(np.float64), ref, rtol=2**-11 + 1e-5, atol=1e-4)
    assert matmul_kernel.best_config in matmul_kernel.configs


# -- 04 low-memory dropout -------------------------------------------------------------------


@triton.jit
def _seeded_dropout(x_ptr, output_ptr, n_elements, p, seed, BLOCK_SIZE: tl.constexpr):
    # compute memory offsets of elements handled by this instance
    pid = tl.program_id(axis=0)
    block_start = pid * BLOCK_SIZE
    offsets = block_start + tl.arange(0, BLOCK_SIZE)
    # load data from x
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    # randomly prune it
    random = tl.rand(seed, offsets)
    x_keep = random > p
    # write-back
    output = tl.where(x_keep, x / (1 - p), 0.0)
    tl.store(output_ptr + offsets, output, mask=mask)


def seeded_dropout(x: np.ndarray, p: float, seed: int) -> np.ndarray:
    output = np.full_like(x, np.nan)
    assert x.flags.c_contiguous
    n_elements = x.size
    grid = lambda meta: (triton.cdiv(n_elements, meta["BLOCK_SIZE"]),)  # noqa: E731
    _seeded_dropout[grid](x, output, n_elements, p, seed, BLOCK_SIZE=1024)
    return output


def test_04_low_memory_dropout():
    rng = np.random.default_rng()
    n, p = 50_000, 0.4
    x = rng.uniform(0.5, 2.0, n).astype(np.float32) * rng.choice([-1, 1], n).astype(np.float32)
    seed = int(rng.integers(1, 2**31))
    out = seeded_dropout(x, p, seed)
    kept = out != 0
    # Binomial(n, 0.6): the kept fraction is within 6 standard deviations of 1 - p
    assert abs(kept.mean() - (1 - p)) < 6 * np.sqrt(p * (1 - p) / n)
    scale = np.float32(1) - np.float32(p)
    np.testing.assert_allclose(out[kept], x[kept].astype(np.float64) / scale, rtol=2**-23)
    np.testing.assert_array_equal(seeded_dropout(x, p, seed), out)  # same seed, same mask
    other = seeded_dropout(x, p, seed + 1) != 0
    assert (other != kept).mean() > 0.3  # a different seed gives an unrelated mask


# -- 05 layer norm (forward) -----------------------------------------------------------------


@triton.jit
def _layer_norm_fwd_fused(
    X,  # pointer to the input
    Y,  # pointer to the output
    W,  # pointer to the weights
    B,  # pointer to the biases
    Mean,  # pointer to the mean
    Rstd,  # pointer to the 1/std
    stride,  # how much to increase the pointer when moving by 1 row
    N,  # number of columns in X
    eps,  # epsilon to avoid division by zero
    BLOCK_SIZE: tl.constexpr,
):
    # Map the program id to the row of X and Y it should compute.
    row = tl.program_id(0)
    Y += row * stride
    X += row * stride
    # Compute mean
    mean = 0
    _mean = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        a = tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)
        _mean += a
    mean = tl.sum(_mean, axis=0) / N
    # Compute variance
    _var = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        x = tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)
        x = tl.where(cols < N, x - mean, 0.)
        _var += x * x
    var = tl.sum(_var, axis=0) / N
    rstd = 1 / tl.sqrt(var + eps)
    # Write mean / rstd
    tl.store(Mean + row, mean)
    tl.store(Rstd + row, rstd)
    # Normalize and apply linear transformation
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        mask = cols < N
        w = tl.load(W + cols, mask=mask)
        b = tl.load(B + cols, mask=mask)
        x = tl.load(X + cols, mask=mask, other=0.).to(tl.float32)
        x_hat = (x - mean) * rstd
        y = x_hat * w + b
        # Write output
        tl.store(Y + cols, y, mask=mask)


def layer_norm(x, weight, bias, eps, block_size=None):
    y = np.full_like(x, np.nan)
    x_arg = x.reshape(-1, x.shape[-1])
    M, N = x_arg.shape
    mean = np.full((M,), np.nan, dtype=np.float32)
    rstd = np.full((M,), np.nan, dtype=np.float32)
    # Less than 64KB per feature: enqueue fused kernel
    MAX_FUSED_SIZE = 65536 // x.itemsize
    BLOCK_SIZE = block_size or min(MAX_FUSED_SIZE, triton.next_power_of_2(N))
    if N > BLOCK_SIZE and block_size is None:
        raise RuntimeError("This layer norm doesn't support feature dim >= 64KB.")
    num_warps = min(max(BLOCK_SIZE // 256, 1), 8)
    _layer_norm_fwd_fused[(M,)](x_arg, y, weight, bias, mean, rstd, stride(x_arg, 0), N, eps,
                                BLOCK_SIZE=BLOCK_SIZE, num_warps=num_warps, num_ctas=1)  # fmt: skip
    return y, mean, rstd


@pytest.mark.parametrize("block_size", [None, 128])  # one pass per loop, or several
def test_05_layer_norm_forward(block_size):
    rng = np.random.default_rng()
    M, N, eps = 24, 300, 1e-5
    x = (-2.3 + 0.5 * rng.standard_normal((M, N))).astype(np.float16)
    weight = rng.uniform(0.5, 1.5, N).astype(np.float16)
    bias = rng.uniform(-1, 1, N).astype(np.float16)
    y, mean, rstd = layer_norm(x, weight, bias, eps, block_size)
    x64 = x.astype(np.float64)
    ref_mean = x64.mean(axis=1)
    ref_rstd = 1 / np.sqrt(x64.var(axis=1) + eps)
    ref_y = (x64 - ref_mean[:, None]) * ref_rstd[:, None] * weight.astype(np.float64) + bias
    np.testing.assert_allclose(mean, ref_mean, rtol=1e-5)
    np.testing.assert_allclose(rstd, ref_rstd, rtol=1e-4)
    # y is stored as fp16: half an ulp of rounding, plus fp32 error in the statistics
    np.testing.assert_allclose(y.astype(np.float64), ref_y, rtol=2**-11, atol=1e-4)


# -- 05 layer norm (backward) ----------------------------------------------------------------


@triton.jit
def _layer_norm_bwd_dx_fused(DX, DY, DW, DB, X, W, Mean, Rstd, Lock, stride, N,
                             GROUP_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr):  # fmt: skip
    # the row of X, DX and DY this program handles
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE_N)
    mask = cols < N
    X += row * stride
    DY += row * stride
    DX += row * stride
    # rows share GROUP_SIZE_M partial sums of dW and dB, each guarded by a lock
    lock_id = row % GROUP_SIZE_M
    Lock += lock_id
    Count = Lock + GROUP_SIZE_M
    DW = DW + lock_id * N + cols
    DB = DB + lock_id * N + cols
    x = tl.load(X + cols, mask=mask, other=0).to(tl.float32)
    dy = tl.load(DY + cols, mask=mask, other=0).to(tl.float32)
    w = tl.load(W + cols, mask=mask).to(tl.float32)
    mean = tl.load(Mean + row)
    rstd = tl.load(Rstd + row)
    # dx
    xhat = (x - mean) * rstd
    wdy = w * dy
    xhat = tl.where(mask, xhat, 0.)
    wdy = tl.where(mask, wdy, 0.)
    c1 = tl.sum(xhat * wdy, axis=0) / N
    c2 = tl.sum(wdy, axis=0) / N
    dx = (wdy - (xhat * c1 + c2)) * rstd
    tl.store(DX + cols, dx, mask=mask)
    # this row's share of dW and dB, added to its group's partial sums under the lock
    partial_dw = (dy * xhat).to(w.dtype)
    partial_db = (dy).to(w.dtype)
    while tl.atomic_cas(Lock, 0, 1) == 1:
        pass
    count = tl.load(Count)
    if count == 0:  # the first row of the group stores instead of adding
        tl.atomic_xchg(Count, 1)
    else:
        partial_dw += tl.load(DW, mask=mask)
        partial_db += tl.load(DB, mask=mask)
    tl.store(DW, partial_dw, mask=mask)
    tl.store(DB, partial_db, mask=mask)
    tl.debug_barrier()
    tl.atomic_xchg(Lock, 0)


@triton.jit
def _layer_norm_bwd_dwdb(DW, DB, FINAL_DW, FINAL_DB, M, N,
                         BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr):  # fmt: skip
    # sum the group partial sums of a block of columns
    pid = tl.program_id(0)
    cols = pid * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    dw = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    db = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for i in range(0, M, BLOCK_SIZE_M):
        rows = i + tl.arange(0, BLOCK_SIZE_M)
        mask = (rows[:, None] < M) & (cols[None, :] < N)
        offs = rows[:, None] * N + cols[None, :]
        dw += tl.load(DW + offs, mask=mask, other=0.)
        db += tl.load(DB + offs, mask=mask, other=0.)
    sum_dw = tl.sum(dw, axis=0)
    sum_db = tl.sum(db, axis=0)
    tl.store(FINAL_DW + cols, sum_dw, mask=cols < N)
    tl.store(FINAL_DB + cols, sum_db, mask=cols < N)


def layer_norm_backward(dy, x, weight, mean, rstd, group_size_m=4):
    """Tutorial 05's backward on numpy arrays: dx per row, dW and dB through locked group sums."""
    M, N = x.shape
    dx = np.full_like(dy, np.nan)
    partial_dw = np.zeros((group_size_m, N), dtype=x.dtype)
    partial_db = np.zeros((group_size_m, N), dtype=x.dtype)
    locks = np.zeros(2 * group_size_m, dtype=np.int32)
    dw = np.full(N, np.nan, dtype=weight.dtype)
    db = np.full(N, np.nan, dtype=weight.dtype)
    BLOCK_SIZE = triton.next_power_of_2(N)
    _layer_norm_bwd_dx_fused[(M,)](dx, dy, partial_dw, partial_db, x, weight, mean, rstd, locks, stride(x, 0), N,
                                   BLOCK_SIZE_N=BLOCK_SIZE, GROUP_SIZE_M=group_size_m)  # fmt: skip
    grid = lambda meta: (triton.cdiv(N, meta["BLOCK_SIZE_N"]),)  # noqa: E731
    _layer_norm_bwd_dwdb[grid](partial_dw, partial_db, dw, db, min(group_size_m, M), N,
                               BLOCK_SIZE_M=32, BLOCK_SIZE_N=128)  # fmt: skip
    return dx, dw, db


def layer_norm_grads_reference(dy, x, weight, eps):
    """dx, dW, dB of y = (x - mean) * rstd * w + b, in float64."""
    x64, dy64, w64 = x.astype(np.float64), dy.astype(np.float64), weight.astype(np.float64)
    rstd = 1 / np.sqrt(x64.var(axis=1, keepdims=True) + eps)
    xhat = (x64 - x64.mean(axis=1, keepdims=True)) * rstd
    wdy = w64 * dy64
    dx = (wdy - xhat * (xhat * wdy).mean(axis=1, keepdims=True) - wdy.mean(axis=1, keepdims=True)) * rstd
    return dx, (dy64 * xhat).sum(axis=0), dy64.sum(axis=0)


def test_05_layer_norm_backward():
    rng = np.random.default_rng()
    M, N, eps = 18, 200, 1e-5
    x = rng.standard_normal((M, N)).astype(np.float32)
    dy = rng.standard_normal((M, N)).astype(np.float32)
    weight = rng.uniform(0.5, 1.5, N).astype(np.float32)
    bias = rng.uniform(-1, 1, N).astype(np.float32)
    _, mean, rstd = layer_norm(x, weight, bias, eps)
    dx, dw, db = layer_norm_backward(dy, x, weight, mean, rstd)
    ref_dx, ref_dw, ref_db = layer_norm_grads_reference(dy, x, weight, eps)
    np.testing.assert_allclose(dx, ref_dx, rtol=1e-4, atol=1e-5)
    # dW and dB: M fp32 terms summed in groups (order differs from the reference)
    np.testing.assert_allclose(dw, ref_dw, rtol=1e-4, atol=1e-4 * np.sqrt(M))
    np.testing.assert_allclose(db, ref_db, rtol=1e-4, atol=1e-4 * np.sqrt(M))


# -- 09 persistent matmul (kernellab.examples' kernel, the benchmarks' too) --------------------


@pytest.mark.parametrize("num_sms", [1, 3])
def test_09_persistent_matmul_example(launch, num_sms):
    """Each of `num_sms` programs walks its tiles (partial ones at every edge, K masked)."""
    rng = np.random.default_rng()
    M, N, K = 72, 80, 56
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((N, K)).astype(np.float16).T  # K-major B, as the benchmark's
    c = poison((M, N), np.float16)
    tiles = triton.cdiv(M, 32) * triton.cdiv(N, 32)
    launch(matmul_persistent_kernel, (min(num_sms, tiles),), a, b, c, M, N, K, stride(a, 0), stride(a, 1),
           stride(b, 0), stride(b, 1), stride(c, 0), stride(c, 1), BLOCK_SIZE_M=32, BLOCK_SIZE_N=32,
           BLOCK_SIZE_K=16, GROUP_SIZE_M=2, NUM_SMS=num_sms)  # fmt: skip
    ref = a.astype(np.float64) @ b.astype(np.float64)
    # fp16 products are exact in fp32; one rounding to fp16
    np.testing.assert_allclose(c.astype(np.float64), ref, rtol=2**-11 + 1e-5, atol=1e-4)
