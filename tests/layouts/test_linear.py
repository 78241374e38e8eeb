"""LinearLayout core: evaluation, composition, inversion, products, reshapes, broadcasts."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from kernellab.layouts import LinearLayout, identity_1d, zeros_1d


def random_layout(rng, in_bits: dict[str, int], out_shape) -> LinearLayout:
    bases = {
        name: [tuple(int(rng.integers(0, s)) for s in out_shape) for _ in range(bits)]
        for name, bits in in_bits.items()
    }
    return LinearLayout(bases, out_shape)


def random_bijection(rng, out_shape, in_dims=("register", "lane", "warp")) -> LinearLayout:
    """A random invertible map: a random invertible GF(2) matrix split over in-dims."""
    total = sum(int(s).bit_length() - 1 for s in out_shape)
    while True:
        columns = [int(rng.integers(0, 1 << total)) for _ in range(total)]
        probe = LinearLayout({"x": [(c,) for c in columns]}, (1 << total,))
        if probe.is_injective():
            break
    flat = LinearLayout({}, (1 << total,))
    cuts = sorted(int(c) for c in rng.integers(0, total + 1, size=len(in_dims) - 1))
    bounds = [0, *cuts, total]
    bases = {
        name: [(columns[i],) for i in range(bounds[k], bounds[k + 1])]
        for k, name in enumerate(in_dims)
    }
    return LinearLayout(bases, flat.out_shape).reshape_outs(out_shape)


def brute_apply(layout: LinearLayout, **index) -> tuple[int, ...]:
    """XOR of the bases of the set bits, the definition, without packing."""
    out = [0] * len(layout.out_shape)
    for name, rows in layout.bases.items():
        for i, basis in enumerate(rows):
            if index.get(name, 0) >> i & 1:
                out = [a ^ b for a, b in zip(out, basis)]
    return tuple(out)


def test_apply_is_xor_of_bases(rng):
    layout = random_layout(rng, {"register": 3, "lane": 5, "warp": 2}, (16, 32))
    for _ in range(200):
        r, l, w = (int(rng.integers(0, n)) for n in (8, 32, 4))
        assert layout.apply(register=r, lane=l, warp=w) == brute_apply(
            layout, register=r, lane=l, warp=w
        )
        assert layout.apply(r, l, w) == layout.apply(register=r, lane=l, warp=w)


def test_as_table_matches_apply_everywhere(rng):
    layout = random_layout(rng, {"register": 2, "lane": 3, "warp": 2, "block": 0}, (8, 16))
    table = layout.as_table()
    assert table.shape == (4, 8, 4)
    for r, l, w in itertools.product(range(4), range(8), range(4)):
        row, col = layout.apply(register=r, lane=l, warp=w)
        assert table[r, l, w] == row * 16 + col
    rows, cols = layout.table_by_dim(("register", "lane", "warp"))
    np.testing.assert_array_equal(rows * 16 + cols, table)


def test_coords_of_thread_lists_every_register(rng):
    layout = random_layout(rng, {"register": 3, "lane": 5, "warp": 1}, (32, 8))
    coords = layout.coords_of_thread(lane=13, warp=1)
    assert coords == [layout.apply(register=r, lane=13, warp=1) for r in range(8)]


def test_out_of_range_inputs_and_bases_are_rejected():
    with pytest.raises(ValueError, match="power of two"):
        LinearLayout({"register": []}, (6,))
    with pytest.raises(ValueError, match="not in"):
        LinearLayout({"register": [(8,)]}, (8,))
    layout = identity_1d(8, "register", "dim0")
    with pytest.raises(ValueError, match="out of range"):
        layout.apply(register=8)
    with pytest.raises(KeyError, match="unknown in-dim"):
        layout.apply(lane=1)


def test_invert_undoes_random_bijections(rng):
    for _ in range(20):
        layout = random_bijection(rng, (8, 16))
        inverse = layout.invert()
        assert inverse.in_dims == ("dim0", "dim1")
        for r, l, w in itertools.product(
            *(range(layout.in_dim_size(n)) for n in ("register", "lane", "warp"))
        ):
            coords = layout.apply(register=r, lane=l, warp=w)
            assert inverse.apply(*coords) == (r, l, w)
        identity = inverse.compose(layout)
        for name in layout.in_dims:
            for i, basis in enumerate(identity.bases[name]):
                expected = tuple((1 << i) if n == name else 0 for n in identity.out_dims)
                assert basis == expected
        assert layout.compose(inverse).equivalent(
            LinearLayout(
                {"dim0": [(1, 0), (2, 0), (4, 0)], "dim1": [(0, 1 << i) for i in range(4)]}, (8, 16)
            )
        )


def test_invert_refuses_non_bijections():
    broadcast = LinearLayout({"register": [(1,), (0,)]}, (2,))
    with pytest.raises(ValueError, match="not invertible"):
        broadcast.invert()
    with pytest.raises(ValueError, match="not surjective"):
        LinearLayout({"register": [(1,)]}, (4,)).pseudo_invert()


def test_pseudo_invert_picks_the_smallest_preimage(rng):
    for _ in range(20):
        while True:
            layout = random_layout(rng, {"register": 3, "lane": 3, "warp": 2}, (4, 8))
            if layout.is_surjective():
                break
        inverse = layout.pseudo_invert()
        smallest = {}
        for w, l, r in itertools.product(range(4), range(8), range(8)):
            smallest.setdefault(layout.apply(register=r, lane=l, warp=w), (r, l, w))
        # smallest by (warp, lane, register): the loop above visits in that order
        for coords, (r, l, w) in smallest.items():
            assert inverse.apply(*coords) == (r, l, w)


def test_compose_applies_inner_then_outer(rng):
    inner = random_layout(rng, {"register": 2, "lane": 3}, (4, 8))
    outer = LinearLayout({"dim0": [(3, 1), (1, 2)], "dim1": [(0, 4), (2, 0), (1, 1)]}, (4, 8))
    both = outer.compose(inner)
    for r, l in itertools.product(range(4), range(8)):
        assert both.apply(register=r, lane=l) == outer.apply(*inner.apply(register=r, lane=l))


def test_product_puts_the_second_factor_above_the_first():
    layout = (
        identity_1d(4, "register", "dim0")
        * identity_1d(8, "lane", "dim0")
        * zeros_1d(2, "lane", "dim1")
    )
    assert layout.bases["register"] == ((1, 0), (2, 0))
    assert layout.bases["lane"] == ((4, 0), (8, 0), (16, 0), (0, 0))
    assert layout.out_shape == (32, 1)
    both = identity_1d(2, "register", "dim0") * identity_1d(4, "register", "dim1")
    assert both.bases["register"] == ((1, 0), (0, 1), (0, 2))


def test_reshape_keeps_flat_row_major_coordinates(rng):
    layout = random_layout(rng, {"register": 3, "lane": 4}, (4, 8, 2))
    flat = layout.flatten_outs()
    reshaped = layout.reshape_outs((8, 8))
    for r, l in itertools.product(range(8), range(16)):
        a, b, c = layout.apply(register=r, lane=l)
        (f,) = flat.apply(register=r, lane=l)
        assert f == (a * 8 + b) * 2 + c
        assert reshaped.apply(register=r, lane=l) == divmod(f, 8)
    assert flat.reshape_outs((4, 8, 2)).equivalent(layout)
    with pytest.raises(ValueError, match="cannot reshape"):
        layout.reshape_outs((4, 4))


def test_transpose_and_permute_outs(rng):
    layout = random_layout(rng, {"register": 2, "lane": 3}, (4, 16))
    listed = layout.transpose_outs(["dim1", "dim0"])
    assert listed.out_dims == ("dim1", "dim0")
    assert listed.equivalent(layout)  # only the listing changed
    trans = layout.permute_outs([1, 0])
    assert trans.out_shape == (16, 4)
    for r, l in itertools.product(range(4), range(8)):
        a, b = layout.apply(register=r, lane=l)
        assert trans.apply(register=r, lane=l) == (b, a)
    assert not trans.equivalent(layout)


def test_sublayout_restricts_and_projects(rng):
    layout = random_layout(rng, {"register": 2, "lane": 3, "warp": 1}, (4, 16))
    sub = layout.sublayout(["lane"], ["dim1"])
    assert sub.in_dims == ("lane",) and sub.out_dims == ("dim1",)
    for l in range(8):
        assert sub.apply(lane=l) == (layout.apply(lane=l)[1],)


def test_free_variable_masks_find_every_duplicate(rng):
    for _ in range(30):
        layout = random_layout(rng, {"register": 2, "lane": 3, "warp": 2}, (4, 4))
        masks = layout.free_variable_masks()
        seen = {}
        for r, l, w in itertools.product(range(4), range(8), range(4)):
            coords = layout.apply(register=r, lane=l, warp=w)
            if r & masks["register"] or l & masks["lane"] or w & masks["warp"]:
                continue
            assert coords not in seen, "two non-free indices hold the same element"
            seen[coords] = (r, l, w)
        image = {
            layout.apply(register=r, lane=l, warp=w)
            for r, l, w in itertools.product(range(4), range(8), range(4))
        }
        assert set(seen) == image


def test_zero_bases_are_free():
    layout = LinearLayout({"register": [(1,)], "lane": [(2,), (0,), (4,)], "warp": [(0,)]}, (8,))
    assert layout.free_variable_masks() == {"register": 0, "lane": 0b010, "warp": 1}


def test_equivalence_ignores_listing_and_labels():
    a = LinearLayout({"register": [(1, 0)], "lane": [(0, 1)], "warp": []}, (2, 2))
    b = LinearLayout({"lane": [(1, 0)], "register": [(0, 1)]}, (2, 2), ("dim1", "dim0"))
    assert a.equivalent(b) and a == b and hash(a) == hash(b)
    assert b.in_dims == ("register", "lane")
    c = LinearLayout({"register": [(0, 1)], "lane": [(1, 0)]}, (2, 2))
    assert not a.equivalent(c)


def test_str_lists_bases_like_triton():
    layout = identity_1d(4, "register", "dim0") * zeros_1d(2, "lane", "dim1")
    text = str(layout)
    assert " - register=1 -> (1, 0)\n   register=2 -> (2, 0)\n - lane=1 -> (0, 0)" in text
    assert text.endswith("where out dims are: [dim0 (size 4), dim1 (size 1)]")
