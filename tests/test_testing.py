"""kernellab.testing: assert_close's report, do_bench's modes, perf_report's sweep."""

import ml_dtypes
import numpy as np
import pytest

from kernellab import testing


def test_assert_close_passes_within_tolerance_and_matches_nans():
    rng = np.random.default_rng()
    expected = rng.standard_normal((4, 5))
    actual = expected + 1e-3
    actual[1, 2] = expected[1, 2] = np.nan
    testing.assert_close(actual, expected)  # Triton's default atol is 1e-2
    testing.assert_close(expected.astype(ml_dtypes.bfloat16), expected, atol=0, rtol=2**-8)


def test_assert_close_reports_count_and_worst_element():
    rng = np.random.default_rng()
    expected = rng.uniform(1, 2, (3, 4))
    actual = expected.copy()
    actual[0, 1] += 0.5
    actual[2, 3] += 3.0
    with pytest.raises(AssertionError) as info:
        testing.assert_close(actual, expected, atol=1e-3, rtol=0, err_msg="matmul")
    message = str(info.value)
    assert message.startswith("matmul: 2 of 12 elements differ (atol=0.001, rtol=0)")
    assert "worst at index (2, 3)" in message and repr(expected[2, 3]) in message


def test_assert_close_flags_unexpected_nan():
    with pytest.raises(AssertionError, match="1 of 3 elements differ"):
        testing.assert_close(np.array([1.0, np.nan, 3.0]), np.array([1.0, 2.0, 3.0]))


def test_do_bench_modes():
    calls = []

    def fn():
        calls.append(1)

    ms = testing.do_bench(fn, warmup=1, rep=2)
    assert ms >= 0 and len(calls) > 2
    times = testing.do_bench(fn, warmup=0, rep=1, return_mode="all")
    assert isinstance(times, list) and all(t >= 0 for t in times)
    low, mid, high = testing.do_bench(fn, warmup=0, rep=1, quantiles=[0.2, 0.5, 0.8])
    assert low <= mid <= high
    with pytest.raises(ValueError, match="return_mode"):
        testing.do_bench(fn, return_mode="p50")


def test_perf_report_runs_the_sweep_and_prints_a_table(capsys, tmp_path):
    seen = []

    @testing.perf_report(
        testing.Benchmark(
            x_names=["size"], x_vals=[2, 4], line_arg="provider", line_vals=["a", "b"],
            line_names=["A", "B"], plot_name="demo", args={"scale": 10},
        )
    )  # fmt: skip
    def bench(size, provider, scale):
        seen.append((size, provider, scale))
        return float(size * scale + (provider == "b")), 0.0, 0.0

    bench.run(print_data=True, save_path=str(tmp_path))
    assert seen == [(2, "a", 10), (2, "b", 10), (4, "a", 10), (4, "b", 10)]
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "demo:" and out[1].split() == ["size", "A", "B"]
    assert out[3].split() == ["2", "20", "21"] and out[4].split() == ["4", "40", "41"]
    assert (tmp_path / "demo.csv").read_text().splitlines()[1] == "2,20.0,21.0"
