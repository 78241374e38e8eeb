"""A dot's epilogue: the accumulator narrowed (`acc.to(fp16/bf16/int16)`) and stored through a
mask at partial tiles, over tile shapes and warp counts that give MMA v2 (mma.sync) and, on
Hopper, MMA v3 (wgmma) accumulators. The narrowing runs in the MMA layout and the conversion
to the store's layout goes through shared memory (stmatrix.x4 on sm_90): every element must
land where it belongs, the padding around the output must stay untouched. On the CPU the
interpreter and the CPU backend run it (and it is assembled for sm_80 and sm_90); on the GPU
(`-m gpu`) against the interpreter and float64. The PTX forms are checked per target here."""

import re

import numpy as np
import pytest
from conftest import NP_DTYPES, assert_close, f64, poison, random_array

import kernellab as kl
import kernellab.language as tl


@kl.jit
def dot_epilogue_kernel(a_ptr, b_ptr, out_ptr, M, N, K, stride_om, BM: tl.constexpr,
                        BN: tl.constexpr, BK: tl.constexpr, OUT_DTYPE: tl.constexpr,
                        ACC_DTYPE: tl.constexpr):  # fmt: skip
    """out[:M, :N] = (a @ b).to(OUT_DTYPE), one BM x BN tile per program, K in BK chunks."""
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=ACC_DTYPE)
    for k0 in range(0, K, BK):
        kk = k0 + rk
        a = tl.load(a_ptr + rm[:, None] * K + kk[None, :], mask=(rm[:, None] < M) & (kk[None, :] < K), other=0)
        b = tl.load(b_ptr + kk[:, None] * N + rn[None, :], mask=(kk[:, None] < K) & (rn[None, :] < N), other=0)
        acc = tl.dot(a, b, acc)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    tl.store(out_ptr + rm[:, None] * stride_om + rn[None, :], acc.to(OUT_DTYPE), mask=mask)


# BM, BN, BK, warps: MMA v2 everywhere for M of 16 or 32 (wgmma needs 64 rows a warp group),
# MMA v3 on sm_90a for the others
TILES = [(16, 64, 32, 1), (32, 32, 32, 2), (32, 128, 32, 4), (64, 64, 32, 4), (128, 64, 32, 8),
         (64, 128, 64, 4)]  # fmt: skip
WGMMA_TILES = {(64, 64, 32, 4), (128, 64, 32, 8), (64, 128, 64, 4)}

# operand dtype, accumulator, output, output's numpy dtype, unit roundoff of the output
CASES = {
    "fp16": ("float16", tl.float32, tl.float16, np.float16, 2.0**-11),
    "bf16": ("bfloat16", tl.float32, tl.bfloat16, NP_DTYPES["bfloat16"], 2.0**-8),
    "int8-to-int16": ("int8", tl.int32, tl.int16, np.int16, 0.0),
}
PAD = 3  # rows and columns of poison around the output


def _run(launch, rng, case, tile, M, N, K):
    dtype, acc_dtype, out_dtype, out_np, unit = CASES[case]
    bm, bn, bk, warps = tile
    a = random_array(rng, (M, K), NP_DTYPES[dtype])
    b = random_array(rng, (K, N), NP_DTYPES[dtype])
    out = poison((M + PAD, N + PAD), out_np)
    grid = (kl.cdiv(M, bm), kl.cdiv(N, bn))
    launch(dot_epilogue_kernel, grid, a, b, out, M, N, K, N + PAD, BM=bm, BN=bn, BK=bk,
           OUT_DTYPE=out_dtype, ACC_DTYPE=acc_dtype, num_warps=warps)  # fmt: skip
    exact = f64(a) @ f64(b)
    if unit:
        # fp32 sums (K roundings of at most 2^-24 of the running |sum|), then one rounding to
        # the output type
        bound = K * 2.0**-24 * (np.abs(f64(a)) @ np.abs(f64(b))) + unit * np.abs(exact) + 2.0**-24
        assert_close(out[:M, :N], exact, atol=bound)
    else:  # int32 sums are exact; trunci keeps the low 16 bits
        assert np.array_equal(out[:M, :N], exact.astype(np.int64).astype(np.int16))
    poisoned = poison((M + PAD, N + PAD), out_np)
    for name, region in (("rows", np.s_[M:, :]), ("columns", np.s_[:, N:])):
        got, want = out[region], poisoned[region]
        same = np.isnan(f64(got)) if unit else got == want
        assert same.all(), f"the masked store wrote {name} past the output"


@pytest.mark.parametrize("tile", TILES, ids=lambda t: "x".join(map(str, t)))
@pytest.mark.parametrize("case", ["fp16", "bf16"])
def test_narrowed_accumulator_lands_in_every_element(launch, rng, case, tile):
    bm, bn, bk, _ = tile
    # two tiles and a part along M and N, K not a multiple of BK
    _run(launch, rng, case, tile, 2 * bm + bm // 2 + 3, 2 * bn - 5, 3 * bk - 7)


@pytest.mark.parametrize("tile", [(32, 64, 32, 4), (64, 64, 64, 4)], ids=lambda t: "x".join(map(str, t)))
def test_int32_accumulator_truncated_to_int16(launch, rng, tile):
    bm, bn, bk, _ = tile
    _run(launch, rng, "int8-to-int16", tile, bm + 9, bn + 17, 2 * bk + 5)


def _ptx(tile, case, target) -> str:
    dtype, acc_dtype, out_dtype, _, _ = CASES[case]
    bm, bn, bk, warps = tile
    pointer = {"float16": "*fp16", "bfloat16": "*bf16", "int8": "*i8"}[dtype]
    out = {"fp16": "*fp16", "bf16": "*bf16", "int8-to-int16": "*i16"}[case]
    compiled = kl.compile(
        dot_epilogue_kernel, signature=f"{pointer},{pointer},{out},i32,i32,i32,i32",
        constexprs=dict(BM=bm, BN=bn, BK=bk, OUT_DTYPE=out_dtype, ACC_DTYPE=acc_dtype),
        target=target, num_warps=warps,
    )  # fmt: skip
    assert compiled.asm["cubin"]  # ptxas assembled it
    return compiled.asm["ptx"]


@pytest.mark.parametrize("tile", TILES, ids=lambda t: "x".join(map(str, t)))
@pytest.mark.parametrize("target", ["sm_80", "sm_90", "sm_90a"])
def test_the_epilogue_stores_matrices_on_sm_90_and_pairs_before(tile, target):
    ptx = _ptx(tile, "fp16", target)
    wgmma = target == "sm_90a" and tile in WGMMA_TILES
    assert ("wgmma.mma_async" in ptx) == wgmma and ("mma.sync" in ptx) == (not wgmma)
    bm, bn, _, warps = tile
    per_thread = bm * bn // (32 * warps)  # halves of the accumulator each thread holds
    matrices = len(re.findall(r"stmatrix\.sync\.aligned\.m8n8\.x4\.shared\.b16", ptx))
    assert matrices == (0 if target == "sm_80" else per_thread // 8)  # 8 halves a lane each


def test_narrowing_to_int16_stores_matrices_too():
    ptx = _ptx((64, 64, 64, 4), "int8-to-int16", "sm_90")
    assert "stmatrix.sync.aligned.m8n8.x4.shared.b16" in ptx
