"""Host data of every dtype Triton accepts (issue 13 item 1): unsigned and fp8 arrays and torch
tensors, and `kl.reinterpret` views, on the interpreter and on the GPU."""

import ml_dtypes
import numpy as np
import pytest

import kernellab as kl
import kernellab.language as tl
from kernellab.backends.arguments import ArgumentError, flat_buffer, specialize
from tests.conftest import cuda_available

FP8 = {  # torch name → (numpy dtype, kernellab dtype)
    "float8_e4m3fn": (ml_dtypes.float8_e4m3fn, tl.float8e4nv),
    "float8_e5m2": (ml_dtypes.float8_e5m2, tl.float8e5),
    "float8_e4m3fnuz": (ml_dtypes.float8_e4m3fnuz, tl.float8e4b8),
    "float8_e5m2fnuz": (ml_dtypes.float8_e5m2fnuz, tl.float8e5b16),
}
UNSIGNED = ("uint16", "uint32", "uint64")


@kl.jit
def scale_fp8(x_ptr, wide_ptr, narrow_ptr, n, BLOCK: tl.constexpr):
    """wide = 2x in fp32; narrow = x / 2 rounded back to the input's fp8 type."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    tl.store(wide_ptr + offs, x * 2, mask=mask)
    tl.store(narrow_ptr + offs, (x * 0.5).to(narrow_ptr.dtype.element_ty), mask=mask)


@kl.jit
def unsigned_mix(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    """y = x // 3 + x % 5 + (x >> 1): division, remainder and shift that differ between signed
    and unsigned reads of the same bits (values above the signed maximum are in the inputs)."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, x // 3 + x % 5 + (x >> 1), mask=mask)


def fp8_values(rng, np_dtype, n: int) -> np.ndarray:
    """Random finite fp8 values over the format's range (every bit pattern but NaN/inf)."""
    bits = rng.integers(0, 256, n, dtype=np.uint8).view(np_dtype)
    finite = np.isfinite(bits.astype(np.float32))
    return np.where(finite, bits, np_dtype(1.5)).astype(np_dtype)


def check_scale(x: np.ndarray, wide: np.ndarray, narrow: np.ndarray) -> None:
    exact = x.astype(np.float64)
    np.testing.assert_array_equal(wide.astype(np.float64), exact * 2)  # fp8 * 2 is exact in fp32
    want = np.clip(exact * 0.5, -float(ml_dtypes.finfo(x.dtype).max), float(ml_dtypes.finfo(x.dtype).max))
    np.testing.assert_array_equal(narrow.astype(np.float64), want.astype(x.dtype).astype(np.float64))


def unsigned_reference(x: np.ndarray) -> np.ndarray:
    return x // 3 + x % 5 + (x >> 1)


def unsigned_values(rng, name: str, n: int) -> np.ndarray:
    info = np.iinfo(np.dtype(name))
    return rng.integers(0, int(info.max), n, dtype=np.dtype(name), endpoint=True)


@pytest.mark.parametrize("name", list(FP8))
def test_fp8_numpy_arrays_run_on_the_interpreter(rng, name):
    np_dtype, _ = FP8[name]
    n = 700
    x = fp8_values(rng, np_dtype, n)
    wide = np.full(n, np.nan, np.float32)
    narrow = np.full(n, np.nan, np_dtype)
    scale_fp8[(kl.cdiv(n, 256),)](x, wide, narrow, n, BLOCK=256)
    check_scale(x, wide, narrow)


@pytest.mark.parametrize("name", ["float8_e4m3fnuz", "float8_e5m2fnuz"])
def test_fnuz_fp8_is_refused_on_nvidia_targets_with_the_way_out(name):
    sig_name = FP8[name][1].name
    with pytest.raises(Exception, match=f"{sig_name} .*no NVIDIA lowering; run the kernel on the interpreter"):
        kl.compile(scale_fp8, signature=f"*{sig_name},*fp32,*{sig_name},i32", constexprs={"BLOCK": 128}, target="sm_90")


@pytest.mark.parametrize("name", UNSIGNED)
def test_unsigned_numpy_arrays(rng, name):
    n = 500
    x = unsigned_values(rng, name, n)
    y = np.full(n, 0x5A, np.dtype(name))
    unsigned_mix[(kl.cdiv(n, 128),)](x, y, n, BLOCK=128)
    np.testing.assert_array_equal(y, unsigned_reference(x))


# -- torch tensors -----------------------------------------------------------------------------


@pytest.fixture
def torch():
    return pytest.importorskip("torch")


def devices() -> list:
    return [pytest.param("cpu", id="cpu"), pytest.param("cuda", id="cuda", marks=pytest.mark.gpu)]


def _device(torch, device: str) -> str:
    if device == "cuda" and not cuda_available():
        pytest.skip("needs a CUDA GPU")
    return device


def torch_from(torch, array: np.ndarray, torch_dtype, device: str):
    """A torch tensor of `torch_dtype` with `array`'s bits (through a same-width integer)."""
    carrier = {1: np.int8, 2: np.int16, 4: np.int32, 8: np.int64}[array.itemsize]
    return torch.from_numpy(array.view(carrier).copy()).view(torch_dtype).to(device)


def numpy_from(torch, tensor, np_dtype) -> np.ndarray:
    carrier = {1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[tensor.element_size()]
    return tensor.view(carrier).cpu().numpy().view(np_dtype)


@pytest.mark.parametrize("device", devices())
@pytest.mark.parametrize("name", list(FP8))
def test_fp8_torch_tensors(rng, torch, device, name):
    device = _device(torch, device)
    np_dtype, kl_dtype = FP8[name]
    torch_dtype = getattr(torch, name, None)
    if torch_dtype is None:
        pytest.skip(f"torch {torch.__version__} has no torch.{name}")
    if device == "cuda" and kl_dtype.name in ("fp8e4b8", "fp8e5b16"):
        pytest.skip("the fnuz formats have no NVIDIA lowering (refused: see the test above)")
    n = 700
    x = fp8_values(rng, np_dtype, n)
    wide = torch.full((n,), float("nan"), dtype=torch.float32, device=device)
    narrow = torch_from(torch, np.full(n, np.nan, np_dtype), torch_dtype, device)
    scale_fp8[(kl.cdiv(n, 256),)](torch_from(torch, x, torch_dtype, device), wide, narrow, n, BLOCK=256)
    check_scale(x, wide.cpu().numpy(), numpy_from(torch, narrow, np_dtype))


@pytest.mark.parametrize("device", devices())
@pytest.mark.parametrize("name", UNSIGNED)
def test_unsigned_torch_tensors(rng, torch, device, name):
    device = _device(torch, device)
    torch_dtype = getattr(torch, name, None)
    if torch_dtype is None:
        pytest.skip(f"torch {torch.__version__} has no torch.{name}")
    n = 500
    x = unsigned_values(rng, name, n)
    y = torch_from(torch, np.full(n, 0x5A, np.dtype(name)), torch_dtype, device)
    unsigned_mix[(kl.cdiv(n, 128),)](torch_from(torch, x, torch_dtype, device), y, n, BLOCK=128)
    np.testing.assert_array_equal(numpy_from(torch, y, np.dtype(name)), unsigned_reference(x))


# -- kl.reinterpret ----------------------------------------------------------------------------


def test_reinterpret_numpy_bytes_as_fp8_reads_and_writes_the_base(rng):
    n = 600
    x = fp8_values(rng, ml_dtypes.float8_e5m2, n)
    raw_in = x.view(np.uint8).copy()
    raw_wide = np.full(n, 0x7F, np.uint32)  # fp32 results land in uint32 memory
    raw_narrow = np.full(n, 0xFF, np.uint8)
    scale_fp8[(kl.cdiv(n, 256),)](
        kl.reinterpret(raw_in, tl.float8e5), kl.reinterpret(raw_wide, tl.float32),
        kl.reinterpret(raw_narrow, "fp8e5"), n, BLOCK=256,
    )  # fmt: skip
    check_scale(x, raw_wide.view(np.float32), raw_narrow.view(ml_dtypes.float8_e5m2))


def test_reinterpret_signed_as_unsigned(rng):
    n = 300
    x = unsigned_values(rng, "uint32", n)
    signed_in, signed_out = x.view(np.int32).copy(), np.full(n, -5, np.int32)
    unsigned_mix[(kl.cdiv(n, 128),)](kl.reinterpret(signed_in, tl.uint32), kl.reinterpret(signed_out, tl.uint32), n, BLOCK=128)
    np.testing.assert_array_equal(signed_out.view(np.uint32), unsigned_reference(x))


@pytest.mark.parametrize("device", devices())
def test_reinterpret_torch_tensors(rng, torch, device):
    device = _device(torch, device)
    n = 700
    x = fp8_values(rng, ml_dtypes.float8_e4m3fn, n)
    raw_in = torch.from_numpy(x.view(np.uint8).copy()).to(device)
    wide = torch.full((n,), float("nan"), dtype=torch.float32, device=device)
    raw_narrow = torch.full((n,), 0x7F, dtype=torch.uint8, device=device)
    view = kl.reinterpret(raw_narrow, tl.float8e4nv)
    assert view.dtype == tl.float8e4nv and view.shape == raw_narrow.shape and view.data_ptr() == raw_narrow.data_ptr()
    scale_fp8[(kl.cdiv(n, 256),)](kl.reinterpret(raw_in, tl.float8e4nv), wide, view, n, BLOCK=256)
    check_scale(x, wide.cpu().numpy(), raw_narrow.cpu().numpy().view(ml_dtypes.float8_e4m3fn))


class FakeCudaArray:
    """A GPU array as `__cuda_array_interface__` describes one (no GPU needed to build a key)."""

    def __init__(self, address: int, typestr: str = "|u1", shape=(64,)):
        self.__cuda_array_interface__ = {"data": (address, False), "typestr": typestr, "shape": shape, "version": 3}


def test_reinterpret_of_a_gpu_array_types_its_pointer():
    key, value = specialize(kl.reinterpret(FakeCudaArray(0x7000_0000_0010), tl.float8e5))
    assert key == ("*fp8e5", True, key[2], False) and value == 0x7000_0000_0010
    key, _ = specialize(kl.reinterpret(FakeCudaArray(0x7000_0000_0008), "u8"))
    assert key[:2] == ("*u8", False)  # not 16-byte aligned: not specialized on it


def test_reinterpret_rules():
    a = np.arange(8, dtype=np.uint8)
    assert kl.reinterpret(a, tl.uint8) is a  # the base's own type: the base itself
    twice = kl.reinterpret(kl.reinterpret(a, tl.float8e5), tl.int8)
    assert twice.base is a and twice.dtype == tl.int8
    with pytest.raises(TypeError, match="scalar type"):
        kl.reinterpret(a, tl.pointer_type(tl.float32))
    with pytest.raises(ArgumentError, match="not a whole number"):
        specialize(kl.reinterpret(np.arange(3, dtype=np.uint8), tl.float32))
    with pytest.raises(ArgumentError, match="views arrays"):
        specialize(kl.reinterpret(3, tl.float32))


@pytest.mark.parametrize("np_dtype", [ml_dtypes.float8_e5m2, ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fnuz])
def test_strided_views_of_ml_dtypes_arrays_pass_as_their_span(rng, np_dtype):
    a = rng.standard_normal((6, 10)).astype(np_dtype)
    key, view = specialize(a.T)  # a transpose: kernels address it through its base pointer
    assert key[0] == "*" + {ml_dtypes.float8_e5m2: "fp8e5", ml_dtypes.bfloat16: "bf16"}.get(np_dtype, "fp8e4b8")
    assert view.dtype == a.dtype and np.shares_memory(view, a)
    bits = np.dtype(f"u{a.itemsize}")
    span = flat_buffer(view)  # what the interpreter addresses: the memory the view spans
    np.testing.assert_array_equal(span.view(bits), a.reshape(-1).view(bits))  # memory order
