"""LinearLayout: a linear map over GF(2) from hardware index bits to tensor coordinate bits.

Why linear: every layout Triton uses sends index bit i of an input dimension (register, lane,
warp, block for tensors in registers; offset for shared memory) to a fixed output vector, its
*basis*, and the output of any index is the XOR of the bases of its set bits. So one small
table of bases describes where every element lives, and composition, inversion, broadcast
detection and conflict counting become GF(2) linear algebra.

Conventions:
- in-dims are kept in the order register (or offset), lane, warp, block, then any others in
  the order given; the bits of all in-dims packed together put the first in-dim lowest, so
  "smallest preimage" means smallest register, then lane, then warp, then block.
- out-dims default to `dim0..dimN-1`; coordinates are packed row-major (the last out-dim is
  lowest), so the packed value of a tensor coordinate is its flat row-major index.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from kernellab.layouts.gf2 import Span, span_of

if TYPE_CHECKING:
    import numpy as np

HARDWARE_DIMS = ("register", "lane", "warp", "block")
# in-dims sort in this order (others after, as given); offset is shared memory's "register"
_IN_DIM_ORDER = ("register", "offset", "lane", "warp", "block")


def log2(n: int, what: str = "size") -> int:
    """log2 of a power of two; layouts only exist for power-of-two sizes."""
    if n < 1 or n & (n - 1):
        raise ValueError(f"{what} must be a power of two, got {n}")
    return n.bit_length() - 1


def standard_dims(rank: int) -> tuple[str, ...]:
    return tuple(f"dim{i}" for i in range(rank))


def _in_dim_key(item: tuple[int, str]) -> tuple[int, int]:
    position, name = item
    if name in _IN_DIM_ORDER:
        return (_IN_DIM_ORDER.index(name), 0)
    return (len(_IN_DIM_ORDER), position)


class LinearLayout:
    """`bases[in_dim][i]` is the output (one int per out-dim) of in-dim index 2**i.

    `encoding` optionally names the layout this map was built from (a record of
    kernellab.layouts.named); it is descriptive only and ignored by comparisons.
    """

    __slots__ = ("_bases", "_columns", "_in_bits", "_out", "_shifts", "encoding")

    def __init__(
        self,
        bases: Mapping[str, Sequence[Sequence[int]]],
        out_shape: Sequence[int],
        out_names: Sequence[str] | None = None,
        encoding=None,
    ):
        out_shape = tuple(int(s) for s in out_shape)
        out_names = tuple(out_names) if out_names is not None else standard_dims(len(out_shape))
        if len(out_names) != len(out_shape) or len(set(out_names)) != len(out_names):
            raise ValueError(f"out dims {out_names} do not match out shape {out_shape}")
        out_bits = tuple(log2(s, f"out dim {n}") for n, s in zip(out_names, out_shape))
        self._out = tuple(zip(out_names, out_shape))
        self._shifts = tuple(sum(out_bits[d + 1 :]) for d in range(len(out_bits)))
        order = [name for _, name in sorted(enumerate(bases), key=_in_dim_key)]
        self._bases: dict[str, tuple[tuple[int, ...], ...]] = {}
        columns = []
        for name in order:
            rows = tuple(tuple(int(v) for v in basis) for basis in bases[name])
            for basis in rows:
                if len(basis) != len(out_shape):
                    raise ValueError(f"basis {basis} of {name} needs {len(out_shape)} coordinates")
                for value, (out, size) in zip(basis, self._out):
                    if not 0 <= value < size:
                        raise ValueError(
                            f"basis {basis} of {name}: {out} = {value} not in [0, {size})"
                        )
                columns.append(self._pack(basis))
            self._bases[name] = rows
        self._in_bits = {name: len(rows) for name, rows in self._bases.items()}
        self._columns = tuple(columns)
        self.encoding = encoding

    # -- shape ----------------------------------------------------------------------------

    @property
    def in_dims(self) -> tuple[str, ...]:
        return tuple(self._bases)

    @property
    def out_dims(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self._out)

    @property
    def out_shape(self) -> tuple[int, ...]:
        return tuple(size for _, size in self._out)

    @property
    def bases(self) -> dict[str, tuple[tuple[int, ...], ...]]:
        return dict(self._bases)

    def in_dim_size(self, name: str) -> int:
        """2**bits of in-dim `name`; 1 for an in-dim the layout does not have."""
        return 1 << self._in_bits.get(name, 0)

    def in_dim_bits(self, name: str) -> int:
        return self._in_bits.get(name, 0)

    def out_dim_size(self, name: str) -> int:
        return dict(self._out)[name]

    @property
    def num_registers(self) -> int:
        return self.in_dim_size("register")

    @property
    def num_lanes(self) -> int:
        return self.in_dim_size("lane")

    @property
    def num_warps(self) -> int:
        return self.in_dim_size("warp")

    @property
    def num_blocks(self) -> int:
        return self.in_dim_size("block")

    @property
    def columns(self) -> tuple[int, ...]:
        """The bases packed row-major, in-dim bits in order (first in-dim lowest)."""
        return self._columns

    # -- packing --------------------------------------------------------------------------

    def _pack(self, coords: Sequence[int]) -> int:
        packed = 0
        for value, shift in zip(coords, self._shifts):
            packed |= value << shift
        return packed

    def _unpack(self, packed: int) -> tuple[int, ...]:
        return tuple(
            (packed >> shift) & (size - 1) for shift, (_, size) in zip(self._shifts, self._out)
        )

    def _split_inputs(self, mask: int) -> dict[str, int]:
        """A packed input (bit mask over all in-dim bits) as one index per in-dim."""
        values, shift = {}, 0
        for name, bits in self._in_bits.items():
            values[name] = (mask >> shift) & ((1 << bits) - 1)
            shift += bits
        return values

    # -- evaluation -----------------------------------------------------------------------

    def apply(self, *indices: int, **named: int) -> tuple[int, ...]:
        """The coordinates of one hardware index; in-dims not given are 0."""
        if len(indices) > len(self._bases):
            raise TypeError(f"{len(indices)} indices for in-dims {self.in_dims}")
        named = {**dict(zip(self._bases, indices)), **named}
        # a hardware dim the layout lacks has size 1: index 0 is fine
        unknown = {k for k in named if k not in self._bases}
        unknown -= {k for k in HARDWARE_DIMS if not named.get(k)}
        if unknown:
            raise KeyError(f"unknown in-dim(s) {sorted(unknown)}; in-dims are {self.in_dims}")
        packed, base = 0, 0
        for name, rows in self._bases.items():
            value = int(named.get(name, 0))
            if value >> len(rows):
                raise ValueError(f"{name} = {value} is out of range [0, {1 << len(rows)})")
            for i in range(len(rows)):
                if value >> i & 1:
                    packed ^= self._columns[base + i]
            base += len(rows)
        return self._unpack(packed)

    def _packed_table(self, dims: Sequence[str], fixed: Mapping[str, int]) -> np.ndarray:
        """Packed outputs for every index of `dims` (array indexed in that order), with the
        other in-dims held at `fixed` (default 0). Built by doubling: one XOR per element."""
        import numpy as np  # tables (the lab, shared-memory analyses), not the layout maps

        constant, base, columns = 0, 0, {}
        for name, bits in self._in_bits.items():
            columns[name] = self._columns[base : base + bits]
            value = int(fixed.get(name, 0))
            if name not in dims:
                for i in range(bits):
                    if value >> i & 1:
                        constant ^= self._columns[base + i]
            base += bits
        values = np.array([constant], dtype=np.int64)
        for name in dims:
            for column in columns.get(name, ()):
                values = np.concatenate([values, values ^ column])
        sizes = [self.in_dim_size(name) for name in dims]
        return values.reshape(sizes[::-1]).T if sizes else values.reshape(())

    def table(self, dims: Sequence[str] | None = None, **fixed: int) -> np.ndarray:
        """Flat row-major output index for every index of `dims` (default: all in-dims)."""
        import numpy as np

        return np.ascontiguousarray(self._packed_table(dims or self.in_dims, fixed))

    def table_by_dim(
        self, dims: Sequence[str] | None = None, **fixed: int
    ) -> tuple[np.ndarray, ...]:
        """Like `table`, but one coordinate array per out-dim."""
        packed = self._packed_table(dims or self.in_dims, fixed)
        return tuple(
            (packed >> shift) & (size - 1) for shift, (_, size) in zip(self._shifts, self._out)
        )

    def as_table(self, block: int = 0) -> np.ndarray:
        """int64 array [register, lane, warp] -> flat row-major tensor coordinate."""
        return self.table(("register", "lane", "warp"), block=block)

    def coords_of_thread(self, lane: int, warp: int = 0, block: int = 0) -> list[tuple[int, ...]]:
        """The coordinates held by one thread, register by register."""
        packed = self._packed_table(("register",), {"lane": lane, "warp": warp, "block": block})
        return [self._unpack(int(p)) for p in packed]

    # -- algebra --------------------------------------------------------------------------

    def compose(self, inner: LinearLayout) -> LinearLayout:
        """self ∘ inner: x -> self(inner(x)). inner's out-dims must be in-dims of self."""
        for name, size in inner._out:
            if name not in self._bases or size > self.in_dim_size(name):
                raise ValueError(
                    f"cannot compose: inner out-dim {name} (size {size}) is not an in-dim of "
                    f"the outer layout (in-dims {self.in_dims})"
                )
        names = inner.out_dims
        bases = {
            in_dim: [self.apply(**dict(zip(names, basis))) for basis in rows]
            for in_dim, rows in inner._bases.items()
        }
        return LinearLayout(bases, self.out_shape, self.out_dims)

    def _inverse(self, span: Span) -> LinearLayout:
        bases = {}
        for shift, (name, size) in zip(self._shifts, self._out):
            rows = []
            for k in range(log2(size)):
                combination = span.solve(1 << (shift + k))
                if combination is None:
                    raise ValueError(f"layout is not surjective: {name} = {1 << k} has no preimage")
                rows.append(tuple(self._split_inputs(combination).values()))
            bases[name] = rows
        return LinearLayout(bases, [self.in_dim_size(n) for n in self._bases], self.in_dims)

    def pseudo_invert(self) -> LinearLayout:
        """Coordinates -> the smallest hardware index holding them (surjective layouts).

        Where data is broadcast (several indices hold one element) the smallest index wins:
        lowest block, then warp, then lane, then register.
        """
        span, _ = span_of(self._columns)
        return self._inverse(span)

    def invert(self) -> LinearLayout:
        """The inverse map; the layout must be a bijection."""
        span, dependent = span_of(self._columns)
        if dependent or span.rank != self._out_bits_total():
            raise ValueError("layout is not invertible (not a bijection); use pseudo_invert")
        return self._inverse(span)

    def __mul__(self, other: LinearLayout) -> LinearLayout:
        """Direct product: other's bits come after self's in shared in-dims and its
        coordinates above self's in shared out-dims."""
        out_names = list(self.out_dims) + [n for n in other.out_dims if n not in self.out_dims]
        mine, theirs = dict(self._out), dict(other._out)
        out_shape = [mine.get(n, 1) * theirs.get(n, 1) for n in out_names]

        def widen(basis, layout, scale):
            values = dict(zip(layout.out_dims, basis))
            return tuple(values.get(n, 0) * (mine.get(n, 1) if scale else 1) for n in out_names)

        bases: dict[str, list[tuple[int, ...]]] = {}
        for name, rows in self._bases.items():
            bases[name] = [widen(b, self, False) for b in rows]
        for name, rows in other._bases.items():
            bases.setdefault(name, []).extend(widen(b, other, True) for b in rows)
        return LinearLayout(bases, out_shape, out_names)

    # -- reshaping the outputs ------------------------------------------------------------

    def reshape_outs(
        self, shape: Sequence[int], names: Sequence[str] | None = None
    ) -> LinearLayout:
        """Same flat row-major coordinates, viewed with out shape `shape` (what tt.reshape does)."""
        target = LinearLayout({}, shape, names)
        if math.prod(shape) != math.prod(self.out_shape):
            raise ValueError(f"cannot reshape out shape {self.out_shape} to {tuple(shape)}")
        bases, base = {}, 0
        for name, bits in self._in_bits.items():
            bases[name] = [target._unpack(c) for c in self._columns[base : base + bits]]
            base += bits
        return LinearLayout(bases, target.out_shape, target.out_dims)

    def flatten_outs(self, name: str = "dim0") -> LinearLayout:
        return self.reshape_outs([math.prod(self.out_shape)], [name])

    def transpose_outs(self, names: Sequence[str]) -> LinearLayout:
        """The same map with its out-dims listed in the order `names` (nothing moves)."""
        if sorted(names) != sorted(self.out_dims):
            raise ValueError(f"{list(names)} is not a permutation of {list(self.out_dims)}")
        index = [self.out_dims.index(n) for n in names]
        bases = {k: [tuple(b[i] for i in index) for b in rows] for k, rows in self._bases.items()}
        return LinearLayout(bases, [self.out_shape[i] for i in index], names, self.encoding)

    def permute_outs(self, perm: Sequence[int]) -> LinearLayout:
        """Result dim i is this layout's dim perm[i] (what tt.trans does), renamed dim0..."""
        if sorted(perm) != list(range(len(self._out))):
            raise ValueError(f"{list(perm)} is not a permutation of the {len(self._out)} out dims")
        bases = {k: [tuple(b[p] for p in perm) for b in rows] for k, rows in self._bases.items()}
        return LinearLayout(bases, [self.out_shape[p] for p in perm])

    def sublayout(self, in_dims: Sequence[str], out_dims: Sequence[str]) -> LinearLayout:
        """Restrict to `in_dims` and project onto `out_dims`."""
        index = [self.out_dims.index(n) for n in out_dims]
        bases = {
            k: [tuple(b[i] for i in index) for b in rows]
            for k, rows in self._bases.items()
            if k in in_dims
        }
        return LinearLayout(bases, [self.out_shape[i] for i in index], out_dims)

    # -- properties -----------------------------------------------------------------------

    def _canonical(self):
        outs = sorted(self._out)
        index = [self.out_dims.index(n) for n, _ in outs]
        bases = {
            k: tuple(tuple(b[i] for i in index) for b in rows)
            for k, rows in self._bases.items()
            if rows
        }
        return tuple(outs), tuple(sorted(bases.items()))

    def equivalent(self, other: LinearLayout) -> bool:
        """Same map: same bases per in-dim and out-dim name (size-1 in-dims, out-dim order and
        the encoding label do not matter)."""
        return self._canonical() == other._canonical()

    def __eq__(self, other) -> bool:
        return isinstance(other, LinearLayout) and self.equivalent(other)

    def __hash__(self) -> int:
        return hash(self._canonical())

    @property
    def rank(self) -> int:
        """Dimension of the image (how many output bits the layout reaches)."""
        return span_of(self._columns)[0].rank

    def _out_bits_total(self) -> int:
        return sum(log2(s) for _, s in self._out)

    def is_surjective(self) -> bool:
        return self.rank == self._out_bits_total()

    def is_injective(self) -> bool:
        return self.rank == len(self._columns)

    def free_variable_masks(self) -> dict[str, int]:
        """Per in-dim, the index bits that add no new data: data held there is a duplicate.

        A bit is free when its basis is spanned by lower bits (register bits before lane,
        lane before warp...); zero bases — broadcasting — are the common case. Masking the
        free bits to zero leaves exactly one holder per element, which is how stores and
        reductions avoid duplicated work.
        """
        _, dependent = span_of(self._columns)
        return self._split_inputs(dependent)

    # -- text -----------------------------------------------------------------------------

    def __str__(self) -> str:
        from kernellab.layouts.printing import format_layout

        return format_layout(self)

    def __repr__(self) -> str:
        bases = {k: [list(b) for b in v] for k, v in self._bases.items()}
        return f"LinearLayout({bases}, out_shape={self.out_shape}, out_names={self.out_dims})"
