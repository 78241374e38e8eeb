"""The compile figures' method in benchmarks/gpu.py (issue 13's first-compile figure): each is
the median of several fresh processes, and the bytecode of every module those processes load
is compiled first, single-file modules included, so the figure times kernellab, not Python
compiling sources."""

import importlib.util
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.fixture(scope="module")
def gpu():
    sys.path.insert(0, str(BENCHMARKS))
    try:
        spec = importlib.util.spec_from_file_location("benchmark_gpu", BENCHMARKS / "gpu.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.path.remove(str(BENCHMARKS))


def test_the_median_of_fresh_runs_is_reported_with_its_spread(gpu):
    values = iter([410.0, 352.0, 377.0, 482.0, 365.0])
    value, note = gpu.median_of_fresh(lambda: (v := next(values), f"run of {v:.0f}"), runs=5)
    assert value == 377.0
    assert note == "median of 5 fresh processes (352-482 ms); run of 377"


def test_one_failed_run_fails_the_figure(gpu):
    outcomes = iter([(300.0, "fine"), (None, "WRONG result"), (310.0, "fine")])
    assert gpu.median_of_fresh(lambda: next(outcomes), runs=3) == (None, "WRONG result")


def test_single_modules_get_their_bytecode(gpu, tmp_path, monkeypatch):
    source = tmp_path / "kl_single_file_module.py"
    source.write_text("VALUE = 41 + 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    cached = Path(importlib.util.cache_from_source(str(source)))
    assert not cached.exists()
    note = gpu.compile_bytecode(packages=(), modules=["kl_single_file_module", "sys", "no_such_module_here"])
    assert note == "bytecode compiled beforehand"  # built-in and missing names are passed over
    assert cached.exists() and cached.stat().st_size > 0


@pytest.mark.skipif(sys.pycache_prefix is not None, reason="bytecode goes to PYTHONPYCACHEPREFIX, not beside the source")
def test_a_module_whose_bytecode_cannot_be_written_is_named(gpu, tmp_path, monkeypatch):
    source = tmp_path / "kl_unwritable_module.py"
    source.write_text("VALUE = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "__pycache__").write_text("a file where the bytecode folder would go")
    note = gpu.compile_bytecode(packages=(), modules=["kl_unwritable_module"])
    assert note == "bytecode compiled beforehand except kl_unwritable_module"
