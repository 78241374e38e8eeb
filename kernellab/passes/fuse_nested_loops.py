"""fuse_nested_loops: `tl.range(..., flatten=True)` fuses the loop nest under it into one loop, so
the pipeliner's copies run on across the outer iterations (Triton's FuseNestedLoops).

Tutorial 09's persistent matmul walks its output tiles in an outer loop around the K loop and
an epilogue (convert, store). Pipelined as a nest, every tile drains the pipeline, stores, and
refills it. Fused into one loop over t in [0, outer trips x inner trips), the pipeliner
prefetches the next tile's first K steps while this tile's epilogue runs.

The nest it fuses: an scf.for with `tt.flatten` whose body is pure ops without regions (the
prologue: the tile's index math), exactly one scf.for whose bounds are defined outside the
outer loop, then any ops (the epilogue). The fused loop runs t over [0, outer trips x inner
trips) (n: the inner trips, at least 1) and carries, besides both loops' values, the inner index
j and the outer induction variable i, advanced by increments (j + 1, back to 0 with i += step
at a tile's last step): no division per step, as in Triton's FuseNestedLoops.
  - the prologue's scalar index math (the divisions of a grouped tile order) runs in an
    `scf.if j == 0` at a tile's first step; the other steps take its results, which the loop
    carries. The tensor ops built from them run at every step beside the inner body: before
    layouts a carried tensor would get a layout of its own and its loads a conversion (the
    pipeliner, which runs after layouts, carries the cheap vectors too: carry_tile_values);
    prologue ops only the epilogue needs are computed in the epilogue's branch instead. Being
    pure, the branch is part of the addresses the pipeliner computes for step t + S - 1;
  - the inner induction variable is lb' + j * step';
  - the epilogue runs in `scf.if j + 1 == n`, which yields the outer loop's carried values;
  - the inner loop's carried values restart for each tile: one whose initial value is defined
    outside the outer loop (a tile's accumulator, zeros) is reset by the epilogue branch, which
    yields that value for the next tile (the other branch the running one), so the reset costs
    a tile, not a K step, a select per register (and an asynchronous wgmma's accumulator is
    never copied while it runs: the branch writes it after waiting); one the prologue computes
    restarts at j == 0 through `arith.select`;
  - the fused loop's initial values for the inner and per-tile values are the prologue's for
    the first outer iteration.
The fused loop runs only where both loops run at least once; otherwise (no tiles, or K == 0)
the original nest runs, its inner loop replaced by its initial values (it runs zero times
there). The fused loop keeps the inner loop's `tt.num_stages` (else the outer loop's).

A nest of another shape is left alone; the pass's summary says why (the lab shows it).
The interpreter does not run this pass: it is the reference that runs the kernel as written.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects import scf
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Block, Operation, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.traits import is_side_effect_free

from kernellab.ir import arith
from kernellab.passes.manager import PassOutcome
from kernellab.passes.structured import OpBuilder

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


def _trips(b: OpBuilder, loop: scf.ForOp, zero: SSAValue, one: SSAValue) -> SSAValue:
    """ceil((ub - lb) / step), or 0 when ub <= lb (step > 0, as scf.for has it)."""
    span = b.add(arith.SubiOp(loop.ub, loop.lb)).result
    rounded = b.add(arith.AddiOp(span, b.add(arith.SubiOp(loop.step, one)).result)).result
    count = b.add(arith.DivsiOp(rounded, loop.step)).result
    runs = b.add(arith.CmpiOp("sgt", loop.ub, loop.lb)).result
    return b.add(arith.SelectOp(runs, count, zero)).result


def _fuse(nest: Nest) -> None:
    outer, inner = nest.outer, nest.inner
    outer_body, inner_body = outer.body.block, inner.body.block
    n_outer, n_inner = len(outer.iter_args), len(inner.iter_args)
    before = OpBuilder.at_end(Block())  # its ops go in front of the outer loop
    zero, one = before.const(0, outer.lb.type), before.const(1, outer.lb.type)
    outer_trips, inner_trips = _trips(before, outer, zero, one), _trips(before, inner, zero, one)
    total = before.add(arith.MuliOp(outer_trips, inner_trips)).result
    fuses = before.add(arith.CmpiOp("sgt", total, zero)).result

    # the fused loop, in the guard's then-branch; it carries the outer and inner values, then
    # the inner index j and the outer induction variable, then the tile's prologue values
    early = _slice(_used_by(inner), nest.prologue)  # the prologue the inner loop reads
    per_tile, per_step = _split_prologue(early)
    tile_values = _results_read(per_tile, [*per_step, inner])
    then = OpBuilder.at_end(Block())
    first_env = {outer_body.args[0]: outer.lb, **dict(zip(outer_body.args[1:], outer.iter_args))}
    then.clone(early, first_env)
    inner_inits = [first_env.get(v, v) for v in inner.iter_args]
    arg_types = [outer.lb.type] + [v.type for v in (*outer.iter_args, *inner_inits)]
    arg_types += [outer.lb.type, outer.lb.type] + [v.type for v in tile_values]
    body = OpBuilder.at_end(Block(arg_types=arg_types))
    args = list(body.block.args[1:])
    outer_args, args = args[:n_outer], args[n_outer:]
    inner_args, (j, i), tile_args = args[:n_inner], args[n_inner:n_inner + 2], args[n_inner + 2:]
    env = {outer_body.args[0]: i, **dict(zip(outer_body.args[1:], outer_args))}

    # a tile's first step computes its prologue; the other steps take the carried values
    first = body.add(arith.CmpiOp("eq", j, zero)).result
    starts = []
    if tile_values:
        prologue = OpBuilder.at_end(Block())
        prologue_env = dict(env)
        prologue.clone(per_tile, prologue_env)
        prologue.add(scf.YieldOp(*(prologue_env[v] for v in tile_values)))
        otherwise = Block([scf.YieldOp(*tile_args)])
        types = [v.type for v in tile_values]
        starts = body.add(scf.IfOp(first, types, [prologue.block], [otherwise])).results
    env.update(zip(tile_values, starts))
    body.clone(per_step, env)
    k = body.add(arith.AddiOp(inner.lb, body.add(arith.MuliOp(j, inner.step)).result)).result
    restarted = []  # inner carried values the epilogue branch resets: their start is invariant
    for m, (arg, init, carried) in enumerate(zip(inner_body.args[1:], inner.iter_args, inner_args)):
        if not _defined_in(init, outer):
            restarted.append(m)
            env[arg] = carried
            continue
        env[arg] = body.add(arith.SelectOp(first, env[init], carried)).result
    env[inner_body.args[0]] = k
    body.clone(list(inner_body.ops)[:-1], env)
    new_inner = [env.get(v, v) for v in inner_body.last_op.operands]
    env.update(zip(inner.results, new_inner))

    # a tile's last step runs the epilogue (with the prologue values only it reads)
    next_j = body.add(arith.AddiOp(j, one)).result
    last = body.add(arith.CmpiOp("eq", next_j, inner_trips)).result
    epilogue = OpBuilder.at_end(Block())
    epilogue_roots = _used_by_ops(nest.epilogue) + list(outer_body.last_op.operands)
    epilogue.clone(_slice(epilogue_roots, nest.prologue, known=set(env)), env)
    epilogue.clone(nest.epilogue, env)
    outer_yield = [env.get(v, v) for v in outer_body.last_op.operands]
    epilogue.add(scf.YieldOp(*outer_yield, *(inner.iter_args[m] for m in restarted)))
    otherwise = Block([scf.YieldOp(*outer_args, *(new_inner[m] for m in restarted))])
    result_types = [v.type for v in outer_args] + [new_inner[m].type for m in restarted]
    branch = body.add(scf.IfOp(last, result_types, [epilogue.block], [otherwise]))
    carried_next = list(new_inner)
    for m, value in zip(restarted, branch.results[n_outer:]):
        carried_next[m] = value
    # the indices advance by increments: j wraps to 0 and the outer variable steps at a tile's end
    j_next = body.add(arith.SelectOp(last, zero, next_j)).result
    i_next = body.add(arith.SelectOp(last, body.add(arith.AddiOp(i, outer.step)).result, i)).result
    body.add(scf.YieldOp(*branch.results[:n_outer], *carried_next, j_next, i_next, *starts))
    inits = [*outer.iter_args, *inner_inits, zero, outer.lb, *(first_env[v] for v in tile_values)]
    fused = then.add(scf.ForOp(zero, total, one, inits, body.block))
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


def _slice(roots: list[SSAValue], ops: list[Operation], known=frozenset()) -> list[Operation]:
    """The ops of `ops` that `roots` are computed from, in order (not through `known` values,
    which are at hand)."""
    needed: set[Operation] = set()
    stack = [v.owner for v in roots if v not in known]
    members = set(ops)
    while stack:
        op = stack.pop()
        if op in needed or op not in members:
            continue
        needed.add(op)
        stack.extend(v.owner for v in op.operands if v not in known)
    return [op for op in ops if op in needed]


def _used_by(loop: scf.ForOp) -> list[SSAValue]:
    """Every value `loop` and the ops inside it read."""
    return _used_by_ops([loop])


def _used_by_ops(ops: list[Operation]) -> list[SSAValue]:
    """Every value `ops` and the ops inside them read."""
    return [v for op in ops for nested in op.walk() for v in nested.operands]


def _split_prologue(ops: list[Operation]) -> tuple[list[Operation], list[Operation]]:
    """`ops` (the prologue the inner loop reads) split into the scalar index math, run once per
    tile, and the tensor ops (and what they feed), run at every step: a scalar has no layout,
    so the values carried from tile to tile are scalars, and the tensors built from them take
    whatever layout their loads get."""
    per_step: set[Operation] = set()
    for op in ops:
        tensor = any(isinstance(r.type, TensorType) for r in op.results)
        if tensor or any(v.owner in per_step for v in op.operands):
            per_step.add(op)
    return [op for op in ops if op not in per_step], [op for op in ops if op in per_step]


def _results_read(ops: list[Operation], readers: list[Operation]) -> list[SSAValue]:
    """The results of `ops` that `readers` read (at any depth; a loop's initial values
    included), in order: what a tile's prologue hands its steps."""
    read = set(_used_by_ops(readers))
    return [r for op in ops for r in op.results if r in read]
