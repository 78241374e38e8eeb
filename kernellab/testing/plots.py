"""Plots of a sweep with matplotlib (imported only when a plot is asked for), shown inline in a
notebook."""

from __future__ import annotations

import sys

from kernellab.testing import progress
from kernellab.testing.results import SweepResult
from kernellab.testing.timing import copy_bandwidth


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


def show_figure(fig) -> None:
    """Display the figure inline as a PNG in a notebook (any IPython kernel), whatever the
    matplotlib backend (no `%matplotlib inline` needed), then close it in pyplot so the inline
    backend does not draw it a second time. In a terminal: nothing (the table is printed, and
    `save_path` writes the PNG)."""
    if not progress.in_notebook():
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
