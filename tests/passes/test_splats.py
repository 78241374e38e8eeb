"""splats.splat_of reads a constant's one value without numpy, exactly as numpy reads it
(folding.constant_of): every width, float format and encoding, on random values."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
from xdsl.dialects.builtin import (
    BFloat16Type,
    Float8E4M3FNType,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    TensorType,
    f16,
    f32,
    f64,
    i1,
    i8,
    i16,
    i32,
    i64,
)

from kernellab.ir import arith
from kernellab.passes.folding import constant_of, materialize
from kernellab.passes.splats import splat_of

INTS = [i1, i8, i16, i32, i64]
FLOATS = [f16, f32, f64, BFloat16Type(), Float8E4M3FNType()]


def numpy_reading(value):
    """The one value numpy's reading gives (None for non-splat tensors and non-numbers)."""
    array = constant_of(value)
    if array is None or array.ndim:
        return None
    return array.item() if array.dtype.kind == "i" else float(array.astype(np.float64))


def same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a):
        return math.isnan(b)
    return type(a) is type(b) and a == b and math.copysign(1, a) == math.copysign(1, b)


def random_int(rng: random.Random, bits: int) -> int:
    return rng.choice([0, 1, -1, 2 ** (bits - 1) - 1, -(2 ** (bits - 1)), 2**bits + 3, rng.getrandbits(bits + 8) - 2 ** (bits + 7)])


def random_float(rng: random.Random) -> float:
    return rng.choice([0.0, -0.0, 1.0, -2.5, math.inf, -math.inf, math.nan, 65504.0, 65520.0, 1e-8, 3.4e38, 3.5e38,
                       1e300, 5e-324, rng.uniform(-1e4, 1e4), rng.gauss(0, 1) * 2.0 ** rng.randint(-30, 30)])  # fmt: skip


@pytest.mark.parametrize("elem", INTS, ids=lambda t: f"i{t.width.data}")
def test_integer_constants_read_as_numpy_reads_them(elem):
    rng = random.Random()
    bits = elem.width.data
    for _ in range(200):
        v = random_int(rng, bits)
        scalar = arith.ConstantOp(IntegerAttr(v, elem, truncate_bits=True)).result
        splat = materialize(constant_of(scalar), TensorType(elem, [4, 8])).result
        for value in (scalar, splat):
            expected = numpy_reading(value)
            assert same(splat_of(value), expected), (v, value.type, splat_of(value), expected)
    mixed = materialize(np.arange(8, dtype=np.int64) - 3, TensorType(elem, [8])).result
    assert splat_of(mixed) is None and numpy_reading(mixed) is None


@pytest.mark.parametrize("elem", FLOATS, ids=lambda t: type(t).__name__)
def test_float_constants_read_as_numpy_reads_them(elem):
    rng = random.Random()
    for _ in range(200):
        v = random_float(rng)
        try:
            scalar = arith.ConstantOp(FloatAttr(v, elem)).result
        except OverflowError:  # xDSL refuses f16/f32 attributes out of range
            continue
        splat = materialize(constant_of(scalar), TensorType(elem, [16])).result
        for value in (scalar, splat):
            expected = numpy_reading(value)
            assert same(splat_of(value), expected), (v, value.type, splat_of(value), expected)
    rows = materialize(np.array([1.0, 2.0]).astype(constant_of(scalar).dtype), TensorType(elem, [2]))
    assert splat_of(rows.result) is None and numpy_reading(rows.result) is None


def test_other_values_have_no_splat():
    index = arith.ConstantOp(IntegerAttr(3, IndexType())).result
    assert splat_of(index) is None and numpy_reading(index) is None
    assert splat_of(arith.ConstantOp(IntegerAttr(5, IntegerType(128))).result) is None
    add = arith.BINARY_OPS["addi"](arith.ConstantOp.of(1, i32).result, arith.ConstantOp.of(2, i32).result)
    assert splat_of(add.result) is None
