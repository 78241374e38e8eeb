"""The fused-attention forward examples (Triton's tutorial 06 order and the overlapped one)
against float64 on the interpreter, and their PTX for sm_80 and sm_90a (the two dots on mma.sync
and wgmma)."""

from __future__ import annotations

import numpy as np
import pytest

import kernellab as kl
from kernellab.examples import (
    attention,
    attention_fwd_kernel,
    attention_fwd_overlapped_kernel,
    attention_reference,
)


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("overlapped", [False, True])
def test_attention_matches_float64_on_the_interpreter(causal, overlapped):
    rng = np.random.default_rng()
    z, h, n, d = 1, 2, 128, 32
    q, k, v = (rng.standard_normal((z, h, n, d)).astype(np.float16) for _ in range(3))
    out = np.full((z, h, n, d), np.nan, np.float16)
    attention(q, k, v, causal, d**-0.5, out, block_m=64, block_n=32, num_warps=4, overlapped=overlapped)
    ref = attention_reference(q, k, v, causal, d**-0.5)
    # P is rounded to fp16 before P·V (2^-11 of each weight), the output to fp16
    bound = 2.0**-10 * np.abs(v.astype(np.float64)).max() + 2.0**-11 * np.abs(ref) + 1e-6
    assert np.all(np.abs(out.astype(np.float64) - ref) <= bound)


@pytest.mark.parametrize("head_dim, n_ctx, causal, overlapped", [
    (64, 128, False, True), (64, 1024, True, True),  # head dim 64: always
    (128, 16384, False, False), (128, 2048, True, False),  # 128: only causal from 4096 keys up
    (128, 4096, True, True), (128, 16384, True, True),
])  # fmt: skip
def test_attention_launches_the_order_measured_faster(monkeypatch, head_dim, n_ctx, causal, overlapped):
    """`attention` without `overlapped` launches the order `attention_overlaps` picks for the
    head dim, the length and the mask (measured on an H200)."""
    import kernellab.examples as examples

    launched = []

    class Recorder:
        def __init__(self, name):
            self.name = name

        def __getitem__(self, grid):
            return lambda *args, **kwargs: launched.append((self.name, grid, kwargs["CAUSAL"]))

    monkeypatch.setattr(examples, "attention_fwd_kernel", Recorder("tutorial"))
    monkeypatch.setattr(examples, "attention_fwd_overlapped_kernel", Recorder("overlapped"))
    q = np.empty((1, 2, n_ctx, head_dim), np.float16)
    attention(q, q, q, causal, head_dim**-0.5, q)
    assert examples.attention_overlaps(head_dim, n_ctx, causal) is overlapped
    assert launched == [("overlapped" if overlapped else "tutorial", (n_ctx // 128, 2), causal)]


SIGNATURE = "*fp16,*fp16,*fp16,*fp16,fp32," + ",".join(["i32"] * 12) + ",i32,i32"
ALIGNED = {name: {"tt.divisibility": 16} for name in (
    "Q", "K", "V", "Out", "stride_qz", "stride_qh", "stride_qm", "stride_kz", "stride_kh",
    "stride_kn", "stride_vz", "stride_vh", "stride_vn", "stride_oz", "stride_oh", "stride_om",
    "N_CTX")}  # fmt: skip


@pytest.mark.parametrize("target, instruction", [("sm_80", "mma.sync.aligned.m16n8k16"),
                                                 ("sm_90a", "wgmma.mma_async")])  # fmt: skip
@pytest.mark.parametrize("kernel", [attention_fwd_kernel, attention_fwd_overlapped_kernel])
def test_attention_compiles_to_tensor_cores(target, instruction, kernel):
    constexprs = dict(HEAD_DIM=64, BLOCK_M=128, BLOCK_N=64, CAUSAL=True, stride_qk=1,
                      stride_kk=1, stride_vk=1, stride_ok=1)  # fmt: skip
    ck = kl.compile(kernel, signature=SIGNATURE, constexprs=constexprs,
                    attrs=ALIGNED, target=target, num_warps=8, num_stages=3)  # fmt: skip
    assert instruction in ck.asm["ptx"] and "cp.async" in ck.asm["ptx"]
