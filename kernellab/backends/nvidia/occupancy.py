"""The `occupancy` pass (the PTX stage's last): a warp-group kernel whose registers just miss
one more program per SM gets `.maxnreg` at that step, where ptxas fits it without spilling.

ptxas chooses a kernel's registers without knowing how many programs the launch could keep on
an SM. An attention forward with 8 warps and 83 KB of shared memory could run two per SM; at
146 registers per thread it runs one, and its two warp groups' softmax then has nothing to
overlap with (measured on an H200: 316 TFLOP/s at 146 registers, 379 capped at 128). So the
pass assembles the PTX (the cubin stage reuses that result), and when registers are what
limits the programs per SM and the count is within a quarter of the next step, assembles again
under `.maxnreg` of that step and keeps it if nothing spills. Far from a step (attention at
head dim 128 needs 204) capping would cost more than it gains, and kernels without wgmma keep
ptxas' own choice. A `maxnreg` the user gave is left alone.
"""

from __future__ import annotations

import re

from kernellab.backends.nvidia.cubin import PTXAssemblyError, make_cubin
from kernellab.backends.nvidia.limits import DEVICE_LIMITS, occupancy
from kernellab.backends.nvidia.ptx import LlvmModule, entry_points, max_threads_directive
from kernellab.passes.manager import PassOutcome

NAME = "occupancy"
NEAR = 1.25  # registers at most this far above the next step's cap are worth capping


class _Occupancy:
    NAME = NAME
    STAGE = "ptx"

    @staticmethod
    def run(m: LlvmModule) -> PassOutcome:
        options = m.options
        target = getattr(options, "target", None)
        if (options is None or getattr(options, "maxnreg", None) or target not in DEVICE_LIMITS
                or "wgmma.mma_async" not in m.ptx):  # fmt: skip
            return PassOutcome(False, "left to ptxas")
        name = next(iter(entry_points(m.ptx)), None)
        threads = max_threads_directive(m.ptx, name) if name else None
        if not threads:
            return PassOutcome(False, "left to ptxas: no .maxntid")
        warps = threads // 32
        _, res = make_cubin(m.ptx, options, name=name)
        registers, shared = res["registers"], m.dynamic_shared + res["static_shared"]
        now = occupancy(target, warps, registers, shared)
        others = {k: v for k, v in now["limits"].items() if k != "registers"}
        if min(others.values()) <= now["blocks_per_sm"]:  # registers are not what limits it
            limit = min(others, key=others.get)
            return PassOutcome(False, f"{registers} registers: {_programs(now)}, limited by {limit}")
        cap = _cap_for(target, warps, shared, now["blocks_per_sm"] + 1)
        if cap is None or registers > cap * NEAR:
            return PassOutcome(False, f"{registers} registers: {_programs(now)}, too far from one more")
        capped = with_maxnreg(m.ptx, name, cap)
        try:
            _, res_capped = make_cubin(capped, options, name=name)
        except PTXAssemblyError:  # a wgmma's accumulator alone may need more ("C7602")
            return PassOutcome(False, f"{registers} registers: ptxas can't fit .maxnreg {cap}")
        if res_capped["spill_stores"] or res_capped["spill_loads"]:
            return PassOutcome(False, f"{registers} registers: .maxnreg {cap} would spill")
        after = occupancy(target, warps, res_capped["registers"], shared)
        m.ptx = capped
        return PassOutcome(True, f".maxnreg {cap}: {registers} → {res_capped['registers']} registers, "
                                 f"{_programs(now)} → {_programs(after)}")  # fmt: skip


def _programs(occ: dict) -> str:
    n = occ["blocks_per_sm"]
    return f"{n} program{'s' if n != 1 else ''} per SM"


def _cap_for(target: str, warps: int, shared: int, programs: int) -> int | None:
    """The most registers per thread (a multiple of 8) that keep `programs` per SM, when the
    other limits allow that many."""
    for cap in range(DEVICE_LIMITS[target]["max_registers_per_thread"] // 8 * 8, 23, -8):
        if occupancy(target, warps, cap, shared)["blocks_per_sm"] >= programs:
            return cap
    return None


def with_maxnreg(ptx: str, name: str, registers: int) -> str:
    """`ptx` with `.maxnreg registers` among entry `name`'s performance directives."""
    pattern = re.compile(r"(\.entry\s+" + re.escape(name) + r"\s*\([^)]*\)\s*\n)(\s*\.(?:maxntid|reqntid)[^\n]*\n)", re.S)
    return pattern.sub(lambda mt: f"{mt.group(1)}{mt.group(2)}.maxnreg {registers}\n", ptx, count=1)


OCCUPANCY = _Occupancy()
