"""IR types → llvmlite types, and the values the lowering carries: a distributed tensor's
registers (TV) and a shared-memory buffer (SmemBuf)."""

from __future__ import annotations

from dataclasses import dataclass

import llvmlite.ir as ir
from xdsl.dialects import builtin

from kernellab.backends.llvm.layout import Lay
from kernellab.ir.tt import PointerType, element_type


class BFloatType(ir.Type):
    """LLVM's `bfloat` (llvmlite has no class for it)."""

    null = "0xR0000"
    intrinsic_name = "bf16"

    def _to_string(self):
        return "bfloat"

    def __eq__(self, other):
        return isinstance(other, BFloatType)

    def __hash__(self):
        return hash(BFloatType)

    def format_constant(self, value):
        return _bf16_literal(value)

    def __call__(self, value):
        return ir.FormattedConstant(self, _bf16_literal(value))


def _bf16_literal(value: float) -> str:
    import numpy as np

    bits = int(np.array([value], dtype=np.float32).view(np.uint32)[0])
    # round to nearest even to 16 bits (NaN stays a quiet NaN)
    if (bits & 0x7F800000) == 0x7F800000 and bits & 0x7FFFFF:
        b16 = 0x7FC0 | ((bits >> 16) & 0x8000)
    else:
        b16 = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    return f"0xR{b16 & 0xFFFF:04X}"


I1 = ir.IntType(1)
I8 = ir.IntType(8)
I16 = ir.IntType(16)
I32 = ir.IntType(32)
I64 = ir.IntType(64)
F16 = ir.HalfType()
BF16 = BFloatType()
F32 = ir.FloatType()
F64 = ir.DoubleType()
VOID = ir.VoidType()
GPTR = ir.PointerType(addrspace=1)
SPTR = ir.PointerType(addrspace=3)
PTR = ir.PointerType()

FP8_TYPES = (builtin.Float8E4M3FNType, builtin.Float8E5M2Type, builtin.Float8E4M3FNUZType, builtin.Float8E5M2FNUZType)


def is_fp8(t) -> bool:
    return isinstance(t, FP8_TYPES)


def is_float(t) -> bool:
    return isinstance(t, builtin.AnyFloat) and not is_fp8(t)


def is_int(t) -> bool:
    return isinstance(t, builtin.IntegerType)


def is_ptr(t) -> bool:
    return isinstance(t, PointerType)


def bitwidth(t) -> int:
    """Bits of a scalar IR type in registers (pointers 64, i1 1, fp8 8)."""
    if isinstance(t, builtin.IntegerType):
        return t.width.data
    if isinstance(t, PointerType):
        return 64
    if is_fp8(t):
        return 8
    return {builtin.Float16Type: 16, builtin.BFloat16Type: 16, builtin.Float32Type: 32,
            builtin.Float64Type: 64}[type(t)]  # fmt: skip


def float_suffix(ty) -> str | None:
    """LLVM's name of a float type in intrinsic names and PTX types ("f32", "bf16"...)."""
    return {F16: "f16", BF16: "bf16", F32: "f32", F64: "f64"}.get(ty)


def mem_bytes(t) -> int:
    """Bytes one element of scalar IR type `t` takes in memory (i1 is stored as a byte)."""
    return max(1, bitwidth(t) // 8)


def llty(t):
    """The llvmlite type of a scalar IR type (fp8 values live in i8 registers)."""
    t = element_type(t)
    if isinstance(t, builtin.IntegerType):
        return ir.IntType(t.width.data)
    if isinstance(t, PointerType):
        return ir.PointerType(addrspace=t.address_space.value.data)
    if isinstance(t, builtin.Float32Type):
        return F32
    if isinstance(t, builtin.Float16Type):
        return F16
    if isinstance(t, builtin.BFloat16Type):
        return BF16
    if isinstance(t, builtin.Float64Type):
        return F64
    if is_fp8(t):
        return I8
    if isinstance(t, builtin.IndexType):
        return I32
    raise NotImplementedError(f"no LLVM type for {t}")


def mem_llty(t):
    """The LLVM type an element of `t` has in memory (i1 → i8)."""
    t = element_type(t)
    if isinstance(t, builtin.IntegerType) and t.width.data == 1:
        return I8
    return llty(t)


@dataclass
class TV:
    """A distributed tensor as this thread sees it: one LLVM value per register of `lay`."""

    regs: list
    lay: Lay
    elem: object  # the IR element type

    def __post_init__(self):
        assert len(self.regs) == self.lay.nregs, (len(self.regs), self.lay.nregs)

    # How the tensor crosses a block boundary (loop-carried, if results): as the LLVM values
    # `carried()` lists, one phi each. A target that holds tensors otherwise (the CPU: one
    # vector) subclasses TV and overrides these three.
    def carried(self) -> list:
        return list(self.regs)

    def carry(self, other: TV) -> list:
        """`other` (same layout) as the values this tensor's `carried()` would be."""
        return list(other.regs)

    def rebuilt(self, values: list) -> TV:
        """A tensor like this one from values in the order `carried()` lists them."""
        return TV(list(values), self.lay, self.elem)


@dataclass
class SmemBuf:
    """A shared-memory buffer (memdesc): byte offset in the dynamic shared array, its shape,
    element type and the element offset function (row-major with `order`, optional swizzle).
    A slot of a ring (ttg.memdesc_index) adds `slot_offset`, an i32 byte offset known only at
    run time; `offset` stays the ring's, a multiple of 16 like every slot's size."""

    offset: int
    shape: tuple[int, ...]
    elem: object
    order: tuple[int, ...]
    vec: int = 1
    per_phase: int = 1
    max_phase: int = 1
    slot_offset: object = None
    block_cols: int = 0  # NVMMA: the fastest dim cut into blocks this wide, one after another
