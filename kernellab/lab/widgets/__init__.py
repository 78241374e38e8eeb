"""Interactive explorers (ipywidgets 8 + matplotlib), one module each:

- `layout(...)`       who holds each element of a tensor (blocked, slice, MMA, dot-operand)
- `swizzle(...)`      shared-memory banks and conflicts, before and after swizzling
- `tile_order(...)`   row-major vs grouped program order of a matmul, block loads, L2 hit rate
- `access_view(...)`  the elements each program loads and stores (interpreter traces)
- `ProfileView(...)`  a kernellab.profiler profile: table and flame chart (`kl.profiler.show()`)

Each explorer's drawing data comes from a pure function of its module (usable and tested
without a display); displaying one shows the live widget plus a static HTML snapshot that a
saved notebook keeps. ipywidgets and matplotlib are imported only when an explorer is built.
"""

from kernellab.lab.widgets.access import access_summary, access_view
from kernellab.lab.widgets.layout_explorer import layout, layout_table
from kernellab.lab.widgets.profile_view import ProfileView, flame_boxes, profile_rows
from kernellab.lab.widgets.swizzle_explorer import swizzle, swizzle_data
from kernellab.lab.widgets.tile_order_explorer import (
    block_loads,
    program_order,
    simulate_l2,
    tile_order,
)

__all__ = [
    "access_summary",
    "access_view",
    "block_loads",
    "flame_boxes",
    "layout",
    "layout_table",
    "ProfileView",
    "profile_rows",
    "program_order",
    "simulate_l2",
    "swizzle",
    "swizzle_data",
    "tile_order",
]  # fmt: skip
