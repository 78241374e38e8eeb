"""cpu.bitonic_columns (tl.sort's and tl.topk's compare-exchange columns) as LLVM loops over
vector registers: the tensor in flat order goes to a stack array (one store), each column is
one loop, the result is read back (one load). Code size grows with the number of columns only,
where the language's network lowered op by op is a handful of shuffles as wide as the tensor
per column, which x86's code generator handles in superlinear time (2048 elements: over two
minutes).

A column pairs element i (bit j of i clear) with i + 2**j. Pairs at least a register apart
(2**j >= V lanes) are two register loads, a compare and two selects, for V pairs at a time;
closer pairs sit in one register, whose partner lanes one shufflevector with a constant mask
brings over. The flip is a constant or bit b of i (b > j, so both partners agree on it).
"""

from __future__ import annotations

from kernellab.backends.cpu.host import vector_registers
from kernellab.backends.cpu.lowering.vectors import VTV, as_vector, constant_vector, lane_mask, permute, splat, vector_type
from kernellab.backends.llvm.dot import counted_loop
from kernellab.backends.llvm.types import I1, I32, PTR, llty
from kernellab.ir import cpu


def _lanes(width: int, numel: int) -> int:
    """Elements per step: one vector register of `width`-bit elements, at most the tensor."""
    return max(1, min(numel, vector_registers()[1] * 8 // width))


def _swap(ctx, low, high, first, flip: int, predicate: str, cty):
    """Whether each lane's pair (low, high) is out of order: `low predicate high`, xor the
    flip (for the pair whose low element has flat index `first` + lane)."""
    b = ctx.b
    n = low.type.count
    if cty != low.type.element:
        low, high = b.bitcast(low, vector_type(cty, n)), b.bitcast(high, vector_type(cty, n))
    if predicate == "ogt":
        out = b.fcmp_ordered(">", low, high)
    else:
        out = (b.icmp_signed if predicate == "sgt" else b.icmp_unsigned)(">", low, high)
    if flip == cpu.FLIP_TRUE:
        return b.not_(out)
    if flip == cpu.FLIP_FALSE:
        return out
    index = b.add(splat(ctx, first, n), constant_vector([I32(l) for l in range(n)]))
    bit = b.and_(b.lshr(index, splat(ctx, I32(flip), n)), splat(ctx, I32(1), n))
    return b.xor(out, b.trunc(bit, vector_type(I1, n)))


def _store(b, vec, ptr, align: int) -> None:
    """Store `vec` at `ptr` (llvmlite keeps the slot's own pointee type on a gep: cast it)."""
    b.store(vec, b.bitcast(ptr, vec.type.as_pointer())).align = align


def _far_column(ctx, base, ety, numel, lanes, j, flip, predicate, cty):
    """Pairs 2**j >= lanes apart: per step, `lanes` low elements and their partners."""
    b = ctx.b
    vty = vector_type(ety, lanes)
    align = ety.width // 8

    def step(values, i):
        e = b.mul(i, I32(lanes))  # the step's first pair, counted over pairs
        first = b.or_(b.shl(b.lshr(e, I32(j)), I32(j + 1)), b.and_(e, I32((1 << j) - 1)))
        lo_p = b.gep(base, [first], source_etype=ety)
        hi_p = b.gep(base, [b.add(first, I32(1 << j))], source_etype=ety)
        lo, hi = b.load(lo_p, typ=vty), b.load(hi_p, typ=vty)
        lo.align = hi.align = align
        swap = _swap(ctx, lo, hi, first, flip, predicate, cty)
        _store(b, b.select(swap, hi, lo), lo_p, align)
        _store(b, b.select(swap, lo, hi), hi_p, align)
        return values

    counted_loop(ctx, [], numel // (2 * lanes), 1, step, name=f"bitonic.j{j}")


def _near_column(ctx, base, ety, numel, lanes, j, flip, predicate, cty):
    """Pairs 2**j < lanes apart: per step, one register and its lanes' partners."""
    b = ctx.b
    vty = vector_type(ety, lanes)
    align = ety.width // 8
    d = 1 << j
    is_low = constant_vector([I1(not (l & d)) for l in range(lanes)])

    def step(values, i):
        first = b.mul(i, I32(lanes))
        p = b.gep(base, [first], source_etype=ety)
        v = b.load(p, typ=vty)
        v.align = align
        partner = b.shuffle_vector(v, v, lane_mask(tuple(l ^ d for l in range(lanes))))
        lo, hi = b.select(is_low, v, partner), b.select(is_low, partner, v)
        swap = _swap(ctx, lo, hi, first, flip, predicate, cty)
        _store(b, b.select(swap, partner, v), p, align)
        return values

    counted_loop(ctx, [], numel // lanes, 1, step, name=f"bitonic.j{j}")


def _lower(ctx, op: cpu.BitonicColumnsOp):
    lay = ctx.lay(op.src.type)
    if lay.lane or lay.warp:
        raise AssertionError("cpu.bitonic_columns is made only for one-thread layouts")
    b = ctx.b
    ety, cty = llty(op.src.type.element_type), llty(op.compare_type)
    numel = lay.numel
    flat = permute(ctx, as_vector(ctx, ctx.get(op.src), lay), [lay.reg_of_flat[f] for f in range(numel)])
    slot = ctx.pro.alloca(flat.type)
    slot.align = 64
    b.store(flat, slot).align = 64
    base = ctx.pro.bitcast(slot, PTR)
    lanes = _lanes(ety.width, numel)
    predicate = op.predicate.data
    for j, flip in op.column_list():
        column = _far_column if (1 << j) >= lanes else _near_column
        column(ctx, base, ety, numel, lanes, j, flip, predicate, cty)
    out = b.load(slot, typ=flat.type)
    out.align = 64
    regs = permute(ctx, out, list(lay.reg_flat))
    ctx.set(op.result, VTV(ctx, regs, lay, op.src.type.element_type))


def rules() -> dict:
    return {cpu.BitonicColumnsOp: _lower}


__all__ = ["rules"]
