"""Reductions over an axis split among the warps of a CPU program: the grid loop runs the
program in phases between the barriers of the exchange (backends/cpu/lowering/phases.py),
values live across a barrier saved per warp. Every result against numpy in float64."""

import re

import numpy as np
import pytest
from conftest import assert_close, f64, poison, random_array

import kernellab as kl
import kernellab.language as tl
from kernellab.backends.llvm.errors import LoweringError
from kernellab.examples import layer_norm_kernel, softmax_kernel, softmax_reference
from tests.language.test_reductions import reduce_kernel  # the same kernel, split among warps here


def warps_of(ck) -> int:
    return int(re.search(r'"ttg.num-warps" = (\d+)', ck.asm["ttgir"]).group(1))


def phases_of(ck) -> int:
    m = re.search(r"\.phases\" = internal constant i32 (\d+)", ck.asm["llir"])
    return int(m.group(1)) if m else 1


# (BM, BN, axis): tiles whose reduced axis spans 2, 4 and 8 warps of 64 elements
SPLITS = [(4, 128, 1, 2), (2, 256, 1, 4), (1, 512, 1, 8), (8, 64, 0, 8), (16, 32, 0, 8)]
NEUTRAL = {"sum": 0.0, "max": float("-inf"), "min": float("inf"), "argmax": float("-inf")}


@pytest.mark.parametrize("op", ["sum", "max", "min", "argmax"])
@pytest.mark.parametrize(("BM", "BN", "axis", "across"), SPLITS)
def test_a_reduction_split_among_warps_matches_numpy(rng, op, BM, BN, axis, across):
    m, n = BM - (BM > 1), BN - 3  # masked rows and columns
    x = random_array(rng, (m, n), np.float32)
    if op == "argmax":  # ties break to the first index, also across warps
        x[:, n // 2] = x[:, 1] = np.abs(x).max() + 1
        x[m // 2, :] = x[0, :] = np.abs(x).max() + 1 if axis == 0 else x[m // 2, :]
    consts = dict(OP=op, AXIS=axis, OTHER=NEUTRAL[op], BM=BM, BN=BN)
    ck = kl.compile(reduce_kernel, signature="*fp32,*fp32,i32,i32", constexprs=consts, target="cpu")
    assert warps_of(ck) == BM * BN // 64 and phases_of(ck) >= 2
    out = poison(n if axis == 0 else m, np.int32 if op == "argmax" else np.float32)
    reduce_kernel[(1,)](x, out, m, n, **consts, target="cpu")
    if op == "argmax":
        np.testing.assert_array_equal(out, x.argmax(axis=axis))
    elif op == "sum":
        bound = np.abs(f64(x)).sum(axis=axis) * x.shape[axis] * 2**-24
        assert_close(out, f64(x).sum(axis=axis), atol=bound)
    else:
        np.testing.assert_array_equal(out, getattr(x, op)(axis=axis))


@kl.jit
def softmax_rows_kernel(x_ptr, out_ptr, max_ptr, sum_ptr, m, n, BM: tl.constexpr, BN: tl.constexpr):
    """Two exchanges with the loaded tile, the row maxima and the exponentials live across
    them, and the per-row results stored too."""
    pid = tl.program_id(0)
    rows = pid * BM + tl.arange(0, BM)
    cols = tl.arange(0, BN)
    mask = (rows[:, None] < m) & (cols[None, :] < n)
    offsets = rows[:, None] * n + cols[None, :]
    x = tl.load(x_ptr + offsets, mask=mask, other=-float("inf"))
    row_max = tl.max(x, axis=1)
    e = tl.exp(x - row_max[:, None])
    total = tl.sum(e, axis=1)
    tl.store(out_ptr + offsets, e / total[:, None], mask=mask)
    tl.store(max_ptr + rows, row_max, mask=rows < m)
    tl.store(sum_ptr + rows, total, mask=rows < m)


@pytest.mark.parametrize(("BM", "BN"), [(2, 256), (4, 128), (1, 1024)])
def test_softmax_rows_keep_their_tile_and_maxima_across_the_exchanges(rng, BM, BN):
    m, n = 11, BN - 5
    x = random_array(rng, (m, n), np.float32)
    out, row_max, total = poison((m, n), np.float32), poison(m, np.float32), poison(m, np.float32)
    ck = kl.compile(softmax_rows_kernel, signature="*fp32,*fp32,*fp32,*fp32,i32,i32",
                    constexprs=dict(BM=BM, BN=BN), target="cpu")  # fmt: skip
    assert warps_of(ck) == BM * BN // 64
    softmax_rows_kernel[(kl.cdiv(m, BM),)](x, out, row_max, total, m, n, BM=BM, BN=BN, target="cpu")
    np.testing.assert_array_equal(row_max, x.max(axis=1))
    e = np.exp(f64(x) - f64(x).max(axis=1, keepdims=True))
    assert_close(total, e.sum(axis=1), rtol=n * 2**-22)
    assert_close(out, softmax_reference(x), rtol=2e-6, atol=1e-9)


def test_softmax_splits_its_row_among_warps(rng):
    """One row of 1024 per program: 16 warps of 64, four phases (the max's exchange, the sum's
    scratch free again, the sum's exchange)."""
    ck = kl.compile(softmax_kernel, signature="*fp32,*fp32,i32,i32,i32", constexprs={"BLOCK_SIZE": 1024},
                    target="cpu")  # fmt: skip
    assert warps_of(ck) == 16 and phases_of(ck) == 4
    x = rng.standard_normal((64, 1000)).astype(np.float32)
    out = poison(x.shape, np.float32)
    softmax_kernel[(64,)](out, x, 1000, 1000, 1000, BLOCK_SIZE=1024, target="cpu")
    np.testing.assert_allclose(out, softmax_reference(x), rtol=2e-6, atol=1e-9)


def test_a_compile_resumed_from_the_llir_text_keeps_the_scratch_the_phases_need(rng):
    ck = kl.compile(softmax_kernel, signature="*fp32,*fp32,i32,i32,i32", constexprs={"BLOCK_SIZE": 1024},
                    target="cpu")  # fmt: skip
    assert ck.metadata["shared"] > 16 * 64 * 4  # the warps' saved exponentials, past the partials
    resumed = kl.compile(ck.asm["llir"], target="cpu", force=True)
    assert resumed.metadata["shared"] == ck.metadata["shared"]


@pytest.mark.parametrize(("n", "block"), [(4096, 1024), (1000, 256), (300, 128)])
def test_layer_norm_keeps_its_loops_results_and_statistics_across_phases(rng, n, block):
    """Three loops over the row, two reductions between them: the loops' accumulators, the mean
    and rstd live across the exchanges; the last columns masked where n is no multiple."""
    rows, eps = 9, 1e-5
    x = random_array(rng, (rows, n), np.float32)
    w, b = random_array(rng, n, np.float32), random_array(rng, n, np.float32)
    y, mean, rstd = poison((rows, n), np.float32), poison(rows, np.float32), poison(rows, np.float32)
    layer_norm_kernel[(rows,)](x, y, w, b, mean, rstd, n, n, eps, BLOCK_SIZE=block, target="cpu")
    x64 = f64(x)
    mu, var = x64.mean(axis=1), x64.var(axis=1)
    assert_close(mean, mu, atol=np.abs(x64).mean(axis=1) * n * 2**-24)
    assert_close(rstd, 1 / np.sqrt(var + eps), rtol=n * 2**-22)
    ref = (x64 - mu[:, None]) / np.sqrt(var[:, None] + eps) * w + b
    assert_close(y, ref, rtol=1e-5, atol=1e-5 * (np.abs(w) + np.abs(b)))


@kl.jit
def reduce_reduced_kernel(x_ptr, out_ptr, BM: tl.constexpr, BN: tl.constexpr):
    """Reductions of reductions along both axes, their scalars combined: five exchanges, the
    row sums and column maxima (slice layouts, duplicated among warps) live across them."""
    rows, cols = tl.arange(0, BM), tl.arange(0, BN)
    x = tl.load(x_ptr + rows[:, None] * BN + cols[None, :])
    row_sums = tl.sum(x, axis=1)
    col_max = tl.max(x, axis=0)
    tl.store(out_ptr, tl.sum(row_sums, axis=0))
    tl.store(out_ptr + 1, tl.max(col_max, axis=0))
    tl.store(out_ptr + 2, tl.sum(row_sums * 2.0, axis=0) + tl.min(col_max, axis=0))


@pytest.mark.parametrize(("BM", "BN"), [(4, 128), (8, 64), (2, 512), (32, 32)])
def test_reductions_of_reductions_across_warps(rng, BM, BN):
    x = random_array(rng, (BM, BN), np.float32)
    out = poison(3, np.float32)
    ck = kl.compile(reduce_reduced_kernel, signature="*fp32,*fp32", constexprs=dict(BM=BM, BN=BN), target="cpu")
    assert warps_of(ck) == BM * BN // 64
    reduce_reduced_kernel[(1,)](x, out, BM=BM, BN=BN, target="cpu")
    x64 = f64(x)
    bound = np.abs(x64).sum() * BM * BN * 2**-24
    assert_close(out, [x64.sum(), x64.max(), 2 * x64.sum() + x64.max(axis=0).min()], atol=[bound, 0, 2 * bound])


@kl.jit
def loop_after_sum_kernel(x_ptr, out_ptr, reps, BM: tl.constexpr, BN: tl.constexpr):
    rows = tl.arange(0, BM)
    s = tl.sum(tl.load(x_ptr + rows[:, None] * BN + tl.arange(0, BN)[None, :]), axis=1)
    for i in range(reps):
        tl.store(out_ptr + i * BM + rows, s * (i + 1))


def test_a_reduction_result_used_in_a_loop_keeps_one_warp(rng):
    """Its layout conversion would be an exchange inside the loop, where warps cannot run in
    phases: the passes run again with one warp."""
    ck = kl.compile(loop_after_sum_kernel, signature="*fp32,*fp32,i32", constexprs=dict(BM=4, BN=128),
                    target="cpu")  # fmt: skip
    assert warps_of(ck) == 1
    x = random_array(rng, (4, 128), np.float32)
    out = poison((3, 4), np.float32)
    loop_after_sum_kernel[(1,)](x, out, 3, BM=4, BN=128, target="cpu")
    s = f64(x).sum(axis=1)
    assert_close(out, s * np.arange(1, 4)[:, None], atol=3 * np.abs(f64(x)).sum(axis=1) * 128 * 2**-24)


@kl.jit
def sum_in_loop_kernel(x_ptr, out_ptr, reps, BLOCK: tl.constexpr):
    for i in range(reps):
        tl.store(out_ptr + i, tl.sum(tl.load(x_ptr + i * BLOCK + tl.arange(0, BLOCK)), axis=0))


def test_an_exchange_among_warps_inside_a_loop_is_a_lowering_error():
    """A reduction in a loop keeps one warp; TTGIR that splits it among warps anyway is refused
    with a message, never run wrong (a phase cannot end inside a loop)."""
    ck = kl.compile(sum_in_loop_kernel, signature="*fp32,*fp32,i32", constexprs={"BLOCK": 256}, target="cpu")
    assert warps_of(ck) == 1
    two = ck.asm["ttgir"].replace('"ttg.num-warps" = 1', '"ttg.num-warps" = 2').replace("warpsPerCTA = [1]", "warpsPerCTA = [2]")
    with pytest.raises(LoweringError, match="inside a loop or branch"):
        kl.compile(two, target="cpu", force=True)
