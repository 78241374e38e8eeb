"""Interactive explorers (ipywidgets 8 + matplotlib), one module each:

- `layout(...)`       who holds each element of a tensor (blocked, slice, MMA, dot-operand)
- `layouts(ck)`       every layout a compiled kernel's TTGIR uses, drawn the same way
- `swizzle(...)`      shared-memory banks and conflicts, before and after swizzling
- `tile_order(...)`   row-major vs grouped program order of a matmul, block loads, L2 hit rate
- `access_view(...)`  the elements each program loads and stores (interpreter traces)
- `sram_row(...)`     where a softmax row lives: registers per thread, shared memory across warps
- `tile_walk(...)`    a matmul tile walking along K, with the bytes each step moves
- `bitonic(...)`      tl.sort's network, each column coloured by where its pairs live
- `ProfileView(...)`  a kernellab.profiler profile: table and flame chart (`kl.profiler.show()`)

Each explorer's drawing data comes from a pure function of its module (usable and tested
without a display); displaying one shows the live widget plus a static HTML snapshot that a
saved notebook keeps. ipywidgets and matplotlib are imported only when an explorer is built.
"""

from kernellab.lab.widgets.access import access_summary, access_view
from kernellab.lab.widgets.bitonic_explorer import bitonic, bitonic_columns
from kernellab.lab.widgets.layout_explorer import layout, layout_table, layouts
from kernellab.lab.widgets.profile_view import ProfileView, flame_boxes, profile_rows
from kernellab.lab.widgets.sram_row import row_residency, sram_row
from kernellab.lab.widgets.swizzle_explorer import swizzle, swizzle_data
from kernellab.lab.widgets.tile_order_explorer import (
    block_loads,
    program_order,
    simulate_l2,
    tile_order,
)
from kernellab.lab.widgets.tile_walk import tile_walk, tile_walk_data

__all__ = [
    "access_summary",
    "access_view",
    "bitonic",
    "bitonic_columns",
    "block_loads",
    "flame_boxes",
    "layout",
    "layout_table",
    "layouts",
    "ProfileView",
    "profile_rows",
    "program_order",
    "row_residency",
    "simulate_l2",
    "sram_row",
    "swizzle",
    "swizzle_data",
    "tile_order",
    "tile_walk",
    "tile_walk_data",
]  # fmt: skip
