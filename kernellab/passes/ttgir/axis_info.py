"""AxisInfo: what is known, per tensor dim, about the integer and pointer values of a kernel.

For each dim d of a value (a scalar counts as rank 1):
  contiguity[d]   the values increase by 1 along d in aligned runs of this length;
  divisibility[d] the largest power of two dividing the first element of every such run (for
                  pointers: the address in bytes), so with contiguity 1 it divides every element;
  constancy[d]    the values are equal along d in aligned runs of this length.
All three are powers of two. `value` is the constant every element equals, when known.

Coalescing and vectorisation rest on these facts: a thread may load `v` elements with one
instruction only if they are contiguous, the first address is aligned to the vector, and the
mask is constant across them. The facts are seeded by specialization (`tt.divisibility = 16`
on arguments divisible by 16, `tt.equal_to_1`), by the user's hints (tl.multiple_of,
tl.max_contiguous, tl.max_constancy: `tt.divisibility`/`tt.contiguity`/`tt.constancy` op or
argument attributes) and by make_range, then pushed through the arithmetic. Division and
remainder treat signed operands as non-negative, as Triton does (they are indices).

Use `analyze(module)` in passes (the result holds for the module as it is now) and
`AxisInfo.of(value)` in the lowering (cached per module until `invalidate(module)`).
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.dialects import scf
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    TensorType,
)
from xdsl.ir import Attribute, Operation, SSAValue

from kernellab.ir import arith, tt, ttg
from kernellab.passes.structured import StructuredWalk
from kernellab.passes.ttgir.encodings import is_elementwise

MAX_DIVISIBILITY = 1 << 62  # what 0 is divisible by


def _pow2_divisor(n: int) -> int:
    return MAX_DIVISIBILITY if n == 0 else min(n & -n, MAX_DIVISIBILITY)


def _shape(t: Attribute) -> tuple[int, ...]:
    return tt.shape_of(t) or (1,)


@dataclass(frozen=True)
class AxisInfo:
    contiguity: tuple[int, ...]
    divisibility: tuple[int, ...]
    constancy: tuple[int, ...]
    value: int | None = None

    @staticmethod
    def unknown(t: Attribute) -> AxisInfo:
        ones = (1,) * len(_shape(t))
        return AxisInfo(ones, ones, ones)

    @staticmethod
    def of(value: SSAValue) -> AxisInfo:
        """The AxisInfo of `value`, analysing its module on first use (see `invalidate`)."""
        module = _module_of(value)
        analysis = _CACHE.get(module)
        if analysis is None or value not in analysis.info:
            analysis = _CACHE[module] = analyze(module)
        return analysis[value]

    @property
    def rank(self) -> int:
        return len(self.contiguity)

    def element_divisibility(self) -> int:
        """A power of two dividing every element (dims with contiguity 1 tell it directly)."""
        known = [d for c, d in zip(self.contiguity, self.divisibility) if c == 1]
        return max(known, default=1)

    def start_divisibility(self, d: int, group: int) -> int:
        """What divides the first element of every aligned run of `group` elements along d."""
        if self.contiguity[d] <= group:
            return self.divisibility[d]
        return min(self.divisibility[d], group)

    def join(self, other: AxisInfo) -> AxisInfo:
        """What holds for a value that is either `self` or `other` (loop-carried, if/else)."""
        return AxisInfo(
            tuple(map(min, self.contiguity, other.contiguity)),
            tuple(map(min, self.divisibility, other.divisibility)),
            tuple(map(min, self.constancy, other.constancy)),
            self.value if self.value == other.value else None,
        )

    def with_hints(self, contiguity=None, divisibility=None, constancy=None) -> AxisInfo:
        """User or specialization facts raise what the analysis proved (they are promises)."""

        def raise_to(mine, hint):
            return mine if hint is None else tuple(max(a, b) for a, b in zip(mine, hint))

        return AxisInfo(
            raise_to(self.contiguity, contiguity),
            raise_to(self.divisibility, divisibility),
            raise_to(self.constancy, constancy),
            self.value,
        )


def _module_of(value: SSAValue) -> ModuleOp:
    op = value.owner if isinstance(value.owner, Operation) else value.owner.parent_op()
    while not isinstance(op, ModuleOp):
        op = op.parent_op()
    return op


_CACHE: weakref.WeakKeyDictionary[ModuleOp, AxisInfoAnalysis] = weakref.WeakKeyDictionary()


def invalidate(module: ModuleOp) -> None:
    """Forget the cached analysis of `module` (after rewriting it)."""
    _CACHE.pop(module, None)


def analyze(module: ModuleOp) -> AxisInfoAnalysis:
    return AxisInfoAnalysis(module)


def element_bytes(t: Attribute) -> int:
    """Bytes of one element of a scalar, tensor or pointee type (pointers are 8)."""
    elem = tt.element_type(t)
    if isinstance(elem, tt.PointerType):
        return 8
    return max(1, elem.bitwidth // 8)


def tile_bytes(t: Attribute) -> int:
    """Bytes of a tensor or shared-buffer (memdesc) type: its elements times its shape."""
    n = element_bytes(t.element_type)
    for size in t.get_shape():
        n *= size
    return n


def order_from_contiguity(info: AxisInfo) -> list[int]:
    """Dims from most to least contiguous; ties keep the default order (last dim first)."""
    dims = list(reversed(range(info.rank)))
    return sorted(dims, key=lambda d: -info.contiguity[d])


class AxisInfoAnalysis(StructuredWalk):
    """AxisInfo of every value of a module, computed once, in program order."""

    def __init__(self, module: ModuleOp):
        self.info: dict[SSAValue, AxisInfo] = {}
        for func in module.ops:
            if isinstance(func, tt.FuncOp):
                self._seed_arguments(func)
                self.block(func.body.block)

    def __getitem__(self, value: SSAValue) -> AxisInfo:
        return self.info[value]

    def of(self, value: SSAValue) -> AxisInfo:
        return self.info[value]

    # ----------------------------------------------------------------- helpers for users

    def ptr_vector_elems(self, ptr: SSAValue, order: Sequence[int] | None = None) -> int:
        """Elements per thread one aligned vector access (≤ 16 bytes) can move along order[0]:
        bounded by the pointers' contiguity and by their alignment in bytes."""
        info = self.info[ptr]
        if not isinstance(ptr.type, TensorType):
            return 1
        d = (order or order_from_contiguity(info))[0]
        size = element_bytes(tt.pointee_like(ptr.type))
        contiguous = min(info.contiguity[d], _shape(ptr.type)[d])
        aligned = max(1, info.divisibility[d] // size)
        return max(1, min(contiguous, aligned, max(1, 16 // size)))

    def mask_alignment(self, mask: SSAValue | None, order: Sequence[int] | None = None) -> int:
        """How many consecutive elements along order[0] share one mask bit (no mask: any)."""
        if mask is None:
            return MAX_DIVISIBILITY
        info = self.info[mask]
        if not isinstance(mask.type, TensorType):
            return MAX_DIVISIBILITY
        d = (order or list(reversed(range(info.rank))))[0]
        return min(info.constancy[d], _shape(mask.type)[d])

    # ----------------------------------------------------------------------- the walk

    def _seed_arguments(self, func: tt.FuncOp) -> None:
        attrs = func.arg_attrs.data if func.arg_attrs else [None] * len(func.args)
        for arg, entry in zip(func.args, attrs):
            facts = entry.data if entry is not None else {}
            elem = tt.element_type(arg.type)
            natural = (
                element_bytes(tt.pointee_like(arg.type)) if isinstance(elem, tt.PointerType) else 1
            )
            info = AxisInfo.unknown(arg.type)
            info = AxisInfo(info.contiguity, (natural,) * info.rank, info.constancy)
            if "tt.equal_to_1" in facts:
                info = AxisInfo(info.contiguity, info.divisibility, info.constancy, 1)
            self.info[arg] = info.with_hints(**_hints(facts, info.rank))

    def other(self, op: Operation) -> None:
        for region in op.regions:  # combine regions of reduce/scan: scalars, nothing known
            for block in region.blocks:
                for arg in block.args:
                    self.info[arg] = AxisInfo.unknown(arg.type)
                self.block(block)
        if not op.results:
            return
        rule = _RULES.get(type(op))
        operands = [self.info.get(v) for v in op.operands]
        if rule is not None and all(i is not None for i in operands):
            info = rule(op, *operands)
        else:
            info = _elementwise_constancy(op, operands)
        hints = _hints(op.attributes, info.rank)
        self.info[op.results[0]] = info.with_hints(**hints) if hints else info
        for result in op.results[1:]:
            self.info[result] = AxisInfo.unknown(result.type)

    def for_op(self, op: scf.ForOp) -> None:
        body = op.body.block
        lb, step = self.info[op.lb], self.info[op.step]
        self.info[body.args[0]] = AxisInfo(
            (1,), (min(lb.element_divisibility(), step.element_divisibility()),), (1,)
        )
        state = [self.info[v] for v in op.iter_args]
        while True:
            for arg, info in zip(body.args[1:], state):
                self.info[arg] = info
            self.block(body)
            new = [s.join(self.info[v]) for s, v in zip(state, body.last_op.operands)]
            if new == state:
                break
            state = new
        for result, info in zip(op.results, state):
            self.info[result] = info

    def if_op(self, op: scf.IfOp) -> None:
        self.block(op.true_region.block)
        if op.false_region.blocks:
            self.block(op.false_region.block)
        if not op.results:
            return
        then = [self.info[v] for v in op.true_region.block.last_op.operands]
        other = [self.info[v] for v in op.false_region.block.last_op.operands]
        for result, a, b in zip(op.results, then, other):
            self.info[result] = a.join(b)

    def while_op(self, op: scf.WhileOp) -> None:
        before, after = op.before_region.block, op.after_region.block
        state = [self.info[v] for v in op.arguments]
        while True:
            for arg, info in zip(before.args, state):
                self.info[arg] = info
            self.block(before)
            for arg, value in zip(after.args, before.last_op.args):
                self.info[arg] = self.info[value]
            self.block(after)
            new = [s.join(self.info[v]) for s, v in zip(state, after.last_op.operands)]
            if new == state:
                break
            state = new
        for result, value in zip(op.results, before.last_op.args):
            self.info[result] = self.info[value]


def _hints(attrs, rank: int) -> dict:
    """tt.divisibility / tt.contiguity / tt.constancy attributes as per-dim tuples."""
    found = {}
    for key, name in (("tt.contiguity", "contiguity"), ("tt.divisibility", "divisibility"),
                      ("tt.constancy", "constancy")):  # fmt: skip
        attr = attrs.get(key)
        if isinstance(attr, IntegerAttr):
            found[name] = (attr.value.data,) * rank
        elif isinstance(attr, DenseIntOrFPElementsAttr):
            values = tuple(int(v) for v in attr.get_values())
            found[name] = values if len(values) == rank else (values[0],) * rank
    return found


# --------------------------------------------------------------------------- transfer rules


def _elementwise_constancy(op: Operation, operands: list[AxisInfo | None]) -> AxisInfo:
    """An op applied element by element (a load too: same address, same value) is constant
    where all its tensor operands are; nothing is known about other ops."""
    result = op.results[0]
    info = AxisInfo.unknown(result.type)
    if not (is_elementwise(op) or isinstance(op, tt.LoadOp)):
        return info
    shape = _shape(result.type)
    constancy = list(shape)
    for value, operand in zip(op.operands, operands):
        if not isinstance(value.type, TensorType):
            continue
        if operand is None or tt.shape_of(value.type) != tt.shape_of(result.type):
            return info
        constancy = [min(c, o) for c, o in zip(constancy, operand.constancy)]
    if not isinstance(result.type, TensorType):
        return info
    return AxisInfo(info.contiguity, info.divisibility, tuple(constancy))


def _const_value(op: arith.ConstantOp, t: Attribute) -> int | None:
    value = op.value
    if isinstance(value, IntegerAttr) and isinstance(tt.element_type(t), IntegerType):
        return value.value.data
    if isinstance(value, DenseIntOrFPElementsAttr) and value.is_splat():
        v = value.get_values()[0]
        return v if isinstance(v, int) and not isinstance(v, bool) else None
    return None


def _constant(op: arith.ConstantOp) -> AxisInfo:
    shape = _shape(op.result.type)
    ones = (1,) * len(shape)
    v = _const_value(op, op.result.type)
    full = tuple(shape) if isinstance(op.result.type, TensorType) else ones
    if v is None:
        return AxisInfo(ones, ones, full if _splat(op) else ones)
    return AxisInfo(ones, (_pow2_divisor(v),) * len(shape), full, v)


def _splat(op: arith.ConstantOp) -> bool:
    value = op.value
    return not isinstance(value, DenseIntOrFPElementsAttr) or value.is_splat()


def _make_range(op: tt.MakeRangeOp) -> AxisInfo:
    start, end = op.start.value.data, op.end.value.data
    return AxisInfo((end - start,), (_pow2_divisor(start),), (1,))


def _splat_rule(op: tt.SplatOp, src: AxisInfo) -> AxisInfo:
    shape = _shape(op.result.type)
    rank = len(shape)
    return AxisInfo((1,) * rank, (src.element_divisibility(),) * rank, tuple(shape), src.value)


def _broadcast(op: tt.BroadcastOp, src: AxisInfo) -> AxisInfo:
    before, after = _shape(op.src.type), _shape(op.result.type)
    contiguity, constancy = list(src.contiguity), list(src.constancy)
    for d, (a, b) in enumerate(zip(before, after)):
        if a == 1 and b > 1:
            contiguity[d], constancy[d] = 1, b
    return AxisInfo(tuple(contiguity), src.divisibility, tuple(constancy), src.value)


def _expand_dims(op: tt.ExpandDimsOp, src: AxisInfo) -> AxisInfo:
    axis = op.axis.value.data

    def insert(values, new):
        return (*values[:axis], new, *values[axis:])

    return AxisInfo(
        insert(src.contiguity, 1),
        insert(src.divisibility, src.element_divisibility()),
        insert(src.constancy, 1),
        src.value,
    )


def _trans(op: tt.TransOp, src: AxisInfo) -> AxisInfo:
    order = list(op.order.get_values())
    return AxisInfo(
        tuple(src.contiguity[d] for d in order),
        tuple(src.divisibility[d] for d in order),
        tuple(src.constancy[d] for d in order),
        src.value,
    )


def _same(op: Operation, src: AxisInfo, *_) -> AxisInfo:
    return src


def _add_like(lhs: AxisInfo, rhs: AxisInfo, subtract: bool) -> AxisInfo:
    contiguity, divisibility, constancy = [], [], []
    for d in range(lhs.rank):
        c = min(lhs.contiguity[d], rhs.constancy[d])  # lhs runs + a constant
        if not subtract:
            c = max(c, min(lhs.constancy[d], rhs.contiguity[d]))
        contiguity.append(c)
        divisibility.append(min(lhs.start_divisibility(d, c), rhs.start_divisibility(d, c)))
        constancy.append(min(lhs.constancy[d], rhs.constancy[d]))
    value = None
    if lhs.value is not None and rhs.value is not None:
        value = lhs.value - rhs.value if subtract else lhs.value + rhs.value
    return AxisInfo(tuple(contiguity), tuple(divisibility), tuple(constancy), value)


def _add(op, lhs, rhs):
    return _add_like(lhs, rhs, subtract=False)


def _sub(op, lhs, rhs):
    return _add_like(lhs, rhs, subtract=True)


def _addptr(op: tt.AddPtrOp, ptr: AxisInfo, offset: AxisInfo) -> AxisInfo:
    """Offsets count elements; pointer facts count bytes."""
    size = element_bytes(tt.pointee_like(op.ptr.type))
    scaled = AxisInfo(
        offset.contiguity,
        tuple(min(MAX_DIVISIBILITY, d * size) for d in offset.divisibility),
        offset.constancy,
        None if offset.value is None else offset.value * size,
    )
    info = _add_like(ptr, scaled, subtract=False)
    # byte addresses of consecutive elements are `size` apart: contiguity stays in elements
    return AxisInfo(info.contiguity, info.divisibility, info.constancy, None)


def _constancy(lhs: AxisInfo, rhs: AxisInfo) -> tuple[int, ...]:
    return tuple(map(min, lhs.constancy, rhs.constancy))


def _mul(op, lhs: AxisInfo, rhs: AxisInfo) -> AxisInfo:
    value = lhs.value * rhs.value if lhs.value is not None and rhs.value is not None else None
    if rhs.value == 1 or lhs.value == 1:
        other = lhs if rhs.value == 1 else rhs
        return AxisInfo(other.contiguity, other.divisibility, other.constancy, value)
    div = min(MAX_DIVISIBILITY, lhs.element_divisibility() * rhs.element_divisibility())
    if value == 0:
        div = MAX_DIVISIBILITY
    ones = (1,) * lhs.rank
    return AxisInfo(ones, (div,) * lhs.rank, _constancy(lhs, rhs), value)


def _power_of_two(info: AxisInfo) -> int | None:
    v = info.value
    return v if v is not None and v > 0 and v & (v - 1) == 0 else None


def _aligned_run(lhs: AxisInfo, rhs: AxisInfo, d: int) -> int:
    """Length of the aligned runs of a contiguous x along d that hold no multiple of y (y
    constant over them): x // y is constant and x % y contiguous there. A multiple of y is a
    multiple of y's power-of-two divisor, which run starts are aligned to."""
    if lhs.contiguity[d] == 1:
        return 1
    return min(lhs.contiguity[d], lhs.divisibility[d], rhs.constancy[d], rhs.element_divisibility())


def _div(op, lhs: AxisInfo, rhs: AxisInfo) -> AxisInfo:
    constancy = tuple(max(k, _aligned_run(lhs, rhs, d)) for d, k in enumerate(_constancy(lhs, rhs)))
    v = _power_of_two(rhs)
    div = (
        lhs.element_divisibility() // v if v is not None and lhs.element_divisibility() >= v else 1
    )
    value = None
    if lhs.value is not None and rhs.value:
        q = abs(lhs.value) // abs(rhs.value)  # C division truncates toward zero
        value = q if (lhs.value < 0) == (rhs.value < 0) else -q
    ones = (1,) * lhs.rank
    return AxisInfo(ones, (div,) * lhs.rank, constancy, value)


def _rem(op, lhs: AxisInfo, rhs: AxisInfo) -> AxisInfo:
    contiguity, divisibility = [], []
    for d in range(lhs.rank):
        c = _aligned_run(lhs, rhs, d)
        contiguity.append(c)
        divisibility.append(min(lhs.start_divisibility(d, c), rhs.element_divisibility()))
    value = None
    if lhs.value is not None and rhs.value:
        value = int(math.fmod(lhs.value, rhs.value))
    return AxisInfo(tuple(contiguity), tuple(divisibility), _constancy(lhs, rhs), value)


def _bitwise(pick):
    def rule(op, lhs: AxisInfo, rhs: AxisInfo) -> AxisInfo:
        div = pick(lhs.element_divisibility(), rhs.element_divisibility())
        return AxisInfo((1,) * lhs.rank, (div,) * lhs.rank, _constancy(lhs, rhs))

    return rule


def _shift(by_power_of_two):
    """x << c is x * 2^c and x >> c is x / 2^c when c is a known non-negative constant."""

    def rule(op, lhs: AxisInfo, rhs: AxisInfo) -> AxisInfo:
        if rhs.value is None or rhs.value < 0:
            return AxisInfo((1,) * lhs.rank, (1,) * lhs.rank, _constancy(lhs, rhs))
        factor = 1 << rhs.value
        return by_power_of_two(
            op, lhs, AxisInfo(rhs.contiguity, (factor,) * lhs.rank, rhs.constancy, factor)
        )

    return rule


def _cmp(op, lhs: AxisInfo, rhs: AxisInfo) -> AxisInfo:
    """`x < c` for a contiguous x and constant c flips only where x crosses c: if both are
    aligned to g, the result is constant over aligned runs of g (likewise x >= c, c > x, c <= x)."""
    constancy = list(_constancy(lhs, rhs))
    pred = op.predicate_name
    if pred in ("slt", "ult", "sge", "uge"):
        runs, fixed = lhs, rhs
    elif pred in ("sgt", "ugt", "sle", "ule"):
        runs, fixed = rhs, lhs
    else:
        runs = None
    if runs is not None:
        for d in range(lhs.rank):
            if runs.contiguity[d] > 1:
                g = min(runs.contiguity[d], runs.divisibility[d], fixed.constancy[d],
                        fixed.element_divisibility())  # fmt: skip
                constancy[d] = max(constancy[d], g)
    ones = (1,) * lhs.rank
    return AxisInfo(ones, ones, tuple(constancy))


def _select(op, cond: AxisInfo, a: AxisInfo, b: AxisInfo) -> AxisInfo:
    shape = _shape(op.result.type)
    if not isinstance(op.cond.type, TensorType):
        cond = AxisInfo((1,) * len(shape), (1,) * len(shape), tuple(shape))
    contiguity, divisibility = [], []
    for d in range(a.rank):
        c = min(a.contiguity[d], b.contiguity[d], cond.constancy[d])
        contiguity.append(c)
        divisibility.append(min(a.start_divisibility(d, c), b.start_divisibility(d, c)))
    constancy = tuple(min(x, y, z) for x, y, z in zip(a.constancy, b.constancy, cond.constancy))
    value = a.value if a.value == b.value else None
    return AxisInfo(tuple(contiguity), tuple(divisibility), constancy, value)


def _extend(op, src: AxisInfo) -> AxisInfo:
    return src


def _truncate(op, src: AxisInfo) -> AxisInfo:
    limit = 1 << tt.element_type(op.result.type).width.data
    divisibility = tuple(min(d, limit) for d in src.divisibility)
    return AxisInfo(src.contiguity, divisibility, src.constancy, None)


_RULES = {
    arith.ConstantOp: lambda op: _constant(op),
    tt.MakeRangeOp: lambda op: _make_range(op),
    tt.SplatOp: _splat_rule,
    tt.BroadcastOp: _broadcast,
    tt.ExpandDimsOp: _expand_dims,
    tt.TransOp: _trans,
    tt.AddPtrOp: _addptr,
    tt.IntToPtrOp: _same,
    tt.PtrToIntOp: _same,
    ttg.ConvertLayoutOp: _same,
    arith.AddiOp: _add,
    arith.SubiOp: _sub,
    arith.MuliOp: _mul,
    arith.DivsiOp: _div,
    arith.DivuiOp: _div,
    arith.RemsiOp: _rem,
    arith.RemuiOp: _rem,
    arith.AndiOp: _bitwise(max),
    arith.OriOp: _bitwise(min),
    arith.XoriOp: _bitwise(min),
    arith.MaxsiOp: _bitwise(min),
    arith.MinsiOp: _bitwise(min),
    arith.MaxuiOp: _bitwise(min),
    arith.MinuiOp: _bitwise(min),
    arith.ShliOp: _shift(_mul),
    arith.ShrsiOp: _shift(_div),
    arith.ShruiOp: _shift(_div),
    arith.CmpiOp: _cmp,
    arith.SelectOp: _select,
    arith.ExtsiOp: _extend,
    arith.ExtuiOp: _extend,
    arith.TrunciOp: _truncate,
}
