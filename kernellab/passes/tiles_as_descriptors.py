"""tiles-as-descriptors: a pointer load that reads a whole 2-D tile of a strided tensor becomes a
tensor-descriptor load, so a target with a tile copy engine (Hopper's TMA) copies it whole.

Triton's tutorial matmul reads its operands through pointer tiles,

    offs_am = (pid_m * BM + tl.arange(0, BM)) % M
    a_ptrs = a_ptr + offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak
    for k in range(tl.cdiv(K, BK)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BK, other=0.0)
        ...
        a_ptrs += BK * stride_ak

which on Hopper are copied by every thread with cp.async, when one thread could have the TMA
copy the tile (the same kernel written with `tl.make_tensor_descriptor` runs about 1% faster
on an H200). This pass proves, per load, that it reads what `desc.load` would and rewrites it:

- the pointers are `base + Σ_d index_d * stride_d` over the tile's two dims, each index a
  contiguous run `start_d + arange(B_d)`, perhaps wrapped `% D_d`; in a loop, the pointers
  advance along one dim by a constant multiple of its stride per iteration, which makes that
  dim's start `start_d + c * (iv - lb) / step`;
- each dim is bounded in one of two ways. A mask conjunct `start_d + arange < D_d` (in any
  affine spelling, `offs_k < K - k * BK` included) with `other` zero: outside the tensor the
  load reads zero, which is what the descriptor's zero padding reads. Or a wrap `% D_d`: rows
  past D_d read row `r % D_d` where the descriptor reads zero, so the pass follows the tile to
  every use (elementwise ops, a dot that keeps the row (operand a, dim 0) or the column (b, dim
  1), the loop that carries the accumulator) and accepts only if each value that holds such a
  row reaches memory through a store whose mask has the conjunct `start_d + arange < D_d`: the
  rows that differ are never written. The tutorial's `c_mask = offs_cm[:, None] < M & ...` is
  that conjunct;
- the descriptor `(base, shape=[D_0, D_1], strides=[stride_0, stride_1])` satisfies the
  target's rules (`keep(op)` says why not: for TMA, the alignment AxisInfo knows, the last
  stride the constant 1, the box).

"The same" holds for every kernel the interpreter, the reference, runs without an
out-of-bounds error: an index below 0, which the descriptor reads as zero where the pointer
load would read before the tensor, is such an error there.

Only a dot's a and b loads are taken (loads that only dots read), both or neither: a loop's
pipeline copies its tiles one way. A load that fails any of the above stays as it is, and so
does its partner; the record names the reason. Loop-carried pointers that no load reads any
more are dropped from the loop. Not in debug
compiles (their bounds checks are on pointer accesses), and not on the interpreter, which runs
the kernel as written. A later pass (lower_descriptors) keeps the new ops for TMA.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from xdsl.dialects import scf
from xdsl.dialects.builtin import IntegerAttr, IntegerType, ModuleOp, TensorType, i32
from xdsl.ir import BlockArgument, Operation, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from kernellab.ir import arith, tt
from kernellab.passes.manager import PassOutcome
from kernellab.passes.rewrite import Rewrites
from kernellab.passes.splats import splat_of, uniform_int
from kernellab.passes.structured import reinitialized_for

NAME = "tiles_as_descriptors"

_I64 = IntegerType(64)


# -- affine forms ------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Arange:
    """The element index along one dim of a tensor: the `arange` of a linear form."""

    dim: int


@dataclass
class Linear:
    """Σ coefficient · atom + constant, over scalar SSA values and `_Arange` dims: an index (of
    a tensor, per element) as the pass reasons about it."""

    terms: dict = field(default_factory=dict)
    const: int = 0

    def plus(self, other: Linear, sign: int = 1) -> Linear:
        terms = dict(self.terms)
        for atom, c in other.terms.items():
            terms[atom] = terms.get(atom, 0) + sign * c
            if not terms[atom]:
                del terms[atom]
        return Linear(terms, self.const + sign * other.const)

    def scaled(self, c: int) -> Linear:
        return Linear({a: k * c for a, k in self.terms.items()} if c else {}, self.const * c)

    def moved(self, at: Callable[[int], int]) -> Linear:
        """The dims of the aranges renumbered (an expand_dims)."""
        renumbered = {(_Arange(at(a.dim)) if isinstance(a, _Arange) else a): c for a, c in self.terms.items()}
        return Linear(renumbered, self.const)

    def without(self, atom) -> Linear:
        return Linear({a: c for a, c in self.terms.items() if a != atom}, self.const)

    def has_arange(self) -> bool:
        return any(isinstance(a, _Arange) for a in self.terms)


def linear(value: SSAValue) -> Linear | None:
    """`value` (an integer scalar or tensor) as a linear form; None where it is not affine in
    the values the pass can name (a tensor it can't read element by element)."""
    op = value.owner
    tensor = isinstance(value.type, TensorType)
    if isinstance(op, arith.ConstantOp):
        c = splat_of(value)
        return Linear(const=c) if isinstance(c, int) else None
    if isinstance(op, tt.MakeRangeOp):
        return Linear({_Arange(0): 1}, op.start.value.data)
    if isinstance(op, tt.SplatOp):
        return linear(op.src)
    if isinstance(op, tt.BroadcastOp):  # size-1 dims widen: the aranges stay where they are
        return linear(op.src)
    if isinstance(op, tt.ExpandDimsOp):
        inner = linear(op.src)
        axis = op.axis.value.data
        return inner and inner.moved(lambda d: d if d < axis else d + 1)
    if isinstance(op, (arith.AddiOp, arith.SubiOp)):
        a, b = linear(op.lhs), linear(op.rhs)
        return a.plus(b, 1 if isinstance(op, arith.AddiOp) else -1) if a and b else None
    if isinstance(op, arith.MuliOp):
        for x, y in ((op.lhs, op.rhs), (op.rhs, op.lhs)):
            c = splat_of(y)
            if isinstance(c, int):
                form = linear(x)
                return form and form.scaled(c)
        return None
    if isinstance(op, arith.ExtsiOp):
        return linear(op.input)
    return None if tensor else Linear({value: 1})


# -- the tile a load reads ----------------------------------------------------------------------


@dataclass
class _Dim:
    """One dim of a pointer tile: `(start + arange) [% wrap] * stride`."""

    start: Linear  # the first index before any wrap
    stride: SSAValue | int
    wrap: SSAValue | None = None  # D of `% D`
    start_value: SSAValue | None = None  # the scalar the index vector splats, if it does: `start`


def _terms(offset: SSAValue, rank: int) -> list | None:
    """The (dim, 1-D index vector, stride) terms of a pointer offset, or None."""
    op = offset.owner
    if isinstance(op, arith.AddiOp):
        a, b = _terms(op.lhs, rank), _terms(op.rhs, rank)
        return a + b if a is not None and b is not None else None
    if isinstance(op, tt.BroadcastOp):
        return _terms(op.src, rank)
    if isinstance(op, arith.MuliOp):
        for x, y in ((op.lhs, op.rhs), (op.rhs, op.lhs)):
            stride = uniform_int(y)
            inner = _terms(x, rank) if stride is not None else None
            if inner and len(inner) == 1 and inner[0][2] == 1:
                return [(inner[0][0], inner[0][1], stride)]
        return None
    if isinstance(op, tt.ExpandDimsOp) and rank == 2 and len(op.src.type.get_shape()) == 1:
        return [(1 - op.axis.value.data, op.src, 1)]
    return None


def _form(value: SSAValue | int) -> Linear | None:
    """A uniform value (`uniform_int`'s) as a linear form."""
    return linear(value) if isinstance(value, SSAValue) else Linear(const=value)


def _tile(pointers: SSAValue) -> tuple[SSAValue, list[_Dim]] | str:
    """(base, dims) of a 2-D pointer tile, or why it is not one."""
    terms = []
    while not isinstance(pointers.owner, tt.SplatOp):
        op = pointers.owner
        if isinstance(op, tt.BroadcastOp):
            pointers = op.src
        elif isinstance(op, tt.AddPtrOp):
            found = _terms(op.offset, 2)
            if found is None:
                return "its offsets are not a sum of index vectors times strides"
            terms += found
            pointers = op.ptr
        else:
            return "its pointers are not a base plus offsets"
    base = pointers.owner.src
    if sorted(d for d, _, _ in terms) != [0, 1]:
        return "its offsets do not have one index vector per dim"
    dims = []
    for _, vector, stride in sorted(terms, key=lambda t: t[0]):
        wrap = None
        if isinstance(vector.owner, arith.RemsiOp):
            wrap = uniform_int(vector.owner.rhs)
            if not isinstance(wrap, SSAValue):
                return "an index vector wraps by a constant"
            vector = vector.owner.lhs
        form = linear(vector)
        if form is None or form.terms.get(_Arange(0)) != 1:
            return "an index vector is not a contiguous run (start + arange)"
        dims.append(_Dim(form.without(_Arange(0)), stride, wrap, _splatted_start(vector)))
    return base, dims


def _splatted_start(vector: SSAValue) -> SSAValue | None:
    """`s` of `splat(s) + arange(0, B)` (either order): the start as the kernel spells it."""
    op = vector.owner
    if not isinstance(op, arith.AddiOp):
        return None
    for x, y in ((op.lhs, op.rhs), (op.rhs, op.lhs)):
        if isinstance(x.owner, tt.SplatOp) and isinstance(y.owner, tt.MakeRangeOp):
            return x.owner.src if y.owner.start.value.data == 0 else None
    return None


@dataclass
class _Loop:
    """How the pointers of a load move in the loop that carries them."""

    loop: scf.ForOp
    dim: int  # the dim they advance along
    per_iteration: int  # elements along `dim` per iteration


def _pointers(load: tt.LoadOp) -> tuple[SSAValue, scf.ForOp | None, Linear | None] | str:
    """(the pointers before the loop that carries them, that loop, the amount it moves them
    by per iteration); (the pointers, None, None) outside a loop; or why neither holds."""
    pointers = load.ptr
    if not isinstance(pointers, BlockArgument) or not isinstance(pointers.owner.parent_op(), scf.ForOp):
        return pointers, None, None
    loop = pointers.owner.parent_op()
    slot = pointers.index - 1
    moved = loop.body.block.last_op.operands[slot]
    if not isinstance(moved.owner, tt.AddPtrOp) or moved.owner.ptr is not pointers:
        return "the loop moves its pointers other than by one addptr"
    step = uniform_int(moved.owner.offset)
    if step is None:
        return "the loop moves its pointers by different amounts"
    return loop.iter_args[slot], loop, _form(step)


def _advance(loop: scf.ForOp, step: Linear, dims: list[_Dim]) -> _Loop | str:
    """Along which dim, by how many elements, `step` (pointer units) moves a tile of `dims`."""
    matches = []
    for d, dim in enumerate(dims):
        matches += [(d, c) for c in _multiples(step, _form(dim.stride))]
    if len(matches) != 1:
        return "the loop moves its pointers by no single multiple of one dim's stride"
    d, c = matches[0]
    if dims[d].wrap is not None:
        return "the loop moves its pointers along a wrapped dim"
    return _Loop(loop, d, c)


def _multiples(step: Linear, stride: Linear) -> list[int]:
    """The c with step == c * stride (none, or one)."""
    if not stride.terms:
        exact = stride.const and not step.terms and step.const % stride.const == 0
        return [step.const // stride.const] if exact else []
    (atom, k), *rest = stride.terms.items()
    if rest or stride.const or set(step.terms) != {atom} or step.const or step.terms[atom] % k:
        return []
    return [step.terms[atom] // k]


def _iteration_start(where: _Loop) -> Linear | None:
    """Elements moved along the loop's dim by the start of the current iteration: c·(iv-lb)/step."""
    loop = where.loop
    step = splat_of(loop.step)
    if not isinstance(step, int) or step <= 0 or where.per_iteration % step:
        return None
    iv = Linear({loop.body.block.args[0]: 1})
    lb_form = linear(loop.lb)
    return iv.plus(lb_form, -1).scaled(where.per_iteration // step)


def _conjuncts(mask: SSAValue) -> list[SSAValue]:
    op = mask.owner
    if isinstance(op, arith.AndiOp):
        return _conjuncts(op.lhs) + _conjuncts(op.rhs)
    if isinstance(op, tt.BroadcastOp):
        return _conjuncts(op.src)
    return [mask]


def _bound(cond: SSAValue) -> tuple[int, Linear] | None:
    """A conjunct `f < g` as (dim, g - f + arange_dim): the index along `dim` it keeps below."""
    op = cond.owner
    if not isinstance(op, arith.CmpiOp) or op.predicate_name not in ("slt", "sgt"):
        return None
    lhs, rhs = (op.lhs, op.rhs) if op.predicate_name == "slt" else (op.rhs, op.lhs)
    a, b = linear(lhs), linear(rhs)
    if a is None or b is None:
        return None
    below = b.plus(a, -1)  # the condition: 0 < below
    aranges = [x for x in below.terms if isinstance(x, _Arange)]
    if len(aranges) != 1 or below.terms[aranges[0]] != -1:
        return None
    return aranges[0].dim, below.without(aranges[0])


# -- the proof for wrapped dims -----------------------------------------------------------------


def _elementwise(op: Operation) -> bool:
    return op.name.startswith(("arith.", "math.")) or isinstance(op, (tt.FpToFpOp, tt.ClampFOp))


def _unobserved(value: SSAValue, dim: int, start: Linear, extent: SSAValue) -> str:
    """Why the elements of `value` whose index along `dim` is at least `extent - start` may
    reach memory ("" when every path to memory masks them off)."""
    seen = set()
    work = [(value, dim)]
    while work:
        v, d = work.pop()
        if (v, d) in seen:
            continue
        seen.add((v, d))
        for use in list(v.uses):
            op = use.operation
            if isinstance(op, tt.DotOp):
                if use.index == 2 or (use.index, d) in ((0, 0), (1, 1)):
                    work.append((op.d, d))
                    continue
                return "its wrapped dim is the dot's K"
            if isinstance(op, scf.YieldOp) and isinstance(op.parent_op(), scf.ForOp):
                loop = op.parent_op()
                work += [(loop.results[use.index], d), (loop.body.block.args[use.index + 1], d)]
                continue
            if _elementwise(op) and all(_same_shape(r.type, v.type) for r in op.results):
                work += [(r, d) for r in op.results]
                continue
            if isinstance(op, tt.StoreOp) and use.index == 1 and op.mask is not None:
                inside = (d, Linear({extent: 1}).plus(start, -1))  # start + arange < extent
                if any(_bound(c) == inside for c in _conjuncts(op.mask)):
                    continue
                return "a store of it is not masked to the rows inside the tensor"
            return f"it reaches {op.name}, which the proof does not follow"
    return ""


def _same_shape(a, b) -> bool:
    return isinstance(a, TensorType) and isinstance(b, TensorType) and a.get_shape() == b.get_shape()


# -- the rewrite --------------------------------------------------------------------------------


def run(module: ModuleOp, keep: Callable[[Operation], str]) -> Rewrites | PassOutcome:
    """Rewrite the operand loads of each dot whose a and b both qualify (a pipeline copies a
    loop's tiles all one way or all the other); `keep(op) -> reason` is the target's rule for
    the descriptor load each would become, its uses already moved to it ("" when the target
    copies it whole where its dot reads it)."""
    rewrites = Rewrites()
    loops = set()
    for dot in [op for op in module.walk() if isinstance(op, tt.DotOp)]:
        loads = list(dict.fromkeys(v.owner for v in (dot.a, dot.b)))
        if not all(isinstance(load, tt.LoadOp) and _dot_operand(load) for load in loads):
            continue
        plans = []
        for load in loads:
            plan = _plan(load, keep)
            if isinstance(plan, str):
                rewrites.note(f"kept-pointers({plan})")
                break
            plans.append(plan)
        else:
            for plan in plans:
                Rewriter.erase_op(plan.load)
                if plan.loop is not None:
                    loops.add(plan.loop)
            rewrites.note("tile-as-descriptor", len(plans))
            continue
        for plan in reversed(plans):
            plan.undo()
    for loop in loops:
        rewrites.note("drop-carried-pointers", _drop_unread(loop))
    if not rewrites.counts["tile-as-descriptor"]:  # the reasons, with the IR as it was
        return PassOutcome(False, rewrites.summary if rewrites else "no dot reads two loaded tiles")
    return rewrites


def _dot_operand(load: tt.LoadOp) -> bool:
    """Whether `load` reads a 2-D tile that only dots read, as their a or b: a matmul's operand,
    where a copy engine pays (other tiles keep the loads the coalescing pass tunes)."""
    uses = list(load.result.uses)
    t = load.result.type
    return (isinstance(t, TensorType) and len(t.get_shape()) == 2 and bool(uses)
            and all(isinstance(u.operation, tt.DotOp) and u.index < 2 for u in uses))  # fmt: skip


@dataclass
class _Plan:
    """A load's descriptor form, inserted before it and holding its uses; `undo` takes it out."""

    load: tt.LoadOp
    emitted: list  # the ops inserted, the descriptor load last
    loop: scf.ForOp | None  # the loop that carried the load's pointers

    def undo(self) -> None:
        self.emitted[-1].result.replace_all_uses_with(self.load.result)
        for op in reversed(self.emitted):
            Rewriter.erase_op(op)


def _plan(load: tt.LoadOp, keep) -> _Plan | str:
    """`load` as a descriptor load that reads the same, or why there is none."""
    if load.is_volatile is not None and load.is_volatile.value.data:
        return "it is volatile"
    found = _pointers(load)
    if isinstance(found, str):
        return found
    init, loop, step = found
    tile = _tile(init)
    if isinstance(tile, str):
        return tile
    base, dims = tile
    starts = [dim.start for dim in dims]
    moves = [Linear() for _ in dims]  # how far the loop has moved each dim's start
    if loop is not None:
        where = _advance(loop, step, dims)
        if isinstance(where, str):
            return where
        moved = _iteration_start(where)
        if moved is None:
            return "the loop's step does not divide the pointers' advance"
        starts[where.dim] = starts[where.dim].plus(moved)
        moves[where.dim] = moved
    extents = _extents(load, dims, starts)
    if isinstance(extents, str):
        return extents
    offsets = [(dim.start_value, move) if dim.start_value is not None else (None, start)
               for dim, start, move in zip(dims, starts, moves)]  # fmt: skip
    emitted = _descriptor_load(load, base, extents, [dim.stride for dim in dims], offsets)
    plan = _Plan(load, emitted, loop)
    load.result.replace_all_uses_with(emitted[-1].result)
    why = keep(emitted[-1])
    if why:
        plan.undo()
        return f"the target would not copy the tile whole: {why}"
    return plan


def _extents(load: tt.LoadOp, dims: list[_Dim], starts: list[Linear]) -> list | str:
    """Each dim's extent (a scalar value or an int): the mask's bound, or the wrap once no
    element past it is observed; or why the load is not bounded so on every dim."""
    extents: list = [None] * len(dims)
    if load.mask is not None:
        other = splat_of(load.other) if load.other is not None else 0
        if other != 0 or math.copysign(1, other) < 0:
            return "its masked-off elements are not zero"
        for cond in _conjuncts(load.mask):
            bound = _bound(cond)
            if bound is None:
                return "its mask is not a conjunction of index bounds"
            d, below = bound
            extent = below.plus(starts[d])  # start + arange < extent
            if extents[d] is not None or extent.has_arange():
                return "its mask bounds a dim twice or by another dim"
            if extent.terms and (extent.const or list(extent.terms.values()) != [1]):
                return "its mask bounds a dim by a sum, not by one kernel value"
            extents[d] = next(iter(extent.terms)) if extent.terms else extent.const
    for d, dim in enumerate(dims):
        if dim.wrap is not None:
            if extents[d] is not None:
                return "a dim is both masked and wrapped"
            why = _unobserved(load.result, d, dim.start, dim.wrap)
            if why:
                return f"dim {d} wraps (% {dim.wrap.name_hint or 'its extent'}) and {why}"
            extents[d] = dim.wrap
        elif extents[d] is None:
            return "a dim has no bound (neither a mask nor a wrap)"
        elif isinstance(extents[d], int) and extents[d] < 1:
            return "a dim is empty"
    return extents


def _descriptor_load(load: tt.LoadOp, base, extents, strides, offsets: list[tuple]) -> list[Operation]:
    """The ops of the descriptor load of `load`'s tile (not yet used), inserted before it in
    order, the descriptor load last. `offsets`: per dim, (a scalar value or None, a linear
    form): their sum."""
    new: list[Operation] = []

    def emit(op: Operation) -> SSAValue:
        new.append(op)
        return op.results[0]

    def as_i64(v) -> SSAValue:
        if isinstance(v, int):
            return emit(arith.ConstantOp(IntegerAttr(v, _I64)))
        return v if v.type == _I64 else emit(arith.ExtsiOp(v, _I64))

    def as_i32(value: SSAValue | None, form: Linear) -> SSAValue:
        total = value
        if form.const or (total is None and not form.terms):
            const = emit(arith.ConstantOp(IntegerAttr(form.const, i32)))
            total = const if total is None else emit(arith.AddiOp(total, const))
        for atom, c in form.terms.items():
            term = atom if atom.type == i32 else emit(arith.TrunciOp(atom, i32))
            if c != 1:
                term = emit(arith.MuliOp(term, emit(arith.ConstantOp(IntegerAttr(c, i32)))))
            total = term if total is None else emit(arith.AddiOp(total, term))
        return total

    shape = [as_i64(e) for e in extents]
    stride_values = [as_i64(s) for s in strides]
    starts = [as_i32(*o) for o in offsets]
    new.append(tt.DescriptorLoadOp(base, shape, stride_values, starts, load.result.type))
    Rewriter.insert_op(new, InsertPoint.before(load))
    return new


def _drop_unread(loop: scf.ForOp) -> int:
    """Drop the carried pointer tiles nothing reads any more (each only moves itself)."""
    body = loop.body.block
    yield_op = body.last_op
    dead = []
    for i, arg in enumerate(body.args[1:]):
        moved = yield_op.operands[i]
        if (isinstance(moved.owner, tt.AddPtrOp) and moved.owner.ptr is arg and moved.owner.parent is body
                and [u.operation for u in arg.uses] == [moved.owner] and len(list(moved.uses)) == 1
                and not loop.results[i].uses):  # fmt: skip
            dead.append(i)
    if not dead:
        return 0
    yields = [v for i, v in enumerate(yield_op.operands) if i not in dead]
    inits = [v for i, v in enumerate(loop.iter_args) if i not in dead]
    Rewriter.replace_op(yield_op, scf.YieldOp(*yields))
    for i in reversed(dead):
        arg = body.args[i + 1]
        Rewriter.erase_op(next(iter(arg.uses)).operation)  # the addptr that moved it
        body.erase_arg(arg)
    new_loop = reinitialized_for(loop, inits)
    kept = [r for i, r in enumerate(loop.results) if i not in dead]
    for old, new in zip(kept, new_loop.results):
        old.replace_all_uses_with(new)
    Rewriter.erase_op(loop)
    return len(dead)


__all__ = ["run", "NAME", "linear", "Linear"]
