"""The target-neutral LLVM lowering core: TTGIR → LLVM IR (llvmlite) for any target.

`Lowering(module, target, rules, scratch, options).run() -> (llvm text, metadata)`. The core
holds the lowering context (context.py), the per-thread register view of the layouts in the
TTGIR types (layout.py), shared memory by liveness and barriers (smem.py), and the rule
modules for control flow, elementwise math, shape ops and layout conversions, memory,
reductions, scans and the FMA dot, assembled in rules.py. A target (see target.py) supplies
what differs and its own rules; backends/nvidia/lowering is one.
"""

from kernellab.backends.llvm.context import Lowering
from kernellab.backends.llvm.errors import LoweringError
from kernellab.backends.llvm.rules import CORE_RULES, CORE_SCRATCH
from kernellab.backends.llvm.target import Target

__all__ = ["Lowering", "LoweringError", "Target", "CORE_RULES", "CORE_SCRATCH"]
