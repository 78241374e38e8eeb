"""The GPU launcher: one per compiled kernel, argument packing precomputed, one driver call per launch.

Built once from the kernel's parameter list (PTX `.param` types + the signature): a ctypes buffer
holds every argument at its offset, an array of pointers into it is the `kernelParams` of the
launch, and one `struct.pack_into` fills the buffer per launch. The module is loaded (and its
shared-memory limit raised when it needs more than 48 KB) the first time the kernel runs on a
device.

Two ways in: `run(args, grid, trace, where)` (CompiledKernel launches: checks the arguments, makes
the context current, calls the binding's cuLaunchKernel) and `bind(where)`, the JIT's warm path:
a function generated for the kernel, `launch(gx, gy, gz, *args)` with its arguments named and
the block size, shared memory and launch attributes written in as literals (folded into 8-byte
words: fewer values to pack), that packs the grid, the stream and the arguments into the calling
thread's buffer, laid out as a CUlaunchConfig followed by the parameters, and calls
cuLaunchKernelEx through ctypes with prepared pointer arguments (`ctypes.byref` objects, which
ctypes passes as they are), so no argument is converted and no lock is taken per launch.

Launches go on torch's current stream when torch tensors were passed, else on the default stream.
"""

from __future__ import annotations

import ctypes
import struct
import sys
import threading

from kernellab.backends.nvidia import driver
from kernellab.backends.arguments import ArgumentError
from kernellab.backends.metadata import KernelMetadata, TmaDescriptor
from kernellab.backends.nvidia.global_scratch import GlobalScratch
from kernellab.backends.nvidia.tensor_maps import TensorMaps
from kernellab.language.signature import Signature

# signature type → struct format of a scalar kernel parameter
_SIG_FORMAT = {
    "i1": "B", "i8": "b", "u8": "B", "i16": "h", "u16": "H", "i32": "i", "u32": "I",
    "i64": "q", "u64": "Q", "fp16": "e", "bf16": "H", "fp32": "f", "fp64": "d",
    "fp8e4nv": "B", "fp8e5": "B",
}  # fmt: skip
# PTX parameter type → struct format when the signature doesn't say (IR resumed from text)
_PTX_FORMAT = {
    "u8": "B", "s8": "b", "b8": "B", "u16": "H", "s16": "h", "b16": "H", "f16": "e",
    "u32": "I", "s32": "i", "b32": "I", "f32": "f", "u64": "Q", "s64": "q", "b64": "Q", "f64": "d",
}  # fmt: skip


class OutOfResources(RuntimeError):
    """A kernel needs more of a per-block resource than the GPU has: `.resource`, `.required`,
    `.limit` say which and how much; the message says what to reduce."""

    def __init__(self, kernel: str, resource: str, required: int, limit: int, advice: str):
        self.kernel, self.resource, self.required, self.limit = kernel, resource, required, limit
        super().__init__(f"{kernel}: out of resources: {resource}: needs {required}, the GPU allows {limit}. {advice}")


def _ptx_size(ptx_type: str) -> int:
    if "[" in ptx_type:  # b8[16]: an aggregate passed by value
        base, count = ptx_type.rstrip("]").split("[")
        return int(base[1:]) // 8 * int(count)
    return int("".join(c for c in ptx_type if c.isdigit())) // 8


def _bf16_bits(value) -> int:
    import ml_dtypes
    import numpy as np

    return int(np.asarray(value, dtype=ml_dtypes.bfloat16).view(np.uint16))


def _fp8_bits(dtype_name: str):
    def convert(value) -> int:
        import ml_dtypes
        import numpy as np

        dtype = ml_dtypes.float8_e4m3fn if dtype_name == "fp8e4nv" else ml_dtypes.float8_e5m2
        return int(np.asarray(value, dtype=dtype).view(np.uint8))

    return convert


def plan_parameters(params: list[str], signature: list[str]) -> tuple[str, list[int], int, list, list]:
    """(struct format, offsets, total size, per-arg converters, trailing zero args) for a kernel
    whose PTX parameters are `params` and whose user arguments have `signature` types.

    Parameters beyond the signature are filled by the launch: by-value aggregates (TMA tensor
    maps) as bytes, a pointer (the global scratch of a kernel that builds tensor maps) as 0
    until the launch gives it.
    """
    if len(params) < len(signature):
        raise ValueError(
            f"the kernel's PTX has {len(params)} parameters but its signature has {len(signature)} "
            f"arguments ({', '.join(signature)}); the compiled code doesn't match the signature"
        )
    fmt, offsets, converters, extras = "=", [], [], []
    offset = 0
    for i, ptx_type in enumerate(params):
        size = _ptx_size(ptx_type)
        if i < len(signature):
            sig = signature[i]
            if sig.startswith("*"):
                code = "Q"
            else:
                code = _SIG_FORMAT.get(sig) or _PTX_FORMAT.get(ptx_type)
            if code is None:
                raise ValueError(f"can't pass a parameter of type {sig} / PTX .{ptx_type}")
            if sig == "bf16":
                converters.append((i, _bf16_bits))
            elif sig in ("fp8e4nv", "fp8e5"):
                converters.append((i, _fp8_bits(sig)))
        elif "[" in ptx_type:  # a by-value aggregate (a TMA tensor map): bytes the launch fills
            code = f"{size}s"
            extras.append(bytes(size))
        else:
            code = {1: "B", 2: "H", 4: "I", 8: "Q"}.get(size)
            if code is None:
                raise ValueError(f"can't fill the extra kernel parameter {i} of PTX type .{ptx_type}")
            extras.append(0)
        csize = struct.calcsize("=" + code)
        if csize != size:
            if i < len(signature) and not signature[i].startswith("*") and size in (1, 2, 4, 8):
                # the lowering widened/narrowed a scalar (e.g. i1 as .u32): follow the PTX type
                code = _PTX_FORMAT.get(ptx_type) or {1: "B", 2: "H", 4: "I", 8: "Q"}[size]
            else:
                raise ValueError(
                    f"parameter {i}: the signature type {signature[i] if i < len(signature) else '?'} "
                    f"has {csize} bytes but the PTX parameter .{ptx_type} has {size}"
                )
        align = min(size, 8) if size in (1, 2, 4, 8) else 8
        pad = -offset % align
        if pad:
            fmt += f"{pad}x"
            offset += pad
        offsets.append(offset)
        fmt += code
        offset += size
    return fmt, offsets, offset, converters, extras


def launch_config(threads: int, shared: int, attrs: int, nattrs: int) -> tuple[str, tuple, tuple]:
    """A CUlaunchConfig (driver.LAUNCH_CONFIG_FORMAT) as (struct format, words, words) to pack
    as `gx, gy, gz, *words, stream, *words`: its fixed fields (block size, shared memory, the
    launch attributes) folded into 8-byte words, and into padding (zeros) where they are all
    zero, so a launch packs 6 values where the fields are 12."""
    before = struct.unpack("=2Q", struct.pack("=4I", threads, 1, 1, shared))
    tail = struct.pack("=QI12x", attrs, nattrs)
    after = struct.unpack("=3Q", tail) if any(tail) else ()
    return "=3I2Q4xQ" + ("3Q" if after else "24x"), before, after


def pointer_argument(address: int):
    """`address` as a ctypes call argument passed as it is: ctypes makes a new argument object
    from a `c_void_p` at every call, but takes a `byref`'s as it is."""
    return ctypes.byref(ctypes.c_char.from_address(address))


class LaunchBuffers(threading.local):
    """The calling thread's buffer for cuLaunchKernelEx: `.ex` is (buffer, config, params), a
    CUlaunchConfig followed by the kernel parameters and the call's pointer arguments to both,
    made once per thread. Threads launching one kernel each pack their own buffer, so they take
    no lock: the driver reads the buffer while the call has released the GIL, and another
    thread may be packing then."""

    def __init__(self, size: int, offsets: list[int]):
        buffer = ctypes.create_string_buffer(driver.LAUNCH_CONFIG_BYTES + size)
        base = ctypes.addressof(buffer) + driver.LAUNCH_CONFIG_BYTES
        pointers = (ctypes.c_void_p * max(len(offsets), 1))(*[base + o for o in offsets])
        # a byref keeps its object alive: the buffer and the kernelParams array pointing into it
        self.ex = (buffer, ctypes.byref(buffer), ctypes.byref(pointers) if offsets else None)


def ptx_signature(params: list[str]) -> Signature:
    """The Signature of a kernel known only by its PTX parameter types (resumed from text)."""
    return Signature((f"arg{i}", _PTX_SIG.get(p, "u64")) for i, p in enumerate(params))


class CudaLauncher:
    """Launches one compiled kernel: `run(args, grid, trace=None, where=None)`.

    `args` are the runtime values in kernel-argument order (device addresses as ints for
    arrays, numbers for scalars); `where` is (device index, use torch's stream).
    """

    def __init__(self, artifact, arg_names=None):
        md: KernelMetadata = artifact.metadata
        self.name = artifact.name
        self.cubin = artifact.cubin
        self.metadata = md
        if not self.cubin:
            raise ValueError(f"{self.name}: no cubin to launch (compile through the cubin stage)")
        params = md.params
        if params is None:
            from kernellab.backends.nvidia.ptx import entry_points

            params = entry_points(artifact.ptx).get(self.name, [])
        signature = md.signature.spellings()
        if len(signature) > len(params):  # the text the kernel was resumed from disagrees: PTX types
            signature = ptx_signature(params).spellings()
        self.signature = signature
        self.nargs = len(self.signature)
        fmt, offsets, total, converters, extras = plan_parameters(params, self.signature)
        self.arg_names = list(arg_names) if arg_names else [f"argument {i + 1}" for i in range(self.nargs)]
        self._struct = struct.Struct(fmt)
        # the user arguments alone: trailing extra parameters stay zero in the buffer
        self._args_struct = struct.Struct(plan_parameters(params[: self.nargs], self.signature)[0])
        self._storage = ctypes.create_string_buffer(max(total, 1))
        base = ctypes.addressof(self._storage)
        self._pointers = (ctypes.c_void_p * max(len(params), 1))(*[base + o for o in offsets])
        self._params_address = ctypes.addressof(self._pointers) if params else 0
        self._converters = converters
        self._extras = tuple(extras)
        descriptors = [TmaDescriptor.of(d) for d in md.tma_descriptors or ()]
        # host TensorDescriptors copied with TMA: their tensor maps are the trailing parameters
        self._tensor_maps = TensorMaps(self.name, descriptors, self.signature) if descriptors else None
        # a kernel that builds tensor maps: its global scratch is the last parameter
        self._scratch = (GlobalScratch(self.name, md.global_scratch_size, md.global_scratch_align or 128)
                         if md.global_scratch_size else None)  # fmt: skip
        self._fills_extras = self._tensor_maps is not None or self._scratch is not None
        self.threads = md.threads_per_block or md.options.num_warps * 32
        self.shared = md.shared or 0
        self.debug = md.options.debug
        self._functions: dict[int, object] = {}
        self._modules: dict[int, object] = {}
        self._lock = threading.Lock()
        self._launch = None
        self._raw_stream = None
        self.use_raw_launch = True  # warm path: cuLaunchKernelEx via ctypes when the driver has it
        requested = [
            driver.LAUNCH_ATTRIBUTE_COOPERATIVE if md.options.launch_cooperative_grid else None,
            driver.LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
            if md.options.launch_pdl else None,
        ]
        # launch attributes (cooperative grid, PDL): set through cuLaunchKernelEx only
        self._attributes = driver.launch_attributes([a for a in requested if a is not None])
        # cuLaunchKernelEx's buffer (each thread its own) and its layout (see launch_config)
        self._buffers = LaunchBuffers(max(total, 1), offsets)
        self._config = launch_config(self.threads, self.shared, *self._attributes[1:])
        params = self._struct if self._fills_extras else self._args_struct
        self._ex_pack = struct.Struct(self._config[0] + params.format.lstrip("=")).pack_into

    # -- loading -----------------------------------------------------------------------------

    def function(self, device: int = 0):
        """The CUfunction on `device`, loading the module (and checking resources) the first time."""
        fn = self._functions.get(device)
        if fn is None:
            fn = self._load(device)
        return fn

    def _load(self, device: int):
        with self._lock:
            if device in self._functions:
                return self._functions[device]
            info = driver.device_info(device)
            target = self.metadata.target
            if target.startswith("sm_"):
                want = int("".join(c for c in target[3:] if c.isdigit()))
                have = info.capability[0] * 10 + info.capability[1]
                if want // 10 != have // 10 or want > have:
                    raise driver.CudaError(
                        "load", 209, "CUDA_ERROR_NO_BINARY_FOR_GPU",
                        f"{self.name} was compiled for {target} but cuda:{device} ({info.name}) is {info.arch}",
                        "Compile with target='cuda' (what kernel[grid](...) does) to use the visible GPU's architecture",
                    )
            module = driver.load_module(self.cubin, device)
            fn = driver.get_function(module, self.name)
            self._check_resources(fn, info)
            self._modules[device] = module
            self._functions[device] = fn
            if self._launch is None:
                self._launch = driver._driver().cuLaunchKernel
            return fn

    def _check_resources(self, fn, info) -> None:
        max_threads = driver.function_attribute(fn, "CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK")
        registers = driver.function_attribute(fn, "CU_FUNC_ATTRIBUTE_NUM_REGS")
        if self.threads > max_threads:
            raise OutOfResources(
                self.name, "threads per block", self.threads, max_threads,
                f"It uses {registers} registers per thread, so at most {max_threads} threads fit in "
                f"a block ({info.registers_per_block} registers); use num_warps <= "
                f"{max(1, max_threads // 32)} or smaller BLOCK sizes (fewer values live per thread), "
                "or set maxnreg.",
            )
        static = driver.function_attribute(fn, "CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES")
        limit = info.max_shared_per_block_optin

        def too_much() -> OutOfResources:
            return OutOfResources(
                self.name, "shared memory (bytes per block)", self.shared + static, limit,
                f"({self.shared} dynamic + {static} static.) Reduce the BLOCK sizes or num_stages "
                "(each pipeline stage keeps its own tiles in shared memory).",
            )

        if self.shared > limit:
            raise too_much()
        if self.shared + static > info.max_shared_per_block:  # past 48 KB a kernel must opt in
            try:
                driver.set_function_attribute(fn, "CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES", self.shared)
            except driver.CudaError as e:
                if e.name == "CUDA_ERROR_INVALID_VALUE":
                    raise too_much() from None
                raise

    # -- launching ---------------------------------------------------------------------------

    def _stream_function(self):
        """`f(device) -> torch's current stream there, as an int` (None without torch)."""
        raw = self._raw_stream
        if raw is None:
            torch = sys.modules.get("torch")
            if torch is None:
                return None
            raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
            if raw is None:
                def raw(d, _torch=torch):
                    return _torch.cuda.current_stream(d).cuda_stream
            self._raw_stream = raw
        return raw

    def _stream(self, device: int) -> int:
        raw = self._raw_stream or self._stream_function()
        return 0 if raw is None else raw(device)

    def bind(self, where: tuple[int, bool], ignored=()):
        """The warm-path launch for `where` = (device, use torch's stream): a function
        `launch(gx, gy, gz, *args)` that packs the grid, torch's current stream and the
        arguments into a preallocated buffer (the calling thread's, see LaunchBuffers) with one
        `struct.pack_into` and makes one driver call (cuLaunchKernelEx through ctypes, else the
        binding's cuLaunchKernel, under the lock: its buffer is shared). `args` must
        match the signature (the JIT's binder guarantees it) but for the positions in `ignored`,
        values the kernel was specialized on (None, an int 1), which it takes and leaves out;
        the grid must be non-empty.
        """
        device, use_torch = where
        fn = self.function(device)
        ignored = frozenset(ignored)

        def kept(args):
            return [a for i, a in enumerate(args) if i not in ignored] if ignored else args

        nattrs = self._attributes[2]
        raw = driver.raw_launch_function() if self.use_raw_launch else None
        if (self._converters or self.debug or driver.device_count() > 1 or (nattrs and raw is None)
                or self._fills_extras):  # fmt: skip
            # converted scalars, a synchronizing debug launch, a context to make current on
            # every launch (several GPUs), or tensor maps and scratch to give: the general path
            def launch_general(gx, gy, gz, *args):
                self.run(kept(args), (gx, gy, gz), None, where)

            return launch_general
        storage = self._storage
        # the buffer is shared: pack and launch as one step (acquire/release: cheaper than `with`)
        acquire, release = self._lock.acquire, self._lock.release
        threads, shared, params = self.threads, self.shared, self._params_address
        current_stream = self._stream_function() if use_torch else None
        if raw is None:
            pack = self._args_struct.pack_into
            launch = self._launch

            def launch_binding(gx, gy, gz, *args):
                args = kept(args)
                stream = current_stream(device) if current_stream is not None else 0
                acquire()
                try:
                    pack(storage, 0, *args)
                    err = launch(fn, gx, gy, gz, threads, 1, 1, shared, stream, params, 0)[0]
                except struct.error:
                    raise self._argument_error(args) from None
                finally:
                    release()
                if err:
                    self._failed(err, args, (gx, gy, gz), where)

            return launch_binding

        # straight-line code with the arguments named and the fixed launch facts as literals:
        # no argument tuple is made or unpacked per launch
        taken = "".join(f"a{i}, " for i in range(self.nargs + len(ignored)))
        names = "".join(f"a{i}, " for i in range(self.nargs + len(ignored)) if i not in ignored)
        stream = "current_stream(device)" if current_stream is not None else "0"
        _, before, after = self._config
        words = "".join(f"{w}, " for w in before), "".join(f"{w}, " for w in after)
        source = "\n".join([
            f"def launch_raw(gx, gy, gz, {taken}):",
            " buffer, config, params = buffers.ex",
            " try:",
            f"  pack(buffer, 0, gx, gy, gz, {words[0]}{stream}, {words[1]}{names})",
            " except struct_error:",
            f"  raise argument_error(({names})) from None",
            " err = raw(config, function, params, None)",
            " if err:",
            f"  failed(err, ({names}), (gx, gy, gz), where)",
        ])  # fmt: skip
        namespace = {
            "current_stream": current_stream, "device": device, "buffers": self._buffers,
            "pack": self._ex_pack, "raw": raw, "function": pointer_argument(int(fn)),
            "struct_error": struct.error, "argument_error": self._argument_error,
            "failed": self._failed, "where": where,
        }  # fmt: skip
        exec(compile(source, f"<kernellab launch of {self.name}>", "exec"), namespace)
        return namespace["launch_raw"]

    def _failed(self, err, args, grid, where) -> None:
        """A warm-path launch failed: with no context current on this thread (a new thread),
        make the device's current and launch again; otherwise raise what went wrong."""
        if int(err) == _INVALID_CONTEXT:
            driver.make_current(where[0], force=True)
            self.run(args, grid, None, where)
            return
        raise self._launch_error(err, grid, where[0])

    def run(self, args, grid, trace=None, where=None):
        if trace is not None:
            raise ValueError("access tracing runs on the interpreter only; pass numpy arrays to trace")
        if where is None:
            device, use_torch = driver.current_device_index(), "torch" in sys.modules
        else:
            device, use_torch = where
        fn = self._functions.get(device)
        if fn is None:
            fn = self._load(device)
        driver.make_current(device)
        gx, gy, gz = grid
        if not (gx and gy and gz):
            return None
        stream = self._stream(device) if use_torch else 0
        if self._converters:
            args = list(args)
            for i, convert in self._converters:
                args[i] = convert(args[i])
        if len(args) != self.nargs:
            raise ArgumentError(f"{self.name} takes {self.nargs} arguments, got {len(args)}")
        if self._attributes[2]:
            self._launch_with_attributes(fn, args, grid, stream, device)
        else:
            self._launch_plain(fn, args, grid, stream, device)
        if self.debug:
            (err,) = driver._driver().cuStreamSynchronize(stream)
            if err:
                raise self._launch_error(err, grid, device, after=True)
        return None

    def _extra_values(self, args, grid, stream: int, device: int) -> tuple:
        """The parameters after the signature's: zeros, or the launch's tensor maps and then
        its global scratch."""
        if not self._fills_extras:
            return self._extras
        maps = self._tensor_maps.encode(args, device) if self._tensor_maps is not None else []
        scratch = [self._scratch.pointer(grid, stream, device)] if self._scratch is not None else []
        return (*maps, *scratch)

    def _launch_plain(self, fn, args, grid, stream, device) -> None:
        gx, gy, gz = grid
        extras = self._extra_values(args, grid, stream, device)
        with self._lock:
            try:
                self._struct.pack_into(self._storage, 0, *args, *extras)
            except struct.error:
                raise self._argument_error(args) from None
            (err,) = self._launch(
                fn, gx, gy, gz, self.threads, 1, 1, self.shared, stream, self._params_address, 0
            )
        if err:
            raise self._launch_error(err, grid, device)

    def _launch_with_attributes(self, fn, args, grid, stream, device) -> None:
        """A launch with the options' attributes (cooperative grid, PDL): cuLaunchKernelEx."""
        raw = driver.raw_launch_function()
        if raw is None:
            raise driver.CudaError(
                f"cuLaunchKernelEx({self.name})", 0, "UNAVAILABLE",
                "launch_cooperative_grid and launch_pdl need cuLaunchKernelEx, which this driver "
                "does not provide",
                "Update the NVIDIA driver (CUDA 12 or later), or launch without these options",
            )  # fmt: skip
        buffer, config, params = self._buffers.ex
        _, before, after = self._config
        maps = self._extra_values(args, grid, stream, device) if self._fills_extras else ()
        try:
            self._ex_pack(buffer, 0, *grid, *before, stream, *after, *args, *maps)
        except struct.error:
            raise self._argument_error(args) from None
        err = raw(config, pointer_argument(int(fn)), params, None)
        if err:
            raise self._launch_error(err, grid, device)

    def _argument_error(self, args) -> ArgumentError:
        for i, (value, sig) in enumerate(zip(args, self.signature)):
            name = self.arg_names[i] if i < len(self.arg_names) else f"argument {i + 1}"
            if sig.startswith("*") and not isinstance(value, int):
                kind = type(value).__name__
                return ArgumentError(
                    f"{self.name}: {name!r} is a {kind} (CPU memory) but the kernel runs on the GPU: "
                    "pass a CUDA tensor (torch: x.cuda()) or an object with __cuda_array_interface__"
                )
            code = _SIG_FORMAT.get(sig, "Q" if sig.startswith("*") else None)
            if code:
                try:
                    struct.pack("=" + code, value)
                except struct.error as e:
                    return ArgumentError(f"{self.name}: {name!r} = {value!r} can't be passed as {sig}: {e}")
        return ArgumentError(f"{self.name}: the arguments don't match the signature {', '.join(self.signature)}")

    def _launch_error(self, err, grid, device, after: bool = False) -> Exception:
        e = driver.error("cuLaunchKernel" if not after else f"{self.name} (synchronizing after launch)", err)
        if e.name == "CUDA_ERROR_INVALID_VALUE":
            info = driver.device_info(device)
            reasons = [f"grid dimension {axis} = {n} exceeds {limit}"
                       for axis, n, limit in zip("xyz", grid, info.max_grid) if n > limit]  # fmt: skip
            if self.threads > info.max_threads_per_block:
                reasons.append(f"{self.threads} threads per block exceed {info.max_threads_per_block}")
            if reasons:
                return driver.CudaError(
                    f"cuLaunchKernel({self.name})", e.code, e.name, "; ".join(reasons),
                    "Launch fewer programs per grid dimension (use the x dimension for large counts)",
                )
        if e.sticky and after:  # a synchronizing (debug) launch: this kernel is the one
            e.args = (f"{self.name} faulted on the GPU: {e.args[0]}",)
        else:
            e.args = (f"{self.name}: {e.args[0]}",)
        return e


_INVALID_CONTEXT = 201  # CUDA_ERROR_INVALID_CONTEXT: no context is current on this thread

_PTX_SIG = {
    "u8": "u8", "s8": "i8", "b8": "u8", "u16": "u16", "s16": "i16", "b16": "u16", "f16": "fp16",
    "u32": "u32", "s32": "i32", "b32": "u32", "f32": "fp32", "u64": "u64", "s64": "i64",
    "b64": "u64", "f64": "fp64",
}  # fmt: skip


__all__ = ["CudaLauncher", "OutOfResources", "plan_parameters", "ptx_signature"]
