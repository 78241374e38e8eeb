"""tl.dot: fp32 (ieee, tf32), fp16, bf16, int8; acc, out_dtype; a masked K loop; batched."""

import numpy as np
import pytest
from conftest import NP_DTYPES, assert_close, assert_equal, cdiv, f64, poison, random_array

import kernellab as kl
import kernellab.language as tl


@kl.jit
def dot_kernel(a_ptr, b_ptr, c_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
               PRECISION: tl.constexpr, OUT_DTYPE: tl.constexpr, USE_ACC: tl.constexpr):  # fmt: skip
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rk = tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    if USE_ACC:
        c = tl.load(c_ptr + rm[:, None] * N + rn[None, :])
        d = tl.dot(a, b, acc=c, input_precision=PRECISION, out_dtype=OUT_DTYPE)
    else:
        d = tl.dot(a, b, input_precision=PRECISION, out_dtype=OUT_DTYPE)
    tl.store(out_ptr + rm[:, None] * N + rn[None, :], d)


def error_bound(a, b, c, unit):
    """|fl(a @ b + c) - (a @ b + c)| <= unit * (|a| @ |b| + |c|), where unit covers the K + 1
    roundings of an element (the classical gamma_{K+1}): without FMA, as the interpreter adds,
    each product rounds once and the partial sums round once each, c's addition included; the
    GPU's FMA chain rounds K times, inside the same bound."""
    return unit * (np.abs(f64(a)) @ np.abs(f64(b)) + np.abs(f64(c)))


# (input dtype, input_precision, out_dtype, acc dtype, unit roundoff of the whole dot)
CASES = {
    "fp32-ieee": ("float32", "ieee", tl.float32, np.float32, lambda k: (k + 1) * 2**-24),
    "fp32-tf32": ("float32", "tf32", tl.float32, np.float32, lambda k: 2**-10 + (k + 1) * 2**-24),
    "fp32-default": ("float32", None, tl.float32, np.float32, lambda k: 2**-10 + (k + 1) * 2**-24),
    "fp16": ("float16", None, tl.float32, np.float32, lambda k: (k + 1) * 2**-24),
    "fp16-out-fp16": ("float16", None, tl.float16, np.float16, lambda k: (k + 1) * 2**-11),
    "bf16": ("bfloat16", None, tl.float32, np.float32, lambda k: (k + 1) * 2**-24),
}


@pytest.mark.parametrize("use_acc", [False, True], ids=["no-acc", "acc"])
@pytest.mark.parametrize("shape", [(16, 16, 16), (32, 16, 64), (16, 64, 32)], ids=str)
@pytest.mark.parametrize("case", list(CASES))
def test_dot_floats(launch, rng, case, shape, use_acc):
    dtype, precision, out_dtype, acc_dtype, unit = CASES[case]
    M, N, K = shape
    a = random_array(rng, (M, K), NP_DTYPES[dtype])
    b = random_array(rng, (K, N), NP_DTYPES[dtype])
    c = random_array(rng, (M, N), acc_dtype) if use_acc else np.zeros((M, N), acc_dtype)
    out = poison((M, N), acc_dtype)
    launch(dot_kernel, (1,), a, b, c, out, M=M, N=N, K=K, PRECISION=precision, OUT_DTYPE=out_dtype,
           USE_ACC=use_acc)  # fmt: skip
    expected = f64(a) @ f64(b) + f64(c)
    assert_close(out, expected, atol=error_bound(a, b, c, unit(K)))


@pytest.mark.parametrize("use_acc", [False, True], ids=["no-acc", "acc"])
def test_dot_int8_is_exact_in_int32(launch, rng, use_acc):
    M, N, K = 16, 32, 64
    a = random_array(rng, (M, K), np.int8, -128, 128)
    b = random_array(rng, (K, N), np.int8, -128, 128)
    c = random_array(rng, (M, N), np.int32) if use_acc else np.zeros((M, N), np.int32)
    out = poison((M, N), np.int32)
    launch(dot_kernel, (1,), a, b, c, out, M=M, N=N, K=K, PRECISION=None, OUT_DTYPE=tl.int32,
           USE_ACC=use_acc)  # fmt: skip
    assert_equal(out, a.astype(np.int64) @ b.astype(np.int64) + c)


@kl.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                  stride_cm, stride_cn, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):  # fmt: skip
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(tl.cdiv(K, BK)):
        kk = k * BK + rk
        a = tl.load(
            a_ptr + rm[:, None] * stride_am + kk[None, :] * stride_ak,
            mask=(rm[:, None] < M) & (kk[None, :] < K),
            other=0.0,
        )
        b = tl.load(
            b_ptr + kk[:, None] * stride_bk + rn[None, :] * stride_bn,
            mask=(kk[:, None] < K) & (rn[None, :] < N),
            other=0.0,
        )
        acc += tl.dot(a, b)
    c = acc.to(tl.float16)
    tl.store(
        c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn,
        c,
        mask=(rm[:, None] < M) & (rn[None, :] < N),
    )


def test_matmul_with_k_loop_and_masks(launch, rng):
    M, N, K, BM, BN, BK = 50, 70, 90, 32, 32, 32
    a = random_array(rng, (M, K), np.float16)
    b = random_array(rng, (K, N), np.float16)
    c = poison((M, N), np.float16)
    grid = (cdiv(M, BM), cdiv(N, BN))
    launch(matmul_kernel, grid, a, b, c, M, N, K, K, 1, N, 1, N, 1, BM=BM, BN=BN, BK=BK)
    expected = f64(a) @ f64(b)
    # accumulation in fp32, then one rounding to fp16
    assert_close(c, expected, rtol=2**-11, atol=error_bound(a, b, 0, K * 2**-24))


@kl.jit
def batched_dot_kernel(a_ptr, b_ptr, out_ptr, B: tl.constexpr, M: tl.constexpr, N: tl.constexpr,
                       K: tl.constexpr):  # fmt: skip
    rb = tl.arange(0, B)[:, None, None]
    rm = tl.arange(0, M)[None, :, None]
    rn = tl.arange(0, N)[None, None, :]
    rk_col = tl.arange(0, K)[None, None, :]
    rk_row = tl.arange(0, K)[None, :, None]
    a = tl.load(a_ptr + rb * (M * K) + rm * K + rk_col)
    b = tl.load(b_ptr + rb * (K * N) + rk_row * N + rn)
    tl.store(out_ptr + rb * (M * N) + rm * N + rn, tl.dot(a, b, input_precision="ieee"))


def test_batched_3d_dot(launch, rng):
    B, M, N, K = 2, 16, 32, 16
    a = random_array(rng, (B, M, K), np.float32)
    b = random_array(rng, (B, K, N), np.float32)
    out = poison((B, M, N), np.float32)
    launch(batched_dot_kernel, (1,), a, b, out, B=B, M=M, N=N, K=K)
    expected = f64(a) @ f64(b)
    assert_close(out, expected, atol=K * 2**-24 * (np.abs(f64(a)) @ np.abs(f64(b))))


@kl.jit
def dot_transposed_kernel(q_ptr, k_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr, D: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rd = tl.arange(0, D)
    q = tl.load(q_ptr + rm[:, None] * D + rd[None, :])
    k = tl.load(k_ptr + rn[:, None] * D + rd[None, :])
    tl.store(out_ptr + rm[:, None] * N + rn[None, :], tl.dot(q, tl.trans(k)))  # q @ k.T


def test_dot_with_a_transposed_operand(launch, rng):
    M, N, D = 16, 32, 16
    q, k = random_array(rng, (M, D), np.float16), random_array(rng, (N, D), np.float16)
    out = poison((M, N), np.float32)
    launch(dot_transposed_kernel, (1,), q, k, out, M=M, N=N, D=D)
    assert_close(out, f64(q) @ f64(k).T, atol=error_bound(q, k.T, 0, D * 2**-24))


@pytest.mark.parametrize("shape", [(1, 1, 1), (2, 4, 8), (8, 8, 8), (16, 16, 8), (4, 32, 16),
                                   (32, 2, 64), (16, 1, 4)], ids=str)  # fmt: skip
@pytest.mark.parametrize("case", ["fp16", "fp32-ieee", "fp32-tf32", "fp16-out-fp16"])
def test_dot_on_tiles_smaller_than_a_tensor_core_instruction(launch, rng, case, shape):
    """M, N or K below 16 (Triton accepts them): the FMA path on the GPU."""
    dtype, precision, out_dtype, acc_dtype, unit = CASES[case]
    M, N, K = shape
    a = random_array(rng, (M, K), NP_DTYPES[dtype])
    b = random_array(rng, (K, N), NP_DTYPES[dtype])
    c = random_array(rng, (M, N), acc_dtype)
    out = poison((M, N), acc_dtype)
    launch(dot_kernel, (1,), a, b, c, out, M=M, N=N, K=K, PRECISION=precision, OUT_DTYPE=out_dtype,
           USE_ACC=True)  # fmt: skip
    assert_close(out, f64(a) @ f64(b) + f64(c), atol=error_bound(a, b, c, unit(K)))


@pytest.mark.parametrize("shape", [(1, 1, 1), (4, 8, 2), (16, 8, 16), (8, 16, 32)], ids=str)
def test_small_int8_dot_is_exact(launch, rng, shape):
    M, N, K = shape
    a = random_array(rng, (M, K), np.int8, -128, 128)
    b = random_array(rng, (K, N), np.int8, -128, 128)
    out = poison((M, N), np.int32)
    launch(dot_kernel, (1,), a, b, out, out, M=M, N=N, K=K, PRECISION=None, OUT_DTYPE=tl.int32,
           USE_ACC=False)  # fmt: skip
    assert_equal(out, a.astype(np.int64) @ b.astype(np.int64))
