"""The one value of a scalar or splat `arith.constant`, as a Python number, read without numpy.

Identity rules (`x + 0`, `select true`), constant control flow and loop analyses ask this of
every constant operand they meet, most of which never fold; reading ints and f16/f32/f64 from
the attribute directly (struct rounds and unpacks exactly as numpy's casts do) keeps numpy out
of a compile that folds nothing. bf16 and fp8 constants, and f16/f32 values that overflow to
infinity, are read by `folding.constant_of` (numpy, ml_dtypes), which defines the values.
"""

from __future__ import annotations

import struct
import sys

from xdsl.dialects.builtin import (
    BFloat16Type,
    DenseIntOrFPElementsAttr,
    Float8E4M3FNType,
    Float8E4M3FNUZType,
    Float8E5M2FNUZType,
    Float8E5M2Type,
    Float16Type,
    Float32Type,
    Float64Type,
    FloatAttr,
    IntegerAttr,
    IntegerType,
)
from xdsl.ir import SSAValue

from kernellab.ir import arith
from kernellab.ir.tt import SplatOp, element_type

_INT_BYTES = {1: 1, 8: 1, 16: 2, 32: 4, 64: 8}  # bit width → bytes of its storage
_FLOAT_FORMATS = {Float16Type: "e", Float32Type: "f", Float64Type: "d"}
_NARROW_FLOATS = (BFloat16Type, Float8E4M3FNType, Float8E5M2Type, Float8E4M3FNUZType, Float8E5M2FNUZType)
_FALLBACK = object()  # read through folding (numpy)


def uniform_int(value: SSAValue) -> SSAValue | int | None:
    """The one value of a uniform integer tensor (an offset, a stride, a bound): a splat's
    scalar, or a splat constant's int; None for anything else."""
    if isinstance(value.owner, SplatOp) and isinstance(value.owner.src.type, IntegerType):
        return value.owner.src
    c = splat_of(value)
    return c if isinstance(c, int) else None


def splat_of(value: SSAValue) -> int | float | None:
    """The one element of a scalar or splat constant (None if `value` is not one): an int for
    integer types (i1 true is -1), a float for float types."""
    op = value.owner
    if not isinstance(op, arith.ConstantOp):
        return None
    result = _read(op.value, element_type(value.type))
    if result is _FALLBACK:
        from kernellab.passes.folding import constant_of

        array = constant_of(value)
        if array is None or array.ndim:
            return None
        return array.item() if array.dtype.kind == "i" else float(array.astype("f8"))
    return result


def _read(attr, elem):
    if isinstance(elem, IntegerType):
        bits = elem.width.data
        size = _INT_BYTES.get(bits)
        if size is None:
            return None
        if isinstance(attr, IntegerAttr):
            return wrap_int(attr.value.data, bits)
        first = _splat_bytes(attr, size)
        return None if first is None else int.from_bytes(first, sys.byteorder, signed=True)
    fmt = _FLOAT_FORMATS.get(type(elem))
    if fmt is None:  # bf16 and fp8 through ml_dtypes; any other type has no number
        return _FALLBACK if isinstance(elem, _NARROW_FLOATS) else None
    if isinstance(attr, FloatAttr):
        try:
            return struct.unpack(fmt, struct.pack(fmt, attr.value.data))[0]
        except OverflowError:  # numpy rounds it to infinity
            return _FALLBACK
    first = _splat_bytes(attr, struct.calcsize(fmt))
    return None if first is None else struct.unpack("=" + fmt, first)[0]


def _splat_bytes(attr, size: int) -> bytes | None:
    """The first element's bytes of a dense constant whose elements are all equal."""
    if not isinstance(attr, DenseIntOrFPElementsAttr):
        return None
    data = attr.data.data
    first = data[:size]
    return first if data == first * (len(data) // size) else None


def wrap_int(v: int, bits: int) -> int:
    """`v` wrapped to a signed `bits`-bit integer (what the hardware keeps of it)."""
    v %= 1 << bits
    return v - (1 << bits) if v >= 1 << (bits - 1) else v
