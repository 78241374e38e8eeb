"""Per-element addresses in the shape NVPTX code generation handles in linear time.

A block of N elements gives each thread N / threads pointers. Written as `gep p, (base + c_i)`
(one variable index per element), LLVM's straight-line strength reduction, run by NVPTX
codegen, compares every such address with the ones before it: quadratic in the elements per
thread (a 65536-element vector add spent 14 s there). Written as `gep (gep p, base), c_i` (one
variable address per distinct base, shared, then constant offsets) the same addresses cost it
nothing, and ptxas folds the constants into `[reg + imm]` addressing.

`split_constant` finds the constant in an offset built by `add`, `mul` and `shl` over the
thread's coordinates (the lowering builds layout coordinates with `add`, see
context.LoweringContext.coord). Equal modulo 2**width, so only the sign extension of an i32
offset that overflows differs: an offset that overflows i32 is out of Triton's semantics anyway.
"""

from __future__ import annotations

import llvmlite.ir as ir


def split_constant(b: ir.IRBuilder, value, made: dict) -> tuple[object, int]:
    """(variable part or None, constant) whose sum is `value`; variable parts are built at
    most once per `made` (one op's elements share them)."""
    if isinstance(value, ir.Constant) and isinstance(value.type, ir.IntType) and isinstance(value.constant, int):
        return None, value.constant
    if not isinstance(value, ir.Instruction) or value.opname not in ("add", "mul", "shl") or len(value.operands) != 2:
        return value, 0
    x, y = value.operands
    if value.opname == "add":
        (bx, cx), (by, cy) = split_constant(b, x, made), split_constant(b, y, made)
        if bx is None or by is None:
            return (by if bx is None else bx), cx + cy
        return _made(b, made, "add", bx, by, value if not (cx or cy) else None), cx + cy
    if not (isinstance(y, ir.Constant) and isinstance(y.constant, int)):
        return value, 0
    if value.opname == "shl" and not 0 <= y.constant < y.type.width:
        return value, 0
    bx, cx = split_constant(b, x, made)
    if not cx:
        return value, 0
    factor = y.constant if value.opname == "mul" else 1 << y.constant
    base = None if bx is None else _made(b, made, "mul", bx, ir.Constant(bx.type, factor))
    return base, cx * factor


def _made(b: ir.IRBuilder, made: dict, opname: str, x, y, existing=None):
    """`x opname y`, built once per `made`; `existing` is an instruction that computes it."""
    key = (opname, id(x), id(y) if isinstance(y, ir.Instruction) else str(y))
    v = made.get(key)
    if v is None:
        v = made[key] = existing or (b.add(x, y) if opname == "add" else b.mul(x, y))
    return v


def element_address(b: ir.IRBuilder, pointer, offset, etype, made: dict):
    """`pointer + offset` (in elements of `etype`) as a shared base address plus a constant."""
    base, c = split_constant(b, offset, made)
    width = offset.type.width
    c = (c + (1 << (width - 1))) % (1 << width) - (1 << (width - 1))  # the i-width value, signed
    key = ("gep", id(pointer), id(base))
    start = made.get(key)
    if start is None:
        start = made[key] = pointer if base is None else b.gep(pointer, [base], source_etype=etype)
    return b.gep(start, [ir.Constant(offset.type, c)], source_etype=etype) if c else start
