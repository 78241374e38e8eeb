"""Constant folding against numpy on random tensors: every element, every width and signedness."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from xdsl.dialects.builtin import BFloat16Type, TensorType, f16, f32, i8, i16, i32, i64

from kernellab.ir import arith
from kernellab.passes.folding import constant_of, fold, materialize

INT_TYPES = {8: (i8, np.int8, np.uint8), 16: (i16, np.int16, np.uint16),
             32: (i32, np.int32, np.uint32), 64: (i64, np.int64, np.uint64)}  # fmt: skip
N = 64


def _constant(array: np.ndarray, elem) -> arith.ConstantOp:
    return materialize(array, TensorType(elem, [N]))


def _fold_binary(name: str, a: np.ndarray, b: np.ndarray, elem) -> np.ndarray | None:
    lhs, rhs = _constant(a, elem), _constant(b, elem)
    op = arith.BINARY_OPS[name](lhs.result, rhs.result)
    return fold(op, [constant_of(lhs.result), constant_of(rhs.result)])


def _trunc_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def _reference(name: str, a: int, b: int, bits: int) -> int:
    """The op on Python ints (signed inputs), wrapped to `bits` as a signed value."""
    ua, ub = a % (1 << bits), b % (1 << bits)
    shift = ub % bits
    ops = {
        "addi": lambda: a + b, "subi": lambda: a - b, "muli": lambda: a * b,
        "divsi": lambda: _trunc_div(a, b), "remsi": lambda: a - _trunc_div(a, b) * b,
        "divui": lambda: ua // ub, "remui": lambda: ua % ub,
        "andi": lambda: a & b, "ori": lambda: a | b, "xori": lambda: a ^ b,
        "maxsi": lambda: max(a, b), "minsi": lambda: min(a, b),
        "maxui": lambda: max(ua, ub), "minui": lambda: min(ua, ub),
        "shli": lambda: ua << shift, "shrsi": lambda: a >> shift, "shrui": lambda: ua >> shift,
    }  # fmt: skip
    value = ops[name]()
    value %= 1 << bits
    return value - (1 << bits) if value >= 1 << (bits - 1) else value


INT_OPS = (
    "addi subi muli divsi remsi divui remui andi ori xori maxsi minsi maxui minui shli shrsi shrui"
)


@pytest.mark.parametrize("bits", [8, 16, 32, 64])
@pytest.mark.parametrize("name", INT_OPS.split())
def test_integer_ops_wrap_like_the_hardware(rng, name, bits):
    elem, signed, _ = INT_TYPES[bits]
    info = np.iinfo(signed)
    a = rng.integers(info.min, info.max, N, dtype=signed, endpoint=True)
    b = rng.integers(info.min, info.max, N, dtype=signed, endpoint=True)
    b[b == 0] = 3
    b[(a == info.min) & (b == -1)] = 5
    if name.startswith("sh"):
        b = rng.integers(0, bits, N, dtype=signed)
    got = _fold_binary(name, a, b, elem)
    assert got is not None
    expected = [_reference(name, int(x), int(y), bits) for x, y in zip(a, b)]
    assert got.astype(object).tolist() == expected


@pytest.mark.parametrize(
    "predicate", ["eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge"]
)
def test_cmpi_reads_signedness_from_the_predicate(rng, predicate):
    a = rng.integers(-128, 127, N, dtype=np.int8, endpoint=True)
    b = a.copy()
    b[::2] = rng.integers(-128, 127, N // 2, dtype=np.int8, endpoint=True)
    lhs, rhs = _constant(a, i8), _constant(b, i8)
    op = arith.CmpiOp(predicate, lhs.result, rhs.result)
    got = fold(op, [constant_of(lhs.result), constant_of(rhs.result)])
    view = np.uint8 if predicate.startswith("u") else np.int8
    compare = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
               "gt": np.greater, "ge": np.greater_equal}[predicate.lstrip("su")]  # fmt: skip
    expected = compare(a.view(view), b.view(view))
    np.testing.assert_array_equal(got != 0, expected)


FLOATS = {
    "f32": (f32, np.float32),
    "f16": (f16, np.float16),
    "bf16": (BFloat16Type(), ml_dtypes.bfloat16),
}


@pytest.mark.parametrize("type_name", list(FLOATS))
@pytest.mark.parametrize("name, ufunc", [("addf", np.add), ("subf", np.subtract),
                                         ("mulf", np.multiply), ("divf", np.divide)])  # fmt: skip
def test_float_ops_round_once_at_their_precision(rng, type_name, name, ufunc):
    elem, dtype = FLOATS[type_name]
    a = (rng.uniform(0.1, 4, N) * rng.choice([-1, 1], N)).astype(dtype)
    b = (rng.uniform(0.1, 4, N) * rng.choice([-1, 1], N)).astype(dtype)
    got = _fold_binary(name, a, b, elem)
    # exact in f64 (or within half an f64 ulp for divf), then one rounding: correctly rounded
    expected = ufunc(a.astype(np.float64), b.astype(np.float64)).astype(np.float32).astype(dtype)
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(got.astype(np.float64), expected.astype(np.float64))


def test_splat_constants_stay_splats():
    big = TensorType(f32, [128, 128])
    c = materialize(np.array(1.5, np.float32), big)
    value = constant_of(c.result)
    assert value.shape == ()  # one scalar, not 16384 of them
    assert value == np.float32(1.5)
