"""The pictures of issue 12 item 13: where a softmax row lives (from the compiled kernel's layout
and shared-memory plan) and a matmul tile walking along K (bytes per step)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("ipywidgets")
pytest.importorskip("matplotlib")

import kernellab as kl  # noqa: E402
import kernellab.language as tl  # noqa: E402
from kernellab.lab.widgets.tile_walk import tile_walk_data  # noqa: E402


@kl.jit
def softmax_kernel(out_ptr, in_ptr, in_stride, out_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    x = tl.load(in_ptr + row * in_stride + offs, mask=offs < n_cols, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    tl.store(out_ptr + row * out_stride + offs, num / tl.sum(num, axis=0), mask=offs < n_cols)


SIGNATURE = "*fp32,*fp32,i32,i32,i32"


def nvidia_available() -> bool:
    from kernellab.runtime.autotuner import _nvidia_available

    return _nvidia_available()


needs_nvidia = pytest.mark.skipif(not nvidia_available(), reason="needs the NVIDIA backend (no GPU needed)")


@needs_nvidia
@pytest.mark.parametrize("num_warps", [1, 2, 4, 8])
def test_the_row_picture_reads_the_compiled_layout(num_warps):
    from kernellab.lab.widgets.sram_row import row_residency

    ck = kl.compile(softmax_kernel, signature=SIGNATURE, constexprs={"BLOCK": 1024}, target="sm_90",
                    num_warps=num_warps)  # fmt: skip
    pic = row_residency(ck, n=781)
    assert pic.block == 1024 and pic.n == 781 and pic.warps == num_warps and pic.lanes == 32
    assert pic.elements_per_thread == 1024 // (32 * num_warps)
    # every element has exactly one owner, and each thread holds elements_per_thread of them
    owner = pic.warp * 32 + pic.lane
    assert (pic.warp >= 0).all() and np.bincount(owner).tolist() == [pic.elements_per_thread] * (32 * num_warps)
    assert f"warpsPerCTA = [{num_warps}]" in pic.layout
    assert [r.combine for r in pic.reductions] == ["arith.maxnumf", "arith.addf"]
    for r in pic.reductions:  # one fp32 partial per warp (rounded up to 16 bytes); none for one warp
        assert r.shared_bytes == (0 if num_warps == 1 else max(16, 4 * num_warps))
    assert pic.shared == ck.metadata.shared and pic.registers == ck.metadata.registers


@needs_nvidia
def test_the_row_explorer_recompiles_for_another_warp_count():
    explorer = kl.lab.sram_row(softmax_kernel, SIGNATURE, {"BLOCK": 1024}, n=781)
    assert "each of the 128 threads holds 8 elements" in explorer.caption(explorer.data)
    explorer.controls["num_warps"].value = 8
    text = explorer.caption(explorer.data)
    assert "each of the 256 threads holds 4 elements" in text and "32 bytes of shared memory" in text
    bundle = explorer._repr_mimebundle_()
    assert "data:image/png;base64," in bundle["text/html"]  # the static snapshot a saved notebook keeps


def test_a_kernel_without_ttgir_or_row_is_refused_with_a_reason():
    from kernellab.lab.widgets.sram_row import row_residency

    ck = kl.compile(softmax_kernel, signature=SIGNATURE, constexprs={"BLOCK": 1024})
    with pytest.raises(ValueError, match="compile it for sm_90"):
        row_residency(ck)


def test_the_tile_walk_counts_bytes_per_step():
    walk = tile_walk_data(512, 512, 512, 64, 64, 32, step=3)
    assert walk.steps == 16 and walk.k_range == (64, 96)
    assert walk.bytes_per_step == (64 * 32 + 32 * 64) * 2 == 8192
    assert walk.bytes_so_far == 3 * 8192 and walk.c_bytes == 64 * 64 * 4
    assert walk.intensity == pytest.approx(2 * 64 * 64 / (128 * 2))
    bigger = tile_walk_data(512, 512, 512, 128, 128, 32)
    assert bigger.intensity == 2 * walk.intensity  # twice the tile side, twice the flops per byte
    assert tile_walk_data(100, 100, 100, 16, 16, 32, step=99).step == 4  # clamped to the last step
    with pytest.raises(ValueError, match="must fit"):
        tile_walk_data(32, 32, 32, 64, 64, 32)


def test_the_tile_walk_explorer_follows_block_k():
    explorer = kl.lab.tile_walk(step=3)
    assert explorer.controls["step"].max == 16
    assert "8 KiB per step; 24 KiB so far of 128 KiB" in explorer.caption(explorer.data)
    explorer.controls["BLOCK_K"].value = 128
    assert explorer.controls["step"].max == 4 and explorer.data.step == 3
    assert "data:image/png;base64," in explorer._repr_mimebundle_()["text/html"]
