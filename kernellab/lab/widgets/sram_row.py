"""Where a softmax row lives while the kernel works on it, read off the compiled kernel.

    kl.lab.sram_row(softmax_kernel, signature="*fp32,*fp32,i32,i32,i32",
                    constexprs={"BLOCK": 1024}, n=781)          # a num_warps dropdown recompiles

The kernel is compiled for sm_90 (no GPU needed). Its first 1-D `tt.load` is the row; that
value's TTGIR layout (a `kernellab.layouts.LinearLayout`) says which warp, lane and register
holds each element: the top picture colours the row by warp and outlines the registers of
threads 0 and 1. Each reduction (`tt.reduce`: the max, the sum) combines a thread's registers,
then the lanes of a warp by shuffles, then the warps through shared memory: the lower picture
draws the shared-memory slots the lowering plans for each (`shared_memory_plan`), one partial
per warp. Nothing here is a model: the numbers are the compiler's.

Pure function: `row_residency(ck, n)` computes the drawing data.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kernellab.lab.widgets.base import Explorer


@dataclass
class Reduction:
    combine: str  # the combining op, e.g. "arith.maxnumf"
    shared_bytes: int  # the scratch the lowering plans for it


@dataclass
class RowPicture:
    block: int  # elements of the row tensor
    n: int  # elements of the row that are real (the rest are masked)
    warp: np.ndarray  # per element: the warp, lane and register that hold it
    lane: np.ndarray
    register: np.ndarray
    registers_per_thread: int
    lanes: int
    warps: int
    layout: str
    reductions: list[Reduction]
    registers: int | None  # the cubin's registers per thread
    shared: int | None  # the kernel's shared memory in bytes

    @property
    def elements_per_thread(self) -> int:
        return self.registers_per_thread


def _combine_name(reduce_op) -> str:
    for op in reduce_op.regions[0].blocks[0].ops:
        if op.name.startswith(("arith.", "math.")):
            return op.name
    return "combine"


def row_residency(ck, n: int | None = None) -> RowPicture:
    """Drawing data of `ck` (a CompiledKernel with TTGIR): the layout of its first 1-D load and
    the shared memory of its reductions. `n` is the row's real length (default: the block)."""
    from kernellab.backends.nvidia.lowering import shared_memory_plan
    from kernellab.ir import parse_module, tt
    from kernellab.lab.widgets.layout_explorer import layout_table
    from kernellab.layouts.encodings import from_encoding

    if not isinstance(ck.asm.get("ttgir"), str):
        raise ValueError(f"{ck.name} has no TTGIR (target {ck.metadata.target}); compile it for sm_90")
    module = parse_module(ck.asm["ttgir"])
    func = tt.entry_function(module)
    row = next((op for op in func.walk() if op.name == "tt.load"
                and len(getattr(op.results[0].type, "shape", ())) == 1), None)  # fmt: skip
    if row is None:
        raise ValueError(f"{ck.name} loads no 1-D row (no tt.load of a 1-D tensor in its TTGIR)")
    row_type = row.results[0].type
    shape = [int(s) for s in row_type.get_shape()]
    picture = layout_table(from_encoding(row_type.encoding, shape))
    plan = shared_memory_plan(module, ck.metadata.options)
    reductions = [Reduction(_combine_name(op), int(plan.scratch_size.get(op, 0)))
                  for op in func.walk() if op.name == "tt.reduce"]  # fmt: skip
    md = ck.metadata
    return RowPicture(
        shape[0], shape[0] if n is None else min(int(n), shape[0]), picture.warp.reshape(-1),
        picture.lane.reshape(-1), picture.register.reshape(-1), picture.num_registers,
        picture.num_lanes, picture.num_warps, str(row_type.encoding), reductions, md.registers, md.shared,
    )  # fmt: skip


def draw_row(pic: RowPicture, fig) -> None:
    from matplotlib import colormaps
    from matplotlib.patches import Patch, Rectangle

    width = min(pic.block, 128)
    rows = -(-pic.block // width)
    top, bottom = fig.subplots(2, 1, height_ratios=[max(rows, 2), 2])
    colors = np.array([colormaps["tab10"](w % 10)[:3] for w in range(pic.warps)])
    rgb = colors[pic.warp].copy()
    rgb[pic.n:] = 0.55 + 0.45 * rgb[pic.n:]  # masked lanes: washed out
    top.imshow(rgb.reshape(rows, width, 3), interpolation="nearest", aspect="auto")
    for thread, style in ((0, "-"), (1, ":")):
        for e in np.flatnonzero((pic.warp == 0) & (pic.lane == thread)):
            r, c = divmod(int(e), width)
            top.add_patch(Rectangle((c - 0.5, r - 0.5), 1, 1, fill=False, lw=1.2, ls=style, ec="black"))
    top.set_yticks(range(rows), [f"{r * width}" for r in range(rows)], fontsize=7)
    top.set_xticks([0, width // 2, width - 1], ["+0", f"+{width // 2}", f"+{width - 1}"], fontsize=7)
    top.set_title(f"a row of {pic.block} elements in registers: {pic.elements_per_thread} per thread, "
                  f"{pic.lanes} lanes x {pic.warps} warps", fontsize=9)  # fmt: skip
    handles = [Patch(facecolor=colors[w], label=f"warp {w}") for w in range(min(pic.warps, 8))]
    handles.append(Patch(facecolor="white", edgecolor="black", label="thread 0's registers"))
    handles.append(Patch(facecolor="white", edgecolor="black", ls=":", label="thread 1's registers"))
    if pic.n < pic.block:
        handles.append(Patch(facecolor=(0.85, 0.85, 0.85), label=f"masked (past n = {pic.n})"))
    top.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7, frameon=False)

    bottom.set_xlim(0, max(1, len(pic.reductions)) * (pic.warps + 1))
    bottom.set_ylim(0, 1)
    bottom.axis("off")
    for i, red in enumerate(pic.reductions):
        x0 = i * (pic.warps + 1)
        for w in range(pic.warps):
            bottom.add_patch(Rectangle((x0 + w, 0.2), 0.9, 0.45, color=colors[w]))
            if pic.warps <= 16:
                bottom.text(x0 + w + 0.45, 0.42, f"w{w}", ha="center", va="center", fontsize=7)
        bottom.text(x0, 0.8, f"{red.combine.split('.')[-1]}: {red.shared_bytes} B of shared memory, "
                             f"one partial per warp", fontsize=8)  # fmt: skip
    if not pic.reductions:
        bottom.text(0, 0.5, "no reduction in this kernel", fontsize=8)


def caption(pic: RowPicture) -> str:
    lines = [
        f"layout of the row: {pic.layout}",
        f"each of the {pic.lanes * pic.warps} threads holds {pic.elements_per_thread} elements of the row in "
        f"registers ({pic.registers} registers per thread in the cubin); the last {pic.block - pic.n} "
        f"elements of the block are masked (past n = {pic.n})",
    ]  # fmt: skip
    for red in pic.reductions:
        across = (f"then the {pic.warps} warps' partials meet in {red.shared_bytes} bytes of shared memory"
                  if pic.warps > 1 else "and with one warp that is the whole row: no shared memory")  # fmt: skip
        lines.append(
            f"{red.combine}: a thread combines its {pic.elements_per_thread} registers, a warp's "
            f"{pic.lanes} lanes combine by {int(np.log2(pic.lanes))} shuffle rounds, {across}"
        )
    lines.append(f"the row never leaves the SM: {pic.shared} bytes of shared memory in all, no DRAM round trip")
    return "\n".join(lines)


class SramRow(Explorer):
    title = "a row in SRAM"

    def __init__(self, kernel, signature, constexprs, n=None, num_warps=4, target="sm_90"):
        import ipywidgets as w

        self.kernel, self.signature, self.constexprs = kernel, signature, dict(constexprs or {})
        self.n, self.target = n, target
        controls = {"num_warps": w.Dropdown(options=[1, 2, 4, 8, 16], value=num_warps, description="num_warps")}
        super().__init__(controls)

    def compute(self, num_warps):
        from kernellab.compiler import compile

        ck = compile(self.kernel, signature=self.signature, constexprs=self.constexprs,
                     target=self.target, num_warps=num_warps)  # fmt: skip
        return row_residency(ck, self.n)

    def draw(self, data, fig) -> None:
        draw_row(data, fig)

    def figsize(self, data):
        rows = -(-data.block // min(data.block, 128))
        return (11.0, 1.6 + 0.28 * max(rows, 2) + 1.0)

    def caption(self, data) -> str:
        return caption(data)


def sram_row(kernel, signature, constexprs=None, n=None, num_warps=4, target="sm_90") -> SramRow:
    """The picture of where a row lives in a row-per-program kernel (softmax, a norm): compiled
    for `target` with `num_warps` warps (a dropdown recompiles with another count)."""
    return SramRow(kernel, signature, constexprs, n, num_warps, target)


__all__ = ["Reduction", "RowPicture", "SramRow", "row_residency", "sram_row"]
