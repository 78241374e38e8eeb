"""Autotuning made visible: the tuning table (rows filled config by config), parallel compiles
on any concurrent.futures.Executor, serial timing on the bench executor, progress in scripts,
and the results afterwards (best_config, configs_timings, tuning, plot)."""

from __future__ import annotations

import io
from concurrent.futures import Executor, ThreadPoolExecutor

import numpy as np
import pytest

import kernellab as kl
import kernellab.language as tl
from kernellab.runtime.autotuner import ConfigTiming
from kernellab.testing.tuning import TextProgress, table_html, table_text

CONFIGS = [kl.Config({"BLOCK": 64}, num_warps=2), kl.Config({"BLOCK": 128}, num_warps=4),
           kl.Config({"BLOCK": 256}, num_warps=4)]  # fmt: skip


def nvidia_available() -> bool:
    from kernellab.runtime.autotuner import _nvidia_available

    return _nvidia_available()


def scale_kernel():
    @kl.jit
    def scale(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(out_ptr + offs, 3 * tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)

    return scale


def launch(kernel, n=1000):
    x = np.random.default_rng().standard_normal(n).astype(np.float32)
    out = np.full_like(x, np.nan)
    kernel[lambda meta: (kl.cdiv(n, meta["BLOCK"]),)](x, out, n)
    np.testing.assert_allclose(out, 3 * x.astype(np.float64), rtol=1e-6)


class CountingExecutor(Executor):
    """Runs each call in this thread and counts them (stands in for dask's or Ray's)."""

    def __init__(self):
        self.calls = []
        self.inner = ThreadPoolExecutor(max_workers=1)

    def submit(self, fn, *args, **kwargs):
        self.calls.append(getattr(fn, "__name__", str(fn)))
        return self.inner.submit(fn, *args, **kwargs)


class Recorder:
    """A reporter keeping every snapshot of the rows it was shown."""

    def __init__(self):
        self.snapshots = []

    def update(self, rows, done=False):
        self.snapshots.append(([(r.status, r.kernel_ms) for r in rows], done))


def test_rows_are_reported_as_they_fill_and_kept_afterwards():
    recorder = Recorder()
    kernel = kl.autotune(CONFIGS, key=["n"], progress=recorder, compile_executor=False)(scale_kernel())
    launch(kernel)
    statuses = [status for rows, _ in recorder.snapshots for status, _ in rows]
    assert "timing" in statuses and recorder.snapshots[-1][1] is True
    final = recorder.snapshots[-1][0]
    assert all(status == "timed" and ms > 0 for status, ms in final)
    assert kernel.best_config in CONFIGS
    assert set(kernel.configs_timings) == set(CONFIGS)
    rows = kernel.tuning.rows
    assert [r.config for r in rows] == CONFIGS and all(r.compile_seconds > 0 for r in rows)
    best = min(rows, key=lambda r: r.kernel_ms)
    assert best.config is kernel.best_config
    if nvidia_available():  # the resources of each config's sm_90 compile, made without a GPU
        assert all(r.registers > 0 and r.spills == 0 and r.target == "sm_90" for r in rows)
        assert all(0 < r.occupancy["occupancy"] <= 1 for r in rows)
        assert kernel.tuning.resources_from == "sm_90"
    assert kernel.tuning.where == "interpreter"


@pytest.mark.skipif(not nvidia_available(), reason="needs the NVIDIA backend (compiles without a GPU)")
def test_configs_compile_on_the_executor_given():
    compile_pool, bench_pool = CountingExecutor(), CountingExecutor()
    kernel = kl.autotune(CONFIGS, key=["n"], progress=Recorder(), compile_executor=compile_pool,
                         bench_executor=bench_pool)(scale_kernel())  # fmt: skip
    launch(kernel)
    assert compile_pool.calls == ["compile_job"] * 3
    # one timing job per config, one at a time, and the first again: its worker asked for the
    # launch's arguments, which travel once per worker
    assert bench_pool.calls == ["bench_job"] * 4
    assert all(r.status == "timed" and r.device.startswith("host worker") for r in kernel.tuning.rows)
    assert all(r.registers for r in kernel.tuning.rows)


@pytest.mark.skipif(not nvidia_available(), reason="needs the NVIDIA backend (compiles without a GPU)")
def test_the_default_pool_compiles_in_other_processes(tmp_path, monkeypatch):
    """Forked workers see a kernel defined inside this test (as one in a notebook), and put
    their compiles in the disk cache: the same configs compiled here are cache hits."""
    monkeypatch.setenv("KERNELLAB_CACHE_DIR", str(tmp_path))
    kernel = kl.autotune(CONFIGS, key=["n"], progress=Recorder())(scale_kernel())
    launch(kernel)
    assert all(r.status == "timed" and r.registers for r in kernel.tuning.rows)
    sig = "*fp32,*fp32,i32"
    for config in CONFIGS:
        ck = kl.compile(kernel.base, signature=sig, constexprs=config.kwargs, target="sm_90",
                        num_warps=config.num_warps, attrs={"x_ptr": {"tt.divisibility": 16},
                                                           "out_ptr": {"tt.divisibility": 16}})  # fmt: skip
        assert ck.metadata.cache_hit, f"{config} was not compiled by a worker"


def test_a_config_that_fails_is_marked_and_the_others_still_win():
    configs = [kl.Config({"BLOCK": 100}), kl.Config({"BLOCK": 128})]  # arange needs a power of two
    kernel = kl.autotune(configs, key=["n"], progress=False)(scale_kernel())
    launch(kernel)
    failed, timed = kernel.tuning.rows
    assert failed.status.startswith("failed: CompilationError") and failed.kernel_ms is None
    assert timed.status == "timed" and kernel.best_config is configs[1]
    assert kernel.configs_timings[configs[0]] == float("inf")


def test_every_config_failing_raises_the_first_error():
    kernel = kl.autotune([kl.Config({"BLOCK": 100}), kl.Config({"BLOCK": 12})], key=["n"],
                         progress=False)(scale_kernel())  # fmt: skip
    with pytest.raises(Exception, match="power of 2|power of two"):
        launch(kernel)


def test_scripts_get_progress_lines_and_the_table():
    stream = io.StringIO()
    kernel = kl.autotune(CONFIGS, key=["n"], compile_executor=False,
                         progress=TextProgress("scale", "interpreter", None, stream))(scale_kernel())  # fmt: skip
    launch(kernel)
    text = stream.getvalue()
    assert "autotune scale [1/3] BLOCK: 64, num_warps: 2" in text and ": timed, " in text
    assert "interpreter time" in text and "interpreter times: they rank nothing a GPU would" in text
    best_line = next(line for line in text.splitlines() if line.startswith("* "))
    assert f"BLOCK: {kernel.best_config.kwargs['BLOCK']}," in best_line


def rows_for_display():
    rows = [ConfigTiming(c) for c in CONFIGS]
    for row, ms, regs in zip(rows, (0.5, 0.2, 0.9), (30, 40, 255)):
        row.status, row.kernel_ms, row.compile_seconds = "timed", ms, 1.25
        row.registers, row.spills, row.shared = regs, 0, 2048
        row.occupancy = {"occupancy": 0.5, "limited_by": "registers"}
    return rows


def test_the_html_table_highlights_the_best_and_shows_progress():
    rows = rows_for_display()
    done = table_html("scale", rows, "GPU (cuda:0)", None, done=True)
    best_row = done.split("<tr style='background:#dafbe1;font-weight:600'>")[1].split("</tr>")[0]
    assert "BLOCK: 128" in best_row and "0.200 ms" in best_row and "50% (registers)" in best_row
    assert "best: BLOCK: 128" in done and "times on the GPU (cuda:0)" in done
    rows[2].kernel_ms, rows[2].status = None, "timing"
    running = table_html("scale", rows, "GPU (cuda:0)", None)
    assert "<progress value='2' max='3'" in running and "#dafbe1" not in running
    assert "1.25 s" in table_text("scale", rows, "GPU (cuda:0)") and "2048 B" in running


def test_the_plot_labels_interpreter_times():
    pytest.importorskip("matplotlib")
    kernel = kl.autotune(CONFIGS, key=["n"], progress=False)(scale_kernel())
    with pytest.raises(ValueError, match="launch it once"):
        kernel.plot()
    launch(kernel)
    fig = kernel.plot()
    (ax,) = fig.axes
    assert "interpreter time" in ax.get_xlabel()
    assert [t.get_text() for t in ax.get_yticklabels()] == [str(c) for c in CONFIGS]


@pytest.mark.gpu
def test_on_the_gpu_workers_compile_for_the_device_and_the_launch_finds_their_cubins(tmp_path, monkeypatch):
    """Forked workers compile each config for the GPU's arch while this process holds a CUDA
    context; the launches that time the configs then load those cubins from the disk cache."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device visible")
    monkeypatch.setenv("KERNELLAB_CACHE_DIR", str(tmp_path))
    kernel = kl.autotune(CONFIGS, key=["n"], progress=Recorder())(scale_kernel())
    n = 1 << 16
    x = torch.randn(n, device="cuda")
    out = torch.full_like(x, float("nan"))
    kernel[lambda meta: (kl.cdiv(n, meta["BLOCK"]),)](x, out, n)
    torch.testing.assert_close(out, 3 * x)
    rows = kernel.tuning.rows
    assert kernel.tuning.where.startswith("GPU (cuda:") and kernel.tuning.resources_from is None
    assert all(r.status == "timed" and r.registers and r.target.startswith("sm_") for r in rows)
    compiled = list(kernel.base.cache.values())
    assert len(compiled) == len(CONFIGS) and all(ck.metadata.cache_hit for ck in compiled)
