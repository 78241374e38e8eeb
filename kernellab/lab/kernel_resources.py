"""Resources of a compiled kernel and an occupancy estimate from the target's per-SM limits
(the CUDA occupancy calculator's numbers; an estimate, not a measurement)."""

from __future__ import annotations

from kernellab.backends.nvidia.limits import occupancy


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
