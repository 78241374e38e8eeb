"""Resources of a compiled kernel and an occupancy estimate from the target's per-SM limits
(the CUDA occupancy calculator's numbers; an estimate, not a measurement)."""

from __future__ import annotations

import math

from kernellab.backends.nvidia.limits import DEVICE_LIMITS


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


def resources(ck) -> dict:
    """Registers, spills, shared memory, threads and (for GPU targets) an occupancy estimate."""
    md = ck.metadata
    num_warps = md.options.num_warps
    target = md.target
    registers, shared = md.registers, md.shared
    out = {
        "target": target,
        "registers": registers,
        "spills": md.spills,
        "shared": shared,
        "threads_per_block": md.threads_per_block or num_warps * 32,
        "num_warps": num_warps,
        "num_stages": md.options.num_stages,
        "num_ctas": md.options.num_ctas,
    }
    occ = occupancy(target, num_warps, registers, shared)
    if occ is not None:
        out["occupancy"] = occ
    return out
