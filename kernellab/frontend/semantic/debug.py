"""Compiler hints (multiple_of, max_contiguous, ...) and debugging builtins."""

from __future__ import annotations

import builtins

from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseIntOrFPElementsAttr,
    DictionaryAttr,
    IntegerAttr,
    TensorType,
    i32,
)
from xdsl.ir import BlockArgument, OpResult

from kernellab.frontend.errors import SemanticError
from kernellab.frontend.semantic.base import SemanticBase, int_list
from kernellab.frontend.values import show, unwrap
from kernellab.ir import tt
from kernellab.language import core as tl


class DebugMixin(SemanticBase):
    """Hints for the compiler, static_assert/static_print, device_print/device_assert."""

    # ------------------------------------------------------------ compiler hints

    def _hint(self, input, values, attr: str, what: str, min_rank: int) -> tl.tensor:
        input = self.to_tensor(input)
        values = int_list(values, f"{what} values")
        if builtins.max(min_rank, len(input.shape)) != len(values):
            raise SemanticError(
                f"{what} got {len(values)} values for {show(input)}; give one value per dimension"
            )
        handle = input.handle
        if isinstance(handle, OpResult):
            handle.op.attributes[attr] = DenseIntOrFPElementsAttr.from_list(
                TensorType(i32, [len(values)]), values
            )
        elif isinstance(handle, BlockArgument) and isinstance(handle.block.parent_op(), tt.FuncOp):
            # a kernel argument: recorded as specialization does it (`tt.divisibility = 16 : i32`)
            self._set_arg_attr(handle, attr, IntegerAttr(values[0], i32))
        return input

    @staticmethod
    def _set_arg_attr(arg: BlockArgument, name: str, value) -> None:
        func = arg.block.parent_op()
        count = len(func.args)
        attrs = list(func.arg_attrs.data) if func.arg_attrs else [DictionaryAttr({})] * count
        attrs[arg.index] = DictionaryAttr({**attrs[arg.index].data, name: value})
        func.arg_attrs = ArrayAttr(attrs)

    def multiple_of(self, input, values) -> tl.tensor:
        return self._hint(input, values, "tt.divisibility", "tl.multiple_of", 1)

    def max_contiguous(self, input, values) -> tl.tensor:
        return self._hint(input, values, "tt.contiguity", "tl.max_contiguous", 0)

    def max_constancy(self, input, values) -> tl.tensor:
        return self._hint(input, values, "tt.constancy", "tl.max_constancy", 0)

    def debug_barrier(self) -> None:
        """Threads of a program never race in TTIR's block semantics; nothing to emit."""

    # ----------------------------------------------------------------- debugging

    def static_assert(self, cond, msg) -> None:
        if isinstance(cond, tl.tensor):
            raise SemanticError(
                "tl.static_assert needs a compile-time condition, got a runtime value; use "
                "tl.device_assert for runtime checks"
            )
        if not unwrap(cond):
            raise SemanticError(
                f"static assertion failed: {unwrap(msg)}"
                if unwrap(msg)
                else "static assertion failed"
            )

    def static_print(self, *values, sep, end, file, flush) -> None:
        shown = [show(v) if isinstance(v, tl.tensor) else unwrap(v) for v in values]
        print(
            *shown,
            sep=unwrap(sep),
            end=unwrap(end),
            file=unwrap(file),
            flush=bool(unwrap(flush)),
        )

    def device_print(self, prefix, *args, hex) -> None:
        prefix = unwrap(prefix)
        if not isinstance(prefix, str):
            raise SemanticError(f"tl.device_print needs a string prefix first, got {show(prefix)}")
        if args:  # "pid: " style, as Triton prints it
            prefix = prefix if prefix.endswith(" ") else prefix + " "
            prefix = prefix if prefix.endswith(": ") else prefix[:-1] + ": "
        if len(prefix) > 2 and not prefix.startswith(" "):
            prefix = " " + prefix
        handles = [self.to_tensor(unwrap(a)).handle for a in args]
        self.builder.create(tt.PrintOp(prefix, handles, bool(unwrap(hex))))

    def device_assert(self, cond, msg="", mask=None) -> None:
        cond = self._bool(unwrap(cond))
        if unwrap(mask) is not None:
            cond = self.or_(cond, self.not_(self._bool(unwrap(mask))))
        self.builder.create(tt.AssertOp(cond.handle, str(unwrap(msg))))
