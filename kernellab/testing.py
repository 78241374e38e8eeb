"""Testing and benchmarking helpers with Triton's names: assert_close, do_bench, perf_report.

Timing here is wall-clock on the host (the interpreter runs on the CPU); results are in
milliseconds as in Triton. Plotting belongs to the lab, so nothing here imports matplotlib.
"""

from __future__ import annotations

import itertools
import statistics
import time

import numpy as np

from kernellab.runtime.args import as_numpy


def _to_float64(x) -> np.ndarray:
    array = as_numpy(x)  # torch tensors (bf16 included) become numpy views
    return (np.asarray(x) if array is None else array).astype(np.float64)


def assert_close(actual, expected, atol=None, rtol=None, err_msg: str = "") -> None:
    """Fail unless |actual - expected| <= atol + rtol * |expected| everywhere (NaNs must match).

    Defaults follow Triton: atol=1e-2, rtol=0. The message counts the mismatches and shows the
    worst one with its index, so a failure says where to look.
    """
    atol = 1e-2 if atol is None else atol
    rtol = 0.0 if rtol is None else rtol
    a, e = _to_float64(actual), _to_float64(expected)
    if a.shape != e.shape:
        a, e = np.broadcast_arrays(a, e)
    with np.errstate(invalid="ignore"):
        err = np.abs(a - e)
        tol = atol + rtol * np.abs(e)
        bad = ~(err <= tol)
    same_nan = np.isnan(a) & np.isnan(e)
    same_inf = np.isinf(a) & (a == e)
    bad &= ~(same_nan | same_inf)
    if not bad.any():
        return
    count = int(bad.sum())
    excess = np.where(bad, np.nan_to_num(err - tol, nan=np.inf), -np.inf)
    worst = np.unravel_index(int(np.argmax(excess)), a.shape) if a.ndim else ()
    index = tuple(int(i) for i in worst)
    lines = [
        f"{err_msg}: " * bool(err_msg) + f"{count} of {a.size} elements differ "
        f"(atol={atol}, rtol={rtol})",
        f"worst at index {index}: actual {a[index]!r}, expected {e[index]!r}, "
        f"|diff| {err[index]!r}",
    ]
    finite = bad & np.isfinite(err)
    if finite.any():
        lines.append(f"max |diff| among mismatches: {err[finite].max()!r}")
    raise AssertionError("\n".join(lines))


def do_bench(fn, warmup=25, rep=100, grad_to_none=None, quantiles=None, return_mode="mean"):
    """Time `fn()` in ms: estimate one call, then run ~`warmup` ms untimed and ~`rep` ms timed.

    `quantiles` (e.g. [0.5, 0.2, 0.8]) returns those quantiles instead; `return_mode` is one of
    "min", "max", "mean", "median", "all". `grad_to_none` is accepted for Triton compatibility.
    """
    if return_mode not in ("min", "max", "mean", "median", "all"):
        raise ValueError(f"return_mode must be min, max, mean, median or all, not {return_mode!r}")
    start = time.perf_counter()
    fn()
    estimate_ms = max((time.perf_counter() - start) * 1e3, 1e-3)
    for _ in range(max(0, int(warmup / estimate_ms))):
        fn()
    times = []
    for _ in range(max(1, int(rep / estimate_ms))):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e3)
    if quantiles is not None:
        result = np.quantile(np.asarray(times), quantiles).tolist()
        return result[0] if len(result) == 1 else result
    if return_mode == "all":
        return times
    return {"min": min, "max": max, "mean": statistics.fmean, "median": statistics.median}[return_mode](times)


class Benchmark:
    """A sweep: for each x in `x_vals` (bound to `x_names`) and each line value, call the function."""

    def __init__(self, x_names, x_vals, line_arg, line_vals, line_names, plot_name, args=None,
                 xlabel="", ylabel="", x_log=False, y_log=False, styles=None, color=None):  # fmt: skip
        self.x_names = list(x_names)
        self.x_vals = list(x_vals)
        self.line_arg = line_arg
        self.line_vals = list(line_vals)
        self.line_names = list(line_names)
        self.plot_name = plot_name
        self.args = dict(args or {})
        self.xlabel, self.ylabel = xlabel, ylabel
        self.x_log, self.y_log = x_log, y_log
        self.styles = styles


class Mark:
    """What `perf_report` returns: call it like the function, or `.run()` the sweep."""

    def __init__(self, fn, benchmarks):
        self.fn = fn
        self.benchmarks = benchmarks

    def __call__(self, *args, **kwargs):
        return self.fn(*args, **kwargs)

    def _sweep(self, bench: Benchmark) -> tuple[list[str], list[list]]:
        header = list(bench.x_names) + list(bench.line_names)
        rows = []
        for x in bench.x_vals:
            xs = x if isinstance(x, (list, tuple)) else [x] * len(bench.x_names)
            x_args = dict(zip(bench.x_names, xs))
            row = list(xs)
            for line in bench.line_vals:
                result = self.fn(**x_args, **{bench.line_arg: line}, **bench.args)
                row.append(result[0] if isinstance(result, (tuple, list)) else result)
            rows.append(row)
        return header, rows

    def run(self, show_plots=False, print_data=False, save_path=None, return_df=False, **kwargs):
        """Run every sweep; print the tables (always when nothing else is asked); save CSVs.

        Plots are drawn by the lab (`kernellab.lab`); here `show_plots` only prints the table.
        """
        benches = self.benchmarks if isinstance(self.benchmarks, list) else [self.benchmarks]
        tables = []
        for bench in benches:
            header, rows = self._sweep(bench)
            tables.append((bench, header, rows))
            if print_data or show_plots or not (save_path or return_df):
                print(f"{bench.plot_name}:")
                print(format_table(header, rows))
            if save_path:
                import csv
                import os

                with open(os.path.join(save_path, f"{bench.plot_name}.csv"), "w", newline="") as f:
                    csv.writer(f).writerows([header, *rows])
        if return_df:
            import pandas as pd

            frames = [pd.DataFrame(rows, columns=header) for _, header, rows in tables]
            return frames[0] if len(frames) == 1 else frames
        return None


def format_table(header: list[str], rows: list[list]) -> str:
    """A plain-text table: text columns left-aligned, number columns right-aligned."""
    cells = [[str(h) for h in header]] + [
        [f"{v:.6g}" if isinstance(v, float) else str(v) for v in row] for row in rows
    ]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    text = [bool(rows) and isinstance(rows[0][i], str) for i in range(len(header))]
    lines = [
        "  ".join(c.ljust(w) if t else c.rjust(w) for c, w, t in zip(row, widths, text)).rstrip()
        for row in cells
    ]
    return "\n".join(itertools.chain([lines[0], "-" * max(map(len, lines))], lines[1:]))


def perf_report(benchmarks):
    """Decorator: turn a benchmark function into a Mark whose `.run()` performs the sweep(s)."""
    return lambda fn: Mark(fn, benchmarks)


__all__ = ["assert_close", "do_bench", "Benchmark", "perf_report", "Mark", "format_table"]
