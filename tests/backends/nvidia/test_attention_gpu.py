"""The fused-attention forward examples on the GPU (`-m gpu`) against float64: the tutorial's
order and the overlapped one (P·V in flight during the next tile's softmax), head dims 64 and
128, causal or not, several sequence lengths."""

from __future__ import annotations

import numpy as np
import pytest

from kernellab.examples import attention, attention_reference

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def torch(cuda_torch):
    return cuda_torch


@pytest.mark.parametrize("n_ctx", [128, 1024])
@pytest.mark.parametrize("head_dim", [64, 128])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("overlapped", [False, True])
def test_attention_matches_float64(torch, n_ctx, head_dim, causal, overlapped):
    check(torch, n_ctx, head_dim, causal, overlapped, block_m=128, num_warps=8,
          num_stages=3 if head_dim == 64 else 2)  # fmt: skip


@pytest.mark.parametrize("n_ctx", [64, 192])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("overlapped", [False, True])
def test_attention_with_fewer_key_tiles_than_stages(torch, n_ctx, causal, overlapped):
    """One or three key tiles through 3 stages on one warp group: the loop runs 0 to 2 times,
    so copies past its trip count are still landing when it ends (the rings' mbarriers are
    waited for before they are invalidated)."""
    check(torch, n_ctx, 64, causal, overlapped, block_m=64, num_warps=4, num_stages=3)


def check(torch, n_ctx, head_dim, causal, overlapped, **config):
    rng = np.random.default_rng()
    shape = (2, 3, n_ctx, head_dim)
    q, k, v = (rng.standard_normal(shape).astype(np.float16) for _ in range(3))
    tq, tk, tv = (torch.from_numpy(a).cuda() for a in (q, k, v))
    out = torch.full(shape, float("nan"), dtype=torch.float16, device="cuda")
    attention(tq, tk, tv, causal, head_dim**-0.5, out, block_n=64, overlapped=overlapped, **config)
    torch.cuda.synchronize()
    ref = attention_reference(q, k, v, causal, head_dim**-0.5)
    bound = 2.0**-10 * np.abs(v.astype(np.float64)).max() + 2.0**-11 * np.abs(ref) + 1e-5
    got = out.cpu().numpy().astype(np.float64)
    bad = ~(np.abs(got - ref) <= bound)
    assert not bad.any(), f"{int(bad.sum())} of {bad.size} off, max error {np.abs(got - ref).max():.3g}"
