"""How to convert a tensor from one register layout to another, decided from the layouts.

For every destination index h (register, lane, warp, block) we need a source index holding
the same element, preferably in the same thread. Write the source index as
(register', lane ^ dl, warp ^ dw, block ^ db): it must satisfy
    src(register', dl, dw, db) = dst(h) ^ src(lane, warp, block of h),
so the deltas are src's pseudo-inverse applied to the right-hand side. That map is linear in
h, and src's pseudo-inverse picks the smallest preimage — smallest block delta, then warp,
then lane, then register — so a delta is non-zero only where no closer source exists.
The kind of conversion follows from which deltas can be non-zero:
  none at all and the same map          -> "noop"
  no lane/warp/block delta              -> "registers" (each thread rearranges its registers)
  lane deltas only                      -> "shuffle"   (warp shuffles: read lane ^ dl)
  warp or block deltas                  -> "shared"    (through shared memory)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kernellab.layouts.banks import SharedAccess, best_swizzle
from kernellab.layouts.ldmatrix import stmatrix_access, stmatrix_rows
from kernellab.layouts.linear import LinearLayout

if TYPE_CHECKING:
    import numpy as np

_THREAD_DIMS = ("lane", "warp", "block")


def _xor(a, b):
    return tuple(x ^ y for x, y in zip(a, b))


def source_deltas(src: LinearLayout, dst: LinearLayout) -> LinearLayout:
    """dst hardware index -> (src register, lane delta, warp delta, block delta)."""
    if src.out_dims != dst.out_dims or src.out_shape != dst.out_shape:
        raise ValueError(f"cannot convert between shapes {src.out_shape} and {dst.out_shape}")
    for name in _THREAD_DIMS:
        if src.in_dim_size(name) != dst.in_dim_size(name):
            raise ValueError(
                f"layouts use different numbers of {name}s "
                f"({src.in_dim_size(name)} vs {dst.in_dim_size(name)})"
            )
    inverse = src.pseudo_invert()
    src_bases = src.bases
    bases = {}
    for name, rows in dst.bases.items():
        targets = (
            rows if name == "register" else [_xor(b, s) for b, s in zip(rows, src_bases[name])]
        )
        bases[name] = [inverse.apply(**dict(zip(dst.out_dims, t))) for t in targets]
    return LinearLayout(bases, inverse.out_shape, inverse.out_dims)


@dataclass
class ConversionPlan:
    """What `ttg.convert_layout` from `src` to `dst` must do; see the module docstring.

    For "registers" and "shuffle": `src_register[r, lane, warp]` and `src_lane[r, lane, warp]`
    say where destination register r of (lane, warp) comes from; `register_map` is the
    per-register mapping when it is the same for every thread. For "shared": the tensor is
    staged whole (`scratch_elements`) in `shared`, the swizzled layout that best serves both
    the store (src) and the load (dst); `store` / `load` give their bank conflicts, and
    `matrix_rows`, when the stores are stmatrix.x4, their row-address layout (see `staging`).
    """

    kind: str
    src: LinearLayout
    dst: LinearLayout
    deltas: LinearLayout
    scratch_elements: int = 0
    shared: LinearLayout | None = None
    store: SharedAccess | None = None
    load: SharedAccess | None = None
    matrix_rows: LinearLayout | None = None
    _tables: tuple | None = field(default=None, repr=False)

    def _source(self):
        if self._tables is None:
            import numpy as np

            by_dim = self.deltas.table_by_dim(("register", "lane", "warp"))
            delta = dict(zip(self.deltas.out_dims, by_dim))
            lanes = np.arange(self.dst.num_lanes)[None, :, None]
            self._tables = (delta["register"], lanes ^ delta["lane"])
        return self._tables

    @property
    def src_register(self) -> np.ndarray:
        return self._source()[0]

    @property
    def src_lane(self) -> np.ndarray:
        return self._source()[1]

    @property
    def register_map(self) -> tuple[int, ...] | None:
        """dst register -> src register, when every thread uses the same mapping."""
        if self.kind not in ("noop", "registers"):
            return None
        reg = self.src_register
        if (reg != reg[:, :1, :1]).any():
            return None
        return tuple(int(r) for r in reg[:, 0, 0])

    @property
    def swizzle(self):
        """The suggested shared layout's parameters (a named.SwizzledShared record)."""
        return self.shared.encoding if self.shared is not None else None

    def __str__(self) -> str:
        if self.kind == "noop":
            return "no-op: both layouts put every element in the same register of the same thread"
        if self.kind == "registers":
            return f"register permutation within each thread: {self.register_map or 'per-thread'}"
        if self.kind == "shuffle":
            return "warp shuffles: every element stays within its warp"
        if self.shared is None:
            return f"through shared memory: {self.scratch_elements} elements staged"
        stores = "stmatrix.x4 stores" if self.matrix_rows is not None else "store"
        return (
            f"through shared memory: {self.scratch_elements} elements staged as {self.swizzle}; "
            f"{stores} {self.store.max_ways}-way, load {self.load.max_ways}-way bank conflicts"
        )


def staging(
    src: LinearLayout, dst: LinearLayout, elem_bytes: int, matrix_stores: bool = False
) -> tuple[LinearLayout, SharedAccess, SharedAccess, LinearLayout | None]:
    """(shared layout, store, load, stmatrix rows) of a conversion through shared memory: the
    layout best_swizzle picks for both sides' accesses, the one the lowering stages in and the
    lab draws. With `matrix_stores` (a target with stmatrix) and 16-bit elements whose source
    has an MMA accumulator's fragment, the stores are stmatrix.x4: the swizzle is chosen for
    their row accesses, and the rows' layout is returned when the chosen layout keeps each
    8-element row contiguous (else None: ordinary vector stores)."""
    access = stmatrix_access(src) if matrix_stores and elem_bytes == 2 else None
    shared, (store, load) = best_swizzle([access or src, dst], elem_bytes)
    rows = stmatrix_rows(src) if access is not None and store.vec == 8 else None
    return shared, store, load, rows


def conversion_plan(
    src: LinearLayout,
    dst: LinearLayout,
    elem_bytes: int = 4,
    suggest_swizzle: bool = True,
    matrix_stores: bool = False,
) -> ConversionPlan:
    """Classify the conversion src -> dst and give the data its lowering needs.

    With suggest_swizzle=False a "shared" plan leaves `shared`, `store` and `load` as None (the
    search for the best swizzle is the expensive part; a caller that only needs the kind skips
    it). `matrix_stores`: the target has stmatrix (NVIDIA sm_90+), as `staging` explains.
    """
    deltas = source_deltas(src, dst)
    moved = {
        name: any(b[i] for rows in deltas.bases.values() for b in rows)
        for i, name in enumerate(deltas.out_dims)
    }
    if src.equivalent(dst):
        return ConversionPlan("noop", src, dst, deltas)
    if not (moved.get("warp") or moved.get("block")):
        return ConversionPlan("shuffle" if moved.get("lane") else "registers", src, dst, deltas)
    elements = math.prod(src.out_shape)
    if not suggest_swizzle:
        return ConversionPlan("shared", src, dst, deltas, elements)
    shared, store, load, rows = staging(src, dst, elem_bytes, matrix_stores)
    return ConversionPlan("shared", src, dst, deltas, elements, shared, store, load, rows)
