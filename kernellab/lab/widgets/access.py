"""Memory-access view: which elements of an argument each program loads and stores.

    kl.lab.access_view(add_kernel, (4,), x, y, out, n, BLOCK=256)   # runs it on the interpreter
    kl.lab.access_view(trace, shapes={"x_ptr": (64, 64)})            # from an AccessTrace

The kernel runs once on the interpreter with an `AccessTrace` (on copies of the array
arguments, so your arrays are untouched); every load/store records, per program, the element
indices its lanes touched and which lanes the mask switched off. The picture draws one
argument's buffer (a 1-D strip, or 2-D for 2-D arrays or a given shape): with "all programs"
each element is coloured by the program that touched it; with one program, its loads (blue),
stores (orange) or both (purple). An out-of-bounds access stops the run: the view shows the
interpreter's message (source line, program, element index) and what ran before it.

Pure function: `access_summary(trace, arg, ...)` computes the drawing data.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from kernellab.lab.widgets.base import Explorer

ALL = "all programs"
EVERY_SITE = -1  # the access menu's "every load/store" (a menu value of None shows blank)


@dataclass
class SiteStats:
    site: int
    kind: str
    location: str
    programs: int
    lanes: int  # lane slots over the selected programs
    active: int  # lanes that accessed this argument
    masked: int  # lanes the mask (or another buffer) took


@dataclass
class AccessPicture:
    arg: str
    shape: tuple[int, ...]  # display shape (1-D strips are wrapped into rows)
    size: int
    loads: np.ndarray  # accesses per element, display shape
    stores: np.ndarray
    first_program: np.ndarray  # linear id of the first program touching each element (-1: none)
    program: tuple[int, int, int] | None
    sites: list[SiteStats] = field(default_factory=list)
    error: str | None = None
    error_program: tuple[int, int, int] | None = None
    error_index: int | None = None
    masked_lanes: np.ndarray | None = None  # masked-off lanes whose address falls on each cell

    @property
    def touched(self) -> int:
        return int(((self.loads + self.stores) > 0).sum())

    @property
    def masked(self) -> int:
        return sum(s.masked for s in self.sites)


def _display_shape(size: int, shape) -> tuple[int, ...]:
    if shape is not None:
        shape = tuple(int(s) for s in shape)
        if int(np.prod(shape)) != size:
            raise ValueError(f"shape {shape} has {int(np.prod(shape))} elements, the buffer {size}")
        if len(shape) == 1:
            return _display_shape(size, None)
        return (int(np.prod(shape[:-1])), shape[-1])
    width = 64 if size >= 64 else max(size, 1)
    return (-(-size // width), width)


def parse_out_of_bounds(message: str) -> tuple[str | None, tuple[int, int, int] | None, int | None]:
    """(argument, program, element index) named in an interpreter OutOfBoundsError message."""
    am = re.search(r"argument '([^']+)'", message)
    pm = re.search(r"program \((\d+), (\d+), (\d+)\)", message)
    im = re.search(r"element index (-?\d+)", message)
    program = tuple(int(g) for g in pm.groups()) if pm else None
    return (am.group(1) if am else None), program, (int(im.group(1)) if im else None)


def access_summary(trace, arg: str, size: int | None = None, shape=None, program=None, site=None,
                   error: str | None = None, grid=None) -> AccessPicture:  # fmt: skip
    """Drawing data for argument `arg`: per element, loads/stores counted over `program` (an
    (x, y, z) tuple, an int x, or None for all) and `site` (an op index, or None for all)."""
    records = [r for r in trace.records if r.arg == arg and (site is None or r.op_index == site)]
    if not records and size is None:
        raise ValueError(f"the trace has no access to {arg!r}; arguments traced: "
                         f"{', '.join(sorted({r.arg for r in trace.records})) or 'none'}")  # fmt: skip
    if size is None:
        size = max(int(r.indices[r.mask].max()) + 1 if r.mask.any() else 1 for r in records)
    if isinstance(program, int):
        program = (program, 0, 0)
    display = _display_shape(size, shape)
    padded = display[0] * display[1]
    loads = np.zeros(size, np.int64)
    stores = np.zeros(size, np.int64)
    masked_at = np.zeros(padded, np.int64)  # masked lanes by the element they would have touched
    first = np.full(size, np.iinfo(np.int64).max, np.int64)
    gx, gy = (grid[0], grid[1]) if grid is not None else (None, None)
    stats: dict[int, SiteStats] = {}
    for r in records:
        rows = np.ones(len(r.programs), bool)
        if program is not None:
            rows = np.all(r.programs == np.asarray(program), axis=1)
        if not rows.any():
            continue
        idx = r.indices[rows].reshape(rows.sum(), -1)
        mask = r.mask[rows].reshape(rows.sum(), -1)
        target = stores if r.kind == "store" else loads
        np.add.at(target, idx[mask], 1)
        off = idx[~mask]
        np.add.at(masked_at, off[(off >= 0) & (off < padded)], 1)
        if gx is None:
            gx = int(r.programs[:, 0].max()) + 1
            gy = int(r.programs[:, 1].max()) + 1
        progs = r.programs[rows]
        linear = (progs[:, 2] * gy + progs[:, 1]) * gx + progs[:, 0]
        lin = np.broadcast_to(linear[:, None], idx.shape)
        np.minimum.at(first, idx[mask], lin[mask])
        s = stats.setdefault(r.op_index, SiteStats(r.op_index, r.kind, r.location, 0, 0, 0, 0))
        s.programs = max(s.programs, int(rows.sum()))
        s.lanes += mask.size
        s.active += int(mask.sum())
    for s in stats.values():
        s.masked = s.lanes - s.active
    first = np.where(first == np.iinfo(np.int64).max, -1, first)

    def fit(a, fill):
        out = np.full(padded, fill, a.dtype)
        out[:size] = a
        return out.reshape(display)

    err_arg, err_program, err_index = parse_out_of_bounds(error) if error else (None, None, None)
    if err_arg != arg:  # the error is about another argument: no marker on this one
        err_index = None
    return AccessPicture(arg, display, size, fit(loads, 0), fit(stores, 0), fit(first, -2),
                         program, sorted(stats.values(), key=lambda s: s.site), error,
                         err_program, err_index, masked_at.reshape(display))  # fmt: skip


def draw_access(pic: AccessPicture, fig) -> None:
    from matplotlib import colormaps
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    ax = fig.subplots()
    rows, cols = pic.shape
    rgb = np.full((rows, cols, 3), 0.93)
    rgb[pic.first_program == -2] = 1.0  # padding past the end of the buffer
    handles = []
    if pic.program is None:
        touched = pic.first_program >= 0
        if touched.any():
            n = int(pic.first_program.max()) + 1
            cmap = colormaps["tab20"] if n > 10 else colormaps["tab10"]
            colors = np.array([cmap(i % cmap.N)[:3] for i in range(max(n, 1))])
            rgb[touched] = colors[pic.first_program[touched]]
            for i in range(min(n, 12)):
                handles.append(Patch(facecolor=colors[i], label=f"program {i}"))
            if n > 12:
                handles.append(Patch(facecolor="white", label=f"... {n} programs (colours repeat)"))
        twice = (pic.loads + pic.stores) > 1
        if twice.any() and rows * cols <= 128 * 128:
            ys, xs = np.nonzero(twice)
            ax.scatter(xs, ys, marker=".", s=4, color="black")
            handles.append(Patch(facecolor="white", label="• touched more than once"))
    else:
        load, store = pic.loads > 0, pic.stores > 0
        rgb[load & ~store] = (0.23, 0.53, 1.0)
        rgb[store & ~load] = (1.0, 0.55, 0.1)
        rgb[load & store] = (0.55, 0.3, 0.75)
        handles += [Patch(facecolor=(0.23, 0.53, 1.0), label="loaded"), Patch(facecolor=(1.0, 0.55, 0.1), label="stored"),
                    Patch(facecolor=(0.55, 0.3, 0.75), label="loaded and stored")]  # fmt: skip
    handles.append(Patch(facecolor=(0.93, 0.93, 0.93), label="not touched"))
    ax.imshow(rgb, interpolation="nearest", aspect="auto")
    if pic.masked_lanes is not None and pic.masked_lanes.any():  # where masked lanes pointed
        ys, xs = np.nonzero(pic.masked_lanes)
        ax.scatter(xs, ys, marker="x", s=max(6, min(40, 4000 / (rows * cols) ** 0.5)), color="#777777",
                   linewidths=0.8)  # fmt: skip
        handles.append(Line2D([], [], marker="x", linestyle="", color="#777777",
                              label="masked lane (nothing accessed)"))  # fmt: skip
    if pic.error_index is not None:
        i = pic.error_index
        r, c = divmod(i, cols) if 0 <= i < rows * cols else (min(max(i // cols, 0), rows - 1), None)
        if c is not None:
            ax.scatter([c], [r], marker="X", s=80, color="red")
        handles.append(Patch(facecolor="red", label=f"out of bounds: element {i}"))
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("column" if pic.shape != (rows, 64) else "element % 64")
    ax.set_ylabel("row" if pic.shape != (rows, 64) else "element // 64")
    who = ALL if pic.program is None else f"program {pic.program}"
    ax.set_title(f"{pic.arg}: {pic.size} elements, {pic.touched} touched, {pic.masked} masked lanes ({who})",
                 fontsize=9)  # fmt: skip
    ax.legend(
        handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False
    )


def _caption(pic: AccessPicture) -> str:
    lines = [
        f"{s.kind} {pic.arg} at {s.location}: {s.programs} program(s), {s.active} lanes accessed, "
        f"{s.masked} masked"
        for s in pic.sites
    ]
    if pic.error:
        lines.append("stopped: " + pic.error)
    return "\n".join(lines) or f"no access to {pic.arg}"


def run_traced(kernel, grid, *args, **meta):
    """Run `kernel` (a @kl.jit kernel or a CompiledKernel) on the interpreter with an AccessTrace.

    Array arguments are copied first. Returns (trace, {arg name: array}, grid as 3 ints,
    error message or None).
    """
    from kernellab.backends.interpreter import AccessTrace
    from kernellab.backends.interpreter.errors import InterpreterError
    from kernellab.backends.arguments import normalize_grid

    args = tuple(np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in args)
    trace = AccessTrace()
    error = None
    if hasattr(kernel, "binder"):  # a JITFunction
        bound = kernel.binder.bind(args, meta)
        ck = kernel.run(*args, warmup=True, **meta)
        if callable(grid):
            grid = grid(kernel.binder.meta(bound))
        grid3 = normalize_grid(grid)
        runtime_args = bound.args
        arrays = {
            n: v for n, v in zip(kernel.binder.names, bound.values) if isinstance(v, np.ndarray)
        }
        launch = lambda: ck.launch(runtime_args, grid3, trace)
    elif hasattr(kernel, "launch") and hasattr(kernel, "arg_names"):  # a CompiledKernel
        grid3 = normalize_grid(grid)
        call_args = args
        if len(args) == len(kernel.param_names) != len(kernel.arg_names):
            call_args = tuple(a for a, n in zip(args, kernel.param_names) if n in kernel.arg_names)
        arrays = {n: v for n, v in zip(kernel.arg_names, call_args) if isinstance(v, np.ndarray)}
        launch = lambda: kernel.run(grid3, *call_args, trace=trace)
    else:
        raise TypeError(f"access_view takes a @kl.jit kernel, a CompiledKernel or an AccessTrace, "
                        f"not {type(kernel).__name__}")  # fmt: skip
    if kernel.__class__.__name__ == "CompiledKernel" and kernel.metadata.get("target") not in (
        None,
        "interpreter",
    ):
        raise ValueError(
            "access views run on the interpreter; compile without target= (or use the @kl.jit kernel)"
        )
    try:
        launch()
    except InterpreterError as e:  # out of bounds, device assertion: show what ran before it
        error = str(e)
    return trace, arrays, tuple(grid3), error


class AccessView(Explorer):
    title = "memory access"

    def __init__(self, trace, arrays: dict | None = None, shapes: dict | None = None, grid=None,
                 error: str | None = None, arg: str | None = None):  # fmt: skip
        import ipywidgets as w

        self.trace = trace
        self.arrays = dict(arrays or {})
        self.shapes = dict(shapes or {})
        self.grid = grid
        self.run_error = error
        names = list(dict.fromkeys([*(r.arg for r in trace.records), *self.arrays]))
        if error and arg is None:
            arg = parse_out_of_bounds(error)[0]
        if not names:
            raise ValueError(
                "nothing was traced: the kernel made no load or store"
                + (f" ({error})" if error else "")
            )
        programs = sorted({tuple(int(v) for v in p) for r in trace.records for p in r.programs})
        sites = sorted({(r.op_index, r.kind, r.location) for r in trace.records})
        controls = {
            "arg": w.Dropdown(options=names, value=arg if arg in names else names[0], description="argument"),
            "program": w.Dropdown(options=[(ALL, ALL)] + [(str(p), p) for p in programs], value=ALL,
                                  description="program"),
            "site": w.Dropdown(options=[("every load/store", EVERY_SITE)] + [(f"{k} at {loc}", i) for i, k, loc in sites],
                               value=EVERY_SITE, description="access", layout=w.Layout(width="360px")),
        }  # fmt: skip
        super().__init__(controls)

    def compute(self, arg, program, site) -> AccessPicture:
        array = self.arrays.get(arg)
        size = int(array.size) if array is not None else None
        shape = self.shapes.get(arg, array.shape if array is not None and array.ndim >= 2 else None)
        return access_summary(
            self.trace, arg, size, shape, None if program == ALL else program,
            None if site == EVERY_SITE else site, self.run_error, self.grid,
        )  # fmt: skip

    def draw(self, data, fig) -> None:
        draw_access(data, fig)

    def figsize(self, data):
        rows, cols = data.shape
        cell = min(0.3, 9.0 / cols)
        return (cols * cell + 3.2, min(10.0, max(2.2, rows * cell + 1.2)))

    def caption(self, data) -> str:
        return _caption(data)


def access_view(kernel, grid=None, *args, shapes: dict | None = None, **meta):
    """The memory-access view of one launch (`access_view(kernel, grid, *args, **meta)`) or of
    an existing `AccessTrace` (`access_view(trace, shapes={"x_ptr": (M, N)})`). `shapes` draws
    an argument in 2-D; 2-D numpy arguments are drawn in 2-D anyway."""
    from kernellab.backends.interpreter.trace import AccessTrace

    if isinstance(kernel, AccessTrace):
        if args or meta:
            raise TypeError("access_view(trace) takes only shapes= (and grid=) besides the trace")
        return AccessView(kernel, shapes=shapes, grid=grid)
    if grid is None:
        raise TypeError(
            "access_view(kernel, grid, *args, **meta): give the grid to run the kernel on"
        )
    trace, arrays, grid3, error = run_traced(kernel, grid, *args, **meta)
    return AccessView(trace, arrays, shapes, grid3, error)


__all__ = [
    "AccessPicture",
    "AccessView",
    "access_summary",
    "access_view",
    "parse_out_of_bounds",
    "run_traced",
]
