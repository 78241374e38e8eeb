"""Reductions (sum, max, min, argmax, argmin, xor_sum, reduce) and scans (cumsum, cumprod,
associative_scan) over masked 2-D tiles, along each axis."""

import ml_dtypes
import numpy as np
import pytest
from conftest import (
    NP_DTYPES,
    assert_close,
    assert_equal,
    f64,
    fp32_sum_bound,
    poison,
    random_array,
)

import kernellab as kl
import kernellab.language as tl

BM, BN = 16, 32
m, n = 13, 29  # the valid part of the tile: masks on both axes


@kl.jit
def reduce_kernel(x_ptr, out_ptr, m, n, OP: tl.constexpr, AXIS: tl.constexpr, OTHER: tl.constexpr,
                  BM: tl.constexpr, BN: tl.constexpr):  # fmt: skip
    rows = tl.arange(0, BM)
    cols = tl.arange(0, BN)
    mask = (rows[:, None] < m) & (cols[None, :] < n)
    x = tl.load(x_ptr + rows[:, None] * n + cols[None, :], mask=mask, other=OTHER)
    if OP == "sum":
        r = tl.sum(x, axis=AXIS)
    elif OP == "max":
        r = tl.max(x, axis=AXIS)
    elif OP == "min":
        r = tl.min(x, axis=AXIS)
    elif OP == "argmax":
        r = tl.argmax(x, axis=AXIS)
    elif OP == "argmin":
        r = tl.argmin(x, axis=AXIS)
    elif OP == "xor_sum":
        r = tl.xor_sum(x, axis=AXIS)
    elif OP == "sum_method":
        r = x.sum(axis=AXIS)
    if AXIS == 0:
        tl.store(out_ptr + cols, r, mask=cols < n)
    elif AXIS == 1:
        tl.store(out_ptr + rows, r, mask=rows < m)
    else:
        tl.store(out_ptr, r)


def neutral(op, dtype):
    """The `other` for masked-off lanes that cannot change the result."""
    if op in ("sum", "sum_method", "xor_sum"):
        return 0
    big = float("inf") if np.dtype(dtype).kind == "f" else None
    info = None if big else np.iinfo(dtype)
    if op in ("max", "argmax"):
        return -big if big else int(info.min)
    return big if big else int(info.max)


def run_reduce(launch, op, x, axis, out_dtype):
    out = poison({0: n, 1: m, None: 1}[axis], out_dtype)
    launch(
        reduce_kernel,
        (1,),
        x,
        out,
        m,
        n,
        OP=op,
        AXIS=axis,
        OTHER=neutral(op, x.dtype),
        BM=BM,
        BN=BN,
    )
    return out if axis is not None else out[0]


AXES = [0, 1, None]


@pytest.mark.parametrize("axis", AXES)
@pytest.mark.parametrize("op", ["sum", "sum_method"])
def test_sum_fp32(launch, rng, op, axis):
    x = random_array(rng, (m, n), np.float32)
    out = run_reduce(launch, op, x, axis, np.float32)
    bound = np.abs(f64(x)).sum(axis=axis) * 2**-22  # each of n roundings costs <= 2^-24 |partial|
    assert_close(out, f64(x).sum(axis=axis), atol=bound)


@pytest.mark.parametrize("axis", AXES)
@pytest.mark.parametrize("dtype", ["int32", "int64", "uint32"])
def test_sum_integers(launch, rng, axis, dtype):
    x = random_array(rng, (m, n), NP_DTYPES[dtype])
    out = run_reduce(launch, "sum", x, axis, x.dtype)
    assert_equal(out, x.sum(axis=axis, dtype=x.dtype))


@pytest.mark.parametrize("axis", [0, 1])
def test_sum_of_int8_accumulates_in_int32(launch, rng, axis):
    """Triton sums integers narrower than 32 bits in int32, so 13 x 100 does not wrap."""
    x = random_array(rng, (m, n), np.int8, 50, 100)
    out = run_reduce(launch, "sum", x, axis, np.int32)
    assert_equal(out, x.astype(np.int64).sum(axis=axis))


@pytest.mark.parametrize("axis", AXES)
@pytest.mark.parametrize("dtype", ["int8", "int32", "uint32", "float16", "float32"])
@pytest.mark.parametrize("op", ["max", "min"])
def test_max_min(launch, rng, op, dtype, axis):
    np_dtype = NP_DTYPES[dtype]
    if np.dtype(np_dtype).kind in "iu":
        info = np.iinfo(
            np_dtype
        )  # the full range: unsigned values above 2^31 must compare unsigned
        x = rng.integers(int(info.min) + 1, int(info.max), (m, n), dtype=np.int64).astype(np_dtype)
    else:
        x = random_array(rng, (m, n), np_dtype)
    out = run_reduce(launch, op, x, axis, np_dtype)
    assert_equal(out, getattr(np, op)(x, axis=axis))


@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("dtype", ["int32", "float32"])
@pytest.mark.parametrize("op", ["argmax", "argmin"])
def test_argmax_argmin_break_ties_to_the_first_index(launch, rng, op, dtype, axis):
    x = rng.integers(-3, 4, (m, n)).astype(NP_DTYPES[dtype])  # few values: many ties
    out = run_reduce(launch, op, x, axis, np.int32)
    assert_equal(out, getattr(np, op)(x, axis=axis))


@pytest.mark.parametrize("dtype", ["int32", "uint32"])
@pytest.mark.parametrize("axis", AXES)
def test_xor_sum(launch, rng, axis, dtype):
    np_dtype = NP_DTYPES[dtype]
    info = np.iinfo(np_dtype)
    x = rng.integers(int(info.min), int(info.max), (m, n), dtype=np.int64).astype(np_dtype)
    out = run_reduce(launch, "xor_sum", x, axis, np_dtype)
    assert_equal(out, np.bitwise_xor.reduce(x, axis=axis))


@kl.jit
def keep_dims_kernel(x_ptr, sum_ptr, max_ptr, idx_ptr, BM: tl.constexpr, BN: tl.constexpr):
    rows = tl.arange(0, BM)
    cols = tl.arange(0, BN)
    x = tl.load(x_ptr + rows[:, None] * BN + cols[None, :])
    s = tl.sum(x, axis=1, keep_dims=True)  # (BM, 1)
    tl.store(sum_ptr + rows[:, None], s)
    v, i = tl.max(x, axis=0, return_indices=True)
    tl.store(max_ptr + cols, v)
    tl.store(idx_ptr + cols, i)


def test_keep_dims_and_max_with_indices(launch, rng):
    x = rng.integers(-5, 6, (BM, BN)).astype(np.float32)
    sums, maxes, idx = poison(BM, np.float32), poison(BN, np.float32), poison(BN, np.int32)
    launch(keep_dims_kernel, (1,), x, sums, maxes, idx, BM=BM, BN=BN)
    assert_equal(sums, x.sum(axis=1))
    assert_equal(maxes, x.max(axis=0))
    assert_equal(idx, x.argmax(axis=0))


@kl.jit
def reduce_3d_kernel(x_ptr, sum_ptr, max_ptr, A: tl.constexpr, B: tl.constexpr, C: tl.constexpr):
    a = tl.arange(0, A)[:, None, None]
    b = tl.arange(0, B)[None, :, None]
    c = tl.arange(0, C)[None, None, :]
    x = tl.load(x_ptr + a * (B * C) + b * C + c)
    offs = tl.arange(0, A)[:, None] * C + tl.arange(0, C)[None, :]
    tl.store(sum_ptr + offs, tl.sum(x, axis=1))  # the middle axis
    tl.store(max_ptr + tl.arange(0, A)[:, None] * B + tl.arange(0, B)[None, :], tl.max(x, axis=2))


def test_reductions_of_a_3d_block(launch, rng):
    A, B, C = 4, 8, 16
    x = random_array(rng, (A, B, C), np.int32)
    sums, maxes = poison((A, C), np.int32), poison((A, B), np.int32)
    launch(reduce_3d_kernel, (1,), x, sums, maxes, A=A, B=B, C=C)
    assert_equal(sums, x.sum(axis=1))
    assert_equal(maxes, x.max(axis=2))


@kl.jit
def low_precision_sum_kernel(x_ptr, sum_ptr, cumsum_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(sum_ptr, tl.sum(x, axis=0, dtype=tl.float32))  # accumulate in the given dtype
    tl.store(cumsum_ptr + offs, tl.cumsum(x, axis=0))  # bf16 scans are promoted to fp32


def test_sum_dtype_and_bf16_cumsum_accumulate_in_fp32(launch, rng):
    """1024 bf16 terms summed in bf16 would be off by far more than the fp32 bound."""
    B = 1024
    x = random_array(rng, B, ml_dtypes.bfloat16, 0.5, 2.0)
    total, prefix = poison(1, np.float32), poison(B, np.float32)
    launch(low_precision_sum_kernel, (1,), x, total, prefix, BLOCK=B)
    assert_close(total, [f64(x).sum()], atol=fp32_sum_bound(x))
    assert_close(prefix, np.cumsum(f64(x)), atol=fp32_sum_bound(x))


# -- reduce with a user combine function ---------------------------------------------------


@kl.jit
def product_combine(a, b):
    return a * b


@kl.jit
def argmax_abs_combine(v1, i1, v2, i2):
    a1 = tl.abs(v1)
    a2 = tl.abs(v2)
    first = (a1 > a2) | ((a1 == a2) & (i1 < i2))
    return tl.where(first, v1, v2), tl.where(first, i1, i2)


@kl.jit
def user_reduce_kernel(x_ptr, prod_ptr, val_ptr, idx_ptr, BM: tl.constexpr, BN: tl.constexpr):
    rows = tl.arange(0, BM)
    cols = tl.arange(0, BN)
    x = tl.load(x_ptr + rows[:, None] * BN + cols[None, :])
    tl.store(prod_ptr + rows, tl.reduce(x, 1, product_combine))
    idx = tl.broadcast_to(rows[:, None], (BM, BN))
    v, i = tl.reduce((x, idx), axis=0, combine_fn=argmax_abs_combine)
    tl.store(val_ptr + cols, v)
    tl.store(idx_ptr + cols, i)


def test_reduce_with_user_combine_functions(launch, rng):
    x = rng.uniform(0.8, 1.25, (BM, BN)).astype(np.float32)
    x[rng.random((BM, BN)) < 0.5] *= -1
    prod, val, idx = poison(BM, np.float32), poison(BN, np.float32), poison(BN, np.int32)
    launch(user_reduce_kernel, (1,), x, prod, val, idx, BM=BM, BN=BN)
    assert_close(prod, np.prod(f64(x), axis=1), rtol=BN * 2**-23)
    expected_idx = np.abs(x).argmax(axis=0)
    assert_equal(idx, expected_idx)
    assert_equal(val, x[expected_idx, np.arange(BN)])


# -- scans ---------------------------------------------------------------------------------


@kl.jit
def scan_kernel(x_ptr, out_ptr, m, n, OP: tl.constexpr, AXIS: tl.constexpr, REVERSE: tl.constexpr,
                OTHER: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):  # fmt: skip
    rows = tl.arange(0, BM)
    cols = tl.arange(0, BN)
    mask = (rows[:, None] < m) & (cols[None, :] < n)
    offs = rows[:, None] * n + cols[None, :]
    x = tl.load(x_ptr + offs, mask=mask, other=OTHER)
    if OP == "cumsum":
        y = tl.cumsum(x, axis=AXIS, reverse=REVERSE)
    elif OP == "cumprod":
        y = tl.cumprod(x, axis=AXIS, reverse=REVERSE)
    elif OP == "max_scan":
        y = tl.associative_scan(x, AXIS, combine_max, reverse=REVERSE)
    tl.store(out_ptr + offs, y, mask=mask)


@kl.jit
def combine_max(a, b):
    return tl.maximum(a, b)


@kl.jit
def keep_first(a, b):
    # returns an argument unchanged: the callee has no operation of its own
    return a


@kl.jit
def first_scan_kernel(x_ptr, out_ptr, AXIS: tl.constexpr, REVERSE: tl.constexpr,
                      BM: tl.constexpr, BN: tl.constexpr):  # fmt: skip
    offs = tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :]
    y = tl.associative_scan(tl.load(x_ptr + offs), AXIS, keep_first, reverse=REVERSE)
    tl.store(out_ptr + offs, y)


def numpy_scan(ufunc, x, axis, reverse):
    if reverse:
        return np.flip(ufunc.accumulate(np.flip(x, axis), axis=axis), axis)
    return ufunc.accumulate(x, axis=axis)


def run_scan(launch, op, x, axis, reverse, other, out_dtype=None):
    out = poison((m, n), out_dtype or x.dtype)
    launch(
        scan_kernel,
        (1,),
        x,
        out,
        m,
        n,
        OP=op,
        AXIS=axis,
        REVERSE=reverse,
        OTHER=other,
        BM=BM,
        BN=BN,
    )
    return out


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("axis", [0, 1])
def test_cumsum_fp32(launch, rng, axis, reverse):
    x = random_array(rng, (m, n), np.float32)
    out = run_scan(launch, "cumsum", x, axis, reverse, 0)
    bound = numpy_scan(np.add, np.abs(f64(x)), axis, reverse) * 2**-22
    assert_close(out, numpy_scan(np.add, f64(x), axis, reverse), atol=bound)


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("axis", [0, 1])
def test_cumsum_int8_accumulates_in_int32(launch, rng, axis, reverse):
    x = random_array(rng, (m, n), np.int8, 50, 100)
    out = run_scan(launch, "cumsum", x, axis, reverse, 0, np.int32)
    assert_equal(out, numpy_scan(np.add, x.astype(np.int64), axis, reverse))


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("axis", [0, 1])
def test_cumprod(launch, rng, axis, reverse):
    x = rng.uniform(0.8, 1.25, (m, n)).astype(np.float32)
    out = run_scan(launch, "cumprod", x, axis, reverse, 1)
    assert_close(out, numpy_scan(np.multiply, f64(x), axis, reverse), rtol=BN * 2**-23)


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("axis", [0, 1])
def test_associative_scan_with_user_combine(launch, rng, axis, reverse):
    x = random_array(rng, (m, n), np.int32)
    out = run_scan(launch, "max_scan", x, axis, reverse, int(np.iinfo(np.int32).min))
    assert_equal(out, numpy_scan(np.maximum, x, axis, reverse))


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("axis", [0, 1])
def test_associative_scan_keeping_the_first_element(launch, rng, axis, reverse):
    """combine(a, b) = a: every element becomes the first of its scan (the last when reversed);
    once a compile error, because a function returning its argument emitted no call."""
    x = random_array(rng, (BM, BN), np.float32)
    out = poison((BM, BN), np.float32)
    launch(first_scan_kernel, (1,), x, out, AXIS=axis, REVERSE=reverse, BM=BM, BN=BN)
    first = [slice(None), slice(None)]
    first[axis] = slice(-1, None) if reverse else slice(0, 1)
    assert_equal(out, np.broadcast_to(x[tuple(first)], x.shape))


@kl.jit
def affine_combine(a1, b1, a2, b2):
    # composing x -> a1*x + b1 then x -> a2*x + b2: not commutative, so order matters
    return a1 * a2, b1 * a2 + b2


@kl.jit
def tuple_scan_kernel(a_ptr, b_ptr, out_ptr, BN: tl.constexpr, REVERSE: tl.constexpr):
    offs = tl.arange(0, BN)
    a = tl.load(a_ptr + offs)
    b = tl.load(b_ptr + offs)
    _, y = tl.associative_scan((a, b), 0, affine_combine, reverse=REVERSE)
    tl.store(out_ptr + offs, y)


@pytest.mark.parametrize("reverse", [False, True])
def test_associative_scan_of_a_tuple_keeps_the_order(launch, rng, reverse):
    """y[i] = a[i] * y[i-1] + b[i] (a linear recurrence) as a scan over (a, b) pairs."""
    a = rng.uniform(0.5, 1.0, BN).astype(np.float32)
    b = random_array(rng, BN, np.float32)
    out = poison(BN, np.float32)
    launch(tuple_scan_kernel, (1,), a, b, out, BN=BN, REVERSE=reverse)
    order = range(BN - 1, -1, -1) if reverse else range(BN)
    expected, y = np.empty(BN), 0.0
    for i in order:
        y = float(a[i]) * y + float(b[i])
        expected[i] = y
    assert_close(out, expected, rtol=1e-5, atol=1e-5)
