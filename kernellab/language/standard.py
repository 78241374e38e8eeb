"""Library functions written in the block language itself, as Triton writes them.

The frontend compiles each like a user's `@jit` function (a private `tt.func` plus `tt.call`,
later inlined), so their IR shows up in `ck.passes` exactly as the user's own helpers would.
"""

from __future__ import annotations

from kernellab.language.builtins import (
    arange,
    exp,
    fdiv,
    join,
    max,
    minimum,
    reshape,
    static_assert,
    sum,
    zeros,
)
from kernellab.language.core import constexpr, int32, kernel_function


@kernel_function
def cdiv(x, div):
    """Ceiling division of integers: (x + div - 1) // div.

    num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
    """
    return (x + div - 1) // div


@kernel_function
def sigmoid(x):
    """Elementwise 1 / (1 + exp(-x)) (fp32 or fp64)."""
    return 1 / (1 + exp(-x))


@kernel_function
def softmax(
    x, dim: constexpr = None, keep_dims: constexpr = False, ieee_rounding: constexpr = False
):
    """exp(x - max) / sum(exp(x - max)) along `dim` (default 0), fp32 or fp64."""
    if dim is None:
        dim = 0
    z = x - max(x, dim, keep_dims=keep_dims)
    num = exp(z)
    den = sum(num, dim, keep_dims=keep_dims)
    return fdiv(num, den, ieee_rounding)


@kernel_function
def zeros_like(input):
    """Zeros of the shape and dtype of `input`."""
    return zeros(input.shape, input.dtype)


@kernel_function
def ravel(x, can_reorder: constexpr = False):
    """`x` flattened to 1-D (row-major unless `can_reorder`)."""
    return reshape(x, (x.numel,), can_reorder=can_reorder)


@kernel_function
def swizzle2d(i, j, size_i, size_j, size_g):
    """Map row-major tile indices (i, j) of a size_i × size_j grid to column-major order within
    groups of `size_g` rows (the grouped ordering of Triton's matmul tutorial).

    For size_i = size_j = 4, size_g = 2 the row-major grid
        [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11], [12, 13, 14, 15]]
    becomes
        [[0, 2, 4, 6], [1, 3, 5, 7], [8, 10, 12, 14], [9, 11, 13, 15]].
    """
    linear = i * size_j + j
    group_size = size_g * size_j  # tiles in one group of size_g rows
    first_row = (linear // group_size) * size_g
    rows_in_group = minimum(size_i - first_row, size_g)  # the last group may be shorter
    in_group = linear % group_size  # the index within its group, counted from its first tile
    new_i = first_row + in_group % rows_in_group
    new_j = in_group // rows_in_group
    return new_i, new_j


@kernel_function
def interleave(a, b):
    """`a` and `b` interleaved along their last dim: [a0, b0, a1, b1, ...] (a join, then the
    pair axis folded into the last dim).

    pairs = tl.interleave(real, imag)
    """
    joined = join(a, b)
    return reshape(joined, joined.shape[:-2] + (2 * joined.shape[len(joined.shape) - 2],))


@kernel_function
def histogram(input, num_bins: constexpr, mask=None):
    """int32 counts of the values 0 .. num_bins-1 in the 1-D integer tensor `input` (values
    outside that range, and elements where `mask` is False, are not counted): a one-hot
    comparison against every bin summed over the elements, which the compiler reduces in
    registers, across lanes and across warps.

    counts = tl.histogram(bucket_ids, 64)
    """
    static_assert(len(input.shape) == 1, "tl.histogram counts a 1-D tensor; reshape it first")
    hits = input[:, None] == arange(0, num_bins)[None, :]
    if mask is not None:
        hits = hits & mask[:, None]
    return sum(hits.to(int32), 0)
