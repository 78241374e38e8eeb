"""Where new IR goes: an insertion point plus the source location stamped on every op.

The AST visitor moves the location as it walks; the semantic layer calls `create` and never
thinks about locations or blocks. Every op therefore carries the line and column of the
expression that produced it, which is what lets the lab map IR lines back to source lines.
"""

from __future__ import annotations

from contextlib import contextmanager

from xdsl.dialects.builtin import FileLineColLoc, IntAttr, StringAttr
from xdsl.ir import Attribute, Block, Operation, SSAValue

from kernellab.language import core as tl


class SourceLocation:
    """A position in user source: file (or notebook cell) name, 1-based line, 0-based column."""

    __slots__ = ("filename", "line", "col")

    def __init__(self, filename: str, line: int, col: int):
        self.filename, self.line, self.col = filename, line, col

    def to_attr(self) -> FileLineColLoc:
        return FileLineColLoc(StringAttr(self.filename), IntAttr(self.line), IntAttr(self.col))

    def __repr__(self) -> str:
        return f"{self.filename}:{self.line}:{self.col}"


class IRBuilder:
    """Appends ops to the current block with the current source location."""

    def __init__(self, block: Block | None = None, loc: SourceLocation | None = None):
        self.block = block
        self.loc = loc

    def create(self, op: Operation) -> Operation:
        """Insert `op` at the end of the current block, stamped with the current location."""
        if self.loc is not None:
            op.location = self.loc.to_attr()
        assert self.block is not None, "no insertion block"
        self.block.add_op(op)
        return op

    def value(self, op: Operation, type: tl.dtype) -> tl.tensor:
        """Insert a single-result op and wrap its result as a language value of `type`."""
        self.create(op)
        return tl.tensor(op.results[0], type)

    @contextmanager
    def at_block(self, block: Block):
        """Temporarily insert into `block` (a loop body, a branch, a combine region)."""
        saved = self.block
        self.block = block
        try:
            yield block
        finally:
            self.block = saved

    @contextmanager
    def at_loc(self, loc: SourceLocation | None):
        saved = self.loc
        if loc is not None:
            self.loc = loc
        try:
            yield
        finally:
            self.loc = saved


def name_value(value: SSAValue, name: str) -> None:
    """Give an SSA value a Python variable's name so IR prints `%offs` instead of `%5`."""
    if name.isidentifier() and not name.startswith("_") and value.name_hint is None:
        value.name_hint = name


def location_of(op: Operation) -> tuple[str, int, int] | None:
    """(file, line, col) of an op created by the frontend, or None."""
    loc: Attribute = op.location
    if isinstance(loc, FileLineColLoc):
        return loc.filename.data, loc.line.data, loc.column.data
    return None


__all__ = ["IRBuilder", "SourceLocation", "name_value", "location_of"]
