"""Building blocks shared by the layout constructors: 1-D identity/zero layouts, N-D identity
in a given dim order, and fitting a per-CTA tile to a tensor shape.

Fitting follows Triton's rules exactly: a tile smaller than the tensor is repeated with extra
*register* bits (the out-dims' listed order says which dim repeats first, i.e. the layout's
repetition order); a tile larger than the tensor wraps around: every basis component that
reaches past the tensor becomes 0, so those hardware indices hold duplicates (broadcast).
"""

from __future__ import annotations

from collections.abc import Sequence

from kernellab.layouts.linear import HARDWARE_DIMS, LinearLayout, log2, standard_dims


def identity_1d(size: int, in_dim: str, out_dim: str) -> LinearLayout:
    return LinearLayout({in_dim: [(1 << i,) for i in range(log2(size))]}, (size,), (out_dim,))


def zeros_1d(size: int, in_dim: str, out_dim: str) -> LinearLayout:
    """`size` indices of `in_dim` that all hold the same data (out-dim of size 1)."""
    return LinearLayout({in_dim: [(0,)] * log2(size)}, (1,), (out_dim,))


def empty_over(rank_order: Sequence[int], in_dim: str = "register") -> LinearLayout:
    """A trivial layout whose out-dims are listed in `rank_order` (fixing repetition order)."""
    names = [f"dim{d}" for d in rank_order]
    return LinearLayout({in_dim: []}, [1] * len(names), names)


def identity_nd(in_dim: str, sizes: Sequence[int], order: Sequence[int]) -> LinearLayout:
    """Identity over `sizes`, lowest bits on order[0] (Triton's fastest-varying dim)."""
    layout = empty_over(order, in_dim)
    for d in order:
        layout = layout * identity_1d(sizes[d], in_dim, f"dim{d}")
    return layout


def fit_to_shape(
    tile: LinearLayout, shape: Sequence[int], in_dims: Sequence[str] = HARDWARE_DIMS
) -> LinearLayout:
    """The tile repeated or wrapped to `shape`, out-dims in standard order, every in-dim of
    `in_dims` present (size 1 where the tile had none). Repetition uses `in_dims[0]`."""
    names = standard_dims(len(shape))
    want = dict(zip(names, (int(s) for s in shape)))
    for name in tile.out_dims:
        have = tile.out_dim_size(name)
        if have < want[name]:
            tile = tile * identity_1d(want[name] // have, in_dims[0], name)
    sizes = [min(tile.out_dim_size(n), want[n]) for n in tile.out_dims]
    bases = {
        k: [tuple(v if v < s else 0 for v, s in zip(b, sizes)) for b in rows]
        for k, rows in tile.bases.items()
    }
    for name in in_dims:
        bases.setdefault(name, [])
    return LinearLayout(bases, sizes, tile.out_dims).transpose_outs(names)


def labelled(layout: LinearLayout, encoding) -> LinearLayout:
    """The same layout carrying `encoding` (a kernellab.layouts.named record)."""
    return LinearLayout(layout.bases, layout.out_shape, layout.out_dims, encoding)


def check_order(order: Sequence[int], rank: int) -> None:
    if sorted(order) != list(range(rank)):
        raise ValueError(f"order {list(order)} must be a permutation of 0..{rank - 1}")
