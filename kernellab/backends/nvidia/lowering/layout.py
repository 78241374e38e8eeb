"""The lowering's view of a distributed layout: linear bases on flat element indices.

Every tensor shape is a power of two in each dim, so the row-major flat index of an element is
the concatenation of its coordinates' bits, and XOR of coordinates (dim by dim) is XOR of flat
indices. A layout's `LinearLayout` (kernellab.layouts) therefore becomes three lists of ints:
the flat index for each basis of `register`, `lane` and `warp`. The flat index of register r in
thread (lane, warp) is XOR(reg bases of r's set bits) ^ XOR(lane bases...) ^ XOR(warp bases...).

Everything the lowering computes about data movement (which register holds which element,
whether two layouts differ only by a register permutation, which lanes hold duplicates) is
plain integer arithmetic on these lists.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from xdsl.dialects.builtin import TensorType


def _log2(n: int) -> int:
    assert n > 0 and n & (n - 1) == 0, f"{n} is not a power of two"
    return n.bit_length() - 1


@dataclass(frozen=True)
class Lay:
    """Bases (as flat row-major element indices) of a distributed layout over `shape`."""

    shape: tuple[int, ...]
    reg: tuple[int, ...]
    lane: tuple[int, ...]
    warp: tuple[int, ...]

    # ------------------------------------------------------------------ construction

    @staticmethod
    def from_linear(ll, shape: tuple[int, ...]) -> "Lay":
        """From a kernellab.layouts.LinearLayout (read through its public API only)."""

        def bases(dim: str) -> tuple[int, ...]:
            try:
                size = ll.in_dim_size(dim)
            except (KeyError, ValueError):
                return ()
            out = []
            for i in range(_log2(size)):
                coords = ll.apply(**{dim: 1 << i})
                out.append(flat_of(coords, shape))
            return tuple(out)

        return Lay(tuple(shape), bases("register"), bases("lane"), bases("warp"))

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

    def same_threads(self, other: "Lay") -> bool:
        return self.lane == other.lane and self.warp == other.warp


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
    from kernellab.layouts import from_encoding

    return Lay.from_linear(from_encoding(encoding, shape), shape)


# --------------------------------------------------------------- layouts made by lowering


def blocked_lay(shape, size_per_thread, threads_per_warp, warps_per_cta, order) -> Lay:
    """A blocked layout built directly (used for internal conversions, e.g. dot operands)."""
    rank = len(shape)
    strides = [0] * rank
    s = 1
    for d in reversed(range(rank)):
        strides[d] = s
        s *= shape[d]

    def take(counts, covered):
        bases = []
        for d in order:
            for i in range(_log2(counts[d])):
                c = covered[d] << i
                bases.append(c * strides[d] if c < shape[d] else 0)
            covered[d] *= counts[d]
        return bases

    covered = [1] * rank
    reg = take(size_per_thread, covered)
    lane = take(threads_per_warp, covered)
    warp = take(warps_per_cta, covered)
    for d in order:  # repeat the CTA tile over the rest of the tensor with more registers
        while covered[d] < shape[d]:
            reg.append(covered[d] * strides[d])
            covered[d] *= 2
    # registers beyond the shape duplicate elements: drop them (lanes/warps keep zero bases)
    reg = [b for b in reg if b != 0]
    return Lay(tuple(shape), tuple(reg), tuple(lane), tuple(warp))
