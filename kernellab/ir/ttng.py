"""The `ttng` dialect (Triton's TritonNvidiaGPU): ops only NVIDIA's Hopper tensor cores have.

`ttng.warp_group_dot %a, %b, %c : !ttg.memdesc<...> * !ttg.memdesc<...> -> tensor<...>` is a
dot on wgmma: both operands are read by the tensor cores straight from shared memory (through
descriptors of their #ttg.nvmma_shared layouts), the accumulator is in an MMA v3 layout, and
each group of 4 warps (a warp group) computes 64 rows of it.
"""

from __future__ import annotations

from typing import ClassVar

from xdsl.dialects.builtin import StringAttr, TensorType
from xdsl.ir import Dialect, SSAValue
from xdsl.irdl import (
    BaseAttr,
    VarConstraint,
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_op_definition,
    operand_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.traits import MemoryReadEffect

from kernellab.ir.ttg import MemDescType


@irdl_op_definition
class WarpGroupDotOp(IRDLOperation):
    name = "ttng.warp_group_dot"
    a = operand_def(MemDescType)
    b = operand_def(MemDescType)
    T: ClassVar = VarConstraint("T", BaseAttr(TensorType))
    c = operand_def(T)
    d = result_def(T)
    input_precision = prop_def(StringAttr)
    traits = traits_def(MemoryReadEffect())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$a `,` $b `,` $c attr-dict `:` type($a) `*` type($b) `->` type($d)"

    def __init__(self, a: SSAValue, b: SSAValue, c: SSAValue, input_precision: str = "tf32"):
        super().__init__(
            operands=[a, b, c],
            result_types=[c.type],
            properties={"input_precision": StringAttr(input_precision)},
        )


TTNG = Dialect("ttng", [WarpGroupDotOp], [])
