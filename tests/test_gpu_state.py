"""kl.testing's comparison in interleaved rounds and the GPU clock/power reader: the round
order and medians with a stand-in do_bench, nvidia-smi's samples parsed, a fake nvidia-smi on
PATH read while code runs, and nothing (no error) where there is none."""

from __future__ import annotations

import os
import stat
import time

import pytest

from kernellab import testing
from kernellab.testing import gpu_state, timing


def test_interleaved_rounds_reverse_the_order_and_keep_each_median_round(monkeypatch):
    calls, times = [], {"a": iter([5.0, 1.0, 3.0]), "b": iter([2.0, 9.0, 4.0])}

    def fake_do_bench(fn, warmup, rep, return_mode, device):
        assert return_mode == "median"
        calls.append(fn())
        return next(times[calls[-1]])

    monkeypatch.setattr(timing, "do_bench", fake_do_bench)
    got = testing.do_bench_interleaved([lambda: "a", lambda: "b"], rounds=3, warmup=1, rep=2)
    assert calls == ["a", "b", "b", "a", "a", "b"]
    assert got == [3.0, 4.0]  # each one's median round


def test_by_default_each_is_as_often_at_an_even_place_as_at_an_odd_one(monkeypatch):
    """A GPU timed every second measurement of one kernel slower: with the default (even)
    round count, a figure slowed at the even places of the sequence slows both alike."""
    calls = []

    def fake_do_bench(fn, warmup, rep, return_mode, device):
        calls.append(fn())
        return {"a": 10.0, "b": 12.0}[calls[-1]] + (1.0 if len(calls) % 2 else 0.0)

    monkeypatch.setattr(timing, "do_bench", fake_do_bench)
    a, b = testing.do_bench_interleaved([lambda: "a", lambda: "b"], warmup=1, rep=2)
    assert calls == ["a", "b", "b", "a", "a", "b", "b", "a"]
    assert (a, b) == (10.5, 12.5)  # each: two slowed rounds, two not


def test_interleaved_rounds_on_the_host_time_each_callable():
    counts = [0, 0]

    def one():
        counts[0] += 1

    def two():
        counts[1] += 1
        time.sleep(1e-4)

    a, b = testing.do_bench_interleaved([one, two], rounds=2, warmup=0, rep=1, device="cpu")
    assert counts[0] > 0 and counts[1] > 0 and a > 0 and b > 0


def test_samples_are_parsed_and_unreadable_lines_skipped():
    text = "1455, 690.84, 700.00\n[N/A], 12.5, 700.00\n\n1470, 691.2, 700.00\n"
    assert gpu_state.parse_samples(text) == [(1455.0, 690.84, 700.0), (1470.0, 691.2, 700.0)]


def fake_smi(tmp_path, lines: list[str]) -> str:
    """An `nvidia-smi` that prints `lines` as -lms would, then waits to be stopped."""
    script = tmp_path / "nvidia-smi"
    body = "".join(f"echo '{line}'\n" for line in lines)
    script.write_text(f"#!/bin/sh\n{body}exec sleep 30\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return str(tmp_path)


def test_the_clock_and_power_of_the_steady_state_are_read(tmp_path, monkeypatch):
    ramp = ["1980, 350.0, 700.00", "1980, 500.0, 700.00", "1700, 650.0, 700.00"]
    steady = ["1455, 689.0, 700.00", "1440, 691.0, 700.00", "1470, 690.0, 700.00",
              "1455, 692.0, 700.00", "1455, 690.5, 700.00", "1440, 689.5, 700.00"]  # fmt: skip
    monkeypatch.setenv("PATH", fake_smi(tmp_path, ramp + steady) + os.pathsep + os.environ["PATH"])
    with testing.GpuState() as state:
        time.sleep(0.5)  # the fake prints at once; the real one every 50 ms
    assert state.clock_mhz == 1455.0 and state.power_w == 690.25 and state.power_limit_w == 700.0
    assert state.at_power_limit
    assert state.describe() == "1455 MHz, 690 of 700 W (at its power limit)"


def test_below_the_limit_no_claim_and_without_nvidia_smi_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", fake_smi(tmp_path, ["1980, 120.0, 700.00"] * 3))
    with testing.GpuState() as state:
        time.sleep(0.3)
    assert state.describe() == "1980 MHz, 120 of 700 W" and not state.at_power_limit
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with testing.GpuState() as state:
        pass
    assert state.clock_mhz is None and state.describe() == "" and not state.at_power_limit


def test_a_gpu_bench_result_says_at_which_clock_and_power_it_ran():
    pytest.importorskip("IPython")  # the lab's magic needs it; the device has no Jupyter
    from kernellab.lab.magic import BenchResult

    bench = BenchResult("k", "torch", "x + y", 2.0, 1.0, "GPU", "1455 MHz, 690 of 700 W (at its power limit)")
    shown = bench._repr_mimebundle_()
    assert shown["text/plain"].startswith("bench on the GPU at 1455 MHz, 690 of 700 W (at its power limit): k 2.0000 ms")
    assert "1455 MHz, 690 of 700 W" in shown["text/html"] and "interleaved rounds" in shown["text/html"]
