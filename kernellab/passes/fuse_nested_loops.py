"""fuse_nested_loops: `tl.range(..., flatten=True)` fuses the loop nest under it into one loop, so
the pipeliner's copies run on across the outer iterations (Triton's FuseNestedLoops).

Tutorial 09's persistent matmul walks its output tiles in an outer loop around the K loop and
an epilogue (convert, store). Pipelined as a nest, every tile drains the pipeline, stores, and
refills it. Fused into one loop over t in [0, outer trips x inner trips), the pipeliner
prefetches the next tile's first K steps while this tile's epilogue runs.

The nest it fuses: an scf.for with `tt.flatten` whose body is pure ops without regions (the
prologue: the tile's index math), exactly one scf.for whose bounds are defined outside the
outer loop, then any ops (the epilogue). The fused loop, for t with outer index o = t / n and
inner index j = t - o * n (n: the inner trips, at least 1):
  - the outer induction variable lb + o * step and the inner one lb' + j * step' are computed
    from t, and the prologue is recomputed from them each iteration: pure ops from the induction
    variable are what the pipeliner's address analysis accepts, so the copies of iteration
    t + S - 1 (maybe of the next tile) get that tile's addresses. Prologue ops only the epilogue
    needs are computed in the epilogue's branch instead;
  - the epilogue runs in `scf.if j == n - 1`, which yields the outer loop's carried values;
  - the inner loop's carried values restart for each tile: one whose initial value is defined
    outside the outer loop (a tile's accumulator, zeros) is reset by the epilogue branch, which
    yields that value for the next tile (the other branch the running one), so the reset costs
    a tile, not a K step, a select per register (and an asynchronous wgmma's accumulator is
    never copied while it runs: the branch writes it after waiting); one the prologue computes
    restarts at j == 0 through `arith.select`;
  - the fused loop's initial values for the inner carried values are the prologue's for the
    first outer iteration.
The fused loop runs only where both loops run at least once; otherwise (no tiles, or K == 0)
the original nest runs, its inner loop replaced by its initial values (it runs zero times
there). The fused loop keeps the inner loop's `tt.num_stages` (else the outer loop's).

A nest of another shape is left alone; the pass's summary says why (the lab shows it).
The interpreter does not run this pass: it is the reference that runs the kernel as written.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects import scf
from xdsl.dialects.builtin import IntegerAttr, ModuleOp
from xdsl.ir import Block, Operation, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.traits import is_side_effect_free

from kernellab.ir import arith
from kernellab.passes.manager import PassOutcome

NAME = "fuse_nested_loops"
FLATTEN = "tt.flatten"


@dataclass
class Nest:
    outer: scf.ForOp
    prologue: list[Operation]
    inner: scf.ForOp
    epilogue: list[Operation]  # without the outer yield


def run(module: ModuleOp) -> PassOutcome:
    fused, kept = 0, []
    loops = [op for op in module.walk() if isinstance(op, scf.ForOp) and FLATTEN in op.attributes]
    for loop in reversed(loops):  # inner nests first
        nest = find_nest(loop)
        if isinstance(nest, str):
            kept.append(nest)
            continue
        _fuse(nest)
        fused += 1
    parts = [f"{fused}× fuse-loop-nest"] if fused else []
    parts += [f"kept a flatten=True nest: {reason}" for reason in kept]
    return PassOutcome(bool(fused), "; ".join(parts) or "no change")


def find_nest(loop: scf.ForOp) -> Nest | str:
    """The nest under `loop` split into its parts, or why it cannot be fused."""
    ops = list(loop.body.block.ops)[:-1]
    inner_loops = [i for i, op in enumerate(ops) if isinstance(op, scf.ForOp)]
    if len(inner_loops) != 1:
        return f"its body holds {len(inner_loops)} scf.for directly, fusing needs exactly one"
    at = inner_loops[0]
    inner = ops[at]
    for op in ops[:at]:
        if op.regions or not is_side_effect_free(op):
            return (f"{op.name} before the inner loop: only pure ops without regions (index math) may "
                    "come before it, as they are recomputed for every inner iteration")  # fmt: skip
    for bound, what in ((inner.lb, "start"), (inner.ub, "end"), (inner.step, "step")):
        if _defined_in(bound, loop):
            return f"the inner loop's {what} is computed in the outer loop: its trip count must not change"
    if loop.lb.type != inner.lb.type:
        return f"the loops count in {loop.lb.type} and {inner.lb.type}: give both bounds one integer type"
    return Nest(loop, ops[:at], inner, ops[at + 1:])


def _defined_in(value: SSAValue, loop: Operation) -> bool:
    owner = value.owner
    op = owner.parent_op() if isinstance(owner, Block) else owner
    return op is not None and (op is loop or loop.is_ancestor(op))


class _Builder:
    """Inserts ops at the end of a block, in order."""

    def __init__(self, block: Block):
        self.block = block

    def add(self, op: Operation) -> Operation:
        self.block.add_op(op)
        return op

    def const(self, value: int, like: SSAValue) -> SSAValue:
        return self.add(arith.ConstantOp(IntegerAttr(value, like.type))).result

    def clone(self, ops: list[Operation], env: dict) -> None:
        """Clone `ops` here, operands (and values their regions use) through `env`, which
        gains their results."""
        for op in ops:
            new = self.add(op.clone(value_mapper=dict(env)))
            env.update(zip(op.results, new.results))


def _trips(b: _Builder, loop: scf.ForOp, zero: SSAValue, one: SSAValue) -> SSAValue:
    """ceil((ub - lb) / step), or 0 when ub <= lb (step > 0, as scf.for has it)."""
    span = b.add(arith.SubiOp(loop.ub, loop.lb)).result
    rounded = b.add(arith.AddiOp(span, b.add(arith.SubiOp(loop.step, one)).result)).result
    count = b.add(arith.DivsiOp(rounded, loop.step)).result
    runs = b.add(arith.CmpiOp("sgt", loop.ub, loop.lb)).result
    return b.add(arith.SelectOp(runs, count, zero)).result


def _fuse(nest: Nest) -> None:
    outer, inner = nest.outer, nest.inner
    outer_body, inner_body = outer.body.block, inner.body.block
    n_outer = len(outer.iter_args)
    before = _Builder(Block())  # its ops go in front of the outer loop
    zero, one = before.const(0, outer.lb), before.const(1, outer.lb)
    outer_trips, inner_trips = _trips(before, outer, zero, one), _trips(before, inner, zero, one)
    total = before.add(arith.MuliOp(outer_trips, inner_trips)).result
    fuses = before.add(arith.CmpiOp("sgt", total, zero)).result

    # the fused loop, in the guard's then-branch
    then = _Builder(Block())
    first_env = {outer_body.args[0]: outer.lb, **dict(zip(outer_body.args[1:], outer.iter_args))}
    then.clone(_slice(list(inner.iter_args), nest.prologue), first_env)
    inner_inits = [first_env.get(v, v) for v in inner.iter_args]
    last_j = then.add(arith.SubiOp(inner_trips, one)).result
    arg_types = [outer.lb.type] + [v.type for v in (*outer.iter_args, *inner_inits)]
    body = _Builder(Block(arg_types=arg_types))
    t = body.block.args[0]
    outer_args = list(body.block.args[1:1 + n_outer])
    inner_args = list(body.block.args[1 + n_outer:])
    o = body.add(arith.DivuiOp(t, inner_trips)).result  # t >= 0, inner_trips >= 1: unsigned is cheaper
    j = body.add(arith.SubiOp(t, body.add(arith.MuliOp(o, inner_trips)).result)).result
    i = body.add(arith.AddiOp(outer.lb, body.add(arith.MuliOp(o, outer.step)).result)).result
    k = body.add(arith.AddiOp(inner.lb, body.add(arith.MuliOp(j, inner.step)).result)).result
    env = {outer_body.args[0]: i, **dict(zip(outer_body.args[1:], outer_args))}
    early = _slice(_used_by(inner), nest.prologue)
    body.clone(early, env)
    first = None
    restarted = []  # inner carried values the epilogue branch resets: their start is invariant
    for m, (arg, init, carried) in enumerate(zip(inner_body.args[1:], inner.iter_args, inner_args)):
        if not _defined_in(init, outer):
            restarted.append(m)
            env[arg] = carried
            continue
        if first is None:
            first = body.add(arith.CmpiOp("eq", j, zero)).result
        env[arg] = body.add(arith.SelectOp(first, env.get(init, init), carried)).result
    env[inner_body.args[0]] = k
    body.clone(list(inner_body.ops)[:-1], env)
    new_inner = [env.get(v, v) for v in inner_body.last_op.operands]
    env.update(zip(inner.results, new_inner))

    epilogue = _Builder(Block())
    epilogue.clone([op for op in nest.prologue if op not in early], env)
    epilogue.clone(nest.epilogue, env)
    outer_yield = [env.get(v, v) for v in outer_body.last_op.operands]
    epilogue.add(scf.YieldOp(*outer_yield, *(inner.iter_args[m] for m in restarted)))
    otherwise = Block([scf.YieldOp(*outer_args, *(new_inner[m] for m in restarted))])
    last = body.add(arith.CmpiOp("eq", j, last_j)).result
    result_types = [v.type for v in outer_args] + [new_inner[m].type for m in restarted]
    branch = body.add(scf.IfOp(last, result_types, [epilogue.block], [otherwise]))
    carried_next = list(new_inner)
    for m, value in zip(restarted, branch.results[n_outer:]):
        carried_next[m] = value
    body.add(scf.YieldOp(*branch.results[:n_outer], *carried_next))
    fused = then.add(scf.ForOp(zero, total, one, [*outer.iter_args, *inner_inits], body.block))
    stages = inner.attributes.get("tt.num_stages") or outer.attributes.get("tt.num_stages")
    if stages is not None:
        fused.attributes["tt.num_stages"] = stages
    then.add(scf.YieldOp(*fused.results[:n_outer]))

    # the guard: the nest as written where one of the loops runs zero times
    guard = scf.IfOp(fuses, [v.type for v in outer.results], [then.block], [Block()])
    for op in list(before.block.ops):
        op.detach()
        Rewriter.insert_op(op, InsertPoint.before(outer))
    Rewriter.insert_op(guard, InsertPoint.before(outer))
    for old, new in zip(outer.results, guard.results):
        old.replace_all_uses_with(new)
    otherwise = guard.false_region.block
    outer.detach()
    otherwise.add_op(outer)
    otherwise.add_op(scf.YieldOp(*outer.results))
    del outer.attributes[FLATTEN]
    for result, init in zip(inner.results, inner.iter_args):  # it runs zero times here
        result.replace_all_uses_with(init)
    Rewriter.erase_op(inner)


def _slice(roots: list[SSAValue], ops: list[Operation]) -> list[Operation]:
    """The ops of `ops` that `roots` are computed from, in order."""
    needed: set[Operation] = set()
    stack = [v.owner for v in roots]
    members = set(ops)
    while stack:
        op = stack.pop()
        if op in needed or op not in members:
            continue
        needed.add(op)
        stack.extend(v.owner for v in op.operands)
    return [op for op in ops if op in needed]


def _used_by(loop: scf.ForOp) -> list[SSAValue]:
    """Every value `loop` and the ops inside it read."""
    return [v for op in loop.walk() for v in op.operands]
