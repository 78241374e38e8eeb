"""A thin, lazy layer over the CUDA driver (`cuda.bindings.driver`).

Nothing is imported or initialized until a GPU launch needs it. The context used is the
device's *primary* context — the same one torch (and every CUDA runtime user) uses — so memory,
streams and kernels are shared with torch. Every failing driver call raises `CudaError`, which
says which call failed, the error's name and description, and what to do about it.
"""

from __future__ import annotations

import ctypes
import struct
import functools
import threading
from dataclasses import dataclass

_drv = None
_tls = threading.local()
_lock = threading.Lock()

# Errors after which the context is poisoned: every later call in the process fails the same way.
STICKY_ERRORS = {
    "CUDA_ERROR_ILLEGAL_ADDRESS", "CUDA_ERROR_LAUNCH_FAILED", "CUDA_ERROR_MISALIGNED_ADDRESS",
    "CUDA_ERROR_ILLEGAL_INSTRUCTION", "CUDA_ERROR_HARDWARE_STACK_ERROR", "CUDA_ERROR_INVALID_PC",
    "CUDA_ERROR_INVALID_ADDRESS_SPACE", "CUDA_ERROR_ASSERT", "CUDA_ERROR_ECC_UNCORRECTABLE",
    "CUDA_ERROR_LAUNCH_TIMEOUT", "CUDA_ERROR_CONTEXT_IS_DESTROYED",
}  # fmt: skip

_RESTART = (
    "The CUDA context is lost: every later GPU call in this process fails. CPU work still runs "
    "(kernels on numpy arrays or CPU tensors run on the interpreter; kl.compile works); for the "
    "GPU, restart the process (in Jupyter: restart the kernel)."
)

ADVICE = {
    "CUDA_ERROR_ILLEGAL_ADDRESS": _RESTART + " A kernel read or wrote memory outside its "
    "buffers: check the masks of tl.load/tl.store; rerun the launch on CPU copies of the "
    "arrays (x.cpu(): the interpreter), which names the offending line and program.",
    "CUDA_ERROR_MISALIGNED_ADDRESS": _RESTART + " A kernel accessed memory at an address not "
    "aligned for the access width (e.g. a pointer offset that breaks 16-byte vector alignment).",
    "CUDA_ERROR_ASSERT": _RESTART + " A tl.device_assert failed on the GPU.",
    "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES": "The kernel needs more registers or shared memory per "
    "block than the GPU has for this launch: reduce num_warps or the BLOCK sizes.",
    "CUDA_ERROR_INVALID_VALUE": "A launch parameter is out of range (grid larger than the device "
    "allows, too many threads per block, or too much shared memory).",
    "CUDA_ERROR_NO_BINARY_FOR_GPU": "The cubin was compiled for a different GPU architecture; "
    "compile with target='cuda' to use the visible GPU's.",
    "CUDA_ERROR_INVALID_IMAGE": "The driver could not load the cubin; it may be for a different "
    "GPU architecture (compile with target='cuda') or corrupted (clear KERNELLAB_CACHE_DIR).",
    "CUDA_ERROR_NO_DEVICE": "No CUDA GPU is visible (check CUDA_VISIBLE_DEVICES and nvidia-smi).",
    "CUDA_ERROR_INSUFFICIENT_DRIVER": "The NVIDIA driver is older than this CUDA version needs; "
    "update the driver.",
    "CUDA_ERROR_OUT_OF_MEMORY": "The GPU is out of memory; free tensors or use smaller inputs.",
    "CUDA_ERROR_INVALID_CONTEXT": "No CUDA context is current on this thread.",
    "CUDA_ERROR_INVALID_HANDLE": "A stale handle (module, function or stream) was used; streams "
    "must belong to the device the kernel runs on.",
}
for _name in STICKY_ERRORS:
    ADVICE.setdefault(_name, _RESTART)
    ADVICE[_name] += (
        " A fault is reported by the next CUDA call, which may come after the launch that "
        "faulted: launch with debug=True (@kl.jit(debug=True)) to synchronize after every launch "
        "and name the kernel that faults."
    )


class CudaError(RuntimeError):
    """A CUDA driver call failed. `.call`, `.code`, `.name` say which and how; `.sticky` is True
    when the context is now unusable (restart the process)."""

    def __init__(self, call: str, code: int, name: str, description: str = "", advice: str = ""):
        self.call, self.code, self.name, self.description = call, int(code), name, description
        self.sticky = name in STICKY_ERRORS
        message = f"{call} failed: {name} ({int(code)})"
        if description:
            message += f": {description}"
        if advice:
            message += f". {advice}"
        super().__init__(message)


class NoDriverError(RuntimeError):
    """No usable NVIDIA driver / GPU on this machine."""


def _driver():
    global _drv
    if _drv is None:
        from cuda.bindings import driver

        _drv = driver
    return _drv


def error(call: str, err) -> CudaError:
    """The CudaError for driver result `err` returned by `call`."""
    drv = _driver()
    code = int(err)
    try:
        name = drv.CUresult(code).name
    except ValueError:
        name = f"CUDA error {code}"
    description = ""
    try:
        e, s = drv.cuGetErrorString(drv.CUresult(code))
        if not e and s:
            description = s.decode() if isinstance(s, bytes) else str(s)
    except Exception:
        pass
    advice = ADVICE.get(name, "")
    global _lost
    if name in STICKY_ERRORS:
        if _lost is None:
            _lost = f"{name} reported by {call}"
        else:
            advice = f"(It was lost earlier: {_lost}.) " + advice
    return CudaError(call, code, name, description, advice)


_lost: str | None = None  # the first error that poisoned the CUDA context


def context_lost() -> str | None:
    """What made the CUDA context unusable (None while it works): GPU faults are sticky."""
    return _lost


def call(name: str, *args):
    """drv.<name>(*args), raising CudaError on failure; returns the result value(s)."""
    out = getattr(_driver(), name)(*args)
    err = out[0]
    if err:
        raise error(name, err)
    if len(out) == 1:
        return None
    return out[1] if len(out) == 2 else out[1:]


@functools.cache
def available() -> bool:
    """True when a driver loads and reports at least one GPU. Never raises."""
    try:
        drv = _driver()
        (err,) = drv.cuInit(0)
        if err:
            return False
        err, count = drv.cuDeviceGetCount()
        return not err and count > 0
    except Exception:
        return False


def init() -> None:
    """cuInit, with a clear NoDriverError when there is no driver or GPU."""
    if getattr(_tls, "initialized", False):
        return
    try:
        drv = _driver()
        (err,) = drv.cuInit(0)
    except Exception as e:
        raise NoDriverError(
            f"can't launch on a GPU: the NVIDIA driver could not be loaded ({e}). Run on numpy "
            "arrays (the interpreter) or on a machine with an NVIDIA GPU."
        ) from None
    if err:
        raise error("cuInit", err)
    _tls.initialized = True


@dataclass(frozen=True)
class DeviceInfo:
    index: int
    name: str
    capability: tuple[int, int]
    sm_count: int
    max_threads_per_block: int
    max_shared_per_block: int  # without opt-in (48 KB)
    max_shared_per_block_optin: int  # what a kernel may get after raising its limit
    shared_per_sm: int
    registers_per_sm: int
    registers_per_block: int
    max_grid: tuple[int, int, int]

    @property
    def arch(self) -> str:
        """The target kernels for this GPU compile for: sm_90a on Hopper (its wgmma is
        arch-specific: such a cubin runs on compute capability 9.0 only), else sm_XY."""
        suffix = "a" if self.capability == (9, 0) else ""
        return f"sm_{self.capability[0]}{self.capability[1]}{suffix}"


@functools.cache
def device_info(index: int = 0) -> DeviceInfo:
    init()
    drv = _driver()
    dev = call("cuDeviceGet", index)
    a = drv.CUdevice_attribute

    def attr(name):
        return int(call("cuDeviceGetAttribute", getattr(a, name), dev))

    raw = call("cuDeviceGetName", 256, dev)
    name = raw.split(b"\0", 1)[0].decode() if isinstance(raw, (bytes, bytearray)) else str(raw)
    return DeviceInfo(
        index=index,
        name=name,
        capability=(attr("CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR"),
                    attr("CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR")),
        sm_count=attr("CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT"),
        max_threads_per_block=attr("CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK"),
        max_shared_per_block=attr("CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK"),
        max_shared_per_block_optin=attr("CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN"),
        shared_per_sm=attr("CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR"),
        registers_per_sm=attr("CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR"),
        registers_per_block=attr("CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK"),
        max_grid=(attr("CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X"), attr("CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y"),
                  attr("CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z")),
    )  # fmt: skip


_primary: dict[int, object] = {}


def primary_context(index: int = 0):
    """The device's primary context (retained once per process; shared with torch)."""
    ctx = _primary.get(index)
    if ctx is None:
        init()
        with _lock:
            ctx = _primary.get(index)
            if ctx is None:
                dev = call("cuDeviceGet", index)
                ctx = call("cuDevicePrimaryCtxRetain", dev)
                _primary[index] = ctx
    return ctx


@functools.cache
def device_count() -> int:
    init()
    return int(call("cuDeviceGetCount"))


def make_current(index: int = 0, force: bool = False) -> None:
    """Make device `index`'s primary context current on this thread.

    With one GPU this is a thread-local check after the first call. With several, torch (or
    anyone) may switch the thread's context between our launches, so it is set every time.
    `force` sets it regardless (after a launch found no context current).
    """
    if not force and getattr(_tls, "current", None) == index and device_count() == 1:
        return
    ctx = primary_context(index)
    call("cuCtxSetCurrent", ctx)
    _tls.current = index


def current_device_index() -> int:
    """The device whose context is current on this thread (0 if none yet)."""
    return getattr(_tls, "current", None) or 0


_raw_launch: tuple = (None, None)  # (driver module it came from, ctypes function or None)

# CUlaunchConfig (cuda.h): gridDim x/y/z, blockDim x/y/z, sharedMemBytes (7 unsigned ints),
# padding, hStream, attrs, numAttrs; 56 bytes, padded here to 64 so kernel parameters can follow.
LAUNCH_CONFIG_FORMAT = "=7I4xQQI12x"
LAUNCH_CONFIG_BYTES = 64


# CUlaunchAttribute (cuda.h): a 4-byte id, padding to 8, a 64-byte value union; the ids of the
# attributes the launch options set (their value is an int: 1 = on).
LAUNCH_ATTRIBUTE_BYTES = 72
LAUNCH_ATTRIBUTE_COOPERATIVE = 2
LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION = 6


def launch_attributes(ids: list[int]) -> tuple[object, int, int]:
    """(buffer, its address, count) of CUlaunchAttributes switching each of `ids` on, for the
    `attrs` and `numAttrs` of a CUlaunchConfig; (None, 0, 0) for none."""
    if not ids:
        return None, 0, 0
    buffer = ctypes.create_string_buffer(LAUNCH_ATTRIBUTE_BYTES * len(ids))
    for i, attribute in enumerate(ids):
        struct.pack_into("=I4xi", buffer, LAUNCH_ATTRIBUTE_BYTES * i, attribute, 1)
    return buffer, ctypes.addressof(buffer), len(ids)


def raw_launch_function():
    """`cuLaunchKernelEx(config, function, kernelParams, extra)` as a ctypes function taking
    pointers (`ctypes.c_void_p` or None) and returning the CUresult as an int; None when the
    driver can't provide it (then use the binding `_driver().cuLaunchKernel`).

    The warm launch path uses it with every argument prepared in advance: the launch
    configuration (LAUNCH_CONFIG_FORMAT) and the kernel parameters are packed into one buffer,
    so a launch is one `struct.pack_into` and this call, with no per-call argument conversion.
    The GIL is released during the call, as the binding does.
    """
    global _raw_launch
    drv = _driver()
    if _raw_launch[0] is not drv:
        fn = None
        try:
            flags = drv.CUdriverProcAddress_flags.CU_GET_PROC_ADDRESS_DEFAULT
            err, pfn, _status = drv.cuGetProcAddress(b"cuLaunchKernelEx", 12000, flags)
            if not err and int(pfn):
                fn = ctypes.CFUNCTYPE(ctypes.c_int)(int(pfn))
        except Exception:  # an old driver or binding, a stand-in driver, ...
            fn = None
        _raw_launch = (drv, fn)
    return _raw_launch[1]


def load_module(cubin: bytes, index: int = 0):
    """cuModuleLoadData of `cubin` into device `index`'s primary context."""
    make_current(index)
    buf = ctypes.create_string_buffer(bytes(cubin), len(cubin))
    return call("cuModuleLoadData", ctypes.addressof(buf))


def get_function(module, name: str):
    return call("cuModuleGetFunction", module, name.encode())


def function_attribute(function, name: str) -> int:
    a = getattr(_driver().CUfunction_attribute, name)
    return int(call("cuFuncGetAttribute", a, function))


def set_function_attribute(function, name: str, value: int) -> None:
    a = getattr(_driver().CUfunction_attribute, name)
    call("cuFuncSetAttribute", function, a, int(value))


def max_active_blocks(function, threads: int, dynamic_shared: int) -> int:
    """Occupancy: resident blocks per SM for this function and launch shape."""
    return int(call("cuOccupancyMaxActiveBlocksPerMultiprocessor", function, threads, dynamic_shared))


def synchronize() -> None:
    call("cuCtxSynchronize")


def visible_arch() -> str | None:
    """'sm_XY' of device 0, or None when there is no GPU."""
    if not available():
        return None
    return device_info(0).arch


__all__ = [
    "CudaError", "NoDriverError", "available", "init", "device_info", "DeviceInfo", "device_count",
    "primary_context", "make_current", "load_module", "get_function", "function_attribute",
    "set_function_attribute", "max_active_blocks", "synchronize", "visible_arch", "call", "error",
    "raw_launch_function", "context_lost",
]  # fmt: skip


def encode_tensor_map(data_type: str, base: int, shape, strides, nbytes: int, box, swizzle: int,
                      nan_fill: bool) -> bytes:  # fmt: skip
    """The 128 bytes of a CUtensorMap (cuTensorMapEncodeTiled) for a row-major tiled copy:
    `shape`, `strides` (elements) and `box` outermost dim first, as the kernel sees them; the
    driver takes them innermost first, strides in bytes without the innermost one."""
    drv = _driver()
    rank = len(shape)
    swizzles = {0: "NONE", 32: "32B", 64: "64B", 128: "128B"}
    fill = "NAN_REQUEST_ZERO_FMA" if nan_fill else "NONE"
    tensor_map = call(
        "cuTensorMapEncodeTiled",
        getattr(drv.CUtensorMapDataType, f"CU_TENSOR_MAP_DATA_TYPE_{data_type}"),
        rank,
        base,
        [drv.cuuint64_t(s) for s in reversed(shape)],
        [drv.cuuint64_t(s * nbytes) for s in reversed(strides[:-1])],
        [drv.cuuint32_t(b) for b in reversed(box)],
        [drv.cuuint32_t(1)] * rank,
        drv.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE,
        getattr(drv.CUtensorMapSwizzle, f"CU_TENSOR_MAP_SWIZZLE_{swizzles[swizzle]}"),
        drv.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
        getattr(drv.CUtensorMapFloatOOBfill, f"CU_TENSOR_MAP_FLOAT_OOB_FILL_{fill}"),
    )
    return b"".join(int(word).to_bytes(8, "little") for word in tensor_map.opaque)
