"""Structured control flow for passes: a walk in program order, for passes and analyses that
carry facts from definitions to uses (scf.for, scf.if and scf.while each go to a method of their
own, their block arguments and results being tied to values inside them; every other op to
`other`), `reinitialized_for`, for passes that change what a loop carries, and `OpBuilder`, for
passes that build loop code from clones of existing ops.
"""

from __future__ import annotations

from xdsl.dialects import scf
from xdsl.dialects.builtin import IntegerAttr, i32
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from kernellab.ir import arith


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


class OpBuilder:
    """Inserts ops at one point, in order: before an op, or at the end of a block being built
    (`.point.block`)."""

    def __init__(self, point: InsertPoint):
        self.point = point

    @classmethod
    def at_end(cls, block: Block) -> OpBuilder:
        return cls(InsertPoint.at_end(block))

    @property
    def block(self) -> Block:
        return self.point.block

    def add(self, op: Operation) -> Operation:
        Rewriter.insert_op(op, self.point)
        return op

    def const(self, value: int, type: Attribute = i32) -> SSAValue:
        return self.add(arith.ConstantOp(IntegerAttr(value, type))).result

    def clone(self, ops: list[Operation], env: dict) -> None:
        """Clone `ops` here, operands (and the values their regions use) through `env`, which
        gains their results."""
        for op in ops:
            new = self.add(op.clone(value_mapper=dict(env)))
            env.update(zip(op.results, new.results))


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
