"""The JIT's warm path: `Binder.fast` keys agree with `bind`, and a repeated launch goes from the
arguments straight to one packed cuLaunchKernel call (checked against a fake driver, no GPU).

The "CUDA tensors" here are stand-ins that look like torch tensors to the runtime (a `torch`
module name, `get_device`, `data_ptr`, `dtype`); the fake driver reads the packed parameters
back the way the real one would.
"""

import ctypes
import itertools
import pathlib
import random
import struct
import threading
import types

import numpy as np
import pytest

import kernellab as kl
import kernellab.language as tl
from kernellab.backends.nvidia import driver
from kernellab.backends import arguments as args_module

try:
    from cuda.bindings.driver import CUresult
except ImportError:  # pragma: no cover
    CUresult = None

KB = 1024


class FakeDtype:
    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"torch.{self.name}"


FLOAT32, FLOAT16, INT32 = FakeDtype("float32"), FakeDtype("float16"), FakeDtype("int32")


class FakeTensor:
    """Looks like a torch tensor to kernellab's argument handling."""

    def __init__(self, ptr, dtype=FLOAT32, device=0):
        self.ptr, self.dtype, self.device = ptr, dtype, device

    def get_device(self):
        return self.device

    def data_ptr(self):
        return self.ptr


FakeTensor.__module__ = "torch.fake"


@kl.jit
def spec_kernel(x_ptr, n, scale, flag, y_ptr, BLOCK: tl.constexpr, ACT: tl.constexpr = "none"):
    pass


@kl.jit(do_not_specialize=["n"], do_not_specialize_on_alignment=["y_ptr"])
def nospec_kernel(x_ptr, n, scale, flag, y_ptr, BLOCK: tl.constexpr, ACT: tl.constexpr = "none"):
    pass


@kl.jit(do_not_specialize=["n", "x_ptr"], do_not_specialize_on_alignment=["n", "x_ptr"])
def unspecialized_kernel(x_ptr, n, scale, flag, y_ptr, BLOCK: tl.constexpr, ACT: tl.constexpr = "none"):
    pass


def _random_value(rng, slot):
    if slot in ("x_ptr", "y_ptr"):
        return rng.choice([
            FakeTensor(rng.choice([0x7F0000000000, 0x7F0000000010, 0x7F0000000004, 0x7F0000000008])),
            FakeTensor(0x7F0000000100, FLOAT16), FakeTensor(0x7F0000000100, INT32, device=1),
            np.zeros(4, np.float32),
        ])  # fmt: skip
    if slot == "n":
        return rng.choice([0, 1, 2, 16, 17, 32, -16, 2**31 - 16, 2**31, -(2**31), 2**40, True, 3.0, None])
    if slot == "scale":
        return rng.choice([1.0, 0.5, 2, 1, np.float32(1.5), np.int64(16)])
    if slot == "flag":
        return rng.choice([True, False, 0, 1])
    if slot == "BLOCK":
        return rng.choice([16, 32, 32.0, True, tl.constexpr(16)])
    return rng.choice(["none", "relu", 1])


@pytest.mark.parametrize(
    "kernel", [spec_kernel, nospec_kernel, unspecialized_kernel], ids=["specialized", "do_not_specialize", "neither"]
)
def test_fast_keys_agree_with_bind(kernel):
    """Two calls share a fast key exactly when they share a bind key, with the same runtime args."""
    rng = random.Random()
    binder = kernel.binder
    names = ["x_ptr", "n", "scale", "flag", "y_ptr", "BLOCK", "ACT"]
    seen: dict = {}
    fast_calls = 0
    for _ in range(400):
        values = {name: _random_value(rng, name) for name in names}
        npos = rng.randint(0, 5)
        args = tuple(values[n] for n in names[:npos])
        kwargs = {n: values[n] for n in names[npos:] if n != "ACT" or rng.random() < 0.5}
        if rng.random() < 0.2:
            kwargs["num_warps"] = rng.choice([2, 4])
        try:
            bound = binder.bind(args, kwargs)
        except (TypeError, args_module.ArgumentError):
            bound = None
        fast = binder.fast(args, kwargs)
        if fast is None:
            continue
        assert bound is not None, (args, kwargs)
        fast_calls += 1
        key, runtime = fast
        assert runtime == bound.args, (args, kwargs)
        assert binder.values(args, kwargs) == bound.values
        if key in seen:
            assert seen[key] == bound.key, (args, kwargs)
        seen[key] = bound.key
    assert fast_calls > 20
    assert len(set(seen.values())) == len(seen)  # distinct fast keys: distinct bind keys


def test_arguments_the_fast_path_leaves_to_bind():
    b = spec_kernel.binder
    t = FakeTensor(0x7F0000000000)
    assert b.fast((t, 4, 1.0, True, t), {"BLOCK": 16}) is not None
    assert b.fast((np.zeros(4, np.float32), 4, 1.0, True, t), {"BLOCK": 16}) is None  # numpy
    assert b.fast((FakeTensor(64, device=-1), 4, 1.0, True, t), {"BLOCK": 16}) is None  # CPU tensor
    assert b.fast((t, 2**40, 1.0, True, t), {"BLOCK": 16}) is None  # an i64 scalar
    assert b.fast((t, 4, 1.0, True, t), {"BLOCK": tl.constexpr(16)}) is None
    assert b.fast((t, 4, 1.0, True, t), {"BLOCK": 16, "warmup": True}) is None
    assert b.fast((t, 4, 1.0, True, t), {"BLOCK": 16, "bogus": 1}) is None
    assert b.fast((t, 4, 1.0, True, t), {"BLOCK": 16, "n": 3}) is None  # given twice
    assert b.fast((t, 4, 1.0, True), {"BLOCK": 16}) is None  # y_ptr missing


# -- launches through a fake driver -----------------------------------------------------------


class FakeDriver:
    """The driver calls a launch needs; cuLaunchKernel reads the parameters back from memory."""

    def __init__(self, results=()):
        self.launches = []
        self.results = list(results)
        self.made_current = []
        self.info = driver.DeviceInfo(
            index=0, name="Fake H100", capability=(9, 0), sm_count=132, max_threads_per_block=1024,
            max_shared_per_block=48 * KB, max_shared_per_block_optin=227 * KB,
            shared_per_sm=228 * KB, registers_per_sm=65536, registers_per_block=65536,
            max_grid=(2**31 - 1, 65535, 65535),
        )  # fmt: skip

    def install(self, monkeypatch, stream=0):
        raw = types.SimpleNamespace(
            cuLaunchKernel=self.launch, CUresult=CUresult,
            cuGetErrorString=lambda code: (_ for _ in ()).throw(RuntimeError("no driver")),
        )  # fmt: skip
        monkeypatch.setattr(driver, "_driver", lambda: raw)
        monkeypatch.setattr(driver, "_lost", None)  # a fresh context: no fault seen yet
        monkeypatch.setattr(driver, "device_info", lambda index=0: self.info)
        monkeypatch.setattr(driver, "device_count", lambda: 1)
        monkeypatch.setattr(driver, "make_current", lambda index=0, force=False: self.made_current.append((index, force)))
        monkeypatch.setattr(driver, "load_module", lambda cubin, index=0: "module")
        monkeypatch.setattr(driver, "get_function", lambda module, name: name)
        attrs = {"CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK": 1024, "CU_FUNC_ATTRIBUTE_NUM_REGS": 32,
                 "CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES": 0}  # fmt: skip
        monkeypatch.setattr(driver, "function_attribute", lambda fn, name: attrs[name])
        # torch's current stream, as the launcher asks for it
        fake_torch = types.SimpleNamespace(_C=types.SimpleNamespace(_cuda_getCurrentRawStream=lambda d: stream))
        monkeypatch.setitem(__import__("sys").modules, "torch", fake_torch)
        return self

    def launch(self, fn, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        slots = (ctypes.c_void_p * 4).from_address(params)
        read = [ctypes.c_uint64.from_address(slots[i]).value for i in range(3)]
        read.append(ctypes.c_int32.from_address(slots[3]).value)
        self.launches.append(dict(fn=fn, grid=(gx, gy, gz), block=(bx, by, bz), stream=stream, args=read))
        code = self.results.pop(0) if self.results else 0
        return (CUresult(code),)


@kl.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


needs_cuda_python = pytest.mark.skipif(CUresult is None, reason="cuda-python is not installed")


@pytest.fixture
def fresh_add_kernel():
    """add_kernel with no launchers left over from another test's fake driver."""
    for table in (add_kernel.cache, add_kernel.where, add_kernel._launches):
        table.clear()
    yield add_kernel
    for table in (add_kernel.cache, add_kernel.where, add_kernel._launches):
        table.clear()


@needs_cuda_python
def test_repeated_launches_skip_bind_and_pack_each_call(monkeypatch, fresh_add_kernel):
    fake = FakeDriver().install(monkeypatch, stream=0xABC0)
    calls = []
    real_bind = add_kernel.binder.bind
    monkeypatch.setattr(add_kernel.binder, "bind", lambda *a: calls.append(a) or real_bind(*a))
    ptrs = itertools.count(0x7F0000000000, 0x1000)
    for i, grid in enumerate([(4,), (1,), (2, 3), lambda meta: (kl.cdiv(meta["n"], meta["BLOCK"]),)]):
        x, y, out = (FakeTensor(next(ptrs)) for _ in range(3))
        n = 1024 + 16 * i  # multiples of 16: one specialization
        add_kernel[grid](x, y, out, n, BLOCK=256)
        launch = fake.launches[-1]
        assert launch["args"] == [x.ptr, y.ptr, out.ptr, n]
        assert launch["stream"] == 0xABC0 and launch["block"] == (128, 1, 1)
        expected = {0: (4, 1, 1), 1: (1, 1, 1), 2: (2, 3, 1), 3: (kl.cdiv(n, 256), 1, 1)}[i]
        assert launch["grid"] == expected
    assert len(calls) == 1  # only the first launch bound the arguments the slow way
    # a new specialization (n not a multiple of 16) takes the slow path once, then is warm too
    x, y, out = (FakeTensor(next(ptrs)) for _ in range(3))
    add_kernel[(1,)](x, y, out, 1001, BLOCK=256)
    add_kernel[(1,)](x, y, out, 1003, BLOCK=256)
    assert len(calls) == 2 and fake.launches[-1]["args"][3] == 1003
    assert len(add_kernel.cache) >= 2
    add_kernel[(0,)](x, y, out, 1003, BLOCK=256)  # an empty grid launches nothing
    assert len(fake.launches) == 6


@needs_cuda_python
def test_a_thread_without_a_context_makes_it_current_and_relaunches(monkeypatch, fresh_add_kernel):
    fake = FakeDriver().install(monkeypatch)
    x, y, out = (FakeTensor(0x7F0000000000 + 0x1000 * i) for i in range(3))
    add_kernel[(1,)](x, y, out, 64, BLOCK=256)
    fake.made_current.clear()
    fake.results = [201]  # CUDA_ERROR_INVALID_CONTEXT
    add_kernel[(1,)](x, y, out, 64, BLOCK=256)
    assert fake.made_current[0] == (0, True)
    assert len(fake.launches) == 3 and fake.launches[-1]["args"][3] == 64


@needs_cuda_python
def test_a_failed_warm_launch_raises_the_drivers_error(monkeypatch, fresh_add_kernel):
    fake = FakeDriver().install(monkeypatch)
    x, y, out = (FakeTensor(0x7F0000000000 + 0x1000 * i) for i in range(3))
    add_kernel[(1,)](x, y, out, 64, BLOCK=256)
    fake.results = [700]  # CUDA_ERROR_ILLEGAL_ADDRESS
    with pytest.raises(driver.CudaError) as info:
        add_kernel[(1,)](x, y, out, 64, BLOCK=256)
    assert info.value.sticky and "The CUDA context is lost" in str(info.value)


class LaunchConfig(ctypes.Structure):  # CUlaunchConfig, as cuda.h declares it
    _fields_ = [("grid", ctypes.c_uint * 3), ("block", ctypes.c_uint * 3), ("shared", ctypes.c_uint),
                ("stream", ctypes.c_void_p), ("attrs", ctypes.c_void_p), ("num_attrs", ctypes.c_uint)]  # fmt: skip


RAW_LAUNCH = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)


def as_driver_function(callback):
    """`callback` (a RAW_LAUNCH) called the way driver.raw_launch_function's cuLaunchKernelEx is:
    through a ctypes function pointer with no argtypes, so ctypes passes the launcher's prepared
    arguments as they are."""
    function = ctypes.CFUNCTYPE(ctypes.c_int)(ctypes.cast(callback, ctypes.c_void_p).value)
    function.callback = callback  # keep the C callback alive as long as the pointer to it
    return function


@needs_cuda_python
def test_the_ctypes_launch_passes_the_same_parameters(monkeypatch, fresh_add_kernel):
    """The warm path's direct cuLaunchKernelEx call (a ctypes function from the driver) gets the
    function handle, a CUlaunchConfig with grid, block, shared memory and torch's stream, and the
    packed parameters."""
    fake = FakeDriver().install(monkeypatch, stream=0xBEEF0)
    monkeypatch.setattr(driver, "get_function", lambda module, name: 0xF00D)
    seen = []
    proto = RAW_LAUNCH

    def raw(config, fn, params, extra):
        c = LaunchConfig.from_address(config)
        slots = (ctypes.c_void_p * 4).from_address(params)
        args = [ctypes.c_uint64.from_address(slots[i]).value for i in range(3)]
        args.append(ctypes.c_int32.from_address(slots[3]).value)
        seen.append((fn, tuple(c.grid), tuple(c.block), c.shared, c.stream, c.attrs, c.num_attrs, args, extra))
        return 0

    callback = as_driver_function(proto(raw))
    monkeypatch.setattr(driver, "raw_launch_function", lambda: callback)
    x, y, out = (FakeTensor(0x7F0000000000 + 0x1000 * i) for i in range(3))
    add_kernel[(3,)](x, y, out, 64, BLOCK=256)  # slow path: the binding
    add_kernel[(5,)](x, y, out, 80, BLOCK=256)
    add_kernel[(2, 2)](y, x, out, 96, BLOCK=256)
    assert len(fake.launches) == 1
    assert seen == [
        (0xF00D, (5, 1, 1), (128, 1, 1), 0, 0xBEEF0, None, 0, [x.ptr, y.ptr, out.ptr, 80], None),
        (0xF00D, (2, 2, 1), (128, 1, 1), 0, 0xBEEF0, None, 0, [y.ptr, x.ptr, out.ptr, 96], None),
    ]


def _reading_launch(seen: list):
    """A stand-in cuLaunchKernelEx that reads add_kernel's launch back (the function, the
    CUlaunchConfig, its attributes' ids and values, the four parameters) into `seen`."""

    def raw(config, fn, params, extra):
        c = LaunchConfig.from_address(config)
        slots = (ctypes.c_void_p * 4).from_address(params)
        args = [ctypes.c_uint64.from_address(slots[i]).value for i in range(3)]
        args.append(ctypes.c_int32.from_address(slots[3]).value)
        attributes = [struct.unpack_from("=I4xi", ctypes.string_at(c.attrs + 72 * i, 72)) for i in range(c.num_attrs)]
        seen.append(dict(fn=fn, grid=tuple(c.grid), block=tuple(c.block), shared=c.shared, stream=c.stream,
                         attributes=attributes, args=args))  # fmt: skip
        return 0

    return as_driver_function(RAW_LAUNCH(raw))


@needs_cuda_python
def test_threads_launching_one_kernel_pack_their_own_buffers(monkeypatch, fresh_add_kernel):
    """Threads launching the same kernel at once: the driver reads each launch's own grid and
    arguments (each thread packs its own buffer; the stand-in driver, Python code, lets the
    other threads run between a launch's packing and its reading)."""
    FakeDriver().install(monkeypatch)
    monkeypatch.setattr(driver, "get_function", lambda module, name: 0xF00D)
    seen = []
    callback = _reading_launch(seen)
    monkeypatch.setattr(driver, "raw_launch_function", lambda: callback)
    x0, y0, out0 = (FakeTensor(0x7F0000000000 + 0x1000 * i) for i in range(3))
    add_kernel[(1,)](x0, y0, out0, 64, BLOCK=256)  # compiled and bound once, before the threads
    seen.clear()
    n_threads, launches = 4, 300
    start = threading.Barrier(n_threads)

    def launch_many(t: int):
        start.wait()
        for i in range(launches):
            x, y, out = (FakeTensor(0x7F0000000000 + 0x100000 * t + 0x1000 * (3 * i + j)) for j in range(3))
            add_kernel[(t + 1, i + 1)](x, y, out, 16 * (t * launches + i), BLOCK=256)

    threads = [threading.Thread(target=launch_many, args=(t,)) for t in range(n_threads)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(seen) == n_threads * launches
    for launch in seen:
        t, i = launch["grid"][0] - 1, launch["grid"][1] - 1
        base = 0x7F0000000000 + 0x100000 * t + 0x1000 * 3 * i
        assert launch["args"] == [base, base + 0x1000, base + 0x2000, 16 * (t * launches + i)]
    assert len({launch["args"][3] for launch in seen}) == len(seen)


@needs_cuda_python
def test_launch_attributes_reach_cuLaunchKernelEx(monkeypatch, fresh_add_kernel):
    """launch_pdl and launch_cooperative_grid go to the driver as CUlaunchAttributes, on the
    first launch (the general path) and on warm ones, with the grid, block, stream and arguments
    of each launch."""
    FakeDriver().install(monkeypatch, stream=0x5EA0)
    monkeypatch.setattr(driver, "get_function", lambda module, name: 0xF00D)
    seen = []
    callback = _reading_launch(seen)
    monkeypatch.setattr(driver, "raw_launch_function", lambda: callback)
    ptrs = itertools.count(0x7F0000000000, 0x1000)
    for i, grid in enumerate([(3,), (3,), (2, 5), (7,)]):
        x, y, out = (FakeTensor(next(ptrs)) for _ in range(3))
        n = 1024 + 16 * random.randrange(100)
        add_kernel[grid](x, y, out, n, BLOCK=256, num_warps=2, launch_pdl=True, launch_cooperative_grid=i % 2 == 1)
        launch = seen[-1]
        assert launch["grid"] == (*grid, 1, 1)[:3] and launch["block"] == (64, 1, 1)
        assert launch["fn"] == 0xF00D and launch["stream"] == 0x5EA0 and launch["shared"] == 0
        expected = [(driver.LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION, 1)]
        if i % 2:
            expected.insert(0, (driver.LAUNCH_ATTRIBUTE_COOPERATIVE, 1))
        assert launch["attributes"] == expected
        assert launch["args"] == [x.ptr, y.ptr, out.ptr, n]
    assert len(seen) == 4


@kl.jit
def many_constexprs_kernel(x_ptr, A: tl.constexpr, B: tl.constexpr, C: tl.constexpr, D: tl.constexpr, E: tl.constexpr):
    pass


def test_keyword_order_and_option_orders_bind_alike():
    """The warm path takes the kernel's own parameters, so the order of keyword arguments
    doesn't matter; launch options given in any order make one key part (a bounded table of
    the orders seen)."""
    binder = many_constexprs_kernel.binder
    t = FakeTensor(0x7F0000000000)
    keys = set()
    options = {"num_warps": 2, "num_stages": 3, "num_ctas": 1, "maxnreg": 64, "debug": False}
    for order in itertools.permutations("ABCDE"):
        kwargs = {name: ord(name) for name in order}
        kwargs.update((name, options[name]) for name in reversed(list(options)[: len(keys) % 6]))
        key, runtime = binder.fast((t,), kwargs)
        bound = binder.bind((t,), kwargs)
        assert runtime == bound.args == [t.ptr]
        keys.add((key, bound.key))
        assert len(binder._option_parts) <= 64
    assert len({k for k, _ in keys}) == len({b for _, b in keys}) == 6  # one per set of options


def test_option_parts_are_remembered_by_their_items():
    """A launch's options make the same key part each time, remembered by their items; a name
    that is no option makes none (bind explains it), and an unhashable value (extern_libs'
    dict) is made each time, its items as the part."""
    binder = many_constexprs_kernel.binder
    for _ in range(2):
        part = binder._option_part({"num_warps": 4, "num_stages": 2})
        assert part == (("num_warps", "num_stages"), (4, 2))
        assert binder._option_part({"num_warps": 4, "warmup": True}) is None
        assert binder._option_part({"num_warps": 4, "bogus": 1}) is None
        size = len(binder._option_parts)
        libs = {"libdevice": pathlib.Path("/lib/libdevice.bc")}
        assert binder._option_part({"extern_libs": libs}) == (("extern_libs",), ((("libdevice", "/lib/libdevice.bc"),),))
        assert len(binder._option_parts) == size
    assert binder._option_part({"num_stages": 2, "num_warps": 4}) == (("num_stages", "num_warps"), (2, 4))
    t = FakeTensor(0x7F0000000000)
    for options in ({"num_warps": 4}, {"num_warps": 8}, {"maxnreg": 128, "num_warps": 4}):
        kwargs = {"A": 1, "B": 2, "C": 3, "D": 4, "E": 5, **options}
        key, _ = binder.fast((t,), kwargs)
        assert key[-1] == (tuple(options), tuple(options.values()))


# -- warm launches follow every specialization change -----------------------------------------


@kl.jit
def bias_kernel(x_ptr, bias_ptr, out_ptr, n, scale, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask) * scale
    if bias_ptr is not None:
        x = x + tl.load(bias_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x, mask=mask)


def _packed_arguments(ck, raw: bool) -> list:
    """The arguments the last launch of `ck` packed for the driver, read back from the
    launcher's buffer (the binding's parameter storage, or cuLaunchKernelEx's config buffer)."""
    launcher = ck._launcher
    if not raw:
        return list(launcher._args_struct.unpack_from(launcher._storage))
    layout = struct.Struct(driver.LAUNCH_CONFIG_FORMAT + launcher._args_struct.format.lstrip("="))
    return list(layout.unpack_from(launcher._buffers.ex[0]))[10:]


def _cases():
    """(name, args, kwargs) of calls that each need their own specialization, pointers drawn
    fresh (keeping their 16-byte alignment) at every call."""
    ptrs = itertools.count(0x7F0000000000, 0x1000)

    def t(dtype=FLOAT32, offset=0):
        return lambda: FakeTensor(next(ptrs) + offset, dtype)

    f32, bias = t(), t()
    return [
        ("base", lambda: ((f32(), bias(), f32(), 64, 2.5), {"BLOCK": 128})),
        ("x unaligned", lambda: ((t(offset=4)(), bias(), f32(), 64, 2.5), {"BLOCK": 128})),
        ("n not a multiple of 16", lambda: ((f32(), bias(), f32(), 65, 2.5), {"BLOCK": 128})),
        ("n == 1", lambda: ((f32(), bias(), f32(), 1, 2.5), {"BLOCK": 128})),
        ("no bias", lambda: ((f32(), None, f32(), 64, 2.5), {"BLOCK": 128})),
        ("BLOCK 256", lambda: ((f32(), bias(), f32(), 64, 2.5), {"BLOCK": 256})),
        ("x fp16", lambda: ((t(FLOAT16)(), bias(), f32(), 64, 2.5), {"BLOCK": 128})),
        ("num_warps=2", lambda: ((f32(), bias(), f32(), 64, 2.5), {"BLOCK": 128, "num_warps": 2})),
        ("int scale", lambda: ((f32(), bias(), f32(), 64, 3), {"BLOCK": 128})),
        ("by keyword", lambda: ((), {"BLOCK": 128, "scale": 2.5, "n": 64, "out_ptr": f32(), "bias_ptr": bias(), "x_ptr": f32()})),
    ]  # fmt: skip


@needs_cuda_python
@pytest.mark.parametrize("raw", [False, True], ids=["binding", "cuLaunchKernelEx"])
def test_warm_launches_follow_every_specialization_change(monkeypatch, raw):
    """Calls in random order, each case three times with fresh pointers: every launch runs the
    kernel compiled for exactly its `bind` key (alignment, n == 1 or % 16, None, constexprs,
    dtype, options), with its own arguments packed; only a case's first call binds."""
    fake = FakeDriver().install(monkeypatch)
    if raw:
        proto = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)
        callback = proto(lambda config, fn, params, extra: 0)
        monkeypatch.setattr(driver, "raw_launch_function", lambda: callback)
        monkeypatch.setattr(driver, "get_function", lambda module, name: 0xF00D)
    for table in (bias_kernel.cache, bias_kernel.where, bias_kernel._launches):
        table.clear()
    binds = []
    real_bind = bias_kernel.binder.bind
    monkeypatch.setattr(bias_kernel.binder, "bind", lambda *a: binds.append(a) or real_bind(*a))
    order = [case for case in _cases() for _ in range(3)]
    random.shuffle(order)
    seen = set()  # bind keys launched before
    for name, make in order:
        args, kwargs = make()
        n_binds = len(binds)
        ck = bias_kernel[(3,)](*args, **kwargs)
        bound = real_bind(args, kwargs)
        assert bias_kernel.cache[bound.key] is ck, name
        assert _packed_arguments(ck, raw and bound.key in seen) == bound.args, name
        assert len(binds) == n_binds + (bound.key not in seen), name  # only a key's first call binds
        seen.add(bound.key)
    assert len(bias_kernel.cache) == len(_cases()) - 1  # "by keyword" is "base"
    # with cuLaunchKernelEx, only each key's first call goes through `run` and the binding
    assert len(fake.launches) == (len(seen) if raw else len(order))


@needs_cuda_python
def test_warm_launches_refuse_what_bind_refuses(monkeypatch, fresh_add_kernel):
    """A warm kernel still checks every launch: dtypes it can't pass, arrays on two GPUs or on
    the host, missing or repeated arguments, grids past the GPU's limits."""
    FakeDriver().install(monkeypatch)
    x, y, out = (FakeTensor(0x7F0000000000 + 0x1000 * i) for i in range(3))
    add_kernel[(1,)](x, y, out, 64, BLOCK=256)
    with pytest.raises(args_module.ArgumentError, match="complex64 can't be passed") as info:
        add_kernel[(1,)](x, FakeTensor(0x7F0000010000, FakeDtype("complex64")), out, 64, BLOCK=256)
    chain = [info.value]
    while chain[-1].__context__ is not None:
        chain.append(chain[-1].__context__)
    assert not any(isinstance(e, KeyError) for e in chain)  # not raised while handling the lookup's miss
    with pytest.raises(args_module.ArgumentError, match="arrays on different GPUs"):
        add_kernel[(1,)](x, y, FakeTensor(0x7F0000010000, device=1), 64, BLOCK=256)
    with pytest.raises(args_module.ArgumentError, match="is a CPU array"):
        add_kernel[(1,)](x, y, np.zeros(64, np.float32), 64, BLOCK=256)
    with pytest.raises(TypeError, match="is missing 'n'"):
        add_kernel[(1,)](x, y, out, BLOCK=256)
    with pytest.raises(TypeError, match="takes 5 arguments but 6 were given"):
        add_kernel[(1,)](x, y, out, 64, 256, 7)
    with pytest.raises(TypeError, match="multiple values for argument 'n'"):
        add_kernel[(1,)](x, y, out, 64, n=64, BLOCK=256)
    with pytest.raises(TypeError, match="unexpected argument 'BLOK'"):
        add_kernel[(1,)](x, y, out, 64, BLOK=256)
    with pytest.raises(args_module.ArgumentError, match="above the GPU launch limit"):
        add_kernel[(2**31,)](x, y, out, 64, BLOCK=256)
    with pytest.raises(TypeError, match="with a grid"):
        add_kernel[None](x, y, out, 64, BLOCK=256)


@needs_cuda_python
def test_one_grid_object_launches_what_it_holds_at_each_call(monkeypatch, fresh_add_kernel):
    """`kernel[grid]` is kept for the last grid tuple (not for a grid function, which may hold
    tensors); a list changed in place, or a grid function, still gives each launch its own
    grid."""
    fake = FakeDriver().install(monkeypatch)
    x, y, out = (FakeTensor(0x7F0000000000 + 0x1000 * i) for i in range(3))
    constant = (3,)
    assert add_kernel[constant] is add_kernel[constant]
    grid = [2]
    for size in (2, 5, 7):
        grid[0] = size
        add_kernel[grid](x, y, out, 64, BLOCK=256)
        assert fake.launches[-1]["grid"] == (size, 1, 1)
    seen = []

    def by_meta(meta):
        seen.append(meta)
        return (kl.cdiv(meta["n"], meta["BLOCK"]), 2)

    add_kernel[by_meta](x, y, out, 1024, BLOCK=256)
    assert fake.launches[-1]["grid"] == (4, 2, 1)
    assert seen[-1] == {"x_ptr": x, "y_ptr": y, "out_ptr": out, "n": 1024, "BLOCK": 256}
    for size in (5, 2**31 - 1):  # a bare int is a 1-D grid, read as it is when valid
        add_kernel[size](x, y, out, 64, BLOCK=256)
        assert fake.launches[-1]["grid"] == (size, 1, 1)
    add_kernel.run(x, y, out, 64, BLOCK=256, grid=(6,))
    assert fake.launches[-1]["grid"] == (6, 1, 1)
    count = len(fake.launches)
    add_kernel[(0,)](x, y, out, 64, BLOCK=256)  # an empty grid launches nothing
    add_kernel[(3, 0)](x, y, out, 64, BLOCK=256)
    add_kernel[0](x, y, out, 64, BLOCK=256)
    assert len(fake.launches) == count
    with pytest.raises(args_module.ArgumentError, match=r"grid -1 has a negative dimension"):
        add_kernel[-1](x, y, out, 64, BLOCK=256)
    with pytest.raises(args_module.ArgumentError, match=r"grid 2147483648: dimension x .* above the GPU launch limit"):
        add_kernel[2**31](x, y, out, 64, BLOCK=256)
    with pytest.raises(args_module.ArgumentError, match=r"grid \(-2,\) has a negative dimension"):
        add_kernel[(-2,)](x, y, out, 64, BLOCK=256)
    assert len(fake.launches) == count


@kl.jit
def clashing_names_kernel(c, p, error, kernel, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(p + offs, tl.load(c + offs) * error + kernel)


@kl.jit
def option_named_kernel(x_ptr, num_warps, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs) * num_warps)


@needs_cuda_python
def test_parameters_named_like_the_generated_codes_names_or_options(monkeypatch):
    """The warm path's own names can't clash with a kernel's; a parameter named like a launch
    option (which sets both, as in Triton) leaves every launch of that kernel to bind."""
    monkeypatch.setattr(FakeDriver, "launch", _recording_launch(["Q", "Q", "f", "i"]))
    fake = FakeDriver().install(monkeypatch)
    c, p = FakeTensor(0x7F0000000000), FakeTensor(0x7F0000001000)
    for scale, shift in [(2.5, 7), (0.5, -3)]:
        clashing_names_kernel[(2,)](c, p, scale, shift, BLOCK=128)
        assert fake.launches[-1]["args"] == [c.ptr, p.ptr, scale, shift]
    assert clashing_names_kernel.binder.fast((c, p, 2.5, 7), {"BLOCK": 128}) is not None
    assert option_named_kernel.binder.warm(option_named_kernel) is None
    x = FakeTensor(0x7F0000002000)
    monkeypatch.setattr(FakeDriver, "launch", _recording_launch(["Q", "i"]))  # its two parameters
    fake = FakeDriver().install(monkeypatch)  # the installed driver reads with the formats given
    binds = []
    real_bind = option_named_kernel.binder.bind
    monkeypatch.setattr(option_named_kernel.binder, "bind", lambda *a: binds.append(a) or real_bind(*a))
    for _ in range(2):
        ck = option_named_kernel[(1,)](x, 4, BLOCK=128)
    assert len(binds) == 2 and ck.metadata.options.num_warps == 4
    assert fake.launches[-1]["args"] == [x.ptr, 4]


def _recording_launch(formats):
    """A FakeDriver.launch reading parameters of the given struct formats back."""

    def launch(self, fn, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        slots = (ctypes.c_void_p * len(formats)).from_address(params)
        args = [struct.unpack(f"={f}", ctypes.string_at(slots[i], struct.calcsize(f)))[0] for i, f in enumerate(formats)]
        self.launches.append({"fn": fn, "grid": (gx, gy, gz), "stream": stream, "args": args})
        return (CUresult(0),)

    return launch


@needs_cuda_python
@pytest.mark.parametrize("debug", [False, True], ids=["binding", "general path"])
def test_constants_the_key_made_are_left_out_of_the_launch(monkeypatch, debug):
    """The warm path passes every runtime value; the launch leaves out those its key made
    constants (None, an int 1), through the binding and on the general path (a debug kernel
    synchronizes after each launch)."""
    monkeypatch.setattr(FakeDriver, "launch", _recording_launch(["Q", "Q", "f"]))  # x, out, scale
    fake = FakeDriver().install(monkeypatch, stream=0x5E0)
    fake_raw = driver._driver()
    fake_raw.cuStreamSynchronize = lambda stream: (CUresult(0),)
    bias_kernel.cache.clear()
    bias_kernel._launches.clear()
    rng = random.Random()
    for _ in range(3):
        x, out = FakeTensor(0x7F0000000000 + 0x100 * rng.randrange(64)), FakeTensor(0x7F0000100000)
        scale = rng.uniform(-4, 4)
        ck = bias_kernel[(2,)](x, None, out, 1, scale, BLOCK=128, debug=debug)
        assert ck.metadata.options.debug == debug
        assert fake.launches[-1]["args"] == [x.ptr, out.ptr, struct.unpack("=f", struct.pack("=f", scale))[0]]
        assert fake.launches[-1]["stream"] == 0x5E0
    assert len(fake.launches) == 3  # every launch through the binding (no cuLaunchKernelEx here)
    bias_kernel.cache.clear()
    bias_kernel._launches.clear()
