"""Turns a TTIR function into pre-decoded instructions, once per kernel.

Every SSA value gets a slot in a flat environment list. Every op becomes a closure
`instr(frame)` that reads its operand slots and writes its result slots, with op names,
attributes, dtypes and helper functions resolved here, so running a kernel is a loop over
closures. Constants (and ranges) are computed here and placed in the initial environment.
Builders for each op are registered with `@builds(OpClass, ...)` by the op modules.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from xdsl.dialects import scf
from xdsl.ir import Block, Operation, Region, SSAValue

from kernellab.backends.interpreter.frame import Frame
from kernellab.backends.interpreter.memory import Site
from kernellab.frontend.builder import location_of
from kernellab.ir import tt

Instr = Callable[[Frame], None]  # runs one op on a frame
BUILDERS: dict[type, Callable[[Compiler, Operation], Instr | None]] = {}
_TERMINATORS = (scf.YieldOp, scf.ConditionOp, tt.ReduceReturnOp, tt.ScanReturnOp, tt.ReturnOp)


def builds(*op_types: type):
    """Register the decorated function as the builder of `op_types`."""

    def register(fn):
        for t in op_types:
            BUILDERS[t] = fn
        return fn

    return register


class Code:
    """A compiled block: its instructions, argument slots, yielded slots and live-in slots."""

    __slots__ = ("instrs", "args", "yields", "live_ins")

    def __init__(self, instrs, args, yields, live_ins):
        self.instrs, self.args, self.yields, self.live_ins = instrs, args, yields, live_ins

    def run(self, fr, args=()) -> list:
        env = fr.env
        for s, v in zip(self.args, args):
            env[s] = v
        for instr in self.instrs:
            instr(fr)
        return [env[s] for s in self.yields]


class Compiler:
    def __init__(self):
        self.slots: dict[SSAValue, int] = {}
        self.template: list = []
        self.op_index = 0

    def slot(self, value: SSAValue) -> int:
        s = self.slots.get(value)
        if s is None:
            s = self.slots[value] = len(self.template)
            self.template.append(None)
        return s

    def const(self, value: SSAValue, array: np.ndarray) -> None:
        """Make `value` a constant of the initial environment."""
        self.template[self.slot(value)] = array

    def region(self, region: Region) -> Code:
        return self.block(region.block)

    def block(self, block: Block) -> Code:
        instrs, yields = [], []
        for op in block.ops:
            self.op_index += 1
            if isinstance(op, _TERMINATORS):
                yields = [self.slot(v) for v in op.operands]
                continue
            builder = BUILDERS.get(type(op))
            if builder is None:
                raise NotImplementedError(f"the interpreter cannot execute '{op.name}' ({self.location(op)})")
            instr = builder(self, op)
            if instr is not None:
                instrs.append(instr)
        args = [self.slot(a) for a in block.args]
        return Code(instrs, args, yields, self.live_ins(block))

    def live_ins(self, block: Block) -> tuple[int, ...]:
        """Slots used inside `block` (or its nested regions) but defined outside it."""
        defined, used = set(block.args), []
        for op in block.walk():
            defined.update(op.results)
            for region in op.regions:
                for b in region.blocks:
                    defined.update(b.args)
            used.extend(op.operands)
        return tuple(sorted({self.slot(v) for v in used if v not in defined}))

    @staticmethod
    def location(op: Operation) -> str:
        """`file:line` of `op` (or of its nearest located ancestor)."""
        while op is not None:
            loc = location_of(op)
            if loc is not None:
                return f"{loc[0]}:{loc[1]}"
            op = op.parent_op()
        return "<unknown location>"

    def site(self, kind: str, op: Operation) -> Site:
        return Site(kind, self.op_index, self.location(op))
