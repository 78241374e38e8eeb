"""Global memory accesses and atomics as inline PTX, for the core's memory rules
(backends/llvm/memory.py decides vector width, predicates and ownership; this emits).

An access of `vec` elements is `ld.global.v4.b32` (or v2, b32, b16, b8 as the byte count
requires), elements packed into 32-bit words. A masked load writes `other` (or 0) into its
destination registers with `mov` and then executes the load under the mask predicate
(`@p ld...`), so masked-off lanes read nothing and get `other` — as Triton does.
Atomics: `atom{.sem}{.scope}.global.<op>.<type>`; bf16 add on sm_80 (no native atom) is a
compare-and-swap loop in PTX.
"""

from __future__ import annotations

import llvmlite.ir as ir

from kernellab.backends.llvm.errors import LoweringError
from kernellab.backends.llvm.types import BF16, F16, F32, F64, I16, I64, I8, bitwidth, float_suffix, llty



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


def load(ctx, op, addr, pred, others, elem, vec: int) -> list:
    """`vec` elements starting at `addr` under predicate `pred` (None: always);
    `others`: values for masked-off lanes (None: zeros). Cache modifiers from tt.load `op`."""
    volatile = op.is_volatile is not None and bool(op.is_volatile.value.data)
    modifiers = "" if volatile else _cache(op, "ld")
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


def store(ctx, op, addr, pred, values, elem) -> None:
    """`values` (consecutive elements) to `addr` under `pred`; cache modifiers from `op`."""
    modifiers = _cache(op, "st")
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


_SEM = {"relaxed": ".relaxed", "acquire": ".acquire", "release": ".release", "acq_rel": ".acq_rel"}
_SCOPE = {"gpu": ".gpu", "cta": ".cta", "sys": ".sys"}


def _atom_op(kind: str, elem, arch: int) -> str | None:
    """PTX `.op.type` of an atomic, or None when it needs a CAS loop."""
    w = bitwidth(elem)
    is_f = elem is not None and llty(elem) in (F16, BF16, F32, F64)
    if kind == "fadd":
        ty = llty(elem)
        if ty in (F32, F64):
            return f"add.{float_suffix(ty)}"
        if ty == F16 or (ty == BF16 and arch >= 90):
            return f"add.noftz.{float_suffix(ty)}"
        if ty == BF16:
            return None
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


def atomic(ctx, op, kind: str, addr, val, cmp, pred, elem):
    """One atomic on `addr` under `pred`; returns the old value (0 where pred is false)."""
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
        atom = _atom_op(kind, elem, ctx.target.arch)
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
