"""The NVIDIA backend gets nvJitLink ready in the background when a compile starts (not on a
cache hit), and compiles come out the same with it."""

import pytest

import kernellab as kl
import kernellab.language as tl
from kernellab.backends.nvidia import backend, cubin


@kl.jit
def scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 3.0, mask=mask)


def _compile(**kw):
    return kl.compile(scale_kernel, signature="*fp32,*fp32,i32", constexprs={"BLOCK": 256},
                      target="sm_90", **kw)  # fmt: skip


def test_prepare_runs_before_a_compile_but_not_on_a_cache_hit(monkeypatch, tmp_path):
    if cubin.nvjitlink_version() is None:
        pytest.skip("nvJitLink is not installed")
    monkeypatch.setenv("KERNELLAB_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("KERNELLAB_ALWAYS_COMPILE", raising=False)
    calls = []
    monkeypatch.setattr(backend, "prepare_toolchain", lambda options: calls.append(options.target))
    first = _compile()
    assert calls == ["sm_90"] and not first.metadata["cache_hit"]
    second = _compile()
    assert calls == ["sm_90"] and second.metadata["cache_hit"]  # a hit loads nothing
    _compile(force=True)
    assert calls == ["sm_90", "sm_90"]


def test_the_warm_up_thread_starts_once_and_links_still_work(monkeypatch, tmp_path):
    if cubin.nvjitlink_version() is None:
        pytest.skip("nvJitLink is not installed")
    monkeypatch.setenv("KERNELLAB_CACHE_DIR", str(tmp_path))
    backend.prepare_toolchain(backend.NvidiaOptions(target="sm_90"))
    thread = cubin._warming
    backend.prepare_toolchain(backend.NvidiaOptions(target="sm_80"))
    assert cubin._warming is thread  # once per process
    if thread is not None:
        thread.join(timeout=60)
        assert not thread.is_alive()
    ck = _compile(force=True)
    assert ck.asm["cubin"][:4] == b"\x7fELF" and ck.metadata["registers"] > 0
