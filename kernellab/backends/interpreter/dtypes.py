"""IR types → numpy storage dtypes, and the rounding helpers narrow floats need.

Integers are signless in the IR, so they are stored as signed numpy integers and ops that care
about signedness view them as unsigned. Pointers are int64 byte addresses. bf16 and fp8 are
ml_dtypes types: arithmetic on them computes in float32 and rounds back after every op.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
from xdsl.dialects import builtin
from xdsl.ir import Attribute

from kernellab.ir import tt

BF16 = np.dtype(ml_dtypes.bfloat16)
FP8E4 = np.dtype(ml_dtypes.float8_e4m3fn)
FP8E5 = np.dtype(ml_dtypes.float8_e5m2)
FP8E4B8 = np.dtype(ml_dtypes.float8_e4m3fnuz)
FP8E5B16 = np.dtype(ml_dtypes.float8_e5m2fnuz)
NARROW_FLOATS = (BF16, FP8E4, FP8E5, FP8E4B8, FP8E5B16)
F32 = np.dtype(np.float32)
F64 = np.dtype(np.float64)
I64 = np.dtype(np.int64)

_FLOATS = {
    builtin.Float16Type: np.dtype(np.float16),
    builtin.BFloat16Type: BF16,
    builtin.Float32Type: F32,
    builtin.Float64Type: F64,
    builtin.Float8E4M3FNType: FP8E4,
    builtin.Float8E5M2Type: FP8E5,
    builtin.Float8E4M3FNUZType: FP8E4B8,
    builtin.Float8E5M2FNUZType: FP8E5B16,
}
_INTS = {1: np.dtype(np.bool_), 8: np.dtype(np.int8), 16: np.dtype(np.int16),
         32: np.dtype(np.int32), 64: np.dtype(np.int64)}  # fmt: skip
# Largest finite value of each fp8 format: conversions saturate to it (PTX `.satfinite`).
FP8_MAX = {FP8E4: 448.0, FP8E5: 57344.0, FP8E4B8: 240.0, FP8E5B16: 57344.0}


def np_dtype(t: Attribute) -> np.dtype:
    """Storage dtype of a scalar or tensor IR type."""
    t = tt.element_type(t)
    if isinstance(t, tt.PointerType | builtin.IndexType):
        return I64
    if isinstance(t, builtin.IntegerType):
        return _INTS[t.width.data]
    try:
        return _FLOATS[type(t)]
    except KeyError:
        raise NotImplementedError(f"the interpreter does not support the type {t}") from None


def unsigned(x: np.ndarray) -> np.ndarray:
    """The same bits read as an unsigned integer of the same width (bool stays bool).

    Floats of every width (bf16 and fp8 included) are accepted too: atomic_cas and rounding
    helpers work on their bit patterns.
    """
    if x.dtype == np.bool_:
        return x
    return x.view(np.dtype(f"u{x.dtype.itemsize}"))


def round_float(x: np.ndarray, dt: np.ndarray) -> np.ndarray:
    """Round float values `x` to float dtype `dt` (round-to-nearest-even, done once).

    ml_dtypes converts float64 to bf16/fp8 through float32, which rounds twice; rounding to
    float32 with round-to-odd first makes the second rounding exact. fp8 saturates to its
    largest finite value as the GPU's `cvt.rn.satfinite` does (NaN stays NaN).
    """
    if x.dtype == dt:
        return x
    if dt in NARROW_FLOATS and x.dtype == F64:
        x = _to_f32_round_to_odd(x)
    if dt in FP8_MAX:
        limit = FP8_MAX[dt]
        x = np.clip(x, -limit, limit)
    return x.astype(dt)


def _to_f32_round_to_odd(x: np.ndarray) -> np.ndarray:
    r = x.astype(F32)
    back = r.astype(F64)
    over = np.abs(back) > np.abs(x)
    r = np.where(over, np.nextafter(r, np.float32(0)), r)
    inexact = (r.astype(F64) != x) & np.isfinite(x)
    bits = r.view(np.uint32) | inexact.astype(np.uint32)
    return bits.view(F32)
