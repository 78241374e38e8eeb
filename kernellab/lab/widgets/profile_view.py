"""A profile (kernellab.profiler) as a table and a flame chart, live and in a saved notebook.

Pure functions of a profile record (the JSON `finalize()` writes; schema in docs/profiler.md):
- `profile_rows(record)`: one row per scope or kernel: depth, name, count, time, share of the
  total, and the throughput each one's metrics give (TFLOP/s, GB/s).
- `flame_boxes(record)`: the flame chart's boxes (an icicle: the root on top, each node's
  children side by side under it, as wide as their time).

`ProfileView` draws them (HTML table + matplotlib chart on Agg) and displays as one static
`text/html` block, so a saved notebook, nbconvert and GitHub show the same picture. Times read
"GPU time" for CUDA-event measurements and "interpreter time" for wall-clock ones.
"""

from __future__ import annotations

import html
from dataclasses import dataclass

from kernellab.lab.widgets.base import figure_png, new_figure, snapshot_html
from kernellab.runtime.profiler import THROUGHPUT, walk
from kernellab.testing.tables import format_table

CLOCK_LABEL = {"cuda": "GPU time", "interpreter": "interpreter time", None: "not measured"}
KIND_COLOUR = {"scope": "#8fb3d9", "kernel": "#f2a65a"}


def derived_columns(record: dict) -> list[str]:
    """The throughput columns some node has, in THROUGHPUT's order."""
    present = {name for _, _, node in walk(record) for name in node["derived"]}
    return [name for name in dict.fromkeys(THROUGHPUT.values()) if name in present]


def profile_rows(record: dict) -> list[dict]:
    """One row per node below the root, depth first: what the table shows."""
    total = record["tree"]["time_ns"] or 1
    return [
        {
            "depth": depth,
            "path": "/".join(path),
            "name": node["name"],
            "kind": node["kind"],
            "count": node["count"],
            "time_ms": node["time_ns"] / 1e6,
            "share": node["time_ns"] / total,
            "clock": node["clock"],
            **node["derived"],
        }
        for depth, path, node in walk(record)
    ]


@dataclass(frozen=True)
class Box:
    x: float  # start, in ns from the left edge
    width: float  # ns
    depth: int  # 0 = the root row
    name: str
    kind: str
    time_ns: int


def flame_boxes(record: dict) -> list[Box]:
    """The chart's boxes: children packed left to right under their parent, each as wide as its
    time (squeezed to fit when children measured more than their parent's span)."""
    root = record["tree"]
    boxes = [Box(0.0, float(root["time_ns"]), 0, record["name"], "root", root["time_ns"])]

    def place(node, x, width, depth):
        used = sum(c["time_ns"] for c in node["children"])
        scale = width / used if used > width and used else 1.0
        for child in node["children"]:
            w = child["time_ns"] * scale
            boxes.append(Box(x, w, depth, child["name"], child["kind"], child["time_ns"]))
            place(child, x, w, depth + 1)
            x += w

    place(root, 0.0, float(root["time_ns"]), 1)
    return boxes


def caption(record: dict) -> str:
    clock = record["clock"]
    if clock == "cuda":
        where = f"GPU time from CUDA events on {record['device'] or 'the GPU'}"
    elif clock == "interpreter":
        where = "interpreter time: wall clock of kernels run by the numpy interpreter (no GPU)"
    else:
        where = "nothing measured yet"
    total = record["tree"]["time_ns"] / 1e6
    return f"profile {record['name']!r}: {total:.3f} ms in all; {where}"


def _text_colour(background) -> str:
    """Black on light boxes, white on dark ones (the viridis end of the scale)."""
    from matplotlib.colors import to_rgb

    r, g, b = to_rgb(background)
    return "black" if 0.299 * r + 0.587 * g + 0.114 * b > 0.5 else "white"


def _format(value) -> str:
    return f"{value:,.3f}" if isinstance(value, float) else str(value)


class ProfileView:
    """A profile record shown as a table and a flame chart."""

    def __init__(self, record: dict, metric: str | None = None):
        self.record = record
        self.columns = derived_columns(record)
        if metric is not None and metric not in THROUGHPUT.values():
            choices = sorted(set(THROUGHPUT.values()))
            raise ValueError(f"metric {metric!r}: choose one of {choices}")
        self.metric = metric or (self.columns[0] if self.columns else None)
        self.rows = profile_rows(record)
        self._png = None

    def _header(self) -> list[str]:
        clock = CLOCK_LABEL[self.record["clock"]]
        return ["scope / kernel", "count", f"{clock} (ms)", "share", *self.columns]

    def _cells(self, row: dict) -> list:
        name = "  " * row["depth"] + row["name"] + (" [kernel]" if row["kind"] == "kernel" else "")
        rates = [row.get(c, "") for c in self.columns]
        return [name, row["count"], row["time_ms"], f"{row['share']:.1%}", *rates]

    def text(self) -> str:
        table = format_table(self._header(), [self._cells(r) for r in self.rows])
        return f"{caption(self.record)}\n{table}"

    def table_html(self) -> str:
        th = "<th style='text-align:left;padding:2px 8px'>"
        head = "".join(f"{th}{html.escape(h)}</th>" for h in self._header())
        body = []
        for row in self.rows:
            cells = self._cells(row)
            name = html.escape(cells[0].strip())
            pad = 12 * row["depth"]
            first = f"<td style='padding:2px 8px 2px {8 + pad}px'>{name}</td>"
            rest = "".join(
                f"<td style='text-align:right;padding:2px 8px'>{html.escape(_format(c))}</td>"
                for c in cells[1:]
            )
            body.append(f"<tr>{first}{rest}</tr>")
        return (
            "<table class='kernellab-profile' style='border-collapse:collapse;font-size:12px'>"
            f"<thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"
        )

    def draw(self, fig) -> None:
        """The flame chart: one row per depth; kernels orange, scopes blue (or coloured by the
        chosen throughput metric where nodes have it)."""
        boxes = flame_boxes(self.record)
        ax = fig.add_subplot(1, 1, 1)
        total = boxes[0].width or 1.0
        # boxes after the root come in the rows' order (both depth first)
        rates = [None] + [r.get(self.metric) if self.metric else None for r in self.rows]
        values = [v for v in rates if v]
        cmap = None
        if values:
            from matplotlib import cm, colors

            norm = colors.Normalize(0, max(values))
            cmap = cm.ScalarMappable(norm, "viridis")
            fig.colorbar(cmap, ax=ax, label=self.metric, fraction=0.04)
        for box, rate in zip(boxes, rates):
            colour = KIND_COLOUR.get(box.kind, "#cccccc")
            if cmap is not None and rate:
                colour = cmap.to_rgba(rate)
            left, width = box.x / 1e6, box.width / 1e6
            ax.barh(-box.depth, width, left=left, height=0.9, color=colour, edgecolor="white")
            if box.width / total > 0.08:
                ax.text(left + width / 2, -box.depth, box.name, ha="center", va="center",
                        fontsize=8, clip_on=True, color=_text_colour(colour))  # fmt: skip
        depth = max(b.depth for b in boxes)
        ax.set_ylim(-depth - 0.6, 0.6)
        ax.set_yticks([])
        ax.set_xlim(0, total / 1e6)
        ax.set_xlabel(f"{CLOCK_LABEL[self.record['clock']]} (ms)")
        ax.set_title(f"{self.record['name']}: flame chart")

    @property
    def png(self) -> bytes:
        if self._png is None:
            depth = max((r["depth"] for r in self.rows), default=0)
            fig = new_figure(9.0, 1.2 + 0.45 * (depth + 2))
            self.draw(fig)
            self._png = figure_png(fig)
        return self._png

    def snapshot(self) -> str:
        """Static HTML: the table above the chart, with the caption."""
        return self.table_html() + snapshot_html(self.png, caption(self.record))

    def _repr_mimebundle_(self, include=None, exclude=None):
        return {"text/plain": self.text(), "text/html": self.snapshot()}

    def save(self, path: str) -> None:
        """Write the flame chart as PNG."""
        with open(path, "wb") as f:
            f.write(self.png)


__all__ = ["ProfileView", "profile_rows", "flame_boxes", "derived_columns", "caption"]
