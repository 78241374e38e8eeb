"""loop-pointer-offsets: a tensor of pointers that a loop advances by the same amount in every
element (`a_ptrs += BLOCK_K`) is carried as one scalar offset from its value before the loop.

`%p = addptr(%p, splat(s))` around an scf.for makes the loop carry every pointer of the tile:
a 32×32 tile is 1024 64-bit values, added to and kept live in every iteration, though a
vectorized load reads only the first pointer of each contiguous run. Carrying `%off` (i64,
starting at 0, `%off + s` per iteration) and rebuilding `%p = addptr(%p0, splat(%off))` where
it is used leaves the loop one scalar add, and the code generator, which sees that the loads
need a few lanes of `%p0 + %off`, computes only those. What Triton's AMD backend does for its
buffer loads (canonicalize-pointers), for the same reason.

Taken when the value yielded for the pointer is a chain of `tt.addptr`s from the loop's own
argument, each by a splat of a scalar or a splat constant, in the loop body itself. The sum
is kept in i64: a pointer moves by the offsets' exact sum, whatever their width.
"""

from __future__ import annotations

from xdsl.dialects import scf
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, TensorType, i64
from xdsl.ir import Block, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from kernellab.ir import arith, tt
from kernellab.passes.splats import uniform_int
from kernellab.passes.rewrite import Rewrites
from kernellab.passes.structured import reinitialized_for

NAME = "loop-pointer-offsets"


def run(module: ModuleOp) -> Rewrites:
    rewrites = Rewrites()
    for loop in [op for op in module.walk() if isinstance(op, scf.ForOp)]:
        rewrites.note("carry-scalar-offset", _rewrite(loop))
    return rewrites


def _is_pointer_tensor(t) -> bool:
    return isinstance(t, TensorType) and isinstance(t.element_type, tt.PointerType)


def _uniform_step(value: SSAValue, arg: SSAValue, body: Block) -> list | None:
    """The scalar steps (SSA values or ints) by which `value` advances `arg`, or None if it is
    not `arg` moved by uniform steps in `body`."""
    steps = []
    while value is not arg:
        op = value.owner
        if not isinstance(op, tt.AddPtrOp) or op.parent is not body:
            return None
        step = uniform_int(op.offset)
        if step is None:
            return None
        steps.append(step)
        value = op.ptr
    return steps[::-1]


def _rewrite(loop: scf.ForOp) -> int:
    body = loop.body.block
    yield_op = body.last_op
    plans = []
    for i, arg in enumerate(body.args[1:]):
        if _is_pointer_tensor(arg.type):
            steps = _uniform_step(yield_op.operands[i], arg, body)
            if steps is not None:
                plans.append((i, arg, steps))
    if not plans:
        return 0

    zero = arith.ConstantOp(IntegerAttr(0, i64))
    Rewriter.insert_op(zero, InsertPoint.before(loop))
    inits = list(loop.iter_args)
    yields = list(yield_op.operands)
    rebuilt = []  # (index, the pointers before the loop)
    for i, arg, steps in plans:
        start = inits[i]
        off = body.insert_arg(i64, i + 1)
        off.name_hint = _offset_name(arg)
        current = _rebuild(start, off, InsertPoint.at_start(body))
        arg.replace_all_uses_with(current)
        body.erase_arg(arg)
        total = off
        for step in steps:
            total = _add(total, step, InsertPoint.before(yield_op))
        inits[i], yields[i] = zero.result, total
        rebuilt.append((i, start))
    Rewriter.replace_op(yield_op, scf.YieldOp(*yields))

    new_loop = reinitialized_for(loop, inits)
    rebuilt_at = {i: start for i, start in rebuilt}
    after = InsertPoint.after(new_loop)
    for i, (old, new) in enumerate(zip(loop.results, new_loop.results)):
        if i in rebuilt_at:
            new.name_hint = _offset_name(old)
        if i in rebuilt_at and old.uses:
            new = _rebuild(rebuilt_at[i], new, after)
            after = InsertPoint.after(new.owner)
        old.replace_all_uses_with(new)
    Rewriter.erase_op(loop)
    return len(plans)


def _offset_name(value: SSAValue) -> str | None:
    return f"{value.name_hint}_offset" if value.name_hint else None


def _rebuild(start: SSAValue, offset: SSAValue, at: InsertPoint) -> SSAValue:
    """`addptr(start, splat(offset))` inserted at `at`."""
    t = start.type
    splat = tt.SplatOp(offset, TensorType(i64, t.get_shape(), t.encoding))
    moved = tt.AddPtrOp(start, splat.result)
    Rewriter.insert_op([splat, moved], at)
    return moved.result


def _add(total: SSAValue, step, at: InsertPoint) -> SSAValue:
    """`total + step` in i64 (an int step becomes a constant, a narrower one is sign-extended)."""
    ops = []
    if isinstance(step, int):
        ops.append(arith.ConstantOp(IntegerAttr(step, i64)))
        step = ops[-1].result
    elif step.type != i64:
        ops.append(arith.ExtsiOp(step, i64))
        step = ops[-1].result
    ops.append(arith.AddiOp(total, step))
    Rewriter.insert_op(ops, at)
    return ops[-1].result


__all__ = ["run", "NAME"]
