"""The `ttng` dialect (Triton's TritonNvidiaGPU): ops only NVIDIA's Hopper tensor cores have.

`ttng.warp_group_dot %a, %b, %c : !ttg.memdesc<...> * !ttg.memdesc<...> -> tensor<...>` is a
dot on wgmma: the operands are read by the tensor cores straight from shared memory (through
descriptors of their #ttg.nvmma_shared layouts), the accumulator is in an MMA v3 layout, and
each group of 4 warps (a warp group) computes 64 rows of it. `maxNumImpreciseAcc = N` (fp8 only,
from tl.dot's max_num_imprecise_acc): the tensor cores' reduced-precision sum runs over at most
N of K before it is added into the fp32 accumulator. A may instead be a register tensor
in `#ttg.dot_op<{opIdx = 0, parent = #mma}>` (a value the kernel computed, such as attention's
probabilities, which then never goes through shared memory). With `isAsync` the dot only
starts; `ttng.warp_group_dot_wait` says when its result (and its buffers) may be used.
"""

from __future__ import annotations

from typing import ClassVar

from xdsl.dialects.builtin import IntegerAttr, StringAttr, TensorType, UnitAttr, i32
from xdsl.ir import Dialect, SSAValue
from xdsl.irdl import (
    AnyOf,
    BaseAttr,
    VarConstraint,
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.traits import MemoryReadEffect

from kernellab.ir.ttg import MemDescType


@irdl_op_definition
class WarpGroupDotOp(IRDLOperation):
    name = "ttng.warp_group_dot"
    a = operand_def(AnyOf([BaseAttr(MemDescType), BaseAttr(TensorType)]))
    b = operand_def(MemDescType)
    T: ClassVar = VarConstraint("T", BaseAttr(TensorType))
    c = operand_def(T)
    d = result_def(T)
    input_precision = prop_def(StringAttr)
    is_async = opt_prop_def(UnitAttr, prop_name="isAsync")
    max_num_imprecise_acc = opt_prop_def(IntegerAttr, prop_name="maxNumImpreciseAcc")
    traits = traits_def(MemoryReadEffect())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$a `,` $b `,` $c attr-dict `:` type($a) `*` type($b) `->` type($d)"

    def __init__(self, a: SSAValue, b: SSAValue, c: SSAValue, input_precision: str = "tf32",
                 is_async: bool = False, max_num_imprecise_acc: int = 0):  # fmt: skip
        props = {"input_precision": StringAttr(input_precision)}
        if is_async:
            props["isAsync"] = UnitAttr()
        if max_num_imprecise_acc:
            props["maxNumImpreciseAcc"] = IntegerAttr(max_num_imprecise_acc, i32)
        super().__init__(operands=[a, b, c], result_types=[c.type], properties=props)


@irdl_op_definition
class WarpGroupDotWaitOp(IRDLOperation):
    """`%d = ttng.warp_group_dot_wait %acc {pendings = 1 : i32} : tensor<...>`: waits until at
    most `pendings` asynchronous warp-group dots of this warp group are still running; its
    result is the accumulator from then on (the lowering ties the registers, so nothing reads
    them earlier). An asynchronous dot's buffers may be overwritten only after such a wait."""

    name = "ttng.warp_group_dot_wait"
    T: ClassVar = VarConstraint("T", BaseAttr(TensorType))
    src = operand_def(T)
    result = result_def(T)
    pendings = prop_def(IntegerAttr)
    traits = traits_def(MemoryReadEffect())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$src attr-dict `:` type($src)"

    def __init__(self, src: SSAValue, pendings: int):
        super().__init__(
            operands=[src], result_types=[src.type], properties={"pendings": IntegerAttr(pendings, i32)}
        )


TTNG = Dialect("ttng", [WarpGroupDotOp, WarpGroupDotWaitOp], [])
