"""Sorting and selection written in the block language: `sort`, `topk`, `flip`.

All three are bitonic networks over power-of-two dims, built from reshapes, reductions over a
size-2 axis and `where`. The compiler then places each column of the network where the layout
puts the two partners: in one thread's registers (a select), in two lanes of a warp (the size-2
reduction becomes a shuffle) or in two warps (the reduction goes through shared memory). So the
network costs what Triton's does, and the lab shows its IR like any helper's.

Partners are exchanged as same-width integers (the float bits), so a pair moves exactly: no
`-0.0 + 0.0`, no NaN arithmetic. Comparisons use the values' own `>`, so a NaN never swaps.
"""

from __future__ import annotations

from kernellab.language.builtins import (
    arange,
    broadcast_to,
    max,
    permute,
    reshape,
    static_assert,
    static_range,
    sum,
    where,
)
from kernellab.language.core import constexpr, kernel_function, str_to_ty

# -- the network's building blocks -------------------------------------------------------------


@kernel_function
def _pair_bits(x, j: constexpr):
    """`x` flattened, as integer bits of shape (pairs, 2, 2**j): element (p, 0, t) and its
    partner (p, 1, t) lie 2**j apart. Returns (bits, low partner, high partner, is_high)."""
    n: constexpr = x.numel
    shape: constexpr = (n >> (j + 1), 2, 1 << j)
    idtype: constexpr = str_to_ty(f"i{x.dtype.primitive_bitwidth}")
    bits = reshape(x.to(idtype, bitcast=True), shape)
    is_high = arange(0, 2)[None, :, None] == 1
    low = sum(where(is_high, 0, bits), 1, keep_dims=True, dtype=idtype)
    high = sum(where(is_high, bits, 0), 1, keep_dims=True, dtype=idtype)
    return bits, low, high, is_high


@kernel_function
def _compare_exchange(x, j: constexpr, run: constexpr, descending: constexpr):
    """One column of a bitonic network: each pair 2**j apart is put in order, ascending inside
    runs of 2**run elements with an even run index and descending in odd ones (the direction a
    bitonic merge of those runs needs), or all in `descending`'s order when `run` spans a whole
    row (run == 0 asks for that)."""
    bits, low, high, is_high = _pair_bits(x, j)
    if run == 0:
        flip = descending
    else:  # the run index of each pair, from the pair index's bit (run - j - 1)
        flip = ((arange(0, x.numel >> (j + 1)) >> (run - j - 1)) & 1)[:, None, None] == 1
    swap = (low.to(x.dtype, bitcast=True) > high.to(x.dtype, bitcast=True)) != flip
    partner = where(is_high, broadcast_to(low, bits.shape), broadcast_to(high, bits.shape))
    return reshape(where(swap, partner, bits), x.shape).to(x.dtype, bitcast=True)


@kernel_function
def _merge(x, stage: constexpr, run: constexpr, descending: constexpr):
    """Sort bitonic runs of 2**stage elements: columns at distance 2**(stage-1) down to 1."""
    for i in static_range(stage):
        x = _compare_exchange(x, stage - 1 - i, run, descending)
    return x


@kernel_function
def _sort_rows(x, log_n: constexpr, descending: constexpr):
    """Sort every row of 2**log_n consecutive elements of `x` (flattened order)."""
    for stage in static_range(1, log_n):
        x = _merge(x, stage, stage, descending)
    return _merge(x, log_n, 0, descending)


@kernel_function
def _log2(n: constexpr):
    """log2 of a power-of-two size (tensor dims always are)."""
    log_n: constexpr = n.bit_length() - 1
    return log_n


@kernel_function
def _to_last(x, dim: constexpr):
    """`x` with axis `dim` moved last (so rows run along it), and the permutation back."""
    rank: constexpr = len(x.shape)
    order: constexpr = ()
    back: constexpr = ()
    for d in static_range(rank):
        if d != dim:
            order = order + (d,)
        back = back + (rank - 1 if d == dim else d - (d > dim),)
    return permute(x, order + (dim,)), back


@kernel_function
def _dim_or_last(x, dim: constexpr):
    if dim is None:
        return len(x.shape) - 1
    if dim < 0:
        return dim + len(x.shape)
    return dim


# -- public functions ----------------------------------------------------------------------


@kernel_function
def sort(x, dim: constexpr = None, descending: constexpr = False):
    """`x` sorted along `dim` (default: the last), ascending unless `descending`; a bitonic
    network of log2(n)·(log2(n)+1)/2 compare-exchange columns.

    values = tl.sort(x, dim=1, descending=True)
    """
    dim = _dim_or_last(x, dim)
    if dim == len(x.shape) - 1:
        return _sort_rows(x, _log2(x.shape[dim]), descending)
    moved, back = _to_last(x, dim)
    return permute(_sort_rows(moved, _log2(x.shape[dim]), descending), back)


@kernel_function
def _topk_rows(x, k: constexpr):
    """The k largest of every row (the last dim) of `x`, sorted descending."""
    log_k: constexpr = _log2(k)
    log_n: constexpr = _log2(x.shape[len(x.shape) - 1])
    rows: constexpr = x.shape[:-1]
    for stage in static_range(1, log_k + 1):  # runs of k, alternately ascending and descending
        x = _merge(x, stage, stage, True)
    for level in static_range(log_n - log_k):
        x = max(reshape(x, (x.numel >> (log_k + 1), 2, k)), 1).to(x.dtype)
        if level == log_n - log_k - 1:
            x = _merge(x, log_k, 0, True)
        else:
            x = _merge(x, log_k, log_k, True)
    return reshape(x, rows + (k,))


@kernel_function
def topk(x, k: constexpr, dim: constexpr = None):
    """The `k` largest elements along `dim` (default: the last), sorted descending; `k` is a
    power of two no larger than that dim.

    Sorts runs of k elements in alternating directions, then halves the data until one run is
    left: the elementwise maximum of an ascending run and the descending run after it holds the
    larger half of their union as a bitonic run, which one merge sorts.

    best = tl.topk(scores, 8)
    """
    dim = _dim_or_last(x, dim)
    static_assert(
        k & (k - 1) == 0 and 0 < k and k <= x.shape[dim],
        "tl.topk: k must be a power of two no larger than the dim it selects from",
    )
    if k == x.shape[dim]:
        return sort(x, dim, True)
    if dim == len(x.shape) - 1:
        return _topk_rows(x, k)
    moved, back = _to_last(x, dim)
    return permute(_topk_rows(moved, k), back)


@kernel_function
def _flip_rows(x):
    """Every row (the last dim) of `x` reversed: index i goes to n-1-i, one halves-swap per
    bit of n."""
    for j in static_range(_log2(x.shape[len(x.shape) - 1])):
        bits, low, high, is_high = _pair_bits(x, j)
        swapped = where(is_high, broadcast_to(low, bits.shape), broadcast_to(high, bits.shape))
        x = reshape(swapped, x.shape).to(x.dtype, bitcast=True)
    return x


@kernel_function
def flip(x, dim: constexpr = None):
    """`x` reversed along `dim` (default: the last).

    reversed_cols = tl.flip(x, dim=1)
    """
    dim = _dim_or_last(x, dim)
    if dim == len(x.shape) - 1:
        return _flip_rows(x)
    moved, back = _to_last(x, dim)
    return permute(_flip_rows(moved), back)
