"""Constant values as numpy arrays, and the evaluation of our `arith` and `tt` ops on them.

A fold must produce exactly the bits the program would compute at run time: integers wrap at
their bit width (read as signed or unsigned as the op says), floats round once, at their own
precision. Integers are therefore evaluated on Python ints (no overflow surprises) and wrapped;
floats in numpy at the type's precision (bf16/fp8 through ml_dtypes, after an exact widening to
f32, which rounds the +, -, *, / of these narrow types correctly). Whatever has no single
defined result (division by zero, out-of-range shifts and float→int conversions, conversions
that would round twice) is not folded: `fold` returns None and the op stays.

A splat constant is a 0-d array, so folding `dense<...> : tensor<128x128xf32>` costs one scalar.
Rules that only need a constant's one value read it with `splats.splat_of`, without numpy; this
module loads when all operands of an op are constants.
ml_dtypes loads with the first bf16 or fp8 constant, so a kernel without them compiles without it.
"""

from __future__ import annotations

import functools
import math

import numpy as np
from xdsl.dialects.builtin import (
    BFloat16Type,
    BytesAttr,
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
    TensorType,
)
from xdsl.ir import Attribute, Operation, SSAValue

from kernellab.ir import arith
from kernellab.ir.tt import element_type, shape_of
from kernellab.passes.splats import wrap_int

_NUMPY_FLOATS = {Float16Type: np.float16, Float32Type: np.float32, Float64Type: np.float64}
_ML_DTYPES_FLOATS = {
    BFloat16Type: "bfloat16", Float8E4M3FNType: "float8_e4m3fn", Float8E5M2Type: "float8_e5m2",
    Float8E4M3FNUZType: "float8_e4m3fnuz", Float8E5M2FNUZType: "float8_e5m2fnuz",
}  # fmt: skip
_INT_DTYPES = {1: np.int8, 8: np.int8, 16: np.int16, 32: np.int32, 64: np.int64}


@functools.cache
def _float_dtype(float_type: type) -> np.dtype | None:
    """numpy dtype of an xDSL float type (bf16 and fp8 from ml_dtypes, imported here)."""
    if float_type in _NUMPY_FLOATS:
        return np.dtype(_NUMPY_FLOATS[float_type])
    name = _ML_DTYPES_FLOATS.get(float_type)
    if name is None:
        return None
    import ml_dtypes

    return np.dtype(getattr(ml_dtypes, name))


def storage_dtype(elem: Attribute) -> np.dtype | None:
    """numpy dtype holding values of scalar type `elem` (ints signed; i1 true is -1)."""
    if isinstance(elem, IntegerType):
        dtype = _INT_DTYPES.get(elem.width.data)
        return np.dtype(dtype) if dtype else None
    return _float_dtype(type(elem))


def width(t: Attribute) -> int:
    """Bit width of an integer (or tensor of integers) type."""
    return element_type(t).width.data


def _bits(t: Attribute) -> int:
    elem = element_type(t)
    return elem.width.data if isinstance(elem, IntegerType) else storage_dtype(elem).itemsize * 8


# ------------------------------------------------------------------ constants in and out


def constant_of(value: SSAValue) -> np.ndarray | None:
    """The value of an `arith.constant` result: 0-d if scalar or splat, else the full array."""
    op = value.owner
    if not isinstance(op, arith.ConstantOp):
        return None
    dtype = storage_dtype(element_type(value.type))
    if dtype is None:
        return None
    attr = op.value
    if isinstance(attr, IntegerAttr):
        return np.array(wrap_int(attr.value.data, width(value.type)), dtype)
    if isinstance(attr, FloatAttr):
        return np.array(attr.value.data).astype(dtype)
    if isinstance(attr, DenseIntOrFPElementsAttr):
        data, size = attr.data.data, dtype.itemsize
        if data == data[:size] * (len(data) // size):
            return np.frombuffer(data[:size], dtype).reshape(())
        return np.frombuffer(data, dtype).reshape(shape_of(value.type))
    return None


def materialize(array: np.ndarray, type: Attribute) -> arith.ConstantOp:
    """An `arith.constant` of `type` holding `array` (0-d arrays become splats)."""
    elem = element_type(type)
    dtype = storage_dtype(elem)
    if isinstance(type, TensorType):
        full = np.ascontiguousarray(np.broadcast_to(np.asarray(array, dtype), shape_of(type)))
        return arith.ConstantOp(DenseIntOrFPElementsAttr(type, BytesAttr(full.tobytes())))
    if isinstance(elem, IntegerType):
        return arith.ConstantOp(IntegerAttr(int(array), elem))
    return arith.ConstantOp(FloatAttr(float(np.asarray(array).astype(np.float64)), elem))


# ------------------------------------------------------------------------------ integers


def _signed(a: np.ndarray) -> np.ndarray:
    return a.astype(object)


def _unsigned(a: np.ndarray, bits: int) -> np.ndarray:
    return np.asarray(a.astype(object) % (1 << bits), dtype=object)


def _to_storage(x: np.ndarray, t: Attribute) -> np.ndarray:
    bits = width(t)
    wrapped = np.frompyfunc(lambda v: wrap_int(int(v), bits), 1, 1)(x)
    return np.asarray(wrapped).astype(storage_dtype(element_type(t)))


def _trunc_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    q = np.frompyfunc(lambda x, y: abs(x) // abs(y) * (1 if (x < 0) == (y < 0) else -1), 2, 1)
    return np.asarray(q(a, b), dtype=object)


def _int_binary(name: str, a: np.ndarray, b: np.ndarray, bits: int) -> np.ndarray | None:
    sa, sb = _signed(a), _signed(b)
    ua, ub = _unsigned(a, bits), _unsigned(b, bits)
    if name in ("divsi", "remsi", "divui", "remui") and np.any(sb == 0):
        return None  # division by zero: no defined result
    if name in ("shli", "shrsi", "shrui") and np.any(ub >= bits):
        return None  # shifting by the width or more: no defined result
    min_int = -(1 << (bits - 1))
    if name in ("divsi", "remsi") and np.any((sa == min_int) & (sb == -1)):
        return None  # INT_MIN / -1 overflows
    ops = {
        "addi": lambda: sa + sb,
        "subi": lambda: sa - sb,
        "muli": lambda: sa * sb,
        "divsi": lambda: _trunc_div(sa, sb),
        "remsi": lambda: sa - _trunc_div(sa, sb) * sb,
        "divui": lambda: ua // ub,
        "remui": lambda: ua % ub,
        "andi": lambda: ua & ub,
        "ori": lambda: ua | ub,
        "xori": lambda: ua ^ ub,
        "shli": lambda: ua << ub,
        "shrsi": lambda: sa >> ub,
        "shrui": lambda: ua >> ub,
        "maxsi": lambda: np.where(sa >= sb, sa, sb),
        "minsi": lambda: np.where(sa <= sb, sa, sb),
        "maxui": lambda: np.where(ua >= ub, ua, ub),
        "minui": lambda: np.where(ua <= ub, ua, ub),
    }
    return np.asarray(ops[name](), dtype=object)


_CMPI = {
    "eq": (False, np.equal), "ne": (False, np.not_equal),
    "slt": (True, np.less), "sle": (True, np.less_equal),
    "sgt": (True, np.greater), "sge": (True, np.greater_equal),
    "ult": (False, np.less), "ule": (False, np.less_equal),
    "ugt": (False, np.greater), "uge": (False, np.greater_equal),
}  # fmt: skip


def _cmpi(predicate: str, a: np.ndarray, b: np.ndarray, bits: int) -> np.ndarray:
    signed, compare = _CMPI[predicate]
    x, y = (_signed(a), _signed(b)) if signed else (_unsigned(a, bits), _unsigned(b, bits))
    return np.asarray(compare(x, y), dtype=bool)


# -------------------------------------------------------------------------------- floats


def _compute_dtype(dtype: np.dtype) -> np.dtype:
    """The dtype a float op computes in: f32 for the narrow floats (f16, bf16, fp8)."""
    return np.dtype(np.float32) if dtype.itemsize < 4 else dtype


def _maximum(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """IEEE maximum: NaN wins, and +0 is larger than -0."""
    r = np.where(a > b, a, b)
    r = np.where((a == b) & np.signbit(b), a, r)
    return np.where(np.isnan(a), a, np.where(np.isnan(b), b, r))


def _minimum(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    r = np.where(a < b, a, b)
    r = np.where((a == b) & np.signbit(a), a, r)
    return np.where(np.isnan(a), a, np.where(np.isnan(b), b, r))


def _float_binary(name: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    ops = {
        "addf": np.add,
        "subf": np.subtract,
        "mulf": np.multiply,
        "divf": np.divide,
        "remf": np.fmod,
        "maximumf": _maximum,
        "minimumf": _minimum,
        "maxnumf": lambda x, y: np.where(np.isnan(x), y, np.where(np.isnan(y), x, _maximum(x, y))),
        "minnumf": lambda x, y: np.where(np.isnan(x), y, np.where(np.isnan(y), x, _minimum(x, y))),
    }
    dtype = a.dtype
    wide = _compute_dtype(dtype)
    return np.asarray(ops[name](a.astype(wide), b.astype(wide))).astype(dtype)


_CMPF = {
    "oeq": np.equal, "ogt": np.greater, "oge": np.greater_equal,
    "olt": np.less, "ole": np.less_equal, "one": np.not_equal,
}  # fmt: skip


def _cmpf(predicate: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    x, y = a.astype(np.float64), b.astype(np.float64)
    unordered = np.isnan(x) | np.isnan(y)
    if predicate in ("false", "true"):
        result = np.full(np.broadcast(x, y).shape, predicate == "true")
    elif predicate == "ord":
        result = ~unordered
    elif predicate == "uno":
        result = unordered
    elif predicate.startswith("o"):
        result = ~unordered & _CMPF[predicate](x, y)
    else:  # "u..": true when unordered, else the ordered comparison
        result = unordered | _CMPF["o" + predicate[1:]](x, y)
    return np.asarray(result, dtype=bool)


def round_float(x: np.ndarray, dtype: np.dtype) -> np.ndarray | None:
    """Round floats to `dtype` once (None where only a double rounding is available)."""
    if x.dtype == np.float64 and dtype not in (np.float64, np.float32, np.float16):
        # ml_dtypes narrows f64 through f32: fine only when that first step is exact
        as_f32 = x.astype(np.float32)
        if not np.array_equal(as_f32.astype(np.float64), x, equal_nan=True):
            return None
        x = as_f32
    return x.astype(dtype)


def _int_to_float(x: np.ndarray, dtype: np.dtype) -> np.ndarray | None:
    if dtype == np.float64:
        return np.asarray(np.frompyfunc(float, 1, 1)(x)).astype(np.float64)
    if np.any(np.abs(x) > 2**53):
        return None  # not exact in f64: converting through it would round twice
    return round_float(np.asarray(np.frompyfunc(float, 1, 1)(x)).astype(np.float64), dtype)


def _float_to_int(x: np.ndarray, t: Attribute, signed: bool) -> np.ndarray | None:
    bits = width(t)
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    wide = x.astype(np.float64)
    if not np.isfinite(wide).all():
        return None
    ints = np.asarray(np.frompyfunc(math.trunc, 1, 1)(wide), dtype=object)
    if np.any((ints < lo) | (ints > hi)):
        return None  # out of range: no defined result
    return _to_storage(ints, t)


# ------------------------------------------------------------------------------ dispatch


def _cast(op: Operation, x: np.ndarray) -> np.ndarray | None:
    kind = op.name.split(".")[1]
    src, dst = op.operands[0].type, op.results[0].type
    dtype = storage_dtype(element_type(dst))
    if kind in ("extsi", "trunci"):
        return _to_storage(_signed(x), dst)
    if kind == "extui":
        return _to_storage(_unsigned(x, width(src)), dst)
    if kind == "extf":
        return x.astype(dtype)  # widening is exact
    if kind == "truncf":
        return round_float(x, dtype)
    if kind == "sitofp":
        return _int_to_float(_signed(x), dtype)
    if kind == "uitofp":
        return _int_to_float(_unsigned(x, width(src)), dtype)
    if kind in ("fptosi", "fptoui"):
        return _float_to_int(x, dst, kind == "fptosi")
    if kind == "bitcast" and _bits(src) == _bits(dst):
        return x.copy().view(dtype)
    return None


def fold(op: Operation, args: list[np.ndarray]) -> np.ndarray | None:
    """The value of `op` applied to constant operands, or None if it has no fold here."""
    result_type = op.results[0].type if len(op.results) == 1 else None
    if result_type is None or storage_dtype(element_type(result_type)) is None:
        return None
    with np.errstate(all="ignore"):
        result = _fold(op, args, result_type)
    return None if result is None else np.asarray(result)


def _fold(op: Operation, args: list[np.ndarray], t: Attribute) -> np.ndarray | None:
    name = op.name
    short = name.split(".")[1]
    if name in ("tt.splat", "tt.broadcast", "tt.expand_dims", "tt.reshape", "tt.trans"):
        (x,) = args
        if x.ndim == 0:
            return x  # still a splat
        if name == "tt.broadcast":
            return np.broadcast_to(x, shape_of(t))
        if name == "tt.trans":
            return np.transpose(x, tuple(op.order.get_values()))
        return x.reshape(shape_of(t))
    if name == "arith.select":
        cond, a, b = args
        return np.where(cond != 0, a, b)
    if isinstance(op, arith.CmpiOp):
        bits = width(op.lhs.type)
        return _to_storage(_cmpi(op.predicate_name, *args, bits).astype(object) * -1, t)
    if isinstance(op, arith.CmpfOp):
        return _to_storage(_cmpf(op.predicate_name, *args).astype(object) * -1, t)
    if short in arith.CAST_OPS and name.startswith("arith."):
        return _cast(op, args[0])
    if name == "arith.negf":
        (x,) = args
        return np.negative(x.astype(_compute_dtype(x.dtype))).astype(x.dtype)
    if short in arith.BINARY_OPS and name.startswith("arith."):
        if isinstance(element_type(t), IntegerType):
            result = _int_binary(short, *args, width(t))
            return None if result is None else _to_storage(result, t)
        return _float_binary(short, *args)
    return None
