"""The GPU launcher's packing, resource checks and errors, against a fake CUDA driver.

The fake driver "runs" the vector-add and scale-bias kernels on host memory: it reads the
kernelParams array exactly as the real driver would (pointers to each parameter's bytes), so
these tests check the argument packing end to end without a GPU.
"""

import ctypes
import struct
import types

import numpy as np
import pytest
from llvm_samples import SCALE_BIAS, VECTOR_ADD

import kernellab as kl
from kernellab.backends.nvidia import driver
from kernellab.backends.nvidia.launcher import CudaLauncher, OutOfResources, launch_config, plan_parameters
from kernellab.backends.arguments import ArgumentError

try:
    from cuda.bindings.driver import CUresult
except ImportError:  # pragma: no cover
    CUresult = None

pytestmark = pytest.mark.skipif(CUresult is None, reason="cuda-python is not installed")

KB = 1024


class HostArray:
    """A 'GPU array' whose __cuda_array_interface__ points at host memory (for the fake driver)."""

    def __init__(self, array: np.ndarray):
        self.array = array

    @property
    def __cuda_array_interface__(self):
        return {"shape": self.array.shape, "typestr": self.array.dtype.str,
                "data": (self.array.ctypes.data, False), "version": 3}  # fmt: skip


def _read(address: int, ctype):
    return ctype.from_address(address).value


def _host(address: int, n: int) -> np.ndarray:
    return np.ctypeslib.as_array((ctypes.c_float * n).from_address(address))


class FakeDriver:
    """Stands in for the driver functions the launcher uses; records every launch."""

    def __init__(self, max_threads=1024, static_shared=0, launch_result=0):
        self.launches = []
        self.attributes_set = []
        self.loaded = []
        self.max_threads = max_threads
        self.static_shared = static_shared
        self.launch_result = launch_result
        self.info = driver.DeviceInfo(
            index=0, name="Fake H100", capability=(9, 0), sm_count=132, max_threads_per_block=1024,
            max_shared_per_block=48 * KB, max_shared_per_block_optin=227 * KB,
            shared_per_sm=228 * KB, registers_per_sm=65536, registers_per_block=65536,
            max_grid=(2**31 - 1, 65535, 65535),
        )  # fmt: skip

    def install(self, monkeypatch):
        fake = self
        raw = types.SimpleNamespace(
            cuLaunchKernel=self.launch, CUresult=CUresult,
            cuStreamSynchronize=lambda stream: (CUresult(0),),
            cuGetErrorString=lambda code: (_ for _ in ()).throw(RuntimeError("no driver")),
        )  # fmt: skip
        monkeypatch.setattr(driver, "_driver", lambda: raw)
        monkeypatch.setattr(driver, "_lost", None)  # a fresh context: no fault seen yet
        monkeypatch.setattr(driver, "device_info", lambda index=0: fake.info)
        monkeypatch.setattr(driver, "make_current", lambda index=0: None)
        monkeypatch.setattr(driver, "load_module", lambda cubin, index=0: fake.loaded.append(cubin) or "module")
        monkeypatch.setattr(driver, "get_function", lambda module, name: name)
        attrs = {
            "CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK": lambda: fake.max_threads,
            "CU_FUNC_ATTRIBUTE_NUM_REGS": lambda: 32,
            "CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES": lambda: fake.static_shared,
        }
        monkeypatch.setattr(driver, "function_attribute", lambda fn, name: attrs[name]())
        monkeypatch.setattr(driver, "set_function_attribute", self.set_attribute)
        return self

    def set_attribute(self, fn, name, value):
        if value + self.static_shared > self.info.max_shared_per_block_optin:  # as the driver does
            raise driver.CudaError("cuFuncSetAttribute", 1, "CUDA_ERROR_INVALID_VALUE")
        self.attributes_set.append((name, value))

    def launch(self, fn, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        assert extra == 0
        self.launches.append(dict(fn=fn, grid=(gx, gy, gz), block=(bx, by, bz), shared=shared,
                                  stream=stream, params=params))  # fmt: skip
        if self.launch_result:
            return (CUresult(self.launch_result),)
        slots = (ctypes.c_void_p * 6).from_address(params)
        threads = gx * bx
        if fn == "add_kernel":
            x, y, out = (_read(slots[i], ctypes.c_uint64) for i in range(3))
            n = _read(slots[3], ctypes.c_int32)
            m = min(n, threads)
            _host(out, m)[:] = _host(x, m) + _host(y, m)
        elif fn == "scale_bias":
            x = _read(slots[0], ctypes.c_uint64)
            flag = _read(slots[1], ctypes.c_int8)
            scale = _read(slots[2], ctypes.c_float)
            out = _read(slots[3], ctypes.c_uint64)
            n = _read(slots[4], ctypes.c_int64)
            bias = _read(slots[5], ctypes.c_double)
            m = min(n, threads)
            _host(out, m)[:] = _host(x, m) * np.float32(scale) + np.float32(bias) * np.float32(flag)
        return (CUresult(0),)


@pytest.fixture(scope="module")
def compiled_add():
    return kl.compile(VECTOR_ADD, target="sm_90", num_warps=4)


@pytest.fixture
def add_ck(compiled_add):
    compiled_add._launcher = None  # each test gets a launcher bound to its own fake driver
    return compiled_add


def test_vector_add_runs_through_the_packed_parameters(monkeypatch, add_ck):
    fake = FakeDriver().install(monkeypatch)
    rng = np.random.default_rng()
    n = 1000
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    out = np.full(n, np.nan, np.float32)
    add_ck[(8,)](HostArray(x), HostArray(y), HostArray(out), n)
    np.testing.assert_array_equal(out, x + y)
    (launch,) = fake.launches
    assert launch["grid"] == (8, 1, 1) and launch["block"] == (128, 1, 1)
    assert launch["shared"] == 0 and launch["stream"] == 0  # no torch: the default stream
    assert fake.loaded == [add_ck.asm["cubin"]]
    add_ck[(8,)](HostArray(x), HostArray(y), HostArray(out), n)
    assert len(fake.loaded) == 1  # the module is loaded once


def test_scalars_of_every_width_are_packed_at_their_offsets(monkeypatch):
    fake = FakeDriver().install(monkeypatch)
    ck = kl.compile(SCALE_BIAS, target="sm_90", num_warps=2)
    rng = np.random.default_rng()
    n = 200
    x = rng.standard_normal(n).astype(np.float32)
    out = np.full(n, np.nan, np.float32)
    scale, bias, flag = float(rng.uniform(0.5, 2)), float(rng.uniform(-3, 3)), -3
    # resumed from LLVM IR: the signature is the PTX types (u64,u8,fp32,u64,u64,fp64)
    ck.launch([x.ctypes.data, flag & 0xFF, scale, out.ctypes.data, n, bias], (4, 1, 1))
    expected = x * np.float32(scale) + np.float32(bias) * np.float32(flag)
    np.testing.assert_allclose(out, expected, rtol=1e-6)
    assert fake.launches[0]["block"] == (64, 1, 1)


def test_parameter_plan_aligns_each_argument():
    fmt, offsets, total, converters, extras = plan_parameters(
        ["u64", "u8", "f32", "u64", "u16", "f64", "u64"], ["*fp32", "i8", "fp32", "i64", "bf16", "fp64"]
    )
    assert offsets == [0, 8, 12, 16, 24, 32, 40] and total == 48
    assert extras == [0]  # a trailing parameter the signature doesn't know is passed as 0
    assert [i for i, _ in converters] == [4]  # bf16 goes as its bits
    assert fmt == "=Qb3xfqH6xdQ"
    with pytest.raises(ValueError, match="PTX has 2 parameters but its signature has 3"):
        plan_parameters(["u64", "u32"], ["*fp32", "i32", "i32"])


def test_the_folded_launch_config_is_the_one_cuda_reads():
    """launch_config folds the fixed fields into words: packed with a launch's grid and stream,
    the bytes are the CUlaunchConfig (driver.LAUNCH_CONFIG_FORMAT) with every field in place."""
    rng = np.random.default_rng()
    for attributes in (0, 1, 2):
        threads, shared = int(rng.integers(1, 33)) * 32, int(rng.integers(0, 228 * KB))
        attrs = int(rng.integers(1, 2**47)) if attributes else 0
        grid = tuple(int(v) for v in rng.integers(1, 65536, 3))
        stream = int(rng.integers(1, 2**63))
        fmt, before, after = launch_config(threads, shared, attrs, attributes)
        assert len(before) + len(after) + 4 < 12  # fewer values than the config's fields
        packed = struct.pack(fmt, *grid, *before, stream, *after)
        expected = struct.pack(driver.LAUNCH_CONFIG_FORMAT, *grid, threads, 1, 1, shared, stream, attrs, attributes)
        assert packed == expected


def test_large_dynamic_shared_memory_raises_the_limit(monkeypatch):
    fake = FakeDriver(static_shared=1 * KB).install(monkeypatch)
    art = _artifact(shared=100 * KB)
    CudaLauncher(art).function(0)
    assert fake.attributes_set == [("CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES", 100 * KB)]
    fake.attributes_set.clear()
    CudaLauncher(_artifact(shared=40 * KB)).function(0)
    assert fake.attributes_set == []  # 41 KB fits in the default 48 KB


@pytest.mark.parametrize("dynamic, static", [(226 * KB, 2 * KB), (228 * KB, 0)])
def test_too_much_shared_memory_says_what_to_reduce(monkeypatch, dynamic, static):
    FakeDriver(static_shared=static).install(monkeypatch)
    with pytest.raises(OutOfResources) as info:
        CudaLauncher(_artifact(shared=dynamic)).function(0)
    message = str(info.value)
    assert f"needs {228 * KB}, the GPU allows {227 * KB}" in message
    assert f"({dynamic} dynamic + {static} static.)" in message
    assert "BLOCK sizes or num_stages" in message


def test_too_many_threads_for_the_registers_says_what_to_reduce(monkeypatch):
    FakeDriver(max_threads=256).install(monkeypatch)
    with pytest.raises(OutOfResources) as info:
        CudaLauncher(_artifact(num_warps=16)).function(0)
    message = str(info.value)
    assert "threads per block: needs 512, the GPU allows 256" in message
    assert "num_warps <= 8" in message


def test_cpu_array_passed_to_a_gpu_kernel_is_named(monkeypatch, add_ck):
    FakeDriver().install(monkeypatch)
    x = np.ones(4, np.float32)
    with pytest.raises(ArgumentError) as info:
        add_ck[(1,)](x, x, x, 4)
    assert "compiled for sm_90 (the GPU) but 'arg0' is a CPU array" in str(info.value)


def test_gpu_arrays_passed_to_an_interpreter_kernel_are_refused():
    @kl.jit
    def copy(src, dst, BLOCK: kl.language.constexpr):
        offs = kl.language.arange(0, BLOCK)
        kl.language.store(dst + offs, kl.language.load(src + offs))

    ck = kl.compile(copy, signature="*fp32,*fp32", constexprs={"BLOCK": 4})
    a = HostArray(np.ones(4, np.float32))
    with pytest.raises(ArgumentError, match="compiled for the interpreter but got GPU arrays"):
        ck[(1,)](a, a)


def test_illegal_address_reported_at_launch_says_to_restart(monkeypatch, add_ck):
    FakeDriver(launch_result=700).install(monkeypatch)  # CUDA_ERROR_ILLEGAL_ADDRESS
    x = HostArray(np.ones(4, np.float32))
    with pytest.raises(driver.CudaError) as info:
        add_ck[(1,)](x, x, x, 4)
    error = info.value
    assert error.sticky and error.name == "CUDA_ERROR_ILLEGAL_ADDRESS"
    message = str(error)
    assert message.startswith("add_kernel: cuLaunchKernel failed: CUDA_ERROR_ILLEGAL_ADDRESS (700)")
    assert "The CUDA context is lost" in message and "restart the kernel" in message


def test_grid_too_large_is_refused_before_the_driver(monkeypatch, add_ck):
    fake = FakeDriver(launch_result=1).install(monkeypatch)  # CUDA_ERROR_INVALID_VALUE if reached
    x = HostArray(np.ones(4, np.float32))
    with pytest.raises(ArgumentError, match="dimension y is 70000, above the GPU launch limit of 65535"):
        add_ck[(1, 70000)](x, x, x, 4)
    assert fake.launches == []


def test_empty_grid_launches_nothing(monkeypatch, add_ck):
    fake = FakeDriver().install(monkeypatch)
    x = HostArray(np.ones(4, np.float32))
    add_ck[(0,)](x, x, x, 4)
    assert fake.launches == []


def test_no_driver_is_detected_without_crashing():
    if driver.available():
        pytest.skip("a GPU is visible here")
    assert driver.visible_arch() is None
    with pytest.raises(driver.NoDriverError, match="NVIDIA driver could not be loaded"):
        driver._tls.__dict__.pop("initialized", None)
        driver.init()


def _artifact(shared=0, num_warps=4):
    from kernellab.backends.metadata import KernelMetadata
    from kernellab.backends.nvidia.backend import CudaArtifact
    from kernellab.language.signature import Signature

    metadata = KernelMetadata(
        name="k", target="sm_90", signature=Signature.parse("*fp32,i32"), params=["u64", "u32"],
        shared=shared, threads_per_block=num_warps * 32,
    )
    return CudaArtifact("k", cubin=b"\x7fELF fake", metadata=metadata)
