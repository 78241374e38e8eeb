"""The lowering's per-thread register view of a layout: linear bases on flat element indices.

Every tensor shape is a power of two in each dim, so the row-major flat index of an element is
the concatenation of its coordinates' bits, and XOR of coordinates (dim by dim) is XOR of flat
indices. A layout's `LinearLayout` (kernellab.layouts) therefore reads as three lists of ints:
the flat index for each basis of `register`, `lane` and `warp`. The flat index of register r in
thread (lane, warp) is XOR(reg bases of r's set bits) ^ XOR(lane bases...) ^ XOR(warp bases...).

A `Lay` is only ever made from a LinearLayout — the one in a TTGIR type (`layout_of_type`), or
one the lowering derives from it by mapping its bases (`derived`: a shape op's pulled-back
layout, a reduction's partial results) — and keeps it (`.linear`) for the layout core's
conversion planner: the direction is always LinearLayout → Lay, never back.

Everything the lowering computes about data movement (which register holds which element,
whether two layouts differ only by a register permutation, which lanes hold duplicates) is
plain integer arithmetic on these lists.
"""

from __future__ import annotations

from functools import cached_property

from xdsl.dialects.builtin import TensorType

from kernellab.layouts import LinearLayout, from_encoding

def _log2(n: int) -> int:
    assert n > 0 and n & (n - 1) == 0, f"{n} is not a power of two"
    return n.bit_length() - 1


class Lay:
    """The register/lane/warp bases (as flat row-major element indices) of LinearLayout
    `linear` over its shape. Equal when the bases are (whatever labels `linear` carries)."""

    def __init__(self, linear: LinearLayout):
        self.linear = linear
        self.shape = tuple(linear.out_shape)

        def bases(dim: str) -> tuple[int, ...]:
            return tuple(
                flat_of(linear.apply(**{dim: 1 << i}), self.shape)
                for i in range(_log2(linear.in_dim_size(dim)))
            )

        self.reg, self.lane, self.warp = bases("register"), bases("lane"), bases("warp")

    def _key(self) -> tuple:
        return (self.shape, self.reg, self.lane, self.warp)

    def __eq__(self, other) -> bool:
        return isinstance(other, Lay) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    # ---------------------------------------------------------------------- queries

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def numel(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n

    @property
    def nregs(self) -> int:
        return 1 << len(self.reg)

    @cached_property
    def reg_flat(self) -> tuple[int, ...]:
        """Flat index (thread part excluded) of every register."""
        out = [0]
        for b in self.reg:
            out = out + [x ^ b for x in out]
        return tuple(out)

    @cached_property
    def thread_bits(self) -> int:
        """OR of every bit a lane/warp basis can set (the bits the runtime part may touch)."""
        m = 0
        for b in self.lane + self.warp:
            m |= b
        return m

    @cached_property
    def canonical_regs(self) -> tuple[int, ...]:
        """One register per distinct element the thread holds (first in register order)."""
        seen, out = set(), []
        for r, f in enumerate(self.reg_flat):
            if f not in seen:
                seen.add(f)
                out.append(r)
        return tuple(out)

    @cached_property
    def reg_of_flat(self) -> dict[int, int]:
        """Register-part flat index → the first register holding it."""
        out: dict[int, int] = {}
        for r, f in enumerate(self.reg_flat):
            out.setdefault(f, r)
        return out

    def free_lane_mask(self) -> int:
        """Lane bits whose basis is zero: lanes differing only there hold the same data."""
        return sum(1 << i for i, b in enumerate(self.lane) if b == 0)

    def free_warp_mask(self) -> int:
        return sum(1 << i for i, b in enumerate(self.warp) if b == 0)

    def dim_shift(self, d: int) -> int:
        """Bit position of dim d inside the flat index."""
        s = 0
        for size in self.shape[d + 1 :]:
            s += _log2(size)
        return s

    def coords(self, flat: int) -> tuple[int, ...]:
        return coords_of(flat, self.shape)

    def dim_part(self, flat: int, d: int) -> int:
        return (flat >> self.dim_shift(d)) & (self.shape[d] - 1)

    def contiguous_run(self, d: int, limit: int) -> int:
        """The most consecutive registers (a power of two, at most `limit`) that hold
        consecutive elements along dim d in every thread, starting at a register index and a
        coordinate that are multiples of it: the leading register bases step along d by 1, 2,
        4, ... and no other basis touches those low bits of d."""
        stride = 1 << self.dim_shift(d)
        k = 0
        while k < len(self.reg) and (2 << k) <= limit and self.reg[k] == stride << k:
            k += 1
        others = self.lane + self.warp
        while k > 0 and any(b & (((1 << k) - 1) * stride) for b in self.reg[k:] + others):
            k -= 1
        return 1 << k


def flat_of(coords, shape) -> int:
    f = 0
    for c, s in zip(coords, shape):
        f = f * s + int(c)
    return f


def coords_of(flat: int, shape) -> tuple[int, ...]:
    out = []
    for s in reversed(shape):
        out.append(flat % s)
        flat //= s
    return tuple(reversed(out))


# ---------------------------------------------------------------------- from encodings

_CACHE: dict = {}


def layout_of_type(t: TensorType) -> Lay:
    """The Lay of a TTGIR tensor type (its encoding through kernellab.layouts.from_encoding)."""
    shape = tuple(t.get_shape())
    key = (t.encoding, shape)
    lay = _CACHE.get(key)
    if lay is None:
        lay = layout_of_encoding(t.encoding, shape)
        _CACHE[key] = lay
    return lay


def layout_of_encoding(encoding, shape: tuple[int, ...]) -> Lay:
    return Lay(from_encoding(encoding, shape))


def derived(lay: Lay, flat_map, shape, extra_register: tuple[int, ...] = ()) -> Lay:
    """The layout over `shape` whose every basis is `flat_map` of `lay`'s (flat indices), with
    `extra_register` flat bases appended to the registers: built as a LinearLayout from
    `lay.linear`'s bases, then viewed."""
    shape = tuple(shape)
    old = lay.shape

    def mapped(basis) -> tuple[int, ...]:
        return coords_of(flat_map(flat_of(basis, old)), shape)

    bases = {dim: [mapped(b) for b in rows] for dim, rows in lay.linear.bases.items()}
    bases["register"] = bases.get("register", []) + [coords_of(f, shape) for f in extra_register]
    return Lay(LinearLayout(bases, shape))
