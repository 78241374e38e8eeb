"""kernellab.testing: assert_close's report, do_bench's modes, perf_report's sweep."""

import sys

import ml_dtypes
import numpy as np
import pytest

from kernellab import testing


def test_assert_close_passes_within_tolerance_and_matches_nans():
    rng = np.random.default_rng()
    expected = rng.standard_normal((4, 5))
    actual = expected + 1e-3
    actual[1, 2] = expected[1, 2] = np.nan
    testing.assert_close(actual, expected)  # Triton's default atol is 1e-2
    testing.assert_close(expected.astype(ml_dtypes.bfloat16), expected, atol=0, rtol=2**-8)


def test_assert_close_reports_count_and_worst_element():
    rng = np.random.default_rng()
    expected = rng.uniform(1, 2, (3, 4))
    actual = expected.copy()
    actual[0, 1] += 0.5
    actual[2, 3] += 3.0
    with pytest.raises(AssertionError) as info:
        testing.assert_close(actual, expected, atol=1e-3, rtol=0, err_msg="matmul")
    message = str(info.value)
    assert message.startswith("matmul: 2 of 12 elements differ (atol=0.001, rtol=0)")
    assert "worst at index (2, 3)" in message and repr(expected[2, 3]) in message


def test_assert_close_flags_unexpected_nan():
    with pytest.raises(AssertionError, match="1 of 3 elements differ"):
        testing.assert_close(np.array([1.0, np.nan, 3.0]), np.array([1.0, 2.0, 3.0]))


def test_do_bench_modes():
    calls = []

    def fn():
        calls.append(1)

    ms = testing.do_bench(fn, warmup=1, rep=2)
    assert ms >= 0 and len(calls) > 2
    times = testing.do_bench(fn, warmup=0, rep=1, return_mode="all")
    assert isinstance(times, list) and all(t >= 0 for t in times)
    low, mid, high = testing.do_bench(fn, warmup=0, rep=1, quantiles=[0.2, 0.5, 0.8])
    assert low <= mid <= high
    with pytest.raises(ValueError, match="return_mode"):
        testing.do_bench(fn, return_mode="p50")


def test_perf_report_runs_the_sweep_and_prints_a_table(capsys, tmp_path):
    seen = []

    @testing.perf_report(
        testing.Benchmark(
            x_names=["size"], x_vals=[2, 4], line_arg="provider", line_vals=["a", "b"],
            line_names=["A", "B"], plot_name="demo", args={"scale": 10},
        )
    )  # fmt: skip
    def bench(size, provider, scale):
        seen.append((size, provider, scale))
        return float(size * scale + (provider == "b")), 0.0, 0.0

    bench.run(print_data=True, save_path=str(tmp_path))
    assert seen == [(2, "a", 10), (2, "b", 10), (4, "a", 10), (4, "b", 10)]
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "demo:" and out[1].split() == ["size", "A", "B"]
    assert out[3].split() == ["2", "20", "21"] and out[4].split() == ["4", "40", "41"]
    assert (tmp_path / "demo.csv").read_text().splitlines()[1] == "2,20.0,21.0"


# -- tensors on a GPU: copied to the host before comparing -----------------------------------


class _FakeDtype:
    def __init__(self, name, numpy_dtype):
        self.name, self.numpy_dtype = name, numpy_dtype


class _FakeTorch:
    """Just enough of torch for assert_close: tensors on 'cuda' refuse numpy conversion, as
    torch's do, and numpy has no bf16 for a CPU tensor's .numpy()."""

    float16 = _FakeDtype("float16", np.float16)
    float32 = _FakeDtype("float32", np.float32)
    float64 = _FakeDtype("float64", np.float64)
    bfloat16 = _FakeDtype("bfloat16", ml_dtypes.bfloat16)

    def __init__(self):
        self.log = []
        torch = self

        class Tensor:
            def __init__(self, data, dtype, device):
                self.data, self.dtype, self.device = data, dtype, device

            def __array__(self, *args, **kwargs):
                if self.device != "cpu":
                    raise TypeError("can't convert cuda:0 device type tensor to numpy")
                return self.numpy()

            def detach(self):
                torch.log.append("detach")
                return Tensor(self.data, self.dtype, self.device)

            def is_floating_point(self):
                return True

            def to(self, dtype):
                torch.log.append(f"to {dtype.name} on {self.device}")
                return Tensor(self.data.astype(dtype.numpy_dtype), dtype, self.device)

            def cpu(self):
                torch.log.append("cpu")
                return Tensor(self.data, self.dtype, "cpu")

            def numpy(self):
                if self.device != "cpu":
                    raise TypeError("can't convert cuda:0 device type tensor to numpy")
                if self.dtype is torch.bfloat16:
                    raise TypeError("Got unsupported ScalarType BFloat16")
                return self.data

        self.Tensor = Tensor

    def tensor(self, values, dtype, device="cuda"):
        return self.Tensor(np.asarray(values).astype(dtype.numpy_dtype), dtype, device)

    def as_tensor(self, obj, device=None):
        self.log.append(f"as_tensor {device}")
        return self.tensor(obj.host, self.float32, device)


class _FakeCudaArray:
    """A GPU array of some other library (CuPy, Numba): only __cuda_array_interface__."""

    def __init__(self, host):
        self.host = host
        self.__cuda_array_interface__ = {
            "shape": host.shape,
            "typestr": "<f4",
            "data": (0, False),
            "version": 3,
        }


def test_assert_close_copies_cuda_tensors_to_the_host(monkeypatch):
    torch = _FakeTorch()
    monkeypatch.setitem(sys.modules, "torch", torch)
    rng = np.random.default_rng()
    expected = rng.standard_normal((6, 7))
    testing.assert_close(torch.tensor(expected + 1e-3, torch.float32), expected)
    assert torch.log == ["detach", "cpu"]
    wrong = expected.copy()
    wrong[4, 5] += 1.0
    with pytest.raises(
        AssertionError, match=r"1 of 42 elements differ[\s\S]*worst at index \(4, 5\)"
    ):
        testing.assert_close(
            torch.tensor(wrong, torch.float32), torch.tensor(expected, torch.float32)
        )


def test_assert_close_upcasts_bf16_on_the_device_first(monkeypatch):
    torch = _FakeTorch()
    monkeypatch.setitem(sys.modules, "torch", torch)
    expected = np.random.default_rng().uniform(1, 2, 50)
    testing.assert_close(torch.tensor(expected, torch.bfloat16), expected, atol=0, rtol=2**-8)
    assert torch.log == ["detach", "to float32 on cuda", "cpu"]
    with pytest.raises(AssertionError, match="of 50 elements differ"):
        testing.assert_close(torch.tensor(expected, torch.bfloat16), expected, atol=0, rtol=2**-12)


def test_assert_close_on_other_gpu_arrays_goes_through_torch(monkeypatch):
    torch = _FakeTorch()
    monkeypatch.setitem(sys.modules, "torch", torch)
    expected = np.random.default_rng().standard_normal(33).astype(np.float32)
    testing.assert_close(_FakeCudaArray(expected), expected, atol=0)
    assert torch.log[0] == "as_tensor cuda"
    with pytest.raises(AssertionError, match="1 of 33 elements differ"):
        testing.assert_close(_FakeCudaArray(expected), expected + np.eye(33, dtype=np.float32)[7])
    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` fails: no torch installed
    with pytest.raises(TypeError, match=r"_FakeCudaArray \(a GPU array\).*needs torch.*x\.get\(\)"):
        testing.assert_close(_FakeCudaArray(expected), expected)


def test_assert_close_on_real_torch_tensors():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng()
    expected = rng.uniform(1, 2, (8, 9))
    leaf = torch.tensor(expected + 1e-3, dtype=torch.float32, requires_grad=True)
    testing.assert_close(leaf * 1, expected)  # needs .detach()
    testing.assert_close(torch.tensor(expected, dtype=torch.bfloat16), expected, atol=0, rtol=2**-8)
    wrong = torch.tensor(expected)
    wrong[3, 2] = 9.0
    with pytest.raises(AssertionError, match=r"1 of 72 elements differ[\s\S]*index \(3, 2\)"):
        testing.assert_close(wrong, expected)
    if torch.cuda.is_available():
        testing.assert_close(
            torch.tensor(expected, device="cuda", dtype=torch.bfloat16),
            expected,
            atol=0,
            rtol=2**-8,
        )
