"""The `math` dialect as kernellab uses it: MLIR's names and textual forms, on scalars and tensors.

xDSL ships `xdsl.dialects.math`, but it imports xDSL's whole `arith` dialect (for the fastmath
flags attribute, which kernellab never sets), and that costs tens of milliseconds at the first
compile of a process. So kernellab declares the math ops here, printed exactly as MLIR (and xDSL)
print them without fastmath flags: `math.exp %x : tensor<128xf32>`,
`math.fma %a, %b, %c : f32`, `math.fpowi %x, %n : f32, i32`. Class names match xDSL's
(`ExpOp`, `FmaOp`, `CountLeadingZerosOp`, ...), so `from kernellab.ir import math` replaces
`from xdsl.dialects import math`.

The ops print and parse themselves (`op_families`, no declarative assembly format), which keeps
this module cheap to import.
"""

from __future__ import annotations

from typing import ClassVar

from xdsl.ir import Dialect, SSAValue
from xdsl.irdl import (
    AnyAttr,
    VarConstraint,
    operand_def,
    result_def,
    traits_def,
)
from xdsl.traits import Pure

from kernellab.ir.op_families import (
    BinaryOp,
    OperandsColonTypesOp,
    SameTypeOp,
    UnaryOp,
    define_op,
    op_definition,
)


@op_definition
class FmaOp(SameTypeOp):
    """`math.fma %a, %b, %c : tensor<128xf32>`: a * b + c rounded once."""

    name = "math.fma"
    T: ClassVar = VarConstraint("T", AnyAttr())
    a = operand_def(T)
    b = operand_def(T)
    c = operand_def(T)
    result = result_def(T)
    traits = traits_def(Pure())


@op_definition
class FPowIOp(OperandsColonTypesOp):
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

    def printed_types(self):
        return [self.lhs.type, self.rhs.type]


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

UNARY_OPS: dict[str, type] = {
    n: define_op(UnaryOp, n, f"math.{m}", __name__) for n, m in _UNARY.items()
}
BINARY_OPS: dict[str, type] = {
    n: define_op(BinaryOp, n, f"math.{m}", __name__) for n, m in _BINARY.items()
}
# every op under its class name: `math.ExpOp`, `math.CountLeadingZerosOp`, ...
globals().update(UNARY_OPS)
globals().update(BINARY_OPS)

Math = Dialect("math", [*UNARY_OPS.values(), *BINARY_OPS.values(), FmaOp, FPowIOp])

__all__ = ["Math", "FmaOp", "FPowIOp", "UNARY_OPS", "BINARY_OPS"]
