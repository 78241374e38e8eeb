"""tl.load / tl.store: dtypes, masks and `other`, 2-D pointer blocks, scalars, hints."""

import numpy as np
import pytest
from conftest import NP_DTYPES, assert_equal, cdiv, f64, poison, random_array

import kernellab as kl
import kernellab.language as tl

N, BLOCK = 1000, 128
GRID = (cdiv(N, BLOCK),)


@kl.jit
def copy_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


@pytest.mark.parametrize("dtype", list(NP_DTYPES))
def test_copy_every_dtype(launch, rng, dtype):
    x = random_array(rng, N, NP_DTYPES[dtype])
    out = poison(N, x.dtype)
    launch(copy_kernel, GRID, x, out, N, BLOCK=BLOCK)
    assert_equal(out, x)


def test_copy_bool(launch, rng):
    x = rng.random(N) < 0.5
    out = ~x  # a bool has no third value to poison with: start with every element wrong
    launch(copy_kernel, GRID, x, out, N, BLOCK=BLOCK)
    assert_equal(out, x)


@kl.jit
def masked_store_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)  # the input is padded to the grid: no mask needed
    tl.store(out_ptr + offs, x * 2, mask=offs < n)


def test_masked_store_leaves_other_elements_alone(launch, rng):
    padded = GRID[0] * BLOCK
    x = random_array(rng, padded, np.float32)
    out = poison(padded, np.float32)
    launch(masked_store_kernel, GRID, x, out, N, BLOCK=BLOCK)
    assert_equal(out[:N], x[:N] * 2)
    assert np.isnan(out[N:]).all(), "a masked-off lane was stored"


@kl.jit
def load_other_kernel(x_ptr, out_ptr, out2_ptr, n, fill, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask, other=-7.5))
    tl.store(out2_ptr + offs, tl.load(x_ptr + offs, mask=mask, other=fill))


def test_masked_load_fills_other(launch, rng):
    """Masked-off lanes read `other` (a constant or a runtime scalar) and never touch memory."""
    padded = GRID[0] * BLOCK
    x = random_array(rng, N, np.float32)
    fill = float(np.float32(rng.uniform(1, 2)))
    out, out2 = poison(padded, np.float32), poison(padded, np.float32)
    launch(load_other_kernel, GRID, x, out, out2, N, fill, BLOCK=BLOCK)
    assert_equal(out, np.concatenate([x, np.full(padded - N, -7.5, np.float32)]))
    assert_equal(out2, np.concatenate([x, np.full(padded - N, fill, np.float32)]))


@kl.jit
def int_other_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n, other=-3))


def test_masked_load_other_is_cast_to_the_element_type(launch, rng):
    padded = GRID[0] * BLOCK
    x = random_array(rng, N, np.int16)
    out = poison(padded, np.int16)
    launch(int_other_kernel, GRID, x, out, N, BLOCK=BLOCK)
    assert_equal(out, np.concatenate([x, np.full(padded - N, -3, np.int16)]))


@kl.jit
def hints_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    offs = tl.max_contiguous(tl.multiple_of(offs, BLOCK), BLOCK)
    mask = offs < n
    a = tl.load(x_ptr + offs, mask=mask, cache_modifier=".cg", eviction_policy="evict_last")
    b = tl.load(x_ptr + offs, mask=mask, other=0.0, cache_modifier=".ca", volatile=True)
    tl.store(out_ptr + offs, a + b, mask=mask, cache_modifier=".cs", eviction_policy="evict_first")


def test_cache_eviction_and_contiguity_hints_do_not_change_values(launch, rng):
    x = random_array(rng, N, np.float32)
    out = poison(N, np.float32)
    launch(hints_kernel, GRID, x, out, N, BLOCK=BLOCK)
    assert_equal(out, x + x)


@kl.jit
def tile_kernel(x_ptr, out_ptr, M, N, stride_xm, stride_xn, stride_om,
                BM: tl.constexpr, BN: tl.constexpr):  # fmt: skip
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    cols = tl.program_id(1) * BN + tl.arange(0, BN)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    x = tl.load(x_ptr + rows[:, None] * stride_xm + cols[None, :] * stride_xn, mask=mask)
    tl.store(out_ptr + rows[:, None] * stride_om + cols[None, :], x + 1, mask=mask)


@pytest.mark.parametrize("transposed", [False, True], ids=["row-major", "strided"])
def test_2d_tile_with_strides_and_masks_on_both_axes(launch, rng, transposed):
    M, Ncols, BM, BN = 45, 70, 16, 32
    base = random_array(rng, (Ncols, M) if transposed else (M, Ncols), np.float32)
    x = base.T if transposed else base  # a transposed view: strides (1, M)
    out = poison((M, Ncols), np.float32)
    strides = [s // 4 for s in x.strides]
    launch(tile_kernel, (cdiv(M, BM), cdiv(Ncols, BN)), base, out, M, Ncols, *strides, Ncols,
           BM=BM, BN=BN)  # fmt: skip
    assert_equal(out, x + 1)


@kl.jit
def scalar_kernel(x_ptr, out_ptr):
    pid = tl.program_id(0)
    v = tl.load(x_ptr + pid)
    tl.store(out_ptr + pid, v * 3 - 1)


def test_scalar_load_and_store(launch, rng):
    x = random_array(rng, 37, np.int32)
    out = poison(37, np.int32)
    launch(scalar_kernel, (37,), x, out)
    assert_equal(out, x * 3 - 1)


@kl.jit
def pointer_arith_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    last = x_ptr + (n - 1)
    reversed_ptrs = last - offs  # pointer minus offsets walks backwards
    wide = offs.to(tl.int64)  # 64-bit and unsigned offsets address the same elements
    a = tl.load(reversed_ptrs, mask=mask)
    b = tl.load(x_ptr + wide, mask=mask)
    c = tl.load(x_ptr + offs.to(tl.uint32), mask=mask)
    tl.store(out_ptr + offs, a + b * c, mask=mask)


def test_pointer_arithmetic(launch, rng):
    x = random_array(rng, N, np.int64)
    out = poison(N, np.int64)
    launch(pointer_arith_kernel, GRID, x, out, N, BLOCK=BLOCK)
    assert_equal(out, x[::-1] + x * x)


@kl.jit
def store_cast_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


@pytest.mark.parametrize("src,dst", [("float32", "float16"), ("float32", "bfloat16"),
                                     ("int32", "float32"), ("float16", "float64")])  # fmt: skip
def test_store_converts_to_the_pointer_element_type(launch, rng, src, dst):
    x = random_array(rng, N, NP_DTYPES[src])
    out = poison(N, NP_DTYPES[dst])
    launch(store_cast_kernel, GRID, x, out, N, BLOCK=BLOCK)
    assert_equal(out, f64(x).astype(NP_DTYPES[dst]) if src != "int32" else x.astype(out.dtype))


@kl.jit
def row_mask_kernel(x_ptr, out_ptr, rows_valid, N: tl.constexpr, BM: tl.constexpr):
    rows = tl.arange(0, BM)
    offs = rows[:, None] * N + tl.arange(0, N)[None, :]
    mask = rows[:, None] < rows_valid  # (BM, 1): broadcast against the (BM, N) pointers
    tl.store(
        out_ptr + offs,
        tl.load(x_ptr + offs, mask=mask, other=-1.0) * 2,
        mask=mask | (rows[:, None] == BM - 1),
    )


def test_mask_broadcasts_against_pointers(launch, rng):
    BM, Ncols, valid = 16, 8, 11
    x = random_array(rng, (BM, Ncols), np.float32)
    out = poison((BM, Ncols), np.float32)
    launch(row_mask_kernel, (1,), x, out, valid, N=Ncols, BM=BM)
    assert_equal(out[:valid], x[:valid] * 2)
    assert np.isnan(out[valid:-1]).all()
    assert_equal(out[-1], np.full(Ncols, -2.0, np.float32))  # stored, but loaded as `other`


@kl.jit
def scalar_mask_kernel(x_ptr, out_ptr, n):
    pid = tl.program_id(0)
    v = tl.load(x_ptr + pid, mask=pid < n, other=-5)  # a scalar mask on a scalar pointer
    tl.store(out_ptr + pid, v + 1, mask=pid != 3)


def test_scalar_mask_and_other(launch, rng):
    programs, n = 12, 8
    x = random_array(rng, n, np.int32)
    out = poison(programs, np.int32)
    launch(scalar_mask_kernel, (programs,), x, out, n)
    expected = np.concatenate([x, np.full(programs - n, -5, np.int32)]) + 1
    sentinel = poison(1, np.int32)[0]
    expected[3] = sentinel  # program 3 stores nothing
    assert_equal(out, expected)


@kl.jit
def store_scalar_value_kernel(out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, 4.25, mask=offs < n)  # a scalar value fills the block


def test_store_of_a_scalar_value_broadcasts(launch):
    out = poison(N, np.float32)
    launch(store_scalar_value_kernel, GRID, out, N, BLOCK=BLOCK)
    assert_equal(out, np.full(N, 4.25, np.float32))
