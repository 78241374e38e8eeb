"""tt.print (device_print) → vprintf, tt.assert (device_assert) → __assertfail.

device_print prints one line per element, from the one thread that owns it (duplicates in
the layout print once), in the interpreter's format:
    pid (x, y, z) idx (i, j) <prefix> <value>
with " (operand n)" after the prefix when several tensors are printed. Floats print with
"%f" (as Triton), integers with "%d"/"%lld" (unsigned types are signless in the IR: printed
signed), hex=True as 0x%0Nx of the bits. Line order across threads is the GPU's.

device_assert: each thread checks its elements; the first failing one calls __assertfail with
the message, file, line and function name (the launch then fails with an assertion error).
"""

from __future__ import annotations

import llvmlite.ir as ir
from xdsl.dialects.builtin import FileLineColLoc, TensorType

from kernellab.backends.llvm.types import F16, BF16, F32, F64, I32, I64, PTR
from kernellab.ir import tt


def _printf_arg(ctx, v, hex_: bool):
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


def _vprintf(ctx, fmt: str, values: list):
    b = ctx.b
    vprintf = ctx.intrinsic("vprintf", I32, [PTR, PTR])
    fmt_ptr = ctx.cstring(fmt)
    if values:
        struct = ir.LiteralStructType([v.type for v in values])
        slot = _alloca(ctx, struct)
        for i, v in enumerate(values):
            p = b.gep(slot, [I32(0), I32(i)], source_etype=struct)
            b.store(v, p)
        args = slot
    else:
        args = ir.Constant(PTR, None)
    b.call(vprintf, [fmt_ptr, args])


def _alloca(ctx, ty):
    """An alloca in the entry block (so it is allocated once), as an opaque pointer."""
    slot = ctx.pro.alloca(ty)
    return ir.FormattedConstant(PTR, slot.get_reference()) if not slot.type.is_opaque else slot


def _pids(ctx):
    return [ctx.target.program_id(ctx, axis) for axis in range(3)]


def _print(ctx, op):
    b = ctx.b
    label = op.prefix.data.strip()
    hex_ = bool(op.hex.value.data)
    pids = _pids(ctx)
    if not op.args:
        with b.if_then(ctx.dup_predicate(None)):
            _vprintf(ctx, f"pid (%d, %d, %d) {label}\n", pids)
        return
    many = len(op.args) > 1
    for n, arg in enumerate(op.args):
        suffix = f" (operand {n})" if many else ""
        prefix = f"{label}{suffix}"
        x = ctx.get(arg)
        if not isinstance(arg.type, TensorType):
            spec, v = _printf_arg(ctx, x, hex_)
            with b.if_then(ctx.dup_predicate(None)):
                _vprintf(ctx, f"pid (%d, %d, %d) idx () {prefix} {spec}\n".replace("  ", " "), pids + [v])
            continue
        lay = x.lay
        owner = ctx.dup_predicate(lay)
        idx_fmt = ", ".join(["%d"] * lay.rank)

        def emit():
            for r in lay.canonical_regs:
                coords = [ctx.coord(lay, r, d) for d in range(lay.rank)]
                spec, v = _printf_arg(ctx, x.regs[r], hex_)
                fmt = f"pid (%d, %d, %d) idx ({idx_fmt}) {prefix} {spec}\n".replace("  ", " ")
                _vprintf(ctx, fmt, pids + coords + [v])

        if owner is None:
            emit()
        else:
            with b.if_then(owner):
                emit()


def _assert(ctx, op):
    b = ctx.b
    cond = ctx.get(op.condition)
    if isinstance(op.condition.type, TensorType):
        conds = [cond.regs[r] for r in cond.lay.canonical_regs]
    else:
        conds = [cond]
    ok = conds[0]
    for c in conds[1:]:
        ok = b.and_(ok, c)
    loc = op.location
    file, line = ("<unknown>", 0)
    if isinstance(loc, FileLineColLoc):
        file, line = loc.filename.data, loc.line.data
    fail = ctx.intrinsic("__assertfail", ir.VoidType(), [PTR, PTR, I32, PTR, I64])
    with b.if_then(b.not_(ok), likely=False):
        b.call(fail, [ctx.cstring(op.message.data), ctx.cstring(file), I32(line),
                      ctx.cstring(ctx.func_op.sym_name.data), I64(1)])  # fmt: skip


# op class -> fn(ctx, op) emitting its LLVM IR
RULES = {
    tt.PrintOp: _print,
    tt.AssertOp: _assert,
}
