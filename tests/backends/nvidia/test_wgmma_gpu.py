"""wgmma on a Hopper GPU (`-m gpu`, compute capability 9.0: kernels compile for sm_90a there),
against float64: the tutorial matmul over the tile configs Triton's tutorial tunes, fp16 and
bf16, with A and B each K-major or MN-major in memory (both descriptor forms), K masked."""

from __future__ import annotations

import numpy as np
import pytest

import kernellab as kl
from kernellab.examples import matmul_kernel

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def torch(hopper_torch):
    return hopper_torch


CONFIGS = [(128, 256, 64, 8, 3), (64, 256, 32, 4, 4), (128, 128, 32, 4, 4), (128, 64, 32, 4, 4),
           (64, 128, 32, 4, 4), (128, 32, 32, 4, 4), (128, 128, 64, 8, 2)]  # fmt: skip


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: "x".join(map(str, c)))
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("a_major, b_major", [("k", "mn"), ("mn", "k"), ("k", "k"), ("mn", "mn")])
def test_wgmma_matmul_matches_float64(torch, config, dtype, a_major, b_major):
    bm, bn, bk, warps, stages = config
    M, N, K = 256, 512, 3 * bk + 16  # the last K tile half masked
    rng = np.random.default_rng()
    tdtype = getattr(torch, dtype)
    a_np = rng.standard_normal((M, K)).astype(np.float32)
    b_np = rng.standard_normal((K, N)).astype(np.float32)
    # K-major A is row-major (M x K); MN-major A is stored K x M and viewed transposed
    a = (torch.from_numpy(a_np) if a_major == "k" else torch.from_numpy(a_np.T.copy()).t()).to(tdtype).cuda()
    b = (torch.from_numpy(b_np.T.copy()).t() if b_major == "k" else torch.from_numpy(b_np)).to(tdtype).cuda()
    c = torch.full((M, N), float("nan"), dtype=torch.float16, device="cuda")
    grid = (kl.cdiv(M, bm) * kl.cdiv(N, bn),)
    compiled = matmul_kernel[grid](
        a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0),
        c.stride(1), BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn, BLOCK_SIZE_K=bk, GROUP_SIZE_M=8,
        ACTIVATION="", num_warps=warps, num_stages=stages,
    )  # fmt: skip
    torch.cuda.synchronize()
    assert "wgmma.mma_async" in compiled.asm["ptx"]
    a64 = a.float().cpu().numpy().astype(np.float64)
    b64 = b.float().cpu().numpy().astype(np.float64)
    ref = a64 @ b64
    bound = (K + 1) * 2.0**-24 * (np.abs(a64) @ np.abs(b64)) + 2.0**-11 * np.abs(ref) + 1e-6
    got = c.float().cpu().numpy()
    bad = ~(np.abs(got - ref) <= bound)
    assert not bad.any(), (f"{int(bad.sum())} of {bad.size} off; first at "
                           f"{tuple(np.argwhere(bad)[0])}: {got[tuple(np.argwhere(bad)[0])]} vs "
                           f"{ref[tuple(np.argwhere(bad)[0])]}")  # fmt: skip


@pytest.mark.parametrize("config", [(128, 256, 64, 8, 3), (64, 128, 32, 4, 4)], ids=lambda c: "x".join(map(str, c)))
@pytest.mark.parametrize("K", [80, 0])
def test_tma_operand_tiles_wrap_rows_past_the_edges_and_read_an_empty_k(torch, config, K):
    """The tutorial's operands read through TMA (tiles_as_descriptors) where M and N end inside a
    tile: the rows and columns the pointer loads wrap (`% M`) read zeros instead, which the
    store's mask keeps out of C; K = 0 gives tensor maps of empty tensors (no iteration, C = 0)."""
    bm, bn, bk, warps, stages = config
    M, N = 200, 304  # rows 16-byte multiples apart (TMA), the last tiles partial
    rng = np.random.default_rng()
    a = torch.from_numpy(rng.standard_normal((M, K)).astype(np.float32)).half().cuda()
    b = torch.from_numpy(rng.standard_normal((K, N)).astype(np.float32)).half().cuda()
    c = torch.full((M, N), float("nan"), dtype=torch.float16, device="cuda")
    grid = (kl.cdiv(M, bm) * kl.cdiv(N, bn),)
    compiled = matmul_kernel[grid](
        a, b, c, M, N, K, max(K, 16), 1, N, 1, N, 1, BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn,
        BLOCK_SIZE_K=bk, GROUP_SIZE_M=8, ACTIVATION="", num_warps=warps, num_stages=stages,
    )  # fmt: skip
    torch.cuda.synchronize()
    assert "cp.async.bulk.tensor.2d" in compiled.asm["ptx"]
    a64, b64 = a.double().cpu().numpy(), b.double().cpu().numpy()
    ref = a64 @ b64
    bound = (K + 1) * 2.0**-24 * (np.abs(a64) @ np.abs(b64)) + 2.0**-11 * np.abs(ref) + 1e-6
    got = c.double().cpu().numpy()
    assert (np.abs(got - ref) <= bound).all()


@pytest.mark.parametrize("config", [(128, 256, 128, 8, 3), (128, 128, 64, 4, 4), (64, 64, 32, 4, 3)],
                         ids=lambda c: "x".join(map(str, c)))  # fmt: skip
@pytest.mark.parametrize("a_dtype, b_dtype", [("float8_e4m3fn", "float8_e4m3fn"), ("float8_e5m2", "float8_e5m2"),
                                              ("float8_e4m3fn", "float8_e5m2")])  # fmt: skip
def test_fp8_wgmma_matmul_matches_float64(torch, config, a_dtype, b_dtype):
    """fp8 operands (both K-major: B column-major, as wgmma requires). Hopper's fp8 tensor cores
    add into the accumulator with fewer significant bits than fp32 (about 13, which is why
    Triton has max_num_imprecise_acc), so each of the K/32 instructions may round the partial
    sum by 2^-13 of it: the bound is (K/32) 2^-13 sum|a||b|, then fp16 output rounding."""
    bm, bn, bk, warps, stages = config
    M, N, K = 256, 256, 4 * bk
    a = torch.randn(M, K, device="cuda").to(getattr(torch, a_dtype))
    b = torch.randn(N, K, device="cuda").to(getattr(torch, b_dtype)).t()  # K x N, column-major
    c = torch.full((M, N), float("nan"), dtype=torch.float16, device="cuda")
    grid = (kl.cdiv(M, bm) * kl.cdiv(N, bn),)
    compiled = matmul_kernel[grid](
        a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0),
        c.stride(1), BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn, BLOCK_SIZE_K=bk, GROUP_SIZE_M=8,
        ACTIVATION="", num_warps=warps, num_stages=stages,
    )  # fmt: skip
    torch.cuda.synchronize()
    assert "k32.f32.e" in compiled.asm["ptx"]
    a64 = a.float().cpu().numpy().astype(np.float64)
    b64 = b.float().cpu().numpy().astype(np.float64)
    ref = a64 @ b64
    bound = (K // 32) * 2.0**-13 * (np.abs(a64) @ np.abs(b64)) + 2.0**-11 * np.abs(ref) + 1e-6
    assert np.all(np.abs(c.float().cpu().numpy() - ref) <= bound)


@pytest.mark.parametrize("case", [(64, 64, 32, 4), (128, 64, 64, 8), (64, 256, 32, 8), (128, 128, 64, 4)],
                         ids=lambda c: "x".join(map(str, c)))  # fmt: skip
def test_wgmma_with_a_register_operand_matches_float64(torch, case):
    """The second dot of a chain reads P (computed from the first dot) from registers."""
    from tests.backends.nvidia.test_wgmma import chained_dot

    m, n, k, warps = case
    rng = np.random.default_rng()
    a, b, c = (rng.standard_normal(shape).astype(np.float16) for shape in ((m, k), (k, k), (k, n)))
    d = torch.full((m, n), float("nan"), device="cuda")
    compiled = chained_dot[(1,)](*(torch.from_numpy(x).cuda() for x in (a, b, c)), d, M=m, N=n, K=k,
                                 num_warps=warps)  # fmt: skip
    torch.cuda.synchronize()
    assert "#ttg.dot_op<{opIdx = 0" in compiled.asm["ttgir"].split("ttng.warp_group_dot")[2].split("*")[0]
    s = a.astype(np.float64) @ b.astype(np.float64)
    p64 = np.exp2(s - s.max(axis=1, keepdims=True))
    # the kernel rounds s (fp32 accumulation) and P (to fp16) before the second dot
    p16 = np.exp2(np.float32(s) - np.float32(s).max(axis=1, keepdims=True)).astype(np.float16).astype(np.float64)
    ref = p16 @ c.astype(np.float64)
    bound = (k + 1) * 2.0**-24 * (np.abs(p16) @ np.abs(c.astype(np.float64))) + 1e-3 * (np.abs(p64) @ np.abs(c.astype(np.float64))) + 1e-6
    got = d.cpu().numpy().astype(np.float64)
    bad = ~(np.abs(got - ref) <= bound)
    assert not bad.any(), f"{int(bad.sum())} of {bad.size} off; first at {tuple(np.argwhere(bad)[0])}"


# two warp groups along M (128 x 256, 8 warps), two along N (64 x 256, 8 warps: m64n128 each),
# every swizzle width of the K-major buffers (BLOCK_K 32, 16, 8 fp32: 128, 64, 32 bytes)
TF32_CONFIGS = [(128, 128, 32, 4, 3), (128, 256, 32, 8, 3), (64, 256, 32, 4, 4), (128, 64, 32, 4, 4),
                (128, 32, 32, 4, 4), (128, 128, 16, 8, 3), (64, 64, 8, 4, 3), (64, 256, 32, 8, 3)]  # fmt: skip


@pytest.mark.parametrize("config", TF32_CONFIGS, ids=lambda c: "x".join(map(str, c)))
@pytest.mark.parametrize("a_major, b_major", [("k", "mn"), ("mn", "k"), ("k", "k"), ("mn", "mn")])
def test_tf32_wgmma_matmul_matches_float64(torch, config, a_major, b_major):
    """fp32 operands on wgmma k8 (input_precision tf32, tl.dot's default): an MN-major operand
    is transposed into its K-major buffer by 4-byte copies. wgmma keeps 10 mantissa bits of
    each operand (it ignores the low 13; truncating or rounding, each operand is within 2^-10
    of itself, a product within 2^-9 + 2^-20), accumulates in fp32, the kernel stores fp16."""
    bm, bn, bk, warps, stages = config
    M, N, K = 256, 512, 3 * bk + 8  # the last K tile partly masked
    rng = np.random.default_rng()
    a_np = rng.standard_normal((M, K)).astype(np.float32)
    b_np = rng.standard_normal((K, N)).astype(np.float32)
    a = (torch.from_numpy(a_np) if a_major == "k" else torch.from_numpy(a_np.T.copy()).t()).cuda()
    b = (torch.from_numpy(b_np.T.copy()).t() if b_major == "k" else torch.from_numpy(b_np)).cuda()
    c = torch.full((M, N), float("nan"), dtype=torch.float16, device="cuda")
    grid = (kl.cdiv(M, bm) * kl.cdiv(N, bn),)
    compiled = matmul_kernel[grid](
        a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0),
        c.stride(1), BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn, BLOCK_SIZE_K=bk, GROUP_SIZE_M=8,
        ACTIVATION="", num_warps=warps, num_stages=stages,
    )  # fmt: skip
    torch.cuda.synchronize()
    assert ".f32.tf32.tf32" in compiled.asm["ptx"] and "wgmma.mma_async" in compiled.asm["ptx"]
    a64, b64 = a_np.astype(np.float64), b_np.astype(np.float64)
    ref = a64 @ b64
    bound = (2.0**-9 + 2.0**-20 + (K + 1) * 2.0**-24) * (np.abs(a64) @ np.abs(b64)) + 2.0**-11 * np.abs(ref) + 1e-6
    got = c.float().cpu().numpy()
    bad = ~(np.abs(got - ref) <= bound)
    assert not bad.any(), (f"{int(bad.sum())} of {bad.size} off; first at "
                           f"{tuple(np.argwhere(bad)[0])}: {got[tuple(np.argwhere(bad)[0])]} vs "
                           f"{ref[tuple(np.argwhere(bad)[0])]}")  # fmt: skip


@pytest.mark.parametrize("config", [(128, 128, 64, 4, 3), (128, 256, 128, 8, 3), (64, 128, 64, 4, 4),
                                    (128, 64, 128, 8, 3), (64, 64, 32, 4, 3), (64, 256, 64, 8, 3)],
                         ids=lambda c: "x".join(map(str, c)))  # fmt: skip
@pytest.mark.parametrize("b_major", ["k", "mn"])
def test_int8_matmul_is_exact(torch, config, b_major):
    """s8 x s8 -> s32, exact: on wgmma k32 with a column-major (K-major) B, on mma.sync with a
    row-major one. Values span all of int8, K reaches the hundreds: sums far beyond 2^16."""
    from kernellab.examples import matmul_int8_kernel

    bm, bn, bk, warps, stages = config
    M, N, K = 256, 384, 4 * bk + 32  # the last K tile partly masked
    rng = np.random.default_rng()
    a_np = rng.integers(-128, 128, (M, K), dtype=np.int8)
    b_np = rng.integers(-128, 128, (K, N), dtype=np.int8)
    a = torch.from_numpy(a_np).cuda()
    b = (torch.from_numpy(b_np.T.copy()).t() if b_major == "k" else torch.from_numpy(b_np)).cuda()
    c = torch.full((M, N), -(2**31), dtype=torch.int32, device="cuda")
    grid = (kl.cdiv(M, bm) * kl.cdiv(N, bn),)
    compiled = matmul_int8_kernel[grid](
        a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0),
        c.stride(1), BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn, BLOCK_SIZE_K=bk, GROUP_SIZE_M=8,
        num_warps=warps, num_stages=stages,
    )  # fmt: skip
    torch.cuda.synchronize()
    assert ("k32.s32.s8.s8" in compiled.asm["ptx"]) == (b_major == "k")
    ref = a_np.astype(np.int64) @ b_np.astype(np.int64)
    got = c.cpu().numpy().astype(np.int64)
    bad = got != ref
    assert not bad.any(), f"{int(bad.sum())} of {bad.size} differ; first at {tuple(np.argwhere(bad)[0])}"


@pytest.mark.parametrize("imprecise", [32, 64, None])  # None: the whole BLOCK_K
@pytest.mark.parametrize("config", [(128, 128, 128, 8), (64, 128, 64, 4)], ids=lambda c: "x".join(map(str, c)))
def test_fp8_max_num_imprecise_acc_matches_float64_within_one_partial_sum(torch, config, imprecise):
    """With max_num_imprecise_acc = N each N of K is summed by the tensor cores alone (about 13
    significant bits) and then added into fp32: the error is at most 2^-13 of sum|a||b| over
    all K (not K/32 times that, as without promotion) plus fp32 rounding; fp32 out."""
    from tests.backends.nvidia.test_wgmma import fp8_matmul

    bm, bn, bk, warps = config
    imprecise = imprecise or bk
    M, N, K = 256, 256, 8 * bk
    a = torch.randn(M, K, device="cuda").to(torch.float8_e4m3fn)
    b = torch.randn(N, K, device="cuda").to(torch.float8_e4m3fn).t()  # K x N, column-major
    c = torch.full((M, N), float("nan"), device="cuda")
    compiled = fp8_matmul[(kl.cdiv(M, bm), kl.cdiv(N, bn))](
        a, b, c, M, N, K, a.stride(0), b.stride(1), BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk,
        IMPRECISE=imprecise, num_warps=warps, num_stages=3,
    )  # fmt: skip
    torch.cuda.synchronize()
    assert f"maxNumImpreciseAcc = {imprecise}" in compiled.asm["ttgir"]
    a64 = a.float().cpu().numpy().astype(np.float64)
    b64 = b.float().cpu().numpy().astype(np.float64)
    ref = a64 @ b64
    bound = (2.0**-13 + (K + 1) * 2.0**-24) * (np.abs(a64) @ np.abs(b64)) + 1e-6
    got = c.cpu().numpy().astype(np.float64)
    bad = ~(np.abs(got - ref) <= bound)
    assert not bad.any(), f"{int(bad.sum())} of {bad.size} off; first at {tuple(np.argwhere(bad)[0])}"
