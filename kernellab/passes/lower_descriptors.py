"""lower-descriptors: `tt.descriptor_load` / `tt.descriptor_store` as masked pointer accesses.

A tensor descriptor's tile is, per dim d, the indices `offset_d + arange(block_d)`; the pointer
block is `base + sum_d index_d * stride_d` and the mask keeps `0 <= index_d < shape_d` on every
dim, so reads outside the tensor give the descriptor's padding (zero or NaN) and stores outside
it write nothing. This is the whole meaning of a descriptor access, so the interpreter (whose
bounds checks and errors then see ordinary pointers, located at the descriptor's line) and every
target without a tile copy engine run this form. A target with one (Hopper's TMA) passes `keep`:
the accesses it can copy whole stay ops, each other one is lowered here and the record says why
(`plain(<reason>)`).

A kept store whose offsets are not known to be non-negative is guarded: TMA clips a tile past
the end of the tensor but faults on a negative coordinate (an illegal instruction, on Hopper,
for Triton's TMA stores too), while a descriptor store anywhere is defined. So the kept store
runs under `scf.if` all offsets >= 0 (uniform: the offsets are scalars), and its masked form in
the other branch (`guard-store` in the record). Known non-negative offsets (constants >= 0,
program ids) need no guard.

A kept access whose descriptor the kernel builds (a field neither a kernel parameter nor a
constant: its tensor map is written at run time, where no launch check sees its dims) gets
each dim that is not a constant >= 1 clamped to at least 1, and its offset on that dim moved
to 2**30 where the dim was empty (`clamp-empty-dims`): the same tile, all outside the tensor,
in a map the hardware can hold (a dim of 0 or less is not one).
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.dialects import scf
from xdsl.dialects.builtin import IntegerAttr, IntegerType, ModuleOp, TensorType, i1, i32
from xdsl.ir import BlockArgument, Operation, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from kernellab.ir import arith, tt
from kernellab.passes.rewrite import Rewrites

NAME = "lower_descriptors"

_I64 = IntegerType(64)


def run(module: ModuleOp, keep: Callable[[Operation], str] | None = None) -> Rewrites:
    """Lower every descriptor access; with `keep(op) -> reason`, those whose reason is empty
    (the target copies them whole) stay."""
    rewrites = Rewrites()
    found = [op for op in module.walk() if isinstance(op, (tt.DescriptorLoadOp, tt.DescriptorStoreOp))]
    for op in found:
        if keep is not None:
            reason = keep(op)
            if not reason:
                rewrites.note("kept")
                if not all(field_source(v) is not None for v in (op.base, *op.shape, *op.strides)):
                    _clamp_empty_dims(op)
                    rewrites.note("clamp-empty-dims")
                if isinstance(op, tt.DescriptorStoreOp) and not all(_non_negative(o) for o in op.offsets):
                    _guard_negative_offsets(op)
                    rewrites.note("guard-store")
                continue
            rewrites.note(f"plain({reason})")
        lower(op)
        rewrites.note("lower-load" if isinstance(op, tt.DescriptorLoadOp) else "lower-store")
    return rewrites


def field_source(value: SSAValue) -> tuple[str, int] | None:
    """Where a descriptor field comes from: ("arg", kernel argument index) or ("value", the
    constant a specialized parameter became); None for a value the kernel computes."""
    while isinstance(value.owner, (arith.ExtsiOp, arith.ExtuiOp)):
        value = value.owner.input
    if isinstance(value, BlockArgument):
        return ("arg", value.index) if isinstance(value.owner.parent_op(), tt.FuncOp) else None
    if isinstance(value.owner, arith.ConstantOp) and isinstance(value.owner.value, IntegerAttr):
        return ("value", value.owner.value.value.data)
    return None


def _clamp_empty_dims(op) -> None:
    """Each dim not a constant >= 1 as max(dim, 1), its offset 2**30 where dim < 1."""
    new: list[Operation] = []
    shape, offsets = list(op.shape), list(op.offsets)
    for d, dim in enumerate(op.shape):
        known = field_source(dim)
        if known is not None and known[0] == "value" and known[1] >= 1:
            continue
        one = arith.ConstantOp.of(1, dim.type)
        far = arith.ConstantOp.of(2**30, i32)
        empty = arith.CmpiOp("slt", dim, one.result)
        clamped = arith.SelectOp(empty.result, one.result, dim)
        moved = arith.SelectOp(empty.result, far.result, op.offsets[d])
        new += [one, far, empty, clamped, moved]
        shape[d], offsets[d] = clamped.result, moved.result
    for o in new:
        o.location = op.location
    Rewriter.insert_op(new, InsertPoint.before(op))
    rank = len(shape)
    operands = list(op.operands)
    operands[1 : 1 + rank] = shape
    operands[1 + 2 * rank : 1 + 3 * rank] = offsets
    op.operands = operands


def _non_negative(value: SSAValue) -> bool:
    """Known >= 0 without analysis: a constant >= 0, a program id, or a choice of two such."""
    owner = value.owner
    if isinstance(owner, arith.SelectOp):
        return _non_negative(owner.lhs) and _non_negative(owner.rhs)
    if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr):
        return owner.value.value.data >= 0
    return isinstance(owner, (tt.GetProgramIdOp, tt.GetNumProgramsOp))


def _guard_negative_offsets(op: tt.DescriptorStoreOp) -> None:
    """`op` (kept whole) under `scf.if` all offsets >= 0, its masked form otherwise."""
    checks: list[Operation] = []
    zero = arith.ConstantOp.of(0, i32)
    checks.append(zero)
    cond = None
    for offset in op.offsets:
        ge = arith.CmpiOp("sge", offset, zero.result)
        checks.append(ge)
        if cond is not None:
            checks.append(arith.AndiOp(cond, ge.result))
        cond = checks[-1].results[0]
    for o in checks:
        o.location = op.location
    Rewriter.insert_op(checks, InsertPoint.before(op))
    plain = op.clone()
    whole = op.clone()
    guarded = scf.IfOp(cond, [], [whole, scf.YieldOp()], [plain, scf.YieldOp()])
    guarded.location = op.location
    Rewriter.replace_op(op, guarded, [])
    lower(plain)


def lower(op: tt.DescriptorLoadOp | tt.DescriptorStoreOp) -> None:
    """Replace `op` by its masked pointer load or store (new ops before it, at its location)."""
    new: list[Operation] = []

    def add(o: Operation) -> SSAValue:
        o.location = op.location
        new.append(o)
        return o.results[0] if o.results else None

    value_type = op.result.type if isinstance(op, tt.DescriptorLoadOp) else op.value.type
    dims = tuple(value_type.get_shape())
    elem = value_type.element_type
    rank = len(dims)

    def full(elem_type) -> TensorType:
        return TensorType(elem_type, dims)

    def splat(scalar: SSAValue, elem_type) -> SSAValue:
        return add(tt.SplatOp(scalar, full(elem_type)))

    offsets = mask = None
    for d, size in enumerate(dims):
        index = add(tt.MakeRangeOp(0, size))
        shape = [size]
        for axis in range(rank):  # onto axis d of the tile
            if axis != d:
                shape.insert(axis, 1)
                index = add(tt.ExpandDimsOp(index, axis, TensorType(i32, shape)))
        if rank > 1:
            index = add(tt.BroadcastOp(index, full(i32)))
        index = add(arith.AddiOp(index, splat(op.offsets[d], i32)))
        wide = add(arith.ExtsiOp(index, full(_I64)))
        term = add(arith.MuliOp(wide, splat(op.strides[d], _I64)))
        offsets = term if offsets is None else add(arith.AddiOp(offsets, term))
        zero = add(arith.ConstantOp.of(0, full(i32)))
        inside = add(
            arith.AndiOp(
                add(arith.CmpiOp("sge", index, zero)),
                add(arith.CmpiOp("slt", wide, splat(op.shape[d], _I64))),
            )
        )
        mask = inside if mask is None else add(arith.AndiOp(mask, inside))
    pointers = add(tt.AddPtrOp(splat(op.base, op.base.type), offsets))
    assert mask.type == full(i1)
    if isinstance(op, tt.DescriptorLoadOp):
        pad = float("nan") if op.padding.data == "nan" else 0
        other = add(arith.ConstantOp.of(pad, full(elem)))
        result = add(tt.LoadOp(pointers, full(elem), mask, other))
        Rewriter.insert_op(new, InsertPoint.before(op))
        Rewriter.replace_op(op, [], [result])
    else:
        add(tt.StoreOp(pointers, op.value, mask))
        Rewriter.insert_op(new, InsertPoint.before(op))
        Rewriter.erase_op(op)
