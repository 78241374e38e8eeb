"""A sweep's measurements, and its table with each line's ratio to the torch reference."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kernellab.testing.sweeps import Benchmark


class SweepResult:
    """One benchmark's measurements: per x point, the x values and one value per line (plus the
    low/high values the function returned, e.g. the 20th/80th percentiles)."""

    def __init__(self, bench: Benchmark, values, lows, highs):
        self.bench = bench
        self.values = values  # [(xs, [value per line])]
        self.lows = lows
        self.highs = highs

    def torch_index(self) -> int | None:
        """Which line is the torch reference (line value or name 'torch', any case)."""
        for i, (val, name) in enumerate(zip(self.bench.line_vals, self.bench.line_names)):
            if str(val).lower() == "torch" or str(name).lower() == "torch":
                return i
        return None

    def table(self) -> tuple[list[str], list[list]]:
        bench = self.bench
        header = list(bench.x_names) + list(bench.line_names)
        ref = self.torch_index()
        others = [i for i in range(len(bench.line_names)) if i != ref] if ref is not None else []
        header += [f"{bench.line_names[i]}/{bench.line_names[ref]}" for i in others]
        rows = []
        for xs, row in self.values:
            ratios = []
            for i in others:
                try:
                    ratios.append(float(row[i]) / float(row[ref]))
                except (TypeError, ValueError, ZeroDivisionError):
                    ratios.append(float("nan"))
            rows.append(list(xs) + list(row) + ratios)
        return header, rows
