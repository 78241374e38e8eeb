"""Tutorial kernels through the whole stack (kl.jit → frontend → passes → interpreter)."""

from __future__ import annotations

import numpy as np

import kernellab as kl
import kernellab.language as tl


@kl.jit
def softmax_kernel(output_ptr, input_ptr, input_row_stride, output_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    row_idx = tl.program_id(0)
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


def test_fused_softmax_with_row_stride():
    rng = np.random.default_rng()
    rows, cols, stride = 37, 100, 113
    x = rng.standard_normal((rows, stride), dtype=np.float32)
    out = np.full((rows, cols), np.nan, np.float32)
    softmax_kernel[(rows,)](out, x, stride, cols, cols, BLOCK_SIZE=128)
    e = np.exp(x[:, :cols].astype(np.float64) - x[:, :cols].max(axis=1, keepdims=True))
    np.testing.assert_allclose(out, e / e.sum(axis=1, keepdims=True), rtol=1e-6, atol=1e-8)
