"""Global memory: vectorized predicated loads and stores, and atomics, as inline PTX.

Vector width. A thread's registers r0..r0+v-1 form one access when the layout puts them on
consecutive elements of one dim (its first v register bases are that dim's 1, 2, 4, ...
steps and no lane/warp basis touches those low bits), AxisInfo says the pointers are
contiguous and aligned for v elements along that dim, the mask is constant over them, and
v·elem_bytes ≤ 16. The access is then `ld.global.v4.b32` (or v2, b32, b16, b8 as the byte
count requires), elements packed into 32-bit words.

Predication. A masked load writes `other` (or 0) into its destination registers with `mov`
and then executes the load under the mask predicate (`@p ld...`), so masked-off lanes read
nothing and get `other` — as Triton does. Stores and atomics run under mask ∧ "this thread
owns the element": a layout with free lane/warp bits (duplicated data) and duplicated
registers store each element once; a scalar store or atomic runs in thread 0 only.

Atomics: `atom{.sem}{.scope}.global.<op>.<type>`; bf16 add on sm_80 (no native atom) is a
compare-and-swap loop. The returned old values reach every thread holding the element: when
the layout duplicates data, through shared memory.
"""

from __future__ import annotations

import llvmlite.ir as ir
from xdsl.dialects.builtin import TensorType

from kernellab.backends.nvidia.lowering.core import LoweringError, lowers, scratch
from kernellab.backends.nvidia.lowering.layout import Lay, _log2
from kernellab.backends.nvidia.lowering.remap import padded_elems, pad_shift, smem_elem_bytes
from kernellab.backends.nvidia.lowering.types import (
    BF16, F16, F32, F64, I1, I16, I32, I64, I8, TV, bitwidth, llty, mem_bytes,
)  # fmt: skip
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


def _axis(value):
    from kernellab.passes.ttgir.axis_info import AxisInfo

    try:
        return AxisInfo.of(value)
    except Exception:  # noqa: BLE001 - no analysis for this value: assume nothing
        return None


def vector_width(ctx, ptr, mask, lay: Lay, elem) -> int:
    d, v = layout_vector(lay)
    if d is None or v == 1:
        return 1
    nbytes = mem_bytes(elem)
    v = min(v, max(1, 16 // nbytes))
    info = _axis(ptr)
    if info is None:
        return 1
    contiguity = info.contiguity[d]
    aligned = max(1, info.divisibility[d] // nbytes)
    v = min(v, contiguity, aligned)
    if mask is not None and isinstance(mask.type, TensorType):
        minfo = _axis(mask)
        if minfo is None:
            return 1
        v = min(v, minfo.constancy[d])
    return 1 << (max(1, v).bit_length() - 1)


# ------------------------------------------------------------------------------ packing


def _to_bits(ctx, v, elem):
    """Element value → integer of its memory width."""
    b = ctx.b
    w = bitwidth(elem)
    if w == 1:
        return b.zext(v, I8)
    if isinstance(v.type, ir.PointerType):
        return b.ptrtoint(v, I64)
    if isinstance(v.type, ir.IntType):
        return v
    return b.bitcast(v, ir.IntType(w))


def _from_bits(ctx, x, elem):
    b = ctx.b
    w = bitwidth(elem)
    ty = llty(elem)
    if w == 1:
        return b.icmp_unsigned("!=", x, ir.Constant(x.type, 0))
    if isinstance(ty, ir.PointerType):
        return b.inttoptr(x, ty)
    if isinstance(ty, ir.IntType):
        return x
    return b.bitcast(x, ty)


def _access_shape(vec: int, elem) -> tuple[int, int, str]:
    """(number of words, word bits, PTX type) for `vec` elements of `elem`."""
    ebits = max(8, bitwidth(elem))
    total = vec * ebits
    if ebits == 64:
        return vec, 64, "b64"
    if total >= 32:
        return total // 32, 32, "b32"
    return 1, total, f"b{total}"


def _pack_words(ctx, values, elem, nwords: int, wbits: int):
    """Element values → `nwords` integers of `wbits` bits (little-endian packing)."""
    b = ctx.b
    wty = ir.IntType(max(wbits, 16) if wbits < 32 else wbits)
    per = len(values) // nwords
    ebits = max(8, bitwidth(elem))
    out = []
    for w in range(nwords):
        acc = None
        for j in range(per):
            bits = _to_bits(ctx, values[w * per + j], elem)
            if bits.type != wty:
                bits = b.zext(bits, wty)
            if j:
                bits = b.shl(bits, ir.Constant(wty, j * ebits))
            acc = bits if acc is None else b.or_(acc, bits)
        out.append(acc)
    return out


def _unpack_words(ctx, words, elem, count: int):
    b = ctx.b
    ebits = max(8, bitwidth(elem))
    per = count // len(words)
    ety = ir.IntType(ebits)
    out = []
    for w in words:
        for j in range(per):
            x = w
            if j:
                x = b.lshr(x, ir.Constant(x.type, j * ebits))
            if x.type != ety:
                x = b.trunc(x, ety)
            out.append(_from_bits(ctx, x, elem))
    return out


def _reg_constraint(bits: int) -> str:
    return {64: "l", 32: "r", 16: "h"}[bits]


# ---------------------------------------------------------------------------- modifiers


def _cache(op, kind: str) -> str:
    cache = op.cache.data if op.cache is not None else ""
    evict = op.evict.data if op.evict is not None else ""
    allowed = (".ca", ".cg", ".cs", ".lu", ".cv") if kind == "ld" else (".wb", ".cg", ".cs", ".wt")
    if cache in allowed:
        return cache
    if evict in ("evict_first", "evict_last"):
        return f".L1::{evict}"
    return ""


# -------------------------------------------------------------------------------- loads


def emit_load(ctx, addr, pred, others, elem, vec: int, modifiers: str = "", volatile: bool = False):
    """`vec` elements starting at `addr` under predicate `pred` (None: always);
    `others`: values for masked-off lanes (None: zeros)."""
    nwords, wbits, ptx_type = _access_shape(vec, elem)
    reg_bits = max(wbits, 32) if wbits < 32 else wbits  # sub-word loads land in 32-bit regs
    rty = ir.IntType(reg_bits)
    c = _reg_constraint(reg_bits)
    outs = ", ".join(f"${i}" for i in range(nwords))
    vec_s = f".v{nwords}" if nwords > 1 else ""
    ld_type = ptx_type if wbits >= 32 else f"u{wbits}"
    space = ".volatile.global" if volatile else ".global"
    lines = []
    args = [addr]
    constraints = [f"={c}"] * nwords + ["l"]
    pi = nwords + 1
    if pred is not None:
        args.append(pred)
        constraints.append("b")
        if others is not None:
            words = _pack_words(ctx, others, elem, nwords, wbits)
            for i, w in enumerate(words):
                if w.type != rty:
                    w = ctx.b.zext(w, rty)
                args.append(w)
                constraints.append(c)
                lines.append(f"mov.b{reg_bits} ${i}, ${pi + 1 + i};")
        else:
            for i in range(nwords):
                lines.append(f"mov.b{reg_bits} ${i}, 0;")
        guard = f"@${pi} "
    else:
        guard = ""
    dst = f"{{ {outs} }}" if nwords > 1 else "$0"
    lines.append(f"{guard}ld{space}{modifiers}{vec_s}.{ld_type} {dst}, [ ${nwords} + 0 ];")
    ret = rty if nwords == 1 else ir.LiteralStructType([rty] * nwords)
    res = ctx.asm(ret, "\n\t".join(lines), ",".join(constraints), args, side_effect=True)
    if nwords == 1:
        words = [res]
    else:
        words = [ctx.b.extract_value(res, i) for i in range(nwords)]
    if wbits < 32:
        words = [ctx.b.trunc(w, ir.IntType(wbits)) for w in words]
    return _unpack_words(ctx, words, elem, vec)


@lowers(tt.LoadOp)
def _load(ctx, op):
    t = op.result.type
    elem = tt.element_type(t)
    volatile = op.is_volatile is not None and bool(op.is_volatile.value.data)
    mods = "" if volatile else _cache(op, "ld")
    if not isinstance(t, TensorType):
        pred = ctx.get(op.mask) if op.mask is not None else None
        other = [ctx.get(op.other)] if op.other is not None and pred is not None else None
        (v,) = emit_load(ctx, ctx.get(op.ptr), pred, other, elem, 1, mods, volatile)
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
        vals = emit_load(ctx, ptrs[r0], pred, oth, elem, vec, mods, volatile)
        for r, v in zip(group, vals):
            out[r] = v
    ctx.set(op.result, TV(out, lay, elem))


# ------------------------------------------------------------------------------- stores


def emit_store(ctx, addr, pred, values, elem, modifiers: str = ""):
    vec = len(values)
    nwords, wbits, ptx_type = _access_shape(vec, elem)
    words = _pack_words(ctx, values, elem, nwords, wbits)
    reg_bits = 16 if wbits < 16 else wbits
    c = _reg_constraint(reg_bits)
    st_type = ptx_type if wbits >= 16 else "b8"
    args = [addr]
    constraints = ["l"]
    for w in words:
        if w.type.width != reg_bits:
            w = ctx.b.zext(w, ir.IntType(reg_bits)) if w.type.width < reg_bits else ctx.b.trunc(w, ir.IntType(reg_bits))
        args.append(w)
        constraints.append(c)
    srcs = ", ".join(f"${i + 1}" for i in range(nwords))
    src = f"{{ {srcs} }}" if nwords > 1 else "$1"
    vec_s = f".v{nwords}" if nwords > 1 else ""
    guard = ""
    if pred is not None:
        args.append(pred)
        constraints.append("b")
        guard = f"@${nwords + 1} "
    text = f"{guard}st.global{modifiers}{vec_s}.{st_type} [ $0 + 0 ], {src};"
    ctx.asm(ir.VoidType(), text, ",".join(constraints), args, side_effect=True)


def _and(ctx, a, b):
    if a is None:
        return b
    if b is None:
        return a
    return ctx.b.and_(a, b)


@lowers(tt.StoreOp)
def _store(ctx, op):
    t = op.value.type
    elem = tt.element_type(t)
    mods = _cache(op, "st")
    if not isinstance(op.ptr.type, TensorType):
        pred = _and(ctx, ctx.get(op.mask) if op.mask is not None else None, ctx.dup_predicate(None))
        emit_store(ctx, ctx.get(op.ptr), pred, [ctx.get(op.value)], elem, mods)
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
        emit_store(ctx, ptrs[r0], pred, vals[r0 : r0 + vec], elem, mods)


# ------------------------------------------------------------------------------ atomics

_SEM = {"relaxed": ".relaxed", "acquire": ".acquire", "release": ".release", "acq_rel": ".acq_rel"}
_SCOPE = {"gpu": ".gpu", "cta": ".cta", "sys": ".sys"}


def _atom_op(kind: str, elem, arch: int) -> str | None:
    """PTX `.op.type` of an atomic, or None when it needs a CAS loop."""
    w = bitwidth(elem)
    is_f = elem is not None and llty(elem) in (F16, BF16, F32, F64)
    if kind == "fadd":
        ty = llty(elem)
        if ty == F32:
            return "add.f32"
        if ty == F64:
            return "add.f64"
        if ty == F16:
            return "add.noftz.f16"
        if ty == BF16:
            return "add.noftz.bf16" if arch >= 90 else None
    if kind == "exch":
        # an exchange only moves bits: floats (and pointers) use the integer form of their width;
        # PTX has no 16-bit atom.exch, so fp16/bf16/i16 go through a 16-bit CAS loop
        if w in (32, 64):
            return f"exch.b{w}"
        if w == 16:
            return None
        raise LoweringError(f"atomic exch on {elem} ({w} bits) is not supported; use 16, 32 or 64 bits")
    if is_f:
        # float max/min reach here only from hand-written TTIR: the frontend emits them as
        # integer max/min (signed for positive floats, unsigned for negative) on the bit pattern
        raise LoweringError(f"atomic {kind} on {elem} is not supported")
    if kind == "add":
        return f"add.u{w}"
    if kind in ("max", "min"):
        return f"{kind}.s{w}"
    if kind in ("umax", "umin"):
        return f"{kind[1:]}.u{w}"
    if kind in ("and", "or", "xor"):
        return f"{kind}.b{w}"
    raise LoweringError(f"unknown atomic op {kind}")


def _atom_prefix(op) -> str:
    return f"atom{_SEM.get(op.sem.data, '.acq_rel')}{_SCOPE.get(op.scope.data, '.gpu')}.global"


def emit_atomic(ctx, op, kind: str, addr, val, cmp, pred, elem):
    """One atomic on `addr` under `pred`; returns the old value (0 where pred is false)."""
    b = ctx.b
    w = bitwidth(elem)
    rty = ir.IntType(w)
    c = _reg_constraint(w)
    prefix = _atom_prefix(op)
    vbits = _to_bits(ctx, val, elem)
    if kind == "cas":
        cbits = _to_bits(ctx, cmp, elem)
        body = f"{prefix}.cas.b{w} $0, [ $1 + 0 ], $2, $3;"
        args, cons = [addr, cbits, vbits], [f"={c}", "l", c, c]
    else:
        atom = _atom_op(kind, elem, ctx.arch)
        if atom is None:
            return _cas_loop_16(ctx, op, kind, addr, val, pred, elem)
        body = f"{prefix}.{atom} $0, [ $1 + 0 ], $2;"
        args, cons = [addr, vbits], [f"={c}", "l", c]
    if pred is not None:
        args.append(pred)
        cons.append("b")
        text = f"mov.b{w} $0, 0;\n\t@${len(args)} {body}"
    else:
        text = body
    res = ctx.asm(rty, text, ",".join(cons), args, side_effect=True)
    return _from_bits(ctx, res, elem)


def _cas_loop_16(ctx, op, kind: str, addr, val, pred, elem):
    """A 16-bit atomic PTX lacks (bf16 add before sm_90, any 16-bit exchange) as a loop of
    16-bit compare-and-swaps, in PTX, under the predicate. Returns the old value."""
    if kind == "fadd" and llty(elem) == BF16:
        new_of_old = (
            "cvt.f32.bf16 fo, old;\n\tcvt.f32.bf16 fv, $2;\n\tadd.rn.f32 fo, fo, fv;\n\t"
            "cvt.rn.bf16.f32 new, fo;\n\t"
        )
    elif kind == "exch":
        new_of_old = "mov.b16 new, $2;\n\t"
    else:
        raise LoweringError(f"atomic {kind} on {elem} is not supported")
    vbits = _to_bits(ctx, val, elem)
    prefix = _atom_prefix(op)
    args = [addr, vbits]
    cons = ["=h", "l", "h"]
    guard_open, guard_close = "", ""
    if pred is not None:
        args.append(pred)
        cons.append("b")
        guard_open = "@!$3 bra DONE_${:uid};\n\t"
        guard_close = "DONE_${:uid}:\n\t"
    text = (
        "{\n\t.reg .b16 old, new;\n\t.reg .f32 fo, fv;\n\t.reg .pred done;\n\t"
        "mov.b16 $0, 0;\n\t"
        + guard_open
        + "ld.global.b16 old, [ $1 + 0 ];\n\t"
        "LOOP_${:uid}:\n\t"
        + new_of_old
        + f"{prefix}.cas.b16 $0, [ $1 + 0 ], old, new;\n\t"
        "setp.ne.b16 done, $0, old;\n\tmov.b16 old, $0;\n\t@done bra LOOP_${:uid};\n\t"
        + guard_close
        + "}"
    )
    res = ctx.asm(I16, text, ",".join(cons), args, side_effect=True)
    return _from_bits(ctx, res, elem)


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


scratch(tt.AtomicRMWOp, tt.AtomicCASOp)(_atomic_needs_smem)


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
        old = emit_atomic(ctx, op, kind, ctx.get(op.ptr), ctx.get(op.val),
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
        out[r] = emit_atomic(ctx, op, kind, ptrs[r], vals[r], cmps[r] if is_cas else None, pred, elem)
    if owner is not None and op.result.uses:
        out = _broadcast_results(ctx, op, lay, out, owner)
    ctx.set(op.result, TV(out, lay, elem))


@lowers(tt.AtomicRMWOp)
def _atomic_rmw(ctx, op):
    _lower_atomic(ctx, op, op.atomic_rmw_op.data)


@lowers(tt.AtomicCASOp)
def _atomic_cas(ctx, op):
    _lower_atomic(ctx, op, "cas")
