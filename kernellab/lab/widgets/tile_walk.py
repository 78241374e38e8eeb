"""One program of a tiled matmul walking along K, and the bytes each step moves.

    kl.lab.tile_walk(M=512, N=512, K=512, BLOCK_M=64, BLOCK_N=64, BLOCK_K=32)   # a step slider

Program (0, 0) owns the BLOCK_M x BLOCK_N tile of C at the top left. Step k loads the k-th
BLOCK_M x BLOCK_K tile of A (its row band) and the k-th BLOCK_K x BLOCK_N tile of B (its column
band) and multiplies them into the accumulator, which stays in registers until the last step
writes it once. The picture shades the tiles already loaded, outlines the current pair, and
the caption counts the bytes: per step, so far, and the flops each byte feeds (the arithmetic
intensity that bigger tiles raise).

Pure function: `tile_walk_data(...)` computes the drawing data.
"""

from __future__ import annotations

from dataclasses import dataclass

from kernellab.lab.widgets.base import Explorer, powers_of_two


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


@dataclass
class TileWalk:
    M: int
    N: int
    K: int
    BLOCK_M: int
    BLOCK_N: int
    BLOCK_K: int
    elem_bytes: int
    acc_bytes: int
    step: int  # 1-based: the step being shown
    steps: int

    @property
    def bytes_per_step(self) -> int:
        return (self.BLOCK_M * self.BLOCK_K + self.BLOCK_K * self.BLOCK_N) * self.elem_bytes

    @property
    def bytes_so_far(self) -> int:
        return self.step * self.bytes_per_step

    @property
    def flops_per_step(self) -> int:
        return 2 * self.BLOCK_M * self.BLOCK_N * self.BLOCK_K

    @property
    def intensity(self) -> float:
        """Flops per byte loaded: 2·BM·BN·BK / ((BM + BN)·BK·bytes) = 2·BM·BN / ((BM + BN)·bytes)."""
        return self.flops_per_step / self.bytes_per_step

    @property
    def c_bytes(self) -> int:
        return self.BLOCK_M * self.BLOCK_N * self.acc_bytes

    @property
    def k_range(self) -> tuple[int, int]:
        start = (self.step - 1) * self.BLOCK_K
        return start, min(start + self.BLOCK_K, self.K)


def tile_walk_data(M, N, K, BLOCK_M, BLOCK_N, BLOCK_K, step=1, elem_bytes=2, acc_bytes=4) -> TileWalk:
    """Program (0, 0)'s walk at `step` (1 .. cdiv(K, BLOCK_K))."""
    for name, v in (("M", M), ("N", N), ("K", K), ("BLOCK_M", BLOCK_M), ("BLOCK_N", BLOCK_N), ("BLOCK_K", BLOCK_K)):
        if int(v) < 1:
            raise ValueError(f"{name} must be positive, got {v}")
    if BLOCK_M > M or BLOCK_N > N or BLOCK_K > K:
        raise ValueError(f"the tiles ({BLOCK_M}x{BLOCK_K} of A, {BLOCK_K}x{BLOCK_N} of B) must fit in "
                         f"A ({M}x{K}) and B ({K}x{N})")  # fmt: skip
    steps = _cdiv(int(K), int(BLOCK_K))
    return TileWalk(int(M), int(N), int(K), int(BLOCK_M), int(BLOCK_N), int(BLOCK_K), int(elem_bytes),
                    int(acc_bytes), max(1, min(int(step), steps)), steps)  # fmt: skip


def _kib(n: int) -> str:
    return f"{n} B" if n < 1024 else f"{n / 1024:g} KiB"


def draw_walk(data: TileWalk, fig) -> None:
    from matplotlib.patches import Rectangle

    ax_a, ax_b, ax_c = fig.subplots(1, 3, width_ratios=[data.K, data.N, data.N])
    k0, k1 = data.k_range
    done = (data.step - 1) * data.BLOCK_K
    panels = (
        (ax_a, f"A ({data.M}x{data.K})", data.K, data.M,
         [(0, 0, done, data.BLOCK_M, "#9ecae1"), (k0, 0, k1 - k0, data.BLOCK_M, "#3182bd")]),
        (ax_b, f"B ({data.K}x{data.N})", data.N, data.K,
         [(0, 0, data.BLOCK_N, done, "#a1d99b"), (0, k0, data.BLOCK_N, k1 - k0, "#31a354")]),
        (ax_c, f"C ({data.M}x{data.N})", data.N, data.M, [(0, 0, data.BLOCK_N, data.BLOCK_M, "#fdae6b")]),
    )  # fmt: skip
    for ax, title, width, height, boxes in panels:
        ax.add_patch(Rectangle((0, 0), width, height, fill=False, ec="#888888"))
        if ax is not ax_c:  # the band this program walks: A's rows, B's columns
            band = (data.K, data.BLOCK_M) if ax is ax_a else (data.BLOCK_N, data.K)
            ax.add_patch(Rectangle((0, 0), *band, fill=False, ec="black", ls="--", lw=0.8))
        for x, y, w, h, color in boxes:
            if w > 0 and h > 0:
                ax.add_patch(Rectangle((x, y), w, h, color=color, ec="black", lw=0.6))
        ax.set_xlim(0, width)
        ax.set_ylim(height, 0)
        ax.set_aspect("equal")
        ax.set_title(title, fontsize=9)
        ax.tick_params(labelsize=7)
    ax_a.set_xlabel(f"step {data.step}/{data.steps}: K {k0}..{k1 - 1}", fontsize=8)
    ax_c.set_xlabel(f"accumulator {data.BLOCK_M}x{data.BLOCK_N} in registers", fontsize=8)


def caption(data: TileWalk) -> str:
    a_tile = data.BLOCK_M * data.BLOCK_K * data.elem_bytes
    b_tile = data.BLOCK_K * data.BLOCK_N * data.elem_bytes
    return (
        f"step {data.step} of {data.steps}: loads A[0:{data.BLOCK_M}, {data.k_range[0]}:{data.k_range[1]}] "
        f"({_kib(a_tile)}) and B[{data.k_range[0]}:{data.k_range[1]}, 0:{data.BLOCK_N}] ({_kib(b_tile)}) "
        f"= {_kib(data.bytes_per_step)} per step; {_kib(data.bytes_so_far)} so far of "
        f"{_kib(data.steps * data.bytes_per_step)} for the whole walk\n"
        f"each step does {data.flops_per_step} flops: {data.intensity:.1f} flops per byte loaded "
        f"(2·BM·BN / ((BM + BN)·{data.elem_bytes} B): bigger tiles feed more math per byte)\n"
        f"the C tile ({_kib(data.c_bytes)} of fp32 accumulators) stays in registers and is written once, "
        f"after step {data.steps}"
    )


class TileWalkExplorer(Explorer):
    title = "a tile walking along K"

    def __init__(self, M=512, N=512, K=512, BLOCK_M=64, BLOCK_N=64, BLOCK_K=32, step=1, elem_bytes=2):
        import ipywidgets as w

        self.M, self.N, self.K, self.elem_bytes = M, N, K, elem_bytes

        def tile(name, value):
            return w.Dropdown(options=powers_of_two(16, 256), value=value, description=name,
                              layout=w.Layout(width="170px"), style={"description_width": "70px"})  # fmt: skip

        controls = {
            "BLOCK_M": tile("BLOCK_M", BLOCK_M), "BLOCK_N": tile("BLOCK_N", BLOCK_N),
            "BLOCK_K": tile("BLOCK_K", BLOCK_K),
            "step": w.IntSlider(value=step, min=1, max=_cdiv(K, BLOCK_K), description="step",
                                continuous_update=False),
        }  # fmt: skip
        super().__init__(controls, [["BLOCK_M", "BLOCK_N", "BLOCK_K"], ["step"]])

    def compute(self, BLOCK_M, BLOCK_N, BLOCK_K, step):
        steps = _cdiv(self.K, BLOCK_K)
        slider = self.controls["step"]
        if slider.max != steps:  # the slider follows BLOCK_K (setting it re-runs compute once)
            slider.max = steps
        return tile_walk_data(self.M, self.N, self.K, BLOCK_M, BLOCK_N, BLOCK_K, min(step, steps), self.elem_bytes)

    def draw(self, data, fig) -> None:
        draw_walk(data, fig)

    def figsize(self, data):
        return (11.0, 3.6)

    def caption(self, data) -> str:
        return caption(data)


def tile_walk(M=512, N=512, K=512, BLOCK_M=64, BLOCK_N=64, BLOCK_K=32, step=1, elem_bytes=2) -> TileWalkExplorer:
    """Program (0, 0) of a tiled matmul at step `step` of its walk along K (a slider moves it)."""
    return TileWalkExplorer(M, N, K, BLOCK_M, BLOCK_N, BLOCK_K, step, elem_bytes)


__all__ = ["TileWalk", "TileWalkExplorer", "caption", "tile_walk", "tile_walk_data"]
