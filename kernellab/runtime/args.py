"""Host values → kernel arguments: the type a value specializes to, and what the backend receives.

A launch turns each argument into a small hashable key (its signature type plus the properties
the compiler specializes on: 16-divisibility, equality to 1) and a runtime value (a flat numpy
view for arrays, the number for scalars). The rules follow Triton's so that a kernel compiles to
the same specialization here as there. Lookups are by `type(value)` and cached, so the warm path
is a dict lookup per argument.
"""

from __future__ import annotations

from collections.abc import Callable

import ml_dtypes
import numpy as np

from kernellab.language import core as tl

CPU_ONLY = "this build runs kernels on the interpreter; pass CPU arrays (numpy arrays or CPU tensors)"

# numpy dtype → signature spelling of the pointee
_POINTEE = {
    np.dtype(np.bool_): "i1",
    np.dtype(np.int8): "i8", np.dtype(np.int16): "i16",
    np.dtype(np.int32): "i32", np.dtype(np.int64): "i64",
    np.dtype(np.uint8): "u8", np.dtype(np.uint16): "u16",
    np.dtype(np.uint32): "u32", np.dtype(np.uint64): "u64",
    np.dtype(np.float16): "fp16", np.dtype(np.float32): "fp32", np.dtype(np.float64): "fp64",
    np.dtype(ml_dtypes.bfloat16): "bf16",
    np.dtype(ml_dtypes.float8_e4m3fn): "fp8e4nv",
    np.dtype(ml_dtypes.float8_e5m2): "fp8e5",
}  # fmt: skip

_INT_RANGES = (("i32", -(2**31), 2**31), ("i64", -(2**63), 2**63), ("u64", 0, 2**64))

# A key is (signature type, divisible by 16); "constexpr" keys carry the value instead.
Key = tuple


class ArgumentError(TypeError):
    """A launch argument the runtime cannot pass to a kernel."""


def pointee_name(dtype: np.dtype) -> str:
    """Signature spelling (`fp32`) of a numpy dtype an array argument points to."""
    try:
        return _POINTEE[dtype]
    except KeyError:
        known = ", ".join(sorted({str(d) for d in _POINTEE}))
        raise ArgumentError(f"arrays of dtype {dtype} can't be passed to a kernel; use one of {known}") from None


def flat_buffer(a: np.ndarray) -> np.ndarray:
    """A 1-D view of the memory a kernel may address through `a`'s data pointer.

    Kernels index memory with their own strides, so a non-contiguous view (a transpose, a
    column slice) is passed as the span from its first to its last element, sharing memory.
    """
    if a.flags.c_contiguous:
        return a.reshape(-1)
    item = a.itemsize
    if any(s < 0 or s % item for s in a.strides):
        raise ArgumentError(
            "arrays with negative or unaligned strides can't be passed to a kernel; "
            "pass np.ascontiguousarray(x)"
        )
    extent = 0 if a.size == 0 else 1 + sum((n - 1) * s for n, s in zip(a.shape, a.strides)) // item
    return np.lib.stride_tricks.as_strided(a, shape=(extent,), strides=(item,))


def _array(a: np.ndarray, specialize: bool, align: bool) -> tuple[Key, np.ndarray]:
    aligned = align and a.__array_interface__["data"][0] % 16 == 0
    return ("*" + pointee_name(a.dtype), aligned), flat_buffer(a)


def _torch_to_numpy(t) -> np.ndarray:
    """A numpy array sharing memory with a CPU torch tensor (bf16/fp8 reinterpreted via ml_dtypes)."""
    import torch

    if t.device.type != "cpu":
        raise ArgumentError(f"{CPU_ONLY}; got a torch tensor on {t.device}")
    t = t.detach()
    reinterpret = {
        torch.bfloat16: (torch.int16, ml_dtypes.bfloat16),
        getattr(torch, "float8_e4m3fn", None): (torch.uint8, ml_dtypes.float8_e4m3fn),
        getattr(torch, "float8_e5m2", None): (torch.uint8, ml_dtypes.float8_e5m2),
    }
    if t.dtype in reinterpret:
        as_int, np_dtype = reinterpret[t.dtype]
        return t.view(as_int).numpy().view(np_dtype)
    return t.numpy()


def _torch(t, specialize: bool, align: bool) -> tuple[Key, np.ndarray]:
    return _array(_torch_to_numpy(t), specialize, align)


def _array_interface(obj, specialize: bool, align: bool) -> tuple[Key, np.ndarray]:
    return _array(np.asarray(obj), specialize, align)


def _cuda_array(obj, specialize: bool, align: bool):
    raise ArgumentError(f"{CPU_ONLY}; got {type(obj).__name__}, which lives in GPU memory")


def _int(v: int, specialize: bool, align: bool) -> tuple[Key, int]:
    for name, lo, hi in _INT_RANGES:
        if lo <= v < hi:
            break
    else:
        raise ArgumentError(f"the integer {v} doesn't fit in 64 bits; kernels take i32, i64 or u64 scalars")
    if specialize and v == 1:
        return ("constexpr", 1), v
    return (name, specialize and align and v % 16 == 0), v


def _numpy_int(v: np.integer, specialize: bool, align: bool) -> tuple[Key, int]:
    name = _POINTEE[v.dtype]
    value = int(v)
    if specialize and value == 1:
        return ("constexpr", 1), value
    return (name, specialize and align and value % 16 == 0), value


def _float(v: float, specialize: bool, align: bool) -> tuple[Key, float]:
    return ("fp32", False), float(v)


def _numpy_float(v: np.floating, specialize: bool, align: bool) -> tuple[Key, object]:
    name = _POINTEE.get(v.dtype, "fp32")
    if name in ("fp32", "fp64"):  # np.float64 is a Python float: typed fp32, as Triton does
        return ("fp32", False), float(v)
    return (name, False), v


def _bool(v, specialize: bool, align: bool) -> tuple[Key, bool]:
    return ("i1", False), bool(v)


def _none(v, specialize: bool, align: bool) -> tuple[Key, None]:
    return ("constexpr", None), None


def _constexpr(v: tl.constexpr, specialize: bool, align: bool) -> tuple[Key, object]:
    return ("constexpr", v.value), v.value


Handler = Callable[[object, bool, bool], tuple[Key, object]]
_HANDLERS: dict[type, Handler] = {
    np.ndarray: _array, int: _int, float: _float, bool: _bool, type(None): _none,
    np.bool_: _bool, tl.constexpr: _constexpr,
}  # fmt: skip


def _resolve(tp: type) -> Handler | None:
    """Find the handler for a type not seen before (checked once per type, then cached)."""
    if tp.__module__.split(".")[0] == "torch" and hasattr(tp, "data_ptr"):
        return _torch
    if issubclass(tp, np.ndarray):
        return _array
    if issubclass(tp, (bool, np.bool_)):
        return _bool
    if issubclass(tp, np.integer):
        return _numpy_int
    if issubclass(tp, np.floating):
        return _numpy_float
    if issubclass(tp, int):
        return _int
    if issubclass(tp, float):
        return _float
    if hasattr(tp, "__cuda_array_interface__"):
        return _cuda_array
    if hasattr(tp, "__array_interface__"):
        return _array_interface
    return None


def specialize(value, specialize: bool = True, align: bool = True) -> tuple[Key, object]:
    """(key, runtime value) of one non-constexpr argument; raises ArgumentError if unsupported.

    `specialize=False` (do_not_specialize) keeps integers out of the equal-to-1 and
    divisibility specializations; `align=False` (do_not_specialize_on_alignment) does the same
    for pointer alignment and integer divisibility.
    """
    tp = type(value)
    handler = _HANDLERS.get(tp)
    if handler is None:
        handler = _resolve(tp)
        if handler is None:
            raise ArgumentError(f"values of type {tp.__module__}.{tp.__qualname__} can't be passed to a kernel")
        _HANDLERS[tp] = handler
    return handler(value, specialize, align)


def as_numpy(value) -> np.ndarray | None:
    """The numpy array (sharing memory) behind an array argument, or None for anything else."""
    if isinstance(value, np.ndarray):
        return value
    handler = _HANDLERS.get(type(value)) or _resolve(type(value))
    if handler is _torch:
        return _torch_to_numpy(value)
    if handler is _array_interface:
        return np.asarray(value)
    return None


def runtime_value(value):
    """What the backend receives for a value (no specialization): flat arrays, plain scalars."""
    return specialize(value, specialize=False, align=False)[1]


def normalize_grid(grid) -> tuple[int, int, int]:
    """A launch grid as three positive ints: `(n,)`, `(x, y)`, `(x, y, z)` or a bare int."""
    dims = (grid,) if not isinstance(grid, (tuple, list)) else tuple(grid)
    if not 1 <= len(dims) <= 3:
        raise ArgumentError(f"a grid has 1 to 3 dimensions, got {len(dims)}: {grid!r}")
    try:
        out = tuple(int(d.__index__()) for d in dims)
    except (AttributeError, TypeError):
        raise ArgumentError(
            f"grid {grid!r} must hold integers (use kl.cdiv(n, BLOCK) to count programs)"
        ) from None
    if any(d < 0 for d in out):
        raise ArgumentError(f"grid {grid!r} has a negative dimension")
    return out + (1,) * (3 - len(out))


__all__ = ["ArgumentError", "specialize", "runtime_value", "as_numpy", "normalize_grid", "flat_buffer", "CPU_ONLY"]
