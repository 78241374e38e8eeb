"""Swizzle explorer: the shared-memory banks a warp hits, before and after swizzling.

    kl.lab.swizzle(vec=8, per_phase=1, max_phase=8, order=[1, 0], shape=[32, 64],
                   elem_bytes=2, pattern="column")

Shared memory has 32 banks of 4 bytes; lanes of one access phase that hit different 4-byte
words of the same bank are served one after another (an n-way conflict). A plain row-major
tile whose rows are a multiple of 128 bytes puts a whole column in one bank, so a warp
reading down a column conflicts 8 or 32 ways. `#ttg.swizzled_shared<{vec, perPhase, maxPhase,
order}>` XORs each row's vec-element chunks with (row // perPhase) % maxPhase and spreads them.

Access patterns (a register layout of one warp, as the compiler would have it):
- "row":      lanes along the row, `access_bytes` per lane (like a coalesced copy);
- "column":   each lane reads one vector from a different row (like reading A^T);
- "ldmatrix": ldmatrix.x4 — lanes 0-7, 8-15, 16-23, 24-31 give the row addresses of four 8x8
              tiles (16 bytes per row).
The counts come from `kernellab.layouts.banks` (the same analysis the compiler uses).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kernellab.lab.widgets.base import Explorer, is_power_of_two, powers_of_two

PATTERNS = ("row", "column", "ldmatrix")
NUM_BANKS = 32
ROW_INCHES = 0.17  # a row of the tile: room for a lane/bank label of 8 points
MIN_LABEL_POINTS = 5.0  # smaller labels are left out (the caption and the bars give the counts)


def swizzle_figsize(pic) -> tuple[float, float]:
    """Figure size for a SwizzlePicture: rows tall enough to label, at most 14 inches."""
    return (12.0, min(14.0, 2.4 + pic.shape[0] * ROW_INCHES))


def access_layout(pattern: str, shape, elem_bytes: int, access_bytes: int = 16):
    """The register layout of one warp's access `pattern` over a 2-D shared tile `shape`."""
    from kernellab.layouts import LinearLayout, blocked

    rows, cols = (int(s) for s in shape)
    if pattern not in PATTERNS:
        raise ValueError(f"pattern must be one of {', '.join(PATTERNS)}, not {pattern!r}")
    if pattern == "ldmatrix":
        per_row = max(1, 16 // elem_bytes)  # one 16-byte row of an 8x8 (b16) matrix per lane
        if rows < 16 or cols < 2 * per_row:
            raise ValueError(
                f"ldmatrix.x4 reads a 16 x {2 * per_row} block; the tile {rows} x {cols} is smaller"
            )
        # one ldmatrix.x4 reads a 16 x (2 * per_row) block; the warp's next instructions read
        # the blocks beside it and below it, so the counts cover the whole tile like the
        # other patterns (and the totals compare)
        registers = [(0, 1 << i) for i in range(per_row.bit_length() - 1)]
        registers += [(0, c) for c in powers_of_two(2 * per_row, cols // 2)]
        registers += [(r, 0) for r in powers_of_two(16, rows // 2)]
        lanes = [(1, 0), (2, 0), (4, 0), (8, 0), (0, per_row)]
        return LinearLayout({"register": registers, "lane": lanes, "warp": []}, (rows, cols))
    per_lane = max(1, min(access_bytes // elem_bytes, cols))
    if pattern == "row":
        tpw1 = min(32, cols // per_lane)
        return blocked([1, per_lane], [32 // tpw1, tpw1], [1, 1], [1, 0], [rows, cols])
    tpw0 = min(32, rows)
    return blocked([1, per_lane], [tpw0, 32 // tpw0], [1, 1], [1, 0], [rows, cols])


@dataclass
class BankSide:
    """One shared layout under the access: per element its bank and offset, which lane the
    shown instruction has read it with (-1: not read), and the conflict numbers."""

    label: str
    bank: np.ndarray  # (rows, cols) bank of the element's first byte
    offset: np.ndarray  # (rows, cols) element offset in the buffer
    lane: np.ndarray  # (rows, cols)
    ways: int  # n-way conflict, worst instruction
    ways_shown: int  # n-way of the shown instruction
    wavefronts: int  # all instructions
    words_per_bank: np.ndarray  # [phases, 32] distinct words per bank, shown instruction
    vec: int  # elements per access


@dataclass
class SwizzlePicture:
    pattern: str
    shape: tuple[int, int]
    elem_bytes: int
    instruction: int
    num_instructions: int
    before: BankSide
    after: BankSide
    params: dict
    best: str = ""  # the swizzle kernellab.layouts.best_swizzle picks for this access
    best_ways: int = 0


def _side(reg, shared, elem_bytes: int, instruction: int, label: str) -> tuple[BankSide, int]:
    from kernellab.layouts.banks import analyze

    acc = analyze(reg, shared, elem_bytes)
    shape = tuple(shared.out_shape)
    size = int(np.prod(shape))
    coords_of_offset = np.asarray(shared.table(("offset",)))
    offset = np.empty(size, np.int64)
    offset[coords_of_offset] = np.arange(size)
    bank = offset * elem_bytes // 4 % NUM_BANKS
    n_instr = acc.words.shape[0]
    i = max(0, min(instruction, n_instr - 1))
    regs = np.asarray(reg.table(("register", "lane"), warp=0))  # [registers, lanes] -> flat coord
    lane = np.full(size, -1, np.int64)
    shown = regs[i * acc.vec : (i + 1) * acc.vec]
    for r in range(shown.shape[0]):
        lane[shown[r]] = np.arange(shown.shape[1])
    words = acc.words[i]  # [lanes, words per access]
    lanes = words.shape[0]
    access_bytes = acc.vec * elem_bytes
    per_phase = min(lanes, NUM_BANKS * 4 // max(4, access_bytes))
    phases = max(1, lanes // per_phase)
    counts = np.zeros((phases, NUM_BANKS), np.int64)
    for p in range(phases):
        distinct = np.unique(words[p * per_phase : (p + 1) * per_phase].ravel())
        counts[p] = np.bincount(distinct % NUM_BANKS, minlength=NUM_BANKS)
    side = BankSide(label, bank.reshape(shape), offset.reshape(shape), lane.reshape(shape),
                    acc.max_ways, int(acc.ways[i]), int(acc.wavefronts.sum()), counts, acc.vec)  # fmt: skip
    return side, n_instr


def swizzle_data(vec, per_phase, max_phase, order, shape, elem_bytes, pattern, access_bytes=16,
                 instruction=0) -> SwizzlePicture:  # fmt: skip
    """Bank maps and conflict counts of `pattern` on the plain and on the swizzled layout."""
    from kernellab.layouts import swizzled_shared

    shape = tuple(int(s) for s in shape)
    for name, v in (("vec", vec), ("perPhase", per_phase), ("maxPhase", max_phase), ("rows", shape[0]),
                    ("cols", shape[1]), ("element bytes", elem_bytes)):  # fmt: skip
        if not is_power_of_two(int(v)):
            raise ValueError(f"{name} = {v} must be a power of two")
    order = tuple(int(o) for o in order)
    if len(shape) != 2 or sorted(order) != [0, 1]:
        raise ValueError("the swizzle explorer draws 2-D tiles; order is [1, 0] or [0, 1]")
    if vec * max_phase > shape[order[0]]:
        raise ValueError(
            f"vec x maxPhase = {vec * max_phase} exceeds the {shape[order[0]]} elements along dim "
            f"{order[0]}: the XOR would leave the row; lower vec or maxPhase"
        )
    reg = access_layout(pattern, shape, elem_bytes, access_bytes)
    swizzled = swizzled_shared(vec, per_phase, max_phase, order, shape)
    params = {"vec": vec, "per_phase": per_phase, "max_phase": max_phase, "order": order,
              "access_bytes": access_bytes}  # fmt: skip
    return access_picture(reg, swizzled, elem_bytes, pattern, params, instruction)


def access_picture(reg, swizzled, elem_bytes: int, pattern: str, params: dict,
                   instruction: int = 0) -> SwizzlePicture:  # fmt: skip
    """One warp's access `reg` (a register LinearLayout) on the shared layout `swizzled` and on
    the unswizzled layout of the same order, with the swizzle best_swizzle picks for it."""
    from kernellab.layouts import best_swizzle, swizzled_shared

    shape = tuple(int(s) for s in swizzled.out_shape)
    order = tuple(int(o) for o in swizzled.encoding.order)
    plain = swizzled_shared(1, 1, 1, order, shape)
    before, n = _side(
        reg, plain, elem_bytes, instruction, "unswizzled " + str(plain.encoding or "")
    )
    after, _ = _side(reg, swizzled, elem_bytes, instruction, str(swizzled.encoding or ""))
    best, results = best_swizzle([reg], elem_bytes)
    return SwizzlePicture(pattern, shape, elem_bytes, max(0, min(instruction, n - 1)), n, before, after, params,
                          str(best.encoding or best), max(r.max_ways for r in results))  # fmt: skip


def draw_swizzle(pic: SwizzlePicture, fig) -> None:
    from matplotlib import colormaps

    rows, cols = pic.shape
    axes = fig.subplots(2, 2, gridspec_kw={"height_ratios": [max(rows * ROW_INCHES, 1.0), 1.2]})
    cmap = colormaps["hsv"]
    for k, side in enumerate((pic.before, pic.after)):
        ax, bar = axes[0][k], axes[1][k]
        colors = np.array([cmap(b / NUM_BANKS)[:3] for b in range(NUM_BANKS)])
        rgb = colors[side.bank] * 0.35 + 0.65  # faded banks everywhere
        read = side.lane >= 0
        rgb[read] = colors[side.bank[read]] * 0.9
        ax.imshow(rgb, interpolation="nearest", aspect="auto")  # rows tall enough to label
        ax.set_title(f"{'before' if k == 0 else 'after'}: {side.label}\n"
                     f"{side.ways_shown}-way on this access, {side.ways}-way worst, "
                     f"{side.wavefronts} wavefronts in all", fontsize=8)  # fmt: skip
        ax.set_xlabel("column")
        ax.set_ylabel("row")
        worst = side.words_per_bank.max(axis=0)
        bar.bar(np.arange(NUM_BANKS), worst, color=colors, edgecolor="#333333", linewidth=0.4)
        bar.set_xlim(-0.7, NUM_BANKS - 0.3)
        bar.set_ylim(
            0,
            max(2, int(pic.before.words_per_bank.max()), int(pic.after.words_per_bank.max())) + 0.5,
        )
        bar.set_xlabel("bank")
        bar.set_ylabel("words / bank\n(worst phase)", fontsize=8)
        bar.axhline(1, color="#333333", linewidth=0.6, linestyle=":")
    if fig.get_layout_engine() is not None:
        fig.get_layout_engine().execute(fig)  # final axes sizes, so labels fit their cells
    for k, side in enumerate((pic.before, pic.after)):
        _label_lanes(axes[0][k], side, fig)
    fig.suptitle(f"{pic.pattern} access, {pic.elem_bytes}-byte elements, instruction {pic.instruction + 1} "
                 f"of {pic.num_instructions} (elements read by it are bright, labelled lane/bank)",
                 fontsize=9)  # fmt: skip


def _label_lanes(ax, side: BankSide, fig) -> None:
    """`L<lane>` (and its banks when there is room) on each run of elements one lane reads."""
    rows, cols = side.lane.shape
    bbox = ax.get_position()
    width, height = fig.get_size_inches()
    cell_w = bbox.width * width / cols * 72
    cell_h = bbox.height * height / rows * 72
    for i in range(rows):
        j = 0
        while j < cols:
            k = j
            while k + 1 < cols and side.lane[i, k + 1] == side.lane[i, j]:
                k += 1
            lane = int(side.lane[i, j])
            if lane >= 0:
                b0, b1 = int(side.bank[i, j]), int(side.bank[i, k])
                run_w = (k - j + 1) * cell_w
                for text in (f"L{lane} b{b0}" + (f"-{b1}" if b1 != b0 else ""), f"L{lane}"):
                    fs = min(8.0, cell_h * 0.8, run_w / (0.62 * len(text)))
                    if fs >= MIN_LABEL_POINTS:  # a pale box keeps it readable on dark banks
                        ax.text((j + k) / 2, i, text, ha="center", va="center", fontsize=fs,
                                bbox={"boxstyle": "square,pad=0.05", "fc": "white", "alpha": 0.55, "lw": 0})  # fmt: skip
                        break
            j = k + 1


def _caption(pic: SwizzlePicture) -> str:
    b, a = pic.before, pic.after
    return (
        f"{pic.pattern} access on a {pic.shape[0]}x{pic.shape[1]} tile of {pic.elem_bytes}-byte elements "
        f"({a.vec} elements per access): unswizzled {b.ways}-way conflict ({b.wavefronts} wavefronts), "
        f"swizzled {a.ways}-way ({a.wavefronts} wavefronts)"
        + (f"\nbest for this access: {pic.best} ({pic.best_ways}-way)" if pic.best else "")
    )


class SwizzleView(Explorer):
    """What the swizzle explorers share: a SwizzlePicture drawn before/after, sized to label."""

    def draw(self, data, fig) -> None:
        draw_swizzle(data, fig)

    def figsize(self, data):
        return swizzle_figsize(data)


class SwizzleExplorer(SwizzleView):
    title = "swizzle explorer"

    def __init__(self, vec=8, per_phase=1, max_phase=8, order=(1, 0), shape=(32, 64), elem_bytes=2,
                 pattern="column", access_bytes=16):  # fmt: skip
        import ipywidgets as w

        style = {"description_width": "initial"}

        def dd(description, options, value, width="140px"):
            return w.Dropdown(options=options, value=value, description=description, style=style,
                              layout=w.Layout(width=width))  # fmt: skip

        controls = {
            "vec": dd("vec", powers_of_two(1, 16), vec, "110px"),
            "per_phase": dd("perPhase", powers_of_two(1, 16), per_phase, "130px"),
            "max_phase": dd("maxPhase", powers_of_two(1, 16), max_phase, "130px"),
            "order": dd("order", [("[1, 0]", (1, 0)), ("[0, 1]", (0, 1))], tuple(order), "120px"),
            "rows": dd("shape: rows", powers_of_two(8, 128), shape[0], "150px"),
            "cols": dd("cols", powers_of_two(8, 256), shape[1], "110px"),
            "elem_bytes": dd("bytes/element", [1, 2, 4], elem_bytes, "150px"),
            "pattern": dd("access", list(PATTERNS), pattern, "160px"),
            "access_bytes": dd("bytes/lane", [4, 8, 16], access_bytes, "140px"),
            "instruction": w.IntSlider(value=1, min=1, max=1, description="instruction"),
        }
        super().__init__(controls, [["vec", "per_phase", "max_phase", "order", "rows", "cols"],
                                    ["elem_bytes", "pattern", "access_bytes", "instruction"]])  # fmt: skip

    def compute(self, vec, per_phase, max_phase, order, rows, cols, elem_bytes, pattern, access_bytes,
                instruction) -> SwizzlePicture:  # fmt: skip
        pic = swizzle_data(vec, per_phase, max_phase, order, (rows, cols), elem_bytes, pattern, access_bytes,
                           instruction - 1)  # fmt: skip
        _fit_slider(self, pic)
        return pic

    def caption(self, data) -> str:
        return _caption(data)


def _fit_slider(explorer: Explorer, pic: SwizzlePicture) -> None:
    """The instruction slider counts from 1, as the picture's title does (instruction i of n)."""
    slider = explorer.controls["instruction"]
    if slider.max != pic.num_instructions or slider.value != pic.instruction + 1:
        slider.unobserve(explorer._on_change, names="value")
        slider.max = pic.num_instructions
        slider.value = pic.instruction + 1
        slider.observe(explorer._on_change, names="value")


def buffer_conflicts(buffer) -> list[tuple[str, int, int]]:
    """(access, wavefronts unswizzled, wavefronts with the compiler's swizzle) per access of a
    compiled kernel's shared buffer (kernellab.lab.kernel_layouts.SharedBuffer)."""
    from kernellab.layouts import from_encoding, swizzled_shared
    from kernellab.layouts.banks import analyze

    chosen = from_encoding(buffer.encoding, buffer.shape)
    plain = swizzled_shared(1, 1, 1, buffer.params["order"], buffer.shape)
    return [
        (a.what, int(analyze(a.layout, plain, buffer.elem_bytes).wavefronts.sum()),
         int(analyze(a.layout, chosen, buffer.elem_bytes).wavefronts.sum()))
        for a in buffer.accesses
    ]  # fmt: skip


class KernelSwizzleView(SwizzleView):
    """The swizzle explorer on a compiled kernel: its shared buffers, each access the compiler
    modelled when it chose the buffer's swizzle, and the bank conflicts without and with it."""

    title = "swizzle of a compiled kernel"

    def __init__(self, ck, buffer: str | None = None):
        import ipywidgets as w

        from kernellab.lab.kernel_layouts import shared_buffers

        self.buffers = {b.name: b for b in shared_buffers(ck) if b.accesses}
        if not self.buffers:
            raise ValueError(
                "this kernel's TTGIR stages no tile through a swizzled shared buffer for a dot "
                "(no ttg.local_alloc read as a dot operand); a tl.dot kernel compiled for sm_80 "
                "or sm_90 has them"
            )
        if buffer is not None and buffer not in self.buffers:
            raise KeyError(f"no shared buffer {buffer}; the kernel's: {', '.join(self.buffers)}")
        first = self.buffers[buffer or next(iter(self.buffers))]
        style = {"description_width": "initial"}
        controls = {
            "buffer": w.Dropdown(options=[(b.label, n) for n, b in self.buffers.items()], value=first.name,
                                 description="buffer", style=style, layout=w.Layout(width="560px")),
            "access": w.Dropdown(options=self._access_options(first), value=0, description="access",
                                 style=style, layout=w.Layout(width="560px")),
            "instruction": w.IntSlider(value=1, min=1, max=1, description="instruction"),
        }  # fmt: skip
        super().__init__(controls, [["buffer"], ["access", "instruction"]])

    @staticmethod
    def _access_options(buffer):
        return [(a.what, i) for i, a in enumerate(buffer.accesses)]

    def compute(self, buffer, access, instruction) -> SwizzlePicture:
        from kernellab.layouts import from_encoding

        b = self.buffers[buffer]
        menu = self.controls["access"]
        if [o[0] for o in menu.options] != [a.what for a in b.accesses]:  # another buffer
            menu.unobserve(self._on_change, names="value")
            menu.options = self._access_options(b)
            menu.value = access = 0
            menu.observe(self._on_change, names="value")
        chosen = from_encoding(b.encoding, b.shape)
        pic = access_picture(b.accesses[access].layout, chosen, b.elem_bytes, b.accesses[access].what,
                             {**b.params, "buffer": b.name}, instruction - 1)  # fmt: skip
        _fit_slider(self, pic)
        return pic

    def caption(self, data) -> str:
        b = self.buffers[data.params["buffer"]]
        lines = [f"{b.label} (the compiler's choice: {b.encoding_name} = vec {b.params['vec']}, perPhase "
                 f"{b.params['per_phase']}, maxPhase {b.params['max_phase']}, order {list(b.params['order'])})"]  # fmt: skip
        for what, before, after in buffer_conflicts(b):
            lines.append(f"  {what}: {before} wavefronts unswizzled, {after} with {b.encoding_name}")
        lines.append(f"shown: {_caption(data)}")
        return "\n".join(lines)


def swizzle(*args, **kwargs):
    """The swizzle explorer.

    - `swizzle(vec=8, per_phase=1, max_phase=8, order=[1, 0], shape=[32, 64], elem_bytes=2,
      pattern="column", access_bytes=16)`: controls for any swizzle and access pattern
      (defaults: a 32 x 64 fp16 tile read down a column, 16 bytes per lane);
    - `swizzle(ck)` or `swizzle(ck, "%59")`: a compiled kernel's shared buffers, with the swizzle
      the compiler chose and the bank conflicts of its accesses without and with it.
    """
    from kernellab.lab.graphs import compiled_kernel

    if args and not isinstance(args[0], int) and compiled_kernel(args[0]) is not None:
        return KernelSwizzleView(compiled_kernel(args[0]), *args[1:], **kwargs)
    return SwizzleExplorer(*args, **kwargs)


__all__ = [
    "PATTERNS",
    "KernelSwizzleView",
    "SwizzleExplorer",
    "SwizzleView",
    "access_picture",
    "buffer_conflicts",
    "SwizzlePicture",
    "access_layout",
    "swizzle",
    "swizzle_data",
]
