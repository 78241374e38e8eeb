"""Where a sweep shows its progress: an HTML bar in a notebook, a rewritten line on a terminal."""

from __future__ import annotations

import sys


def progress_reporter(progress):
    """A callable(done, total, text) with .close(), or None: an HTML progress bar in a notebook,
    a rewritten text line on a terminal's stderr."""
    if progress is False:
        return None
    notebook = in_notebook()
    if progress is None and not (notebook or sys.stderr.isatty()):
        return None
    if notebook:
        return NotebookProgress()
    return TextProgress()


def in_notebook() -> bool:
    """True under an IPython kernel (Jupyter, VS Code, Colab): a shell with rich display, not
    a terminal IPython or plain Python."""
    ipython = sys.modules.get("IPython")
    if ipython is None:
        return False
    shell = ipython.get_ipython()
    if shell is None:
        return False
    return getattr(shell, "kernel", None) is not None or type(shell).__name__ == "ZMQInteractiveShell"


class TextProgress:
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


class NotebookProgress:
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
