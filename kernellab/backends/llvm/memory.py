"""Global memory: vectorized predicated loads and stores, and atomics (the target emits each
access: NVIDIA as inline PTX, see nvidia/lowering/ptx_memory.py).

Vector width. A thread's registers r0..r0+v-1 form one access when the layout puts them on
consecutive elements of one dim (its first v register bases are that dim's 1, 2, 4, ...
steps and no lane/warp basis touches those low bits), AxisInfo says the pointers are
contiguous and aligned for v elements along that dim, the mask is constant over them, and
v·elem_bytes ≤ 16. The target then emits one access of v elements.

Predication. A masked load gives masked-off lanes `other` (or 0) and reads nothing for them,
as Triton does. Stores and atomics run under mask ∧ "this thread
owns the element": a layout with free lane/warp bits (duplicated data) and duplicated
registers store each element once; a scalar store or atomic runs in thread 0 only.

Atomics: one per element, in the thread that owns it. The returned old values reach every
thread holding the element: when the layout duplicates data, through shared memory.
"""

from __future__ import annotations

from xdsl.dialects.builtin import TensorType

from kernellab.backends.llvm.axis_facts import axis_info
from kernellab.backends.llvm.layout import Lay
from kernellab.backends.llvm.remap import pad_shift, padded_elems, smem_elem_bytes
from kernellab.backends.llvm.types import I8, I32, TV, bitwidth, llty, mem_bytes
from kernellab.ir import tt


# ------------------------------------------------------------------------- vector width


def layout_vector(lay: Lay) -> tuple[int | None, int]:
    """(dim, max registers) the layout lets one access cover: its leading register bases
    step along one dim by 1, 2, 4, ... elements (and no lane/warp basis touches those bits)."""
    if not lay.reg:
        return None, 1
    first = lay.reg[0]
    for d in range(lay.rank):
        stride = 1 << lay.dim_shift(d)
        if first == stride and lay.shape[d] > 1:
            k = 0
            while k < len(lay.reg) and lay.reg[k] == stride << k and (1 << k) < lay.shape[d]:
                k += 1
            low = ((1 << k) - 1) * stride
            while k > 0 and any(b & low for b in lay.lane + lay.warp):
                k -= 1
                low = ((1 << k) - 1) * stride
            return d, 1 << k
    return None, 1


def vector_width(ctx, ptr, mask, lay: Lay, elem) -> int:
    d, v = layout_vector(lay)
    if d is None or v == 1:
        return 1
    nbytes = mem_bytes(elem)
    v = min(v, max(1, 16 // nbytes))
    info = axis_info(ptr)
    if info is None:
        return 1
    contiguity = info.contiguity[d]
    aligned = max(1, info.divisibility[d] // nbytes)
    v = min(v, contiguity, aligned)
    if mask is not None and isinstance(mask.type, TensorType):
        minfo = axis_info(mask)
        if minfo is None:
            return 1
        v = min(v, minfo.constancy[d])
    return 1 << (max(1, v).bit_length() - 1)


# -------------------------------------------------------------------------------- loads


def _load(ctx, op):
    t = op.result.type
    elem = tt.element_type(t)
    if not isinstance(t, TensorType):
        pred = ctx.get(op.mask) if op.mask is not None else None
        other = [ctx.get(op.other)] if op.other is not None and pred is not None else None
        (v,) = ctx.target.load(ctx, op, ctx.get(op.ptr), pred, other, elem, 1)
        ctx.set(op.result, v)
        return
    lay = ctx.lay(t)
    ptrs = ctx.regs(op.ptr, lay)
    masks = ctx.regs(op.mask, lay) if op.mask is not None else None
    others = ctx.regs(op.other, lay) if op.other is not None else None
    vec = vector_width(ctx, op.ptr, op.mask, lay, elem)
    out: list = [None] * lay.nregs
    for r0 in range(0, lay.nregs, vec):
        group = list(range(r0, r0 + vec))
        if lay.reg_of_flat[lay.reg_flat[r0]] != r0:  # duplicate of an earlier group
            src = lay.reg_of_flat[lay.reg_flat[r0]]
            for i, r in enumerate(group):
                out[r] = out[src + i]
            continue
        pred = masks[r0] if masks is not None else None
        oth = [others[r] for r in group] if (others is not None and pred is not None) else None
        vals = ctx.target.load(ctx, op, ptrs[r0], pred, oth, elem, vec)
        for r, v in zip(group, vals):
            out[r] = v
    ctx.set(op.result, TV(out, lay, elem))


# ------------------------------------------------------------------------------- stores


def _and(ctx, a, b):
    if a is None:
        return b
    if b is None:
        return a
    return ctx.b.and_(a, b)


def _store(ctx, op):
    t = op.value.type
    elem = tt.element_type(t)
    if not isinstance(op.ptr.type, TensorType):
        pred = _and(ctx, ctx.get(op.mask) if op.mask is not None else None, ctx.dup_predicate(None))
        ctx.target.store(ctx, op, ctx.get(op.ptr), pred, [ctx.get(op.value)], elem)
        return
    lay = ctx.lay(op.ptr.type)
    ptrs = ctx.regs(op.ptr, lay)
    vals = ctx.regs(op.value, lay)
    masks = ctx.regs(op.mask, lay) if op.mask is not None else None
    owner = ctx.dup_predicate(lay)
    vec = vector_width(ctx, op.ptr, op.mask, lay, elem)
    for r0 in range(0, lay.nregs, vec):
        if lay.reg_of_flat[lay.reg_flat[r0]] != r0:
            continue
        pred = _and(ctx, masks[r0] if masks is not None else None, owner)
        ctx.target.store(ctx, op, ptrs[r0], pred, vals[r0 : r0 + vec], elem)


# ------------------------------------------------------------------------------ atomics

def _atomic_needs_smem(ctx, op) -> int:
    t = op.result.type
    elem = tt.element_type(t)
    if not op.result.uses:
        return 0
    if not isinstance(t, TensorType):
        return smem_elem_bytes(elem)
    lay = ctx.lay(t)
    if lay.free_lane_mask() or lay.free_warp_mask():
        return padded_elems(lay.shape) * smem_elem_bytes(elem)
    return 0


def _broadcast_results(ctx, op, lay: Lay | None, vals: list, owner) -> list:
    """Make the old values of owner threads visible to every thread holding the element."""
    b = ctx.b
    base = ctx.scratch_offset(op)
    iv = ctx.scratch_interval(op)
    elem = tt.element_type(op.result.type)
    nbytes = smem_elem_bytes(elem)
    ety = llty(elem)
    sty = I8 if bitwidth(elem) == 1 else ety
    ctx.smem_access(iv, write=True)
    regs = [0] if lay is None else list(lay.canonical_regs)
    shift = pad_shift(lay.shape) if lay is not None else 0

    def addr_of(flat):
        if lay is None:
            return ctx.smem_ptr(base)
        idx = b.add(flat, b.lshr(flat, I32(shift)))
        return ctx.smem_ptr(b.add(I32(base), b.mul(idx, I32(nbytes))))

    with b.if_then(owner):
        for r in regs:
            v = vals[r]
            if sty is not ety:
                v = b.zext(v, sty)
            b.store(v, addr_of(None if lay is None else ctx.flat_index(lay, r)))
    ctx.smem_access(iv, write=False)
    out, memo = [], {}
    nregs = 1 if lay is None else lay.nregs
    for r in range(nregs):
        key = 0 if lay is None else lay.reg_flat[r]
        if key not in memo:
            v = b.load(addr_of(None if lay is None else ctx.flat_index(lay, r)), typ=sty)
            memo[key] = b.trunc(v, ety) if sty is not ety else v
        out.append(memo[key])
    return out


def _lower_atomic(ctx, op, kind: str):
    t = op.result.type
    elem = tt.element_type(t)
    is_cas = kind == "cas"
    mask_v = None if is_cas else op.mask
    if not isinstance(t, TensorType):
        owner = ctx.dup_predicate(None)
        pred = _and(ctx, ctx.get(mask_v) if mask_v is not None else None, owner)
        old = ctx.target.atomic(ctx, op, kind, ctx.get(op.ptr), ctx.get(op.val),
                          ctx.get(op.cmp) if is_cas else None, pred, elem)  # fmt: skip
        if op.result.uses:
            (old,) = _broadcast_results(ctx, op, None, [old], owner)
        ctx.set(op.result, old)
        return
    lay = ctx.lay(t)
    ptrs = ctx.regs(op.ptr, lay)
    vals = ctx.regs(op.val, lay)
    cmps = ctx.regs(op.cmp, lay) if is_cas else None
    masks = ctx.regs(mask_v, lay) if mask_v is not None else None
    owner = ctx.dup_predicate(lay)
    out: list = [None] * lay.nregs
    for r in range(lay.nregs):
        canon = lay.reg_of_flat[lay.reg_flat[r]]
        if canon != r:
            out[r] = out[canon]
            continue
        pred = _and(ctx, masks[r] if masks is not None else None, owner)
        out[r] = ctx.target.atomic(ctx, op, kind, ptrs[r], vals[r], cmps[r] if is_cas else None, pred, elem)
    if owner is not None and op.result.uses:
        out = _broadcast_results(ctx, op, lay, out, owner)
    ctx.set(op.result, TV(out, lay, elem))


def _atomic_rmw(ctx, op):
    _lower_atomic(ctx, op, op.atomic_rmw_op.data)


def _atomic_cas(ctx, op):
    _lower_atomic(ctx, op, "cas")


# op class -> fn(ctx, op) emitting its LLVM IR
RULES = {
    tt.LoadOp: _load,
    tt.StoreOp: _store,
    tt.AtomicRMWOp: _atomic_rmw,
    tt.AtomicCASOp: _atomic_cas,
}


# op class -> fn(ctx, op) -> bytes of shared-memory scratch it needs
SCRATCH = {
    tt.AtomicRMWOp: _atomic_needs_smem,
    tt.AtomicCASOp: _atomic_needs_smem,
}
