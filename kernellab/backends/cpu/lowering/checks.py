"""The launch status record, and what writes it: failed device assertions and, under
`debug=True`, accesses outside every argument's buffer.

The record is an array of i64 the launcher allocates per launch (status.py reads it back):
    [0] what failed (0 nothing, FAILED_ASSERT, FAILED_BOUNDS)   [1] source line   [2] column
    [3..5] the failing program's id                              [6] message (a C string)
    [7] the address                                              [8] n, then n (first, end) byte ranges
The first failing program wins the record (a compare-and-swap on [0]); the grid loop stops at
the next program. Without `debug` accesses are unchecked, as on a GPU: an access out of bounds
reads or writes whatever is there. With it, every access checks its bytes lie inside one of the
argument buffers (the launcher writes their ranges), and one that does not is skipped and
recorded with its line.
"""

from __future__ import annotations

import llvmlite.ir as ir
from xdsl.dialects.builtin import FileLineColLoc

from kernellab.backends.llvm.types import I64, PTR

FAILED_ASSERT = 1
FAILED_BOUNDS = 2
SLOT_LINE, SLOT_COLUMN, SLOT_PID, SLOT_MESSAGE, SLOT_ADDRESS, SLOT_RANGES = 1, 2, 3, 6, 7, 8


def location(op) -> tuple[str, int, int]:
    loc = op.location
    if isinstance(loc, FileLineColLoc):
        return loc.filename.data, loc.line.data, loc.column.data
    return "<unknown>", 0, 0


def _slot(b, status, i: int):
    return b.gep(status, [I64(i)], source_etype=I64)


def record_failure(ctx, op, what: int, message: str, address=None) -> None:
    """Emit: if this program is the first to fail, write `what`, the op's line, the program
    id, `message` and `address` into the status record."""
    b = ctx.b
    status = ctx.hidden["status"]
    file, line, column = location(op)
    pair = b.cmpxchg(status, I64(0), I64(what), "monotonic", "monotonic")
    with b.if_then(b.extract_value(pair, 1), likely=False):
        b.store(I64(line), _slot(b, status, SLOT_LINE))
        b.store(I64(column), _slot(b, status, SLOT_COLUMN))
        for axis in range(3):
            pid = b.sext(ctx.target.program_id(ctx, axis), I64)
            b.store(pid, _slot(b, status, SLOT_PID + axis))
        b.store(b.ptrtoint(ctx.cstring(f"{file}:{line}: {message}"), I64), _slot(b, status, SLOT_MESSAGE))
        if address is not None:
            b.store(address, _slot(b, status, SLOT_ADDRESS))


def _in_bounds_function(ctx) -> ir.Function:
    """i1 kl_in_bounds(ptr status, i64 first, i64 end): [first, end) inside one of the ranges."""
    fn = ctx.mod.globals.get("kl_in_bounds")
    if fn is not None:
        return fn
    i1 = ir.IntType(1)
    fn = ir.Function(ctx.mod, ir.FunctionType(i1, [PTR, I64, I64]), "kl_in_bounds")
    fn.linkage = "internal"
    status, first, end = fn.args
    entry, head, body, found, missing = (fn.append_basic_block(n) for n in ("entry", "head", "body", "found", "missing"))
    b = ir.IRBuilder(entry)
    n = b.load(_slot(b, status, SLOT_RANGES), typ=I64)
    b.branch(head)
    b.position_at_end(head)
    i = b.phi(I64)
    i.add_incoming(I64(0), entry)
    b.cbranch(b.icmp_signed("<", i, n), body, missing)
    b.position_at_end(body)
    at = b.add(I64(SLOT_RANGES + 1), b.mul(i, I64(2)))
    lo = b.load(b.gep(status, [at], source_etype=I64), typ=I64)
    hi = b.load(b.gep(status, [b.add(at, I64(1))], source_etype=I64), typ=I64)
    inside = b.and_(b.icmp_unsigned(">=", first, lo), b.icmp_unsigned("<=", end, hi))
    i.add_incoming(b.add(i, I64(1)), body)
    b.cbranch(inside, found, head)
    b.position_at_end(found)
    b.ret(ir.Constant(i1, 1))
    b.position_at_end(missing)
    b.ret(ir.Constant(i1, 0))
    return fn


def guard(ctx, op, addr, nbytes: int, pred):
    """The predicate an access of `nbytes` at `addr` runs under: `pred` itself without debug;
    with it, `pred` and "inside an argument's buffer", recording the access that is not."""
    if not getattr(ctx.options, "debug", False):
        return pred
    b = ctx.b
    first = b.ptrtoint(addr, I64)
    ok = b.call(_in_bounds_function(ctx), [ctx.hidden["status"], first, b.add(first, I64(nbytes))])
    wanted = ok if pred is None else pred
    bad = b.not_(ok) if pred is None else b.and_(pred, b.not_(ok))
    kind = op.name.removeprefix("tt.").replace("_", " ")
    with b.if_then(bad, likely=False):
        record_failure(ctx, op, FAILED_BOUNDS, f"out-of-bounds {kind}", first)
    return ok if pred is None else b.and_(wanted, ok)


__all__ = ["guard", "record_failure", "location", "FAILED_ASSERT", "FAILED_BOUNDS"]
