"""cse: replace a pure op by an identical one that dominates it.

Two ops are identical when they have the same name, operands, properties, attributes and result
types. Scoping follows dominance in structured control flow: an op may be reused by ops later in
its block and inside regions nested there, never by ops outside the region it lives in. Ops with
memory effects (tt.load included: a store may sit between two loads) are never merged, except
immutable shared copies of one value (`_frozen_copy`), nor are ops with regions (comparing
regions costs more than it saves in block programs). Each merge is counted on a `Rewrites`
(merge-duplicate).
"""

from __future__ import annotations

from collections import ChainMap

from xdsl.ir import Block, Operation
from xdsl.rewriter import Rewriter
from xdsl.traits import IsolatedFromAbove, IsTerminator, is_side_effect_free

from kernellab.ir import ttg
from kernellab.passes.rewrite import Rewrites

NAME = "cse"


def run(module) -> Rewrites:
    rewrites = Rewrites()
    rewrites.note("merge-duplicate", _cse_block(module.body.block, ChainMap()))
    return rewrites


def _key(op: Operation) -> tuple:
    return (
        op.name,
        tuple(op.operands),
        tuple(sorted(op.properties.items())),
        tuple(sorted(op.attributes.items())),
        tuple(op.result_types),
    )


def _mergeable(op: Operation) -> bool:
    return (
        bool(op.results)
        and not op.regions
        and not op.has_trait(IsTerminator)
        and (is_side_effect_free(op) or _frozen_copy(op))
    )


def _frozen_copy(op: Operation) -> bool:
    """A shared buffer made from a value and never written again (`ttg.local_alloc %x` into an
    immutable memdesc): it holds that value for as long as it lives, so two copies of one value
    are one. Attention staged Q twice where two dots read it (the overlapped order's first Q·Kᵀ
    before its loop and the loop's): 16 KB of shared memory and its stores, once more."""
    return isinstance(op, ttg.LocalAllocOp) and op.src is not None and not op.result.type.mutable


def _cse_block(block: Block, scope: ChainMap) -> int:
    """Merge the duplicates in `block` and the regions nested in it; how many."""
    merged = 0
    for op in list(block.ops):
        if _mergeable(op):
            key = _key(op)
            earlier = scope.get(key)
            if earlier is not None:
                for old, new in zip(op.results, earlier.results):
                    if new.name_hint is None:
                        new.name_hint = old.name_hint
                Rewriter.replace_op(op, [], list(earlier.results))
                merged += 1
                continue
            scope[key] = op
        for region in op.regions:
            outer = ChainMap() if op.has_trait(IsolatedFromAbove) else scope
            for inner in region.blocks:
                merged += _cse_block(inner, outer.new_child())
    return merged
