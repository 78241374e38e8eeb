"""Reductions and scans: tt.reduce and tt.scan with a combine region.

The combine region takes two scalars per input (the running value and the next element) and
returns one per input. Builtins like `tl.sum` or `tl.argmax` build it here from Semantic's own
operators; `tl.reduce` and `tl.associative_scan` build it by calling the user's @jit function.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Sequence
from functools import partialmethod

from xdsl.ir import Block, Region

from kernellab.frontend.errors import SemanticError
from kernellab.frontend.semantic.base import SemanticBase
from kernellab.frontend.types import block_of, to_ir_type
from kernellab.frontend.values import python_value, show, unwrap
from kernellab.ir import tt
from kernellab.language import core as tl
from kernellab.language.builtins import PropagateNan

Combine = Callable[[list[tl.tensor], list[tl.tensor]], list[tl.tensor]]


def _tensors(input) -> tuple[list[tl.tensor], bool]:
    """The inputs of a reduce or scan (a tensor or a tuple of them); True if it was one tensor."""
    inputs = unwrap(input)
    if isinstance(inputs, tl.tensor):
        return [inputs], True
    return list(inputs), False


def _binary_combine(method) -> Combine:
    """The combine function `method(a, b)` of a reduction over one input (sum, cumprod, ...)."""
    return lambda args, inputs: [method(args[0], args[1])]


class ReductionMixin(SemanticBase):
    """reduce, sum, max, min, argmax, argmin, xor_sum; associative_scan, cumsum, cumprod."""

    # ---------------------------------------------------------------- combine regions

    def _combine_region(
        self, inputs: Sequence[tl.tensor], combine: Combine, terminator: type
    ) -> Region:
        """The combine region: `combine` applied to block arguments (a0..aN-1, b0..bN-1), the
        scalars of the inputs' types, and its results returned with `terminator`."""
        elems = [t.dtype for t in inputs] * 2
        block = Block(arg_types=[to_ir_type(e) for e in elems])
        args = [tl.tensor(arg, e) for arg, e in zip(block.args, elems)]
        with self.builder.at_block(block):
            results = combine(args, inputs)
            self.builder.create(terminator(*[r.handle for r in results]))
        return Region(block)

    def _combine_results(self, results, inputs: Sequence[tl.tensor], what: str) -> list[tl.tensor]:
        results = list(results) if isinstance(results, (tuple, list)) else [results]
        if len(results) != len(inputs):
            raise SemanticError(
                f"the combine function of {what} returned {len(results)} values for {len(inputs)} "
                "inputs; return one value per input"
            )
        out = []
        for r, t in zip(results, inputs):
            r = self.to_tensor(r)
            if r.type != t.dtype:
                raise SemanticError(
                    f"the combine function of {what} returned {show(r)} where {t.dtype} was "
                    "expected; return values of the input types"
                )
            out.append(r)
        return out

    def _user_combine(self, combine_fn, what: str) -> Combine:
        """The combine function that calls the user's @jit `combine_fn` and checks its results."""
        fn = unwrap(combine_fn)

        def build(args: list[tl.tensor], inputs):
            return self._combine_results(self.call_function(fn, args, {}), inputs, what)

        return build

    @staticmethod
    def _one_shape(inputs: Sequence[tl.tensor], what: str) -> tuple[int, ...]:
        shape = inputs[0].shape
        if any(t.shape != shape for t in inputs):
            raise SemanticError(
                f"{what} needs inputs of one shape, got {', '.join(show(t) for t in inputs)}; "
                "broadcast them to one shape first"
            )
        return shape

    # ---------------------------------------------------------------- reductions

    def _reduction(self, inputs, axis, keep_dims, combine: Combine, what: str) -> tuple:
        inputs = [self._block(t, what) for t in inputs]
        axis = python_value(axis)
        rank = len(inputs[0].shape)
        if axis is None:
            inputs = [self.reshape(t, [t.numel], can_reorder=True) for t in inputs]
            red_axis = 0
        else:
            red_axis = self._wrap_axis(axis, rank, what, inputs[0])
        shape = self._one_shape(inputs, what)
        region = self._combine_region(inputs, combine, tt.ReduceReturnOp)
        out_shape = shape[:red_axis] + shape[red_axis + 1 :]
        types = [block_of(t.dtype, out_shape) for t in inputs]
        op = self.builder.create(
            tt.ReduceOp(
                [t.handle for t in inputs], red_axis, [to_ir_type(t) for t in types], region
            )
        )
        outs = [tl.tensor(r, t) for r, t in zip(op.results, types)]
        if unwrap(keep_dims):
            axes = [red_axis] if axis is not None else list(builtins.range(rank))
            for i, o in enumerate(outs):
                for a in axes:
                    o = self._expand_dims(o, a)
                outs[i] = o
        return tuple(outs)

    def reduce(self, input, axis, combine_fn, keep_dims):
        inputs, single = _tensors(input)
        combine = self._user_combine(combine_fn, "tl.reduce")
        outs = self._reduction(inputs, axis, keep_dims, combine, "tl.reduce")
        return outs[0] if single else outs

    def _accumulated(self, input, dtype, what: str) -> tl.tensor:
        """`input` converted to Triton's accumulator type for sum/cumsum: `dtype` if given,
        else (u)int32 for narrower ints and fp32 for bf16."""
        input = self._block(input, what)
        elem, dtype = input.dtype, unwrap(dtype)
        if dtype is not None:
            return self._cast(input, dtype.scalar)
        if elem.is_int() and elem.primitive_bitwidth < 32:
            return self._cast(input, tl.int32 if elem.is_int_signed() else tl.uint32)
        return self._cast(input, tl.float32) if elem.is_bf16() else input

    def sum(self, input, axis, keep_dims, dtype) -> tl.tensor:
        input = self._accumulated(input, dtype, "tl.sum")
        (out,) = self._reduction([input], axis, keep_dims, _binary_combine(self.add), "tl.sum")
        return out

    def xor_sum(self, input, axis, keep_dims) -> tl.tensor:
        input = self._block(input, "tl.xor_sum")
        if not input.dtype.is_int():
            raise SemanticError(
                f"tl.xor_sum needs integers, got {show(input)}; bitcast floats with "
                ".to(tl.int32, bitcast=True) first"
            )
        combine = _binary_combine(self.xor_)
        (out,) = self._reduction([input], axis, keep_dims, combine, "tl.xor_sum")
        return out

    def _extremum(
        self,
        which: str,
        input,
        axis,
        return_indices,
        return_indices_tie_break_left,
        keep_dims,
        propagate_nan,
    ):
        """tl.max / tl.min (`which`), with indices as (values, indices) when asked."""
        what = f"tl.{'arg' if unwrap(return_indices) else ''}{which}"
        input = self._block(input, what)
        if input.dtype.is_bf16():
            input = self._cast(input, tl.float32)
        pick = self.maximum if which == "max" else self.minimum
        if not unwrap(return_indices):
            if input.dtype.primitive_bitwidth < 32:
                input = self._cast(input, tl.float32 if input.dtype.is_floating() else tl.int32)
            combine = _binary_combine(lambda a, b: pick(a, b, propagate_nan))
            return self._reduction([input], axis, keep_dims, combine, what)[0]
        axis = python_value(axis)
        rank = len(input.shape)
        tie_break_left = return_indices_tie_break_left
        if axis is None:  # indices into the row-major flattened block
            flat = self.reshape(input, [input.numel])
            values, index = self._extremum(
                which, flat, 0, True, tie_break_left, False, propagate_nan
            )
            if unwrap(keep_dims):
                values, index = (self.reshape(t, [1] * rank) for t in (values, index))
            return values, index
        axis = self._wrap_axis(axis, rank, what, input)
        index = self.arange(0, input.shape[axis])
        if rank > 1:
            for d in builtins.range(rank):
                if d != axis:
                    index = self._expand_dims(index, d)
            index = self._broadcast_to(index, input.shape)
        better = self.greater_than if which == "max" else self.less_than
        tie_left = bool(unwrap(tie_break_left))

        def combine(args, inputs):
            v1, i1, v2, i2 = args
            take_first = better(v1, v2)
            if tie_left:
                take_first = self.or_(
                    take_first, self.and_(self.equal(v1, v2), self.less_than(i1, i2))
                )
            return [self.where(take_first, v1, v2), self.where(take_first, i1, i2)]

        return self._reduction([input, index], axis, keep_dims, combine, what)

    max = partialmethod(_extremum, "max")
    min = partialmethod(_extremum, "min")

    def _arg_extremum(self, which: str, input, axis, tie_break_left, keep_dims) -> tl.tensor:
        return self._extremum(
            which, input, axis, True, tie_break_left, keep_dims, PropagateNan.NONE
        )[1]

    argmax = partialmethod(_arg_extremum, "max")
    argmin = partialmethod(_arg_extremum, "min")

    # --------------------------------------------------------------------- scans

    def _scan(self, inputs, axis, reverse, combine: Combine, what: str) -> tuple:
        inputs = [self._block(t, what) for t in inputs]
        axis = self._wrap_axis(axis, len(inputs[0].shape), what, inputs[0])
        self._one_shape(inputs, what)
        region = self._combine_region(inputs, combine, tt.ScanReturnOp)
        op = self.builder.create(
            tt.ScanOp([t.handle for t in inputs], axis, bool(unwrap(reverse)), region)
        )
        return tuple(tl.tensor(r, t.type) for r, t in zip(op.results, inputs))

    def associative_scan(self, input, axis, combine_fn, reverse):
        inputs, single = _tensors(input)
        what = "tl.associative_scan"
        outs = self._scan(inputs, axis, reverse, self._user_combine(combine_fn, what), what)
        return outs[0] if single else outs

    def cumsum(self, input, axis, reverse, dtype) -> tl.tensor:
        input = self._accumulated(input, dtype, "tl.cumsum")
        (out,) = self._scan([input], axis, reverse, _binary_combine(self.add), "tl.cumsum")
        return out

    def cumprod(self, input, axis, reverse) -> tl.tensor:
        input = self._block(input, "tl.cumprod")
        if input.dtype.is_bf16():
            input = self._cast(input, tl.float32)
        (out,) = self._scan([input], axis, reverse, _binary_combine(self.mul), "tl.cumprod")
        return out
