"""tl.dot's rounding: an fp16 accumulator (out_dtype=tl.float16) rounds once per K chunk of one
mma.sync instruction on every path (tensor cores, FMA, interpreter), and Triton's tutorial 03
check (allclose to cuBLAS with atol=1e-2, rtol=0) holds on the GPU. Large FMA dots, which the
lowering runs as a loop over K, are compared too."""

import numpy as np
import pytest
from conftest import assert_close, cdiv, cuda_available, f64, poison, random_array

import kernellab as kl
import kernellab.language as tl
from kernellab.examples import matmul_kernel


@kl.jit
def fp16_acc_kernel(a_ptr, b_ptr, c_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr,
                    K: tl.constexpr):  # fmt: skip
    rm, rn, rk = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    c = tl.load(c_ptr + rm[:, None] * N + rn[None, :])
    tl.store(out_ptr + rm[:, None] * N + rn[None, :], tl.dot(a, b, c, out_dtype=tl.float16))


def rounded_per_instruction(a, b, c, group=16):
    """(c + a @ b with the running sum rounded to fp16 after each `group` of K, computed in
    float64, and how far a device's result may be from it: the device sums each group in fp32
    (group * 2^-24 of its terms) and so may round to the other neighbour (one fp16 ulp of the
    sum); rounding to nearest never widens a difference carried from earlier groups.)"""
    d, bound = c.astype(np.float16), 0.0
    for k0 in range(0, a.shape[1], group):
        a_g, b_g = f64(a[:, k0 : k0 + group]), f64(b[k0 : k0 + group])
        s = f64(d) + a_g @ b_g
        terms = np.abs(f64(d)) + np.abs(a_g) @ np.abs(b_g)
        bound = bound + group * 2**-24 * terms + f64(np.spacing(np.abs(s).astype(np.float16)))
        d = s.astype(np.float16)
    return d, bound


@pytest.mark.parametrize(
    "shape, num_warps",
    [((8, 32, 64), 1), ((16, 16, 8), 4), ((4, 64, 128), 2),  # FMA: M or K below the instruction
     ((8, 64, 256), 1),  # FMA with K as a loop, rounding inside its body
     ((32, 64, 64), 4), ((64, 32, 128), 2)],  # mma.sync m16n8k16 with an f16 accumulator
    ids=str,
)  # fmt: skip
def test_fp16_accumulator_rounds_once_per_instruction_k(launch, rng, shape, num_warps):
    M, N, K = shape
    a = random_array(rng, (M, K), np.float16, -1, 1)
    b = random_array(rng, (K, N), np.float16, -1, 1)
    c = random_array(rng, (M, N), np.float16, -1, 1)
    out = poison((M, N), np.float16)
    # each group's fp32 sum may round to the other fp16 neighbour on another summation order:
    # the device and the interpreter may differ by more than the differential tolerance, so
    # both are held to the bound below
    launch.own_bound(fp16_acc_kernel, (1,), a, b, c, out, M=M, N=N, K=K, num_warps=num_warps)
    expected, bound = rounded_per_instruction(a, b, c)
    assert_close(out, expected, atol=bound)


@kl.jit
def fma_dot_kernel(a_ptr, b_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
                   PRECISION: tl.constexpr):  # fmt: skip
    rm, rn, rk = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    tl.store(out_ptr + rm[:, None] * N + rn[None, :], tl.dot(a, b, input_precision=PRECISION))


@pytest.mark.parametrize(
    "dtype, precision, shape, num_warps, unit",
    [("float32", "ieee", (128, 128, 64), 4, 2**-24), ("float64", None, (64, 128, 64), 4, 2**-53),
     ("float32", "tf32x3", (64, 64, 64), 2, 2**-20)],
    ids=str,
)  # fmt: skip
def test_large_fma_dots_loop_over_k(launch, rng, dtype, precision, shape, num_warps, unit):
    """Dots beyond the unrolling budget run their K as a loop (kernellab.backends.llvm.dot)."""
    M, N, K = shape
    a = random_array(rng, (M, K), dtype)
    b = random_array(rng, (K, N), dtype)
    out = poison((M, N), dtype)
    launch(fma_dot_kernel, (1,), a, b, out, M=M, N=N, K=K, PRECISION=precision, num_warps=num_warps)
    magnitude = np.abs(f64(a)) @ np.abs(f64(b))
    assert_close(out, f64(a) @ f64(b), atol=(K * 2**-53 + unit) * K * magnitude)


TUTORIAL_CONFIGS = [  # BLOCK_SIZE_M, N, K, GROUP_SIZE_M, num_stages, num_warps (tutorial 03's)
    (128, 256, 64, 8, 3, 8),
    (64, 256, 32, 8, 4, 4),
    (128, 64, 32, 8, 4, 4),
    (64, 32, 32, 8, 5, 2),
]


@pytest.mark.gpu
@pytest.mark.parametrize("config", TUTORIAL_CONFIGS, ids=str)
@pytest.mark.parametrize("size", [512, 1024, 2048, 4096])
def test_tutorial_03_check_against_cublas(size, config):
    """The tutorial's own check: torch.allclose(triton_output, torch_output, atol=1e-2, rtol=0),
    torch_output from cuBLAS (fp32 accumulation, one rounding to fp16)."""
    if not cuda_available():
        pytest.skip("no CUDA device visible (needs torch with CUDA)")
    import torch

    bm, bn, bk, group, stages, warps = config
    torch.manual_seed(0)
    a = torch.randn((size, size), device="cuda", dtype=torch.float16)
    b = torch.randn((size, size), device="cuda", dtype=torch.float16)
    c = torch.full((size, size), float("nan"), device="cuda", dtype=torch.float16)
    grid = (cdiv(size, bm) * cdiv(size, bn),)
    matmul_kernel[grid](a, b, c, size, size, size, a.stride(0), a.stride(1), b.stride(0),
                        b.stride(1), c.stride(0), c.stride(1), BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn,
                        BLOCK_SIZE_K=bk, GROUP_SIZE_M=group, ACTIVATION="", num_stages=stages,
                        num_warps=warps)  # fmt: skip
    expected = torch.matmul(a, b)
    diff = (c.float() - expected.float()).abs().max().item()
    assert torch.allclose(c, expected, atol=1e-2, rtol=0), f"max |diff| {diff}"
