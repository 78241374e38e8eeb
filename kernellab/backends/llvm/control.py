"""Control flow (scf.for / scf.if / scf.while → basic blocks with phis), program ids, return.

Every value crossing a block boundary is flattened into LLVM values (a scalar is one, a tensor
one per register) so loop-carried tensors become lists of phis; an scf.for carries a tensor of
16-bit floats in pairs, one i32 phi each. Shared-memory buffers
(descriptors) are compile-time facts and pass through unchanged. Barrier bookkeeping follows
the control flow: a loop body starts with its own accesses pending (the previous iteration's),
and an if merges the pending accesses of both branches.
"""

from __future__ import annotations

from xdsl.dialects import scf

import llvmlite.ir as ir

from kernellab.backends.llvm.errors import LoweringError
from kernellab.backends.llvm.regions import flatten, lower_body, unflatten
from kernellab.backends.llvm.types import BF16, F16, I32
from kernellab.ir import tt


def _phis(ctx, templates, block_from, name: str):
    """Phis for every flattened value of `templates`, with the incoming value from block_from."""
    return _phis_of(ctx, [v for t in templates for v in flatten(t)], block_from, name)


def _phis_of(ctx, values, block_from, name: str):
    b = ctx.b
    phis = []
    for v in values:
        p = b.phi(v.type, name=name)
        p.add_incoming(v, block_from)
        phis.append(p)
    return phis


_HALVES = (F16, BF16)


def _packed(ctx, values: list) -> list:
    """A loop-carried tensor's 16-bit floats in pairs, one i32 phi each: the next iteration's
    consumers that want pairs (a register operand of the tensor cores) take the phi as it is,
    and the pair is made where its values are computed, where two narrowing conversions are
    one instruction (cvt.rn.f16x2.f32), rather than two and a pack. Other values pass as they
    are."""
    kinds = {v.type for v in values}
    if len(values) % 2 or len(kinds) != 1 or kinds.pop() not in _HALVES:
        return values
    b = ctx.b
    pair = ir.VectorType(values[0].type, 2)
    out = []
    for lo, hi in zip(values[::2], values[1::2]):
        vec = b.insert_element(b.insert_element(ir.Constant(pair, None), lo, I32(0)), hi, I32(1))
        out.append(b.bitcast(vec, I32))
    return out


def _unpacked(ctx, like: list, values: list) -> list:
    """`_packed`'s values back as `like`'s (the flattened template's) types."""
    if len(values) == len(like):
        return values
    b = ctx.b
    pair = ir.VectorType(like[0].type, 2)
    out = []
    for v in values:
        vec = b.bitcast(v, pair)
        out += [b.extract_element(vec, I32(0)), b.extract_element(vec, I32(1))]
    return out


def _rebuild(templates, flat):
    out, pos = [], 0
    for t in templates:
        v, pos = unflatten(t, flat, pos)
        out.append(v)
    return out


def _loop_blocks(ctx, kind: str, first: str, second: str):
    """(preheader, first, second, exit) blocks of a loop, the builder branching from the
    preheader into `first` and positioned there."""
    b = ctx.b
    pre = b.block
    head = ctx.fn.append_basic_block(f"{kind}.{first}")
    body = ctx.fn.append_basic_block(f"{kind}.{second}")
    exit_ = ctx.fn.append_basic_block(f"{kind}.exit")
    b.branch(head)
    b.position_at_end(head)
    return pre, head, body, exit_


def _for(ctx, op):
    b = ctx.b
    lb, ub, step = ctx.get(op.lb), ctx.get(op.ub), ctx.get(op.step)
    inits = [ctx.get(v) for v in op.iter_args]
    init_flats = [flatten(t) for t in inits]
    packed_inits = [_packed(ctx, flat) for flat in init_flats]
    ctx.barriers.before_loop(ctx.smem.accesses_in(op))
    pre, header, body, exit_ = _loop_blocks(ctx, "for", "header", "body")
    iv = b.phi(lb.type, name="iv")
    iv.add_incoming(lb, pre)
    phis = _phis_of(ctx, [v for flat in packed_inits for v in flat], pre, "carried")
    unpacked, pos = [], 0
    for flat, packed in zip(init_flats, packed_inits):
        unpacked += _unpacked(ctx, flat, phis[pos : pos + len(packed)])
        pos += len(packed)
    carried = _rebuild(inits, unpacked)
    b.cbranch(b.icmp_signed("<", iv, ub), body, exit_)

    before = ctx.barriers.snapshot()
    ctx.barriers.assume_all(ctx.smem.accesses_in(op))
    header_state = ctx.barriers.snapshot()

    b.position_at_end(body)
    block = op.body.block
    ctx.set(block.args[0], iv)
    for arg, v in zip(block.args[1:], carried):
        ctx.set(arg, v)
    term = lower_body(ctx, block)
    yielded = [ctx.get(v) for v in term.operands] if term is not None else []
    nxt = b.add(iv, step)
    latch = b.block
    iv.add_incoming(nxt, latch)
    flat = [v for t, y in zip(inits, yielded) for v in _packed(ctx, flatten(y, like=t))]
    if len(flat) != len(phis):
        raise LoweringError("scf.for yields values whose register counts differ from its inits")
    for p, v in zip(phis, flat):
        p.add_incoming(v, latch)
    b.branch(header)
    ctx.barriers.merge(header_state, ctx.barriers.snapshot(), before)

    b.position_at_end(exit_)
    for res, v in zip(op.results, carried):
        ctx.set(res, v)


def _if(ctx, op):
    b = ctx.b
    cond = ctx.get(op.cond)
    then_bb = ctx.fn.append_basic_block("if.then")
    else_bb = ctx.fn.append_basic_block("if.else")
    merge = ctx.fn.append_basic_block("if.end")
    b.cbranch(cond, then_bb, else_bb)
    start = ctx.barriers.snapshot()
    branches = []
    for bb, region in ((then_bb, op.true_region), (else_bb, op.false_region)):
        ctx.barriers.restore(start)
        b.position_at_end(bb)
        values = []
        if region.blocks:
            term = lower_body(ctx, region.block)
            if term is not None:
                values = [ctx.get(v) for v in term.operands]
        if not b.block.is_terminated:
            branches.append((b.block, values, ctx.barriers.snapshot()))
            b.branch(merge)
    ctx.barriers.merge(*[s for _, _, s in branches])
    b.position_at_end(merge)
    if op.results and branches:
        templates = branches[0][1]
        flats = [[v for t, y in zip(templates, vals) for v in flatten(y, like=t)] for _, vals, _ in branches]
        phis = []
        for i, v0 in enumerate(flats[0]):
            if all(f[i] is v0 for f in flats):
                phis.append(v0)
                continue
            p = b.phi(v0.type)
            for (blk, _, _), f in zip(branches, flats):
                p.add_incoming(f[i], blk)
            phis.append(p)
        for res, v in zip(op.results, _rebuild(templates, phis)):
            ctx.set(res, v)


def _while(ctx, op):
    b = ctx.b
    inits = [ctx.get(v) for v in op.arguments]
    ctx.barriers.before_loop(ctx.smem.accesses_in(op))
    pre, before_bb, after_bb, exit_ = _loop_blocks(ctx, "while", "before", "after")
    phis = _phis(ctx, inits, pre, "wcarried")
    before = ctx.barriers.snapshot()
    ctx.barriers.assume_all(ctx.smem.accesses_in(op))
    before_block = op.before_region.block
    for arg, v in zip(before_block.args, _rebuild(inits, phis)):
        ctx.set(arg, v)
    cond_op = lower_body(ctx, before_block)
    if not isinstance(cond_op, scf.ConditionOp):
        raise LoweringError("scf.while's before region must end in scf.condition")
    cond = ctx.get(cond_op.condition)
    forwarded = [ctx.get(v) for v in cond_op.args]
    b.cbranch(cond, after_bb, exit_)
    cond_state = ctx.barriers.snapshot()

    b.position_at_end(after_bb)
    after_block = op.after_region.block
    for arg, v in zip(after_block.args, forwarded):
        ctx.set(arg, v)
    term = lower_body(ctx, after_block)
    yielded = [ctx.get(v) for v in term.operands] if term is not None else []
    flat = [v for t, y in zip(inits, yielded) for v in flatten(y, like=t)]
    latch = b.block
    for p, v in zip(phis, flat):
        p.add_incoming(v, latch)
    b.branch(before_bb)
    ctx.barriers.merge(cond_state, before)

    b.position_at_end(exit_)
    for res, v in zip(op.results, forwarded):
        ctx.set(res, v)


def _return(ctx, op):
    ctx.b.ret_void()


def _program_id(ctx, op):
    ctx.set(op.result, ctx.target.program_id(ctx, op.axis.value.data))


def _num_programs(ctx, op):
    ctx.set(op.result, ctx.target.num_programs(ctx, op.axis.value.data))


# op class -> fn(ctx, op) emitting its LLVM IR
RULES = {
    scf.ForOp: _for,
    scf.IfOp: _if,
    scf.WhileOp: _while,
    tt.ReturnOp: _return,
    tt.GetProgramIdOp: _program_id,
    tt.GetNumProgramsOp: _num_programs,
}
