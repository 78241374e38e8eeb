"""Language types → IR types.

The IR is signless (as MLIR's): `tl.int32` and `tl.uint32` both become `i32`, and signedness
lives only in the language type that the frontend keeps next to each SSA value.
"""

from __future__ import annotations

from xdsl.dialects.builtin import (
    BFloat16Type,
    Float8E4M3FNType,
    Float8E4M3FNUZType,
    Float8E5M2FNUZType,
    Float8E5M2Type,
    Float16Type,
    Float32Type,
    Float64Type,
    IntegerType,
    TensorType,
)
from xdsl.ir import Attribute

from kernellab.ir.tt import PointerType
from kernellab.language import core as tl

_FLOATS = {
    "fp8e4nv": Float8E4M3FNType,
    "fp8e5": Float8E5M2Type,
    "fp8e4b8": Float8E4M3FNUZType,
    "fp8e5b16": Float8E5M2FNUZType,
    "fp16": Float16Type,
    "bf16": BFloat16Type,
    "fp32": Float32Type,
    "fp64": Float64Type,
}


def to_ir_type(ty: tl.dtype) -> Attribute:
    """The IR type of a language type: int32/uint32 → i32, fp32 → f32, *fp32 → !tt.ptr<f32>,
    block<128xfp32> → tensor<128xf32>."""
    if isinstance(ty, tl.block_type):
        return TensorType(to_ir_type(ty.element_ty), ty.shape)
    if isinstance(ty, tl.pointer_type):
        return PointerType(to_ir_type(ty.element_ty), ty.address_space)
    if ty.is_int():
        return IntegerType(ty.primitive_bitwidth)
    if ty.name in _FLOATS:
        return _FLOATS[ty.name]()
    raise TypeError(f"{ty!r} has no IR type")


def block_of(elem: tl.dtype, shape) -> tl.dtype:
    """A block type of `elem` over `shape`, or `elem` itself for the empty shape (a scalar)."""
    shape = tuple(shape)
    return tl.block_type(elem, shape) if shape else elem
