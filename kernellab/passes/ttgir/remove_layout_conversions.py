"""remove_layout_conversions: erase the ttg.convert_layout ops a kernel does not need.

convert_to_ttgpuir and coalesce insert conversions freely; each one left costs a trip through
shared memory or shuffles. Four rewrites, repeated while they help:

1. Forward: for `y = convert(x: A -> B)`, try computing everything downstream of y in A-derived
   layouts instead (element-wise ops, broadcast, expand_dims, reductions, scans, loop-carried
   values and scf.if results follow their operand's layout; the other branch's value converts
   in: a fused loop nest's accumulator goes through its epilogue branch, which resets it). The rewrite is taken when it inserts no more real
   conversions than it removes: other inputs of the moved ops are converted in (free when cheap
   to recompute, see 2), and users that need the old layout (a dot, a function return) get one
   conversion back. This moves the math next to the loads into the loads' layouts.
2. Backward: for `y = convert(x -> B)` whose x is computed only from cheap ops (constants,
   make_range, splat, element-wise arithmetic, broadcast, expand_dims) or from values already
   in B, recompute that slice directly in B: index and pointer arithmetic is cheaper than
   moving data. Loads, reductions, dots and loop-carried values are never recomputed.
3. Fold: convert(x: A -> A) is x; convert(convert(x)) converts once.
4. Narrow first: `cast(convert(x))` where the cast is element-wise and makes each element
   narrower (truncf f32 -> f16, trunci, fptosi to i8, ...) and is the conversion's only user
   becomes `convert(cast(x))`: the same one conversion, moving fewer bytes (an MMA accumulator's
   epilogue `acc.to(f16)` crosses shared memory as halves, as in Triton).

A conversion costs by where it runs: one inside a loop runs every iteration, so it weighs
LOOP_WEIGHT times one outside it (per nesting level). That is what lets attention's softmax
follow its dot's MMA layout: the loop body loses its conversions, and the one put back before
the epilogue's store runs once. A `ttg.local_alloc` stores any distributed layout into shared
memory, so a value written there follows the moved layout and needs no conversion back.

The layouts coalesce chose for loads and stores never change: memory ops are fixed points. A
tt.gather follows its operands into another blocked layout (source, index and result in one
layout) unless that loses the warp shuffles its current layouts allow (kernellab.layouts.gather:
within warps it needs no shared memory; through shared memory any layouts do).
Dead ops left behind are erased. Each rewrite is a named pattern of the rewrite engine, swept
over the conversions in rounds (forward, backward, fold and narrow): sink-conversion,
carry-in-layout, rematerialize, fold-conversion, narrow-before-conversion.
"""

from __future__ import annotations

from xdsl.dialects import scf
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, ModuleOp, TensorType
from xdsl.ir import Attribute, Block, BlockArgument, Operation, OpResult, SSAValue
from xdsl.pattern_rewriter import PatternRewriter
from xdsl.rewriter import Rewriter

from kernellab.ir import arith, tt, ttg
from kernellab.layouts import from_encoding
from kernellab.layouts.gather import shuffle_plan
from kernellab.passes import dce
from kernellab.passes.rewrite import Rewrites, apply_to_each, pattern
from kernellab.passes.ttgir.encodings import is_elementwise, permuted

NAME = "remove_layout_conversions"

MAX_DUPLICATED = 32  # ops recomputed for one conversion that stay alive in both layouts
MAX_REMATERIALIZED = 1024  # ops recomputed for one conversion (the others die)
LOOP_WEIGHT = 16  # a conversion inside a loop counts this many times one just outside it

_SOURCES = (arith.ConstantOp, tt.MakeRangeOp, tt.SplatOp)


def run(module: ModuleOp) -> Rewrites:
    rewrites = Rewrites()
    for _ in range(4):
        step = apply_to_each(_converts(module), [FORWARD], rewrites)
        backward = [CARRY_IN_LAYOUT, _rematerializing(_Rematerializer())]  # one cache per sweep
        step |= apply_to_each(_converts(module), backward, rewrites)
        step |= apply_to_each(_converts(module), [FOLD, NARROW_FIRST], rewrites)
        if not step:
            break
    if rewrites:
        rewrites.merge(dce.run(module))
    return rewrites


def _converts(module: ModuleOp) -> list[ttg.ConvertLayoutOp]:
    return [op for op in module.walk() if isinstance(op, ttg.ConvertLayoutOp)]


def _distributed(encoding: Attribute | None) -> bool:
    if isinstance(encoding, ttg.SliceEncodingAttr):
        return _distributed(encoding.parent)
    return isinstance(encoding, (ttg.BlockedEncodingAttr, ttg.NvidiaMmaEncodingAttr))


def _layout(value: SSAValue) -> Attribute | None:
    return ttg.encoding_of(value.type)


# ------------------------------------------------------------------------- layout transfer


def _result_layout(op: Operation, layout: Attribute) -> Attribute | None:
    """Layout of `op`'s tensor results when its tensor operands are in `layout` (None: the op
    cannot follow its operands)."""
    if is_elementwise(op) or isinstance(op, (tt.BroadcastOp, tt.ScanOp)):
        return layout
    if isinstance(op, tt.ExpandDimsOp):
        if isinstance(layout, ttg.SliceEncodingAttr) and layout.dim == op.axis.value.data:
            return layout.parent
        return None
    if isinstance(op, tt.ReduceOp):
        return ttg.SliceEncodingAttr(op.axis.value.data, layout)
    if isinstance(op, tt.GatherOp) and _gather_may_move(op, layout):
        return layout
    return None


def _gather_may_move(op: tt.GatherOp, layout: Attribute) -> bool:
    """Whether `op` may take its source, index and result in the blocked `layout`: yes unless
    its present layouts gather within warps and `layout` would not."""
    if not isinstance(layout, ttg.BlockedEncodingAttr):
        return False
    src_shape, res_shape = op.src.type.get_shape(), op.result.type.get_shape()
    axis = op.axis.value.data

    def within_warps(src_encoding, res_encoding) -> bool:
        src = from_encoding(src_encoding, src_shape)
        return shuffle_plan(src, from_encoding(res_encoding, res_shape), axis) is not None

    return within_warps(layout, layout) or not within_warps(_layout(op.src), _layout(op.result))


def _operand_layout(op: Operation, layout: Attribute) -> Attribute | None:
    """Layout `op`'s tensor operands need for its result to be in `layout` (None: unknown)."""
    if is_elementwise(op) or isinstance(op, (tt.BroadcastOp, tt.ScanOp)):
        return layout
    if isinstance(op, tt.ExpandDimsOp):
        return ttg.SliceEncodingAttr(op.axis.value.data, layout)
    if isinstance(op, tt.TransOp):
        order = list(op.order.get_values())
        return permuted(layout, [order.index(d) for d in range(len(order))])
    return None


# ---------------------------------------------------------------------------------- forward


def _forward(convert: ttg.ConvertLayoutOp, rewriter: PatternRewriter) -> bool:
    src_layout, dst_layout = _layout(convert.src), _layout(convert.result)
    if src_layout == dst_layout or not (_distributed(src_layout) and _distributed(dst_layout)):
        return False
    return _ForwardPlan(convert.result, src_layout, convert).try_apply()


class _ForwardPlan:
    """Everything downstream of `seed`, moved to layouts derived from `layout`. The seed is a
    conversion's result (moved to the conversion's source layout, the conversion goes) or a
    loop-carried value (moved to the layout its users convert it to)."""

    def __init__(self, seed: SSAValue, layout: Attribute, convert: ttg.ConvertLayoutOp | None):
        self.seed, self.layout, self.convert = seed, layout, convert
        self.layouts: dict[SSAValue, Attribute] = {}  # values that change layout
        self.required: dict[tuple[Operation, int], Attribute] = {}  # operand → layout it needs
        self.boundary: dict[SSAValue, list[tuple[Operation, int]]] = {}  # uses keeping old types

    def try_apply(self) -> bool:
        if not self.build() or not self.worth_it():
            return False
        self.apply()
        return True

    def build(self) -> bool:
        work = [(self.seed, self.layout)]
        while work:
            value, layout = work.pop()
            if value in self.layouts:
                if self.layouts[value] != layout:
                    return False
                continue
            self.layouts[value] = layout
            tied = _carried(value)
            if tied is not None:  # the init, the yielded value, the block arg and the result
                for_op, k = tied
                body = for_op.body.block
                if not (self.need(for_op, 3 + k, layout) and self.need(body.last_op, k, layout)):
                    return False
                work += [(body.args[1 + k], layout), (for_op.results[k], layout)]
            if isinstance(value, OpResult) and isinstance(value.op, scf.IfOp):  # both branches yield it
                if not all(self.need(region.block.last_op, value.index, layout) for region in value.op.regions):
                    return False
            for use in list(value.uses):
                user, index = use.operation, use.index
                if isinstance(user, ttg.ConvertLayoutOp):
                    continue  # converts from the new layout instead
                if isinstance(user, ttg.LocalAllocOp):
                    continue  # stores the new layout into the same buffer
                tied = _loop_tie(user, index)
                if tied is not None:
                    work.append((tied[0].body.block.args[1 + tied[1]], layout))
                    continue
                if isinstance(user, scf.YieldOp) and isinstance(user.parent_op(), scf.IfOp):
                    work.append((user.parent_op().results[index], layout))  # a branch's result
                    continue
                result_layout = _result_layout(user, layout)
                if result_layout is None:
                    self.boundary.setdefault(value, []).append((user, index))
                    continue
                for i, operand in enumerate(user.operands):
                    if isinstance(operand.type, TensorType) and not self.need(user, i, layout):
                        return False
                for result in user.results:
                    if isinstance(result.type, TensorType):
                        work.append((result, result_layout))
        return all(
            self.layouts.get(op.operands[i], layout) == layout
            for (op, i), layout in self.required.items()
        )

    def need(self, op: Operation, index: int, layout: Attribute) -> bool:
        return self.required.setdefault((op, index), layout) == layout

    def inputs(self) -> list[tuple[Operation, int, Attribute]]:
        """Operands of moved ops that come from outside the moved region."""
        return [
            (op, i, layout)
            for (op, i), layout in self.required.items()
            if op.operands[i] not in self.layouts and _layout(op.operands[i]) != layout
        ]

    def worth_it(self) -> bool:
        """Whether the conversions the move removes cost more than those it adds, each weighed
        by how often it runs (its loop depth)."""
        removed = (_cost(self.convert) if self.convert is not None else 0) + sum(
            _cost(use.operation)
            for value, layout in self.layouts.items()
            for use in value.uses
            if isinstance(use.operation, ttg.ConvertLayoutOp)
            and _layout(use.operation.result) == layout
        )
        added = sum(_cost(_definition_point(value)) for value in self.boundary) + sum(
            0 if _cheap_to_convert(op.operands[i], layout) else _cost(op)
            for op, i, layout in self.inputs()
        )
        return added < removed

    def apply(self) -> None:
        for op, i, layout in self.inputs():
            op.operands[i] = _convert_before(op.operands[i], layout, op)
        converted = self.convert.result if self.convert is not None else None
        for value, layout in self.layouts.items():
            if value is converted:
                continue
            old = value.type
            new = Rewriter.replace_value_with_new_type(value, ttg.with_encoding(old, layout))
            uses = self.boundary.get(value)
            if uses:
                back = ttg.ConvertLayoutOp(new, old)
                _insert_after_definition(back, new)
                for user, index in uses:
                    user.operands[index] = back.result
        if self.convert is not None:
            kept = {id(user) for user, _ in self.boundary.get(converted, [])}
            converted.replace_uses_with_if(
                self.convert.src, lambda use: id(use.operation) not in kept
            )
            if not converted.uses:
                Rewriter.erase_op(self.convert)


def _cost(op: Operation) -> int:
    """What a conversion placed at `op` costs: LOOP_WEIGHT per loop around it."""
    depth, parent = 0, op.parent_op()
    while parent is not None and not isinstance(parent, ModuleOp):
        depth += isinstance(parent, (scf.ForOp, scf.WhileOp))
        parent = parent.parent_op()
    return LOOP_WEIGHT**depth


def _definition_point(value: SSAValue) -> Operation:
    """An op where a conversion of `value` right after its definition sits (for a block
    argument, the block's first op: inside the loop whose argument it is)."""
    if isinstance(value, OpResult):
        return value.op
    return value.block.first_op or value.block.parent_op()


def _carried(value: SSAValue) -> tuple[scf.ForOp, int] | None:
    """(loop, k) when `value` is a loop's iter_arg k or its result k."""
    if isinstance(value, OpResult) and isinstance(value.op, scf.ForOp):
        return value.op, value.index
    if isinstance(value, BlockArgument) and isinstance(value.block.parent_op(), scf.ForOp):
        return (value.block.parent_op(), value.index - 1) if value.index else None
    return None


def _loop_tie(user: Operation, index: int) -> tuple[scf.ForOp, int] | None:
    """(loop, k) when the use is iter_arg k's initial value or the value yielded for it."""
    if isinstance(user, scf.ForOp) and index >= 3:
        return user, index - 3
    if isinstance(user, scf.YieldOp) and isinstance(user.parent_op(), scf.ForOp):
        return user.parent_op(), index
    return None


def _insert_after_definition(op: Operation, value: SSAValue) -> None:
    if isinstance(value, OpResult):
        value.op.parent_block().insert_op_after(op, value.op)
    else:
        block: Block = value.block
        if block.first_op is None:
            block.add_op(op)
        else:
            block.insert_op_before(op, block.first_op)


def _convert_before(value: SSAValue, layout: Attribute, op: Operation) -> SSAValue:
    convert = ttg.ConvertLayoutOp(value, ttg.with_encoding(value.type, layout))
    op.parent_block().insert_op_before(convert, op)
    return convert.result


def _cheap_to_convert(value: SSAValue, layout: Attribute) -> bool:
    """Whether `value` can reach `layout` without moving data (see _Rematerializer)."""
    return _Rematerializer().plan(value, layout) is not None


# --------------------------------------------------------------------------------- backward


def _converts_carried_value(convert: ttg.ConvertLayoutOp) -> bool:
    """A loop-carried value converted in the loop, from one distributed layout to another."""
    return (
        _distributed(_layout(convert.result))
        and _carried(convert.src) is not None
        and _distributed(_layout(convert.src))
    )


def _carry_in_layout(convert: ttg.ConvertLayoutOp, rewriter: PatternRewriter) -> bool:
    """Carry the loop-carried value in the layout it is converted to."""
    if not _converts_carried_value(convert):
        return False
    return _ForwardPlan(convert.src, _layout(convert.result), None).try_apply()


def _rematerializing(remat: _Rematerializer):
    def apply(convert: ttg.ConvertLayoutOp, rewriter: PatternRewriter) -> bool:
        """Recompute the converted value's cheap slice in the wanted layout."""
        if not _distributed(_layout(convert.result)) or _converts_carried_value(convert):
            return False
        value = remat.rematerialize(convert.src, _layout(convert.result))
        if value is None:
            return False
        convert.result.replace_all_uses_with(value)
        Rewriter.erase_op(convert)
        return True

    return pattern("rematerialize", apply, [ttg.ConvertLayoutOp.name])


class _Rematerializer:
    """Recomputes cheap slices in another layout; remembers what it made (each clone sits right
    after its original, so it dominates every later use)."""

    def __init__(self):
        self.made: dict[tuple[SSAValue, Attribute], SSAValue] = {}

    def plan(self, value: SSAValue, layout: Attribute) -> dict[SSAValue, Attribute] | None:
        """The values to recompute (each with its layout), or None when it is not cheap."""
        todo: dict[SSAValue, Attribute] = {}
        work = [(value, layout)]
        while work:
            v, want = work.pop()
            if _layout(v) == want or (v, want) in self.made or _from_layout(v, want) is not None:
                continue
            if v in todo:
                if todo[v] != want:
                    return None
                continue
            op = v.owner
            if not isinstance(op, Operation) or len(op.results) != 1 or op.regions:
                return None
            if isinstance(op, _SOURCES):
                todo[v] = want
                continue
            need = _operand_layout(op, want)
            if need is None or len(todo) >= MAX_REMATERIALIZED:
                return None
            todo[v] = want
            work += [(o, need) for o in op.operands if isinstance(o.type, TensorType)]
        return todo if _duplicated(todo, value) <= MAX_DUPLICATED else None

    def rematerialize(self, value: SSAValue, layout: Attribute) -> SSAValue | None:
        todo = self.plan(value, layout)
        if todo is None:
            return None
        for v in sorted(todo, key=_program_position):
            self._clone(v.owner, todo[v])
        return self.get(value, layout)

    def get(self, value: SSAValue, layout: Attribute) -> SSAValue:
        if _layout(value) == layout:
            return value
        source = _from_layout(value, layout)
        return source if source is not None else self.made[(value, layout)]

    def _clone(self, op: Operation, layout: Attribute) -> None:
        result_type = ttg.with_encoding(op.results[0].type, layout)
        if (op.results[0], layout) in self.made:
            return
        if isinstance(op, arith.ConstantOp) and isinstance(op.value, DenseIntOrFPElementsAttr):
            clone = arith.ConstantOp(type(op.value)(result_type, op.value.data))
        else:
            need = _operand_layout(op, layout) if not isinstance(op, _SOURCES) else None
            operands = [
                self.get(o, need) if isinstance(o.type, TensorType) and need is not None else o
                for o in op.operands
            ]
            clone = type(op).create(
                operands=operands,
                result_types=[result_type],
                properties=dict(op.properties),
                attributes=dict(op.attributes),
            )
        clone.results[0].name_hint = op.results[0].name_hint
        op.parent_block().insert_op_after(clone, op)
        self.made[(op.results[0], layout)] = clone.results[0]


def _duplicated(todo: dict[SSAValue, Attribute], root: SSAValue) -> int:
    """How many recomputed ops keep their original alive (it has users outside the slice)."""
    inside = {v.owner for v in todo}

    def outside(use, v) -> bool:  # the conversions being replaced do not count
        if v is root and isinstance(use.operation, ttg.ConvertLayoutOp):
            return False
        return use.operation not in inside

    return sum(
        1
        for v in todo
        if not isinstance(v.owner, _SOURCES) and any(outside(use, v) for use in v.uses)
    )


def _from_layout(value: SSAValue, layout: Attribute) -> SSAValue | None:
    """x when `value` is convert(x) and x is already in `layout`."""
    op = value.owner
    if isinstance(op, ttg.ConvertLayoutOp) and _layout(op.src) == layout:
        return op.src
    return None


def _program_position(value: SSAValue) -> tuple[int, ...]:
    """Sort key: ops in program order (outer position first for nested ops)."""
    path = []
    op = value.owner
    while op is not None and not isinstance(op, ModuleOp):
        block = op.parent_block()
        path.append(block.get_operation_index(op) if block else 0)
        op = op.parent_op()
    return tuple(reversed(path))


# ------------------------------------------------------------------------------------- fold


def _fold(convert: ttg.ConvertLayoutOp, rewriter: PatternRewriter) -> bool:
    """convert(convert(x)) converts x once; convert(x: A -> A) is x."""
    changed = False
    inner = convert.src.owner
    if isinstance(inner, ttg.ConvertLayoutOp):
        convert.operands[0] = inner.src
        if not inner.result.uses:
            Rewriter.erase_op(inner)
        changed = True
    if convert.src.type == convert.result.type:
        convert.result.replace_all_uses_with(convert.src)
        Rewriter.erase_op(convert)
        changed = True
    return changed


# ------------------------------------------------------------------------------ narrow first


def _element_bits(value: SSAValue) -> int | None:
    """Bits of one element of a tensor of ints or floats (None for pointers and the rest)."""
    bits = getattr(value.type.element_type, "bitwidth", None)
    return bits if isinstance(bits, int) else None


def _narrowing_cast(op: Operation) -> bool:
    """An element-wise op of one tensor operand whose result elements have fewer bits."""
    if not is_elementwise(op) or len(op.operands) != 1 or len(op.results) != 1:
        return False
    src, dst = op.operands[0], op.results[0]
    if not (isinstance(src.type, TensorType) and isinstance(dst.type, TensorType)):
        return False
    src_bits, dst_bits = _element_bits(src), _element_bits(dst)
    return src_bits is not None and dst_bits is not None and dst_bits < src_bits


def _narrow_first(convert: ttg.ConvertLayoutOp, rewriter: PatternRewriter) -> bool:
    """cast(convert(x)) -> convert(cast(x)) for a narrowing cast, the conversion's only user."""
    uses = list(convert.result.uses)
    if len(uses) != 1 or not _narrowing_cast(uses[0].operation):
        return False
    cast, layout = uses[0].operation, _layout(convert.src)
    narrow = type(cast).create(
        operands=[convert.src],
        result_types=[ttg.with_encoding(cast.results[0].type, layout)],
        properties=dict(cast.properties),
        attributes=dict(cast.attributes),
    )
    narrow.results[0].name_hint = cast.results[0].name_hint
    moved = ttg.ConvertLayoutOp(narrow.results[0], cast.results[0].type)
    cast.parent_block().insert_ops_before([narrow, moved], cast)
    cast.results[0].replace_all_uses_with(moved.result)
    Rewriter.erase_op(cast)
    Rewriter.erase_op(convert)
    return True


_CONVERT = [ttg.ConvertLayoutOp.name]
FORWARD = pattern("sink-conversion", _forward, _CONVERT)
CARRY_IN_LAYOUT = pattern("carry-in-layout", _carry_in_layout, _CONVERT)
FOLD = pattern("fold-conversion", _fold, _CONVERT)
NARROW_FIRST = pattern("narrow-before-conversion", _narrow_first, _CONVERT)
