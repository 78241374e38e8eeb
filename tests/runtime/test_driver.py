"""`kl.runtime.driver.active`: the host calls Triton's tutorials make before their first kernel,
answered for a GPU (the driver's attributes) and for the interpreter (documented values)."""

import os
import sys
import types

import pytest

import kernellab as kl
from kernellab.backends.nvidia import driver as cuda
from kernellab.runtime import driver

A100 = cuda.DeviceInfo(
    index=1, name="NVIDIA A100-SXM4-80GB", capability=(8, 0), sm_count=108,
    max_threads_per_block=1024, max_shared_per_block=49152, max_shared_per_block_optin=166912,
    shared_per_sm=167936, registers_per_sm=65536, registers_per_block=65536,
    max_grid=(2**31 - 1, 65535, 65535),
)  # fmt: skip


@pytest.fixture
def no_gpu(monkeypatch):
    monkeypatch.setattr(cuda, "available", lambda: False)


@pytest.fixture
def a100_as_device_1(monkeypatch):
    """A GPU seen through the driver module: device 1 is current and is an A100."""
    monkeypatch.setattr(cuda, "available", lambda: True)
    monkeypatch.setattr(cuda, "current_device_index", lambda: 1)
    monkeypatch.setattr(cuda, "device_info", lambda index: {1: A100}[index])


@pytest.fixture
def fake_torch(monkeypatch):
    """A torch whose device() records its arguments (torch is not needed to test the choice)."""
    module = types.ModuleType("torch")
    module.device = lambda *args: ("device", *args)
    monkeypatch.setitem(sys.modules, "torch", module)


def test_reached_as_triton_spells_it():
    assert kl.runtime.driver.active is driver.active


def test_the_interpreter_answers_as_the_default_target(no_gpu):
    active = driver.active
    assert active.is_interpreter() and active.get_current_device() == 0
    target = active.get_current_target()
    assert (target.backend, target.arch, target.warp_size) == ("cuda", 90, 32)
    expected = {
        "multiprocessor_count": os.cpu_count() or 1,
        "max_num_regs": 65536,
        "max_shared_mem": 232448,
        "warpSize": 32,
    }
    assert active.utils.get_device_properties(0) == expected
    assert active.utils.get_device_properties(None) == expected  # torch.device("cpu").index


def test_a_gpu_answers_from_its_driver_attributes(a100_as_device_1):
    active = driver.active
    assert not active.is_interpreter() and active.get_current_device() == 1
    assert active.get_current_target() == driver.GPUTarget("cuda", 80, 32)
    expected = {
        "multiprocessor_count": 108,
        "max_num_regs": 65536,
        "max_shared_mem": 166912,
        "warpSize": 32,
    }
    assert active.utils.get_device_properties(1) == expected
    assert active.utils.get_device_properties(None) == expected  # the current device


def test_active_torch_device_is_the_cpu_without_a_gpu(no_gpu, fake_torch):
    assert driver.active.get_active_torch_device() == ("device", "cpu")


def test_active_torch_device_is_the_current_cuda_device(a100_as_device_1, fake_torch):
    assert driver.active.get_active_torch_device() == ("device", "cuda", 1)


def test_active_torch_device_without_torch_says_what_to_do(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(ImportError, match="pass numpy arrays to kernels"):
        driver.active.get_active_torch_device()


@pytest.mark.gpu
def test_a_real_gpu_matches_torch():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device visible")
    index = torch.cuda.current_device()
    props = driver.active.utils.get_device_properties(index)
    sm_count = torch.cuda.get_device_properties(index).multi_processor_count
    assert props["multiprocessor_count"] == sm_count
    major, minor = torch.cuda.get_device_capability(index)
    assert driver.active.get_current_target().arch == major * 10 + minor
    assert driver.active.get_active_torch_device() == torch.device("cuda", index)


def test_init_handles_gives_an_interpreter_kernel_the_resources_of_the_active_target(rng):
    """Tutorial 02 sizes its grid from `kernel.n_regs` and `kernel.metadata.shared` after
    `warmup`: on the interpreter they are those of the compile for driver.active's target."""
    import numpy as np

    import kernellab as kl
    import kernellab.language as tl

    @kl.jit
    def row_max(x_ptr, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offs, mask=offs < n, other=-float("inf"))
        tl.store(x_ptr + offs, x - tl.max(x, 0), mask=offs < n)

    x = rng.random(100, dtype=np.float32)
    kernel = row_max.warmup(x, 100, BLOCK=128, num_warps=8, grid=(1,))
    assert kernel.metadata.target == "interpreter" and kernel.metadata.registers is None
    kernel._init_handles()
    gpu = kl.compile(row_max, signature="*fp32,i32", constexprs={"BLOCK": 128}, num_warps=8, target="cuda")
    assert kernel.n_regs == gpu.metadata.registers > 0 and kernel.n_spills == gpu.metadata.spills
    assert kernel.metadata.shared == gpu.metadata.shared > 0  # the cross-warp max goes through shared memory
    assert kernel.metadata["resources_of"] == gpu.metadata.target
