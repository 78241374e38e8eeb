"""`kernellab.profiler`: Triton's profiler (`triton.profiler`, "proton") on kernellab.

    import kernellab.profiler as proton

    proton.start("matmul", hook="triton")
    with proton.scope(f"matmul [M={M}]", {"flops": 2 * M * N * K}):
        matmul(a, b)
    proton.finalize()          # writes matmul.json (proton writes matmul.hatchet)
    proton.show()              # in a notebook: a table and a flame chart

It measures per-scope GPU time with CUDA events (kernels, torch and cuBLAS work inside a scope)
and each kernellab launch's own time; without a GPU, interpreter wall-clock time, labelled so.
The measuring core is `kernellab.runtime.profiler`; the display is
`kernellab.lab.widgets.profile_view` (loaded only by `show`); `kernellab.profiler.viewer` has
proton-viewer's `parse` and `print_tree` for scripts. File schema: docs/profiler.md.
"""

from __future__ import annotations

from kernellab.runtime.profiler import *  # noqa: F403 (proton's calls, SCHEMA, THROUGHPUT, walk)
from kernellab.runtime.profiler import __all__ as _CORE
from kernellab.runtime.profiler import read


def show(source: int | str | dict | None = None, metric: str | None = None):
    """The profile as a table and a flame chart (a display object for notebooks): of a running
    session (id), a file finalize wrote (path), a record, or (None) the current or last one.
    `metric` picks the derived column the chart colours by (e.g. "tflop/s")."""
    from kernellab.lab.widgets.profile_view import ProfileView

    record = source if isinstance(source, dict) else read(source)
    return ProfileView(record, metric=metric)


__all__ = [*_CORE, "show"]
