"""The `arith` dialect as Triton uses it: every op works on scalars and on tensors.

xDSL ships an `arith` dialect, but its comparisons and `select` only accept scalar `i1`, while
Triton IR compares and selects whole tensors (`arith.cmpi slt, %offs, %n : tensor<1024xi32>`).
So kernellab declares the subset it emits here, with MLIR's names and textual forms, and loads
this dialect in place of xDSL's.
"""

from __future__ import annotations

from typing import ClassVar

from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    TensorType,
    i64,
)
from xdsl.ir import Attribute, Dialect, SSAValue
from xdsl.irdl import (
    AnyAttr,
    IRDLOperation,
    VarConstraint,
    operand_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.printer import Printer
from xdsl.traits import ConstantLike, Pure

from kernellab.ir.op_families import BinaryOp, UnaryOp, define_op, op_definition
from kernellab.ir.tt import element_type, i1_like

CMPI_PREDICATES = ("eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge")
CMPF_PREDICATES = (
    "false", "oeq", "ogt", "oge", "olt", "ole", "one", "ord",
    "ueq", "ugt", "uge", "ult", "ule", "une", "uno", "true",
)  # fmt: skip


@op_definition
class ConstantOp(IRDLOperation):
    """`arith.constant 1024 : i32` or `arith.constant dense<0.0> : tensor<128xf32>`."""

    name = "arith.constant"
    value = prop_def(Attribute)
    result = result_def()
    traits = traits_def(ConstantLike(), Pure())

    def __init__(self, value: IntegerAttr | FloatAttr | DenseIntOrFPElementsAttr):
        super().__init__(properties={"value": value}, result_types=[value.get_type()])

    @staticmethod
    def of(value: int | float | bool, type: Attribute) -> ConstantOp:
        """A constant of scalar or tensor `type` with every element equal to `value`."""
        elem = element_type(type)
        if isinstance(type, TensorType):
            return ConstantOp(DenseIntOrFPElementsAttr.from_list(type, [value]))
        if isinstance(elem, IntegerType):
            return ConstantOp(IntegerAttr(int(value), elem, truncate_bits=True))
        return ConstantOp(FloatAttr(float(value), elem))

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_attribute(self.value)

    @classmethod
    def parse(cls, parser):
        return cls(parser.parse_attribute())


class _CastOp(IRDLOperation):
    """`arith.extsi %x : tensor<128xi32> to tensor<128xi64>`."""

    input = operand_def()
    result = result_def()
    traits = traits_def(Pure())
    assembly_format = "$input attr-dict `:` type($input) `to` type($result)"

    def __init__(self, input: SSAValue, result_type: Attribute):
        super().__init__(operands=[input], result_types=[result_type])


class _CompareOp(IRDLOperation):
    """`arith.cmpi slt, %a, %b : tensor<128xi32>`; the result is i1 of the operands' shape."""

    PREDICATES: ClassVar[tuple[str, ...]] = ()
    T: ClassVar = VarConstraint("T", AnyAttr())
    predicate = prop_def(IntegerAttr)
    lhs = operand_def(T)
    rhs = operand_def(T)
    result = result_def()
    traits = traits_def(Pure())

    def __init__(self, predicate: str, lhs: SSAValue, rhs: SSAValue):
        super().__init__(
            operands=[lhs, rhs],
            result_types=[i1_like(lhs.type)],
            properties={"predicate": IntegerAttr(self.PREDICATES.index(predicate), i64)},
        )

    @property
    def predicate_name(self) -> str:
        return self.PREDICATES[self.predicate.value.data]

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {self.predicate_name}, ")
        printer.print_operand(self.lhs)
        printer.print_string(", ")
        printer.print_operand(self.rhs)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.lhs.type)

    @classmethod
    def parse(cls, parser):
        predicate = parser.parse_identifier()
        parser.parse_punctuation(",")
        lhs = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        rhs = parser.parse_unresolved_operand()
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        type = parser.parse_type()
        op = cls(predicate, parser.resolve_operand(lhs, type), parser.resolve_operand(rhs, type))
        op.attributes |= attrs
        return op


@op_definition
class CmpiOp(_CompareOp):
    name = "arith.cmpi"
    PREDICATES: ClassVar[tuple[str, ...]] = CMPI_PREDICATES


@op_definition
class CmpfOp(_CompareOp):
    name = "arith.cmpf"
    PREDICATES: ClassVar[tuple[str, ...]] = CMPF_PREDICATES


@op_definition
class SelectOp(IRDLOperation):
    """`arith.select %cond, %a, %b : tensor<128xi1>, tensor<128xf32>` (scalar cond allowed)."""

    name = "arith.select"
    T: ClassVar = VarConstraint("T", AnyAttr())
    cond = operand_def()
    lhs = operand_def(T)
    rhs = operand_def(T)
    result = result_def(T)
    traits = traits_def(Pure())
    assembly_format = "$cond `,` $lhs `,` $rhs attr-dict `:` type($cond) `,` type($result)"

    def __init__(self, cond: SSAValue, lhs: SSAValue, rhs: SSAValue):
        super().__init__(operands=[cond, lhs, rhs], result_types=[lhs.type])


def _define(base: type, name: str) -> type:
    class_name = "".join(p.capitalize() for p in name.split(".")[1].split("_")) + "Op"
    return define_op(base, class_name, name, __name__)


_BINARY = (
    "addi subi muli divsi divui remsi remui andi ori xori shli shrsi shrui "
    "maxsi minsi maxui minui addf subf mulf divf remf maximumf minimumf maxnumf minnumf"
).split()
_UNARY = ("negf",)
_CASTS = "extsi extui trunci extf truncf sitofp uitofp fptosi fptoui bitcast".split()

BINARY_OPS: dict[str, type] = {n: _define(BinaryOp, f"arith.{n}") for n in _BINARY}
UNARY_OPS: dict[str, type] = {n: _define(UnaryOp, f"arith.{n}") for n in _UNARY}
CAST_OPS: dict[str, type] = {n: _define(_CastOp, f"arith.{n}") for n in _CASTS}

# Expose every generated op under its class name: `arith.AddiOp`, `arith.ExtsiOp`, ...
globals().update({cls.__name__: cls for table in (BINARY_OPS, UNARY_OPS, CAST_OPS) for cls in table.values()})

ARITH = Dialect(
    "arith",
    [
        ConstantOp,
        CmpiOp,
        CmpfOp,
        SelectOp,
        *BINARY_OPS.values(),
        *UNARY_OPS.values(),
        *CAST_OPS.values(),
    ],
)
