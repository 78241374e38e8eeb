"""`kl.runtime.driver.active`: the device a launch would use, with the calls Triton's tutorials
make on `triton.runtime.driver.active` before their first kernel (the torch device to allocate
on, the compile target, the SM count and limits that size persistent grids).

With a visible NVIDIA GPU it answers for that GPU (current device, its compute capability, the
driver's attributes). Without one, kernels run on the interpreter, which executes them with
NVIDIA semantics as compiled for kernellab's default target, so it answers as that target:

- `get_active_torch_device()`: `torch.device("cpu")` (CPU tensors run on the interpreter);
- `get_current_target()`: `GPUTarget("cuda", 90, 32)` (the default compile target, sm_90, so
  tutorials take their CUDA branches);
- `utils.get_device_properties(i)`: `multiprocessor_count` = the CPU's core count (the
  interpreter's parallel units), `max_num_regs` = 65536 (sm_90's register file per block),
  `max_shared_mem` = 232448 (sm_90's opt-in shared memory per block, 227 KiB), `warpSize` = 32.

Nothing is loaded at import: the CUDA driver on the first call, torch only when asked for a
torch device.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from kernellab.backends.nvidia import driver as cuda
from kernellab.backends.nvidia.backend import DEFAULT_ARCH
from kernellab.backends.nvidia.cubin import REGISTERS_PER_SM
from kernellab.backends.nvidia.limits import DEVICE_LIMITS
from kernellab.backends.nvidia.ptx import parse_arch

WARP_SIZE = 32
# the default target's opt-in shared memory per block, what the interpreter reports
INTERPRETER_MAX_SHARED_MEM = DEVICE_LIMITS[DEFAULT_ARCH]["max_shared_per_block"]


@dataclass(frozen=True)
class GPUTarget:
    """What `get_current_target()` returns, as Triton's: backend name, arch, warp size."""

    backend: str
    arch: int
    warp_size: int


class DeviceUtils:
    """`driver.active.utils`: per-device properties, as Triton's CUDA driver reports them."""

    def get_device_properties(self, device: int | None = None) -> dict:
        """`multiprocessor_count`, `max_num_regs`, `max_shared_mem` (bytes), `warpSize` of
        device `device` (None: the current one); the interpreter's values without a GPU."""
        if not cuda.available():
            return {
                "multiprocessor_count": os.cpu_count() or 1,
                "max_num_regs": REGISTERS_PER_SM,
                "max_shared_mem": INTERPRETER_MAX_SHARED_MEM,
                "warpSize": WARP_SIZE,
            }
        info = cuda.device_info(_device_index(device))
        return {
            "multiprocessor_count": info.sm_count,
            "max_num_regs": info.registers_per_block,
            "max_shared_mem": info.max_shared_per_block_optin,
            "warpSize": WARP_SIZE,
        }


class ActiveDriver:
    """`driver.active`: answers for the visible GPU, or for the interpreter without one."""

    def __init__(self):
        self.utils = DeviceUtils()

    def is_interpreter(self) -> bool:
        """True when no GPU is visible and kernels run on the interpreter."""
        return not cuda.available()

    def get_current_device(self) -> int:
        return 0 if self.is_interpreter() else cuda.current_device_index()

    def get_current_target(self) -> GPUTarget:
        if self.is_interpreter():
            return GPUTarget("cuda", parse_arch(DEFAULT_ARCH)[0], WARP_SIZE)
        major, minor = cuda.device_info(self.get_current_device()).capability
        return GPUTarget("cuda", major * 10 + minor, WARP_SIZE)

    def get_active_torch_device(self):
        """The torch device to allocate kernel arguments on: the current CUDA device, or the
        CPU (whose tensors run on the interpreter)."""
        try:
            import torch
        except ImportError:
            raise ImportError(
                "get_active_torch_device() returns a torch.device, so it needs torch; without "
                "it, pass numpy arrays to kernels (they run on the interpreter)"
            ) from None
        if self.is_interpreter():
            return torch.device("cpu")
        return torch.device("cuda", self.get_current_device())


def _device_index(device: int | None) -> int:
    return cuda.current_device_index() if device is None else int(device)


active = ActiveDriver()

__all__ = ["ActiveDriver", "DeviceUtils", "GPUTarget", "active"]
