"""tl.range(..., flatten=True) on the CPU: the fused loop nest (passes/fuse_nested_loops.py)
runs natively and gives the nest's results. Tutorial 09's persistent matmuls over shapes with
several tiles per program, partial edge tiles, K not a multiple of BLOCK_K, K below one block
and K == 0, grids below and above the tile count, against float64; a nest with a plain body
(no dot) and an epilogue store against the interpreter, which runs the nest as written."""

import math

import numpy as np
import pytest
from conftest import poison

import kernellab as kl
import kernellab.language as tl
from kernellab.examples import matmul_descriptor_persistent_kernel, matmul_persistent_kernel
from kernellab.tools.tensor_descriptor import TensorDescriptor

BM, BN, BK = 32, 32, 16


def _fused(ck) -> bool:
    record = next(r for r in ck.passes if r.name == "fuse_nested_loops")
    return record.summary == "1× fuse-loop-nest"


def _bound(a, b, ref, k):
    """fp16 products are exact in fp32; at most k fp32 roundings of the running sum, then one
    rounding to fp16 (half an ulp, or half the smallest subnormal)."""
    return k * 2.0**-24 * (np.abs(a).astype(np.float64) @ np.abs(b)) + 2.0**-11 * np.abs(ref) + 2.0**-25


# (M, N, K, programs): several tiles each with edges on both sides and K masked; K below one
# block; K == 0 (C is zeros); one program for all tiles; more programs than tiles
SHAPES = [(72, 80, 56, 3), (64, 96, 7, 2), (100, 33, 40, 50), (40, 70, 0, 2), (96, 64, 48, 1), (1, 1, 1, 4)]


@pytest.mark.parametrize("M,N,K,programs", SHAPES, ids=str)
def test_persistent_matmul_fused_matches_float64(rng, M, N, K, programs):
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((N, K)).astype(np.float16).T  # K-major B, as the benchmark's
    c = poison((M, N), np.float16)
    ck = matmul_persistent_kernel[(programs,)](
        a, b, c, M, N, K, a.strides[0] // 2, a.strides[1] // 2, b.strides[0] // 2, b.strides[1] // 2,
        c.strides[0] // 2, c.strides[1] // 2, BLOCK_SIZE_M=BM, BLOCK_SIZE_N=BN, BLOCK_SIZE_K=BK,
        GROUP_SIZE_M=2, NUM_SMS=programs, target="cpu")  # fmt: skip
    assert _fused(ck)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    assert np.all(np.abs(c.astype(np.float64) - ref) <= _bound(a, b, ref, K))


@pytest.mark.parametrize("M,N,K,programs", [(72, 80, 56, 3), (100, 33, 24, 50), (64, 64, 8, 1)], ids=str)
def test_persistent_descriptor_matmul_fused_matches_float64(rng, M, N, K, programs):
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((N, K)).astype(np.float16)
    c = poison((M, N), np.float16)
    ck = matmul_descriptor_persistent_kernel[(programs,)](
        TensorDescriptor.from_tensor(a, [BM, BK]), TensorDescriptor.from_tensor(b, [BN, BK]),
        TensorDescriptor.from_tensor(c, [BM, BN]), M, N, K, BLOCK_SIZE_M=BM, BLOCK_SIZE_N=BN,
        BLOCK_SIZE_K=BK, GROUP_SIZE_M=2, NUM_SMS=programs, FLATTEN=True, target="cpu")  # fmt: skip
    assert _fused(ck)
    ref = a.astype(np.float64) @ b.astype(np.float64).T
    assert np.all(np.abs(c.astype(np.float64) - ref) <= _bound(a, b.T, ref, K))


@kl.jit
def _scaled_row_sums(x_ptr, out_ptr, count_ptr, rows, cols, scale, BLOCK: tl.constexpr,
                     PROGRAMS: tl.constexpr):  # fmt: skip
    """Row r of x (rows x cols) summed in BLOCK-wide lanes, times `scale`, onto a start of r,
    for rows pid, pid + PROGRAMS, ...; each program counts its rows."""
    pid = tl.program_id(0)
    done = 0
    for row in tl.range(pid, rows, PROGRAMS, flatten=True):
        base = x_ptr + row * cols
        lanes = tl.zeros([BLOCK], tl.float32) + row.to(tl.float32)  # not zero: restarts by select
        for c0 in range(0, cols, BLOCK):
            offs = c0 + tl.arange(0, BLOCK)
            lanes += tl.load(base + offs, mask=offs < cols, other=0.0) * scale
        tl.store(out_ptr + row * BLOCK + tl.arange(0, BLOCK), lanes)
        done += 1
    tl.store(count_ptr + pid, done)


@pytest.mark.parametrize("rows,cols,programs", [(7, 45, 3), (5, 16, 8), (9, 3, 2), (6, 0, 4)], ids=str)
def test_a_plain_nest_with_an_epilogue_store_matches_the_interpreter(rng, rows, cols, programs):
    block = 16
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    scale = np.float32(rng.uniform(0.5, 2.0))
    results = {}
    for target in ("cpu", None):  # None: the interpreter
        out, count = poison((rows, block), np.float32), poison((programs,), np.int32)
        ck = _scaled_row_sums[(programs,)](x, out, count, rows, cols, scale, BLOCK=block, PROGRAMS=programs,
                                           target=target)  # fmt: skip
        results[target] = out, count
        if target == "cpu":
            assert _fused(ck)
    (out, count), (ref_out, ref_count) = results["cpu"], results[None]
    np.testing.assert_array_equal(count, ref_count)
    np.testing.assert_array_equal(count, [len(range(p, rows, programs)) for p in range(programs)])
    padded = np.zeros((rows, math.ceil(cols / block) * block))
    padded[:, :cols] = x
    exact = np.arange(rows)[:, None] + padded.reshape(rows, -1, block).sum(axis=1) * np.float64(scale)
    terms = np.abs(padded).reshape(rows, -1, block).sum(axis=1) * scale + np.arange(rows)[:, None]
    bound = 2 * (padded.shape[1] // block + 1) * 2.0**-24 * terms
    for got in (out, ref_out):
        assert np.all(np.abs(got - exact) <= bound)
    np.testing.assert_allclose(out, ref_out, rtol=0, atol=float(bound.max()) * 2)
