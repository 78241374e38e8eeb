"""A wide sweep of tl.dot tiles compiled to cubins for sm_80 and sm_90 on the CPU: the tile
shapes and warp counts of Triton's own tl.dot tests (2-D and batched) and tiles below one
instruction, each with a rotating share of the dtype forms. Each must assemble, run on
mma.sync exactly when accelerate_matmul's record does not say it stays on FMA, and keep K as a
loop on the FMA path once the tile is large (which is what keeps these compiles to seconds)."""

from __future__ import annotations

import re

import pytest

import kernellab as kl
import kernellab.language as tl
from kernellab.backends.nvidia.launcher import OutOfResources
from kernellab.backends.nvidia.limits import DEVICE_LIMITS


@kl.jit
def dot_tile_kernel(a_ptr, b_ptr, c_ptr, B: tl.constexpr, M: tl.constexpr, N: tl.constexpr,
                    K: tl.constexpr, OUT: tl.constexpr, PRECISION: tl.constexpr):  # fmt: skip
    """c = a @ b for one tile; B > 0: a batch of B tiles as one 3-D dot."""
    rm, rn, rk = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    if B == 0:
        a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
        b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
        c = tl.dot(a, b, out_dtype=OUT, input_precision=PRECISION)
        tl.store(c_ptr + rm[:, None] * N + rn[None, :], c)
    else:
        rb = tl.arange(0, B)[:, None, None]
        a = tl.load(a_ptr + rb * (M * K) + rm[None, :, None] * K + rk[None, None, :])
        b = tl.load(b_ptr + rb * (K * N) + rk[None, :, None] * N + rn[None, None, :])
        c = tl.dot(a, b, out_dtype=OUT, input_precision=PRECISION)
        tl.store(c_ptr + rb * (M * N) + rm[None, :, None] * N + rn[None, None, :], c)


# input, output, out_dtype, input_precision
FORMS = [
    ("fp16", "fp32", tl.float32, None),
    ("fp16", "fp16", tl.float16, None),
    ("bf16", "fp32", tl.float32, None),
    ("fp32", "fp32", tl.float32, "tf32"),
    ("i8", "i32", tl.int32, None),
    ("fp32", "fp32", tl.float32, "ieee"),
    ("fp8e4nv", "fp32", tl.float32, None),
    ("fp32", "fp32", tl.float32, "tf32x3"),
    ("fp64", "fp64", tl.float64, None),
    ("fp8e5", "fp32", tl.float32, None),
]

# (B, M, N, K, num_warps): Triton's tl.dot test tiles, its batched ones, and small tiles
TILES = [
    (0, 128, 256, 32, 8), (0, 128, 16, 32, 4), (0, 32, 128, 64, 4), (0, 128, 128, 64, 4),
    (0, 64, 128, 128, 4), (0, 32, 128, 64, 2), (0, 64, 64, 32, 4), (0, 32, 32, 128, 16),
    (0, 128, 128, 64, 2), (0, 64, 128, 128, 2), (0, 64, 64, 64, 4), (0, 16, 16, 16, 4),
    (2, 32, 32, 32, 1), (4, 64, 64, 64, 4), (8, 16, 16, 16, 8), (2, 64, 32, 32, 2),
    (0, 2, 4, 8, 1), (0, 8, 8, 8, 2), (0, 16, 16, 8, 4), (0, 32, 4, 64, 4),
]  # fmt: skip

FORMS_PER_TILE = 3
CASES = [(tile, FORMS[(i * FORMS_PER_TILE + j) % len(FORMS)])
         for i, tile in enumerate(TILES) for j in range(FORMS_PER_TILE)]  # fmt: skip


def _label(case) -> str:
    (bsz, m, n, k, warps), (elem, out, _, precision) = case
    tile = f"{bsz}x{m}x{n}x{k}" if bsz else f"{m}x{n}x{k}"
    return f"{tile}-w{warps}-{elem}-{out}" + (f"-{precision}" if precision else "")


@pytest.mark.parametrize("case", CASES, ids=[_label(c) for c in CASES])
@pytest.mark.parametrize("target", ["sm_80", "sm_90"])
def test_dot_tile_compiles_on_the_form_its_pass_record_names(case, target):
    (bsz, m, n, k, warps), (elem, out, out_dtype, precision) = case
    operand_bytes = (bsz or 1) * (m * k + k * n) * (8 if elem == "fp64" else 4)
    if operand_bytes > DEVICE_LIMITS[target]["max_shared_per_block"]:  # refused while compiling
        with pytest.raises(OutOfResources, match=f"shared memory on {target}"):
            kl.compile(dot_tile_kernel, signature=f"*{elem},*{elem},*{out}", target=target,
                       constexprs=dict(B=bsz, M=m, N=n, K=k, OUT=out_dtype, PRECISION=precision),
                       num_warps=warps)  # fmt: skip
        return
    ck = kl.compile(dot_tile_kernel, signature=f"*{elem},*{elem},*{out}", target=target,
                    constexprs=dict(B=bsz, M=m, N=n, K=k, OUT=out_dtype, PRECISION=precision),
                    num_warps=warps)  # fmt: skip
    assert ck.asm["cubin"][:4] == b"\x7fELF"
    ptx = ck.asm["ptx"]
    (record,) = [r for r in ck.passes if r.name == "accelerate_matmul"]
    on_fma = "stays on FMA" in record.summary
    assert ("mma.sync" in ptx) != on_fma, record.summary
    if on_fma and out != "i32":  # K as a loop of at most 512 products once the tile is large
        fmas = len(re.findall(r"^\s*fma\.rn\.f(32|64)", ptx, re.MULTILINE))
        accumulators = (bsz or 1) * m * n // (32 * warps)
        terms = 3 if precision == "tf32x3" else 1
        assert 0 < fmas <= terms * max(512, accumulators * min(k, 16))
