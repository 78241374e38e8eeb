"""Tile-order explorer: in which order do the programs of a matmul visit the tiles of C?

Program `pid` of a matmul computes one BLOCK_M x BLOCK_N tile of C and, for that, loads a row of
A blocks (pid_m, 0..K/BLOCK_K) and a column of B blocks (0..K/BLOCK_K, pid_n). Row-major order
walks C row by row, so the first programs share one row of A but need many columns of B.
Triton's grouped order walks GROUP_SIZE_M rows of C column by column, so a burst of programs
reuses both A and B blocks while they are still in L2.

Pure functions (no display needed):
- `program_order(num_pid_m, num_pid_n, group_size_m, grouped)`: (pid_m, pid_n) per program.
- `tile_order_data(...)`: what the first `step` programs loaded (the picture's data).
- `block_loads(...)`: distinct A/B blocks loaded by the first programs (the seed example: 9x9
  tiles, K in 9 blocks, first 9 outputs: 90 blocks row-major, 54 grouped with GROUP_SIZE_M=3).
- `simulate_l2(...)`: an LRU L2 over block-sized lines, programs run in waves of #SMs in
  lockstep over K; gives the hit rate and the DRAM traffic.
"""

from __future__ import annotations

import functools
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from kernellab.lab.widgets.base import Explorer, powers_of_two


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def program_order(
    num_pid_m: int, num_pid_n: int, group_size_m: int = 1, grouped: bool = True
) -> np.ndarray:
    """(num_pid_m * num_pid_n, 2) array: the C tile (pid_m, pid_n) each program computes.

    Grouped order is Triton's formula (matmul tutorial):
        num_pid_in_group = GROUP_SIZE_M * num_pid_n
        group_id = pid // num_pid_in_group;  first_pid_m = group_id * GROUP_SIZE_M
        group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
        pid_m = first_pid_m + (pid % num_pid_in_group) % group_size_m
        pid_n = (pid % num_pid_in_group) // group_size_m
    """
    if num_pid_m < 1 or num_pid_n < 1:
        raise ValueError("the C grid needs at least one tile in each dimension")
    pid = np.arange(num_pid_m * num_pid_n)
    if not grouped:
        return np.stack([pid // num_pid_n, pid % num_pid_n], axis=1)
    if group_size_m < 1:
        raise ValueError(f"GROUP_SIZE_M must be at least 1, got {group_size_m}")
    in_group = group_size_m * num_pid_n
    first_pid_m = (pid // in_group) * group_size_m
    group_rows = np.minimum(num_pid_m - first_pid_m, group_size_m)
    pid_m = first_pid_m + (pid % in_group) % group_rows
    pid_n = (pid % in_group) // group_rows
    return np.stack([pid_m, pid_n], axis=1)


@dataclass
class TileOrderData:
    """The first `step` programs of one ordering: which C tiles are done, which A/B blocks loaded."""

    grouped: bool
    order: np.ndarray  # (P, 2) (pid_m, pid_n) per program
    rank: np.ndarray  # (tiles_m, tiles_n): program index computing each C tile
    step: int
    a_loaded: np.ndarray  # (tiles_m, tiles_k) bool
    b_loaded: np.ndarray  # (tiles_k, tiles_n) bool
    a_blocks: int
    b_blocks: int

    @property
    def blocks(self) -> int:
        return self.a_blocks + self.b_blocks

    @property
    def block_loads_without_reuse(self) -> int:
        """Loads if no block were ever reused: every program loads its whole row and column."""
        return 2 * self.step * self.a_loaded.shape[1]


def _tiles(M, N, K, BLOCK_M, BLOCK_N, BLOCK_K) -> tuple[int, int, int]:
    for name, v in (("M", M), ("N", N), ("K", K), ("BLOCK_M", BLOCK_M), ("BLOCK_N", BLOCK_N),
                    ("BLOCK_K", BLOCK_K)):  # fmt: skip
        if int(v) < 1:
            raise ValueError(f"{name} must be positive, got {v}")
    return cdiv(M, BLOCK_M), cdiv(N, BLOCK_N), cdiv(K, BLOCK_K)


def tile_order_data(
    M, N, K, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_SIZE_M, step, grouped=True
) -> TileOrderData:
    """What the first `step` programs compute and load, in row-major or grouped order."""
    tm, tn, tk = _tiles(M, N, K, BLOCK_M, BLOCK_N, BLOCK_K)
    order = program_order(tm, tn, GROUP_SIZE_M, grouped)
    step = max(0, min(int(step), len(order)))
    rank = np.empty((tm, tn), np.int64)
    rank[order[:, 0], order[:, 1]] = np.arange(len(order))
    done = order[:step]
    a_loaded = np.zeros((tm, tk), bool)
    b_loaded = np.zeros((tk, tn), bool)
    a_loaded[done[:, 0], :] = True
    b_loaded[:, done[:, 1]] = True
    return TileOrderData(grouped, order, rank, step, a_loaded, b_loaded,
                         int(a_loaded.sum()), int(b_loaded.sum()))  # fmt: skip


def block_loads(M, N, K, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_SIZE_M, step) -> dict[str, int]:
    """Distinct blocks of A and B the first `step` programs load: {'row-major': n, 'grouped': n}."""
    return {
        ("grouped" if g else "row-major"): tile_order_data(
            M, N, K, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_SIZE_M, step, g
        ).blocks
        for g in (False, True)
    }


@dataclass(frozen=True)
class L2Result:
    grouped: bool
    accesses: int  # block loads issued by all programs
    hits: int
    dram_bytes: int  # bytes brought from DRAM (misses x block size)
    min_bytes: int  # A + B once: the least traffic possible
    waves: int

    @property
    def hit_rate(self) -> float:
        return self.hits / self.accesses if self.accesses else 0.0

    def __str__(self) -> str:
        order = "grouped" if self.grouped else "row-major"
        return (
            f"{order}: L2 hit rate {self.hit_rate:.1%}, DRAM traffic {self.dram_bytes / 1e6:,.1f} MB "
            f"({self.dram_bytes / max(self.min_bytes, 1):.2f}x the {self.min_bytes / 1e6:,.1f} MB of A and B)"
        )


@functools.lru_cache(maxsize=64)
def simulate_l2(M, N, K, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_SIZE_M, grouped=True, elem_bytes=2,
                l2_bytes=50 * 2**20, num_sms=132) -> L2Result:  # fmt: skip
    """Hit rate of an LRU L2 (lines = one A or B block) for the whole matmul.

    Programs run in waves of `num_sms`; inside a wave they advance over K in lockstep, so at
    k-step t the wave asks for A[pid_m, t] and B[t, pid_n] of each of its programs. Requests for
    a block already asked for in the same step are hits. A model, not a measurement: real
    programs drift apart, and L2 is set-associative and split in two partitions on H100.
    """
    tm, tn, tk = _tiles(M, N, K, BLOCK_M, BLOCK_N, BLOCK_K)
    if num_sms < 1 or l2_bytes <= 0:
        raise ValueError("num_sms and l2_bytes must be positive")
    order = program_order(tm, tn, GROUP_SIZE_M, grouped)
    a_bytes = BLOCK_M * BLOCK_K * elem_bytes
    b_bytes = BLOCK_K * BLOCK_N * elem_bytes
    cache: OrderedDict = OrderedDict()
    used = hits = misses_bytes = accesses = 0
    waves = cdiv(len(order), num_sms)
    for w in range(waves):
        wave = order[w * num_sms : (w + 1) * num_sms]
        rows, row_counts = np.unique(wave[:, 0], return_counts=True)
        cols, col_counts = np.unique(wave[:, 1], return_counts=True)
        accesses += 2 * len(wave) * tk
        hits += (int(row_counts.sum()) - len(rows) + int(col_counts.sum()) - len(cols)) * tk
        for t in range(tk):
            for key, size in [(("A", int(r), t), a_bytes) for r in rows] + [
                (("B", t, int(c)), b_bytes) for c in cols
            ]:
                if key in cache:
                    cache.move_to_end(key)
                    hits += 1
                    continue
                misses_bytes += size
                cache[key] = size
                used += size
                while used > l2_bytes and cache:
                    _, evicted = cache.popitem(last=False)
                    used -= evicted
    min_bytes = (M * K + K * N) * elem_bytes
    return L2Result(grouped, accesses, hits, misses_bytes, min_bytes, waves)


@dataclass
class TileOrderPicture:
    row_major: TileOrderData
    grouped: TileOrderData
    l2: tuple[L2Result, L2Result] | None
    params: dict


class TileOrderExplorer(Explorer):
    title = "tile order"

    def __init__(self, M=8192, N=8192, K=8192, BLOCK_M=128, BLOCK_N=128, BLOCK_K=64,
                 GROUP_SIZE_M=8, step=None, l2_mb=50, num_sms=132, elem_bytes=2, simulate=True):  # fmt: skip
        import ipywidgets as w

        def size(name, value):
            return w.BoundedIntText(value=value, min=1, max=1 << 20, step=1, description=name,
                                    layout=w.Layout(width="170px"), style={"description_width": "60px"})  # fmt: skip

        def block(name, value):
            options = sorted(set(powers_of_two(16, 256)) | {value})
            return w.Dropdown(options=options, value=value, description=name,
                              layout=w.Layout(width="170px"), style={"description_width": "70px"})  # fmt: skip

        tm, tn, _ = _tiles(M, N, K, BLOCK_M, BLOCK_N, BLOCK_K)
        controls = {
            "M": size("M", M), "N": size("N", N), "K": size("K", K),
            "BLOCK_M": block("BLOCK_M", BLOCK_M), "BLOCK_N": block("BLOCK_N", BLOCK_N),
            "BLOCK_K": block("BLOCK_K", BLOCK_K),
            "GROUP_SIZE_M": w.BoundedIntText(value=GROUP_SIZE_M, min=1, max=4096, description="GROUP_SIZE_M",
                                             layout=w.Layout(width="200px"), style={"description_width": "100px"}),
            "step": w.IntSlider(value=min(tm, tm * tn) if step is None else step, min=0, max=tm * tn,
                                description="programs", continuous_update=True),
            "l2_mb": w.BoundedFloatText(value=l2_mb, min=0.25, max=1024, description="L2 MB",
                                        layout=w.Layout(width="150px"), style={"description_width": "50px"}),
            "num_sms": w.BoundedIntText(value=num_sms, min=1, max=1024, description="SMs",
                                        layout=w.Layout(width="130px"), style={"description_width": "40px"}),
            "elem_bytes": w.Dropdown(options=[1, 2, 4], value=elem_bytes, description="bytes/elem",
                                     layout=w.Layout(width="160px"), style={"description_width": "80px"}),
            "simulate": w.Checkbox(value=simulate, description="simulate L2"),
        }  # fmt: skip
        super().__init__(controls, [["M", "N", "K"], ["BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_SIZE_M"],
                                    ["step"], ["l2_mb", "num_sms", "elem_bytes", "simulate"]])  # fmt: skip

    def compute(self, M, N, K, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_SIZE_M, step, l2_mb, num_sms,
                elem_bytes, simulate):  # fmt: skip
        tm, tn, _ = _tiles(M, N, K, BLOCK_M, BLOCK_N, BLOCK_K)
        slider = self.controls["step"]
        if slider.max != tm * tn:  # the grid changed: keep the slider in range
            slider.unobserve(self._on_change, names="value")
            slider.max = tm * tn
            slider.value = min(step, tm * tn)
            slider.observe(self._on_change, names="value")
            step = slider.value
        args = (M, N, K, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_SIZE_M)
        l2 = None
        if simulate:
            l2 = tuple(
                simulate_l2(
                    *args,
                    grouped=g,
                    elem_bytes=elem_bytes,
                    l2_bytes=int(l2_mb * 2**20),
                    num_sms=num_sms,
                )
                for g in (False, True)
            )
        return TileOrderPicture(
            tile_order_data(*args, step, grouped=False), tile_order_data(*args, step, grouped=True),
            l2, dict(zip(("M", "N", "K", "BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_SIZE_M"), args)),
        )  # fmt: skip

    def figsize(self, data):
        tm, tn = data.grouped.rank.shape
        tk = data.grouped.a_loaded.shape[1]
        width = min(14.0, 2.5 + 0.35 * (tk + 2 * tn))
        cell = (width - 2.5) / (tk + 2 * tn)
        return (width, min(12.0, 0.8 + 2 * (max(tm, tk) * cell + 0.9)))

    def draw(self, data: TileOrderPicture, fig) -> None:
        draw_tile_order(data, fig)

    def caption(self, data: TileOrderPicture) -> str:
        r, g = data.row_major, data.grouped
        lines = [
            (
                f"first {g.step} programs: row-major loads {r.blocks} distinct blocks "
                f"({r.a_blocks} of A + {r.b_blocks} of B), grouped (GROUP_SIZE_M={data.params['GROUP_SIZE_M']}) "
                f"loads {g.blocks} ({g.a_blocks} + {g.b_blocks}); without any reuse: {g.block_loads_without_reuse}"
            )
        ]
        if data.l2:
            lines += [str(x) for x in data.l2]
            lines.append(l2_verdict(*data.l2, l2_bytes=int(self.values()["l2_mb"] * 2**20)))
        return "\n".join(lines)


def l2_verdict(row_major: L2Result, grouped: L2Result, l2_bytes: int) -> str:
    """Why the two orders' L2 results differ, or why they can't: when A and B fit in L2 (or one
    wave's blocks stay there), every block is read from DRAM once whatever the order."""
    a_and_b = row_major.min_bytes
    if a_and_b <= l2_bytes:
        return (f"L2 holds everything: A and B ({a_and_b / 2**20:,.1f} MiB) fit in the "
                f"{l2_bytes / 2**20:,.1f} MiB L2, so both orders read each block from DRAM once; "
                "make M, N, K larger than L2 (as in the tutorial) to see the orders differ.")  # fmt: skip
    if row_major.dram_bytes == grouped.dram_bytes == a_and_b:
        return (f"A and B ({a_and_b / 2**20:,.1f} MiB) exceed the L2, but the blocks that the "
                "programs running at once share stay in it: both orders read each block once.")  # fmt: skip
    ratio = row_major.dram_bytes / max(grouped.dram_bytes, 1)
    return (f"A and B ({a_and_b / 2**20:,.1f} MiB) exceed the {l2_bytes / 2**20:,.1f} MiB L2: "
            f"row-major order moves {ratio:.2f}x the DRAM bytes of grouped order.")  # fmt: skip


def draw_tile_order(data: TileOrderPicture, fig) -> None:
    from matplotlib import colors
    from matplotlib.ticker import MaxNLocator

    axes = fig.subplots(2, 3, gridspec_kw={"width_ratios": [data.grouped.a_loaded.shape[1] + 0.01,
                                                            data.grouped.rank.shape[1],
                                                            data.grouped.rank.shape[1]]})  # fmt: skip
    for row, d in enumerate((data.row_major, data.grouped)):
        name = "grouped" if d.grouped else "row-major"
        tm, tn = d.rank.shape
        tk = d.a_loaded.shape[1]
        ax_a, ax_c, ax_b = axes[row]
        loaded = colors.ListedColormap(["#f2f2f2", "#e4572e"])
        ax_a.imshow(d.a_loaded, cmap=loaded, vmin=0, vmax=1, aspect="equal")
        ax_a.set_title(f"A blocks loaded: {d.a_blocks}", fontsize=10)
        ax_a.set_xlabel("k block")
        ax_a.set_ylabel(f"{name}\npid_m")
        ax_b.imshow(
            d.b_loaded,
            cmap=colors.ListedColormap(["#f2f2f2", "#3a86ff"]),
            vmin=0,
            vmax=1,
            aspect="equal",
        )
        ax_b.set_title(f"B blocks loaded: {d.b_blocks}", fontsize=10)
        ax_b.set_xlabel("pid_n")
        ax_b.set_ylabel("k block")
        done = d.rank < d.step
        shade = np.where(done, d.rank / max(d.step - 1, 1), np.nan)
        ax_c.imshow(np.ones_like(shade), cmap=colors.ListedColormap(["#f2f2f2"]), aspect="equal")
        ax_c.imshow(shade, cmap="viridis", vmin=0, vmax=1.25, aspect="equal")
        ax_c.set_title(f"C tiles: program order ({name}), {d.step} done", fontsize=10)
        ax_c.set_xlabel("pid_n")
        ax_c.set_ylabel("pid_m")
        if tm * tn <= 400:
            for (i, j), r in np.ndenumerate(d.rank):
                ax_c.text(j, i, str(r), ha="center", va="center", fontsize=7,
                          color="white" if r < d.step else "#888")  # fmt: skip
        for ax, (h, w) in ((ax_a, (tm, tk)), (ax_b, (tk, tn)), (ax_c, (tm, tn))):
            if h * w <= 4096:  # cell borders (lines, not minor ticks: far cheaper to draw)
                ax.vlines(np.arange(0.5, w - 1, 1), -0.5, h - 0.5, colors="white", linewidth=0.8)
                ax.hlines(np.arange(0.5, h - 1, 1), -0.5, w - 0.5, colors="white", linewidth=0.8)
            ax.xaxis.set_major_locator(MaxNLocator(integer=True, nbins=8))
            ax.yaxis.set_major_locator(MaxNLocator(integer=True, nbins=8))
    fig.suptitle(f"programs 0..{data.grouped.step - 1}: row-major loads {data.row_major.blocks} blocks, "
                 f"grouped loads {data.grouped.blocks}", fontsize=11)  # fmt: skip


def tile_order(
    M=8192, N=8192, K=8192, BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, GROUP_SIZE_M=8, **kwargs
):
    """The tile-order explorer for a matmul C[M, N] = A[M, K] @ B[K, N]. The defaults are the
    tutorial's 8192³ fp16 with 128 x 128 x 64 blocks and GROUP_SIZE_M=8: A and B (256 MiB) are
    far larger than an H100's 50 MiB L2, so the two orders' L2 traffic differs (with A and B
    inside L2 they can't, and the caption says so). Keyword options: step, l2_mb, num_sms,
    elem_bytes, simulate."""
    return TileOrderExplorer(M, N, K, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_SIZE_M, **kwargs)


__all__ = [
    "L2Result",
    "l2_verdict",
    "TileOrderExplorer",
    "block_loads",
    "program_order",
    "simulate_l2",
    "tile_order",
    "tile_order_data",
]  # fmt: skip
