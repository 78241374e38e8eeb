"""Layout explorer: which thread, warp and register holds each element of a tensor.

    kl.lab.layout(size_per_thread=[1, 8], threads_per_warp=[8, 4], warps_per_cta=[8, 1],
                  order=[1, 0], shape=[64, 32])        # sliders for every parameter
    kl.lab.layout(ck, "%offs")                          # the layout the compiler gave a value

The picture is drawn from the compiler's own layout object (a `kernellab.layouts.LinearLayout`,
via `as_table()`), so it shows exactly what code generation emits: each element's colour is its
warp (lighter for higher lanes), its label `T<thread> r<register>`; thick lines separate threads.
An element held by several threads (broadcast layouts, slices) is labelled with its first
holder and the number of holders (`T0 ×4`); the caption names the threads that share one.

Pure functions: `blocked_layout(...)` builds the layout from the control values (rejecting
invalid combinations with a sentence), `layout_table(ll)` computes the drawing data.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass

import numpy as np

from kernellab.lab.widgets.base import Explorer, is_power_of_two, powers_of_two


def _check_pow2(name: str, values) -> tuple[int, ...]:
    values = tuple(int(v) for v in values)
    for v in values:
        if not is_power_of_two(v):
            raise ValueError(f"{name} = {list(values)}: every entry must be a power of two")
    return values


def blocked_layout(size_per_thread, threads_per_warp, warps_per_cta, order, shape):
    """The LinearLayout of `#ttg.blocked<{...}>` over `shape`, after checking the parameters."""
    spt = _check_pow2("sizePerThread", size_per_thread)
    tpw = _check_pow2("threadsPerWarp", threads_per_warp)
    wpc = _check_pow2("warpsPerCTA", warps_per_cta)
    shape = _check_pow2("shape", shape)
    order = tuple(int(o) for o in order)
    rank = len(shape)
    if not (len(spt) == len(tpw) == len(wpc) == len(order) == rank):
        raise ValueError(
            f"sizePerThread, threadsPerWarp, warpsPerCTA, order and shape need {rank} entries each"
        )
    if sorted(order) != list(range(rank)):
        raise ValueError(f"order = {list(order)} must be a permutation of {list(range(rank))}")
    if int(np.prod(tpw)) != 32:
        raise ValueError(
            f"threadsPerWarp = {list(tpw)} must multiply to 32 (a warp), not {int(np.prod(tpw))}"
        )
    from kernellab.layouts import blocked

    return blocked(list(spt), list(tpw), list(wpc), list(order), list(shape))


@dataclass
class LayoutPicture:
    """Per element (array of `grid_shape`): the first owner's warp, lane, register and thread
    id (warp * 32 + lane), -1 where nobody owns it; `owners` counts the threads holding it."""

    tensor_shape: tuple[int, ...]
    grid_shape: tuple[int, int]
    warp: np.ndarray
    lane: np.ndarray
    register: np.ndarray
    thread: np.ndarray
    owners: np.ndarray
    num_registers: int
    num_lanes: int
    num_warps: int
    description: str
    holders: np.ndarray | None = None  # (register, lane, warp) order → flat element it holds

    def threads_holding(self, flat: int) -> list[int]:
        """Every thread (warp * lanes + lane) that holds the element at flat index `flat`."""
        if self.holders is None:
            return []
        slots = np.nonzero(self.holders == flat)[0]  # slot = (warp * lanes + lane) * registers + r
        return sorted({int(s) // self.num_registers for s in slots})

    @property
    def duplicated(self) -> int:
        """Elements held by more than one (register, lane, warp)."""
        return int((self.owners > 1).sum())

    def elements_of_thread(self, thread: int) -> list[tuple[int, ...]]:
        """Tensor coordinates whose first owner is `thread`, in register order."""
        where = np.argwhere(self.thread.reshape(self.tensor_shape) == thread)
        regs = self.register.reshape(self.tensor_shape)[tuple(where.T)]
        return [tuple(int(c) for c in w) for w in where[np.argsort(regs, kind="stable")]]


def _grid_shape(shape: tuple[int, ...]) -> tuple[int, int]:
    if len(shape) == 0:
        return (1, 1)
    if len(shape) == 1:
        n = shape[0]
        width = min(n, 32)
        return (n // width, width)
    return (int(np.prod(shape[:-1])), shape[-1])


def layout_table(ll) -> LayoutPicture:
    """Drawing data of a LinearLayout (register/lane/warp → tensor coordinates), block 0."""
    table = np.asarray(ll.as_table())  # [register, lane, warp] -> flat row-major coordinate
    R, L, W = table.shape
    shape = tuple(int(s) for s in ll.out_shape)
    size = int(np.prod(shape)) if shape else 1
    by_owner = table.transpose(2, 1, 0).reshape(-1)  # index = (warp * L + lane) * R + register
    flat_coords, first = np.unique(by_owner, return_index=True)
    warp = np.full(size, -1, np.int64)
    lane = np.full(size, -1, np.int64)
    reg = np.full(size, -1, np.int64)
    warp[flat_coords] = first // (L * R)
    lane[flat_coords] = first // R % L
    reg[flat_coords] = first % R
    owners = np.bincount(by_owner, minlength=size)
    thread = np.where(warp >= 0, warp * L + lane, -1)
    grid = _grid_shape(shape)
    encoding = getattr(ll, "encoding", None)
    return LayoutPicture(
        shape, grid, warp.reshape(grid), lane.reshape(grid), reg.reshape(grid), thread.reshape(grid),
        owners.reshape(grid), R, L, W, str(encoding) if encoding is not None else str(ll), by_owner,
    )  # fmt: skip


def _warp_colors(num_warps: int):
    from matplotlib import colormaps

    if num_warps <= 10:
        base = colormaps["tab10"].colors
    elif num_warps <= 20:
        base = colormaps["tab20"].colors
    else:
        cmap = colormaps["hsv"]
        base = [cmap(i / num_warps)[:3] for i in range(num_warps)]
    return [tuple(base[i % len(base)][:3]) for i in range(num_warps)]


def draw_layout(pic: LayoutPicture, fig, title: str = "") -> None:
    from matplotlib.collections import LineCollection
    from matplotlib.patches import Patch

    ax = fig.subplots()
    rows, cols = pic.grid_shape
    colors = np.array(_warp_colors(pic.num_warps))
    rgb = np.ones((rows, cols, 3))
    owned = pic.warp >= 0
    lighten = 0.55 * pic.lane / max(pic.num_lanes - 1, 1)  # lane 0 full colour, lane 31 lighter
    rgb[owned] = colors[pic.warp[owned]] * (1 - lighten[owned, None]) + lighten[owned, None]
    ax.imshow(rgb, interpolation="nearest", aspect="auto")
    # thick lines between cells of different threads
    segments = []
    t = pic.thread
    for i, j in np.argwhere(t[:, 1:] != t[:, :-1]):
        segments.append([(j + 0.5, i - 0.5), (j + 0.5, i + 0.5)])
    for i, j in np.argwhere(t[1:, :] != t[:-1, :]):
        segments.append([(j - 0.5, i + 0.5), (j + 0.5, i + 0.5)])
    if segments:
        ax.add_collection(
            LineCollection(
                segments, colors="#222222", linewidths=1.2 if rows * cols <= 4096 else 0.5
            )
        )
    dup = pic.owners > 1
    _label_runs(ax, pic, fig)
    ax.set_xlabel(
        f"dim{len(pic.tensor_shape) - 1}" if len(pic.tensor_shape) > 1 else "element % 32"
    )
    ax.set_ylabel(
        "dim0"
        if len(pic.tensor_shape) == 2
        else ("element // 32" if len(pic.tensor_shape) == 1 else "leading dims")
    )
    ax.set_title(textwrap.fill(title or pic.description, 90), fontsize=8)
    for axis, n in ((ax.xaxis, cols), (ax.yaxis, rows)):
        step = max(1, n // 16)
        axis.set_ticks(range(0, n, step))
    shown = sorted(int(w) for w in np.unique(pic.warp[owned]))  # warps that own a first copy
    handles = [Patch(facecolor=colors[w], label=f"warp {w}") for w in shown[:16]]
    if len(shown) > 16:
        handles.append(Patch(facecolor="white", label=f"... {len(shown)} warps"))
    handles.append(Patch(facecolor="white", edgecolor="white", label="lighter = higher lane"))
    hidden = pic.num_warps - len(shown)
    if hidden:
        handles.append(Patch(facecolor="white", edgecolor="white",
                             label=f"{hidden} more warp{'s' if hidden > 1 else ''} hold copies only"))  # fmt: skip
    if dup.any():
        handles.append(Patch(facecolor="white", edgecolor="white",
                             label="T0 ×4: T0 and 3 more threads hold it"))  # fmt: skip
    ax.legend(
        handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False
    )


LEGEND_IN, MARGIN_W_IN, MARGIN_H_IN = 2.2, 1.0, 1.3
MAX_LABELS = 1200


def _figsize(pic: LayoutPicture) -> tuple[float, float]:
    rows, cols = pic.grid_shape
    cell_w = min(0.5, 11.0 / max(cols, 1))
    cell_h = min(0.4, 13.0 / max(rows, 1))
    return (
        max(5.5, cols * cell_w + LEGEND_IN + MARGIN_W_IN),
        max(2.5, rows * cell_h + MARGIN_H_IN),
    )


def _runs(pic: LayoutPicture):
    """(row, first col, last col, thread, first register, last register) of each horizontal run of
    cells one thread holds in consecutive registers."""
    rows, cols = pic.grid_shape
    t, r = pic.thread, pic.register
    for i in range(rows):
        j = 0
        while j < cols:
            k = j
            while k + 1 < cols and t[i, k + 1] == t[i, j] and r[i, k + 1] == r[i, k] + 1:
                k += 1
            if t[i, j] >= 0:
                yield i, j, k, int(t[i, j]), int(r[i, j]), int(r[i, k])
            j = k + 1


def _label_runs(ax, pic: LayoutPicture, fig) -> None:
    """Write `T<thread> r<a>-<b>` on each run of cells, as large as the cells allow."""
    rows, cols = pic.grid_shape
    width, height = fig.get_size_inches()
    cell_w = (width - LEGEND_IN - MARGIN_W_IN) / cols * 72  # points
    cell_h = (height - MARGIN_H_IN) / rows * 72
    runs = list(_runs(pic)) if rows * cols <= 256 * 256 else []
    if len(runs) > MAX_LABELS:  # unreadable anyway, and slow to draw: colours and lines only
        return
    for i, j, k, thread, r0, r1 in runs:
        run_w = (k - j + 1) * cell_w
        copies = int(pic.owners[i, j])
        held = f"T{thread}" + (f" ×{copies}" if copies > 1 else "")  # broadcast: how many hold it
        if k == j:  # one cell: thread over register
            fs = min(8.0, cell_h / 2.4, cell_w / (0.62 * max(len(held), 3)))
            text = f"{held}\nr{r0}"
        else:
            text = f"{held} r{r0}-{r1}"
            fs = min(8.0, cell_h * 0.75, run_w / (0.62 * len(text)))
            if fs < 4.0:
                text = f"T{thread}"
                fs = min(8.0, cell_h * 0.75, run_w / (0.62 * len(text)))
        if fs >= 3.5:
            ax.text((j + k) / 2, i, text, ha="center", va="center", fontsize=fs, linespacing=0.85)


def format_elements(coords: list[tuple[int, ...]], limit: int = 8) -> str:
    """`(0, 0:8), (64, 0:8)`: runs along the last dim written as Python slices."""
    runs: list[list] = []
    for c in coords:
        if runs and c[:-1] == runs[-1][0] and c[-1] == runs[-1][2]:
            runs[-1][2] += 1
        else:
            runs.append([c[:-1], c[-1], c[-1] + 1])
    parts = []
    for lead, a, b in runs[:limit]:
        last = str(a) if b == a + 1 else f"{a}:{b}"
        parts.append("(" + ", ".join([*(str(x) for x in lead), last]) + ")")
    return ", ".join(parts) + (f", ... ({len(coords)} elements)" if len(runs) > limit else "")


def _caption(pic: LayoutPicture) -> str:
    shown = format_elements(pic.elements_of_thread(0))
    lines = [
        f"{pic.description} on {list(pic.tensor_shape)}",
        (
            f"{pic.num_warps} warps x {pic.num_lanes} lanes, {pic.num_registers} registers per thread; "
            f"thread 0 holds {shown}"
        ),
    ]
    if pic.duplicated:
        first = int(np.argmax(pic.owners.ravel() > 1))
        coord = np.unravel_index(first, pic.tensor_shape) if pic.tensor_shape else ()
        threads = pic.threads_holding(first)
        lines.append(
            f"{pic.duplicated} elements are held by several threads (the layout broadcasts): "
            f"element {tuple(int(c) for c in coord)} by threads {_thread_list(threads)}"
        )
    return "\n".join(lines)


def _thread_list(threads: list[int], limit: int = 12) -> str:
    shown = ", ".join(str(t) for t in threads[:limit])
    return shown + (f", ... ({len(threads)} threads)" if len(threads) > limit else "")


class LayoutExplorer(Explorer):
    """Controls for a 2-D `#ttg.blocked` layout; the picture redraws on every change."""

    title = "layout explorer"

    def __init__(self, size_per_thread=(1, 8), threads_per_warp=(8, 4), warps_per_cta=(8, 1),
                 order=(1, 0), shape=(64, 32)):  # fmt: skip
        import ipywidgets as w

        spt, tpw, wpc, shape = (
            tuple(int(v) for v in x)
            for x in (size_per_thread, threads_per_warp, warps_per_cta, shape)
        )
        if len(shape) != 2:
            raise ValueError(
                "the explorer's controls are for 2-D tensors; for others use layout(ll) with a LinearLayout"
            )
        num_warps = int(np.prod(wpc))
        style = {"description_width": "initial"}

        def dd(description, options, value, width="150px"):
            return w.Dropdown(options=options, value=value, description=description, style=style,
                              layout=w.Layout(width=width))  # fmt: skip

        controls = {
            "spt0": dd("sizePerThread, rows", powers_of_two(1, 16), spt[0], "200px"),
            "spt1": dd("cols", powers_of_two(1, 16), spt[1], "110px"),
            "tpw0": dd("threadsPerWarp, rows", powers_of_two(1, 32), tpw[0], "210px"),
            "warps": dd("num_warps", powers_of_two(1, 16), num_warps, "140px"),
            "wpc0": dd("warpsPerCTA, rows", powers_of_two(1, num_warps), wpc[0], "190px"),
            "order": dd("order", [("[1, 0]", (1, 0)), ("[0, 1]", (0, 1))], tuple(order), "130px"),
            "rows": dd("shape: rows", powers_of_two(1, 256), shape[0], "150px"),
            "cols": dd("cols", powers_of_two(1, 256), shape[1], "110px"),
        }
        if tpw[0] * tpw[1] != 32:
            raise ValueError(f"threadsPerWarp = {list(tpw)} must multiply to 32")
        self._derived = w.HTML()
        super().__init__(
            controls, [["spt0", "spt1", "tpw0", "warps", "wpc0"], ["order", "rows", "cols"]]
        )
        self.widget.children = (self.widget.children[0], w.HBox([*self.widget.children[1].children, self._derived]),
                                *self.widget.children[2:])  # fmt: skip
        self._show_derived()

    def params(self, spt0, spt1, tpw0, warps, wpc0, order, rows, cols) -> dict:
        """The blocked-layout parameters the control values stand for."""
        return {
            "size_per_thread": (spt0, spt1),
            "threads_per_warp": (tpw0, 32 // tpw0),
            "warps_per_cta": (wpc0, warps // wpc0) if wpc0 <= warps else (warps, 1),
            "order": tuple(order),
            "shape": (rows, cols),
        }

    def _on_change(self, change) -> None:
        if change["owner"] is self.controls["warps"]:  # keep warpsPerCTA[0] dividing num_warps
            wpc0 = self.controls["wpc0"]
            options = powers_of_two(1, change["new"])
            wpc0.unobserve(self._on_change, names="value")
            value = min(wpc0.value, change["new"])
            wpc0.options = options
            wpc0.value = value
            wpc0.observe(self._on_change, names="value")
        super()._on_change(change)
        self._show_derived()

    def _show_derived(self) -> None:
        p = self.params(**self.values())
        # the whole layout as the TTGIR writes it: the menus each set one entry of these lists
        self._derived.value = (f"&nbsp; sizePerThread = {list(p['size_per_thread'])}, threadsPerWarp = "
                               f"{list(p['threads_per_warp'])}, warpsPerCTA = {list(p['warps_per_cta'])}, "
                               f"order = {list(p['order'])}, shape = {list(p['shape'])}")  # fmt: skip

    def compute(self, **values) -> LayoutPicture:
        return layout_table(blocked_layout(**self.params(**values)))

    def draw(self, data, fig) -> None:
        draw_layout(data, fig)

    def figsize(self, data):
        return _figsize(data)

    def caption(self, data) -> str:
        return _caption(data)


class FixedLayoutView(Explorer):
    """A picture of one given LinearLayout (no controls)."""

    title = "layout"

    def __init__(self, ll, label: str = ""):
        self._ll = ll
        self._label = label
        super().__init__({})

    def compute(self) -> LayoutPicture:
        return layout_table(self._ll)

    def draw(self, data, fig) -> None:
        draw_layout(data, fig, (self._label + "\n" if self._label else "") + data.description)

    def figsize(self, data):
        return _figsize(data)

    def caption(self, data) -> str:
        return (self._label + ": " if self._label else "") + _caption(data)


# -- values of a compiled kernel ------------------------------------------------------------


@dataclass
class TensorValue:
    name: str  # printed SSA name with '%'
    shape: tuple[int, ...]
    encoding: object  # the ttg encoding attribute
    encoding_text: str
    op_name: str


def tensor_values(ck) -> dict[str, TensorValue]:
    """Every SSA value of `ck`'s TTGIR that is a tensor with a layout encoding, by printed name."""
    asm = getattr(ck, "asm", None)
    if asm is None:
        raise TypeError(
            f"layout() takes a CompiledKernel (kl.compile(...)), not {type(ck).__name__}"
        )
    if "ttgir" not in asm:
        raise ValueError(
            "this kernel has no TTGIR, so its values have no layouts yet (layouts are chosen when "
            f"compiling for a GPU); stages compiled: {', '.join(asm)}. Compile with target='sm_90' "
            "or target='sm_80' (no GPU needed)."
        )
    from xdsl.dialects.builtin import TensorType

    from kernellab.ir import parse_module
    from kernellab.lab.graphs import _TypePrinter, value_names

    module = parse_module(asm["ttgir"])
    names = value_names(module)
    type_str = _TypePrinter(module)
    found: dict[str, TensorValue] = {}
    for value, name in names.items():
        t = value.type
        if isinstance(t, TensorType) and not _no_encoding(t.encoding):
            owner = getattr(value, "owner", None)
            op_name = getattr(owner, "name", "block argument")
            found[f"%{name}"] = TensorValue(
                f"%{name}", tuple(int(s) for s in t.get_shape()), t.encoding, type_str(t), op_name
            )
    return found


def _no_encoding(encoding) -> bool:
    from xdsl.dialects.builtin import NoneAttr

    return encoding is None or isinstance(encoding, NoneAttr)


def layout_of_value(ck, name: str):
    """(LinearLayout, TensorValue) of the value printed as `name` (e.g. '%offs') in ck's TTGIR."""
    values = tensor_values(ck)
    key = name if name.startswith("%") else f"%{name}"
    if key not in values:
        near = [n for n in values if n.startswith(key) or key[1:] in n]
        hint = (
            f"; similar: {', '.join(near[:8])}"
            if near
            else f"; tensor values: {', '.join(list(values)[:12])}"
        )
        raise KeyError(f"no tensor value {key} with a layout in the TTGIR{hint}")
    tv = values[key]
    from kernellab.layouts import from_encoding

    return from_encoding(tv.encoding, tv.shape), tv


class KernelLayoutView(Explorer):
    """The layouts of a compiled kernel's values: pick a value, see who holds each element."""

    title = "kernel layouts"

    def __init__(self, ck, name: str | None = None):
        import ipywidgets as w

        self.ck = ck
        self.values_by_name = tensor_values(ck)
        if not self.values_by_name:
            raise ValueError("the TTGIR has no tensor values with layouts")
        names = list(self.values_by_name)
        if name is not None:
            name = name if name.startswith("%") else f"%{name}"
            layout_of_value(ck, name)  # raises with a helpful message if unknown
        options = [(f"{n}  ({v.op_name})", n) for n, v in self.values_by_name.items()]
        controls = {"value": w.Dropdown(options=options, value=name or names[0], description="value",
                                        layout=w.Layout(width="420px"))}  # fmt: skip
        super().__init__(controls)

    def compute(self, value: str) -> LayoutPicture:
        from kernellab.layouts import from_encoding

        tv = self.values_by_name[value]
        ll = from_encoding(tv.encoding, tv.shape)
        pic = layout_table(ll)
        pic.description = f"{tv.name} : {tv.encoding_text}\n{pic.description}"
        return pic

    def draw(self, data, fig) -> None:
        draw_layout(data, fig)

    def figsize(self, data):
        w_, h = _figsize(data)
        return (w_, h + 0.3)

    def caption(self, data) -> str:
        return _caption(data)


class KernelLayoutsView(Explorer):
    """Every distinct layout of a compiled kernel's TTGIR (blocked, slice, MMA, dot operand,
    swizzled shared), drawn by the same kernellab.layouts code the compiler lowers with."""

    title = "layouts of a compiled kernel"

    def __init__(self, ck, name: str | None = None):
        import ipywidgets as w

        from kernellab.lab.kernel_layouts import kernel_layouts, shared_buffers

        self.layouts = {item.name: item for item in kernel_layouts(ck)}
        if not self.layouts:
            raise ValueError("the TTGIR has no values with layouts")
        self.buffers = {b.encoding: b for b in shared_buffers(ck) if b.accesses}
        if name is not None and name not in self.layouts:
            raise KeyError(f"no layout {name} in the TTGIR; its layouts: {', '.join(self.layouts)}")
        options = [(f"{n}  ({item.kind}, {len(item.values)} values)", n) for n, item in self.layouts.items()]
        controls = {"layout": w.Dropdown(options=options, value=name or next(iter(self.layouts)),
                                         description="layout", layout=w.Layout(width="620px"))}  # fmt: skip
        super().__init__(controls)

    def compute(self, layout: str):
        item = self.layouts[layout]
        buffer = self.buffers.get(item.encoding) if item.shared else None
        if buffer is not None:  # a shared layout: its buffer's banks under the dot-operand read
            from kernellab.lab.widgets.swizzle_explorer import access_picture

            read = buffer.accesses[-1]
            return access_picture(read.layout, item.linear_layout(buffer.shape), buffer.elem_bytes,
                                  read.what, {**buffer.params, "layout": layout})  # fmt: skip
        pic = layout_table(item.linear_layout())
        shapes = ", ".join("x".join(map(str, s)) for s in item.shapes)
        pic.description = f"{item.name}: used by {len(item.values)} values ({shapes})\n{pic.description}"
        return pic

    def draw(self, data, fig) -> None:
        if isinstance(data, LayoutPicture):
            draw_layout(data, fig)
        else:
            from kernellab.lab.widgets.swizzle_explorer import draw_swizzle

            draw_swizzle(data, fig)

    def figsize(self, data):
        if isinstance(data, LayoutPicture):
            w_, h = _figsize(data)
            return (w_, h + 0.3)
        from kernellab.lab.widgets.swizzle_explorer import swizzle_figsize

        return swizzle_figsize(data)

    def caption(self, data) -> str:
        if isinstance(data, LayoutPicture):
            return _caption(data)
        from kernellab.lab.widgets.swizzle_explorer import _caption as swizzle_caption

        item = self.layouts[data.params["layout"]]
        return (f"{item.name} = {item.text}, the shared layout of {', '.join(item.values)}\n"
                f"{swizzle_caption(data)}\nkl.lab.swizzle(ck) shows every access of every buffer")  # fmt: skip


def layouts(ck, name: str | None = None) -> KernelLayoutsView:
    """Every distinct layout the compiler chose for `ck` (a CompiledKernel compiled for a GPU, or
    a @kl.jit kernel's last compile), with a menu; `name` opens one (`"#mma"`)."""
    from kernellab.lab.graphs import compiled_kernel

    found = compiled_kernel(ck)
    if found is None:
        raise TypeError(f"layouts() takes a CompiledKernel (kl.compile(...)), not {type(ck).__name__}")
    return KernelLayoutsView(found, name)


def layout(*args, **kwargs):
    """The layout explorer.

    - `layout()` or `layout(size_per_thread=..., threads_per_warp=..., warps_per_cta=...,
      order=..., shape=...)`: controls for a blocked layout (defaults: the seed example).
    - `layout(ck, "%offs")`: the layout of a value of a compiled kernel's TTGIR (blocked, slice,
      MMA or dot-operand), with a menu of its other values.
    - `layout(linear_layout)`: a picture of any `kernellab.layouts.LinearLayout`.
    """
    from kernellab.lab.graphs import compiled_kernel

    if args and compiled_kernel(args[0]) is not None:
        args = (compiled_kernel(args[0]), *args[1:])
        return KernelLayoutView(args[0], args[1] if len(args) > 1 else kwargs.get("name"))
    if args and hasattr(args[0], "as_table"):
        return FixedLayoutView(args[0], args[1] if len(args) > 1 else kwargs.get("label", ""))
    return LayoutExplorer(*args, **kwargs)


__all__ = [
    "KernelLayoutView",
    "KernelLayoutsView",
    "LayoutExplorer",
    "LayoutPicture",
    "blocked_layout",
    "layout",
    "layout_of_value",
    "layouts",
    "layout_table",
    "tensor_values",
]  # fmt: skip
