"""PTX text → cubin bytes with nvJitLink (the `nvidia-nvjitlink` wheel: no GPU, no driver needed).

nvJitLink runs ptxas in-process; its verbose info log is the resource report — registers per
thread, spill stores/loads, stack frame (local memory), static shared memory, barriers — which
`parse_resources` turns into metadata. When PTX does not assemble, `PTXAssemblyError` carries
the log and shows the offending PTX line.

The wheel's library is called through ctypes (`_NvJitLink`: found on sys.path as nvdisasm is,
loaded in a few milliseconds); without the wheel, the `cuda.bindings.nvjitlink` module (which
finds the library through cuda.pathfinder, some tens of milliseconds more on a first compile).
If neither loads, cuda.core's Linker is tried (it falls back to the driver's linker when a
driver exists).
"""

from __future__ import annotations

import ctypes
import glob
import os
import re
import sys
import threading
from dataclasses import dataclass, field

from kernellab.backends.nvidia.interruptible import run_interruptibly
from kernellab.backends.nvidia.ptx import parse_arch
from kernellab.backends.toolchain import held_across_fork
from kernellab.passes.manager import PassOutcome

# registers per SM and per-thread allocation granularity of sm_80 and sm_90 (both the same)
REGISTERS_PER_SM = 65536
MAX_THREADS_PER_BLOCK = 1024
_REG_ALLOC_UNIT = 256  # registers are allocated per warp in units of 256


class PTXAssemblyError(RuntimeError):
    """ptxas (through nvJitLink) rejected the PTX. `.log` is the full log, `.line` the PTX line."""

    def __init__(self, message: str, log: str = "", line: int | None = None, ptx: str = ""):
        super().__init__(message)
        self.log = log
        self.line = line
        self.ptx = ptx


class ToolchainUnavailableError(RuntimeError):
    """No way to turn PTX into a cubin on this machine."""


_nvjitlink = None
_nvjitlink_error: str | None = None
_lock = held_across_fork(threading.Lock())  # around nvJitLink's calls (ptxas, its warm-up)


def _load_nvjitlink():
    """nvJitLink (`_NvJitLink` over the wheel's library, else cuda.bindings.nvjitlink) if its
    shared library loads, else None (reason kept)."""
    global _nvjitlink, _nvjitlink_error
    if _nvjitlink is None and _nvjitlink_error is None:
        with _load_lock:
            if _nvjitlink is None and _nvjitlink_error is None:
                try:
                    path = _wheel_library()
                    if path is not None:
                        _nvjitlink = _NvJitLink(path)
                    else:
                        from cuda.bindings import nvjitlink

                        nvjitlink.version()  # loads libnvJitLink; raises if it isn't installed
                        _nvjitlink = nvjitlink
                except Exception as e:  # ImportError, OSError, DynamicLibNotFoundError, ...
                    _nvjitlink_error = f"{type(e).__name__}: {e}"
    return _nvjitlink


def _wheel_library() -> str | None:
    """Path of the nvidia-nvjitlink wheel's libnvJitLink on sys.path (Linux), else None."""
    if not sys.platform.startswith("linux"):
        return None
    for base in sys.path:
        if base and os.path.isdir(base):
            for pattern in ("cu13/lib/libnvJitLink.so.13", "nvjitlink/lib/libnvJitLink.so.13"):
                found = glob.glob(os.path.join(base, "nvidia", pattern))
                if found:
                    return found[0]
    return None


class _NvJitLinkError(RuntimeError):
    """An nvJitLink call failed; the message is the result's name and code, as cuda.bindings'."""


# nvJitLinkResult (nvJitLink.h), by code
_RESULTS = (
    "SUCCESS", "ERROR_UNRECOGNIZED_OPTION", "ERROR_MISSING_ARCH", "ERROR_INVALID_INPUT",
    "ERROR_PTX_COMPILE", "ERROR_NVVM_COMPILE", "ERROR_INTERNAL", "ERROR_THREADPOOL",
    "ERROR_UNRECOGNIZED_INPUT", "ERROR_FINALIZE", "ERROR_NULL_INPUT", "ERROR_INCOMPATIBLE_OPTIONS",
    "ERROR_INCORRECT_INPUT_TYPE", "ERROR_ARCH_MISMATCH", "ERROR_OUTDATED_LIBRARY",
    "ERROR_MISSING_FATBIN", "ERROR_UNRECOGNIZED_ARCH", "ERROR_UNSUPPORTED_ARCH", "ERROR_LTO_NOT_ENABLED",
)  # fmt: skip


class _NvJitLink:
    """The calls kernellab makes to nvJitLink's C API, through ctypes (each releases the GIL),
    with the names and conventions of cuda.bindings.nvjitlink, so either serves the linker."""

    nvJitLinkError = _NvJitLinkError

    class InputType:
        PTX = 2  # NVJITLINK_INPUT_PTX

    def __init__(self, path: str):
        lib = self.lib = ctypes.CDLL(path)
        handle, size_p, text = ctypes.c_void_p, ctypes.POINTER(ctypes.c_size_t), ctypes.c_char_p
        signatures = {
            "nvJitLinkCreate": [ctypes.POINTER(handle), ctypes.c_uint32, ctypes.POINTER(text)],
            "nvJitLinkDestroy": [ctypes.POINTER(handle)],
            "nvJitLinkAddData": [handle, ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t, text],
            "nvJitLinkComplete": [handle],
            "nvJitLinkGetLinkedCubinSize": [handle, size_p],
            "nvJitLinkGetLinkedCubin": [handle, ctypes.c_void_p],
            "nvJitLinkGetErrorLogSize": [handle, size_p],
            "nvJitLinkGetErrorLog": [handle, ctypes.c_void_p],
            "nvJitLinkGetInfoLogSize": [handle, size_p],
            "nvJitLinkGetInfoLog": [handle, ctypes.c_void_p],
            "nvJitLinkVersion": [ctypes.POINTER(ctypes.c_uint), ctypes.POINTER(ctypes.c_uint)],
        }
        for name, argtypes in signatures.items():
            fn = getattr(lib, name)
            fn.argtypes, fn.restype = argtypes, ctypes.c_int
        self._version = self._call_version()

    @staticmethod
    def _check(result: int) -> None:
        if result:
            name = _RESULTS[result] if result < len(_RESULTS) else "ERROR_UNKNOWN"
            raise _NvJitLinkError(f"{name} ({result})")

    def _call_version(self) -> tuple[int, int]:
        major, minor = ctypes.c_uint(), ctypes.c_uint()
        self._check(self.lib.nvJitLinkVersion(ctypes.byref(major), ctypes.byref(minor)))
        return major.value, minor.value

    def version(self) -> tuple[int, int]:
        return self._version

    def create(self, count: int, options: list[str]) -> int:
        handle = ctypes.c_void_p()
        array = (ctypes.c_char_p * max(count, 1))(*[o.encode() for o in options])
        self._check(self.lib.nvJitLinkCreate(ctypes.byref(handle), count, array))
        return handle.value

    def destroy(self, handle: int) -> None:
        self._check(self.lib.nvJitLinkDestroy(ctypes.byref(ctypes.c_void_p(handle))))

    def add_data(self, handle: int, input_type: int, data: bytes, size: int, name: str) -> None:
        self._check(self.lib.nvJitLinkAddData(handle, input_type, data, size, name.encode()))

    def complete(self, handle: int) -> None:
        self._check(self.lib.nvJitLinkComplete(handle))

    def _size(self, getter, handle: int) -> int:
        size = ctypes.c_size_t()
        self._check(getter(handle, ctypes.byref(size)))
        return size.value

    def _fill(self, getter, handle: int, buffer: bytearray) -> None:
        self._check(getter(handle, (ctypes.c_char * len(buffer)).from_buffer(buffer)))

    def get_linked_cubin_size(self, handle: int) -> int:
        return self._size(self.lib.nvJitLinkGetLinkedCubinSize, handle)

    def get_linked_cubin(self, handle: int, buffer: bytearray) -> None:
        self._fill(self.lib.nvJitLinkGetLinkedCubin, handle, buffer)

    def get_error_log_size(self, handle: int) -> int:
        return self._size(self.lib.nvJitLinkGetErrorLogSize, handle)

    def get_error_log(self, handle: int, buffer: bytearray) -> None:
        self._fill(self.lib.nvJitLinkGetErrorLog, handle, buffer)

    def get_info_log_size(self, handle: int) -> int:
        return self._size(self.lib.nvJitLinkGetInfoLogSize, handle)

    def get_info_log(self, handle: int, buffer: bytearray) -> None:
        self._fill(self.lib.nvJitLinkGetInfoLog, handle, buffer)


_load_lock = threading.Lock()
_warming: threading.Thread | None = None


def start_warm_up(arch: str = "sm_90") -> None:
    """Let nvJitLink initialize in the background, ahead of the first link.

    Its first handle in a process costs up to a few hundred milliseconds (on a machine with a
    GPU it initializes CUDA). The library is loaded here, on the calling thread; then a
    background thread creates and destroys one handle through ctypes, which releases the GIL,
    so the initialization overlaps the frontend and the IR stages. `make_cubin` waits for it
    (the link lock). Does nothing if nvJitLink is unavailable (make_cubin reports that).
    """
    global _warming
    nj = _load_nvjitlink()
    if _warming is not None or nj is None:
        return
    functions = (nj.lib.nvJitLinkCreate, nj.lib.nvJitLinkDestroy) if isinstance(nj, _NvJitLink) else _create_and_destroy()
    if functions is None:
        return
    _warming = threading.Thread(target=_warm, args=(*functions, arch), name="kernellab-nvjitlink", daemon=True)
    _warming.start()


def _create_and_destroy():
    """nvJitLinkCreate and nvJitLinkDestroy of the library cuda.bindings loaded, as ctypes
    functions (calling them releases the GIL); None if they can't be found."""
    try:
        from cuda import pathfinder

        lib = ctypes.CDLL(pathfinder.load_nvidia_dynamic_lib("nvJitLink").abs_path)
        create, destroy = lib.nvJitLinkCreate, lib.nvJitLinkDestroy
        handle_p = ctypes.POINTER(ctypes.c_void_p)
        create.restype = destroy.restype = ctypes.c_int
        create.argtypes = [handle_p, ctypes.c_uint32, ctypes.POINTER(ctypes.c_char_p)]
        destroy.argtypes = [handle_p]
        return create, destroy
    except Exception:
        return None


def _warm(create, destroy, arch: str) -> None:
    try:
        with _lock:
            handle = ctypes.c_void_p()
            options = (ctypes.c_char_p * 1)(f"-arch={arch}".encode())
            if create(ctypes.byref(handle), 1, options) == 0:
                destroy(ctypes.byref(handle))
    except Exception:  # only a warm-up: the real link reports problems
        pass


def nvjitlink_version() -> tuple[int, int] | None:
    nj = _load_nvjitlink()
    return tuple(nj.version()) if nj is not None else None


def link_options(arch: str, ptx: str, maxnreg: int | None = None) -> list[str]:
    opts = [f"-arch={arch}", "-verbose"]
    if ".loc" in ptx:
        opts.append("-lineinfo")
    if maxnreg:
        opts.append(f"-maxrregcount={int(maxnreg)}")
    return opts


def _log(nj, handle, which: str) -> str:
    size = getattr(nj, f"get_{which}_log_size")(handle)
    if not size:
        return ""
    buf = bytearray(size)
    getattr(nj, f"get_{which}_log")(handle, buf)
    return buf.rstrip(b"\0").decode(errors="replace")


def _link_nvjitlink(nj, ptx: bytes, options: list[str]) -> tuple[bytes, str]:
    handle = nj.create(len(options), options)
    try:
        try:
            nj.add_data(handle, nj.InputType.PTX, ptx, len(ptx), "kernel.ptx")
            nj.complete(handle)
        except nj.nvJitLinkError as e:
            log = "\n".join(filter(None, [_log(nj, handle, "error"), _log(nj, handle, "info")]))
            raise _assembly_error(str(e), log, ptx.decode(errors="replace")) from None
        size = nj.get_linked_cubin_size(handle)
        cubin = bytearray(size)
        nj.get_linked_cubin(handle, cubin)
        return bytes(cubin), _log(nj, handle, "info")
    finally:
        nj.destroy(handle)


def _link_cuda_core(ptx: bytes, arch: str, maxnreg: int | None) -> tuple[bytes, str]:
    try:
        from cuda.core import Linker, LinkerOptions, ObjectCode
    except ImportError as e:
        raise ToolchainUnavailableError(
            f"can't make a cubin: nvJitLink is not available ({_nvjitlink_error}) and neither is "
            f"cuda.core ({e}); install it with `pip install nvidia-nvjitlink`"
        ) from None
    kwargs = {"arch": arch, "verbose": True}
    if maxnreg:
        kwargs["max_register_count"] = int(maxnreg)
    linker = Linker(ObjectCode.from_ptx(ptx), options=LinkerOptions(**kwargs))
    try:
        out = linker.link("cubin")
    except Exception as e:
        try:
            log = linker.get_error_log() + "\n" + linker.get_info_log()
        except Exception:
            log = str(e)
        raise _assembly_error(str(e), log, ptx.decode(errors="replace")) from None
    return bytes(out.code), linker.get_info_log()


def _assembly_error(what: str, log: str, ptx: str) -> PTXAssemblyError:
    m = re.search(r"ptx input, line (\d+)", log) or re.search(r"line (\d+)", log)
    line = int(m.group(1)) if m else None
    shown = ""
    if line is not None:
        lines = ptx.splitlines()
        lo, hi = max(1, line - 2), min(len(lines), line + 2)
        shown = "\n".join(
            f"{'>' if n == line else ' '} {n:5d} | {lines[n - 1]}" for n in range(lo, hi + 1)
        )
    errors = [ln for ln in log.splitlines() if "error" in ln.lower()] or log.splitlines()[:5]
    message = "ptxas rejected the PTX (" + what.strip() + "):\n" + "\n".join(errors)
    if shown:
        message += f"\nat PTX line {line}:\n{shown}"
    return PTXAssemblyError(message, log=log, line=line, ptx=ptx)


_NUM = r"(\d+)"
_PATTERNS = {
    "registers": re.compile(r"[Uu]sed " + _NUM + r" registers"),
    "barriers": re.compile(r"used " + _NUM + r" barriers"),
    "stack_bytes": re.compile(_NUM + r" bytes stack frame"),
    "spill_stores": re.compile(_NUM + r" bytes spill stores"),
    "spill_loads": re.compile(_NUM + r" bytes spill loads"),
    "static_shared": re.compile(_NUM + r" bytes smem"),
    "local_bytes": re.compile(_NUM + r" bytes lmem"),
    "constant_bytes": re.compile(_NUM + r" bytes cmem\[0\]"),
}


def max_threads_for_registers(registers: int) -> int:
    """Most threads one block can have with `registers` per thread on sm_80/sm_90."""
    if registers <= 0:
        return MAX_THREADS_PER_BLOCK
    per_warp = -(-registers * 32 // _REG_ALLOC_UNIT) * _REG_ALLOC_UNIT
    return min(MAX_THREADS_PER_BLOCK, (REGISTERS_PER_SM // per_warp) * 32)


def parse_resources(log: str, name: str | None = None) -> dict:
    """Resource usage of kernel `name` (or the first kernel) from nvJitLink's verbose info log.

    Keys: registers, barriers, stack_bytes, spill_stores, spill_loads, static_shared,
    local_bytes, constant_bytes (0 when the log doesn't say) and max_threads (the most threads
    per block the register count allows).
    """
    text = log
    if name is not None:  # keep only this kernel's section ("... for 'name'" up to the next one)
        start = [m.start() for m in re.finditer(r"(?:entry function|properties for) '?" + re.escape(name) + r"'?", log)]
        if start:
            text = log[start[0]:]
            nxt = re.search(r"Compiling entry function '(?!" + re.escape(name) + r"')", text[1:])
            if nxt:
                text = text[: nxt.start() + 1]
    res = {}
    for key, pattern in _PATTERNS.items():
        values = [int(v) for v in pattern.findall(text)]
        res[key] = max(values) if values else 0
    res["max_threads"] = max_threads_for_registers(res["registers"])
    return res


_recent: dict[tuple, tuple[bytes, dict]] = {}  # the last few assemblies: the occupancy pass's
_RECENT = 4  # trial is the cubin stage's result


def make_cubin(ptx: str, options, name: str | None = None) -> tuple[bytes, dict]:
    """(cubin bytes, resources) for `ptx` on `options.target` (sm_80 / sm_90 / sm_90a).

    `resources` holds what `parse_resources` finds plus `log` (nvJitLink's info log) and
    `linker` ('nvjitlink X.Y' or 'cuda.core'). Raises PTXAssemblyError if ptxas fails. The same
    PTX assembled again in a while (the PTX stage's trial, then the cubin stage) is not
    assembled twice.
    """
    arch = parse_arch(options.target)[1]  # options: NvidiaOptions
    maxnreg = options.maxnreg
    data = ptx.encode() if isinstance(ptx, str) else bytes(ptx)
    key = (data, arch, maxnreg, name)
    hit = _recent.get(key)  # one lookup: another thread may drop the entry meanwhile
    if hit is not None:
        return hit[0], dict(hit[1])
    nj = _load_nvjitlink()

    def assemble():
        with _lock:
            if nj is not None:
                options = link_options(arch, data.decode(errors="replace"), maxnreg)
                return (*_link_nvjitlink(nj, data, options), "nvjitlink {}.{}".format(*nj.version()))
            return (*_link_cuda_core(data, arch, maxnreg), "cuda.core")

    cubin, log, linker = run_interruptibly(assemble)
    resources = parse_resources(log, name)
    resources["log"] = log
    resources["linker"] = linker
    with _lock:
        _recent[key] = (cubin, dict(resources))
        while len(_recent) > _RECENT:
            del _recent[next(iter(_recent))]
    return cubin, resources


@dataclass
class PtxAssembly:
    """What the ptxas pass works on: the PTX in; the cubin and ptxas' resource report out.
    The dynamic shared memory and threads per block come from the lowering, for the summary."""

    ptx: str
    name: str
    options: object  # NvidiaOptions
    dynamic_shared: int
    threads: int
    cubin: bytes = b""
    resources: dict = field(default_factory=dict)

    def print(self) -> str:
        """ptxas' info log (the pass manager's printer): registers, spills, shared memory."""
        return self.resources.get("log", "")


class _Ptxas:
    NAME = "ptxas"
    STAGE = "cubin"

    @staticmethod
    def run(a: PtxAssembly) -> PassOutcome:
        a.cubin, a.resources = make_cubin(a.ptx, a.options, name=a.name)
        r = a.resources
        spilled = r["spill_stores"] + r["spill_loads"]
        shared = a.dynamic_shared + r["static_shared"]
        return PassOutcome(
            True,
            f"{r['registers']} registers, {spilled} bytes spilled, {shared} bytes shared, {a.threads} threads",
        )


PTXAS = _Ptxas()

__all__ = [
    "PtxAssembly", "PTXAS", "make_cubin", "parse_resources", "PTXAssemblyError", "ToolchainUnavailableError",
    "max_threads_for_registers", "nvjitlink_version", "start_warm_up",
]  # fmt: skip
