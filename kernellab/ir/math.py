"""The `math` dialect as kernellab uses it: MLIR's names and textual forms, on scalars and tensors.

xDSL ships `xdsl.dialects.math`, but it imports xDSL's whole `arith` dialect (for the fastmath
flags attribute, which kernellab never sets), and that costs tens of milliseconds at the first
compile of a process. So kernellab declares the math ops here, printed exactly as MLIR (and xDSL)
print them without fastmath flags: `math.exp %x : tensor<128xf32>`,
`math.fma %a, %b, %c : f32`, `math.fpowi %x, %n : f32, i32`. Class names match xDSL's
(`ExpOp`, `FmaOp`, `CountLeadingZerosOp`, ...), so `from kernellab.ir import math` replaces
`from xdsl.dialects import math`.

The ops print and parse themselves (no declarative assembly format), which keeps this module
cheap to import.
"""

from __future__ import annotations

from typing import ClassVar

from xdsl.ir import Dialect, SSAValue
from xdsl.irdl import (
    AnyAttr,
    IRDLOperation,
    VarConstraint,
    irdl_op_definition,
    operand_def,
    result_def,
    traits_def,
)
from xdsl.printer import Printer
from xdsl.traits import Pure


def _print_tail(printer: Printer, op: IRDLOperation, types) -> None:
    """` {attrs} : type[, type]` after the operands."""
    printer.print_op_attributes(op.attributes)
    printer.print_string(" : ")
    for i, t in enumerate(types):
        if i:
            printer.print_string(", ")
        printer.print_attribute(t)


def _parse_operands(parser, count: int) -> list:
    operands = [parser.parse_unresolved_operand()]
    for _ in range(count - 1):
        parser.parse_punctuation(",")
        operands.append(parser.parse_unresolved_operand())
    return operands


class _Unary(IRDLOperation):
    """`math.exp %x : tensor<128xf32>`: the result has the operand's type."""

    T: ClassVar = VarConstraint("T", AnyAttr())
    operand = operand_def(T)
    result = result_def(T)
    traits = traits_def(Pure())

    def __init__(self, operand: SSAValue):
        operand = SSAValue.get(operand)
        super().__init__(operands=[operand], result_types=[operand.type])

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.operand)
        _print_tail(printer, self, [self.result.type])

    @classmethod
    def parse(cls, parser):
        (x,) = _parse_operands(parser, 1)
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        t = parser.parse_type()
        op = cls(parser.resolve_operand(x, t))
        op.attributes |= attrs
        return op


class _Binary(IRDLOperation):
    """`math.powf %a, %b : f32`: operands and result share one type."""

    T: ClassVar = VarConstraint("T", AnyAttr())
    lhs = operand_def(T)
    rhs = operand_def(T)
    result = result_def(T)
    traits = traits_def(Pure())

    def __init__(self, lhs: SSAValue, rhs: SSAValue):
        lhs, rhs = SSAValue.get(lhs), SSAValue.get(rhs)
        super().__init__(operands=[lhs, rhs], result_types=[lhs.type])

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.lhs)
        printer.print_string(", ")
        printer.print_operand(self.rhs)
        _print_tail(printer, self, [self.result.type])

    @classmethod
    def parse(cls, parser):
        a, b = _parse_operands(parser, 2)
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        t = parser.parse_type()
        op = cls(parser.resolve_operand(a, t), parser.resolve_operand(b, t))
        op.attributes |= attrs
        return op


@irdl_op_definition
class FmaOp(IRDLOperation):
    """`math.fma %a, %b, %c : tensor<128xf32>`: a * b + c rounded once."""

    name = "math.fma"
    T: ClassVar = VarConstraint("T", AnyAttr())
    a = operand_def(T)
    b = operand_def(T)
    c = operand_def(T)
    result = result_def(T)
    traits = traits_def(Pure())

    def __init__(self, a: SSAValue, b: SSAValue, c: SSAValue):
        a = SSAValue.get(a)
        super().__init__(operands=[a, SSAValue.get(b), SSAValue.get(c)], result_types=[a.type])

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.a)
        printer.print_string(", ")
        printer.print_operand(self.b)
        printer.print_string(", ")
        printer.print_operand(self.c)
        _print_tail(printer, self, [self.result.type])

    @classmethod
    def parse(cls, parser):
        a, b, c = _parse_operands(parser, 3)
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        t = parser.parse_type()
        op = cls(*(parser.resolve_operand(v, t) for v in (a, b, c)))
        op.attributes |= attrs
        return op


@irdl_op_definition
class FPowIOp(IRDLOperation):
    """`math.fpowi %x, %n : tensor<128xf32>, tensor<128xi32>`: a float to an integer power."""

    name = "math.fpowi"
    T: ClassVar = VarConstraint("T", AnyAttr())
    lhs = operand_def(T)
    rhs = operand_def()
    result = result_def(T)
    traits = traits_def(Pure())

    def __init__(self, lhs: SSAValue, rhs: SSAValue):
        lhs = SSAValue.get(lhs)
        super().__init__(operands=[lhs, SSAValue.get(rhs)], result_types=[lhs.type])

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.lhs)
        printer.print_string(", ")
        printer.print_operand(self.rhs)
        _print_tail(printer, self, [self.lhs.type, self.rhs.type])

    @classmethod
    def parse(cls, parser):
        a, b = _parse_operands(parser, 2)
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        ta = parser.parse_type()
        parser.parse_punctuation(",")
        tb = parser.parse_type()
        op = cls(parser.resolve_operand(a, ta), parser.resolve_operand(b, tb))
        op.attributes |= attrs
        return op


def _define(base: type, cls_name: str, name: str) -> type:
    return irdl_op_definition(type(cls_name, (base,), {"name": name, "__module__": __name__}))


# class name → op name, as xDSL spells them
_UNARY = {
    "AbsFOp": "absf", "AbsIOp": "absi", "AcosOp": "acos", "AcoshOp": "acosh", "AsinOp": "asin",
    "AsinhOp": "asinh", "AtanOp": "atan", "AtanhOp": "atanh", "CbrtOp": "cbrt", "CeilOp": "ceil",
    "CosOp": "cos", "CoshOp": "cosh", "CountLeadingZerosOp": "ctlz",
    "CountTrailingZerosOp": "cttz", "CtPopOp": "ctpop", "ErfOp": "erf", "Exp2Op": "exp2",
    "ExpM1Op": "expm1", "ExpOp": "exp", "FloorOp": "floor", "Log10Op": "log10",
    "Log1pOp": "log1p", "Log2Op": "log2", "LogOp": "log", "RoundEvenOp": "roundeven",
    "RoundOp": "round", "RsqrtOp": "rsqrt", "SinOp": "sin", "SinhOp": "sinh", "SqrtOp": "sqrt",
    "TanOp": "tan", "TanhOp": "tanh", "TruncOp": "trunc",
}  # fmt: skip
_BINARY = {"Atan2Op": "atan2", "CopySignOp": "copysign", "IPowIOp": "ipowi", "PowFOp": "powf"}

UNARY_OPS: dict[str, type] = {n: _define(_Unary, n, f"math.{m}") for n, m in _UNARY.items()}
BINARY_OPS: dict[str, type] = {n: _define(_Binary, n, f"math.{m}") for n, m in _BINARY.items()}
# every op under its class name: `math.ExpOp`, `math.CountLeadingZerosOp`, ...
globals().update(UNARY_OPS)
globals().update(BINARY_OPS)

Math = Dialect("math", [*UNARY_OPS.values(), *BINARY_OPS.values(), FmaOp, FPowIOp])

__all__ = ["Math", "FmaOp", "FPowIOp", "UNARY_OPS", "BINARY_OPS"]
