"""Per-SM limits of the NVIDIA targets (the CUDA occupancy calculator's numbers for A100 and
H100) and the occupancy estimate made from them: what the lab's resources panel, the autotuner's
table and the runtime's device properties without a GPU read, so all say the same."""

from __future__ import annotations

import math

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

def occupancy(target: str, num_warps: int, registers: int | None = None, shared: int | None = None):
    """Blocks and warps per SM for one kernel on `target`, and what limits them.

    Registers are allocated per warp in units of 256 from each of the SM's four partitions;
    shared memory per block includes the 1 KiB the driver reserves. Without a register count
    (no cubin yet), the estimate is an upper bound and says so.
    """
    limits = DEVICE_LIMITS.get(target)
    if limits is None or not num_warps:
        return None
    max_warps = limits["max_warps_per_sm"]
    bounds = {"warps": max_warps // num_warps, "blocks": limits["max_blocks_per_sm"]}
    if registers:
        unit = limits["register_alloc_unit"]
        per_warp = math.ceil(registers * 32 / unit) * unit
        per_partition = limits["registers_per_sm"] // 4
        warps_by_registers = (
            4 * (per_partition // per_warp)
            if registers <= limits["max_registers_per_thread"]
            else 0
        )
        bounds["registers"] = warps_by_registers // num_warps
    if shared:
        if shared > limits["max_shared_per_block"]:
            bounds["shared memory"] = 0
        else:
            bounds["shared memory"] = limits["shared_per_sm"] // (
                shared + limits["shared_reserved_per_block"]
            )
    blocks = min(bounds.values())
    limited_by = min(bounds, key=lambda k: (bounds[k], k != "warps"))
    return {
        "device": limits["device"],
        "blocks_per_sm": blocks,
        "warps_per_sm": blocks * num_warps,
        "max_warps_per_sm": max_warps,
        "occupancy": blocks * num_warps / max_warps,
        "limited_by": limited_by,
        "limits": bounds,
        "registers_known": bool(registers),
        "device_limits": {k: v for k, v in limits.items() if k != "device"},
    }


__all__ = ["DEVICE_LIMITS", "occupancy"]
