"""Testing and benchmarking helpers with Triton's names: assert_close, do_bench, perf_report.

`do_bench` times with CUDA events (flushing L2 between runs) when the work is on a GPU (torch
has CUDA tensors) and with the host clock otherwise; results are in milliseconds as in Triton.
`perf_report(...).run(show_plots=True)` plots with matplotlib, imported only then, with a roofline
at the measured copy bandwidth when the y axis is GB/s and the ratio to a 'torch' line.
"""

from __future__ import annotations

import itertools
import statistics
import sys
import time

import numpy as np

from kernellab.runtime.args import as_numpy


def _torch_to_host(t) -> np.ndarray:
    """A torch tensor (any device) as a host numpy array: detached, and upcast to float32 on its
    device first when numpy has no dtype for it (bf16, the fp8 formats)."""
    import torch  # already imported: `t` is a torch tensor

    t = t.detach()
    if t.is_floating_point() and t.dtype not in (torch.float16, torch.float32, torch.float64):
        t = t.to(torch.float32)
    return t.cpu().numpy()


def _to_float64(x) -> np.ndarray:
    """`x` (numpy, torch on any device, a GPU array, a scalar or list) as a float64 host array."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(x, torch.Tensor):
        return _torch_to_host(x).astype(np.float64)
    if hasattr(x, "__cuda_array_interface__") and not hasattr(x, "__array_interface__"):
        try:
            import torch
        except ImportError:
            raise TypeError(
                f"can't compare a {type(x).__name__} (a GPU array): copying it to the host needs "
                "torch; install torch, or copy it to the host first (CuPy: x.get(), Numba: "
                "x.copy_to_host())"
            ) from None
        return _torch_to_host(torch.as_tensor(x, device="cuda")).astype(np.float64)
    array = as_numpy(x)  # CPU arrays of other libraries become numpy views
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


def _cuda_in_use() -> bool:
    """True when torch is loaded and has initialized CUDA (the program works on CUDA tensors).

    torch is never imported here: a program using CUDA tensors has imported it already.
    """
    torch = sys.modules.get("torch")
    if torch is None:
        return False
    try:
        return bool(torch.cuda.is_available() and torch.cuda.is_initialized())
    except (AttributeError, RuntimeError):  # a torch without CUDA support
        return False


def _summarize(times, quantiles, return_mode):
    if quantiles is not None:
        result = np.quantile(np.asarray(times), quantiles).tolist()
        return result[0] if len(result) == 1 else result
    if return_mode == "all":
        return list(times)
    return {"min": min, "max": max, "mean": statistics.fmean, "median": statistics.median}[return_mode](times)


_L2_FLUSH_BYTES = 256 * 2**20  # larger than any current GPU's L2 (H100: 50 MB, B200: 126 MB)


def _do_bench_cuda(fn, warmup, rep, grad_to_none, quantiles, return_mode):
    """Triton's scheme: estimate with a few runs, then time each run between two CUDA events,
    zeroing a 256 MB buffer before each so every run starts with a cold L2."""
    import torch

    flush = torch.empty(_L2_FLUSH_BYTES, dtype=torch.int8, device="cuda")
    fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(5):
        flush.zero_()
        fn()
    end.record()
    torch.cuda.synchronize()
    estimate_ms = max(start.elapsed_time(end) / 5, 1e-4)
    n_warmup = max(1, int(warmup / estimate_ms))
    n_repeat = max(1, int(rep / estimate_ms))
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(n_repeat)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(n_repeat)]
    for _ in range(n_warmup):
        fn()
    for i in range(n_repeat):
        if grad_to_none is not None:
            for x in grad_to_none:
                x.grad = None
        flush.zero_()
        starts[i].record()
        fn()
        ends[i].record()
    torch.cuda.synchronize()
    times = [s.elapsed_time(e) for s, e in zip(starts, ends)]
    return _summarize(times, quantiles, return_mode)


def do_bench(fn, warmup=25, rep=100, grad_to_none=None, quantiles=None, return_mode="mean", device=None):
    """Time `fn()` in ms: estimate one call, then run ~`warmup` ms untimed and ~`rep` ms timed.

    On a GPU (torch with CUDA initialized, or `device="cuda"`) each run is timed with CUDA events
    after flushing L2; otherwise with the host clock (`device="cpu"` forces it).
    `quantiles` (e.g. [0.5, 0.2, 0.8]) returns those quantiles instead; `return_mode` is one of
    "min", "max", "mean", "median", "all". `grad_to_none`: tensors whose .grad is reset each run.
    """
    if return_mode not in ("min", "max", "mean", "median", "all"):
        raise ValueError(f"return_mode must be min, max, mean, median or all, not {return_mode!r}")
    if device not in (None, "cpu", "cuda"):
        raise ValueError(f"device must be None (automatic), 'cpu' or 'cuda', not {device!r}")
    if device == "cuda" or (device is None and _cuda_in_use()):
        return _do_bench_cuda(fn, warmup, rep, grad_to_none, quantiles, return_mode)
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
    return _summarize(times, quantiles, return_mode)


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
        reporter = _progress_reporter(progress)
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
                    fig = plot_sweep(sweep)
                    self.figures.append(fig)
                    if save_path:
                        import os

                        fig.savefig(os.path.join(save_path, f"{bench.plot_name}.png"))
                    if show_plots:
                        _show_figure(fig)
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


def _progress_reporter(progress):
    """A callable(done, total, text) with .close(), or None: an HTML progress bar in a notebook,
    a rewritten text line on a terminal's stderr."""
    if progress is False:
        return None
    in_notebook = _in_notebook()
    if progress is None and not (in_notebook or sys.stderr.isatty()):
        return None
    if in_notebook:
        return _NotebookProgress()
    return _TextProgress()


def _in_notebook() -> bool:
    """True under an IPython kernel (Jupyter, VS Code, Colab): a shell with rich display, not
    a terminal IPython or plain Python."""
    ipython = sys.modules.get("IPython")
    if ipython is None:
        return False
    shell = ipython.get_ipython()
    if shell is None:
        return False
    return getattr(shell, "kernel", None) is not None or type(shell).__name__ == "ZMQInteractiveShell"


class _TextProgress:
    def __init__(self, stream=None):
        self.stream = stream or sys.stderr
        self.width = 0

    def __call__(self, done, total, text):
        line = f"[{done}/{total}] {text}"
        self.stream.write("\r" + line.ljust(self.width))
        self.width = len(line)
        self.stream.flush()

    def close(self):
        self.stream.write("\n")
        self.stream.flush()


class _NotebookProgress:
    """An HTML progress bar in the cell's output, updated in place and cleared at the end (a
    display handle rather than a widget, so an executed notebook keeps no dangling widget)."""

    def __init__(self):
        from IPython.display import HTML, display

        self._html = HTML
        self.handle = display(HTML(""), display_id=True)

    def __call__(self, done, total, text):
        import html

        self.handle.update(self._html(
            f"<progress value='{done}' max='{max(total, 1)}' style='width:240px'></progress> "
            f"<span style='font-family:monospace'>[{done}/{total}] {html.escape(text)}</span>"
        ))  # fmt: skip

    def close(self):
        self.handle.update(self._html(""))


_COPY_BANDWIDTH: dict[str, float] = {}


def copy_bandwidth(device: str | None = None) -> float:
    """The measured copy bandwidth in GB/s (bytes read + written per second), cached per process.

    On a GPU (torch with CUDA in use, or `device="cuda"`): a device-to-device copy of 256 MB timed
    with CUDA events; on the CPU: numpy copying a 64 MB array.
    """
    device = device or ("cuda" if _cuda_in_use() else "cpu")
    if device in _COPY_BANDWIDTH:
        return _COPY_BANDWIDTH[device]
    if device == "cuda":
        import torch

        src = torch.empty(256 * 2**20, dtype=torch.uint8, device="cuda")
        dst = torch.empty_like(src)
        ms = do_bench(lambda: dst.copy_(src), warmup=5, rep=20, return_mode="median", device="cuda")
        nbytes = 2 * src.numel()
    else:
        src = np.ones(8 * 2**20, dtype=np.float64)  # 64 MB: well beyond the CPU caches
        dst = np.empty_like(src)
        ms = do_bench(lambda: np.copyto(dst, src), warmup=5, rep=30, return_mode="median", device="cpu")
        nbytes = 2 * src.nbytes
    _COPY_BANDWIDTH[device] = nbytes / (ms * 1e-3) / 1e9
    return _COPY_BANDWIDTH[device]


def plot_sweep(sweep: SweepResult, roofline: bool | None = None):
    """A matplotlib Figure of one sweep: a line per provider (shaded between its low and high
    values), a roofline at the copy bandwidth when the y label is GB/s, and, with a torch line,
    a lower panel with each line's ratio to torch. matplotlib is imported here, not before."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    bench = sweep.bench
    ref = sweep.torch_index()
    fig = Figure(figsize=(7, 5.5 if ref is not None else 4.2), layout="constrained")
    FigureCanvasAgg(fig)
    if ref is not None:
        ax, ax_ratio = fig.subplots(2, 1, sharex=True, gridspec_kw={"height_ratios": [3, 1]})
    else:
        ax, ax_ratio = fig.subplots(1, 1), None
    xs = [v[0][0] for v in sweep.values]
    for i, name in enumerate(bench.line_names):
        ys = [float(row[i]) for _, row in sweep.values]
        style = {}
        if bench.styles and i < len(bench.styles):
            color, *rest = bench.styles[i]
            style = {"color": color, "linestyle": rest[0] if rest else "-"}
        (line,) = ax.plot(xs, ys, marker="o", markersize=3, label=str(name), **style)
        lo = [float(low[i]) for low in sweep.lows]
        hi = [float(high[i]) for high in sweep.highs]
        if lo != ys or hi != ys:
            ax.fill_between(xs, lo, hi, alpha=0.2, color=line.get_color())
        if ax_ratio is not None and i != ref:
            ratio = [y / float(row[ref]) if float(row[ref]) else float("nan") for y, (_, row) in zip(ys, sweep.values)]
            ax_ratio.plot(xs, ratio, marker="o", markersize=3, color=line.get_color(), **({"linestyle": style["linestyle"]} if style else {}))
    if roofline is None:
        roofline = "gb/s" in str(bench.ylabel).lower()
    if roofline:
        bw = copy_bandwidth()
        ax.axhline(bw, color="#555", linestyle="--", linewidth=1, label=f"copy bandwidth {bw:,.0f} GB/s")
    ax.set_ylabel(bench.ylabel)
    ax.set_title(bench.plot_name)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    if bench.y_log:
        ax.set_yscale("log")
    bottom = ax_ratio if ax_ratio is not None else ax
    if ax_ratio is not None:
        ax_ratio.axhline(1.0, color="#555", linewidth=0.8)
        ax_ratio.set_ylabel(f"/ {bench.line_names[ref]}")
        ax_ratio.grid(alpha=0.3)
    if bench.x_log:
        bottom.set_xscale("log", base=2)
    bottom.set_xlabel(bench.xlabel or ", ".join(bench.x_names))
    return fig


def _show_figure(fig) -> None:
    """Display the figure inline as a PNG in a notebook (any IPython kernel), whatever the
    matplotlib backend (no `%matplotlib inline` needed), then close it in pyplot so the inline
    backend does not draw it a second time. In a terminal: nothing (the table is printed, and
    `save_path` writes the PNG)."""
    if not _in_notebook():
        return
    import io

    from IPython.display import display

    out = io.BytesIO()
    fig.savefig(out, format="png", dpi=100)
    title = fig.axes[0].get_title() if fig.axes else ""
    display({"image/png": out.getvalue(), "text/plain": f"<figure {title}>"}, raw=True)
    pyplot = sys.modules.get("matplotlib.pyplot")
    if pyplot is not None:  # only a pyplot-made figure is registered there; ours is a no-op
        pyplot.close(fig)


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


__all__ = ["assert_close", "do_bench", "Benchmark", "perf_report", "Mark", "format_table", "copy_bandwidth",
           "plot_sweep"]  # fmt: skip
