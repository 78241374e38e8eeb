"""The `cpu` dialect: ops only the CPU backend's TTGIR has.

`%y = cpu.bitonic_columns %x {columns = [[j, flip], ...], predicate = "ogt", compare_type = f32}`
runs compare-exchange columns of a bitonic network over the flat (row-major) elements of `%x`,
an integer tensor holding the values' bits: in column (j, flip) each element i with bit j
clear and its partner i + 2**j are swapped when `compare_type(x[i]) predicate
compare_type(x[i + 2**j])` differs from the flip (flip -1: false, -2: true, b >= 0: bit b of
i). It is what tl.sort's columns (kernellab.language.sorting) compute, recognized by
passes/ttgir/bitonic_columns.py so the CPU lowering can run each column as a loop over vector
registers: LLVM's x86 code generator is superlinear in the width of the network's shuffles.
"""

from __future__ import annotations

from typing import ClassVar

from xdsl.dialects.builtin import ArrayAttr, IntegerAttr, StringAttr, TensorType, i64
from xdsl.ir import Attribute, Dialect, SSAValue
from xdsl.irdl import (
    BaseAttr,
    IRDLOperation,
    ParsePropInAttrDict,
    VarConstraint,
    operand_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.traits import Pure

from kernellab.ir.op_families import op_definition

FLIP_FALSE, FLIP_TRUE = -1, -2


@op_definition
class BitonicColumnsOp(IRDLOperation):
    name = "cpu.bitonic_columns"
    T: ClassVar = VarConstraint("T", BaseAttr(TensorType))
    src = operand_def(T)
    result = result_def(T)
    columns = prop_def(ArrayAttr)
    predicate = prop_def(StringAttr)
    compare_type = prop_def(Attribute)
    traits = traits_def(Pure())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$src attr-dict `:` type($src)"

    def __init__(
        self, src: SSAValue, columns: list[tuple[int, int]], predicate: str, compare_type: Attribute
    ):
        super().__init__(
            operands=[src],
            result_types=[src.type],
            properties={
                "columns": ArrayAttr(
                    [ArrayAttr([IntegerAttr(j, i64), IntegerAttr(f, i64)]) for j, f in columns]
                ),
                "predicate": StringAttr(predicate),
                "compare_type": compare_type,
            },
        )

    def column_list(self) -> list[tuple[int, int]]:
        return [(c.data[0].value.data, c.data[1].value.data) for c in self.columns.data]


CPU = Dialect("cpu", [BitonicColumnsOp], [])

__all__ = ["CPU", "FLIP_FALSE", "FLIP_TRUE", "BitonicColumnsOp"]
