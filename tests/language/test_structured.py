"""Tuples in kernels: tuple and NamedTuple kernel arguments, tuples carried through loops and
runtime ifs, passed to and returned (nested) from @jit helpers; host TensorDescriptor
arguments; pointer_type casts; conditional expressions over calls that return nothing."""

from typing import NamedTuple

import numpy as np
import pytest
from conftest import assert_close, assert_equal, f64, poison, random_array

import kernellab as kl
import kernellab.language as tl
from kernellab.tools.tensor_descriptor import TensorDescriptor


class Scaled(NamedTuple):
    ptr: object
    scale: float


@kl.jit
def axpy_kernel(io, src, n, BLOCK: tl.constexpr):
    """io = (x_ptr, out_ptr), src = Scaled(y_ptr, a): out = x + a * y."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(io[0] + offs, mask=mask)
    y = tl.load(src.ptr + offs, mask=mask)
    tl.store(io[1] + offs, x + src.scale * y, mask=mask)


def test_tuple_and_namedtuple_arguments(rng):
    n = 1000
    x, y = random_array(rng, n, np.float32), random_array(rng, n, np.float32)
    out = poison(n, np.float32)
    axpy_kernel[(8,)]((x, out), Scaled(y, 0.5), n, BLOCK=128)
    assert_close(out, f64(x) + 0.5 * f64(y), rtol=2**-23)


@pytest.mark.gpu
def test_tuple_and_namedtuple_arguments_on_gpu(rng):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    n = 1000
    x, y = (torch.from_numpy(random_array(rng, n, np.float32)).cuda() for _ in range(2))
    out = torch.full_like(x, float("nan"))
    axpy_kernel[(8,)]((x, out), Scaled(y, 0.5), n, BLOCK=128)
    expected = f64(x.cpu().numpy()) + 0.5 * f64(y.cpu().numpy())
    assert_close(out.cpu().numpy(), expected, rtol=2**-23)


@kl.jit
def _step(state, k):
    """((sum, count), last) → ((sum + k·x, count + 1), k·x): a nested tuple in and out."""
    (total, count), x = state
    return (total + x * k, count + 1), x


@kl.jit
def tuple_flow_kernel(x_ptr, out_ptr, steps, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    state = ((tl.zeros((BLOCK,), tl.float32), 0), x)
    for k in range(steps):
        state = _step(state, k)
    (total, count), last = state
    if count > 2:  # a runtime if merging a tuple
        pair = (total, last)
    else:
        pair = (last, total)
    tl.store(out_ptr + offs, pair[0] * 2 + pair[1])
    tl.store(out_ptr + BLOCK + offs, tl.zeros((BLOCK,), tl.float32) + count)


@pytest.mark.parametrize("steps", [1, 5])
def test_tuples_through_loops_ifs_and_helpers(launch, rng, steps):
    x = random_array(rng, 64, np.float32, low=-1.0, high=1.0)
    out = poison(128, np.float32)
    launch(tuple_flow_kernel, (1,), x, out, steps, BLOCK=64)
    total = sum(k * f64(x) for k in range(steps))
    first, second = (total, f64(x)) if steps > 2 else (f64(x), total)
    assert_close(out[:64], 2 * first + second, atol=1e-5)
    assert_equal(out[64:], np.full(64, steps, np.float32))


@kl.jit
def descriptor_argument_kernel(src, dst, BM: tl.constexpr, BN: tl.constexpr):
    i = tl.program_id(0) * BM
    j = tl.program_id(1) * BN
    dst.store([i, j], src.load([i, j]) * 2 - 1)


def test_host_tensor_descriptor_arguments(rng):
    a = random_array(rng, (50, 70), np.float32)
    b = poison((50, 70), np.float32)
    src = TensorDescriptor.from_tensor(a, [16, 32])
    dst = TensorDescriptor.from_tensor(b, [16, 32])
    descriptor_argument_kernel[(4, 3)](src, dst, BM=16, BN=32)
    assert_equal(b, a * 2 - 1)


def test_host_tensor_descriptor_compiles_for_gpus(rng):
    a = np.zeros((64, 64), np.float32)
    args = (TensorDescriptor.from_tensor(a, [16, 32]), TensorDescriptor.from_tensor(a, [16, 32]))
    bound = descriptor_argument_kernel.binder.bind(args, {"BM": 16, "BN": 32})
    signature, constexprs, attrs = descriptor_argument_kernel.binder.compile_args(bound)
    assert list(signature) == ["src.0", "src.1.0", "src.1.1", "src.2.0", "dst.0", "dst.1.0",
                               "dst.1.1", "dst.2.0"]  # fmt: skip
    ck = kl.compile(
        descriptor_argument_kernel, signature=signature, constexprs=constexprs, attrs=attrs,
        target="sm_90",
    )  # fmt: skip
    assert "ld.global.v4.b32" in ck.asm["ptx"]  # 64-wide rows: aligned, vectorized tiles


@pytest.mark.gpu
def test_host_tensor_descriptor_on_gpu(rng):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    # rows 288 bytes apart: TMA's 16-byte rule holds, so on Hopper the copies are TMA's
    a = torch.from_numpy(random_array(rng, (50, 72), np.float32)).cuda()
    b = torch.full_like(a, float("nan"))
    descriptor_argument_kernel[(4, 3)](
        TensorDescriptor.from_tensor(a, [16, 32]), TensorDescriptor.from_tensor(b, [16, 32]),
        BM=16, BN=32,
    )  # fmt: skip
    assert torch.equal(b, a * 2 - 1)


def test_tensor_descriptor_checks_its_shapes():
    with pytest.raises(ValueError, match="one entry per dim"):
        TensorDescriptor(None, (4, 4), (4, 1), (4,))
    with pytest.raises(ValueError, match="powers of two"):
        TensorDescriptor.from_tensor(np.zeros((8, 8)), [8, 6])


def test_tensor_descriptor_fields_can_be_set_after_construction():
    """As in Triton, a descriptor made with a placeholder block gets its real block shape
    later (an autotuner's pre_hook sets it per config); every assignment is checked."""
    desc = TensorDescriptor.from_tensor(np.zeros((8, 8)), [1, 1])
    desc.block_shape = [8, 4]
    assert desc.block_shape == (8, 4)
    with pytest.raises(ValueError, match="powers of two"):
        desc.block_shape = [8, 3]
    with pytest.raises(ValueError, match="one entry per dim"):
        desc.block_shape = [8]
    with pytest.raises(ValueError, match='"zero" or "nan"'):
        desc.padding = "one"


@kl.jit
def _descriptor_of(desc_or_ptr, shape, strides, block_shape):
    """Tutorial 06's helper: a descriptor argument as it is, a pointer made into one."""
    if isinstance(desc_or_ptr, tl.tensor_descriptor):
        return desc_or_ptr
    else:
        return tl.make_tensor_descriptor(desc_or_ptr, shape, strides, block_shape)


@kl.jit
def descriptor_or_pointer_kernel(src, dst, M, N, BM: tl.constexpr, BN: tl.constexpr):
    src = _descriptor_of(src, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    dst = _descriptor_of(dst, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    i = tl.program_id(0) * BM
    j = tl.program_id(1) * BN
    dst.store([i, j], src.load([i, j]) * 2 - 1)


@pytest.mark.parametrize("host_descriptors", [False, True])
def test_isinstance_tensor_descriptor_takes_either_path(launch, rng, host_descriptors):
    a = random_array(rng, (50, 70), np.float32)
    b = poison((50, 70), np.float32)
    if host_descriptors:
        # a 1x1 placeholder block, set later as tutorial 06's pre_hook does
        src, dst = TensorDescriptor.from_tensor(a, [1, 1]), TensorDescriptor.from_tensor(b, [1, 1])
        src.block_shape = dst.block_shape = [16, 32]
    else:
        src, dst = a, b
    launch(descriptor_or_pointer_kernel, (4, 3), src, dst, 50, 70, BM=16, BN=32)
    assert_equal(b, a * 2 - 1)


@kl.jit
def _scaled_rows(x, offs: tl.constexpr, scale: tl.constexpr):
    return x * scale + offs


@kl.jit
def constexpr_annotated_helper_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    # a tensor for a parameter annotated tl.constexpr: a runtime parameter, as in Triton
    # (tutorial 06 passes its offs_m and offs_n so); the constant stays a constant
    tl.store(out_ptr + offs, _scaled_rows(tl.load(x_ptr + offs), offs, 3))


def test_a_tensor_passed_to_a_constexpr_parameter_of_a_helper(launch, rng):
    x = random_array(rng, 64, np.float32)
    out = poison(64, np.float32)
    launch(constexpr_annotated_helper_kernel, (1,), x, out, BLOCK=64)
    assert_close(out, f64(x) * 3 + np.arange(64), rtol=2**-22, atol=2**-20)  # two fp32 roundings


@kl.jit
def _put(ptr, value):
    tl.store(ptr, value)


@kl.jit
def pointer_cast_kernel(x_ptr, out_ptr, n):
    bits = tl.load(x_ptr.to(tl.pointer_type(tl.int32)))  # the float's bits
    _put(out_ptr, bits) if n > 2 else _put(out_ptr + 1, bits)


def test_pointer_type_cast_and_conditional_calls(launch, rng):
    x = random_array(rng, 1, np.float32)
    out = np.zeros(2, np.int32)
    launch(pointer_cast_kernel, (1,), x, out, 3)
    launch(pointer_cast_kernel, (1,), x, out, 0)
    assert_equal(out, np.repeat(x.view(np.int32), 2))


@kl.jit
def tl_tuple_kernel(x_ptr, out_ptr):
    x = tl.load(x_ptr + tl.arange(0, 8))
    pair = tl.tuple([x, x * 2])
    tl.static_assert(isinstance(pair, tl.tuple))
    tl.store(out_ptr + tl.arange(0, 8), pair[0] + pair[1])


def test_tl_tuple(launch, rng):
    x = random_array(rng, 8, np.float32)
    out = poison(8, np.float32)
    launch(tl_tuple_kernel, (1,), x, out)
    assert_equal(out, x * 3)
