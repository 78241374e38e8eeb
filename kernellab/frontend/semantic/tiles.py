"""Tile access without pointer arithmetic: block pointers and tensor descriptors.

Both describe a 2-D (or N-D) window into a strided tensor in global memory. Neither becomes an
IR type: a `BlockPointer` or `TensorDescriptor` is a compile-time record of scalar tensors
(base, shape, strides, offsets) that the frontend carries through loops and calls like a tuple.
A load or store through a block pointer is spelled out here as ordinary pointer arithmetic with
a mask per checked dim (axis analysis sees `offset + arange(block) * stride`, so the GPU gets
coalesced, vectorized, masked accesses). A load or store through a tensor descriptor (or a
block pointer checked on every dim, without cache hints: the same meaning) becomes one
`tt.descriptor_load` / `tt.descriptor_store` op carrying the record's scalars, so that Hopper
can copy the tile with TMA; `passes/lower_descriptors.py` spells it out the same way wherever it
is not (the interpreter, other targets), with the same mask on every dim.

Semantics, as in Triton: `tl.load(block_ptr, boundary_check=(0, 1), padding_option="zero")`
masks the dims listed in `boundary_check` (elements outside [0, shape) read `padding_option`:
zero, NaN, or zero when not given); a descriptor checks every dim (out-of-bounds reads are
zero, stores are clipped).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from kernellab.frontend.errors import SemanticError
from kernellab.frontend.semantic.base import SemanticBase, block_shape, int_list
from kernellab.frontend.types import block_of, to_ir_type
from kernellab.frontend.values import Aggregate, is_number, show, unwrap
from kernellab.ir import tt
from kernellab.language import core as tl

_PADDING = {"": 0.0, "zero": 0.0, "nan": float("nan")}


@dataclass(frozen=True)
class BlockPointer(Aggregate):
    """`tl.make_block_ptr(...)`: a block of `block_shape` at `offsets` in a tensor of `shape`
    and `strides` (elements) at `base`; `order` is kept for Triton's API (the layout passes
    choose the access order)."""

    base: tl.tensor
    shape: tuple
    strides: tuple
    offsets: tuple
    block_shape: tuple
    order: tuple

    def fields(self) -> tuple:
        return (self.base, self.shape, self.strides, self.offsets, self.block_shape, self.order)

    def with_fields(self, fields: tuple) -> BlockPointer:
        return BlockPointer(*fields)

    def __repr__(self) -> str:
        dims = ", ".join(str(d) for d in self.block_shape)
        return f"a block pointer to {self.base.dtype.element_ty}[{dims}]"


@dataclass(frozen=True)
class TensorDescriptor(Aggregate, tl.tensor_descriptor):
    """`tl.make_tensor_descriptor(...)` or a host `TensorDescriptor` argument: a strided
    tensor at `base` whose tiles of `block_shape` are loaded and stored by offset."""

    base: tl.tensor
    shape: tuple
    strides: tuple
    block_shape: tuple
    padding: float = 0.0  # what out-of-bounds elements read
    host: str = ""  # the kernel parameter, for a host TensorDescriptor argument

    # desc.<method>(...) → the tl builtin taking the descriptor first
    METHODS = {"load": "load_tensor_descriptor", "store": "store_tensor_descriptor"}

    def fields(self) -> tuple:
        return (self.base, self.shape, self.strides, self.block_shape, self.padding, self.host)

    def with_fields(self, fields: tuple) -> TensorDescriptor:
        return TensorDescriptor(*fields)

    @property
    def dtype(self) -> tl.dtype:
        return self.base.dtype.element_ty

    def __repr__(self) -> str:
        dims = ", ".join(str(d) for d in self.block_shape)
        return f"a tensor descriptor of {self.dtype}[{dims}] tiles"


def padding_value(option: str) -> float:
    """The value out-of-bounds elements read for a `padding_option` ("zero", "nan" or "")."""
    return _PADDING[option]


class TileMixin(SemanticBase):
    """make_block_ptr, advance, make_tensor_descriptor and the loads and stores through them."""

    def _scalars(self, values, dtype: tl.dtype, what: str, rank: int) -> tuple:
        """`values` (one per dim, numbers or scalar tensors) as scalar tensors of `dtype`."""
        values = unwrap(values)
        if not isinstance(values, (tuple, list)) or len(values) != rank:
            raise SemanticError(
                f"{what} must have one entry per dim of the block ({rank}), got {values!r}"
            )
        out = []
        for v in values:
            v = self.to_tensor(unwrap(v))
            if v.type.is_block() or not v.dtype.is_int():
                raise SemanticError(f"{what} must be integer scalars, got {show(v)}")
            out.append(self._cast(v, dtype))
        return tuple(out)

    def _base_pointer(self, base, what: str) -> tl.tensor:
        if not (isinstance(base, tl.tensor) and base.dtype.is_ptr() and not base.type.is_block()):
            raise SemanticError(
                f"the base of {what} must be a pointer argument (a single pointer), got "
                f"{show(base)}"
            )
        return base

    def make_block_ptr(self, base, shape, strides, offsets, block_shape_, order) -> BlockPointer:
        dims = tuple(block_shape(block_shape_, "the block_shape of tl.make_block_ptr"))
        rank = len(dims)
        order_ = tuple(int_list(order, "the order of tl.make_block_ptr"))
        if sorted(order_) != list(range(rank)):
            raise SemanticError(
                f"the order of tl.make_block_ptr must be a permutation of the block's dims "
                f"{tuple(range(rank))}, got {order_}"
            )
        return BlockPointer(
            self._base_pointer(base, "tl.make_block_ptr"),
            self._scalars(shape, tl.int64, "the shape of tl.make_block_ptr", rank),
            self._scalars(strides, tl.int64, "the strides of tl.make_block_ptr", rank),
            self._scalars(offsets, tl.int32, "the offsets of tl.make_block_ptr", rank),
            dims,
            order_,
        )

    def advance(self, base, offsets) -> BlockPointer:
        if not isinstance(base, BlockPointer):
            raise SemanticError(
                f"tl.advance moves a block pointer (from tl.make_block_ptr), not {show(base)}; "
                "add offsets to an ordinary pointer with +"
            )
        rank = len(base.block_shape)
        steps = self._scalars(offsets, tl.int32, "the offsets of tl.advance", rank)
        moved = tuple(self.add(o, s) for o, s in zip(base.offsets, steps))
        return replace(base, offsets=moved)

    def make_tensor_descriptor(
        self, base, shape, strides, block_shape_, padding_option
    ) -> TensorDescriptor:
        dims = tuple(block_shape(block_shape_, "the block_shape of tl.make_tensor_descriptor"))
        rank = len(dims)
        base = self._base_pointer(base, "tl.make_tensor_descriptor")
        return TensorDescriptor(
            base,
            self._scalars(shape, tl.int64, "the shape of tl.make_tensor_descriptor", rank),
            self._scalars(strides, tl.int64, "the strides of tl.make_tensor_descriptor", rank),
            dims,
            self._padding(padding_option, base.dtype.element_ty),
        )

    # -- the pointer block and mask of a tile ---------------------------------------------

    def _tile_addresses(self, base, shape, strides, offsets, dims, checked) -> tuple:
        """(pointer block, mask or None) of the tile of `dims` at `offsets`: one index range
        per dim, broadcast against the others; the mask keeps the `checked` dims in range."""
        rank = len(dims)
        pointers = base
        mask = None
        for d, size in enumerate(dims):
            index = self.add(offsets[d], self.arange(tl.constexpr(0), tl.constexpr(size)))  # int32 [size]
            for axis in range(rank):  # put it on axis d of a rank-`rank` block
                if axis != d:
                    index = self._expand_dims(index, axis)
            pointers = self.add(pointers, self.mul(self._cast(index, tl.int64), strides[d]))
            if d in checked:
                inside = self.and_(
                    self.greater_equal(index, tl.constexpr(0)),
                    self.less_than(self._cast(index, tl.int64), shape[d]),
                )
                mask = inside if mask is None else self.and_(mask, inside)
        if mask is not None:
            mask = self._broadcast_to(mask, dims)
        return self._broadcast_to(pointers, dims), mask

    @staticmethod
    def _checked_dims(boundary_check, rank: int, what: str) -> tuple:
        dims = tuple(int_list(unwrap(boundary_check) or (), f"the boundary_check of {what}"))
        for d in dims:
            if not 0 <= d < rank:
                raise SemanticError(
                    f"boundary_check of {what} names dim {d}, but the block has {rank} dims"
                )
        return dims

    @staticmethod
    def _padding(padding_option, elem: tl.dtype) -> float:
        option = unwrap(padding_option) or ""
        if option not in _PADDING:
            raise SemanticError(
                f"padding_option {option!r} is not supported; use \"zero\" or \"nan\""
            )
        if option == "nan" and not elem.is_floating():
            raise SemanticError(f"padding_option=\"nan\" needs float data, not {elem}")
        return _PADDING[option]

    @staticmethod
    def _as_descriptor(bp: BlockPointer, checked: tuple, access: dict) -> bool:
        """A block access checked on every dim, without hints, means what a tensor descriptor
        access means: it becomes one (so Hopper can copy it with TMA)."""
        plain = not any(access.values()) and not bp.base.dtype.element_ty.is_bool()
        return plain and sorted(set(checked)) == list(range(len(bp.block_shape)))

    def _block_pointer_load(self, bp: BlockPointer, boundary_check, padding_option, **access):
        checked = self._checked_dims(boundary_check, len(bp.block_shape), "tl.load")
        pad = self._padding(padding_option, bp.base.dtype.element_ty)
        if self._as_descriptor(bp, checked, access):
            desc = TensorDescriptor(bp.base, bp.shape, bp.strides, bp.block_shape, pad)
            return self.load_tensor_descriptor(desc, bp.offsets)
        pointers, mask = self._tile_addresses(
            bp.base, bp.shape, bp.strides, bp.offsets, bp.block_shape, checked
        )
        if mask is None:
            return self._pointer_load(pointers, None, None, **access)
        return self._pointer_load(pointers, mask, tl.constexpr(pad), **access)

    def _block_pointer_store(self, bp: BlockPointer, value, boundary_check, **access) -> None:
        checked = self._checked_dims(boundary_check, len(bp.block_shape), "tl.store")
        whole = is_number(unwrap(value)) or (
            isinstance(unwrap(value), tl.tensor) and unwrap(value).shape == bp.block_shape
        )
        if whole and self._as_descriptor(bp, checked, access):
            desc = TensorDescriptor(bp.base, bp.shape, bp.strides, bp.block_shape)
            self.store_tensor_descriptor(desc, bp.offsets, value)
            return
        pointers, mask = self._tile_addresses(
            bp.base, bp.shape, bp.strides, bp.offsets, bp.block_shape, checked
        )
        self._pointer_store(pointers, value, mask, **access)

    def _descriptor_tile(self, desc, offsets, what: str) -> tuple:
        if not isinstance(desc, TensorDescriptor):
            raise SemanticError(f"{what} needs a tensor descriptor, got {show(desc)}")
        rank = len(desc.block_shape)
        return self._scalars(offsets, tl.int32, f"the offsets of {what}", rank)

    def _handles(self, values) -> list:
        """IR values of a descriptor's shape or strides (tensors, or constexprs of a host
        descriptor specialized to constants) as i64."""
        return [self._cast(self.to_tensor(unwrap(v)), tl.int64).handle for v in values]

    def load_tensor_descriptor(self, desc, offsets) -> tl.tensor:
        starts = self._descriptor_tile(desc, offsets, "desc.load")
        if desc.dtype.is_bool():  # bools live in memory as int8: the pointer path converts them
            pointers, mask = self._tile_addresses(
                desc.base, desc.shape, desc.strides, starts, desc.block_shape,
                tuple(range(len(starts))),
            )  # fmt: skip
            return self._pointer_load(pointers, mask, tl.constexpr(desc.padding), cache="", evict="")
        ty = block_of(desc.dtype, desc.block_shape)
        op = tt.DescriptorLoadOp(
            desc.base.handle, self._handles(desc.shape), self._handles(desc.strides),
            [s.handle for s in starts], to_ir_type(ty), "nan" if desc.padding != 0 else "zero",
            desc.host,
        )  # fmt: skip
        return self._emit(op, ty)

    def store_tensor_descriptor(self, desc, offsets, value) -> None:
        starts = self._descriptor_tile(desc, offsets, "desc.store")
        if isinstance(value, tl.tensor) and value.shape != desc.block_shape:
            raise SemanticError(
                f"desc.store of {show(value)} into tiles of {list(desc.block_shape)}; store a "
                "block of the descriptor's block_shape"
            )
        if desc.dtype.is_bool():
            pointers, mask = self._tile_addresses(
                desc.base, desc.shape, desc.strides, starts, desc.block_shape,
                tuple(range(len(starts))),
            )  # fmt: skip
            self._pointer_store(pointers, value, mask, cache="", evict="")
            return
        if is_number(unwrap(value)):
            tile = self._python_constant(unwrap(value), desc.dtype, desc.block_shape)
        else:
            tile = self._fit_to(
                self._cast(self.to_tensor(unwrap(value)), desc.dtype), desc.block_shape,
                "the value of desc.store",
            )  # fmt: skip
        self.builder.create(
            tt.DescriptorStoreOp(
                desc.base.handle, self._handles(desc.shape), self._handles(desc.strides),
                [s.handle for s in starts], tile.handle, desc.host,
            )  # fmt: skip
        )
