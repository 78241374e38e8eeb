"""Tensors as LLVM vectors: the CPU's one thread holds a whole tensor, so the CPU rules
(vector_rules.py) keep it as one `<N x T>` value, lane r being register r of its layout.

A `VTV` is a TV (the core's per-register tensor) whose registers are extracted from the vector
only when a core rule asks for them (`regs`, once, right after the vector's definition, so they
dominate every use wherever the asking rule is emitting).
`as_vector` goes the other way for a TV a core rule made. The CPU rules work on whole vectors;
the core's rules keep working on registers, so every op lowers either way.
"""

from __future__ import annotations

import functools

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


class _Literal(ir.FormattedConstant):
    """A constant written from its text once: llvmlite rebuilds and formats a vector constant
    lane by lane on every use, which for thousands of shuffles of wide tensors dominates the
    lowering's time. `lanes` (a shuffle mask's) are what llvmlite checks masks against."""

    def __init__(self, ty, text: str, lanes: tuple[int, ...] = ()):
        # not Constant.__init__, which splats vectors lane by lane
        self.type, self._text = ty, text
        self.constant = tuple(ir.Constant(I32, i) for i in lanes) if lanes else text

    def _to_string(self):
        return self._text

    def _get_reference(self):
        return self._text


def undefined(ty):
    """`poison` of type `ty`: the unused operand of a shuffle, the start of an insert chain."""
    return _Literal(ty, "poison")


def constant_vector(elements: list):
    """A `<n x T>` constant of llvmlite scalar constants, its text made once."""
    ty = vector_type(elements[0].type, len(elements))
    return _Literal(ty, "<" + ", ".join(f"{c.type} {c.get_reference()}" for c in elements) + ">")


@functools.lru_cache(maxsize=4096)
def lane_mask(lanes: tuple[int, ...]):
    """The `<n x i32>` shufflevector mask picking `lanes`, made once per distinct mask."""
    text = "zeroinitializer" if not any(lanes) else "<" + ", ".join(f"i32 {i}" for i in lanes) + ">"
    return _Literal(vector_type(I32, len(lanes)), text, lanes)


def splat(ctx, value, n: int):
    """<n x T> with every lane `value` (a constant splat for a constant)."""
    if isinstance(value, ir.Constant) and not isinstance(value, ir.FormattedConstant):
        return ir.Constant(vector_type(value.type, n), [value] * n)
    b = ctx.b
    vty = vector_type(value.type, n)
    one = b.insert_element(undefined(vty), value, I32(0))
    return b.shuffle_vector(one, undefined(vty), lane_mask((0,) * n))


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
        v = undefined(vector_type(regs[0].type, n))
        for i, r in enumerate(regs):
            v = b.insert_element(v, r, I32(i))
        return v
    return splat(ctx, x, n)


def lanes(ctx, vec, first: int, count: int):
    """Lanes first..first+count-1 of `vec` as a `<count x T>` vector."""
    if first == 0 and count == vec.type.count:
        return vec
    return ctx.b.shuffle_vector(vec, undefined(vec.type), lane_mask(tuple(range(first, first + count))))


def concat(ctx, parts: list):
    """One vector of the lanes of `parts` (equal-length vectors) in order."""
    b = ctx.b
    while len(parts) > 1:
        joined = []
        for i in range(0, len(parts) - 1, 2):
            a, c = parts[i], parts[i + 1]
            n = a.type.count + c.type.count
            joined.append(b.shuffle_vector(a, c, lane_mask(tuple(range(n)))))
        if len(parts) % 2:
            joined.append(parts[-1])
        parts = joined
    return parts[0]


def permute(ctx, vec, picks: list):
    """The vector whose lane i is lane picks[i] of `vec` (one shufflevector; none for the
    identity)."""
    if picks == list(range(vec.type.count)):
        return vec
    return ctx.b.shuffle_vector(vec, undefined(vec.type), lane_mask(tuple(picks)))


__all__ = ["VTV", "as_vector", "splat", "lanes", "concat", "permute", "vector_type", "undefined", "lane_mask",
           "constant_vector"]
