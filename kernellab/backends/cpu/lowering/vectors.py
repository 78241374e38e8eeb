"""Tensors as LLVM vectors: the CPU's one thread holds a whole tensor, so the CPU rules
(vector_rules.py) keep it as one `<N x T>` value, lane r being register r of its layout.

A `VTV` is a TV (the core's per-register tensor) whose registers are extracted from the vector
only when a core rule asks for them (`regs`, once, right after the vector's definition, so they
dominate every use wherever the asking rule is emitting).
`as_vector` goes the other way for a TV a core rule made. The CPU rules work on whole vectors;
the core's rules keep working on registers, so every op lowers either way.
"""

from __future__ import annotations

import llvmlite.ir as ir

from kernellab.backends.llvm.layout import Lay
from kernellab.backends.llvm.types import I32, TV


class VTV(TV):
    """A tensor held as one LLVM vector (lane r = register r of `lay`)."""

    def __init__(self, ctx, vec, lay: Lay, elem):
        self.ctx, self.vec, self.lay, self.elem = ctx, vec, lay, elem
        self._regs: list | None = None

    @property
    def regs(self) -> list:
        if self._regs is None:
            if isinstance(self.vec, ir.Instruction):
                # the rules' builder always appends at the end of its block: come back there
                b, here = self.ctx.b, self.ctx.b.block
                _position_after(b, self.vec)
                self._regs = [b.extract_element(self.vec, I32(r)) for r in range(self.lay.nregs)]
                b.position_at_end(here)
            else:  # a constant: in the prologue, which dominates everything
                self._regs = [self.ctx.pro.extract_element(self.vec, I32(r)) for r in range(self.lay.nregs)]
        return self._regs

    # across block boundaries a VTV is one vector phi (types.TV's carry protocol)
    def carried(self) -> list:
        return [self.vec]

    def carry(self, other: TV) -> list:
        return [as_vector(self.ctx, other, self.lay)]

    def rebuilt(self, values: list) -> VTV:
        return VTV(self.ctx, values[0], self.lay, self.elem)

    def __repr__(self) -> str:
        return f"VTV({self.vec.type}, {self.lay.shape})"


def _position_after(b, instr) -> None:
    """Position `b` after `instr`, or after the last phi when `instr` is one of its block's."""
    if isinstance(instr, ir.PhiInstr):
        block = instr.parent
        first = next((i for i in block.instructions if not isinstance(i, ir.PhiInstr)), None)
        if first is None:
            b.position_at_end(block)
        else:
            b.position_before(first)
        return
    b.position_after(instr)


def vector_type(ty, n: int) -> ir.VectorType:
    return ir.VectorType(ty, n)


def splat(ctx, value, n: int):
    """<n x T> with every lane `value` (a constant splat for a constant)."""
    if isinstance(value, ir.Constant) and not isinstance(value, ir.FormattedConstant):
        return ir.Constant(vector_type(value.type, n), [value] * n)
    b = ctx.b
    vty = vector_type(value.type, n)
    one = b.insert_element(ir.Constant(vty, None), value, I32(0))
    return b.shuffle_vector(one, ir.Constant(vty, None), ir.Constant(vector_type(I32, n), [0] * n))


def as_vector(ctx, x, lay: Lay):
    """The `<nregs x T>` value of operand `x`: a VTV's vector, a TV's registers packed, a
    scalar splat."""
    if isinstance(x, VTV) and x.lay == lay:
        return x.vec
    n = lay.nregs
    if isinstance(x, TV):
        regs = x.regs
        if all(isinstance(r, ir.Constant) and not isinstance(r, ir.FormattedConstant) for r in regs):
            return ir.Constant(vector_type(regs[0].type, n), list(regs))
        if all(r is regs[0] for r in regs):
            return splat(ctx, regs[0], n)
        b = ctx.b
        v = ir.Constant(vector_type(regs[0].type, n), None)
        for i, r in enumerate(regs):
            v = b.insert_element(v, r, I32(i))
        return v
    return splat(ctx, x, n)


def lanes(ctx, vec, first: int, count: int):
    """Lanes first..first+count-1 of `vec` as a `<count x T>` vector."""
    if first == 0 and count == vec.type.count:
        return vec
    mask = ir.Constant(vector_type(I32, count), list(range(first, first + count)))
    return ctx.b.shuffle_vector(vec, ir.Constant(vec.type, None), mask)


def concat(ctx, parts: list):
    """One vector of the lanes of `parts` (equal-length vectors) in order."""
    b = ctx.b
    while len(parts) > 1:
        joined = []
        for i in range(0, len(parts) - 1, 2):
            a, c = parts[i], parts[i + 1]
            n = a.type.count + c.type.count
            joined.append(b.shuffle_vector(a, c, ir.Constant(vector_type(I32, n), list(range(n)))))
        if len(parts) % 2:
            joined.append(parts[-1])
        parts = joined
    return parts[0]


__all__ = ["VTV", "as_vector", "splat", "lanes", "concat", "vector_type"]
