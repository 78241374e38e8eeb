"""How an autotuning run shows itself: a live table in a notebook, progress lines in a script,
and a plot afterwards. The autotuner (runtime/autotuner.py) hands over its `ConfigTiming`
rows; nothing here runs a kernel.

The notebook table is HTML behind a display handle, rewritten as each config compiles and is
timed (config, compile time, kernel time, registers, spills, shared memory, occupancy; the best
row highlighted; a progress bar). Configs timed on a pool of devices (runtime/bench_pool.py) get
a device column and a best row per device model. It is plain HTML, not a widget, so a saved
notebook keeps the final table.
"""

from __future__ import annotations

import html
import sys

from kernellab.testing.progress import in_notebook

_COLUMNS = ("config", "status", "compile", "kernel time", "registers", "spills", "shared", "occupancy")


def _on_devices(rows) -> bool:
    """Whether the rows were timed on a pool of devices (the table then names each one)."""
    return any(r.device is not None for r in rows)


def _columns(where: str, rows) -> tuple[str, ...]:
    columns = ["interpreter time" if c == "kernel time" and where == "interpreter" else c for c in _COLUMNS]
    if _on_devices(rows):
        columns.insert(columns.index("status"), "device")
    return tuple(columns)


def _ms(value) -> str:
    return "" if value is None else f"{value:.3f} ms"


def _seconds(value) -> str:
    return "" if value is None else f"{value:.2f} s"


def row_cells(row, device: bool = False) -> list[str]:
    """One ConfigTiming as the table's text cells (`device`: with the device that timed it)."""
    occupancy = row.occupancy
    occ = "" if occupancy is None else f"{occupancy['occupancy']:.0%} ({occupancy['limited_by']})"
    where = [_device_cell(row)] if device else []
    return [
        str(row.config), *where, row.status, _seconds(row.compile_seconds), _ms(row.kernel_ms),
        "" if row.registers is None else str(row.registers),
        "" if row.spills is None else str(row.spills),
        "" if row.shared is None else f"{row.shared} B", occ,
    ]  # fmt: skip


def _device_cell(row) -> str:
    if row.device is None:
        return row.model or ""
    return f"{row.device} ({row.model})" if row.model and row.model != "host" else row.device


def best_per_model(rows) -> dict:
    """Device model (None: the one device of an in-process run) → its fastest timed row.
    Timings compare only within a model, so each model gets its own best."""
    best: dict = {}
    for row in rows:
        if row.kernel_ms is not None and (row.model not in best or row.kernel_ms < best[row.model].kernel_ms):
            best[row.model] = row
    return best


def _best_rows(rows) -> list:
    return list(best_per_model(rows).values())


def _summary(best: list) -> str:
    if len(best) == 1:
        return f"best: {best[0].config} at {best[0].kernel_ms:.3f} ms"
    return "; ".join(f"best on {r.model}: {r.config} at {r.kernel_ms:.3f} ms" for r in best)


def _heading(name: str, rows, where: str, resources_from: str | None) -> str:
    time_kind = "interpreter times: they rank nothing a GPU would" if where == "interpreter" else f"times on the {where}"
    parts = [f"autotuning {name}: {len(rows)} configs, {time_kind}"]
    if resources_from:
        parts.append(f"compile time, registers, spills, shared memory and occupancy of each config's "
                     f"{resources_from} compile (made without a GPU)")
    return "; ".join(parts)


def table_html(name: str, rows, where: str, resources_from: str | None = None, done: bool = False) -> str:
    """The tuning table as self-contained HTML (inline styles only)."""
    best = _best_rows(rows) if done else []
    finished = sum(r.kernel_ms is not None or r.status.startswith("failed") for r in rows)
    cell = "padding:2px 10px 2px 0;border-bottom:1px solid #d0d7de;text-align:left"
    head = "".join(f"<th style='{cell};color:#656d76;font-weight:normal'>{c}</th>" for c in _columns(where, rows))
    body = []
    device = _on_devices(rows)
    for row in rows:
        style = "background:#dafbe1;font-weight:600" if any(row is b for b in best) else ""
        cells = "".join(f"<td style='{cell};font-family:monospace'>{html.escape(c)}</td>"
                        for c in row_cells(row, device))  # fmt: skip
        body.append(f"<tr style='{style}'>{cells}</tr>")
    bar = (
        f"<progress value='{finished}' max='{max(len(rows), 1)}' style='width:240px'></progress> "
        f"<span style='font-family:monospace'>{finished}/{len(rows)} timed</span>"
    )
    summary = html.escape(_summary(best)) if best else ("no config ran" if done else bar)
    return (
        "<div class='kernellab-autotune' style='font-family:sans-serif;font-size:13px'>"
        f"<div style='color:#656d76'>{html.escape(_heading(name, rows, where, resources_from))}</div>"
        f"<table style='border-collapse:collapse;font-size:12px'><thead><tr>{head}</tr></thead>"
        f"<tbody>{''.join(body)}</tbody></table><div>{summary}</div></div>"
    )


def table_text(name: str, rows, where: str, resources_from: str | None = None) -> str:
    """The tuning table as aligned text, the best row marked with '*'."""
    best = _best_rows(rows)
    device = _on_devices(rows)
    lines = [[*_columns(where, rows)]] + [row_cells(r, device) for r in rows]
    widths = [max(len(line[i]) for line in lines) for i in range(len(lines[0]))]
    out = [_heading(name, rows, where, resources_from)]
    for i, line in enumerate(lines):
        mark = "*" if i and any(rows[i - 1] is b for b in best) else " "
        out.append(mark + " " + "  ".join(c.ljust(w) for c, w in zip(line, widths)).rstrip())
    if len(best) > 1:
        out.append(_summary(best))
    return "\n".join(out)


class NotebookTable:
    """The live table in the running cell's output, rewritten in place."""

    def __init__(self, name: str, where: str, resources_from: str | None):
        from IPython.display import HTML, display

        self._html = HTML
        self.name, self.where, self.resources_from = name, where, resources_from
        self.handle = display(HTML(""), display_id=True)

    def update(self, rows, done: bool = False) -> None:
        self.handle.update(self._html(table_html(self.name, rows, self.where, self.resources_from, done)))


class TextProgress:
    """One line per event on stderr (a script's log), then the table at the end."""

    def __init__(self, name: str, where: str, resources_from: str | None, stream=None):
        self.name, self.where, self.resources_from = name, where, resources_from
        self.stream = stream or sys.stderr
        self._said: dict[int, str] = {}

    def update(self, rows, done: bool = False) -> None:
        for i, row in enumerate(rows):
            if self._said.get(i) != row.status:
                self._said[i] = row.status
                timing = f", {row.kernel_ms:.3f} ms" if row.kernel_ms is not None else ""
                device = f" on {_device_cell(row)}" if row.device is not None else ""
                self.stream.write(f"autotune {self.name} [{i + 1}/{len(rows)}] {row.config}: "
                                  f"{row.status}{timing}{device}\n")  # fmt: skip
        if done:
            self.stream.write(table_text(self.name, rows, self.where, self.resources_from) + "\n")
        self.stream.flush()


def tuning_reporter(progress, name: str, where: str, resources_from: str | None):
    """Where a tuning run reports: `progress` None picks a live table in a notebook, text on
    a terminal's stderr, nothing otherwise (a library call, a test); True forces text outside
    a notebook; False shows nothing; an object with `update(rows, done)` is used as is."""
    if progress is False:
        return None
    if progress is not None and progress is not True:
        return progress
    if in_notebook():
        return NotebookTable(name, where, resources_from)
    if progress is True or sys.stderr.isatty():
        return TextProgress(name, where, resources_from)
    return None


def plot_tuning(rows, name: str = "", where: str = "GPU", ax=None):
    """A bar per config: its kernel time (the best in green) and, where known, its occupancy
    written on the bar. Returns the matplotlib Figure (Agg; displays in a notebook)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    timed = [r for r in rows if r.kernel_ms is not None]
    if not timed:
        raise ValueError("no config was timed: run the kernel once to tune it")
    fig = None
    if ax is None:
        fig = Figure(figsize=(8, 0.45 * len(timed) + 1.2), layout="constrained")
        FigureCanvasAgg(fig)
        ax = fig.subplots()
    best = _best_rows(timed)
    labels = [str(r.config) + (f" · {r.model}" if len(best) > 1 else "") for r in timed]
    bars = ax.barh(range(len(timed)), [r.kernel_ms for r in timed],
                   color=["#2da44e" if any(r is b for b in best) else "#8c959f" for r in timed])  # fmt: skip
    for bar, row in zip(bars, timed):
        if row.occupancy is not None:
            ax.text(bar.get_width(), bar.get_y() + bar.get_height() / 2,
                    f" occupancy {row.occupancy['occupancy']:.0%}", va="center", fontsize=8)  # fmt: skip
    ax.set_yticks(range(len(timed)), labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("interpreter time (ms): not GPU performance" if where == "interpreter" else "kernel time (ms)")
    ax.set_title(f"autotuning {name}".strip(), fontsize=10)
    return fig if fig is not None else ax.figure


__all__ = ["NotebookTable", "TextProgress", "best_per_model", "plot_tuning", "row_cells", "table_html", "table_text", "tuning_reporter"]
