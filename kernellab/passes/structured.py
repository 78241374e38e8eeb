"""Structured control flow for passes: a walk in program order, for passes and analyses that
carry facts from definitions to uses (scf.for, scf.if and scf.while each go to a method of their
own, their block arguments and results being tied to values inside them; every other op to
`other`), and `reinitialized_for`, for passes that change what a loop carries.
"""

from __future__ import annotations

from xdsl.dialects import scf
from xdsl.ir import Block, Operation, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter


def reinitialized_for(loop: scf.ForOp, inits: list[SSAValue]) -> scf.ForOp:
    """A new scf.for, inserted before `loop`, that runs `loop`'s body (moved, not copied) from
    `inits`. The caller has already changed the body's arguments and yield to match, and maps
    `loop`'s results onto the new loop's before erasing `loop` (an scf.for's carried types are
    fixed when it is built, so a pass that adds or retypes one builds the loop anew)."""
    body = Rewriter.move_region_contents_to_new_regions(loop.body)
    new_loop = scf.ForOp(loop.lb, loop.ub, loop.step, inits, body)
    new_loop.attributes.update(loop.attributes)
    Rewriter.insert_op(new_loop, InsertPoint.before(loop))
    return new_loop


class StructuredWalk:
    def block(self, block: Block) -> None:
        for op in list(block.ops):
            self.op(op)

    def op(self, op: Operation) -> None:
        if isinstance(op, scf.ForOp):
            return self.for_op(op)
        if isinstance(op, scf.IfOp):
            return self.if_op(op)
        if isinstance(op, scf.WhileOp):
            return self.while_op(op)
        return self.other(op)

    def for_op(self, op: scf.ForOp) -> None: ...

    def if_op(self, op: scf.IfOp) -> None: ...

    def while_op(self, op: scf.WhileOp) -> None: ...

    def other(self, op: Operation) -> None: ...
