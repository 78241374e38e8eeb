"""tt.reduce: within a thread, across lanes (butterfly shuffles), across warps (shared memory).

The combine region is emitted once per pair of values combined (its block arguments bound to
the two operands' values), so any combine function works, multi-operand ones (argmax/argmin:
value and index) included.

1. In thread: registers whose element index differs only along the axis are combined in
   increasing axis order.
2. Lanes: for each lane bit whose basis moves along the axis, `shfl.sync.bfly` with that lane
   mask and combine; afterwards every lane of such a group holds the group's result (64-bit
   values are shuffled as two 32-bit halves, narrower ones widened).
3. Warps: if warp bases move along the axis, each thread writes its partial result to scratch
   slot [output index][warp's axis index], a barrier, and each thread reads the partials of
   the outputs it holds in the result layout and combines them as a tree over warp order
   (neighbours first: the order an associative combine needs, and log2(warps) dependent
   steps instead of warps - 1).
Without step 3 the partials are already distributed like the result's slice layout (a
conversion to the result layout, as the layout core's conversion_plan says (convert.py), moves
them into place).
"""

from __future__ import annotations

from xdsl.dialects.builtin import TensorType

from kernellab.backends.llvm.axis import axis_mask, combiner, compress
from kernellab.backends.llvm.convert import convert, convert_scratch_bytes
from kernellab.backends.llvm.errors import LoweringError
from kernellab.backends.llvm.layout import Lay, _log2, derived
from kernellab.backends.llvm.warp_shuffle import shuffle
from kernellab.backends.llvm.remap import smem_elem_bytes
from kernellab.backends.llvm.types import I8, I32, TV, bitwidth, llty
from kernellab.ir import tt


def _warp_axis_bits(lay: Lay, axis: int) -> list[int]:
    am = axis_mask(lay, axis)
    return [j for j, w in enumerate(lay.warp) if w & am]


def _check(lay: Lay, axis: int):
    am = axis_mask(lay, axis)
    for name, bases in (("lane", lay.lane), ("warp", lay.warp)):
        for basis in bases:
            if basis & am and basis & ~am:
                raise LoweringError(
                    f"reduction along dim {axis}: a {name} basis moves along the axis and another "
                    "dim at once; convert the operand to a blocked layout first"
                )


def partial_layout(lay: Lay, axis: int, out_shape) -> Lay:
    """Where the partial results sit after steps 1-2: `lay` with the axis dropped."""
    am = axis_mask(lay, axis)
    return derived(lay, lambda f: compress(f & ~am, lay, axis), out_shape)


def _out_shape(op) -> tuple[int, ...]:
    t = op.result[0].type
    return tuple(t.get_shape()) if isinstance(t, TensorType) else ()


def _reduce_scratch(ctx, op) -> int:
    lay = ctx.lay(op.srcs[0].type)
    axis = op.axis.value.data
    nw = 1 << len(_warp_axis_bits(lay, axis))
    out_numel = lay.numel // lay.shape[axis]
    if nw > 1:
        total = 0
        for v in op.srcs:
            total += out_numel * nw * smem_elem_bytes(tt.element_type(v.type))
            total = (total + 15) // 16 * 16
        return total
    t = op.result[0].type
    if not isinstance(t, TensorType):
        return 0
    part = partial_layout(lay, axis, _out_shape(op))
    res_lay = ctx.lay(t)
    return max(convert_scratch_bytes(part, res_lay, tt.element_type(v.type)) for v in op.srcs)


def bind_thread_results(ctx, op, lay: Lay, acc: dict) -> None:
    """Bind `op`'s results when each thread holds whole groups along the axis: `acc` maps the
    flat index with the axis bits cleared to the group's combined values (one per operand)."""
    axis = op.axis.value.data
    if not isinstance(op.result[0].type, TensorType):
        for res, v in zip(op.result, acc[0]):
            ctx.set(res, v)
        return
    am = axis_mask(lay, axis)
    part = partial_layout(lay, axis, _out_shape(op))
    res_lay = ctx.lay(op.result[0].type)
    for k, res in enumerate(op.result):
        regs = [acc[lay.reg_flat[lay.reg_of_flat[lay.reg_flat[r]]] & ~am][k] for r in range(lay.nregs)]
        tv = TV(regs, part, tt.element_type(res.type))
        ctx.set(res, convert(ctx, tv, res_lay, op))


def _reduce(ctx, op):
    axis = op.axis.value.data
    srcs = [ctx.get(v) for v in op.srcs]
    lay = srcs[0].lay
    for s in srcs[1:]:
        if s.lay != lay:
            raise LoweringError("tt.reduce operands have different layouts")
    _check(lay, axis)
    n = len(srcs)
    combine = combiner(ctx, op.combineOp, n)
    am = axis_mask(lay, axis)

    # 1. in thread: groups of registers equal off the axis, combined in axis order
    groups: dict[int, list[int]] = {}
    for r in lay.canonical_regs:
        groups.setdefault(lay.reg_flat[r] & ~am, []).append(r)
    acc: dict[int, list] = {}
    for key, regs in groups.items():
        regs.sort(key=lambda r: lay.dim_part(lay.reg_flat[r], axis))
        vals = [s.regs[regs[0]] for s in srcs]
        for r in regs[1:]:
            vals = combine(vals, [s.regs[r] for s in srcs])
        acc[key] = vals

    # 2. across lanes
    for i, basis in enumerate(lay.lane):
        if basis & am:
            for key in acc:
                other = [shuffle(ctx, v, I32(1 << i)) for v in acc[key]]
                acc[key] = combine(acc[key], other)

    if not _warp_axis_bits(lay, axis):
        bind_thread_results(ctx, op, lay, acc)
        return
    across_warps(ctx, op, srcs, acc, combine)


def across_warps(ctx, op, srcs: list, acc: dict, combine) -> None:
    """Step 3 and the results: `acc` maps the flat index with the axis bits cleared to this
    thread's partial values (one per operand, after steps 1-2; a target that combines its
    registers its own way hands its partials in here)."""
    b = ctx.b
    axis = op.axis.value.data
    lay = srcs[0].lay
    am = axis_mask(lay, axis)
    warp_bits = _warp_axis_bits(lay, axis)
    scalar = not isinstance(op.result[0].type, TensorType)
    nw = 1 << len(warp_bits)
    out_numel = lay.numel // lay.shape[axis]
    base = ctx.scratch_offset(op)
    iv = ctx.scratch_interval(op)
    offsets = []
    off = base
    for s in srcs:
        offsets.append(off)
        off += out_numel * nw * smem_elem_bytes(s.elem)
        off = (off + 15) // 16 * 16
    # the thread's warp index along the axis
    widx = I32(0)
    for pos, j in enumerate(warp_bits):
        bit = b.and_(b.lshr(ctx.warp, I32(j)), I32(1))
        widx = b.or_(widx, b.shl(bit, I32(pos))) if pos else bit
    tflat = ctx.thread_flat(lay)
    tflat_off = b.and_(tflat, I32(~am & 0xFFFFFFFF))
    shift = lay.dim_shift(axis)
    abits = _log2(lay.shape[axis])

    def compress_rt(x):
        low = b.and_(x, I32((1 << shift) - 1))
        high = b.lshr(x, I32(shift + abits))
        return b.or_(b.shl(high, I32(shift)), low) if shift else high

    def slot_ptr(k, out_idx, w, elem):
        nbytes = smem_elem_bytes(elem)
        idx = b.add(b.mul(out_idx, I32(nw)), w)
        return ctx.smem_ptr(b.add(I32(offsets[k]), b.mul(idx, I32(nbytes))))

    ctx.smem_access(iv, write=True)
    for key, vals in acc.items():
        out_idx = compress_rt(b.xor(tflat_off, I32(key)) if key else tflat_off)
        for k, (v, s) in enumerate(zip(vals, srcs)):
            if bitwidth(s.elem) == 1:
                v = b.zext(v, I8)
            b.store(v, slot_ptr(k, out_idx, widx, s.elem))
    ctx.smem_access(iv, write=False)

    def read(out_idx):
        parts = []
        for w in range(nw):
            cur = []
            for k, s in enumerate(srcs):
                sty = I8 if bitwidth(s.elem) == 1 else llty(s.elem)
                v = b.load(slot_ptr(k, out_idx, I32(w), s.elem), typ=sty)
                if sty is not llty(s.elem):
                    v = b.trunc(v, llty(s.elem))
                cur.append(v)
            parts.append(cur)
        while len(parts) > 1:  # neighbours in warp order: log2(nw) combines deep, not nw - 1
            parts = [combine(parts[i], parts[i + 1]) for i in range(0, len(parts), 2)]
        return parts[0]

    if scalar:
        vals = read(I32(0))
        for res, v in zip(op.result, vals):
            ctx.set(res, v)
        return
    res_lay = ctx.lay(op.result[0].type)
    per_reg = []
    memo = {}
    for r in range(res_lay.nregs):
        f = res_lay.reg_flat[r]
        if f not in memo:
            memo[f] = read(ctx.flat_index(res_lay, r))
        per_reg.append(memo[f])
    for k, res in enumerate(op.result):
        ctx.set(res, TV([v[k] for v in per_reg], res_lay, tt.element_type(res.type)))


# op class -> fn(ctx, op) emitting its LLVM IR
RULES = {
    tt.ReduceOp: _reduce,
}


# op class -> fn(ctx, op) -> bytes of shared-memory scratch it needs
SCRATCH = {
    tt.ReduceOp: _reduce_scratch,
}
