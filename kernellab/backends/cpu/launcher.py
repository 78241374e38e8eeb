"""Run a CPU-compiled kernel: load its object code into llvmlite's MCJIT once, then call its
grid loop (lowering/grid.py) over ranges of program ids from a thread pool.

ctypes releases the GIL around the call, so the ranges run on all cores at once. Each worker
call gets its own scratch buffer (the program's shared memory); all share one status record
(lowering/checks.py) that a failed device assertion or, under `debug=True`, an out-of-bounds
access writes, and that the launch turns into an exception naming the line and the program.
How many threads: `set_num_threads(n)`, or the environment variable KERNELLAB_CPU_THREADS
(default: every core).
"""

from __future__ import annotations

import ctypes
import os
import struct
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from kernellab.backends.cpu.errors import CpuAssertionError, CpuOutOfBoundsError
from kernellab.backends.cpu.lowering.checks import (
    FAILED_ASSERT, SLOT_ADDRESS, SLOT_MESSAGE, SLOT_PID, SLOT_RANGES,
)  # fmt: skip
from kernellab.backends.cpu.lowering.grid import SLOT_BYTES, grid_function_name
from kernellab.backends.toolchain import binding, llvm_lock

_GRID_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int32,
                            ctypes.c_int32, ctypes.c_int32, ctypes.c_int64, ctypes.c_int64)  # fmt: skip

# Below this many programs per extra thread a launch runs on the calling thread alone: handing
# work to the pool costs tens of microseconds.
_MIN_PROGRAMS_PER_THREAD = 2
_CHUNKS_PER_THREAD = 4

_threads = None
_pool: ThreadPoolExecutor | None = None


def num_threads() -> int:
    """How many threads a launch uses (set_num_threads, else KERNELLAB_CPU_THREADS, else every core)."""
    if _threads is not None:
        return _threads
    env = os.environ.get("KERNELLAB_CPU_THREADS")
    if env:
        try:
            n = int(env)
        except ValueError:
            raise ValueError(f"KERNELLAB_CPU_THREADS must be a positive integer, got {env!r}") from None
        if n < 1:
            raise ValueError(f"KERNELLAB_CPU_THREADS must be a positive integer, got {env!r}")
        return n
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def set_num_threads(n: int | None) -> None:
    """Run CPU launches on `n` threads (None: back to the default)."""
    global _threads
    if n is not None and (not isinstance(n, int) or n < 1):
        raise ValueError(f"the number of threads must be a positive int, got {n!r}")
    _threads = n


def _pool_for(n: int) -> ThreadPoolExecutor:
    global _pool
    if _pool is None or _pool._max_workers < n:
        old, _pool = _pool, ThreadPoolExecutor(max_workers=n, thread_name_prefix="kernellab-cpu")
        if old is not None:
            old.shutdown(wait=False)
    return _pool


_runtime_loaded = False


def _load_runtime(llvm) -> None:
    """Make the compiler runtime's soft-float helpers (f64 → f16 is a libgcc call on x86)
    visible to MCJIT, once; libc and libm are in the process already."""
    global _runtime_loaded
    if not _runtime_loaded:
        import ctypes.util

        path = ctypes.util.find_library("gcc_s")
        if path:
            llvm.load_library_permanently(path)
        _runtime_loaded = True


def _load(obj: bytes, name: str):
    """(engine, grid function) for object code `obj`: MCJIT links it against this process
    (libc's printf, libm, libgcc)."""
    llvm = binding()
    from kernellab.backends.cpu.host import new_host_machine

    with llvm_lock:
        _load_runtime(llvm)
        engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), new_host_machine())
        engine.add_object_file(llvm.ObjectFileRef.from_data(obj))
        engine.finalize_object()
        address = engine.get_function_address(grid_function_name(name))
    if not address:
        raise RuntimeError(f"the object code has no {grid_function_name(name)} function")
    return engine, _GRID_FN(address)


# signature spelling → struct format of a scalar argument in its 8-byte slot
_SCALAR_FORMAT = {"i1": "B", "i8": "B", "u8": "B", "i16": "H", "u16": "H", "i32": "I", "u32": "I",
                  "i64": "Q", "u64": "Q", "fp16": "e", "fp32": "f", "fp64": "d"}  # fmt: skip


class CpuLauncher:
    def __init__(self, artifact):
        md = artifact.metadata
        self.name = artifact.name
        self.shared = int(md["shared"] or 0)
        options = getattr(md, "options", None)
        self.debug = bool(getattr(options, "debug", False))
        signature = getattr(md, "signature", None)
        self.arg_names = list(signature or [])
        self.spellings = signature.spellings() if signature is not None else []
        self._engine, self._fn = _load(artifact.obj, artifact.name)

    def _pack(self, args) -> tuple[np.ndarray, list[np.ndarray], list[tuple[int, int]]]:
        if len(args) != len(self.spellings):
            raise TypeError(f"kernel '{self.name}' takes {len(self.spellings)} arguments "
                            f"({', '.join(self.arg_names)}), got {len(args)}")  # fmt: skip
        slots = np.zeros(max(1, len(args)), np.uint64)
        raw = slots.view(np.uint8)
        keep, ranges = [], []
        for i, (value, spelling) in enumerate(zip(args, self.spellings)):
            if spelling.startswith("*"):
                array = value if isinstance(value, np.ndarray) else np.asarray(value)
                if not array.flags.writeable and not array.flags.c_contiguous:
                    array = np.ascontiguousarray(array)
                address = array.__array_interface__["data"][0]
                keep.append(array)
                ranges.append((address, address + array.nbytes))
                struct.pack_into("Q", raw, i * SLOT_BYTES, address)
            else:
                fmt, bits = _scalar(self.arg_names[i], spelling, value)
                struct.pack_into(fmt, raw, i * SLOT_BYTES, bits)
        return slots, keep, ranges

    def run(self, args, grid, trace=None) -> None:
        if trace is not None:
            raise ValueError("access traces are the interpreter's; run the kernel without target='cpu' to trace it")
        slots, keep, ranges = self._pack(args)
        gx, gy, gz = (tuple(int(g) for g in grid) + (1, 1))[:3]
        total = gx * gy * gz
        status = np.zeros(SLOT_RANGES + 1 + 2 * len(ranges), np.int64)
        status[SLOT_RANGES] = len(ranges)
        for k, (lo, hi) in enumerate(ranges):
            status[SLOT_RANGES + 1 + 2 * k : SLOT_RANGES + 3 + 2 * k] = (lo, hi)
        args_ptr, status_ptr = slots.ctypes.data, status.ctypes.data
        shared = max(16, self.shared)

        def run_range(first: int, end: int) -> None:
            scratch = np.empty(shared, np.uint8)
            self._fn(args_ptr, scratch.ctypes.data, status_ptr, gx, gy, gz, first, end)

        workers = min(num_threads(), total // _MIN_PROGRAMS_PER_THREAD)
        if workers <= 1:
            run_range(0, total)
        else:
            pieces = min(total, workers * _CHUNKS_PER_THREAD)
            bounds = [total * k // pieces for k in range(pieces + 1)]
            futures = [_pool_for(workers).submit(run_range, a, b) for a, b in zip(bounds, bounds[1:])]
            for f in futures:
                f.result()
        del keep
        if status[0]:
            raise _failure(status)


def _scalar(name: str, spelling: str, value) -> tuple[str, object]:
    if isinstance(value, np.generic):
        value = value.item()
    if not isinstance(value, int | float | bool):
        raise TypeError(f"argument '{name}' must be a number (it is {spelling}), got {type(value).__name__}")
    if spelling == "bf16":
        import ml_dtypes

        return "H", int(np.array(value, ml_dtypes.bfloat16).view(np.uint16))
    fmt = _SCALAR_FORMAT.get(spelling)
    if fmt is None:
        raise TypeError(f"argument '{name}': {spelling} scalars can't be passed to a CPU kernel")
    if fmt in "efd":
        return fmt, float(value)
    bits = struct.calcsize(fmt) * 8
    return fmt, int(value) & ((1 << bits) - 1)


def _failure(status: np.ndarray) -> Exception:
    message = ctypes.string_at(int(status[SLOT_MESSAGE])).decode(errors="replace")
    program = "program ({}, {}, {})".format(*(int(p) for p in status[SLOT_PID : SLOT_PID + 3]))
    if status[0] == FAILED_ASSERT:
        return CpuAssertionError(f"{message} in {program}")
    return CpuOutOfBoundsError(
        f"{message} at address {int(status[SLOT_ADDRESS]) & (2**64 - 1):#x}, outside every argument's "
        f"buffer, in {program}; mask the access or fix the offsets"
    )


__all__ = ["CpuLauncher", "num_threads", "set_num_threads"]
