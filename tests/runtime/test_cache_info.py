"""The JIT cache explained: explain_key names each part of a launch's key and what it tells the
compiler; a second launch with the same facts reuses the compiled kernel; alignment, == 1 and
dtype each make a new key; cache_info and disk_entries list what was compiled."""

from __future__ import annotations

import numpy as np
import pytest

import kernellab as kl
import kernellab.language as tl
from kernellab.runtime.cache_info import disk_entries


def scale_kernel():
    @kl.jit
    def scale(x_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(out_ptr + offs, alpha * tl.load(x_ptr + offs, mask=mask), mask=mask)

    return scale


def grid(meta):
    return (kl.cdiv(meta["n"], meta["BLOCK"]),)


def arrays(n=4096, dtype=np.float32):
    x = np.random.default_rng().standard_normal(n + 16).astype(dtype)
    return x, np.full_like(x, np.nan)


def test_the_key_in_words_and_a_second_launch_hits():
    scale = scale_kernel()
    x, out = arrays()
    first = scale.explain_key(x, out, 4096, 2.0, BLOCK=1024)
    assert not first.cached
    facts = {p.name: (p.type, p.fact) for p in first.parts}
    assert facts == {"x_ptr": ("*fp32", "16-byte aligned"), "out_ptr": ("*fp32", "16-byte aligned"),
                     "n": ("i32", "divisible by 16"), "alpha": ("fp32", "any value"), "BLOCK": ("constexpr", "= 1024")}  # fmt: skip
    ck = scale[grid](x, out, 4096, 2.0, BLOCK=1024)
    np.testing.assert_allclose(out[:4096], 2.0 * x[:4096].astype(np.float64), rtol=1e-6)
    assert scale.explain_key(x, out, 4096, 2.0, BLOCK=1024).cached
    assert scale[grid](x, out, 4096, 3.0, BLOCK=1024) is ck  # another alpha: the same kernel
    assert len(scale.cache_info()) == 1
    assert "16-byte aligned" in str(scale.cache_info()) and "target interpreter" in str(scale.cache_info())


def test_alignment_one_and_dtype_each_make_a_new_key():
    scale = scale_kernel()
    x, out = arrays()
    base = scale.explain_key(x, out, 4096, 2.0, BLOCK=1024)
    shifted = scale.explain_key(x[1:], out[1:], 4096, 2.0, BLOCK=1024)
    assert [d.split(":")[0] for d in base.differences(shifted)] == ["x_ptr", "out_ptr"]
    assert "not 16-byte aligned" in base.differences(shifted)[0]
    one = scale.explain_key(x, out, 1, 2.0, BLOCK=1024)
    assert base.differences(one) == ["n: i32 divisible by 16 -> constant == 1 (compiled in as a constant (x * n folds to x))"]
    x16, out16 = arrays(dtype=np.float16)
    half = scale.explain_key(x16, out16, 4096, 2.0, BLOCK=1024)
    assert [d.split(":")[0] for d in base.differences(half)] == ["x_ptr", "out_ptr"] and "*fp16" in base.differences(half)[0]
    warps = scale.explain_key(x, out, 4096, 2.0, BLOCK=1024, num_warps=8)
    assert base.differences(warps) == ["option num_warps: None -> 8"]
    for args in ((x, out, 4096), (x[1:], out[1:], 4096), (x, out, 1), (x16, out16, 4096)):
        scale[grid](*args, 2.0, BLOCK=1024)
    assert len(scale.cache_info()) == 4


def nvidia_available() -> bool:
    from kernellab.runtime.autotuner import _nvidia_available

    return _nvidia_available()


@pytest.mark.skipif(not nvidia_available(), reason="needs the NVIDIA backend (compiles without a GPU)")
def test_a_key_compiles_for_the_gpu_and_lands_in_the_disk_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELLAB_CACHE_DIR", str(tmp_path))
    scale = scale_kernel()
    x, out = arrays()
    aligned = scale.explain_key(x, out, 4096, 2.0, BLOCK=1024).compile("sm_90")
    shifted = scale.explain_key(x[1:], out[1:], 4096, 2.0, BLOCK=1024).compile("sm_90")
    assert "sizePerThread = [4]" in aligned.asm["ttgir"] and "ld.global.v4.b32" in aligned.asm["ptx"]
    assert "sizePerThread = [1]" in shifted.asm["ttgir"] and "ld.global.v4" not in shifted.asm["ptx"]
    entries = disk_entries()
    assert len(entries) == 2 and {e.name for e in entries} == {"scale"} and {e.target for e in entries} == {"sm_90"}
    assert all("ttgir.ttgir" in e.files and "cubin.cubin" in e.files for e in entries)
    again = scale.explain_key(x, out, 4096, 2.0, BLOCK=1024).compile("sm_90")
    assert again.metadata.cache_hit and again.asm["ttgir"] == aligned.asm["ttgir"]

    pytest.importorskip("pygments")
    diff = kl.lab.diff(aligned, shifted)
    changed = diff.changed_lines
    assert any("sizePerThread = [4]" in a and "sizePerThread = [1]" in b for a, b in changed)
    page = diff._repr_html_()
    assert "kl-diff" in page and "divisible by 16: x_ptr, out_ptr, n" in page and "divisible by 16: n" in page
    assert str(diff).startswith("--- scale(")


def test_diff_needs_the_stage_on_both():
    scale = scale_kernel()
    x, out = arrays()
    ck = scale.warmup(x, out, 4096, 2.0, BLOCK=1024)
    with pytest.raises(ValueError, match="has no ttgir text.*target='sm_90'"):
        kl.lab.diff(ck, ck, "ttgir")
