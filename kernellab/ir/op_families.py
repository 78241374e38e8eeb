"""Op shapes that the arith, math and tt dialects share, and the factory that declares a family.

Most element-wise ops of the three dialects have one shape: operands and result of one type,
printed `name %a, %b {attrs} : T`. They derive from `UnaryOp` / `BinaryOp` here instead of each
dialect declaring its own copy. The ops print and parse themselves (no declarative assembly
format), which keeps the dialects cheap to import.
"""

from __future__ import annotations

from typing import ClassVar

from xdsl.ir import Attribute, SSAValue
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


class OperandsColonTypesOp(IRDLOperation):
    """`name %a, %b {attrs} : T`: one printed type stands for every operand; ops whose operands
    differ in type print one type per operand (`math.fpowi %x, %n : f32, i32`)."""

    def printed_types(self) -> list[Attribute]:
        return [self.result_types[0]]

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_list(self.operands, printer.print_operand)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_list(self.printed_types(), printer.print_attribute)

    @classmethod
    def parse(cls, parser):
        unresolved = parser.parse_comma_separated_list(
            parser.Delimiter.NONE, parser.parse_unresolved_operand
        )
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        types = parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_type)
        if len(types) == 1:
            types = types * len(unresolved)
        op = cls(*(parser.resolve_operand(u, t) for u, t in zip(unresolved, types, strict=True)))
        op.attributes |= attrs
        return op


class SameTypeOp(OperandsColonTypesOp):
    """Operands and result of one type: the result type is the first operand's."""

    def __init__(self, *operands: SSAValue):
        operands = tuple(SSAValue.get(v) for v in operands)
        super().__init__(operands=operands, result_types=[operands[0].type])


class UnaryOp(SameTypeOp):
    """`arith.negf %x : tensor<128xf32>`, `math.exp %x : f32`, `tt.precise_sqrt %x : f32`."""

    T: ClassVar = VarConstraint("T", AnyAttr())
    operand = operand_def(T)
    result = result_def(T)
    traits = traits_def(Pure())


class BinaryOp(SameTypeOp):
    """`arith.addi %a, %b : tensor<128xi32>`, `math.powf %a, %b : f32`, `tt.mulhiui %a, %b : i32`
    (operands and result of one type)."""

    T: ClassVar = VarConstraint("T", AnyAttr())
    lhs = operand_def(T)
    rhs = operand_def(T)
    result = result_def(T)
    traits = traits_def(Pure())


def define_op(base: type, class_name: str, op_name: str, module: str) -> type:
    """The op `op_name` of `base`'s shape, as if declared `class <class_name>(base)` in `module`."""
    body = {"name": op_name, "__module__": module, "__qualname__": class_name}
    return irdl_op_definition(type(class_name, (base,), body))
