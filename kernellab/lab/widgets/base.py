"""What every explorer shares: controls → pure drawing data → a matplotlib picture → a PNG.

An explorer is a small object, not an ipywidgets subclass: it holds its `controls` (ipywidgets),
computes `data` from their values with a pure function of its module (testable without a
display), draws `data` on a matplotlib Figure (Agg, never pyplot, so no global backend state),
and shows the PNG in an `ipywidgets.Image` (drawn once the explorer is displayed, then on every
change; before that only the data is recomputed). Displaying it gives the live widget plus a
`text/html` snapshot (the same PNG inline, with a caption) that survives a saved notebook,
nbconvert without widget state, GitHub and untrusted JupyterLab.

The saved snapshot follows the controls without touching the live view: the explorer's root
widget (`ExplorerBox`, a VBox) carries the current snapshot HTML in a synced trait,
`_kl_snapshot`, set at display and again a second after the controls last moved (one comm
message; the view ignores it, so nothing is re-rendered). When JupyterLab saves the notebook,
the extension (extension/src/snapshots.ts) writes that trait into the output's saved `text/html`,
so the file holds the last state the user saw, not the first. Without the extension the file
keeps the snapshot taken at display.
"""

from __future__ import annotations

import asyncio
import base64
import html
import io

SNAPSHOT_DELAY_S = 1.0  # how long the controls rest before the snapshot trait is refreshed
SNAPSHOT_TRAIT = "_kl_snapshot"  # the root widget's synced trait the extension saves


def new_figure(width: float, height: float):
    """A matplotlib Figure on the Agg canvas, independent of pyplot's current backend."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def figure_png(fig) -> bytes:
    """The figure rendered as PNG bytes."""
    out = io.BytesIO()
    fig.savefig(out, format="png", dpi=fig.dpi)
    return out.getvalue()


def snapshot_html(png: bytes, caption: str, title: str = "") -> str:
    """Self-contained HTML: the picture as a data-URI <img> and a caption (inline styles only)."""
    data = base64.b64encode(png).decode("ascii")
    head = f"<div style='font-weight:bold'>{html.escape(title)}</div>" if title else ""
    return (
        "<div class='kernellab-snapshot' style='font-family:sans-serif;font-size:13px'>"
        f"{head}<img src='data:image/png;base64,{data}' alt='{html.escape(title or caption)}' "
        "style='max-width:100%'/>"
        f"<div style='color:#444;white-space:pre-wrap'>{html.escape(caption)}</div></div>"
    )


def is_power_of_two(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def powers_of_two(low: int, high: int) -> list[int]:
    """[low, 2*low, ..., high] for powers of two low <= high."""
    values, v = [], low
    while v <= high:
        values.append(v)
        v *= 2
    return values


_BOX_CLASS = None


def explorer_box(children):
    """The explorer's root widget: an ipywidgets VBox with one more synced trait,
    `_kl_snapshot`, the current snapshot HTML (the front end's VBoxModel keeps it as model state
    and its view never reads it)."""
    global _BOX_CLASS
    if _BOX_CLASS is None:
        import ipywidgets as w
        from traitlets import Unicode

        class ExplorerBox(w.VBox):
            _kl_snapshot = Unicode("", help="the explorer's current static snapshot (HTML)").tag(
                sync=True
            )

        _BOX_CLASS = ExplorerBox
    return _BOX_CLASS(children)


class Explorer:
    """Base of the explorers: subclasses define `compute(**values)`, `draw(data, fig)`,
    `caption(data)`, `title` and `figsize(data)`, and build `self.controls` before calling
    `super().__init__()`."""

    title = "kernellab explorer"

    def __init__(self, controls: dict, layout_rows: list[list[str]] | None = None):
        import ipywidgets as w

        self.controls = dict(controls)
        self.image = w.Image(format="png")
        self.image.add_class("kl-explorer-image")  # the JupyterLab extension's dark-theme rule
        self.status = w.HTML()
        rows = layout_rows or [list(self.controls)]
        boxes = [w.HBox([self.controls[name] for name in row]) for row in rows if row]
        self.widget = explorer_box([*boxes, self.image, self.status])
        self.data = None
        self._png = b""
        self._stale = True
        self._shown = False  # the picture is drawn once the explorer is displayed (or asked for)
        self._pending = None  # the scheduled snapshot trait refresh (an asyncio TimerHandle)
        self.error: str | None = None
        for control in self.controls.values():
            control.observe(self._on_change, names="value")
        self.refresh()

    # -- to implement -------------------------------------------------------------------------
    def compute(self, **values):
        raise NotImplementedError

    def draw(self, data, fig) -> None:
        raise NotImplementedError

    def caption(self, data) -> str:
        return ""

    def figsize(self, data) -> tuple[float, float]:
        return (8.0, 5.0)

    # -- machinery -----------------------------------------------------------------------------
    def values(self) -> dict:
        """The controls' current values, by control name."""
        return {name: control.value for name, control in self.controls.items()}

    def _on_change(self, change) -> None:
        self.refresh()

    def refresh(self) -> None:
        """Recompute the drawing data from the controls; redraw if the widget is on screen."""
        try:
            data = self.compute(**self.values())
        except ValueError as error:  # an invalid combination: say why, keep the last picture
            self.error = str(error)
            self.status.value = f"<span style='color:#b00'>{html.escape(self.error)}</span>"
            return
        self.error = None
        self.data = data
        self._stale = True
        self.status.value = (
            f"<span style='white-space:pre-wrap'>{html.escape(self.caption(data))}</span>"
        )
        if self._shown:
            self.render()
            self._schedule_snapshot()

    def render(self) -> bytes:
        """Draw the current data (matplotlib, Agg) into the PNG the widget and snapshot show."""
        fig = new_figure(*self.figsize(self.data))
        self.draw(self.data, fig)
        self._png = figure_png(fig)
        self.image.value = self._png
        self._stale = False
        return self._png

    @property
    def png(self) -> bytes:
        """The picture of the current state as PNG (drawn now if the data changed since)."""
        if self._stale and self.data is not None:
            self.render()
        return self._png

    def snapshot(self) -> str:
        """The static HTML picture of the current state."""
        return snapshot_html(
            self.png, self.caption(self.data) if self.data is not None else "", self.title
        )

    def _repr_mimebundle_(self, include=None, exclude=None):
        self._shown = True  # from now on every change redraws the live picture
        bundle = dict(self.widget._repr_mimebundle_() or {})
        first = self.caption(self.data).splitlines()[0] if self.data is not None else ""
        bundle["text/plain"] = f"<{self.title}: {first}>"
        bundle["text/html"] = self.snapshot()
        self._cancel_pending()
        setattr(self.widget, SNAPSHOT_TRAIT, bundle["text/html"])
        return bundle

    def _schedule_snapshot(self) -> None:
        """Refresh the snapshot trait once the controls rest (at once without an event loop: a
        script, a test). Only the trait changes: the displayed output is never rewritten."""
        self._cancel_pending()
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self._update_snapshot()
            return
        self._pending = loop.call_later(SNAPSHOT_DELAY_S, self._update_snapshot)

    def _cancel_pending(self) -> None:
        if self._pending is not None:
            self._pending.cancel()
            self._pending = None

    def _update_snapshot(self) -> None:
        self._pending = None
        setattr(self.widget, SNAPSHOT_TRAIT, self.snapshot())

    def save(self, path: str) -> None:
        """Write the current picture as PNG."""
        with open(path, "wb") as f:
            f.write(self.png)
