"""device_print's lines, for any target's printf (and device_assert's condition): one line per element, from the one thread
that owns it (duplicates in the layout print once), in the interpreter's format:
    pid (x, y, z) idx (i, j) <prefix> <value>
with " (operand n)" after the prefix when several tensors are printed. Floats print with
"%f" (as Triton), integers with "%d"/"%lld" (unsigned types are signless in the IR: printed
signed), hex=True as 0x%0Nx of the bits. A target passes its printf (NVIDIA: vprintf; CPU:
the C library's printf).
"""

from __future__ import annotations

import llvmlite.ir as ir
from xdsl.dialects.builtin import TensorType

from kernellab.backends.llvm.types import F16, BF16, F32, F64, I32, I64


def printf_arg(ctx, v, hex_: bool):
    """(format spec, promoted value) for one printed value."""
    b = ctx.b
    ty = v.type
    if isinstance(ty, ir.PointerType):
        return "%p", b.ptrtoint(v, I64) if ty.addrspace else v
    if hex_:
        w = ty.width if isinstance(ty, ir.IntType) else {F16: 16, BF16: 16, F32: 32, F64: 64}[ty]
        bits = v if isinstance(ty, ir.IntType) else b.bitcast(v, ir.IntType(w))
        if w == 64:
            return "0x%016llx", bits
        digits = max(1, w // 4)
        return f"0x%0{digits}x", b.zext(bits, I32) if w < 32 else bits
    if isinstance(ty, ir.IntType):
        if ty.width == 64:
            return "%lld", v
        if ty.width == 1:
            return "%d", b.zext(v, I32)
        return "%d", b.sext(v, I32) if ty.width < 32 else v
    if ty in (F16, BF16):
        return "%f", b.fpext(b.fpext(v, F32), F64) if ty == BF16 else b.fpext(v, F64)
    if ty == F32:
        return "%f", b.fpext(v, F64)
    return "%f", v


def _pids(ctx):
    return [ctx.target.program_id(ctx, axis) for axis in range(3)]


def lower_print(ctx, op, printf) -> None:
    """Emit `op` (tt.print) as calls `printf(ctx, format, values)` of the target's printf."""
    b = ctx.b
    label = op.prefix.data.strip()
    hex_ = bool(op.hex.value.data)
    pids = _pids(ctx)
    if not op.args:
        with b.if_then(ctx.dup_predicate(None)):
            printf(ctx, f"pid (%d, %d, %d) {label}\n", pids)
        return
    many = len(op.args) > 1
    for n, arg in enumerate(op.args):
        suffix = f" (operand {n})" if many else ""
        prefix = f"{label}{suffix}"
        x = ctx.get(arg)
        if not isinstance(arg.type, TensorType):
            spec, v = printf_arg(ctx, x, hex_)
            with b.if_then(ctx.dup_predicate(None)):
                printf(ctx, f"pid (%d, %d, %d) idx () {prefix} {spec}\n".replace("  ", " "), pids + [v])
            continue
        lay = x.lay
        owner = ctx.dup_predicate(lay)
        idx_fmt = ", ".join(["%d"] * lay.rank)

        def emit():
            for r in lay.canonical_regs:
                coords = [ctx.coord(lay, r, d) for d in range(lay.rank)]
                spec, v = printf_arg(ctx, x.regs[r], hex_)
                fmt = f"pid (%d, %d, %d) idx ({idx_fmt}) {prefix} {spec}\n".replace("  ", " ")
                printf(ctx, fmt, pids + coords + [v])

        if owner is None:
            emit()
        else:
            with b.if_then(owner):
                emit()


def assert_holds(ctx, op):
    """i1: tt.assert `op`'s condition holds in every element this thread has."""
    b = ctx.b
    cond = ctx.get(op.condition)
    conds = [cond.regs[r] for r in cond.lay.canonical_regs] if isinstance(op.condition.type, TensorType) else [cond]
    ok = conds[0]
    for c in conds[1:]:
        ok = b.and_(ok, c)
    return ok


__all__ = ["lower_print", "printf_arg", "assert_holds"]
