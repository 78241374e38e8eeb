"""GPU faults (issue 14, item 10): an illegal address, a failed device_assert and a launch that
asks for too much each raise an error naming the kernel, its arguments' shapes and what to do;
after a fault the process says plainly that the CUDA context is lost and still runs CPU work.

The message logic is checked here without a GPU (a stand-in driver result); the faults
themselves run on the device (`-m gpu`), each in a subprocess because a fault poisons the CUDA
context for the rest of the process."""

import enum
import json
import os
import subprocess
import sys
import textwrap
import types

import numpy as np
import pytest

import kernellab as kl
import kernellab.language as tl
from kernellab.backends.nvidia import driver
from kernellab.backends.nvidia.launcher import OutOfResources

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture
def stand_in_driver(monkeypatch):
    class CUresult(enum.IntEnum):
        CUDA_SUCCESS = 0
        CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES = 701
        CUDA_ERROR_ILLEGAL_ADDRESS = 700

    fake = types.SimpleNamespace(CUresult=CUresult, cuGetErrorString=lambda e: (0, b"described"))
    monkeypatch.setattr(driver, "_drv", fake)
    monkeypatch.setattr(driver, "_lost", None)
    return CUresult


def test_the_first_sticky_error_says_the_context_is_lost_and_later_ones_say_since_when(stand_in_driver):
    assert driver.context_lost() is None
    resources = driver.error("cuLaunchKernel", 701)
    assert not resources.sticky and driver.context_lost() is None  # not sticky: the context lives
    first = driver.error("cuLaunchKernel", 700)
    assert first.sticky and "The CUDA context is lost" in str(first)
    assert "CPU work still runs" in str(first) and "restart the kernel" in str(first)
    assert "interpreter" in str(first)  # where the line and program of the bad access are named
    assert driver.context_lost() == "CUDA_ERROR_ILLEGAL_ADDRESS reported by cuLaunchKernel"
    later = driver.error("cuModuleLoadData", 700)
    assert "It was lost earlier: CUDA_ERROR_ILLEGAL_ADDRESS reported by cuLaunchKernel" in str(later)


@kl.jit
def scale(x_ptr, out_ptr, n, factor, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * factor, mask=offs < n)


def test_a_launch_error_names_the_arguments_shapes(stand_in_driver):
    error = driver.error("cuLaunchKernel", 700)
    x = np.zeros((4, 8), np.float32)
    described = str(scale._fault(error, (x, np.zeros(32, np.float16), 32, 2.5), {"BLOCK": 64}))
    assert "the launch: scale[grid](x_ptr=float32[4, 8], out_ptr=float16[32], n=32, factor=2.5, BLOCK=64)" in described


CHILD = """
import json, sys
import numpy as np
import torch
import kernellab as kl
import kernellab.language as tl
from kernellab.backends.nvidia import driver


@kl.jit(debug=DEBUG)
def wild_store(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs * (1 << 28), offs.to(tl.float32))  # far outside x


@kl.jit(debug=True)
def check_positive(x_ptr, BLOCK: tl.constexpr):
    tl.device_assert(tl.load(x_ptr + tl.arange(0, BLOCK)) > 0, "x must be positive")


@kl.jit
def add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


def attempt(fn):
    try:
        fn()
        torch.cuda.synchronize()
        return ""
    except Exception as e:
        return f"{type(e).__name__}: {e}"


x = torch.zeros(64, device="cuda")
if sys.argv[1] == "illegal":
    fault = attempt(lambda: wild_store[(1,)](x, 64, BLOCK=64))
else:
    x[:] = 1.0
    x[5] = -1.0
    fault = attempt(lambda: check_positive[(1,)](x, BLOCK=64))
next_launch = attempt(lambda: add[(1,)](x, x, x, 64, BLOCK=64))
a = np.random.default_rng().standard_normal(64).astype(np.float32)
out = np.full_like(a, np.nan)
add[(1,)](a, a, out, 64, BLOCK=64)  # CPU work: the interpreter
print("RESULT " + json.dumps({"fault": fault, "next": next_launch, "lost": driver.context_lost(),
                              "cpu_ok": bool(np.array_equal(out, a + a))}), flush=True)
"""


def _child(tmp_path, which: str, debug: bool) -> dict:
    script = tmp_path / "fault.py"
    script.write_text(textwrap.dedent(CHILD).replace("DEBUG", str(debug)))
    path = os.pathsep.join(p for p in (REPO, os.environ.get("PYTHONPATH", "")) if p)  # xdsl may come from it
    env = {**os.environ, "KERNELLAB_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": path}
    out = subprocess.run([sys.executable, str(script), which], capture_output=True, text=True, env=env, timeout=600)
    lines = [line for line in out.stdout.splitlines() if line.startswith("RESULT ")]
    assert lines, out.stderr[-3000:]
    return json.loads(lines[-1][len("RESULT "):])


ADDRESS_FAULTS = ("CUDA_ERROR_ILLEGAL_ADDRESS", "CUDA_ERROR_INVALID_ADDRESS_SPACE")


@pytest.mark.gpu
def test_an_illegal_address_under_debug_names_the_kernel_and_the_way_to_the_line(tmp_path):
    pytest.importorskip("torch")
    result = _child(tmp_path, "illegal", debug=True)
    assert "wild_store faulted on the GPU" in result["fault"]
    # the debug build's wild store faults as an illegal address or, on an H100, as an address
    # outside any state space
    assert any(code in result["fault"] for code in ADDRESS_FAULTS) and "interpreter" in result["fault"]
    assert "wild_store[grid](x_ptr=float32[64] on cuda:0, n=64, BLOCK=64)" in result["fault"]
    assert "The CUDA context is lost" in result["fault"]
    assert "It was lost earlier" in result["next"] and "add" in result["next"]
    assert result["lost"].startswith(ADDRESS_FAULTS)
    assert result["cpu_ok"]


@pytest.mark.gpu
def test_an_illegal_address_without_debug_is_reported_by_the_next_launch(tmp_path):
    pytest.importorskip("torch")
    result = _child(tmp_path, "illegal", debug=False)
    # torch's synchronize reports it first (its own message); kernellab's next launch then
    # says the context is lost and how to find the kernel that faulted
    assert result["fault"]
    assert "The CUDA context is lost" in result["next"] and "debug=True" in result["next"]
    assert "add[grid](x_ptr=float32[64] on cuda:0" in result["next"]
    assert result["cpu_ok"]


@pytest.mark.gpu
def test_a_failed_device_assert_names_the_kernel_and_the_context_loss(tmp_path):
    pytest.importorskip("torch")
    result = _child(tmp_path, "assert", debug=True)
    assert "check_positive faulted on the GPU" in result["fault"] and "CUDA_ERROR_ASSERT" in result["fault"]
    assert "device_assert" in result["fault"] and "check_positive[grid](x_ptr=float32[64] on cuda:0" in result["fault"]
    assert "The CUDA context is lost" in result["next"]
    assert result["cpu_ok"]


@kl.jit
def transpose(x_ptr, y_ptr, M: tl.constexpr, N: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :])
    tl.store(y_ptr + tl.arange(0, N)[:, None] * M + tl.arange(0, M)[None, :], tl.trans(x))


@pytest.mark.gpu
def test_a_launch_asking_for_too_much_shared_memory_names_the_kernel_and_what_to_reduce():
    torch = pytest.importorskip("torch")
    x, y = torch.randn(256 * 512, device="cuda"), torch.empty(256 * 512, device="cuda")
    with pytest.raises(OutOfResources) as error:  # a 256x512 fp32 transpose goes through 512 KB
        transpose[(1,)](x, y, M=256, N=512)
    message = str(error.value)
    assert "transpose: out of resources: shared memory" in message and "Reduce the BLOCK sizes" in message
    assert "transpose[grid](x_ptr=float32[131072] on cuda:0, y_ptr=float32[131072] on cuda:0, M=256, N=512)" in message
    assert driver.context_lost() is None  # refused before launching: the context lives
    transpose[(1,)](x, y, M=32, N=32)  # the process goes on using the GPU
    torch.cuda.synchronize()
    expected = x[: 32 * 32].reshape(32, 32).T.reshape(-1)
    assert torch.equal(y[: 32 * 32], expected)
