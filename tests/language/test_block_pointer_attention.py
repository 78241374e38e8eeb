"""Fused attention written with block pointers, the way most existing Triton code (the fused
attention tutorial of Triton 2.x/3.0) has it: tl.make_block_ptr for Q, K (a transposed view,
order (0, 1)), V and the output, tl.advance along the keys, the online softmax in exp2."""

import numpy as np
import pytest
from conftest import assert_close, f64, poison

import kernellab as kl
import kernellab.language as tl


@kl.jit
def attention_kernel(
    Q, K, V, sm_scale, Out,
    stride_qz, stride_qh, stride_qm, stride_qk,
    stride_kz, stride_kh, stride_kn, stride_kk,
    stride_vz, stride_vh, stride_vn, stride_vk,
    stride_oz, stride_oh, stride_om, stride_ok,
    H, N_CTX,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, HEAD_DIM: tl.constexpr, CAUSAL: tl.constexpr,
):  # fmt: skip
    start_m = tl.program_id(0)
    off_hz = tl.program_id(1)
    q_offset = (off_hz // H) * stride_qz + (off_hz % H) * stride_qh
    k_offset = (off_hz // H) * stride_kz + (off_hz % H) * stride_kh
    v_offset = (off_hz // H) * stride_vz + (off_hz % H) * stride_vh
    o_offset = (off_hz // H) * stride_oz + (off_hz % H) * stride_oh
    q_block = tl.make_block_ptr(
        base=Q + q_offset, shape=(N_CTX, HEAD_DIM), strides=(stride_qm, stride_qk),
        offsets=(start_m * BLOCK_M, 0), block_shape=(BLOCK_M, HEAD_DIM), order=(1, 0),
    )  # fmt: skip
    kt_block = tl.make_block_ptr(  # K seen transposed: HEAD_DIM x N_CTX
        base=K + k_offset, shape=(HEAD_DIM, N_CTX), strides=(stride_kk, stride_kn),
        offsets=(0, 0), block_shape=(HEAD_DIM, BLOCK_N), order=(0, 1),
    )  # fmt: skip
    v_block = tl.make_block_ptr(
        base=V + v_offset, shape=(N_CTX, HEAD_DIM), strides=(stride_vn, stride_vk),
        offsets=(0, 0), block_shape=(BLOCK_N, HEAD_DIM), order=(1, 0),
    )  # fmt: skip
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32) + 1.0
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    qk_scale = sm_scale * 1.44269504  # log2(e): exp2 below
    q = tl.load(q_block)
    hi = (start_m + 1) * BLOCK_M if CAUSAL else N_CTX
    for start_n in range(0, hi, BLOCK_N):
        k = tl.load(kt_block)
        qk = tl.dot(q, k) * qk_scale
        if CAUSAL:
            qk = tl.where(offs_m[:, None] >= start_n + offs_n[None, :], qk, float("-inf"))
        m_ij = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.math.exp2(qk - m_ij[:, None])
        alpha = tl.math.exp2(m_i - m_ij)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None]
        acc += tl.dot(p.to(tl.float16), tl.load(v_block))
        m_i = m_ij
        kt_block = tl.advance(kt_block, (0, BLOCK_N))
        v_block = tl.advance(v_block, (BLOCK_N, 0))
    acc = acc / l_i[:, None]
    o_block = tl.make_block_ptr(
        base=Out + o_offset, shape=(N_CTX, HEAD_DIM), strides=(stride_om, stride_ok),
        offsets=(start_m * BLOCK_M, 0), block_shape=(BLOCK_M, HEAD_DIM), order=(1, 0),
    )  # fmt: skip
    tl.store(o_block, acc.to(Out.dtype.element_ty))


def _strides(a):
    return [s // a.itemsize for s in a.strides]


@pytest.mark.parametrize("causal", [False, True])
def test_block_pointer_attention(launch, rng, causal):
    z, h, n_ctx, d = 1, 2, 128, 64
    q, k, v = (rng.uniform(-1, 1, (z, h, n_ctx, d)).astype(np.float16) for _ in range(3))
    out = poison((z, h, n_ctx, d), np.float32)
    scale = 0.5
    # the output is checked against float64 below (p is rounded to fp16 for the second dot)
    launch.own_bound(
        attention_kernel, (n_ctx // 64, z * h), q, k, v, scale, out,
        *_strides(q), *_strides(k), *_strides(v), *_strides(out), h, n_ctx,
        BLOCK_M=64, BLOCK_N=32, HEAD_DIM=d, CAUSAL=causal,
    )  # fmt: skip
    scores = np.einsum("zhmd,zhnd->zhmn", f64(q), f64(k)) * scale
    if causal:
        scores = np.where(np.tril(np.ones((n_ctx, n_ctx), bool)), scores, -np.inf)
    weights = np.exp(scores - scores.max(-1, keepdims=True))
    weights /= weights.sum(-1, keepdims=True)
    expected = np.einsum("zhmn,zhnd->zhmd", weights, f64(v))
    # fp16 rounding of p (2^-11 relative) over sums of |v| ≤ 1, plus fp32 accumulation
    assert_close(out, expected, atol=2.0**-10)
