"""TTGIR → LLVM IR for the host CPU: the LLVM lowering core (kernellab.backends.llvm) with the
CPU target (target.py: warps of one thread holding their part of each tensor, LLVM vector memory
accesses and atomics), the grid loop the launcher calls (grid.py), printf and the status
record for device_print/device_assert (debug.py, checks.py), and tl.dot as register-tiled
vector FMAs (dot.py), tt.scan as vector steps (scans.py), tt.gather as a loop of loads from the scratch (gather.py), the
compare-exchange columns of tl.sort and tl.topk as loops over vector registers (bitonic.py).

`make_llir(module, options) -> (llir_text, metadata)`.
"""

from __future__ import annotations

from xdsl.dialects.builtin import ModuleOp

from kernellab.backends.cpu.host import host_machine
from kernellab.backends.cpu.lowering import (
    bitonic,
    debug,
    dot,
    gather,
    phases,
    reductions,
    scans,
    shapes,
    vector_rules,
)
from kernellab.backends.cpu.lowering.target import CpuTarget
from kernellab.backends.llvm import CORE_RULES, CORE_SCRATCH, Lowering, LoweringError
from kernellab.ir import tt, ttg

_OWN = {**debug.RULES, **reductions.rules(), **scans.rules(), **dot.rules(), **shapes.rules(), **gather.rules(), **bitonic.rules()}
# ops whose exchange among warps through the scratch may end a phase of the program (phases.py)
_PHASED = (tt.ReduceOp, tt.ScanOp, ttg.ConvertLayoutOp, tt.BroadcastOp, tt.ExpandDimsOp, tt.ReshapeOp, tt.TransOp)


def _with_phases(rules: dict) -> dict:
    return {cls: phases.phased(rule) if cls in _PHASED else rule for cls, rule in rules.items()}


RULES = _with_phases({**CORE_RULES, **_OWN, **vector_rules.rules(debug=False)})
DEBUG_RULES = _with_phases({**CORE_RULES, **_OWN, **vector_rules.rules(debug=True)})  # accesses bounds-checked
SCRATCH = {**CORE_SCRATCH, **gather.SCRATCH}


def make_llir(module: ModuleOp, options=None) -> tuple[str, dict]:
    """TTGIR module → (LLVM IR text, metadata with name, shared (scratch bytes per program))."""
    machine = host_machine()
    target = CpuTarget(machine.triple, str(machine.target_data))
    rules = DEBUG_RULES if getattr(options, "debug", False) else RULES
    text, metadata = Lowering(module, target, rules, SCRATCH, options).run()
    return text + _scratch_line(metadata["name"], metadata["shared"]), metadata


def _scratch_line(kernel: str, nbytes: int) -> str:
    """The scratch a program needs, as a module constant in the IR text: what the launcher
    allocates when a compile resumes from the llir stage's text (backend.py reads it back)."""
    return f'@"{kernel}.scratch_bytes" = internal constant i64 {nbytes}\n'


__all__ = ["make_llir", "LoweringError", "CpuTarget", "RULES", "SCRATCH"]
