"""tt.scan: inclusive scans along one axis with any (associative) combine region.

The axis index of an element is made of bits held by hardware dims in this order of
significance: low register bits (a thread's run of consecutive elements), lane bits, warp bits,
high register bits (repeats of the CTA tile along the axis). The scan follows that structure:
  1. in each thread, sequentially over its run of consecutive registers;
  2. across lanes, a Hillis-Steele scan of the runs' totals with `shfl.sync.idx` (source lane
     computed from the lane's axis index, so lanes along other dims or duplicates are fine),
     then each run is offset by the exclusive prefix from the lane before;
  3. across warps, the warps' totals go to shared memory and each thread combines those of
     the warps before its own (`across_warps`, which the CPU's vector scan calls too; what the
     thread scanned before the barrier crosses it as values its access keeps);
  4. the high-register chunks are carried sequentially: chunk h gets the total of chunks < h.
A reverse scan runs the same steps with every order flipped. Combines always take
(earlier, later), so non-commutative combine functions scan correctly.
"""

from __future__ import annotations

from kernellab.backends.llvm.axis import axis_mask, combiner
from kernellab.backends.llvm.errors import LoweringError
from kernellab.backends.llvm.layout import Lay, _log2
from kernellab.backends.llvm.warp_shuffle import shuffle
from kernellab.backends.llvm.remap import smem_elem_bytes
from kernellab.backends.llvm.types import I32, I8, TV, bitwidth, llty
from kernellab.ir import tt


class Plan:
    """Which register, lane and warp bits of a layout hold the scanned axis, in the order of
    the steps above (a layout the scan cannot follow is a LoweringError)."""

    def __init__(self, lay: Lay, axis: int):
        am = axis_mask(lay, axis)
        shift = lay.dim_shift(axis)
        nbits = _log2(lay.shape[axis])
        items = []  # (axis bit position, kind, index)
        for kind, bases in (("r", lay.reg), ("l", lay.lane), ("w", lay.warp)):
            for j, b in enumerate(bases):
                if not b & am:
                    continue
                part = (b & am) >> shift
                if b & ~am or part & (part - 1):
                    raise LoweringError(
                        f"scan along dim {axis}: the layout mixes the axis with other dims in one "
                        "basis; convert the operand to a blocked layout first"
                    )
                items.append((_log2(part), kind, j))
        items.sort()
        if [p for p, _, _ in items] != list(range(nbits)):
            raise LoweringError(f"scan along dim {axis}: the layout does not cover the axis once")
        kinds = "".join(k for _, k, _ in items)
        import re

        if not re.fullmatch(r"r*l*w*r*", kinds):
            raise LoweringError(f"scan along dim {axis}: unsupported layout (axis bits held as {kinds})")
        n_low = len(kinds) - len(kinds.lstrip("r"))
        self.low = [j for _, k, j in items[:n_low]]  # register bits, increasing significance
        rest = items[n_low:]
        self.lanes = [j for _, k, j in rest if k == "l"]
        self.warps = [j for _, k, j in rest if k == "w"]
        self.high = [j for _, k, j in rest if k == "r"]
        self.am = am
        self.lay = lay
        self.axis = axis


def _scan_scratch(ctx, op) -> int:
    lay = ctx.lay(op.srcs[0].type)
    plan = Plan(lay, op.axis.value.data)
    if not plan.warps:
        return 0
    slots = (lay.numel // lay.shape[plan.axis]) << (len(plan.high) + len(plan.warps))
    total = 0
    for v in op.srcs:
        total += slots * smem_elem_bytes(tt.element_type(v.type))
        total = (total + 15) // 16 * 16
    return total


def _sel(ctx, cond, a: list, b: list) -> list:
    return [ctx.b.select(cond, x, y) for x, y in zip(a, b)]


def _scan(ctx, op):
    b = ctx.b
    axis = op.axis.value.data
    reverse = bool(op.reverse.value.data)
    srcs = [ctx.get(v) for v in op.srcs]
    lay = srcs[0].lay
    plan = Plan(lay, axis)
    combine = combiner(ctx, op.combineOp, len(srcs))
    n_ops = len(srcs)

    def reg_index(other: int, high: int, low: int) -> int:
        r = other
        for k, j in enumerate(plan.low):
            if low >> k & 1:
                r |= 1 << j
        for k, j in enumerate(plan.high):
            if high >> k & 1:
                r |= 1 << j
        return r

    axis_reg_bits = 0
    for j in plan.low + plan.high:
        axis_reg_bits |= 1 << j
    others = [r for r in range(lay.nregs) if not r & axis_reg_bits]
    n_low, n_high = 1 << len(plan.low), 1 << len(plan.high)
    low_order = list(range(n_low))[::-1] if reverse else list(range(n_low))
    high_order = list(range(n_high))[::-1] if reverse else list(range(n_high))

    vals: dict[int, list] = {r: [s.regs[r] for s in srcs] for r in range(lay.nregs)}

    # 1. in thread
    for o in others:
        for h in range(n_high):
            prev = None
            for i in low_order:
                r = reg_index(o, h, i)
                if prev is not None:
                    vals[r] = combine(vals[prev], vals[r])
                prev = r

    def last_of(o, h):
        return reg_index(o, h, low_order[-1])

    # 2. across lanes
    lane_total: dict = {}
    if plan.lanes:
        nl = len(plan.lanes)
        lane_mask = sum(1 << j for j in plan.lanes)
        t = I32(0)
        for k, j in enumerate(plan.lanes):
            bit = b.and_(b.lshr(ctx.lane, I32(j)), I32(1))
            t = b.or_(t, b.shl(bit, I32(k))) if k else bit
        rank = b.sub(I32((1 << nl) - 1), t) if reverse else t
        base = b.and_(ctx.lane, I32(~lane_mask & 0xFFFFFFFF))

        def lane_of_rank(rk):
            tt_ = b.sub(I32((1 << nl) - 1), rk) if reverse else rk
            tt_ = b.and_(tt_, I32((1 << nl) - 1))
            src = base
            for k, j in enumerate(plan.lanes):
                bit = b.and_(b.lshr(tt_, I32(k)), I32(1))
                src = b.or_(src, b.shl(bit, I32(j)))
            return src

        for o in others:
            for h in range(n_high):
                r_last = last_of(o, h)
                cur = vals[r_last]
                s = 1
                while s < (1 << nl):
                    src = lane_of_rank(b.sub(rank, I32(s)))
                    y = [shuffle(ctx, v, src, "idx") for v in cur]
                    ok = b.icmp_signed(">=", rank, I32(s))
                    cur = _sel(ctx, ok, combine(y, cur), cur)
                    s *= 2
                # exclusive prefix from the previous lane, applied to the whole run
                src = lane_of_rank(b.sub(rank, I32(1)))
                ex = [shuffle(ctx, v, src, "idx") for v in cur]
                has = b.icmp_signed(">", rank, I32(0))
                for i in low_order:
                    r = reg_index(o, h, i)
                    vals[r] = _sel(ctx, has, combine(ex, vals[r]), vals[r])
                last_lane = lane_of_rank(I32((1 << nl) - 1))
                lane_total[(o, h)] = [shuffle(ctx, v, last_lane, "idx") for v in cur]
    else:
        for o in others:
            for h in range(n_high):
                lane_total[(o, h)] = vals[last_of(o, h)]

    # 3. across warps
    chunk_total = dict(lane_total)
    if plan.warps:
        regs = range(lay.nregs)
        kept, has, mine, chunk_total = across_warps(ctx, op, [s.elem for s in srcs], lane_total, combine,
                                                    keep=[v for r in regs for v in vals[r]])  # fmt: skip
        vals = {r: kept[r * n_ops : (r + 1) * n_ops] for r in regs}
        for (o, h), prefix in mine.items():
            for i in low_order:
                r = reg_index(o, h, i)
                vals[r] = _sel(ctx, has, combine(prefix, vals[r]), vals[r])

    # 4. carry across high register chunks
    if n_high > 1:
        for o in others:
            carry = None
            for h in high_order:
                if carry is not None:
                    for i in low_order:
                        r = reg_index(o, h, i)
                        vals[r] = combine(carry, vals[r])
                    carry = combine(carry, chunk_total[(o, h)])
                else:
                    carry = chunk_total[(o, h)]

    for k, res in enumerate(op.result):
        ctx.set(res, TV([vals[r][k] for r in range(lay.nregs)], lay, srcs[k].elem))


def across_warps(ctx, op, elems: list, totals: dict, combine, keep: list = ()):
    """Step 3: each warp's totals along the axis (`totals`: (register off the axis, high
    chunk) -> one value per operand, of element types `elems`) through the op's scratch, a
    barrier, and back. Returns (`keep`, values the caller computed before and uses after, as
    valid after the barrier; i1: whether warps come before this one in scan order; (o, h) ->
    the combined totals of those warps; (o, h) -> the combined totals of all warps). A target
    that scans its registers its own way hands its totals in here."""
    b = ctx.b
    axis = op.axis.value.data
    reverse = bool(op.reverse.value.data)
    lay = ctx.lay(op.srcs[0].type)
    plan = Plan(lay, axis)
    n_high = 1 << len(plan.high)
    W = 1 << len(plan.warps)
    iv = ctx.scratch_interval(op)
    offsets, off = [], ctx.scratch_offset(op)
    slots = (lay.numel // lay.shape[axis]) << (len(plan.high) + len(plan.warps))
    for elem in elems:
        offsets.append(off)
        off += slots * smem_elem_bytes(elem)
        off = (off + 15) // 16 * 16
    w = I32(0)
    for k, j in enumerate(plan.warps):
        bit = b.and_(b.lshr(ctx.warp, I32(j)), I32(1))
        w = b.or_(w, b.shl(bit, I32(k))) if k else bit
    wrank = b.sub(I32(W - 1), w) if reverse else w
    tflat = b.and_(ctx.thread_flat(lay), I32(~plan.am & 0xFFFFFFFF))
    shift = lay.dim_shift(axis)
    abits = _log2(lay.shape[axis])
    others = sorted({o for o, _ in totals})

    def out_index(o):
        x = b.xor(tflat, I32(lay.reg_flat[o])) if lay.reg_flat[o] else tflat
        low = b.and_(x, I32((1 << shift) - 1))
        high = b.lshr(x, I32(shift + abits))
        return b.or_(b.shl(high, I32(shift)), low) if shift else high

    def slot_ptr(k, oi, h, wv):
        idx = b.add(b.mul(b.add(b.mul(oi, I32(n_high)), I32(h)), I32(W)), wv)
        return ctx.smem_ptr(b.add(I32(offsets[k]), b.mul(idx, I32(smem_elem_bytes(elems[k])))))

    ctx.smem_access(iv, write=True)
    oidx = {o: out_index(o) for o in others}
    for (o, h), vals in totals.items():
        for k, v in enumerate(vals):
            if bitwidth(elems[k]) == 1:
                v = b.zext(v, I8)
            b.store(v, slot_ptr(k, oidx[o], h, w))
    # the caller's values, this warp's rank and its slots cross the barrier (where a barrier
    # ends a phase of the kernel function, the CPU's, as copies the next phase reloads)
    kept = ctx.smem_access(iv, write=False, keep=[wrank, *oidx.values(), *keep])
    wrank, oidx = kept[0], dict(zip(others, kept[1 : 1 + len(others)]))

    def load(k, o, h, wv):
        sty = I8 if bitwidth(elems[k]) == 1 else llty(elems[k])
        v = b.load(slot_ptr(k, oidx[o], h, wv), typ=sty)
        return b.trunc(v, llty(elems[k])) if sty is not llty(elems[k]) else v

    w_order = list(range(W))[::-1] if reverse else list(range(W))
    mine, total = {}, {}
    for o, h in totals:
        by_rank = [[load(k, o, h, I32(wi)) for k in range(len(elems))] for wi in w_order]
        # exclusive prefixes by warp rank: prefixes[rk] combines ranks < rk
        prefixes = [None, by_rank[0]]
        for rk in range(2, W + 1):
            prefixes.append(combine(prefixes[-1], by_rank[rk - 1]))
        mine[(o, h)] = prefixes[1]
        for rk in range(2, W):
            mine[(o, h)] = _sel(ctx, b.icmp_unsigned("==", wrank, I32(rk)), prefixes[rk], mine[(o, h)])
        total[(o, h)] = prefixes[W]
    return kept[1 + len(others) :], b.icmp_unsigned(">", wrank, I32(0)), mine, total


# op class -> fn(ctx, op) emitting its LLVM IR
RULES = {
    tt.ScanOp: _scan,
}


# op class -> fn(ctx, op) -> bytes of shared-memory scratch it needs
SCRATCH = {
    tt.ScanOp: _scan_scratch,
}
