"""Bitonic-network explorer: what each column of `tl.sort`'s network costs under a layout.

`tl.sort` over n elements is log2(n)·(log2(n)+1)/2 columns of compare-exchanges; in the column
at distance 2^j every element meets the one whose index differs in bit j. Who holds that
partner is the layout's answer for tensor bit j: the same thread (a register: one select), a
lane of the same warp (a warp shuffle), or another warp (a trip through shared memory and a
barrier). The picture draws the network on its wires, each column coloured by that answer, so
you can see which layouts keep the long columns cheap.

Pure functions (no display needed):
- `partner_holder(layout, distance)`: "register", "lane" or "warp" for a 1-D layout.
- `bitonic_columns(n, layout, descending)`: every column, with its holder and its pairs.
"""

from __future__ import annotations

from dataclasses import dataclass

from kernellab.lab.widgets.base import Explorer, powers_of_two
from kernellab.layouts.blocked import blocked
from kernellab.layouts.linear import LinearLayout

HOLDER_COLOURS = {"register": "#2a9d4b", "lane": "#2b6cb0", "warp": "#c0392b"}
HOLDER_COST = {"register": "a select", "lane": "a warp shuffle", "warp": "shared memory + a barrier"}


def partner_holder(layout: LinearLayout, distance: int) -> str:
    """Which part of the hardware index (register, lane or warp) tells apart two elements
    `distance` (a power of two) apart in a 1-D tensor laid out by `layout`."""
    for in_dim in ("register", "lane", "warp"):
        if (distance,) in layout.bases.get(in_dim, ()):
            return in_dim
    raise ValueError(f"no hardware bit of the layout holds distance {distance}")


@dataclass(frozen=True)
class BitonicColumn:
    stage: int  # the merge this column belongs to (runs of 2**stage get sorted)
    distance: int  # partners are `distance` apart
    holder: str  # register, lane or warp
    pairs: tuple  # (low index, high index, descending?) for every pair


def bitonic_columns(n: int, layout: LinearLayout, descending: bool = False) -> list[BitonicColumn]:
    """The network `tl.sort` builds for n elements, column by column: in stage s, distances
    2^(s-1) down to 1, ascending runs of 2^s alternating with descending ones (the last stage
    all in the requested direction)."""
    if n < 2 or n & (n - 1):
        raise ValueError(f"a bitonic network sorts a power of two of at least 2 elements, not {n}")
    log_n = n.bit_length() - 1
    columns = []
    for stage in range(1, log_n + 1):
        for j in reversed(range(stage)):
            d = 1 << j
            pairs = tuple(
                (i, i + d, descending if stage == log_n else bool((i >> stage) & 1))
                for i in range(n)
                if not i & d
            )
            columns.append(BitonicColumn(stage, d, partner_holder(layout, d), pairs))
    return columns


def default_layout(n: int, size_per_thread: int, num_warps: int) -> LinearLayout:
    """The blocked layout the compiler gives a 1-D tensor of n elements."""
    return blocked([size_per_thread], [32], [num_warps], [0], [n])


@dataclass
class BitonicPicture:
    n: int
    size_per_thread: int
    num_warps: int
    columns: list

    def counts(self) -> dict[str, int]:
        out = {h: 0 for h in HOLDER_COLOURS}
        for c in self.columns:
            out[c.holder] += 1
        return out


def draw_bitonic(data: BitonicPicture, fig) -> None:
    from matplotlib.lines import Line2D

    ax = fig.subplots()
    n, columns = data.n, data.columns
    ax.hlines(range(n), -0.5, len(columns) - 0.5, color="#bbb", linewidth=0.6)
    for x, column in enumerate(columns):
        colour = HOLDER_COLOURS[column.holder]
        for k, (low, high, down) in enumerate(column.pairs):
            offset = x + (k % 4 - 1.5) * 0.12 if n > 16 else x  # spread crossing pairs
            ax.annotate(
                "", xy=(offset, low if down else high), xytext=(offset, high if down else low),
                arrowprops={"arrowstyle": "-|>", "color": colour, "lw": 1.0, "shrinkA": 0,
                            "shrinkB": 0, "mutation_scale": 6},
            )  # fmt: skip
    stage_ends = [i for i in range(1, len(columns)) if columns[i].stage != columns[i - 1].stage]
    for x in stage_ends:
        ax.axvline(x - 0.5, color="#888", linewidth=0.8, linestyle=":")
    ax.set_xlim(-0.7, len(columns) - 0.3)
    ax.set_ylim(n - 0.5, -0.5)
    ax.set_xticks(range(len(columns)), [f"{c.distance}" for c in columns], fontsize=7)
    ax.set_xlabel("column (partner distance); dotted lines separate the merge stages")
    ax.set_ylabel("element index (arrow: the larger value goes to its head)")
    handles = [Line2D([0], [0], color=c, lw=2, label=f"{h}: {HOLDER_COST[h]}")
               for h, c in HOLDER_COLOURS.items()]  # fmt: skip
    ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=3, fontsize=8)


class BitonicExplorer(Explorer):
    title = "bitonic sort network"

    def __init__(self, n=32, size_per_thread=2, num_warps=1):
        import ipywidgets as w

        def choice(name, options, value):
            return w.Dropdown(options=options, value=value, description=name,
                              layout=w.Layout(width="190px"), style={"description_width": "100px"})  # fmt: skip

        controls = {
            "n": choice("elements", powers_of_two(2, 128), n),
            "size_per_thread": choice("per thread", powers_of_two(1, 16), size_per_thread),
            "num_warps": choice("warps", powers_of_two(1, 8), num_warps),
        }
        super().__init__(controls)

    def compute(self, n, size_per_thread, num_warps):
        return bitonic_picture(n, size_per_thread, num_warps)

    def figsize(self, data):
        return (min(14.0, 2.0 + 0.45 * len(data.columns)), min(12.0, 1.5 + 0.16 * data.n))

    def draw(self, data, fig) -> None:
        draw_bitonic(data, fig)

    def caption(self, data) -> str:
        counts = data.counts()
        warps = f"{data.num_warps} warp{'s' if data.num_warps > 1 else ''}"
        return (
            f"{len(data.columns)} columns for {data.n} elements ({data.size_per_thread} per "
            f"thread, 32 lanes, {warps}): {counts['register']} in registers, "
            f"{counts['lane']} across lanes (shuffles), {counts['warp']} across warps (shared "
            "memory). More elements per thread turn shuffles into selects."
        )


def bitonic_picture(n: int, size_per_thread: int, num_warps: int) -> BitonicPicture:
    """The drawing data: the network for n elements under the default blocked layout."""
    layout = default_layout(n, size_per_thread, num_warps)
    return BitonicPicture(n, size_per_thread, num_warps, bitonic_columns(n, layout))


def bitonic(n=32, size_per_thread=2, num_warps=1):
    """The bitonic-network explorer: `tl.sort`'s compare-exchange columns over n elements,
    coloured by where each pair lives under a blocked layout (registers, lanes, warps)."""
    return BitonicExplorer(n, size_per_thread, num_warps)


__all__ = [
    "BitonicColumn",
    "BitonicExplorer",
    "bitonic",
    "bitonic_columns",
    "bitonic_picture",
    "partner_holder",
]
