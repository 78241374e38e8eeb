"""Blocked layouts (each thread a contiguous chunk; lanes, then warps tile the rest) and slice
layouts (a parent with one dim removed, what reductions and expand_dims need)."""

from __future__ import annotations

from collections.abc import Sequence

from kernellab.layouts.linear import LinearLayout, log2
from kernellab.layouts.named import Blocked, Slice
from kernellab.layouts.tiling import check_order, fit_to_shape, identity_nd, labelled


def blocked(
    size_per_thread: Sequence[int],
    threads_per_warp: Sequence[int],
    warps_per_cta: Sequence[int],
    order: Sequence[int],
    shape: Sequence[int],
) -> LinearLayout:
    """Triton's #ttg.blocked on `shape`: registers, then lanes, then warps, each filling
    order[0] (fastest dim) first; repeated with more registers when the tensor is larger,
    broadcast (zero bases) when it is smaller."""
    record = Blocked(size_per_thread, threads_per_warp, warps_per_cta, order)
    rank = len(shape)
    for name in ("size_per_thread", "threads_per_warp", "warps_per_cta", "order"):
        if len(getattr(record, name)) != rank:
            raise ValueError(f"{name} {list(getattr(record, name))} does not match rank {rank}")
        if name != "order":
            for v in getattr(record, name):
                log2(v, name)
    check_order(record.order, rank)
    tile = (
        identity_nd("register", record.size_per_thread, record.order)
        * identity_nd("lane", record.threads_per_warp, record.order)
        * identity_nd("warp", record.warps_per_cta, record.order)
    )
    return labelled(fit_to_shape(tile, shape), record)


def slice_layout(parent: LinearLayout, dim: int) -> LinearLayout:
    """The parent with out-dim `dim` removed.

    Hardware bits that only moved along `dim` now hold duplicates (zero bases) — except
    register bits, which are dropped, since a thread has no reason to hold one value twice.
    The parent may be built on any size along `dim`: the result is the same.
    """
    rank = len(parent.out_dims)
    if not 0 <= dim < rank:
        raise ValueError(f"slice dim {dim} out of range for a rank-{rank} parent")
    keep = [i for i in range(rank) if i != dim]
    bases = {}
    for name, rows in parent.bases.items():
        projected = [tuple(b[i] for i in keep) for b in rows]
        if name == "register":
            projected = [b for b in projected if any(b)]
        bases[name] = projected
    encoding = Slice(dim, parent.encoding) if parent.encoding is not None else None
    return LinearLayout(bases, [parent.out_shape[i] for i in keep], encoding=encoding)
