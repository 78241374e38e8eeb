"""The JIT's binder (argument types, specialization keys, errors) and launches through it."""

import ml_dtypes
import numpy as np
import pytest

import kernellab as kl
import kernellab.language as tl
from kernellab.runtime import jit as jit_module
from kernellab.backends.arguments import ArgumentError, flat_buffer, normalize_grid


@kl.jit
def signature_kernel(x_ptr, n, scale, flag, BLOCK: tl.constexpr, ACT: tl.constexpr = "none"):
    pass


@kl.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr = 128):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


def aligned(n, dtype=np.float32, offset_bytes=0):
    """An array whose data address is 64-byte aligned plus `offset_bytes`."""
    dtype = np.dtype(dtype)
    raw = np.empty(n * dtype.itemsize + 128, dtype=np.uint8)
    start = (-raw.ctypes.data) % 64 + offset_bytes
    return raw[start : start + n * dtype.itemsize].view(dtype)


def bind(*args, **kwargs):
    return signature_kernel.binder.bind(args, kwargs)


@pytest.mark.parametrize(
    "dtype, name",
    [
        (np.float32, "*fp32"), (np.float16, "*fp16"), (np.float64, "*fp64"),
        (ml_dtypes.bfloat16, "*bf16"), (ml_dtypes.float8_e4m3fn, "*fp8e4nv"),
        (ml_dtypes.float8_e5m2, "*fp8e5"), (np.bool_, "*i1"), (np.int8, "*i8"),
        (np.int32, "*i32"), (np.int64, "*i64"), (np.uint8, "*u8"), (np.uint32, "*u32"),
    ],
)  # fmt: skip
def test_array_arguments_are_pointers_to_their_dtype(dtype, name):
    b = bind(aligned(8, dtype), 3, 1.5, True, BLOCK=64)
    assert b.key[0] == (name, True)


def test_pointer_alignment_specializes_divisibility():
    assert bind(aligned(8), 3, 1.0, True, BLOCK=64).key[0] == ("*fp32", True)
    assert bind(aligned(8, offset_bytes=4), 3, 1.0, True, BLOCK=64).key[0] == ("*fp32", False)


@pytest.mark.parametrize(
    "value, key",
    [
        (7, ("i32", False)), (-7, ("i32", False)), (48, ("i32", True)),
        (2**31 - 1, ("i32", False)), (-(2**31), ("i32", True)), (2**31, ("i64", True)),
        (2**31 + 3, ("i64", False)), (-(2**63), ("i64", True)), (2**63 + 1, ("u64", False)),
        (1, ("constexpr", 1)),
    ],
)  # fmt: skip
def test_ints_are_typed_like_triton(value, key):
    assert bind(aligned(4), value, 1.0, True, BLOCK=64).key[1] == key


def test_int_equal_to_one_becomes_a_constexpr_and_leaves_the_runtime_args():
    x = aligned(4)
    b = bind(x, 1, 2.5, False, BLOCK=64)
    assert len(b.args) == 3  # x_ptr, scale, flag
    signature, constexprs, attrs = signature_kernel.binder.compile_args(b)
    assert list(signature) == ["x_ptr", "scale", "flag"] and str(signature) == "*fp32,fp32,i1"
    assert constexprs == {"n": 1, "BLOCK": 64, "ACT": "none"}
    assert attrs == {"x_ptr": {"tt.divisibility": 16}}


def test_divisible_ints_get_the_divisibility_attribute():
    b = bind(aligned(4, offset_bytes=8), 64, 2.5, True, BLOCK=64, ACT="relu")
    signature, constexprs, attrs = signature_kernel.binder.compile_args(b)
    assert list(signature) == ["x_ptr", "n", "scale", "flag"] and str(signature) == "*fp32,i32,fp32,i1"
    assert constexprs == {"BLOCK": 64, "ACT": "relu"}
    assert attrs == {"n": {"tt.divisibility": 16}}


def test_do_not_specialize_keeps_ints_generic():
    @kl.jit(do_not_specialize=["n"])
    def k(x_ptr, n, m):
        pass

    x = aligned(4)
    assert k.binder.bind((x, 1, 1), {}).key[1:] == (("i32", False), ("constexpr", 1))
    assert k.binder.bind((x, 32, 32), {}).key[1:] == (("i32", False), ("i32", True))


def test_scalars_floats_bools_none_and_numpy_scalars():
    x = aligned(4)
    assert bind(x, 3, 0.5, True, BLOCK=4).key[2:4] == (("fp32", False), ("i1", False))
    assert bind(x, np.int64(3), np.float32(2), np.bool_(False), BLOCK=4).key[1:4] == (
        ("i64", False), ("fp32", False), ("i1", False),
    )  # fmt: skip
    assert bind(x, 3, None, True, BLOCK=4).key[2] == ("constexpr", None)


def test_constexpr_values_key_the_cache_by_type_and_value():
    x = aligned(4)
    assert bind(x, 3, 1.0, True, BLOCK=64).key != bind(x, 3, 1.0, True, BLOCK=32).key
    assert bind(x, 3, 1.0, True, BLOCK=1).key != bind(x, 3, 1.0, True, BLOCK=True).key
    assert bind(x, 3, 1.0, True, BLOCK=tl.constexpr(8)).key == bind(x, 3, 1.0, True, BLOCK=8).key


def test_keyword_arguments_and_defaults_bind_like_python():
    x = aligned(4)
    by_position = bind(x, 3, 1.0, True, 16, "none")
    by_keyword = bind(flag=True, scale=1.0, n=3, x_ptr=x, BLOCK=16)
    assert by_position.key == by_keyword.key
    assert signature_kernel.binder.meta(by_keyword)["ACT"] == "none"


@pytest.mark.parametrize(
    "args, kwargs, message",
    [
        ((), {"BLOCK": 4}, "missing 'x_ptr'"),
        (("X", 3, 1.0, True), {}, "missing 'BLOCK' (a tl.constexpr)"),
        (("X", 3, 1.0, True, 4, "a", "extra"), {}, "takes 6 arguments but 7 were given"),
        (("X", 3, 1.0, True), {"BLOCK": 4, "BLOK": 4}, "unexpected argument 'BLOK'"),
        (("X", 3, 1.0, True), {"BLOCK": 4, "n": 3}, "two values for 'n'"),
        (("X", "three", 1.0, True), {"BLOCK": 4}, "parameter 'n': values of type builtins.str"),
        (("X", 2**64, 1.0, True), {"BLOCK": 4}, "parameter 'n': the integer 18446744073709551616"),
        (("X", 3, [1.0], True), {"BLOCK": 4}, "parameter 'scale'"),
        (("X", 3, 1.0, True), {"BLOCK": 4, "ACT": ["a"]}, "must be hashable"),
    ],
)  # fmt: skip
def test_bad_arguments_name_the_parameter(args, kwargs, message):
    args = tuple(aligned(4) if a == "X" else a for a in args)
    with pytest.raises(TypeError) as info:
        bind(*args, **kwargs)
    assert message in str(info.value)


class GpuArray:
    """Stands in for a CUDA array: only `__cuda_array_interface__` (nothing is launched)."""

    def __init__(self, address, typestr="<f4", n=4):
        self.__cuda_array_interface__ = {
            "shape": (n,), "typestr": typestr, "data": (address, False), "version": 3,
        }  # fmt: skip


def test_gpu_arrays_bind_to_a_device_key_and_their_address():
    b = bind(GpuArray(0x7F0000001000), 3, 1.0, True, BLOCK=4)
    assert b.key[0] == ("*fp32", True, 0, False)  # type, 16-aligned, device 0, not torch
    assert b.args[0] == 0x7F0000001000
    b = bind(GpuArray(0x7F0000001004, "<i2"), 3, 1.0, True, BLOCK=4)
    assert b.key[0] == ("*i16", False, 0, False)


def test_mixing_cpu_and_gpu_arrays_names_both_arguments():
    with pytest.raises(ArgumentError) as info:
        add_kernel[(1,)](GpuArray(0x7F0000001000), aligned(4), GpuArray(0x7F0000002000), 4, BLOCK=4)
    message = str(info.value)
    assert "'y_ptr' is a CPU array but 'x_ptr' is on cuda:0" in message
    assert "move 'y_ptr' to the GPU" in message


def test_array_interface_objects_are_accepted():
    class Wrapped:
        def __init__(self, a):
            self.a = a

        @property
        def __array_interface__(self):
            return self.a.__array_interface__

    assert bind(Wrapped(aligned(4, np.int16)), 3, 1.0, True, BLOCK=4).key[0] == ("*i16", True)


def test_non_contiguous_arrays_pass_the_span_they_address():
    a = np.arange(24, dtype=np.float32).reshape(4, 6)
    column = a[:, 2]
    buf = flat_buffer(column)
    assert buf.shape == (3 * 6 + 1,) and np.shares_memory(buf, a)
    assert buf[0] == 2 and buf[-1] == 20
    assert flat_buffer(a.T).shape == (24,)
    with pytest.raises(ArgumentError, match="ascontiguousarray"):
        flat_buffer(a[::-1])


@pytest.mark.parametrize(
    "grid, expected",
    [(4, (4, 1, 1)), ((4,), (4, 1, 1)), ((2, 3), (2, 3, 1)), ([2, 3, np.int64(5)], (2, 3, 5))],
)
def test_grids_normalize_to_three_dims(grid, expected):
    assert normalize_grid(grid) == expected


@pytest.mark.parametrize("grid", [(), (1, 2, 3, 4), (1.5,), ("a",), (-1,)])
def test_bad_grids_are_refused(grid):
    with pytest.raises(TypeError):
        normalize_grid(grid)


# -- launches through the whole pipeline -------------------------------------------------------


def vector_add_inputs(rng, n):
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    return x, y, np.full(n, np.nan, dtype=np.float32)


def test_launch_with_grid_tuple_and_keywords():
    rng = np.random.default_rng()
    n = 1000
    x, y, out = vector_add_inputs(rng, n)
    add_kernel[(kl.cdiv(n, 256),)](x, y, out_ptr=out, n=n, BLOCK=256)
    np.testing.assert_allclose(out, x.astype(np.float64) + y, rtol=1e-6)


def test_grid_callable_sees_every_parameter():
    rng = np.random.default_rng()
    n = 777
    x, y, out = vector_add_inputs(rng, n)
    seen = {}

    def grid(meta):
        seen.update(meta)
        return (kl.cdiv(meta["n"], meta["BLOCK"]),)

    add_kernel[grid](x, y, out, n)  # BLOCK from its default
    assert seen["BLOCK"] == 128 and seen["n"] == n and seen["x_ptr"] is x
    np.testing.assert_allclose(out, x.astype(np.float64) + y, rtol=1e-6)


def test_second_launch_hits_the_memory_cache(monkeypatch):
    calls = []
    real_compile = jit_module.compile

    def counting_compile(*args, **kwargs):
        calls.append(kwargs)
        return real_compile(*args, **kwargs)

    monkeypatch.setattr(jit_module, "compile", counting_compile)

    @kl.jit
    def copy(src, dst, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(dst + offs, tl.load(src + offs, mask=offs < n), mask=offs < n)

    rng = np.random.default_rng()
    for n in (100, 112, 100):  # 112 is divisible by 16: a second specialization
        src, dst = aligned(n), aligned(n)
        src[:] = rng.standard_normal(n)
        dst[:] = np.nan
        copy[(1,)](src, dst, n, BLOCK=128)
        np.testing.assert_array_equal(dst, src)
    assert len(calls) == 2 and len(copy.cache) == 2
    assert list(calls[0]["signature"]) == ["src", "dst", "n"] and str(calls[0]["signature"]) == "*fp32,*fp32,i32"


def test_warmup_compiles_without_running():
    x = aligned(64)
    out = aligned(64)
    out[:] = np.nan
    ck = add_kernel.warmup(x, x, out, 64, BLOCK=64, grid=(1,))
    assert isinstance(ck, kl.CompiledKernel)
    assert np.isnan(out).all()
    assert ck.metadata["signature"] == "*fp32,*fp32,*fp32,i32"
    assert ck.metadata["attrs"] == {name: {"tt.divisibility": 16} for name in ("x_ptr", "y_ptr", "out_ptr", "n")}
    assert "tt.divisibility = 16" in ck.asm["ttir"]
    assert add_kernel.warmup(x, x, out, 64, BLOCK=64, grid=(1,)) is ck


def test_launch_options_are_part_of_the_key():
    x = aligned(64)
    a = add_kernel.warmup(x, x, x, 64, BLOCK=64, num_warps=8)
    b = add_kernel.warmup(x, x, x, 64, BLOCK=64)
    assert a is not b and a.metadata["num_warps"] == 8 and b.metadata["num_warps"] == 4


def test_kernels_cannot_be_called_like_python_functions():
    with pytest.raises(RuntimeError, match=r"add_kernel\[grid\]"):
        add_kernel(1, 2, 3, 4)


def test_torch_cpu_tensors_share_memory():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng()
    n = 300
    x = torch.from_numpy(rng.standard_normal(n).astype(np.float32))
    y = torch.from_numpy(rng.standard_normal(n).astype(np.float32))
    out = torch.full((n,), float("nan"))
    add_kernel[(kl.cdiv(n, 128),)](x, y, out, n)
    np.testing.assert_allclose(out.numpy(), x.double().numpy() + y.double().numpy(), rtol=1e-6)
    bf = torch.ones(4, dtype=torch.bfloat16)
    assert signature_kernel.binder.bind((bf, 3, 1.0, True), {"BLOCK": 4}).key[0][0] == "*bf16"
