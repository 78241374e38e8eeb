"""Triton programs on kernellab (issue 13, beyond Triton): `kl.as_triton()` runs an unmodified
Triton program; `from_triton` reads kernels decorated by Triton itself (a stand-in Triton here,
the real one where it is installed), for launching and for `kl.lab.show` / `%%kernel`."""

import os
import runpy
import sys

import numpy as np
import pytest

import kernellab as kl
import kernellab.language as kl_language
from kernellab.runtime.autotuner import Autotuner, Heuristics
from kernellab.runtime.jit import JITFunction
from kernellab.triton_compat import from_triton, is_triton_kernel

HERE = os.path.dirname(__file__)
PROGRAM = os.path.join(HERE, "triton_programs", "fused_rmsnorm.py")


def _triton_modules() -> dict:
    return {k: v for k, v in sys.modules.items() if k == "triton" or k.startswith("triton.")}


@pytest.fixture
def clean_triton_names():
    """Whatever a test does to `triton` in sys.modules is undone after it."""
    before = _triton_modules()
    yield
    for name in _triton_modules():
        del sys.modules[name]
    sys.modules.update(before)


def test_as_triton_gives_kernellab_under_tritons_import_names(clean_triton_names):
    with kl.as_triton():
        import triton
        import triton.language as tl
        from triton.runtime import driver
        from triton.testing import do_bench

        assert triton is kl and tl is kl_language and driver is kl.runtime.driver
        assert do_bench is kl.testing.do_bench and triton.jit is kl.jit
        import triton.profiler as proton

        assert proton is kl.profiler  # Triton's profiler calls: kernellab.profiler
        with pytest.raises(ImportError, match="triton.knobs has no kernellab counterpart"):
            import triton.knobs  # noqa: F401
    assert _triton_modules() == {}


def test_as_triton_runs_an_unmodified_triton_program(clean_triton_names):
    with kl.as_triton():
        program = runpy.run_path(PROGRAM, run_name="not_main")
        assert program["check"]()
    assert isinstance(program["rotary_kernel"], JITFunction)


def test_as_triton_is_undone_and_an_earlier_triton_comes_back(clean_triton_names):
    earlier = type(sys)("triton")
    sys.modules["triton"] = earlier
    names = kl.as_triton()
    import triton

    assert triton is kl
    names.restore()
    import triton

    assert triton is earlier
    names.restore()  # twice is harmless


@pytest.fixture
def stand_in_triton(clean_triton_names, monkeypatch):
    for name in _triton_modules():
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.syspath_prepend(os.path.join(HERE, "fake_triton"))
    import triton

    assert triton.__file__.startswith(os.path.join(HERE, "fake_triton"))
    return runpy.run_path(PROGRAM, run_name="not_main")


def test_kernels_decorated_by_triton_run_on_kernellab(stand_in_triton):
    program = stand_in_triton
    tuned = program["rmsnorm_kernel"]
    assert is_triton_kernel(tuned) and not is_triton_kernel(kl.jit(program["check"]))
    twin = from_triton(tuned)
    assert from_triton(tuned) is twin  # converted once
    assert isinstance(twin, Autotuner) and isinstance(twin.fn, Heuristics) and isinstance(twin.fn.fn, JITFunction)
    assert [c.num_warps for c in twin.configs] == [1, 4] and twin.key == ["N"]
    with pytest.raises(RuntimeError, match="no compiler"):  # the stand-in really is the one decorating
        tuned[(1,)]()
    assert program["check"](twin, from_triton(program["rotary_kernel"]))


def test_a_triton_kernel_opens_in_the_lab(stand_in_triton):
    view = kl.lab.view(stand_in_triton["rotary_kernel"], signature="*fp32,*fp32,*fp32,i32",
                       constexprs={"HALF": 32}, target="sm_80")  # fmt: skip
    stages = {s["name"]: s["text"] for s in view.data["stages"]}
    assert "tt.load" in stages["ttir"] and ".entry rotary_kernel" in stages["ptx"]
    assert "def rotary_kernel" in view.data["source"]["text"]


def test_percent_kernel_accepts_a_triton_decorated_cell(stand_in_triton):
    pytest.importorskip("IPython")
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.utils.capture import capture_output

    ip = InteractiveShell.instance()
    ip.run_cell("%load_ext kernellab", store_history=False)
    cell = '''%%kernel --signature "*fp32,*fp32,i32" --constexprs BLOCK=128
import triton
import triton.language as tl

@triton.jit
def triton_scale(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 3, mask=offs < n)
'''
    with capture_output() as captured:
        result = ip.run_cell(cell, store_history=False)
    assert result.error_in_exec is None, result.error_in_exec
    (bundle,) = [o.data for o in captured.outputs if "application/vnd.kernellab.compile+json" in o.data]
    assert bundle["application/vnd.kernellab.compile+json"]["name"] == "triton_scale"
    kernel = from_triton(ip.user_ns["triton_scale"])
    x = np.random.default_rng().random(300, dtype=np.float32)
    y = np.full_like(x, np.nan)
    kernel[(3,)](x, y, 300, BLOCK=128)
    np.testing.assert_array_equal(y, x * np.float32(3))


def test_the_real_triton_kernel_runs_on_kernellab(clean_triton_names):
    """Where Triton is installed (the GPU machine): the same program, decorated by Triton itself."""
    triton = pytest.importorskip("triton")
    if triton is kl or "fake_triton" in (getattr(triton, "__file__", "") or ""):
        pytest.skip("the real Triton is not installed")
    program = runpy.run_path(PROGRAM, run_name="not_main")
    assert type(program["rmsnorm_kernel"]).__module__.startswith("triton.")
    assert program["check"](from_triton(program["rmsnorm_kernel"]), from_triton(program["rotary_kernel"]))
    view = kl.lab.view(program["rotary_kernel"], signature="*fp32,*fp32,*fp32,i32", constexprs={"HALF": 32})
    assert "tt.load" in {s["name"]: s["text"] for s in view.data["stages"]}["ttir"]
