"""dce: erase pure ops whose results nobody uses, and private functions nobody calls.

An op goes only if it is free of side effects (loads, stores, atomics, prints and asserts stay;
an scf.for or scf.if goes when everything inside it is pure) and is not a terminator. scf.while
stays even when pure: a loop that never ends is behaviour, and erasing it would change it.
Ops are visited uses-first (reverse order, nested regions before their op), so one sweep removes
whole dead chains; sweeps repeat until nothing changes. What it erased is counted on a
`Rewrites` (erase-dead-op, erase-dead-function).
"""

from __future__ import annotations

from xdsl.dialects import scf
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.rewriter import Rewriter
from xdsl.traits import IsTerminator, is_side_effect_free

from kernellab.ir import tt
from kernellab.passes.rewrite import Rewrites

NAME = "dce"


def run(module: ModuleOp) -> Rewrites:
    rewrites = Rewrites()
    while erased := _sweep(module):
        rewrites.note("erase-dead-op", erased)
    rewrites.note("erase-dead-function", remove_dead_functions(module))
    return rewrites


def _dead(op: Operation) -> bool:
    return (
        not any(result.uses for result in op.results)
        and not op.has_trait(IsTerminator)
        and not isinstance(op, scf.WhileOp)
        and is_side_effect_free(op)
    )


def _sweep(module: ModuleOp) -> int:
    """Erase the dead ops of one sweep; how many."""
    erased = 0
    for op in list(module.walk(reverse=True, region_first=True)):
        if _dead(op):
            Rewriter.erase_op(op)
            erased += 1
    return erased


def remove_dead_functions(module: ModuleOp) -> int:
    """Erase private tt.funcs that no tt.call names, until none is left (callers go first);
    how many."""
    erased = 0
    while True:
        called = {
            op.callee.root_reference.data for op in module.walk() if isinstance(op, tt.CallOp)
        }
        dead = [
            f
            for f in module.ops
            if isinstance(f, tt.FuncOp) and f.is_private and f.sym_name.data not in called
        ]
        if not dead:
            return erased
        for func in dead:
            Rewriter.erase_op(func)
        erased += len(dead)
