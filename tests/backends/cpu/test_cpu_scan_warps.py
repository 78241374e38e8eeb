"""Scans over an axis split among the warps of a CPU program: each warp scans its part (as
vector steps, or the core's chain for other combine regions), the warps' totals go through
the scratch at a barrier that ends a phase (backends/cpu/lowering/phases.py), and each warp
combines the totals of the warps before it. Every result against numpy in float64 (exact for
ints)."""

import numpy as np
import pytest
from conftest import assert_close, assert_equal, f64, poison, random_array

import kernellab as kl
import kernellab.language as tl
from tests.backends.cpu.test_cpu_reduce_warps import phases_of, warps_of
from tests.language.test_reductions import (  # the same kernels, split among warps here
    first_scan_kernel,
    numpy_scan,
    scan_kernel,
    tuple_scan_kernel,
)

# (BM, BN): rows of 128 to 1024 scanned along dim 1, split among 2 to 16 warps of 64 elements
SPLITS = [(4, 128), (2, 256), (1, 512), (8, 128), (1, 1024)]
# op, element type, the masked elements' value (the combine's neutral element)
SCANS = [
    ("cumsum", np.float32, 0),
    ("cumsum", np.float64, 0),
    ("cumsum", np.int32, 0),
    ("cumsum", np.int64, 0),
    ("cumprod", np.float32, 1),
    ("max_scan", np.int32, int(np.iinfo(np.int32).min)),
]
TYPES = {np.float32: "fp32", np.float64: "fp64", np.int32: "i32", np.int64: "i64"}
UFUNCS = {"cumsum": np.add, "cumprod": np.multiply, "max_scan": np.maximum}


def _inputs(rng, op, dtype, shape):
    if op == "cumprod":
        return rng.uniform(0.9, 1.1, shape).astype(dtype)
    return random_array(rng, shape, dtype)


def _check(out, x, op, axis, reverse):
    """Floats within (scan length) rounding errors of each prefix's magnitude; ints exact."""
    ufunc = UFUNCS[op]
    if np.dtype(x.dtype).kind == "i":
        assert_equal(out, numpy_scan(ufunc, x.astype(np.int64), axis, reverse).astype(x.dtype))
        return
    eps = np.finfo(x.dtype).eps
    if op == "cumprod":
        assert_close(out, numpy_scan(ufunc, f64(x), axis, reverse), rtol=2 * x.shape[axis] * eps)
    else:
        bound = numpy_scan(np.add, np.abs(f64(x)), axis, reverse) * x.shape[axis] * eps
        assert_close(out, numpy_scan(ufunc, f64(x), axis, reverse), atol=bound)


@pytest.mark.parametrize("reverse", [False, True], ids=["forward", "reverse"])
@pytest.mark.parametrize(("op", "dtype", "other"), SCANS, ids=[f"{o}-{np.dtype(d).name}" for o, d, _ in SCANS])
@pytest.mark.parametrize(("BM", "BN"), SPLITS)
def test_a_scan_split_among_warps_matches_numpy(rng, op, dtype, other, BM, BN, reverse):
    m, n = BM - (BM > 1), BN - 3  # masked rows and columns: sizes no multiple of the split
    x = _inputs(rng, op, dtype, (m, n))
    axis = 1
    consts = dict(OP=op, AXIS=axis, REVERSE=reverse, OTHER=other, BM=BM, BN=BN)
    t = TYPES[dtype]
    ck = kl.compile(scan_kernel, signature=f"*{t},*{t},i32,i32", constexprs=consts, target="cpu")
    assert warps_of(ck) == BM * BN // 64 and phases_of(ck) >= 2
    out = poison((m, n), dtype)
    scan_kernel[(1,)](x, out, m, n, **consts, target="cpu")
    _check(out, x, op, axis, reverse)


@pytest.mark.parametrize("reverse", [False, True], ids=["forward", "reverse"])
@pytest.mark.parametrize(("BM", "BN"), [(1, 8192), (64, 128)])
def test_a_scan_of_more_than_the_warps_hold_at_once_carries_across_their_repeats(rng, BM, BN, reverse):
    """64 warps: along a row of 8192 each warp's 64 elements repeat along the axis (the core's
    scan, whose chunks carry after the exchange); in 64 rows of 128 two warps split each row
    and repeat down the rows (the vector steps)."""
    m, n = BM - (BM > 1), BN - 3
    x = random_array(rng, (m, n), np.float32)
    axis = 1
    consts = dict(OP="cumsum", AXIS=axis, REVERSE=reverse, OTHER=0, BM=BM, BN=BN)
    ck = kl.compile(scan_kernel, signature="*fp32,*fp32,i32,i32", constexprs=consts, target="cpu")
    assert warps_of(ck) == min(64, BM * BN // 64) and phases_of(ck) >= 2
    out = poison((m, n), np.float32)
    scan_kernel[(1,)](x, out, m, n, **consts, target="cpu")
    _check(out, x, "cumsum", axis, reverse)


@pytest.mark.parametrize("reverse", [False, True], ids=["forward", "reverse"])
def test_a_combine_function_returning_its_first_argument_scans_across_warps(rng, reverse):
    """No binary op to put on vectors: the core's scan, its prefixes kept across the barrier."""
    BM, BN, axis = 4, 256, 1  # 16 warps, four along each row
    x = random_array(rng, (BM, BN), np.float32)
    out = poison((BM, BN), np.float32)
    consts = dict(AXIS=axis, REVERSE=reverse, BM=BM, BN=BN)
    ck = kl.compile(first_scan_kernel, signature="*fp32,*fp32", constexprs=consts, target="cpu")
    assert warps_of(ck) == 16 and phases_of(ck) >= 2
    first_scan_kernel[(1,)](x, out, **consts, target="cpu")
    first = [slice(None), slice(None)]
    first[axis] = slice(-1, None) if reverse else slice(0, 1)
    assert_equal(out, np.broadcast_to(x[tuple(first)], x.shape))


@pytest.mark.parametrize("reverse", [False, True], ids=["forward", "reverse"])
def test_a_scan_of_a_tuple_keeps_its_order_across_warps(rng, reverse):
    """y[i] = a[i] * y[i-1] + b[i]: two operands and a combine that does not commute, so each
    warp must take the totals of the warps before it, in scan order, on the left."""
    BN = 1024
    a = rng.uniform(0.5, 1.0, BN).astype(np.float32)
    b = random_array(rng, BN, np.float32)
    out = poison(BN, np.float32)
    ck = kl.compile(tuple_scan_kernel, signature="*fp32,*fp32,*fp32", constexprs=dict(BN=BN, REVERSE=reverse),
                    target="cpu")  # fmt: skip
    assert warps_of(ck) == 16
    tuple_scan_kernel[(1,)](a, b, out, BN=BN, REVERSE=reverse, target="cpu")
    expected, y = np.empty(BN), 0.0
    for i in range(BN - 1, -1, -1) if reverse else range(BN):
        y = float(a[i]) * y + float(b[i])
        expected[i] = y
    assert_close(out, expected, rtol=1e-5, atol=1e-5)


@kl.jit
def scan_then_sum_kernel(x_ptr, out_ptr, total_ptr, n, BLOCK: tl.constexpr):
    """A scan and a reduction of its result, a row per program: the loaded row and the scan
    live across the exchanges."""
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * n + cols, mask=cols < n, other=0.0)
    prefix = tl.cumsum(x, axis=0)
    tl.store(out_ptr + row * n + cols, prefix * 2.0 - x, mask=cols < n)
    tl.store(total_ptr + row, tl.sum(tl.where(cols < n, prefix, 0.0), axis=0))


def test_a_scan_and_a_reduction_of_it_share_the_phases(rng):
    rows, n = 5, 1000
    x = random_array(rng, (rows, n), np.float32)
    out, total = poison((rows, n), np.float32), poison(rows, np.float32)
    ck = kl.compile(scan_then_sum_kernel, signature="*fp32,*fp32,*fp32,i32", constexprs=dict(BLOCK=1024),
                    target="cpu")  # fmt: skip
    assert warps_of(ck) == 16 and phases_of(ck) >= 3
    scan_then_sum_kernel[(rows,)](x, out, total, n, BLOCK=1024, target="cpu")
    x64 = f64(x)
    prefix, bound = np.cumsum(x64, axis=1), np.cumsum(np.abs(x64), axis=1) * n * 2**-24
    assert_close(out, 2 * prefix - x64, atol=2 * bound + np.abs(x64) * 2**-24)
    assert_close(total, prefix.sum(axis=1), atol=bound.sum(axis=1) + np.abs(prefix).sum(axis=1) * n * 2**-24)


@kl.jit
def cumsum_in_loop_kernel(x_ptr, out_ptr, reps, BLOCK: tl.constexpr):
    cols = tl.arange(0, BLOCK)
    for i in range(reps):
        tl.store(out_ptr + i * BLOCK + cols, tl.cumsum(tl.load(x_ptr + i * BLOCK + cols), axis=0))


def test_a_scan_inside_a_loop_keeps_one_warp(rng):
    """Its exchange would need a barrier inside the loop, where warps cannot run in phases."""
    ck = kl.compile(cumsum_in_loop_kernel, signature="*fp32,*fp32,i32", constexprs={"BLOCK": 256}, target="cpu")
    assert warps_of(ck) == 1
    x = random_array(rng, (3, 256), np.float32)
    out = poison((3, 256), np.float32)
    cumsum_in_loop_kernel[(1,)](x, out, 3, BLOCK=256, target="cpu")
    _check(out, x, "cumsum", 1, False)


@pytest.mark.parametrize("reverse", [False, True], ids=["forward", "reverse"])
@pytest.mark.parametrize(("op", "dtype", "other"), SCANS[:1] + SCANS[2:3], ids=["cumsum-float32", "cumsum-int32"])
@pytest.mark.parametrize(("BM", "BN"), [(64, 64), (16, 32), (32, 8)])
def test_a_scan_along_dim_0_keeps_one_warp(rng, op, dtype, other, BM, BN, reverse):
    """Warps split a tile by rows: along dim 0 each would hold a row or two of the scan and
    the exchange would carry all of it, where one warp combines its rows as vectors, each
    into the next (lowering/scans.py; the core's chain of 4096 scalar adds took LLVM 12 s)."""
    m, n = BM - 1, BN - 3
    x = _inputs(rng, op, dtype, (m, n))
    consts = dict(OP=op, AXIS=0, REVERSE=reverse, OTHER=other, BM=BM, BN=BN)
    t = TYPES[dtype]
    ck = kl.compile(scan_kernel, signature=f"*{t},*{t},i32,i32", constexprs=consts, target="cpu")
    assert warps_of(ck) == 1
    out = poison((m, n), dtype)
    scan_kernel[(1,)](x, out, m, n, **consts, target="cpu")
    _check(out, x, op, 0, reverse)
