"""Host values → kernel arguments: the type a value specializes to, and what the backend receives.

A launch turns each argument into a small hashable key (its signature type plus the properties
the compiler specializes on: 16-divisibility, equality to 1) and a runtime value (a flat numpy
view for CPU arrays, the device address for GPU arrays, the number for scalars). The rules follow
Triton's so that a kernel compiles to the same specialization here as there. Lookups are by
`type(value)` and cached, so the warm path is a dict lookup per argument.

GPU arrays (torch CUDA tensors, objects with `__cuda_array_interface__`, CUDA `__dlpack__`
producers) get a 4-element key `(type, aligned, device index, is torch)`; CPU arrays a 2-element
one. `launch_device` reads the keys of one launch and says where it runs (or why it can't).

numpy and ml_dtypes load on first use, not at import: a numpy value can only exist once numpy
is imported, so a type is checked against numpy's classes only when numpy is in `sys.modules`,
and launches of torch CUDA tensors never load them.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from kernellab.backends.typed_view import ReinterpretedTensor
from kernellab.language import core as tl

if TYPE_CHECKING:
    import numpy as np

@functools.cache
def _pointee_of_numpy() -> dict:
    """numpy dtype → signature spelling of the pointee (imports numpy and ml_dtypes)."""
    import ml_dtypes
    import numpy as np

    return {
        np.dtype(np.bool_): "i1",
        np.dtype(np.int8): "i8", np.dtype(np.int16): "i16",
        np.dtype(np.int32): "i32", np.dtype(np.int64): "i64",
        np.dtype(np.uint8): "u8", np.dtype(np.uint16): "u16",
        np.dtype(np.uint32): "u32", np.dtype(np.uint64): "u64",
        np.dtype(np.float16): "fp16", np.dtype(np.float32): "fp32", np.dtype(np.float64): "fp64",
        np.dtype(ml_dtypes.bfloat16): "bf16",
        np.dtype(ml_dtypes.float8_e4m3fn): "fp8e4nv",
        np.dtype(ml_dtypes.float8_e5m2): "fp8e5",
        np.dtype(ml_dtypes.float8_e4m3fnuz): "fp8e4b8",
        np.dtype(ml_dtypes.float8_e5m2fnuz): "fp8e5b16",
    }  # fmt: skip


@functools.cache
def _numpy_of_pointee() -> dict:
    """Signature spelling of a pointee → numpy dtype."""
    return {name: dt for dt, name in _pointee_of_numpy().items()}


_INT_RANGES = (("i32", -(2**31), 2**31), ("i64", -(2**63), 2**63), ("u64", 0, 2**64))

# A key is (signature type, divisible by 16); "constexpr" keys carry the value instead.
Key = tuple


class ArgumentError(TypeError):
    """A launch argument the runtime cannot pass to a kernel."""


def pointee_name(dtype: np.dtype) -> str:
    """Signature spelling (`fp32`) of a numpy dtype an array argument points to."""
    pointee = _pointee_of_numpy()
    try:
        return pointee[dtype]
    except KeyError:
        known = ", ".join(sorted({str(d) for d in pointee}))
        raise ArgumentError(f"arrays of dtype {dtype} can't be passed to a kernel; use one of {known}") from None


def flat_buffer(a: np.ndarray) -> np.ndarray:
    """A 1-D view of the memory a kernel may address through `a`'s data pointer.

    Kernels index memory with their own strides, so a non-contiguous view (a transpose, a
    column slice) is passed as the span from its first to its last element, sharing memory.
    """
    if a.flags.c_contiguous:
        return a.reshape(-1)
    import numpy as np

    item = a.itemsize
    if any(s < 0 or s % item for s in a.strides):
        raise ArgumentError(
            "arrays with negative or unaligned strides can't be passed to a kernel; "
            "pass np.ascontiguousarray(x)"
        )
    extent = 0 if a.size == 0 else 1 + sum((n - 1) * s for n, s in zip(a.shape, a.strides)) // item
    bits = a.view(np.dtype(f"u{item}"))  # as_strided can't rebuild ml_dtypes' dtypes (bf16, fp8)
    return np.lib.stride_tricks.as_strided(bits, shape=(extent,), strides=(item,)).view(a.dtype)


def _array(a: np.ndarray, specialize: bool, align: bool) -> tuple[Key, np.ndarray]:
    """The array itself: the interpreter addresses it through flat_buffer, and knows which
    elements a strided view holds (interpreter/memory.Buffer)."""
    aligned = align and a.__array_interface__["data"][0] % 16 == 0
    if not a.flags.c_contiguous:
        flat_buffer(a)  # refuses negative and unaligned strides here, at the launch
    return ("*" + pointee_name(a.dtype), aligned), a


# torch dtypes whose tensors `.numpy()` refuses (bf16, fp8) or supports only in recent torch
# releases (uint16/32/64): viewed as a signed integer of the same width, then as numpy's dtype
# (given by its signature spelling).
_THROUGH_INT = {
    "bfloat16": ("int16", "bf16"), "float8_e4m3fn": ("int8", "fp8e4nv"),
    "float8_e5m2": ("int8", "fp8e5"), "float8_e4m3fnuz": ("int8", "fp8e4b8"),
    "float8_e5m2fnuz": ("int8", "fp8e5b16"), "uint16": ("int16", "u16"),
    "uint32": ("int32", "u32"), "uint64": ("int64", "u64"),
}  # fmt: skip


def _torch_to_numpy(t) -> np.ndarray:
    """A numpy array sharing memory with a CPU torch tensor, of the same element type."""
    if t.device.type != "cpu":
        raise ArgumentError(f"a torch tensor on {t.device} has no numpy view; this needs a CPU tensor")
    t = t.detach()
    through = _THROUGH_INT.get(str(t.dtype).rsplit(".", 1)[-1])
    if through is not None:
        as_int, pointee = through
        return t.view(getattr(sys.modules["torch"], as_int)).numpy().view(_numpy_of_pointee()[pointee])
    return t.numpy()


# torch dtype name → signature spelling of the pointee
_TORCH_POINTEE = {
    "bool": "i1", "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
    "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64",
    "float16": "fp16", "bfloat16": "bf16", "float32": "fp32", "float64": "fp64",
    "float8_e4m3fn": "fp8e4nv", "float8_e5m2": "fp8e5",
    "float8_e4m3fnuz": "fp8e4b8", "float8_e5m2fnuz": "fp8e5b16",
}  # fmt: skip
_torch_pointee_cache: dict = {}


def _torch_pointee(dtype) -> str:
    name = _torch_pointee_cache.get(dtype)
    if name is None:
        short = str(dtype).rsplit(".", 1)[-1]
        if short not in _TORCH_POINTEE:
            known = ", ".join(f"torch.{k}" for k in _TORCH_POINTEE)
            raise ArgumentError(f"tensors of dtype {dtype} can't be passed to a kernel; use one of {known}")
        name = _torch_pointee_cache[dtype] = _TORCH_POINTEE[short]
    return name


def _torch(t, specialize: bool, align: bool) -> tuple[Key, object]:
    device = t.get_device()  # -1 on the CPU; cheaper than t.device
    if device < 0:
        return _array(_torch_to_numpy(t), specialize, align)
    ptr = t.data_ptr()
    pointer = _torch_pointer_cache.get(t.dtype) or _torch_pointer(t.dtype)
    return (pointer, align and not ptr & 15, device, True), ptr


_torch_pointer_cache: dict = {}


def _torch_pointer(dtype) -> str:
    name = _torch_pointer_cache[dtype] = "*" + _torch_pointee(dtype)
    return name


def _array_interface(obj, specialize: bool, align: bool) -> tuple[Key, np.ndarray]:
    import numpy as np

    return _array(np.asarray(obj), specialize, align)


def _current_cuda_device() -> int:
    """The device a bare device pointer is taken to live on: torch's current device, else 0."""
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        return torch.cuda.current_device()
    return 0


def _cuda_array(obj, specialize: bool, align: bool) -> tuple[Key, int]:
    cai = obj.__cuda_array_interface__
    ptr = int(cai["data"][0])
    import numpy as np

    try:
        dtype = np.dtype(cai["typestr"])
    except TypeError:
        raise ArgumentError(f"unknown __cuda_array_interface__ typestr {cai['typestr']!r}") from None
    return ("*" + pointee_name(dtype), align and ptr % 16 == 0, _current_cuda_device(), False), ptr


_DLPACK_CPU, _DLPACK_CUDA = 1, 2


def _dlpack(obj, specialize: bool, align: bool) -> tuple[Key, object]:
    """A `__dlpack__` producer: CPU ones through numpy, CUDA ones through torch.from_dlpack."""
    device_type, _ = obj.__dlpack_device__()
    if device_type == _DLPACK_CPU:
        import numpy as np

        return _array(np.from_dlpack(obj), specialize, align)
    if device_type != _DLPACK_CUDA:
        raise ArgumentError(f"{type(obj).__name__} lives on DLPack device type {device_type}; kernels take CPU or CUDA memory")
    try:
        import torch
    except ImportError:
        raise ArgumentError(
            f"{type(obj).__name__} is a CUDA __dlpack__ array; passing it needs torch (or give it "
            "a __cuda_array_interface__)"
        ) from None
    return _torch(torch.from_dlpack(obj), specialize, align)


def _reinterpreted(view: ReinterpretedTensor, spec: bool, align: bool) -> tuple[Key, object]:
    """A typed view: its base's key with the pointee replaced (GPU), or the base's bytes viewed
    as the new dtype (CPU: the interpreter reads and writes the base's memory)."""
    pointee = tl.signature_name(view.dtype)
    key, value = specialize(view.base, spec, align)
    if not (isinstance(key[0], str) and key[0][:1] == "*"):
        raise ArgumentError(f"reinterpret views arrays, not {type(view.base).__name__} values")
    if is_gpu_key(key):
        return ("*" + pointee, *key[1:]), value
    np_dtype = _numpy_of_pointee()[pointee]
    if value.nbytes % np_dtype.itemsize:
        raise ArgumentError(
            f"reinterpret: {value.nbytes} bytes are not a whole number of {view.dtype!r} elements"
        )
    return ("*" + pointee, key[1]), value.view("u1").view(np_dtype)


def _int(v: int, specialize: bool, align: bool) -> tuple[Key, int]:
    if -0x80000000 <= v <= 0x7FFFFFFF and v != 1:  # the common case first
        return ("i32", specialize and align and not v & 15), v
    for name, lo, hi in _INT_RANGES:
        if lo <= v < hi:
            break
    else:
        raise ArgumentError(f"the integer {v} doesn't fit in 64 bits; kernels take i32, i64 or u64 scalars")
    if specialize and v == 1:
        return ("constexpr", 1), v
    return (name, specialize and align and v % 16 == 0), v


def _numpy_int(v: np.integer, specialize: bool, align: bool) -> tuple[Key, int]:
    name = _pointee_of_numpy()[v.dtype]
    value = int(v)
    if specialize and value == 1:
        return ("constexpr", 1), value
    return (name, specialize and align and value % 16 == 0), value


def _float(v: float, specialize: bool, align: bool) -> tuple[Key, float]:
    return ("fp32", False), float(v)


def _numpy_float(v: np.floating, specialize: bool, align: bool) -> tuple[Key, object]:
    name = _pointee_of_numpy().get(v.dtype, "fp32")
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
    int: _int, float: _float, bool: _bool, type(None): _none, tl.constexpr: _constexpr,
    ReinterpretedTensor: _reinterpreted,
}  # fmt: skip


def _resolve(tp: type) -> Handler | None:
    """Find the handler for a type not seen before (checked once per type, then cached)."""
    if tp.__module__.split(".")[0] == "torch" and hasattr(tp, "data_ptr"):
        return _torch
    np = sys.modules.get("numpy")  # without numpy loaded, no value is a numpy one
    if np is not None:
        if issubclass(tp, np.ndarray):
            return _array
        if issubclass(tp, np.bool_):
            return _bool
        if issubclass(tp, np.integer):
            return _numpy_int
        if issubclass(tp, np.floating):
            return _numpy_float
    if issubclass(tp, bool):
        return _bool
    if issubclass(tp, int):
        return _int
    if issubclass(tp, float):
        return _float
    if hasattr(tp, "__cuda_array_interface__"):
        return _cuda_array
    if hasattr(tp, "__array_interface__"):
        return _array_interface
    if hasattr(tp, "__dlpack__") and hasattr(tp, "__dlpack_device__"):
        return _dlpack
    return None


# -- the warm path's argument classes ------------------------------------------------------
# The JIT's fast binder (runtime/jit.py) classifies each argument by `type(value)` through this
# table: torch tensors, Python ints, floats, bools and None take the fast path; anything else
# (numpy arrays, __cuda_array_interface__ objects, numpy scalars, ...) goes through `specialize`.
FAST_TENSOR, FAST_INT, FAST_FLOAT, FAST_BOOL, FAST_NONE, FAST_OTHER = range(6)
_FAST_CLASS: dict[type, int] = {int: FAST_INT, float: FAST_FLOAT, bool: FAST_BOOL, type(None): FAST_NONE}
TENSOR_TYPES: set[type] = set()  # the torch tensor classes seen so far (filled by fast_class)


def fast_class(tp: type) -> int:
    """The fast-path class of values of type `tp` (looked up once per type, then cached)."""
    cls = _FAST_CLASS.get(tp)
    if cls is None:
        cls = FAST_TENSOR if _resolve(tp) is _torch else FAST_OTHER
        _FAST_CLASS[tp] = cls
        if cls == FAST_TENSOR:
            TENSOR_TYPES.add(tp)
    return cls


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
            if hasattr(value, "__cuda_array_interface__"):  # set on the instance: not cacheable
                return _cuda_array(value, specialize, align)
            raise ArgumentError(f"values of type {tp.__module__}.{tp.__qualname__} can't be passed to a kernel")
        _HANDLERS[tp] = handler
    return handler(value, specialize, align)


def as_numpy(value) -> np.ndarray | None:
    """The numpy array (sharing memory) behind a CPU array argument; None for anything else
    (scalars, and GPU arrays, which have no numpy view)."""
    import numpy as np

    if isinstance(value, np.ndarray):
        return value
    if isinstance(value, ReinterpretedTensor):
        base = as_numpy(value.base)
        if base is None:
            return None
        typed = _numpy_of_pointee()[tl.signature_name(value.dtype)]
        return base.view(typed) if typed.itemsize == base.itemsize else _reinterpreted(value, False, False)[1]
    handler = _HANDLERS.get(type(value)) or _resolve(type(value))
    if handler is _torch:
        return _torch_to_numpy(value) if value.get_device() < 0 else None
    if handler is _array_interface:
        return np.asarray(value)
    if handler is _dlpack and value.__dlpack_device__()[0] == _DLPACK_CPU:
        return np.from_dlpack(value)
    return None


def writable_array(value):
    """An array argument as something `a[...] = x` writes into: the numpy view of a CPU array,
    the tensor itself for a torch CUDA tensor; None for scalars and other GPU arrays."""
    array = as_numpy(value)
    if array is None and (_HANDLERS.get(type(value)) or _resolve(type(value))) is _torch:
        return value
    return array


def snapshot(array):
    """A copy of an array `writable_array` returned (numpy or torch)."""
    return array.clone() if hasattr(array, "clone") else array.copy()  # torch, else numpy


def is_gpu_key(key: Key) -> bool:
    return len(key) == 4


def describe_key(key: Key) -> str:
    """How an argument's key reads in an error: 'a CPU array', 'a tensor on cuda:1'."""
    if is_gpu_key(key):
        return f"{'a torch tensor' if key[3] else 'a GPU array'} on cuda:{key[2]}"
    return "a CPU array"


def launch_device(keys, names) -> tuple[int, bool] | None:
    """Where a launch with these argument keys runs: None (CPU: the interpreter) or
    (CUDA device index, whether torch tensors were passed, so torch's stream is used).

    Raises ArgumentError naming the arguments when CPU and GPU arrays are mixed, or GPU arrays
    live on different devices.
    """
    device = torch_seen = None
    cpu_name = gpu_name = None
    for key, name in zip(keys, names):
        if len(key) == 4:
            if device is None:
                device, gpu_name = key[2], name
            elif key[2] != device:
                raise ArgumentError(
                    f"arrays on different GPUs: {gpu_name!r} is on cuda:{device} but {name!r} is on "
                    f"cuda:{key[2]}; move them to one device (x.to('cuda:{device}'))"
                )
            torch_seen = torch_seen or key[3]
        elif cpu_name is None and isinstance(key[0], str) and key[0][:1] == "*":
            cpu_name = name
    if device is None:
        return None
    if cpu_name is not None:
        raise ArgumentError(
            f"argument {cpu_name!r} is a CPU array but {gpu_name!r} is on cuda:{device}: a launch runs "
            f"either on the GPU or on the interpreter; move {cpu_name!r} to the GPU "
            f"(torch: .cuda(), numpy: torch.from_numpy(a).cuda())"
        )
    return device, bool(torch_seen)


def runtime_value(value):
    """What the backend receives for a value (no specialization): flat arrays, plain scalars."""
    return specialize(value, specialize=False, align=False)[1]


# What cuLaunchKernel accepts: a launch grid that exceeds these fails on the GPU, so every
# backend refuses it (the interpreter would otherwise run what the GPU can't).
GRID_LIMITS = (2**31 - 1, 65535, 65535)
_LIMIT_TEXT = ("2**31 - 1", "65535", "65535")


def normalize_grid(grid) -> tuple[int, int, int]:
    """A launch grid as three non-negative ints within the GPU's limits: `(n,)`, `(x, y)`,
    `(x, y, z)` or a bare int."""
    if type(grid) is tuple and len(grid) == 1 and type(grid[0]) is int and 0 <= grid[0] <= GRID_LIMITS[0]:
        return (grid[0], 1, 1)  # the common case, fast
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
    for axis, (size, limit, text) in enumerate(zip(out, GRID_LIMITS, _LIMIT_TEXT)):
        if size > limit:
            raise ArgumentError(
                f"grid {grid!r}: dimension {'xyz'[axis]} is {size}, above the GPU launch limit of {text} "
                f"programs; give each program more work (a larger BLOCK)"
                + ("" if axis == 0 else " or put the programs on the x dimension (up to 2**31 - 1)")
            )
    return out + (1,) * (3 - len(out))


__all__ = [
    "ArgumentError", "specialize", "runtime_value", "as_numpy", "normalize_grid", "flat_buffer",
    "launch_device", "is_gpu_key", "describe_key", "writable_array", "snapshot", "fast_class",
    "TENSOR_TYPES",
]  # fmt: skip
