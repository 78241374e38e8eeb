"""cpu.bitonic_columns (tl.sort's and tl.topk's compare-exchange columns) as LLVM loops over
vector registers: the tensor in flat order goes to a stack array (one store), each column is
one loop, the result is read back (one load). Code size grows with the number of columns only,
where the language's network lowered op by op is a handful of shuffles as wide as the tensor
per column, which x86's code generator handles in superlinear time (2048 elements: over two
minutes).

A column pairs element i (bit j of i clear) with i + 2**j. Pairs at least a register apart
(2**j >= V lanes) are two register loads, a compare and two selects, for V pairs at a time
(up to three consecutive such columns in one loop, over the 8 registers they exchange among);
closer pairs sit in one register, whose partner lanes one shufflevector with a constant mask
brings over, and a run of such columns is one loop that loads each register once. The flip
is a constant or bit b of i (b > j, so both partners agree on it): constant lanes when
2**b < V, else one bit of the step's first index.
"""

from __future__ import annotations

from kernellab.backends.cpu.host import vector_registers
from kernellab.backends.cpu.lowering.vectors import (
    VTV,
    as_vector,
    constant_vector,
    lane_mask,
    permute,
    splat,
    vector_type,
)
from kernellab.backends.llvm.dot import counted_loop
from kernellab.backends.llvm.types import I1, I32, PTR, llty
from kernellab.ir import cpu


def _lanes(width: int, numel: int) -> int:
    """Elements per step: one vector register of `width`-bit elements, at most the tensor."""
    return max(1, min(numel, vector_registers()[1] * 8 // width))


def _flips(ctx, first, flip: int, lanes: int):
    """The flip of the pairs whose low elements are `first` + lane (`first` a multiple of
    `lanes`): None, a constant <lanes x i1>, or a splat of bit `flip` of `first`."""
    if flip == cpu.FLIP_FALSE:
        return None
    if flip == cpu.FLIP_TRUE:
        return constant_vector([I1(1)] * lanes)
    if (1 << flip) < lanes:
        return constant_vector([I1((l >> flip) & 1) for l in range(lanes)])
    b = ctx.b
    return splat(ctx, b.trunc(b.lshr(first, I32(flip)), I1), lanes)


def _swap(ctx, low, high, flips, predicate: str, cty):
    """Whether each lane's pair (low, high) is out of order: `low predicate high`, xor `flips`."""
    b = ctx.b
    n = low.type.count
    if cty != low.type.element:
        low, high = b.bitcast(low, vector_type(cty, n)), b.bitcast(high, vector_type(cty, n))
    if predicate == "ogt":
        out = b.fcmp_ordered(">", low, high)
    else:
        out = (b.icmp_signed if predicate == "sgt" else b.icmp_unsigned)(">", low, high)
    return out if flips is None else b.xor(out, flips)


def _store(b, vec, ptr, align: int) -> None:
    """Store `vec` at `ptr` (llvmlite keeps the slot's own pointee type on a gep: cast it)."""
    b.store(vec, b.bitcast(ptr, vec.type.as_pointer())).align = align


def _far_columns(ctx, base, ety, numel, lanes, columns, predicate, cty):
    """Consecutive columns j, j-1, ... (k of them) whose pairs are at least a register apart:
    per step, the 2**k registers the k columns exchange among, loaded once."""
    b = ctx.b
    vty = vector_type(ety, lanes)
    align = ety.width // 8
    low, k = columns[-1][0], len(columns)

    def step(values, i):
        e = b.mul(i, I32(lanes))  # the step's first element with bits low..low+k-1 clear
        first = b.or_(b.shl(b.lshr(e, I32(low)), I32(low + k)), b.and_(e, I32((1 << low) - 1)))
        places = [
            b.gep(base, [b.add(first, I32(r << low))], source_etype=ety) for r in range(1 << k)
        ]
        regs = [b.load(p, typ=vty) for p in places]
        for r in regs:
            r.align = align
        for j, flip in columns:
            d = 1 << (j - low)
            for r in range(1 << k):
                if r & d:
                    continue
                lo, hi = regs[r], regs[r | d]
                flips = _flips(ctx, b.or_(first, I32(r << low)), flip, lanes)
                swap = _swap(ctx, lo, hi, flips, predicate, cty)
                regs[r], regs[r | d] = b.select(swap, hi, lo), b.select(swap, lo, hi)
        for v, p in zip(regs, places):
            _store(b, v, p, align)
        return values

    counted_loop(ctx, [], numel // (lanes << k), 1, step, name=f"bitonic.j{columns[0][0]}")


def _near_columns(ctx, base, ety, numel, lanes, columns, predicate, cty):
    """Consecutive columns whose pairs are 2**j < lanes apart: per step, one register through
    all of them, each partner lane brought over by one shufflevector."""
    b = ctx.b
    vty = vector_type(ety, lanes)
    align = ety.width // 8

    def step(values, i):
        first = b.mul(i, I32(lanes))
        p = b.gep(base, [first], source_etype=ety)
        v = b.load(p, typ=vty)
        v.align = align
        for j, flip in columns:
            d = 1 << j
            is_low = constant_vector([I1(not (l & d)) for l in range(lanes)])
            partner = b.shuffle_vector(v, v, lane_mask(tuple(l ^ d for l in range(lanes))))
            lo, hi = b.select(is_low, v, partner), b.select(is_low, partner, v)
            v = b.select(
                _swap(ctx, lo, hi, _flips(ctx, first, flip, lanes), predicate, cty), partner, v
            )
        _store(b, v, p, align)
        return values

    counted_loop(ctx, [], numel // lanes, 1, step, name=f"bitonic.j{columns[0][0]}")


FAR_GROUP = 3
"""Far columns done per loop at most: 2**3 registers live (of the 16 or 32 a host has)."""


def _groups(columns: list[tuple[int, int]], lanes: int) -> list[list[tuple[int, int]]]:
    """`columns` in loops: each run of near columns one, far ones by up to FAR_GROUP
    consecutive distances (j, j-1, ...)."""
    groups: list[list[tuple[int, int]]] = []
    for column in columns:
        last = groups[-1] if groups else None
        near = (1 << column[0]) < lanes
        if last is not None and near and (1 << last[0][0]) < lanes:
            last.append(column)
        elif (
            last is not None
            and not near
            and (1 << last[-1][0]) >= lanes
            and len(last) < FAR_GROUP
            and last[-1][0] == column[0] + 1
        ):
            last.append(column)
        else:
            groups.append([column])
    return groups


def _lower(ctx, op: cpu.BitonicColumnsOp):
    lay = ctx.lay(op.src.type)
    if lay.lane or lay.warp:
        raise AssertionError("cpu.bitonic_columns is made only for one-thread layouts")
    b = ctx.b
    ety, cty = llty(op.src.type.element_type), llty(op.compare_type)
    numel = lay.numel
    flat = permute(
        ctx, as_vector(ctx, ctx.get(op.src), lay), [lay.reg_of_flat[f] for f in range(numel)]
    )
    slot = ctx.pro.alloca(flat.type)
    slot.align = 64
    b.store(flat, slot).align = 64
    base = ctx.pro.bitcast(slot, PTR)
    lanes = _lanes(ety.width, numel)
    predicate = op.predicate.data
    for group in _groups(op.column_list(), lanes):
        columns = _near_columns if (1 << group[0][0]) < lanes else _far_columns
        columns(ctx, base, ety, numel, lanes, group, predicate, cty)
    out = b.load(slot, typ=flat.type)
    out.align = 64
    regs = permute(ctx, out, list(lay.reg_flat))
    ctx.set(op.result, VTV(ctx, regs, lay, op.src.type.element_type))


def rules() -> dict:
    return {cpu.BitonicColumnsOp: _lower}


__all__ = ["rules"]
