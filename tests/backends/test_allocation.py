"""kl.set_allocator: Triton's call for the global memory a launch needs at run time (the
launcher's use of it: tests/backends/nvidia/test_tma.py)."""

import numpy as np
import pytest

import kernellab as kl
import kernellab.language as tl
from kernellab.backends import allocation


@pytest.fixture(autouse=True)
def _restore_allocator():
    saved = allocation._allocator
    yield
    allocation._allocator = saved


@kl.jit
def device_descriptor_copy(src, dst, M, N, BM: tl.constexpr, BN: tl.constexpr):
    s = tl.make_tensor_descriptor(src, [M, N], [N, 1], [BM, BN])
    d = tl.make_tensor_descriptor(dst, [M, N], [N, 1], [BM, BN])
    i, j = tl.program_id(0) * BM, tl.program_id(1) * BN
    d.store([i, j], s.load([i, j]) + 1)


def test_the_allocator_set_is_the_one_launches_use():
    def alloc_fn(size, alignment, stream):
        return np.empty(size, np.int8)

    kl.set_allocator(alloc_fn)
    assert allocation.allocator() is alloc_fn
    kl.set_allocator(None)  # back to the launcher's own buffers
    assert allocation.allocator() is None


def test_the_interpreter_needs_no_allocation():
    """The interpreter reads descriptors as masked loads and stores: a kernel making
    descriptors runs whatever allocator is set, and never calls it."""
    rng = np.random.default_rng()
    a = rng.standard_normal((40, 24)).astype(np.float32)
    for allocator in (None, lambda *request: pytest.fail(f"allocated {request}")):
        allocation._allocator = allocator
        b = np.full_like(a, np.nan)
        device_descriptor_copy[(3, 2)](a, b, 40, 24, BM=16, BN=16)
        np.testing.assert_array_equal(b, a + 1)


def test_set_allocator_takes_a_function():
    with pytest.raises(TypeError, match=r"function \(size, alignment, stream\)"):
        kl.set_allocator(1024)
