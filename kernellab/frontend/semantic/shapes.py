"""Program ids, block creation and shape builtins.

Block shapes are compile-time: every dimension a power of two (Triton's rule), so `arange`,
`full` and `reshape` check their shapes here and emit no runtime checks.
"""

from __future__ import annotations

import builtins
import math


from kernellab.frontend.errors import SemanticError
from kernellab.frontend.semantic.base import (
    SemanticBase,
    block_shape,
    int_list,
    is_power_of_two,
)
from kernellab.frontend.types import block_of, to_ir_type
from kernellab.frontend.values import python_value, show, unwrap
from kernellab.ir import tt
from kernellab.language import core as tl
from kernellab.language.builtins import TRITON_MAX_TENSOR_NUMEL


class ShapeMixin(SemanticBase):
    """program_id, num_programs, arange, full, zeros, and reshaping, permuting, joining,
    gathering."""

    # ------------------------------------------------------------- programs and creation

    def _axis012(self, axis, what: str) -> int:
        axis = python_value(axis)
        if axis not in (0, 1, 2) or isinstance(axis, bool):
            raise SemanticError(f"{what} axis must be 0, 1 or 2, got {axis!r}")
        return axis

    def program_id(self, axis) -> tl.tensor:
        return self._emit(tt.GetProgramIdOp(self._axis012(axis, "tl.program_id")), tl.int32)

    def num_programs(self, axis) -> tl.tensor:
        return self._emit(tt.GetNumProgramsOp(self._axis012(axis, "tl.num_programs")), tl.int32)

    def arange(self, start, end) -> tl.tensor:
        start, end = python_value(start), python_value(end)
        for v in (start, end):
            if isinstance(v, (tl.tensor, bool)) or not isinstance(v, int):
                raise SemanticError(
                    f"tl.arange bounds must be compile-time ints, got {show(v)}; "
                    "make the bound a tl.constexpr parameter (e.g. BLOCK: tl.constexpr)"
                )
        if not (-(2**31) <= start < 2**31 and -(2**31) <= end < 2**31):
            raise SemanticError(
                f"tl.arange({start}, {end}) does not fit in int32; use smaller bounds"
            )
        if end <= start:
            raise SemanticError(
                f"tl.arange({start}, {end}) is empty: end must be greater than start"
            )
        if not is_power_of_two(end - start):
            raise SemanticError(
                f"tl.arange({start}, {end}) has {end - start} elements, which is not a power of 2; "
                "round the length up to a power of 2 and mask the extra lanes"
            )
        if end - start > TRITON_MAX_TENSOR_NUMEL:
            raise SemanticError(
                f"tl.arange({start}, {end}) has more than {TRITON_MAX_TENSOR_NUMEL} elements; use "
                "a smaller block"
            )
        return self._emit(tt.MakeRangeOp(start, end), tl.block_type(tl.int32, [end - start]))

    def full(self, shape, value, dtype) -> tl.tensor:
        shape = block_shape(shape, "tl.full shape")
        dtype = self._dtype_arg(dtype, "tl.full")
        if isinstance(value, tl.tensor):
            if value.type.is_block():
                raise SemanticError(
                    f"tl.full needs a scalar value, got {show(value)}; use tl.broadcast_to to "
                    "stretch a block"
                )
            return self._splat(self._cast(value, dtype), shape)
        if dtype.is_floating() and isinstance(python_value(value), float):
            return self._constant(value, dtype, shape)  # as Triton: no detour through fp32
        return self._python_constant(value, dtype, shape)

    def zeros(self, shape, dtype) -> tl.tensor:
        return self.full(shape, 0, dtype)

    # -------------------------------------------------------------------- shapes

    def reshape(self, input, *shape, can_reorder=False) -> tl.tensor:
        input = self.to_tensor(input)
        dims = block_shape(shape, "tl.reshape shape")
        numel = math.prod(int(d) for d in dims)
        if numel != input.numel:
            raise SemanticError(
                f"cannot reshape {show(input)} ({input.numel} elements) to {tuple(dims)} ({numel} "
                "elements); "
                "the number of elements must stay the same"
            )
        if not input.type.is_block():
            return self._splat(input, dims)
        if tuple(dims) == input.shape:
            return input
        ty = tl.block_type(input.dtype, dims)
        return self._emit(tt.ReshapeOp(input.handle, to_ir_type(ty), bool(unwrap(can_reorder))), ty)

    def view(self, input, *shape) -> tl.tensor:
        return self.reshape(input, *shape, can_reorder=True)

    def trans(self, input, *dims) -> tl.tensor:
        input = self._block(input, "tl.trans")
        order = int_list(dims, "tl.trans dims") if dims else [1, 0]
        return self.permute(input, order)

    def permute(self, input, *dims) -> tl.tensor:
        input = self._block(input, "tl.permute")
        order = int_list(dims, "tl.permute dims")
        if sorted(order) != list(builtins.range(len(input.shape))):
            raise SemanticError(
                f"dims {tuple(order)} are not a permutation of the {len(input.shape)} dimensions "
                f"of {show(input)}; "
                f"pass each of 0..{len(input.shape) - 1} once"
            )
        if order == sorted(order):
            return input
        ty = tl.block_type(input.dtype, [input.shape[d] for d in order])
        return self._emit(tt.TransOp(input.handle, order, to_ir_type(ty)), ty)

    def expand_dims(self, input, axis) -> tl.tensor:
        input = self.to_tensor(input)
        axes = int_list(axis, "tl.expand_dims axis")
        rank = len(input.shape) + len(axes)
        wrapped = sorted(self._wrap_axis(a, rank, "tl.expand_dims", input) for a in axes)
        if len(set(wrapped)) != len(wrapped):
            raise SemanticError(
                f"tl.expand_dims got the axis {axes} twice; pass each new axis once"
            )
        for a in wrapped:
            input = self._expand_dims(input, a)
        return input

    def join(self, a, b) -> tl.tensor:
        a, b = self._broadcast_all(self.to_tensor(a), self.to_tensor(b))
        if a.dtype != b.dtype:
            raise SemanticError(
                f"tl.join needs two tensors of one dtype, got {show(a)} and {show(b)}; convert "
                "one with .to(...)"
            )
        scalar = not a.type.is_block()
        if scalar:
            a, b = self._expand_dims(a, 0), self._expand_dims(b, 0)
        ty = tl.block_type(a.dtype, list(a.shape) + [2])
        out = self._emit(tt.JoinOp(a.handle, b.handle, to_ir_type(ty)), ty)
        return self.reshape(out, [2]) if scalar else out

    def split(self, a):
        a = self._block(a, "tl.split")
        if a.shape[-1] != 2:
            raise SemanticError(
                f"tl.split needs a last dimension of size 2, got {show(a)}; split the result of "
                "tl.join or reshape to (..., 2)"
            )
        ty = block_of(a.dtype, a.shape[:-1])
        op = self.builder.create(tt.SplitOp(a.handle, to_ir_type(ty)))
        return tl.tensor(op.results[0], ty), tl.tensor(op.results[1], ty)

    def cat(self, input, other, can_reorder) -> tl.tensor:
        input, other = self._block(input, "tl.cat"), self._block(other, "tl.cat")
        if not unwrap(can_reorder):
            raise SemanticError(
                "tl.cat may reorder elements, so it needs can_reorder=True (as in Triton); use "
                "tl.join for an ordered pair"
            )
        if input.type != other.type or len(input.shape) != 1:
            raise SemanticError(
                f"tl.cat needs two 1-D blocks of one shape and dtype, got {show(input)} and "
                f"{show(other)}; reshape or convert them to match"
            )
        ty = tl.block_type(input.dtype, [2 * input.shape[0]])
        return self._emit(tt.CatOp(input.handle, other.handle, to_ir_type(ty)), ty)

    def gather(self, src, index, axis) -> tl.tensor:
        src, index = self._block(src, "tl.gather"), self._block(index, "tl.gather")
        rank = len(src.shape)
        axis = self._wrap_axis(axis, rank, "tl.gather", src)
        if len(index.shape) != rank:
            raise SemanticError(
                f"tl.gather: `index` must have the rank of `src`, got {show(index)} for "
                f"{show(src)}; reshape the index to {rank} dimensions"
            )
        if any(d != axis and i != s for d, (i, s) in enumerate(zip(index.shape, src.shape))):
            raise SemanticError(
                f"tl.gather: `index` must have the sizes of `src` on every axis but `axis`, got "
                f"{show(index)} for {show(src)} along axis {axis}; broadcast the index first"
            )
        if not index.dtype.is_int() or index.dtype.is_bool():
            raise SemanticError(
                f"tl.gather: `index` must be integers, got {show(index)}; convert it with "
                ".to(tl.int32)"
            )
        if index.dtype.is_int_unsigned() and index.dtype.primitive_bitwidth < 32:
            index = self._cast(index, tl.int32)  # every index is read as signed from here on
        ty = tl.block_type(src.dtype, list(index.shape))
        return self._emit(tt.GatherOp(src.handle, index.handle, axis, to_ir_type(ty)), ty)
