"""A walk over structured control flow in program order, for passes and analyses that carry
facts from definitions to uses: scf.for, scf.if and scf.while each go to a method of their own
(their block arguments and results are tied to values inside them); every other op to `other`.
"""

from __future__ import annotations

from xdsl.dialects import scf
from xdsl.ir import Block, Operation


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
