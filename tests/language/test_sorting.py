"""tl.sort, tl.topk, tl.flip, tl.interleave, tl.histogram and tl.gather against numpy.

Each kernel loads a 2-D tile (rows x cols, row-major), applies one function, and stores the
result; every element is compared exactly (these functions move values, they compute none).
"""

import numpy as np
import pytest
from conftest import NP_DTYPES, assert_equal, poison, random_array

import kernellab as kl
import kernellab.language as tl
from tests.language.test_gather import gather_2d


@kl.jit
def tile_kernel(
    x_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr, OP: tl.constexpr, DIM: tl.constexpr,
    K: tl.constexpr, DESCENDING: tl.constexpr,
):  # fmt: skip
    rows = tl.arange(0, M)[:, None]
    cols = tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + rows * N + cols)
    if OP == "sort":
        tl.store(out_ptr + rows * N + cols, tl.sort(x, dim=DIM, descending=DESCENDING))
    elif OP == "flip":
        tl.store(out_ptr + rows * N + cols, tl.flip(x, DIM))
    elif DIM == 0:  # topk along the rows: a K x N result
        top = tl.topk(x, K, dim=0)
        tl.store(out_ptr + tl.arange(0, K)[:, None] * N + cols, top)
    else:  # topk along the columns: an M x K result
        tl.store(out_ptr + rows * K + tl.arange(0, K)[None, :], tl.topk(x, K))


def _values(rng, shape, dtype):
    """Random values with repeats (ties must sort like numpy's), negative zeros for floats."""
    x = random_array(rng, shape, NP_DTYPES[dtype])
    if np.issubdtype(x.dtype, np.floating):
        x.flat[:: 7] = x.flat[3]
    else:
        x.flat[:: 5] = x.flat[1]
    return x


@pytest.mark.parametrize(
    ("dtype", "dim", "descending"),
    [("float32", 1, False), ("float16", 1, True), ("int32", 0, False), ("uint8", 0, True),
     ("int64", 1, False)],
)  # fmt: skip
def test_sort(launch, rng, dtype, dim, descending):
    x = _values(rng, (16, 64), dtype)
    out = poison(x.shape, x.dtype)
    launch(tile_kernel, (1,), x, out, M=16, N=64, OP="sort", DIM=dim, K=1, DESCENDING=descending)
    expected = np.sort(x, axis=dim)
    assert_equal(out, np.flip(expected, dim) if descending else expected)


@pytest.mark.parametrize("rows", [1, 32])
def test_sort_across_warps(launch, rng, rows):
    """2048 elements over 8 warps: the network's long columns pair elements of two warps."""
    x = _values(rng, (rows, 2048 // rows), "float32")
    out = poison(x.shape, x.dtype)
    launch(
        tile_kernel, (1,), x, out, M=rows, N=2048 // rows, OP="sort", DIM=1, K=1,
        DESCENDING=False, num_warps=8,
    )  # fmt: skip
    assert_equal(out, np.sort(x, axis=1))


@pytest.mark.parametrize(
    ("dtype", "shape", "dim", "descending"),
    [("float32", (1, 1024), 1, False), ("float16", (2, 1024), 1, True), ("int32", (1, 2048), 1, True),
     ("bfloat16", (1, 2048), 1, False), ("uint8", (1, 4096), 1, False), ("int64", (4, 1024), 1, True),
     ("float32", (256, 8), 0, True), ("uint16", (128, 16), 0, False)],
)  # fmt: skip
def test_sort_of_thousands_of_elements(launch, rng, dtype, shape, dim, descending):
    """1024 to 4096 elements in one program: on the CPU the network runs as loops over vector
    registers (cpu.bitonic_columns), with columns near (inside one register) and far apart."""
    x = _values(rng, shape, dtype)
    out = poison(x.shape, x.dtype)
    launch(
        tile_kernel, (1,), x, out, M=shape[0], N=shape[1], OP="sort", DIM=dim, K=1, DESCENDING=descending,
    )  # fmt: skip
    expected = np.sort(x, axis=dim)
    assert_equal(out, np.flip(expected, dim) if descending else expected)


@pytest.mark.parametrize(("dtype", "k"), [("float32", 16), ("int16", 256)])
def test_topk_of_thousands_of_elements(launch, rng, dtype, k):
    x = _values(rng, (2, 1024), dtype)
    out = poison((2, k), x.dtype)
    launch(tile_kernel, (1,), x, out, M=2, N=1024, OP="topk", DIM=1, K=k, DESCENDING=True)
    assert_equal(out, np.flip(np.sort(x, axis=1), 1)[:, :k])


def test_sort_keeps_negative_zero_and_nan_free_bits(launch, rng):
    """Pairs move as bits: -0.0 stays -0.0 (a sum with +0.0 would lose the sign)."""
    x = random_array(rng, (4, 32), np.float32)
    x[:, ::4] = -0.0
    out = poison(x.shape, x.dtype)
    launch(tile_kernel, (1,), x, out, M=4, N=32, OP="sort", DIM=1, K=1, DESCENDING=False)
    assert np.signbit(out[out == 0]).all()
    assert_equal(out, np.sort(x, axis=1))


@pytest.mark.parametrize(
    ("dtype", "k", "dim"),
    [("float32", 4, 1), ("int32", 16, 1), ("uint8", 64, 1), ("float16", 2, 0), ("int32", 8, 0)],
)
def test_topk(launch, rng, dtype, k, dim):
    x = _values(rng, (16, 64), dtype)
    out = poison((16, k) if dim == 1 else (k, 64), x.dtype)
    launch(tile_kernel, (1,), x, out, M=16, N=64, OP="topk", DIM=dim, K=k, DESCENDING=True)
    expected = np.flip(np.sort(x, axis=dim), dim)
    assert_equal(out, expected[:, :k] if dim == 1 else expected[:k])


@pytest.mark.parametrize(("dtype", "dim"), [("float32", 1), ("int64", 0), ("uint8", 1)])
def test_flip(launch, rng, dtype, dim):
    x = random_array(rng, (8, 32), NP_DTYPES[dtype])
    out = poison(x.shape, x.dtype)
    launch(tile_kernel, (1,), x, out, M=8, N=32, OP="flip", DIM=dim, K=1, DESCENDING=False)
    assert_equal(out, np.flip(x, dim))


@kl.jit
def topk_sum_kernel(x_ptr, out_ptr, K: tl.constexpr):
    tl.store(out_ptr, tl.sum(tl.topk(tl.load(x_ptr + tl.arange(0, 16)), K)))


def test_topk_rejects_k_not_a_power_of_two():
    x = np.ones(16, np.float32)
    with pytest.raises(kl.CompilationError, match="k must be a power of two"):
        topk_sum_kernel[(1,)](x, x, K=3)


@kl.jit
def interleave_kernel(a_ptr, b_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr):
    rows = tl.arange(0, M)[:, None]
    a = tl.load(a_ptr + rows * N + tl.arange(0, N)[None, :])
    b = tl.load(b_ptr + rows * N + tl.arange(0, N)[None, :])
    tl.store(out_ptr + rows * 2 * N + tl.arange(0, 2 * N)[None, :], tl.interleave(a, b))


@pytest.mark.parametrize("dtype", ["float32", "int16"])
def test_interleave(launch, rng, dtype):
    a, b = (random_array(rng, (8, 16), NP_DTYPES[dtype]) for _ in range(2))
    out = poison((8, 32), a.dtype)
    launch(interleave_kernel, (1,), a, b, out, M=8, N=16)
    expected = np.empty_like(out)
    expected[:, 0::2], expected[:, 1::2] = a, b
    assert_equal(out, expected)


@kl.jit
def histogram_kernel(x_ptr, out_ptr, n, BINS: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    counts = tl.histogram(tl.load(x_ptr + offs, mask=mask), BINS, mask=mask)
    tl.store(out_ptr + tl.program_id(0) * BINS + tl.arange(0, BINS), counts)


def test_histogram(launch, rng):
    n, bins, block = 1000, 32, 256
    x = rng.integers(-4, bins + 4, n).astype(np.int32)  # some values outside the bins
    out = poison((4, bins), np.int32)
    launch(histogram_kernel, (4,), x, out, n, BINS=bins, BLOCK=block)
    for p in range(4):
        chunk = x[p * block : (p + 1) * block]
        expected = np.bincount(chunk[(chunk >= 0) & (chunk < bins)], minlength=bins)
        assert_equal(out[p], expected.astype(np.int32))


@pytest.mark.parametrize(
    ("dtype", "axis"), [("float32", 0), ("float16", 1), ("int8", 0), ("int64", 1)]
)
def test_gather(launch, rng, dtype, axis):
    m, n, i = 16, 32, 8
    src = random_array(rng, (m, n), NP_DTYPES[dtype])
    shape = (i, n) if axis == 0 else (m, i)
    index = rng.integers(0, (m, n)[axis], shape).astype(np.int32)
    out = poison(shape, src.dtype)
    launch(gather_2d, (1,), src, index, out, M=m, N=n, I=i, AXIS=axis)
    assert_equal(out, np.take_along_axis(src, index, axis))


@kl.jit
def gather_misuse_kernel(src_ptr, idx_ptr, out_ptr):
    src = tl.load(src_ptr + tl.arange(0, 8)[:, None] * 4 + tl.arange(0, 4)[None, :])
    index = tl.load(idx_ptr + tl.arange(0, 2)[:, None] * 2 + tl.arange(0, 2)[None, :])
    tl.store(out_ptr + tl.arange(0, 2)[:, None] * 2 + tl.arange(0, 2)[None, :],
             tl.gather(src, index, 0))  # fmt: skip


def test_gather_explains_mismatched_sizes():
    src, index = np.zeros(32, np.float32), np.zeros(4, np.int32)
    with pytest.raises(kl.CompilationError, match="sizes of `src` on every axis but `axis`"):
        gather_misuse_kernel[(1,)](src, index, np.zeros(4, np.float32))
