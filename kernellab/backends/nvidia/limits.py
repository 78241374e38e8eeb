"""Per-SM limits of the NVIDIA targets (the CUDA occupancy calculator's numbers for A100 and
H100): what the lab's occupancy estimate and the runtime's device properties without a GPU read,
so both say the same."""

from __future__ import annotations

from kernellab.backends.nvidia.cubin import REGISTERS_PER_SM

DEVICE_LIMITS = {
    "sm_80": {
        "device": "A100 (sm_80)", "registers_per_sm": REGISTERS_PER_SM, "register_alloc_unit": 256,
        "max_registers_per_thread": 255, "max_warps_per_sm": 64, "max_blocks_per_sm": 32,
        "shared_per_sm": 167936, "max_shared_per_block": 166912, "shared_reserved_per_block": 1024,
    },
    "sm_90": {
        "device": "H100 (sm_90)", "registers_per_sm": REGISTERS_PER_SM, "register_alloc_unit": 256,
        "max_registers_per_thread": 255, "max_warps_per_sm": 64, "max_blocks_per_sm": 32,
        "shared_per_sm": 233472, "max_shared_per_block": 232448, "shared_reserved_per_block": 1024,
    },
}  # fmt: skip
DEVICE_LIMITS["sm_90a"] = DEVICE_LIMITS["sm_90"]

__all__ = ["DEVICE_LIMITS"]
