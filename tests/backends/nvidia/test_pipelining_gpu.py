"""Pipelined loops on the GPU (`-m gpu`), against float64 references: the tutorial matmul over
num_stages 1..4 with K masked, K shorter than the pipeline, and bf16; the persistent matmul's
fused loop nest (flatten=True) over few and many programs; the persistent softmax
(a row loop with tl.range's num_stages, a masked `other` of -inf); a loop whose masked-off
value is not zero; a loop whose first copies read what a store before it wrote."""

from __future__ import annotations

import numpy as np
import pytest

import kernellab as kl
import kernellab.language as tl
from kernellab.examples import (
    matmul_kernel,
    matmul_persistent_kernel,
    softmax_config,
    softmax_persistent_kernel,
    softmax_reference,
)

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def torch(cuda_torch):
    return cuda_torch


def assert_close64(actual, expected, bound, what):
    actual = np.asarray(actual, dtype=np.float64)
    bad = ~(np.abs(actual - expected) <= bound)
    if bad.any():
        i = tuple(int(v) for v in np.argwhere(bad)[0])
        raise AssertionError(f"{what}: {int(bad.sum())} of {bad.size} off; first at {i}: "
                             f"{actual[i]!r} vs {expected[i]!r}")  # fmt: skip


@pytest.mark.parametrize("n", [1, 2, 7])
def test_a_shadowed_offset_matches_float64(torch, n):
    """The loads' offset runs ahead in a shadow while the math reads this iteration's (n = 1, 2:
    shorter than the pipeline)."""
    from tests.backends.nvidia.test_pipelining import scaled_offset_walk

    block = 256
    x = np.random.default_rng().standard_normal(n * block).astype(np.float32)
    out = torch.full((block,), float("nan"), dtype=torch.float32, device="cuda")
    scaled_offset_walk[(1,)](torch.from_numpy(x).cuda(), out, n, BLOCK=block)
    torch.cuda.synchronize()
    rows = x.astype(np.float64).reshape(n, block)
    scale = ((np.arange(n) + 1) * block)[:, None]
    ref = (rows * scale).sum(axis=0)
    bound = n * 2.0**-23 * (np.abs(rows) * scale).sum(axis=0)
    assert_close64(out.cpu().numpy(), ref, bound, "out")


@pytest.mark.parametrize("stages", [1, 2, 3, 4])
@pytest.mark.parametrize("M, N, K", [(256, 256, 32), (192, 128, 80), (128, 256, 1024), (64, 64, 16)])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_pipelined_matmul_matches_float64(torch, stages, M, N, K, dtype):
    """K=32 is one iteration and K=16 a masked half one (both shorter than the prologue for 3+
    stages); K=80 ends on a masked tile; K=1024 runs the ring round many times."""
    rng = np.random.default_rng()
    tdtype = getattr(torch, dtype)
    a = torch.from_numpy(rng.standard_normal((M, K)).astype(np.float32)).to(tdtype).cuda()
    b = torch.from_numpy(rng.standard_normal((K, N)).astype(np.float32)).to(tdtype).cuda()
    c = torch.full((M, N), float("nan"), dtype=torch.float16, device="cuda")
    bm, bn, bk = 64, 64, 32
    grid = (kl.cdiv(M, bm) * kl.cdiv(N, bn),)
    matmul_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                        c.stride(0), c.stride(1), BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn, BLOCK_SIZE_K=bk,
                        GROUP_SIZE_M=8, ACTIVATION="", num_stages=stages, num_warps=4)  # fmt: skip
    torch.cuda.synchronize()
    a64, b64 = a.float().cpu().numpy().astype(np.float64), b.float().cpu().numpy().astype(np.float64)
    ref = a64 @ b64
    bound = (K + 1) * 2.0**-24 * (np.abs(a64) @ np.abs(b64)) + 2.0**-11 * np.abs(ref) + 1e-6
    assert_close64(c.float().cpu().numpy(), ref, bound, f"c ({stages} stages)")


@pytest.mark.parametrize("config", [(128, 256, 64, 8, 3), (128, 128, 64, 4, 4), (64, 64, 32, 4, 2)],
                         ids=lambda c: "x".join(map(str, c)))  # fmt: skip
@pytest.mark.parametrize("M, N, K, programs", [(520, 392, 232, 3), (300, 700, 40, 7), (256, 512, 64, 200),
                                               (130, 260, 0, 2)])  # fmt: skip
def test_persistent_matmul_fused_across_tiles_matches_float64(torch, config, M, N, K, programs):
    """tl.range(..., flatten=True): one loop over tiles x K steps, the next tile's copies in
    flight during this tile's epilogue. Few programs walk many tiles (partial ones at the M and
    N edges, K masked); K=40 is less than one BLOCK_K=64 step; 200 programs is more than the
    tiles; K=0 stores zeros (the nest as written)."""
    bm, bn, bk, warps, stages = config
    rng = np.random.default_rng()
    a = torch.from_numpy(rng.standard_normal((M, K)).astype(np.float32)).half().cuda()
    b = torch.from_numpy(rng.standard_normal((N, K)).astype(np.float32)).half().cuda().T  # K-major
    c = torch.full((M, N), float("nan"), dtype=torch.float16, device="cuda")
    ck = matmul_persistent_kernel[(programs,)](
        a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
        BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn, BLOCK_SIZE_K=bk, GROUP_SIZE_M=8, NUM_SMS=programs,
        num_warps=warps, num_stages=stages)  # fmt: skip
    torch.cuda.synchronize()
    assert next(r for r in ck.passes if r.name == "fuse_nested_loops").changed
    a64, b64 = a.double().cpu().numpy(), b.double().cpu().numpy()
    ref = a64 @ b64
    bound = (K + 1) * 2.0**-24 * (np.abs(a64) @ np.abs(b64)) + 2.0**-11 * np.abs(ref) + 1e-6
    assert_close64(c.double().cpu().numpy(), ref, bound, f"c ({config}, {programs} programs)")


@pytest.mark.parametrize("stages", [1, 2, 4])
@pytest.mark.parametrize("rows, cols, programs", [(3, 1000, 8), (1823, 781, 132), (4096, 1024, 264)])
def test_pipelined_softmax_matches_float64(torch, stages, rows, cols, programs):
    """Programs loop over rows a grid apart; with 3 rows and 8 programs most loops are empty."""
    x_np = np.random.default_rng().standard_normal((rows, cols)).astype(np.float32)
    x = torch.from_numpy(x_np).cuda()
    y = torch.full_like(x, float("nan"))
    block = triton_block(cols)
    softmax_persistent_kernel[(programs,)](y, x, x.stride(0), y.stride(0), rows, cols,
                                           BLOCK_SIZE=block, num_stages=stages, num_warps=8)  # fmt: skip
    torch.cuda.synchronize()
    ref = softmax_reference(x_np.astype(np.float64))
    assert_close64(y.cpu().numpy(), ref, 1e-6 + 1e-5 * np.abs(ref), f"softmax ({stages} stages)")


@pytest.mark.parametrize("cols", [1024, 4096, 12160])
def test_benchmark_softmax_configs_match_float64(torch, cols):
    """The benchmark's configs (BLOCK_SIZE and 4/8/16 warps as the tutorial picks them, 4
    stages): n_cols a multiple of 16, so each thread's mask is one compare per 4-vector, and
    with 8 or 16 warps the row's max and sum combine each warp's partial in a tree. Inputs
    scaled by 3, as the benchmark's, so exp spans a wide range; 1031 rows leave uneven loops."""
    rows, programs = 1031, 264
    x_np = (3 * np.random.default_rng().standard_normal((rows, cols))).astype(np.float32)
    x = torch.from_numpy(x_np).cuda()
    y = torch.full_like(x, float("nan"))
    block, warps = softmax_config(cols)
    softmax_persistent_kernel[(programs,)](y, x, x.stride(0), y.stride(0), rows, cols,
                                           BLOCK_SIZE=block, num_stages=4, num_warps=warps)  # fmt: skip
    torch.cuda.synchronize()
    ref = softmax_reference(x_np.astype(np.float64))
    assert_close64(y.cpu().numpy(), ref, 1e-6 + 1e-5 * np.abs(ref), f"softmax ({cols} columns)")


def triton_block(cols: int) -> int:
    return 1 << (cols - 1).bit_length()


@kl.jit
def masked_max_over_rows(x_ptr, out_ptr, n_rows, n_cols, BLOCK: tl.constexpr):
    """Column maxima of an n_rows x n_cols array, walking rows; masked lanes read -1e30."""
    cols = tl.arange(0, BLOCK)
    acc = tl.full((BLOCK,), -3.0e38, tl.float32)
    for r in tl.range(0, n_rows, num_stages=3):
        row = tl.load(x_ptr + r * n_cols + cols, mask=cols < n_cols, other=-1.0e30)
        acc = tl.maximum(acc, row)
    tl.store(out_ptr + cols, acc)


@pytest.mark.parametrize("n_rows", [1, 2, 5, 64])
def test_a_nonzero_other_survives_the_copy(torch, n_rows):
    """cp.async fills masked lanes with zeros; the select after it must restore `other`."""
    n_cols = 200  # rows start unaligned: 4-byte copies; the block of 256 is partly masked
    x_np = -np.abs(np.random.default_rng().standard_normal((n_rows, n_cols))).astype(np.float32) - 1
    x = torch.from_numpy(x_np).cuda()
    out = torch.full((256,), float("nan"), device="cuda")
    compiled = masked_max_over_rows[(1,)](x, out, n_rows, n_cols, BLOCK=256)
    torch.cuda.synchronize()
    assert "cp.async" in compiled.asm["ptx"]
    expected = np.concatenate([x_np.max(axis=0), np.full(56, -1.0e30, np.float32)])
    np.testing.assert_array_equal(out.cpu().numpy(), expected)


@pytest.mark.parametrize("n", [1, 5])
def test_early_copies_read_what_the_store_before_the_loop_wrote(torch, n):
    """x and out are one buffer: the loop's first copies, issued early, must still see the
    store before the loop (test_pipelining.py: they stay behind it)."""
    from tests.backends.nvidia.test_pipelining import store_then_walk

    block = 256
    rng = np.random.default_rng()
    buf = rng.standard_normal(n * block).astype(np.float32)
    y = rng.standard_normal(block).astype(np.float32)
    x = buf.astype(np.float64)
    x[:block] = 2.0 * y
    expected = x.copy()
    expected[:block] = 0.5 * x[:block] + x.reshape(n, block).sum(axis=0) + y
    t_buf, t_y = torch.from_numpy(buf).cuda(), torch.from_numpy(y).cuda()
    store_then_walk[(1,)](t_buf, t_y, t_buf, n, BLOCK=block)
    torch.cuda.synchronize()
    assert_close64(t_buf.cpu().numpy(), expected, 1e-5 * (np.abs(expected) + 1.0), "out")
