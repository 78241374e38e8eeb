"""licm: hoist loop-invariant pure ops out of scf.for and scf.while bodies.

An op moves in front of its loop when it is free of side effects, has no regions and all its
operands are defined outside the loop (or by ops already hoisted). Loads never move: memory may
change between iterations. Inner loops are processed first, so an op can climb out of several
loops. A hoisted op runs even when its loop runs zero times, so integer division moves only when
its divisor is a constant that cannot fault (not 0; for signed division not -1 either).
Each move is counted on a `Rewrites` (hoist-invariant).
"""

from __future__ import annotations

from xdsl.dialects import scf
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation, SSAValue
from xdsl.traits import IsTerminator, is_side_effect_free

from kernellab.passes.rewrite import Rewrites

NAME = "licm"


def run(module: ModuleOp) -> Rewrites:
    loops = [op for op in module.walk(region_first=True) if isinstance(op, scf.ForOp | scf.WhileOp)]
    rewrites = Rewrites()
    for loop in loops:  # innermost first
        rewrites.note("hoist-invariant", _hoist(loop))
    return rewrites


def _hoist(loop: Operation) -> int:
    """Move `loop`'s invariant ops in front of it; how many."""
    inside = set(loop.walk_blocks())
    hoisted = 0
    for region in loop.regions:
        for block in region.blocks:
            for op in list(block.ops):
                if _invariant(op, inside):
                    op.detach()
                    loop.parent.insert_op_before(op, loop)
                    hoisted += 1
    return hoisted


def _defining_block(value: SSAValue) -> Block | None:
    owner = value.owner
    return owner if isinstance(owner, Block) else owner.parent


def _invariant(op: Operation, inside: set[Block]) -> bool:
    return (
        not op.regions
        and not op.has_trait(IsTerminator)
        and is_side_effect_free(op)
        and all(_defining_block(v) not in inside for v in op.operands)
        and _cannot_fault(op)
    )


_DIVISIONS = {
    "arith.divsi": (0, -1),
    "arith.remsi": (0, -1),
    "arith.divui": (0,),
    "arith.remui": (0,),
}


def _cannot_fault(op: Operation) -> bool:
    if op.name not in _DIVISIONS:
        return True
    import numpy as np

    from kernellab.passes.folding import constant_of  # numpy: only for a division

    divisor = constant_of(op.operands[1])
    return divisor is not None and not any(np.any(divisor == bad) for bad in _DIVISIONS[op.name])
