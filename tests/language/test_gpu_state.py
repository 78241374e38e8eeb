"""tl.assume, tl.extra.cuda (gdc_wait, gdc_launch_dependents, globaltimer, smid) and the
launch options launch_cooperative_grid and launch_pdl."""

import numpy as np
import pytest
from conftest import assert_equal, poison, random_array

import kernellab as kl
import kernellab.language as tl
from kernellab.backends.interpreter.errors import DeviceAssertionError


@kl.jit
def assume_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    tl.assume(pid >= 0)
    tl.assume(n > 0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    tl.assume(offs >= 0)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 3, mask=mask)


def test_assume(launch, rng):
    x = random_array(rng, 1000, np.int32)
    out = poison(1000, np.int32)
    launch(assume_kernel, (8,), x, out, 1000, BLOCK=128)
    assert_equal(out, x * 3)


def test_broken_assumption_is_named_on_the_interpreter():
    x = np.zeros(4, np.int32)
    with pytest.raises(DeviceAssertionError, match=r"tl.assume's condition is false \(program"):
        assume_kernel[(1,)](x, x, 0, BLOCK=4)


@kl.jit
def registers_kernel(out_ptr, times_ptr):
    tl.extra.cuda.gdc_wait()
    start = tl.extra.cuda.globaltimer()
    tl.store(out_ptr + tl.program_id(0), tl.extra.cuda.smid())
    tl.extra.cuda.gdc_launch_dependents()
    tl.store(times_ptr + tl.program_id(0), tl.extra.cuda.globaltimer() - start)


def test_extra_cuda_on_the_interpreter():
    sm = poison(4, np.int32)
    elapsed = np.full(4, -1, np.int64)
    registers_kernel[(4,)](sm, elapsed)
    assert_equal(sm, np.zeros(4, np.int32))  # the interpreter is one multiprocessor
    assert (elapsed >= 0).all()


@pytest.mark.parametrize(("target", "dependent_launch"), [("sm_80", False), ("sm_90", True)])
def test_extra_cuda_lowering(target, dependent_launch):
    ck = kl.compile(registers_kernel, signature="*i32,*i64", target=target)
    ptx = ck.asm["ptx"]
    assert "%globaltimer" in ptx and "%smid" in ptx
    assert ("griddepcontrol.wait" in ptx) == dependent_launch
    assert ("griddepcontrol.launch_dependents" in ptx) == dependent_launch


def test_assume_becomes_llvm_assume():
    ck = kl.compile(
        assume_kernel, signature="*i32,*i32,i32", constexprs={"BLOCK": 128}, target="sm_90"
    )
    assert "llvm.assume" in ck.asm["llir"]


@kl.jit
def grid_barrier_kernel(counter_ptr, out_ptr):
    """Every program arrives at a grid-wide barrier (an atomic counter) before writing; only
    a cooperative launch guarantees all programs are resident, so none spins forever."""
    tl.atomic_add(counter_ptr, 1)
    while tl.atomic_add(counter_ptr, 0) < tl.num_programs(0):
        pass
    tl.store(out_ptr + tl.program_id(0), tl.atomic_add(counter_ptr, 0))


def test_launch_options_are_accepted_on_the_interpreter(rng):
    """The interpreter runs programs together (no residency to guarantee) and kernels one
    after another (nothing to overlap): both options are accepted and change nothing. (A
    spinning grid barrier, as above, is for the GPU: the interpreter runs spin loops one
    program at a time.)"""
    x = random_array(rng, 300, np.int32)
    out = poison(300, np.int32)
    assume_kernel[(3,)](x, out, 300, BLOCK=128, launch_cooperative_grid=True, launch_pdl=True)
    assert_equal(out, x * 3)


def _torch_cuda():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    return torch


@pytest.mark.gpu
def test_cooperative_grid_barrier_on_gpu():
    torch = _torch_cuda()
    programs = torch.cuda.get_device_properties(0).multi_processor_count
    counter = torch.zeros(1, dtype=torch.int32, device="cuda")
    out = torch.full((programs,), -1, dtype=torch.int32, device="cuda")
    grid_barrier_kernel[(programs,)](counter, out, launch_cooperative_grid=True, num_warps=1)
    torch.cuda.synchronize()
    assert torch.equal(out.cpu(), torch.full((programs,), programs, dtype=torch.int32))


@kl.jit
def produce_kernel(out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, offs * 2, mask=offs < n)
    tl.extra.cuda.gdc_launch_dependents()


@kl.jit
def consume_kernel(in_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.extra.cuda.gdc_wait()  # the producer's stores are visible after this
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(in_ptr + offs, mask=mask) + 1, mask=mask)


@pytest.mark.gpu
def test_programmatic_dependent_launch_on_gpu():
    torch = _torch_cuda()
    n = 1 << 20
    middle = torch.full((n,), -7, dtype=torch.int32, device="cuda")
    out = torch.full((n,), -7, dtype=torch.int32, device="cuda")
    grid = (n // 1024,)
    for _ in range(3):  # warm launches included
        produce_kernel[grid](middle, n, BLOCK=1024, launch_pdl=True)
        consume_kernel[grid](middle, out, n, BLOCK=1024, launch_pdl=True)
    torch.cuda.synchronize()
    expected = torch.arange(n, dtype=torch.int32) * 2 + 1
    assert torch.equal(out.cpu(), expected)


@pytest.mark.gpu
def test_extra_cuda_registers_on_gpu():
    torch = _torch_cuda()
    programs = 64
    sm = torch.full((programs,), -1, dtype=torch.int32, device="cuda")
    elapsed = torch.full((programs,), -1, dtype=torch.int64, device="cuda")
    registers_kernel[(programs,)](sm, elapsed)
    torch.cuda.synchronize()
    count = torch.cuda.get_device_properties(0).multi_processor_count
    assert ((sm >= 0) & (sm < count)).all() and (elapsed >= 0).all()
