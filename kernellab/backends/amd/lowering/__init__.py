"""TTGIR → LLVM IR for AMD GPUs (compile-only): the LLVM lowering core with the AMD target
(target.py: wave64, ds_bpermute, LDS, s_barrier) and its printf/assert (debug.py). tl.dot is
the core's FMA dot in this version.

`make_llir(module, options) -> (llir_text, metadata)`.
"""

from __future__ import annotations

from xdsl.dialects.builtin import ModuleOp

from kernellab.backends.amd.lowering import debug
from kernellab.backends.amd.lowering.target import AmdTarget
from kernellab.backends.llvm import CORE_RULES, CORE_SCRATCH, Lowering, LoweringError

RULES = {**CORE_RULES, **debug.RULES}
SCRATCH = dict(CORE_SCRATCH)


def make_llir(module: ModuleOp, options) -> tuple[str, dict]:
    from kernellab.backends.amd.pipeline import target_machine

    arch = options.target
    target = AmdTarget(int(arch.removeprefix("gfx")), str(target_machine(arch).target_data))
    return Lowering(module, target, RULES, SCRATCH, options).run()


__all__ = ["make_llir", "LoweringError", "AmdTarget", "RULES", "SCRATCH"]
