"""Autotuning timed on a pool of devices (issue 15): the multi-process path on the host (the
interpreter and the CPU backend as the "devices"), and on every GPU of the host with `-m gpu`.

What must hold: every config is timed by some worker and the table says which; the compiled code
travels to the workers (they never import the kernel, which is defined inside the tests); the
arguments reach each worker once, with their layout; the caller's arrays see only the final
launch; a worker that dies is replaced; what can't be sent says what to change.
"""

import os
import pickle
from concurrent.futures import Executor, Future, ProcessPoolExecutor
from multiprocessing import get_context

import numpy as np
import pytest

import kernellab as kl
import kernellab.language as tl
from kernellab.compiler.binary import binary_of, load_binary
from kernellab.runtime import bench_pool
from kernellab.runtime.bench_pool import BenchJob, BenchReport, DeviceIdentity, DevicePool, LaunchInputs, _materialized

from .test_autotune_report import scale_kernel

CONFIGS = [kl.Config({"BLOCK": b}, num_warps=w) for b, w in ((32, 1), (64, 2), (128, 4), (256, 4))]


def accumulate_kernel():
    @kl.jit
    def accumulate(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(out_ptr + offs, tl.load(out_ptr + offs, mask=mask) + tl.load(x_ptr + offs, mask=mask), mask=mask)

    return accumulate


def grid(n):
    return lambda meta: (kl.cdiv(n, meta["BLOCK"]),)


def launch_scale(kernel, n: int, **options) -> None:
    """Launch the (tuned) scale kernel on fresh data; the caller's output is checked whole."""
    x = np.random.default_rng().standard_normal(n).astype(np.float32)
    out = np.full_like(x, np.nan)
    kernel[grid(n)](x, out, n, **options)
    np.testing.assert_allclose(out, 3 * x.astype(np.float64), rtol=1e-6)


@pytest.fixture(scope="module")
def host_pool():
    with DevicePool(host_workers=2) as pool:
        yield pool


def test_configs_are_timed_across_the_workers_and_the_caller_sees_one_launch(host_pool):
    kernel = kl.autotune(CONFIGS, key=["n"], progress=False, bench_executor=host_pool)(scale_kernel())
    launch_scale(kernel, 3000)
    rows = kernel.tuning.rows
    assert all(r.status == "timed" and r.kernel_ms > 0 for r in rows), [r.status for r in rows]
    # two timings in flight from the start, one per worker: both workers timed configs
    assert {r.device for r in rows} == {"host worker 0", "host worker 1"}
    assert {r.model for r in rows} == {"host"}
    assert kernel.best_config is min(rows, key=lambda r: r.kernel_ms).config
    assert "device" in str(kernel.tuning) and "host worker 1" in str(kernel.tuning)


def test_the_workers_reset_and_restore_their_own_copies(host_pool):
    """An accumulating kernel: the timing runs happen on the workers' copies, so the caller's
    output holds exactly one launch's sum (reset_to_zero zeroes it before, as Triton's does)."""
    kernel = kl.autotune(CONFIGS[:3], key=["n"], reset_to_zero=["out_ptr"], progress=False,
                         bench_executor=host_pool)(accumulate_kernel())  # fmt: skip
    n = 1500
    rng = np.random.default_rng()
    x = rng.standard_normal(n).astype(np.float32)
    out = rng.standard_normal(n).astype(np.float32)
    expected = out.astype(np.float64) + x
    kernel[grid(n)](x, out, n)
    np.testing.assert_allclose(out, expected, rtol=1e-6)
    assert all(r.status == "timed" for r in kernel.tuning.rows)


def test_the_cpu_backend_ships_its_object_code(host_pool):
    kernel = kl.autotune(CONFIGS, key=["n"], progress=False, bench_executor=host_pool)(scale_kernel())
    launch_scale(kernel, 5000, target="cpu")
    assert all(r.status == "timed" and r.device is not None for r in kernel.tuning.rows)


def test_any_executor_of_processes_serves(tmp_path):
    """A plain process pool stands in for dask's or Ray's executors: the jobs carry everything
    (the kernel exists only in this test, so a worker could not import it)."""
    with ProcessPoolExecutor(2, mp_context=get_context("spawn")) as pool:
        kernel = kl.autotune(CONFIGS, key=["n"], progress=False, bench_executor=pool,
                             bench_workers=2)(scale_kernel())  # fmt: skip
        launch_scale(kernel, 700)
    assert all(r.status == "timed" and r.device.startswith("host worker") for r in kernel.tuning.rows)


@pytest.mark.parametrize("target", [None, "cpu"])
def test_a_binary_pickles_and_launches_without_the_source(target):
    ck = kl.compile(scale_kernel(), signature="*fp32,*fp32,i32", constexprs={"BLOCK": 64}, target=target)
    loaded = load_binary(pickle.loads(pickle.dumps(binary_of(ck))))
    assert loaded.metadata.target == ck.metadata.target and loaded.arg_names == ["x_ptr", "out_ptr", "n"]
    n = 200
    x = np.random.default_rng().standard_normal(n).astype(np.float32)
    out = np.full_like(x, np.nan)
    loaded[(kl.cdiv(n, 64),)](x, out, n)
    np.testing.assert_allclose(out, 3 * x.astype(np.float64), rtol=1e-6)


@pytest.mark.parametrize("form", ["shared", "inline", "no room in /dev/shm"])
def test_arrays_travel_with_their_layout(form, monkeypatch):
    """In shared memory (workers on this host) or inline (elsewhere, or when /dev/shm has no
    room: a write past its space would be a SIGBUS), a view arrives with its shape, strides and
    the bytes between its elements: the kernel indexes from the base."""
    if form == "no room in /dev/shm":
        monkeypatch.setattr(bench_pool, "_shm_fits", lambda nbytes: False)
    rng = np.random.default_rng()
    base = rng.standard_normal((6, 10)).astype(np.float32)
    views = {"whole": base, "rows": base[::2], "block": base[1:, ::3], "t": base.T, "empty": base[:0],
             "pair": (base[0], 7)}  # fmt: skip
    inputs = LaunchInputs(views)
    try:
        sent = pickle.loads(pickle.dumps(inputs.inline() if form == "inline" else inputs.shared()))
        assert all(a.data is None for a in sent.values() if hasattr(a, "data")) == (form == "shared")
        back = {name: _materialized(value, on_gpu=False) for name, value in sent.items()}
    finally:
        inputs.close()
    assert back["pair"][1] == 7
    for name, view in [*((n, v) for n, v in views.items() if n != "pair"), ("pair0", base[0])]:
        got = back["pair"][0] if name == "pair0" else back[name]
        assert got.shape == view.shape and got.strides == view.strides
        np.testing.assert_array_equal(got, view)
        if view.size:  # the bytes between a view's elements travel too
            span = 1 + sum((n - 1) * s for n, s in zip(view.shape, view.strides)) // 4
            np.testing.assert_array_equal(np.lib.stride_tricks.as_strided(got, (span,), (4,)),
                                          np.lib.stride_tricks.as_strided(view, (span,), (4,)))  # fmt: skip
    with pytest.raises(ValueError, match="non-negative strides"):
        LaunchInputs({"x": base[::-1]})


def test_a_worker_on_another_host_gets_the_bytes_inline(monkeypatch):
    """A dask or Ray worker elsewhere can't map this host's shared memory: it asks again and
    gets the bytes themselves."""
    inputs = LaunchInputs({"x": np.arange(12, dtype=np.int32)})
    try:
        monkeypatch.setattr(bench_pool.socket, "gethostname", lambda: "elsewhere")
        job = BenchJob(0, None, "key", inputs.shared(), {}, (1,))
        report = bench_pool.bench_job(job)
        assert report.needs_inputs and report.needs_inline
        np.testing.assert_array_equal(_materialized(inputs.inline()["x"], on_gpu=False), np.arange(12))
    finally:
        inputs.close()


def test_a_dead_worker_is_replaced(host_pool):
    with pytest.raises(Exception, match="terminated abruptly|BrokenProcessPool|process"):
        host_pool.submit(os._exit, 3).result(timeout=120)
    # the pool keeps both devices: the worker is started again, and the next tasks run
    host_pool.wait_ready(timeout=120)
    pids = {host_pool.submit(os.getpid).result(timeout=120) for _ in range(4)}
    assert pids and all(isinstance(pid, int) for pid in pids)


def test_a_pre_hook_that_cannot_travel_says_so(host_pool):
    configs = [kl.Config({"BLOCK": 64}, pre_hook=lambda nargs: None), kl.Config({"BLOCK": 128})]
    kernel = kl.autotune(configs, key=["n"], progress=False, bench_executor=host_pool)(scale_kernel())
    launch_scale(kernel, 300)
    failed, timed = kernel.tuning.rows
    assert failed.status.startswith("failed") and "module-level function" in failed.status
    assert timed.status == "timed" and kernel.best_config is configs[1]


class TwoModels(Executor):
    """A pool of two device models, run in this thread, whose timings are made up: config i
    takes ms[model][i]. Checks that each config is timed on each model and the best is per model."""

    models = {"model A": None, "model B": None}
    devices = ("a", "b")
    ms = {"model A": [3.0, 1.0, 2.0], "model B": [1.0, 3.0, 2.0]}

    def __init__(self):
        self.asked = []

    def submit_on(self, model, fn, job):
        self.asked.append((model, job.row))
        future = Future()
        future.set_result(BenchReport(job.row, DeviceIdentity(f"{model} #0", model, None),
                                      ms=self.ms[model][job.row // 2]))  # fmt: skip
        return future

    def submit(self, fn, *args, **kwargs):
        raise AssertionError("each row names its model")


def test_each_device_model_gets_its_own_best():
    pool = TwoModels()
    kernel = kl.autotune(CONFIGS[:3], key=["n"], progress=False, bench_executor=pool)(scale_kernel())
    launch_scale(kernel, 400)
    assert sorted(pool.asked) == sorted((m, r) for r, m in enumerate(["model A", "model B"] * 3))
    assert kernel.best_by_model == {"model A": CONFIGS[1], "model B": CONFIGS[0]}
    text = str(kernel.tuning)
    assert "best on model A: " in text and "best on model B: " in text


def test_a_gpu_pool_refuses_a_launch_on_the_host():
    class Gpus(TwoModels):
        models = {"NVIDIA H100 80GB HBM3": "sm_90a"}

    kernel = kl.autotune(CONFIGS[:2], key=["n"], progress=False, bench_executor=Gpus())(scale_kernel())
    x = np.ones(10, np.float32)
    with pytest.raises(ValueError, match="DevicePool\\(host_workers=N\\)"):
        kernel[grid(10)](x, x.copy(), 10)


@pytest.mark.gpu
def test_every_gpu_of_the_host_times_configs():
    torch = pytest.importorskip("torch")
    with DevicePool() as pool:
        kernel = kl.autotune(CONFIGS, key=["n"], progress=False, bench_executor=pool)(scale_kernel())
        n = 1 << 20
        x = torch.randn(n, device="cuda")
        out = torch.full_like(x, float("nan"))
        kernel[grid(n)](x, out, n)
        torch.testing.assert_close(out.double(), 3 * x.double(), rtol=1e-6, atol=0)
        rows = kernel.tuning.rows
        assert all(r.status == "timed" for r in rows), [r.status for r in rows]
        assert {r.device for r in rows} == {d.label for d in pool.devices[: len(rows)]}
        assert all(r.model == torch.cuda.get_device_name(0) for r in rows)
