"""The GPU's SM clock and board power while code runs, read by sampling `nvidia-smi`.

A card at its power limit (an H200 at 700 W runs large matmuls at 1.4-1.55 GHz, not its
1.98 GHz boost) lowers its clock with its heat: a time means little without the clock it ran at,
and two times taken apart in time compare two clocks. `GpuState` reads both while a block of code
runs; None where there is no `nvidia-smi` (no NVIDIA GPU, or a container without it).
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess

_QUERY = "clocks.sm,power.draw,power.limit"


def parse_samples(text: str) -> list[tuple[float, float, float]]:
    """`nvidia-smi --query-gpu=clocks.sm,power.draw,power.limit --format=csv,noheader,nounits`
    lines → (MHz, W, limit W) samples; lines that are not three numbers ("[N/A]") are skipped."""
    samples = []
    for line in text.splitlines():
        try:
            mhz, watts, limit = (float(v) for v in line.split(","))
        except ValueError:
            continue
        samples.append((mhz, watts, limit))
    return samples


class GpuState:
    """`with GpuState() as state: ...` samples the first visible GPU every 50 ms; afterwards
    `state.clock_mhz`, `state.power_w` and `state.power_limit_w` are the medians over the last
    two thirds of the samples (past the ramp to the steady state), or None."""

    def __init__(self, interval_ms: int = 50):
        self.interval_ms = interval_ms
        self.clock_mhz = self.power_w = self.power_limit_w = None
        self._proc = None

    def __enter__(self) -> GpuState:
        smi = shutil.which("nvidia-smi")
        if smi is not None:
            device = os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",")[0] or "0"
            try:
                self._proc = subprocess.Popen(
                    [smi, f"--query-gpu={_QUERY}", "--format=csv,noheader,nounits",
                     "-lms", str(self.interval_ms), "-i", device],
                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)  # fmt: skip
            except OSError:
                self._proc = None
        return self

    def __exit__(self, *exc) -> None:
        if self._proc is None:
            return
        self._proc.terminate()
        try:
            out = self._proc.communicate(timeout=5)[0]
        except subprocess.TimeoutExpired:
            self._proc.kill()
            out = self._proc.communicate()[0]
        samples = parse_samples(out)
        samples = samples[len(samples) // 3:]
        if samples:
            self.clock_mhz = statistics.median(s[0] for s in samples)
            self.power_w = statistics.median(s[1] for s in samples)
            self.power_limit_w = statistics.median(s[2] for s in samples)

    @property
    def at_power_limit(self) -> bool:
        """Within 3% of the power limit: the clock is the power budget's, not the boost's."""
        return self.power_w is not None and bool(self.power_limit_w) and self.power_w >= 0.97 * self.power_limit_w

    def describe(self) -> str:
        """"1455 MHz, 690 of 700 W (at its power limit)", or "" when nothing was read."""
        if self.clock_mhz is None:
            return ""
        text = f"{self.clock_mhz:.0f} MHz, {self.power_w:.0f} of {self.power_limit_w:.0f} W"
        return text + (" (at its power limit)" if self.at_power_limit else "")
