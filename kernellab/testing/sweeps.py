"""perf_report / Benchmark: sweeps of a benchmark function over x values and lines, with their
tables, CSV files, plots and progress."""

from __future__ import annotations

from kernellab.testing import plots
from kernellab.testing.progress import progress_reporter
from kernellab.testing.results import SweepResult
from kernellab.testing.tables import format_table


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
    """What `perf_report` returns: call it like the function, or `.run()` the sweep.

    After a run, `tables` holds (benchmark, header, rows) per benchmark and `figures` the
    matplotlib figures drawn (when `show_plots` or a `save_path` asked for them).
    """

    def __init__(self, fn, benchmarks):
        self.fn = fn
        self.benchmarks = benchmarks
        self.tables: list = []
        self.figures: list = []

    def __call__(self, *args, **kwargs):
        return self.fn(*args, **kwargs)

    def _sweep(self, bench: Benchmark, progress=None) -> SweepResult:
        values, lows, highs = [], [], []
        total = len(bench.x_vals) * len(bench.line_vals)
        done = 0
        for x in bench.x_vals:
            xs = x if isinstance(x, (list, tuple)) else [x] * len(bench.x_names)
            x_args = dict(zip(bench.x_names, xs))
            row, low, high = [], [], []
            for line in bench.line_vals:
                if progress is not None:
                    progress(done, total, f"{bench.plot_name}: {_describe(x_args)}, {bench.line_arg}={line}")
                result = self.fn(**x_args, **{bench.line_arg: line}, **bench.args)
                if isinstance(result, (tuple, list)):
                    v = result[0]
                    lo = result[1] if len(result) > 1 else v
                    hi = result[2] if len(result) > 2 else v
                else:
                    v = lo = hi = result
                row.append(v)
                low.append(lo)
                high.append(hi)
                done += 1
            values.append((list(xs), row))
            lows.append(low)
            highs.append(high)
        if progress is not None:
            progress(total, total, f"{bench.plot_name}: done")
        return SweepResult(bench, values, lows, highs)

    def run(self, show_plots=False, print_data=False, save_path=None, return_df=False,
            progress=None, **kwargs):  # fmt: skip
        """Run every sweep; print the tables (always when nothing else is asked); plot; save.

        `show_plots` draws each sweep with matplotlib (inline in a notebook) and keeps the
        figures in `self.figures`; `save_path` writes `<plot_name>.csv` and `<plot_name>.png`.
        With a line named 'torch', the table gains each other line's ratio to it; with a GB/s
        y label, the plot gains a roofline at the measured copy bandwidth. `progress` (default:
        on in a notebook or a terminal) shows which point of the sweep is running.
        """
        benches = self.benchmarks if isinstance(self.benchmarks, list) else [self.benchmarks]
        self.tables, self.figures = [], []
        frames = []
        reporter = progress_reporter(progress)
        try:
            for bench in benches:
                sweep = self._sweep(bench, reporter)
                header, rows = sweep.table()
                self.tables.append((bench, header, rows))
                if print_data or show_plots or not (save_path or return_df):
                    print(f"{bench.plot_name}:")
                    print(format_table(header, rows))
                if save_path:
                    import csv
                    import os

                    with open(os.path.join(save_path, f"{bench.plot_name}.csv"), "w", newline="") as f:
                        csv.writer(f).writerows([header, *rows])
                if show_plots or save_path:  # as Triton: a save_path also gets the plot
                    fig = plots.plot_sweep(sweep)
                    self.figures.append(fig)
                    if save_path:
                        import os

                        fig.savefig(os.path.join(save_path, f"{bench.plot_name}.png"))
                    if show_plots:
                        plots.show_figure(fig)
                if return_df:
                    import pandas as pd

                    frames.append(pd.DataFrame(rows, columns=header))
        finally:
            if reporter is not None:
                reporter.close()
        if return_df:
            return frames[0] if len(frames) == 1 else frames
        return None


def _describe(x_args: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in x_args.items())


def perf_report(benchmarks):
    """Decorator: turn a benchmark function into a Mark whose `.run()` performs the sweep(s)."""
    return lambda fn: Mark(fn, benchmarks)
