"""TTGIR → LLVM IR for NVIDIA GPUs: the LLVM lowering core (kernellab.backends.llvm) with the
NVIDIA target (target.py) and the rules only NVIDIA has (debug.py: printf and assert;
gpu_state.py: special registers, grid-dependency control; mma.py:
tensor-core dots on mma.sync and their operands' ldmatrix loads, over the core's FMA dot and
local_load; wgmma.py: Hopper's warp-group dots; async_copy.py: cp.async; tma.py: TMA copies and
mbarriers).

`make_llir(module, options) -> (llir_text, metadata)`.
"""

from __future__ import annotations

from llvmlite import ir
from xdsl.dialects.builtin import ModuleOp

from kernellab.backends.llvm import CORE_RULES, CORE_SCRATCH, Lowering, LoweringError
from kernellab.backends.metadata import TmaDescriptor
from kernellab.backends.nvidia.lowering import async_copy, debug, gpu_state, mma, tma, wgmma
from kernellab.backends.nvidia.lowering.target import NvidiaTarget
from kernellab.ir import tt, ttg
from kernellab.passes.ttgir.tma import FACTS_ATTR

RULES = {**CORE_RULES, **debug.RULES, **mma.RULES, **wgmma.RULES, **async_copy.RULES, **gpu_state.RULES,
         **tma.RULES}
SCRATCH = {**CORE_SCRATCH, **tma.SCRATCH}


def arch_of(module: ModuleOp, options) -> int:
    """The sm number to lower for: the options' target, else the module's, else 90."""
    for name in (lambda: getattr(options, "target", None), lambda: ttg.target(module)):
        digits = "".join(ch for ch in str(name() or "") if ch.isdigit())
        if digits:
            return int(digits)
    return 90


def shared_memory_plan(module: ModuleOp, options=None):
    """The shared-memory plan (an llvm.smem.SmemPlan) the lowering makes for a TTGIR module:
    what the lab shows as buffers placed by liveness."""
    target = NvidiaTarget(arch_of(module, options))
    lowering = Lowering(module, target, RULES, SCRATCH, options)
    return lowering.plan_shared_memory(tt.entry_function(module))


def make_llir(module: ModuleOp, options=None) -> tuple[str, dict]:
    """TTGIR module → (LLVM IR text, metadata with name, num_warps, threads_per_block, shared,
    bar_syncs; a kernel that builds tensor maps takes the launch's global scratch as a hidden
    last parameter, and says how much per program)."""
    scratch = module.attributes.get(ttg.SCRATCH_SIZE_ATTR)
    hidden = ((tma.SCRATCH_PARAM, ir.PointerType(addrspace=1)),) if scratch is not None else ()
    target = NvidiaTarget(arch_of(module, options), hidden_params=hidden)
    text, facts = Lowering(module, target, RULES, SCRATCH, options).run()
    descriptors = tma_descriptors(tt.entry_function(module))
    if descriptors:
        facts["tma_descriptors"] = [d.as_dict() for d in descriptors]
    if scratch is not None:  # the launch gives each program this much global memory
        facts["global_scratch_size"] = scratch.value.data
        facts["global_scratch_align"] = tma.MAP_BYTES
    return text, facts


def tma_descriptors(func: tt.FuncOp) -> list[TmaDescriptor]:
    """The tensor maps the launcher encodes for the kernel's TMA parameters (their `tt.tma`
    argument attributes, written by passes/ttgir/tma.py), in parameter order."""
    out = []
    for attrs in func.arg_attrs.data if func.arg_attrs else ():
        facts = attrs.data.get(FACTS_ATTR)
        if facts is None:
            continue
        d = facts.data

        def source(field):
            (kind, n), = field.data.items()
            return (kind, n.value.data)

        out.append(TmaDescriptor(
            d["param"].data, source(d["base"]), tuple(source(f) for f in d["shape"].data),
            tuple(source(f) for f in d["strides"].data), tuple(b.value.data for b in d["box"].data),
            d["swizzle"].value.data, d["fill"].data, d["access"].data,
        ))  # fmt: skip
    return out


__all__ = ["make_llir", "shared_memory_plan", "LoweringError", "NvidiaTarget", "RULES", "SCRATCH"]
