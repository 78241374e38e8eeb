"""Op shapes that the arith, math and tt dialects share, the factory that declares a family, and
`op_definition`, how every kernellab dialect declares its ops.

Most element-wise ops of the three dialects have one shape: operands and result of one type,
printed `name %a, %b {attrs} : T`. They derive from `UnaryOp` / `BinaryOp` here instead of each
dialect declaring its own copy. The ops print and parse themselves (no declarative assembly
format), which keeps the dialects cheap to import; the ops that do have an `assembly_format`
compile it on first use (`op_definition`).
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


def op_definition(cls: type) -> type:
    """xDSL's `irdl_op_definition`, except that the op's declarative `assembly_format` (its own or
    a base class's) is compiled the first time an op of the class is printed or parsed, not
    when the class is defined. xDSL compiles it at once; over the dialects' sixty formats that
    was a third of `import kernellab.ir`, about 10 ms of every fresh process's first compile,
    which prints a dozen kinds of op (issue 13). The text printed and parsed is the same.
    `cls.format_program()` compiles it (tests/test_ir_formats.py compiles every one)."""
    text = cls.assembly_format
    if text is None:
        return irdl_op_definition(cls)
    cls.assembly_format = None  # hidden while xDSL defines the op, so it compiles nothing
    cls = irdl_op_definition(cls)
    cls.assembly_format = text
    compiled = []

    def format_program():
        if not compiled:
            from xdsl.irdl.declarative_assembly_format import FormatProgram

            compiled.append(FormatProgram.from_str(text, cls.get_irdl_definition()))
        return compiled[0]

    def print(self, printer: Printer) -> None:
        return format_program().print(printer, self)

    def parse(op_type, parser):
        return format_program().parse(parser, op_type)

    cls.format_program = staticmethod(format_program)
    cls.print = print
    cls.parse = classmethod(parse)
    return cls


def define_op(base: type, class_name: str, op_name: str, module: str) -> type:
    """The op `op_name` of `base`'s shape, as if declared `class <class_name>(base)` in `module`."""
    body = {"name": op_name, "__module__": module, "__qualname__": class_name}
    return op_definition(type(class_name, (base,), body))
