"""Tutorial kernels (kernellab.examples) through the whole stack: kl.jit → frontend → passes →
interpreter. Vector add runs in the tour (tests/test_cli.py)."""

from __future__ import annotations

import numpy as np
import pytest

import kernellab as kl
from kernellab.examples import (
    layer_norm_config,
    layer_norm_kernel,
    layer_norm_reference,
    matmul_kernel,
    softmax_config,
    softmax_kernel,
    softmax_persistent_kernel,
    softmax_reference,
)


def test_fused_softmax_with_row_stride():
    rng = np.random.default_rng()
    rows, cols, stride = 37, 100, 113
    x = rng.standard_normal((rows, stride), dtype=np.float32)
    out = np.full((rows, cols), np.nan, np.float32)
    softmax_kernel[(rows,)](out, x, stride, cols, cols, BLOCK_SIZE=128)
    np.testing.assert_allclose(out, softmax_reference(x[:, :cols]), rtol=1e-6, atol=1e-8)


def test_persistent_softmax_programs_loop_over_rows():
    rng = np.random.default_rng()
    rows, cols, programs = 23, 70, 4  # programs take 6 or 5 rows each
    x = (rng.standard_normal((rows, cols)) * 3).astype(np.float32)
    out = np.full((rows, cols), np.nan, np.float32)
    block, _ = softmax_config(cols)
    softmax_persistent_kernel[(programs,)](
        out, x, cols, cols, rows, cols, BLOCK_SIZE=block, num_stages=2
    )
    np.testing.assert_allclose(out, softmax_reference(x), rtol=1e-5, atol=1e-8)


@pytest.mark.parametrize("block", [None, 64])  # one pass over a row, or several
def test_layer_norm_forward(block):
    rng = np.random.default_rng()
    M, N, eps = 12, 200, 1e-5
    x = (-2.3 + 0.5 * rng.standard_normal((M, N))).astype(np.float16)
    w = rng.uniform(0.5, 1.5, N).astype(np.float16)
    b = rng.uniform(-1, 1, N).astype(np.float16)
    y = np.full_like(x, np.nan)
    mean, rstd = np.full(M, np.nan, np.float32), np.full(M, np.nan, np.float32)
    BLOCK_SIZE, _ = layer_norm_config(block or N, x.itemsize)
    layer_norm_kernel[(M,)](x, y, w, b, mean, rstd, N, N, eps, BLOCK_SIZE=BLOCK_SIZE)
    ref_y, ref_mean, ref_rstd = layer_norm_reference(x, w, b, eps)
    np.testing.assert_allclose(mean, ref_mean, rtol=1e-5)
    np.testing.assert_allclose(rstd, ref_rstd, rtol=1e-4)
    # y is stored as fp16: half an ulp of rounding, plus fp32 error in the statistics
    np.testing.assert_allclose(y.astype(np.float64), ref_y, rtol=2**-11, atol=1e-4)


@pytest.mark.parametrize("activation", ["", "leaky_relu"])
def test_grouped_matmul(activation):
    rng = np.random.default_rng()
    M, N, K, BM, BN, BK = 40, 50, 24, 16, 16, 16  # partial tiles on every axis
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    c = np.full((M, N), np.nan, np.float16)
    grid = (kl.cdiv(M, BM) * kl.cdiv(N, BN),)
    matmul_kernel[grid](a, b, c, M, N, K, K, 1, N, 1, N, 1, BLOCK_SIZE_M=BM, BLOCK_SIZE_N=BN,
                        BLOCK_SIZE_K=BK, GROUP_SIZE_M=2, ACTIVATION=activation)  # fmt: skip
    ref = a.astype(np.float64) @ b.astype(np.float64)
    if activation == "leaky_relu":
        ref = np.where(ref >= 0, ref, 0.01 * ref)
    # fp16 products are exact in fp32; the result is rounded once to fp16 (half an ulp: 2^-11)
    np.testing.assert_allclose(c.astype(np.float64), ref, rtol=2**-11 + 1e-5, atol=1e-4)
