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
    check(torch, n_ctx, head_dim, causal, overlapped, block_m=128, block_n=64, num_warps=8,
          num_stages=3 if head_dim == 64 else 2)  # fmt: skip


# configs whose rings pass by mbarriers (test_wgmma checks they do): 128x128 tiles, the
# overlapped order on 4 warps over 3 stages, the tutorial order on 8 warps over 2
FEW_TILE_CONFIGS = [(True, 4, 3), (False, 8, 2)]


@pytest.mark.parametrize("n_ctx", [128, 256, 384])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("overlapped,num_warps,num_stages", FEW_TILE_CONFIGS)
def test_attention_with_few_key_tiles(torch, n_ctx, causal, overlapped, num_warps, num_stages):
    """One to three key tiles of 128: the loop runs 0 to 3 times, so copies past its trip count
    are still landing when it ends (every thread waits for them on the rings' mbarriers before
    they are invalidated)."""
    check(torch, n_ctx, 64, causal, overlapped, block_m=128, block_n=128, num_warps=num_warps,
          num_stages=num_stages)  # fmt: skip


def check(torch, n_ctx, head_dim, causal, overlapped, **config):
    rng = np.random.default_rng()
    shape = (2, 3, n_ctx, head_dim)
    q, k, v = (rng.standard_normal(shape).astype(np.float16) for _ in range(3))
    tq, tk, tv = (torch.from_numpy(a).cuda() for a in (q, k, v))
    out = torch.full(shape, float("nan"), dtype=torch.float16, device="cuda")
    attention(tq, tk, tv, causal, head_dim**-0.5, out, overlapped=overlapped, **config)
    torch.cuda.synchronize()
    ref = attention_reference(q, k, v, causal, head_dim**-0.5)
    bound = 2.0**-10 * np.abs(v.astype(np.float64)).max() + 2.0**-11 * np.abs(ref) + 1e-5
    got = out.cpu().numpy().astype(np.float64)
    bad = ~(np.abs(got - ref) <= bound)
    assert not bad.any(), f"{int(bad.sum())} of {bad.size} off, max error {np.abs(got - ref).max():.3g}"
