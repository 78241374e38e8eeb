"""The CPU's rules for the ops that make up most kernels, on whole tensors as LLVM vectors
(vectors.py): constants, ranges, splats, pointer arithmetic, elementwise arithmetic,
compares, selects, casts, the math LLVM has intrinsics for, and memory.

Memory: a run of registers on consecutive addresses (the layout's leading register bases step
along the pointers' contiguous dim; AxisInfo says how far) is one `llvm.masked.load`/`store`
with a mask per element, so a masked tail costs nothing extra; anything else is one
`llvm.masked.gather`/`scatter`. LLVM splits the vectors into the host's registers (AVX-512,
AVX2, NEON). More than MAX_UNROLLED_RUNS runs (short rows of a tall one-warp tile) are an
LLVM loop over the runs, reading the pointers, mask and values from stack slots.

Each rule falls back to the core's per-register rule where its case is not the plain one
(scalars, duplicated registers, fp8/bf16 arithmetic, bounds checks under debug=True), so every
op still lowers.
"""

from __future__ import annotations

import llvmlite.ir as ir
from xdsl.dialects import builtin
from xdsl.dialects.builtin import TensorType

from kernellab.backends.cpu.lowering.vector_math import exp2_f32, log2_f32
from kernellab.backends.cpu.lowering.vectors import VTV, as_vector, concat, constant_vector, lanes, splat, undefined, vector_type
from kernellab.backends.llvm import elementwise, memory
from kernellab.backends.llvm.dot import counted_loop
from kernellab.backends.llvm.portable import vector_name
from kernellab.backends.llvm.elementwise import LN2, LOG2E, const_value
from kernellab.backends.llvm.types import F32, F64, I1, I32, I8, llty, mem_llty
from kernellab.ir import arith, tt
from kernellab.ir import math as xmath
from kernellab.passes.ttgir.axis_info import AxisInfo

_FLOATS = (builtin.Float32Type, builtin.Float64Type)
_INT_BINARY = {
    "addi": "add", "subi": "sub", "muli": "mul", "divsi": "sdiv", "divui": "udiv",
    "remsi": "srem", "remui": "urem", "andi": "and_", "ori": "or_", "xori": "xor",
    "shli": "shl", "shrsi": "ashr", "shrui": "lshr",
}  # fmt: skip
_FLOAT_BINARY = {"addf": "fadd", "subf": "fsub", "mulf": "fmul", "divf": "fdiv", "remf": "frem"}
_MINMAX = {"maxsi": "llvm.smax", "minsi": "llvm.smin", "maxui": "llvm.umax", "minui": "llvm.umin",
           "maximumf": "llvm.maximum", "minimumf": "llvm.minimum", "maxnumf": "llvm.maxnum",
           "minnumf": "llvm.minnum"}  # fmt: skip


# and/or/xor of masks: one vector instruction whatever the width (a 2-D mask is built by them)
_BOOLEAN = frozenset({"andi", "ori", "xori"})
VECTOR_BINARY = frozenset(_INT_BINARY) | frozenset(_FLOAT_BINARY) | frozenset(_MINMAX)


def _suffix(vty: ir.VectorType) -> str:
    e = vty.element
    name = f"i{e.width}" if isinstance(e, ir.IntType) else {F32: "f32", F64: "f64"}[e]
    return f"v{vty.count}{name}"


def vcall(ctx, base: str, args: list, ret=None):
    """LLVM vector intrinsic `base` (e.g. "llvm.maxnum") overloaded on its first argument."""
    ty = args[0].type
    return ctx.call(f"{base}.{_suffix(ty)}", ret or ty, args)


def takes_vectors(t) -> bool:
    """A tensor of ints, pointers, f32 or f64: what the vector rules take (fp16 and bf16 go
    through the core's rules, which compute them as the GPU does)."""
    if not isinstance(t, TensorType):
        return False
    e = t.element_type
    return isinstance(e, (builtin.IntegerType, tt.PointerType, *_FLOATS))


def _vector_rule(core, accepts):
    """A rule that lowers `op` on vectors when `accepts(op)`, else with the core's `core`."""

    def decorate(fn):
        def lower(ctx, op):
            if accepts(op):
                fn(ctx, op)
            else:
                core(ctx, op)

        lower.__name__ = fn.__name__
        return lower

    return decorate


def _vectors(ctx, op, lay):
    return [as_vector(ctx, ctx.get(v), lay) for v in op.operands]


def _result(ctx, op, vec):
    t = op.results[0].type
    ctx.set(op.results[0], VTV(ctx, vec, ctx.lay(t), t.element_type))


def _all_plain(op) -> bool:
    return all(takes_vectors(v.type) for v in (*op.operands, *op.results))


def _wide_ints(op) -> bool:
    """Integer arithmetic wider than i1 (i1 arithmetic keeps the core's per-element rules)."""
    return _all_plain(op) and op.result.type.element_type.width.data > 1


# ------------------------------------------------------------------ values without inputs


def _constant(ctx, op):
    t = op.result.type
    lay = ctx.lay(t)
    values = op.value.get_values()
    e = t.element_type
    by_flat = [const_value(e, values[f] if len(values) > 1 else values[0]) for f in lay.reg_flat]
    _result(ctx, op, constant_vector(by_flat))


def _constant_accepts(op) -> bool:
    """Dense tensor constants; one whose elements differ only in a layout without warps (a
    warp's registers would hold other elements)."""
    t = op.result.type
    if not (isinstance(t, TensorType) and takes_vectors(t) and isinstance(op.value, builtin.DenseIntOrFPElementsAttr)):
        return False
    from kernellab.backends.llvm.layout import layout_of_type

    values = op.value.get_values()
    return len(set(values)) == 1 or not layout_of_type(t).thread_bits


def _make_range(ctx, op):
    t = op.result.type
    lay = ctx.lay(t)
    start = op.start.value.data
    if not lay.thread_bits:
        _result(ctx, op, constant_vector([I32(start + f) for f in lay.reg_flat]))
        return
    # one of several warps: element = register part ^ this warp's part (ctx.flat_index), an
    # add where their bits are disjoint (LLVM sees contiguous lanes through an add, not a xor)
    b = ctx.b
    part = splat(ctx, ctx.thread_flat(lay), lay.nregs)
    if all(f & lay.thread_bits == 0 for f in lay.reg_flat):
        vec = b.add(constant_vector([I32(start + f) for f in lay.reg_flat]), part)
    else:
        vec = b.xor(constant_vector([I32(f) for f in lay.reg_flat]), part)
        vec = b.add(vec, splat(ctx, I32(start), lay.nregs)) if start else vec
    _result(ctx, op, vec)


def _splat(ctx, op):
    t = op.result.type
    lay = ctx.lay(t)
    _result(ctx, op, splat(ctx, ctx.get(op.src), lay.nregs))


# ------------------------------------------------------------------------- elementwise


_DIVISIONS = {"divsi": True, "remsi": True, "divui": False, "remui": False}  # name → signed


def _safe_divisor(ctx, x, y, signed: bool):
    """y with the lanes that trap on a CPU (÷0, and INT_MIN ÷ -1 when signed) replaced by 1: a
    GPU divides every lane without trapping, masked-off lanes (holding 0) included; what a
    kernel gets for those lanes is unspecified there too."""
    b = ctx.b
    n, ety = y.type.count, y.type.element

    def const(v):
        return ir.Constant(y.type, [ir.Constant(ety, v)] * n)

    bad = b.icmp_unsigned("==", y, const(0))
    if signed:
        lowest = const(-(1 << (ety.width - 1)))
        bad = b.or_(bad, b.and_(b.icmp_signed("==", x, lowest), b.icmp_signed("==", y, const(-1))))
    return b.select(bad, const(1), y)


def vector_binary(ctx, name: str, x, y):
    """arith.<name> (addf, maxsi, ...) on two vectors of one type."""
    b = ctx.b
    if name in _DIVISIONS:
        y = _safe_divisor(ctx, x, y, _DIVISIONS[name])
    if name in _INT_BINARY:
        return getattr(b, _INT_BINARY[name])(x, y)
    if name in _FLOAT_BINARY:
        return getattr(b, _FLOAT_BINARY[name])(x, y)
    return vcall(ctx, _MINMAX[name], [x, y])


def _binary(name: str):
    def lower(ctx, op):
        lay = ctx.lay(op.result.type)
        _result(ctx, op, vector_binary(ctx, name, *_vectors(ctx, op, lay)))

    return lower


def _cmp(signed_fn):
    def lower(ctx, op):
        lay = ctx.lay(op.result.type)
        x, y = _vectors(ctx, op, lay)
        _result(ctx, op, signed_fn(ctx, op.predicate_name)(x, y))

    return lower


def _select(ctx, op):
    lay = ctx.lay(op.result.type)
    c, x, y = _vectors(ctx, op, lay)
    _result(ctx, op, ctx.b.select(c, x, y))


def _negf(ctx, op):
    lay = ctx.lay(op.result.type)
    (x,) = _vectors(ctx, op, lay)
    _result(ctx, op, ctx.b.fneg(x))


_CASTS = {"extsi": "sext", "extui": "zext", "trunci": "trunc", "extf": "fpext", "truncf": "fptrunc",
          "sitofp": "sitofp", "uitofp": "uitofp", "bitcast": "bitcast"}  # fmt: skip


def _cast(name: str):
    def lower(ctx, op):
        lay = ctx.lay(op.result.type)
        (x,) = _vectors(ctx, op, lay)
        dst = vector_type(llty(op.result.type.element_type), lay.nregs)
        _result(ctx, op, getattr(ctx.b, _CASTS[name])(x, dst))

    return lower


_HALVES = (builtin.Float16Type, builtin.BFloat16Type)


def _cast_accepts(name: str):
    def accepts(op) -> bool:
        if name in ("extf", "truncf") and all(isinstance(v.type, TensorType) for v in (op.input, op.result)):
            src, dst = op.input.type.element_type, op.result.type.element_type
            # f64 → f16/bf16 rounds twice through f32 in the core (round-to-odd): leave it there
            return isinstance(src, (*_FLOATS, *_HALVES)) and isinstance(dst, (*_FLOATS, *_HALVES)) and not (
                isinstance(src, builtin.Float64Type) and isinstance(dst, _HALVES)
            )
        if not _all_plain(op):
            return False
        src, dst = op.input.type.element_type, op.result.type.element_type
        if name in ("sitofp", "uitofp") and isinstance(src, builtin.IntegerType) and src.width.data == 1:
            return False
        return not isinstance(src, tt.PointerType) and not isinstance(dst, tt.PointerType)

    return accepts


def _fp_to_int(signed: bool):
    def lower(ctx, op):
        lay = ctx.lay(op.result.type)
        (x,) = _vectors(ctx, op, lay)
        dst = vector_type(llty(op.result.type.element_type), lay.nregs)
        name = f"llvm.{'fptosi' if signed else 'fptoui'}.sat.{_suffix(dst)}.{_suffix(x.type)}"
        _result(ctx, op, ctx.call(name, dst, [x]))

    return lower


def _fp_to_int_accepts(op) -> bool:
    dst = op.result.type.element_type if isinstance(op.result.type, TensorType) else None
    return _all_plain(op) and isinstance(dst, builtin.IntegerType) and dst.width.data > 1


def _math(make):
    """A unary math op as `make(ctx, vector)`, for f32 and f64."""

    def lower(ctx, op):
        lay = ctx.lay(op.result.type)
        (x,) = _vectors(ctx, op, lay)
        _result(ctx, op, make(ctx, x))

    return lower


def _intrinsic(base: str):
    return lambda ctx, x: vcall(ctx, base, [x])


def _exp(ctx, x):
    """fp32 as the GPUs compute it, 2^(x·log2 e); fp64 from libm (the product's rounding would
    cost |x|·2^-53 of relative error)."""
    if x.type.element == F64:
        return vcall(ctx, "llvm.exp", [x])
    log2e = splat(ctx, ir.Constant(x.type.element, LOG2E), x.type.count)
    return _exp2(ctx, ctx.b.fmul(x, log2e))


def _exp2(ctx, x):
    """fp32 written out on the vector (vector_math.py); fp64 from LLVM's intrinsic."""
    return exp2_f32(ctx, x) if x.type.element == F32 else vcall(ctx, "llvm.exp2", [x])


def _libm(name: str):
    """An fp64 function LLVM has no intrinsic for, from the host's libm, lane by lane."""

    def make(ctx, x):
        b = ctx.b
        fn = ctx.intrinsic(name, F64, [F64])
        out = undefined(x.type)
        for i in range(x.type.count):
            out = b.insert_element(out, b.call(fn, [b.extract_element(x, I32(i))]), I32(i))
        return out

    return make


def _numbers(op) -> bool:
    """Tensors of ints (not i1) or floats of any width in and out (what a bitcast moves)."""

    def number(t) -> bool:
        if not isinstance(t, TensorType):
            return False
        e = t.element_type
        if isinstance(e, builtin.IntegerType):
            return e.width.data > 1
        return isinstance(e, (builtin.Float16Type, builtin.BFloat16Type, *_FLOATS))

    return all(number(v.type) for v in (*op.operands, *op.results))


def _bitcast(ctx, op):
    lay = ctx.lay(op.result.type)
    (x,) = _vectors(ctx, op, lay)
    _result(ctx, op, ctx.b.bitcast(x, vector_type(llty(op.result.type.element_type), x.type.count)))


def _f64(op) -> bool:
    return _floats(op) and isinstance(op.result.type.element_type, builtin.Float64Type)


def _rsqrt(ctx, x):
    one = splat(ctx, ir.Constant(x.type.element, 1.0), x.type.count)
    return ctx.b.fdiv(one, vcall(ctx, "llvm.sqrt", [x]))


def _log2(ctx, x):
    """fp32 written out on the vector (vector_math.py); fp64 from LLVM's intrinsic."""
    return log2_f32(ctx, x) if x.type.element == F32 else vcall(ctx, "llvm.log2", [x])


def _log(ctx, x):
    """fp32 as log2(x)·ln 2, as the GPUs compute it; fp64 from LLVM's intrinsic."""
    if x.type.element == F32:
        return ctx.b.fmul(log2_f32(ctx, x), splat(ctx, ir.Constant(F32, LN2), x.type.count))
    return vcall(ctx, "llvm.log", [x])


def _floats(op) -> bool:
    return _all_plain(op) and isinstance(op.result.type.element_type, _FLOATS)


def _fma(ctx, op):
    lay = ctx.lay(op.result.type)
    _result(ctx, op, vcall(ctx, "llvm.fma", _vectors(ctx, op, lay)))


def _addptr(ctx, op):
    lay = ctx.lay(op.result.type)
    p, off = _vectors(ctx, op, lay)
    ety = mem_llty(op.ptr.type.element_type.pointee)
    # GEP over vectors of pointers and offsets: one <N x ptr>
    b = ctx.b
    gep = b.gep(p, [off], source_etype=ety)
    gep.type = p.type
    _result(ctx, op, gep)


# -------------------------------------------------------------------------------- memory


def _elem_bytes(ty) -> int:
    if isinstance(ty, ir.PointerType):
        return 8
    if isinstance(ty, ir.IntType):
        return max(1, ty.width // 8)
    return {F32: 4, F64: 8}.get(ty, 2)


def _run_length(op, lay) -> int:
    """Registers per consecutive-address run: the layout's contiguous registers along the
    pointers' fastest dim, bounded by AxisInfo's contiguity (1: gather/scatter)."""
    d, _ = memory.layout_vector(lay)
    if d is None:
        return 1
    try:
        info = AxisInfo.of(op.ptr)
    except Exception:  # noqa: BLE001 - no analysis for this value: assume nothing
        return 1
    run = lay.contiguous_run(d, info.contiguity[d])
    return run


def _memory_accepts(op) -> bool:
    t = op.ptr.type
    if not isinstance(t, TensorType) or not _plain_memory(t):
        return False
    from kernellab.backends.llvm.layout import layout_of_type

    lay = layout_of_type(t)
    return all(lay.reg_of_flat[lay.reg_flat[r]] == r for r in range(lay.nregs))


def _plain_memory(t) -> bool:
    e = t.element_type.pointee
    return isinstance(e, (builtin.IntegerType, tt.PointerType, *_FLOATS, builtin.Float16Type, builtin.BFloat16Type))


def _to_memory(ctx, vec, ety):
    return ctx.b.zext(vec, vector_type(I8, vec.type.count)) if ety == I1 else vec


MAX_UNROLLED_RUNS = 256
"""Runs of consecutive addresses an access makes one intrinsic call each, in straight-line
code; past this, a loop over the runs (a 1024x2 tile sorted along dim 0 is 1024 runs of two,
whose straight-line loads and stores took LLVM's x86 code generator seconds)."""


def _stack(ctx, vec):
    """A stack slot (allocated once in the prologue) holding `vec`, i1 lanes as i8."""
    if vec.type.element == I1:
        vec = ctx.b.zext(vec, vector_type(I8, vec.type.count))
    slot = ctx.pro.alloca(vec.type)
    ctx.b.store(vec, slot)
    return slot


def _run_at(ctx, slot, r0, run: int):
    """The `<run x T>` at lane r0 of a stack slot of `<n x T>`."""
    elem = slot.type.pointee.element
    return ctx.b.bitcast(ctx.b.gep(slot, [r0], source_etype=elem), vector_type(elem, run).as_pointer())


def _load(ctx, op):
    t = op.result.type
    lay = ctx.lay(t)
    n = lay.nregs
    ety = llty(t.element_type)
    mty = mem_llty(t.element_type)
    ptrs = as_vector(ctx, ctx.get(op.ptr), lay)
    ones = ir.Constant(vector_type(I1, n), [I1(1)] * n)
    mask = as_vector(ctx, ctx.get(op.mask), lay) if op.mask is not None else ones
    other = (_to_memory(ctx, as_vector(ctx, ctx.get(op.other), lay), ety) if op.other is not None
             else undefined(vector_type(mty, n)))  # fmt: skip
    align = I32(_elem_bytes(mty))
    run = _run_length(op, lay)
    b = ctx.b
    if run == 1:
        vty = vector_type(mty, n)
        fn = ctx.intrinsic(f"llvm.masked.gather.{vector_name(vty)}.v{n}p1", vty,
                           [ptrs.type, I32, mask.type, vty])  # fmt: skip
        v = b.call(fn, [ptrs, align, mask, other])
    elif n // run <= MAX_UNROLLED_RUNS:
        rty = vector_type(mty, run)
        fn = ctx.intrinsic(f"llvm.masked.load.{vector_name(rty)}.p1", rty,
                           [ptrs.type.element, I32, vector_type(I1, run), rty])  # fmt: skip
        parts = []
        for r0 in range(0, n, run):
            base = b.extract_element(ptrs, I32(r0))
            parts.append(b.call(fn, [base, align, lanes(ctx, mask, r0, run), lanes(ctx, other, r0, run)]))
        v = concat(ctx, parts)
    else:
        v = _loop_of_loads(ctx, ptrs, mask, other, run, align)
    if ety == I1:
        v = b.icmp_unsigned("!=", v, ir.Constant(v.type, [I8(0)] * n))
    _result(ctx, op, v)


def _loop_of_loads(ctx, ptrs, mask, other, run: int, align):
    """The load of many short runs as an LLVM loop over stack slots: each iteration one
    run's pointer, mask and default values in, its masked load out."""
    b = ctx.b
    n, mty = ptrs.type.count, other.type.element
    rty = vector_type(mty, run)
    fn = ctx.intrinsic(f"llvm.masked.load.{vector_name(rty)}.p1", rty,
                       [ptrs.type.element, I32, vector_type(I1, run), rty])  # fmt: skip
    ptr_slot, mask_slot, out = (_stack(ctx, v) for v in (ptrs, mask, other))

    def body(_, r0):
        base = b.load(b.gep(ptr_slot, [r0], source_etype=ptrs.type.element), typ=ptrs.type.element)
        bits = b.load(_run_at(ctx, mask_slot, r0, run), typ=vector_type(I8, run))
        bits.align = 1
        slot = _run_at(ctx, out, r0, run)
        default = b.load(slot, typ=rty)
        default.align = _elem_bytes(mty)
        on = b.icmp_unsigned("!=", bits, ir.Constant(bits.type, [I8(0)] * run))
        b.store(b.call(fn, [base, align, on, default]), slot).align = _elem_bytes(mty)
        return []

    counted_loop(ctx, [], n, run, body, name="load.runs")
    return b.load(out, typ=vector_type(mty, n), align=_elem_bytes(mty))


def _store(ctx, op):
    t = op.ptr.type
    lay = ctx.lay(t)
    n = lay.nregs
    ety = llty(tt.element_type(op.value.type))
    mty = mem_llty(tt.element_type(op.value.type))
    ptrs = as_vector(ctx, ctx.get(op.ptr), lay)
    values = _to_memory(ctx, as_vector(ctx, ctx.get(op.value), lay), ety)
    ones = ir.Constant(vector_type(I1, n), [I1(1)] * n)
    mask = as_vector(ctx, ctx.get(op.mask), lay) if op.mask is not None else ones
    align = I32(_elem_bytes(mty))
    run = _run_length(op, lay)
    b = ctx.b
    if run == 1:
        vty = vector_type(mty, n)
        fn = ctx.intrinsic(f"llvm.masked.scatter.{vector_name(vty)}.v{n}p1", ir.VoidType(),
                           [vty, ptrs.type, I32, mask.type])  # fmt: skip
        b.call(fn, [values, ptrs, align, mask])
        return
    rty = vector_type(mty, run)
    fn = ctx.intrinsic(f"llvm.masked.store.{vector_name(rty)}.p1", ir.VoidType(),
                       [rty, ptrs.type.element, I32, vector_type(I1, run)])  # fmt: skip
    if n // run <= MAX_UNROLLED_RUNS:
        for r0 in range(0, n, run):
            base = b.extract_element(ptrs, I32(r0))
            b.call(fn, [lanes(ctx, values, r0, run), base, align, lanes(ctx, mask, r0, run)])
        return
    # many short runs: an LLVM loop over stack slots, one run's masked store an iteration
    ptr_slot, mask_slot, value_slot = (_stack(ctx, v) for v in (ptrs, mask, values))

    def body(_, r0):
        base = b.load(b.gep(ptr_slot, [r0], source_etype=ptrs.type.element), typ=ptrs.type.element)
        bits = b.load(_run_at(ctx, mask_slot, r0, run), typ=vector_type(I8, run))
        bits.align = 1
        part = b.load(_run_at(ctx, value_slot, r0, run), typ=rty)
        part.align = _elem_bytes(mty)
        b.call(fn, [part, base, align, b.icmp_unsigned("!=", bits, ir.Constant(bits.type, [I8(0)] * run))])
        return []

    counted_loop(ctx, [], n, run, body, name="store.runs")


def rules(debug: bool) -> dict:
    """The CPU's vector rules over the core's `core` table (memory stays per register under
    debug=True, where every access is bounds-checked)."""
    core = elementwise.RULES
    out = {}
    for name, cls in arith.BINARY_OPS.items():
        accepts = (_all_plain if name in _BOOLEAN else _wide_ints) if name in _INT_BINARY or name in ("maxsi", "minsi", "maxui", "minui") else _floats
        out[cls] = _vector_rule(core[cls], accepts)(_binary(name))
    for name, cls in arith.CAST_OPS.items():
        if name in _CASTS:
            out[cls] = _vector_rule(core[cls], _cast_accepts(name))(_cast(name))
    out[arith.FptosiOp] = _vector_rule(core[arith.FptosiOp], lambda op: _fp_to_int_accepts(op) and isinstance(op.input.type.element_type, _FLOATS))(_fp_to_int(True))
    out[arith.FptouiOp] = _vector_rule(core[arith.FptouiOp], lambda op: _fp_to_int_accepts(op) and isinstance(op.input.type.element_type, _FLOATS))(_fp_to_int(False))
    cmp_ok = lambda op: all(takes_vectors(v.type) for v in op.operands)  # noqa: E731
    out[arith.CmpiOp] = _vector_rule(core[arith.CmpiOp], cmp_ok)(_cmp(elementwise.cmpi_fn))
    out[arith.CmpfOp] = _vector_rule(core[arith.CmpfOp], lambda op: cmp_ok(op) and isinstance(op.lhs.type.element_type, _FLOATS))(_cmp(elementwise.cmpf_fn))
    out[arith.SelectOp] = _vector_rule(core[arith.SelectOp], lambda op: isinstance(op.cond.type, TensorType) and takes_vectors(op.result.type))(_select)
    out[arith.NegfOp] = _vector_rule(core[arith.NegfOp], _floats)(_negf)
    out[arith.ConstantOp] = _vector_rule(core[arith.ConstantOp], _constant_accepts)(_constant)
    math = {xmath.ExpOp: _exp, xmath.Exp2Op: _exp2, xmath.LogOp: _log,
            xmath.Log2Op: _log2, xmath.SqrtOp: _intrinsic("llvm.sqrt"), xmath.RsqrtOp: _rsqrt,
            tt.PreciseSqrtOp: _intrinsic("llvm.sqrt"), xmath.FloorOp: _intrinsic("llvm.floor"),
            xmath.CeilOp: _intrinsic("llvm.ceil"), xmath.AbsFOp: _intrinsic("llvm.fabs"),
            xmath.TruncOp: _intrinsic("llvm.trunc"), xmath.RoundEvenOp: _intrinsic("llvm.roundeven")}  # fmt: skip
    for cls, make in math.items():
        if cls in core:
            out[cls] = _vector_rule(core[cls], _floats)(_math(make))
    out[xmath.FmaOp] = _vector_rule(core[xmath.FmaOp], _floats)(_fma)
    out[xmath.ErfOp] = _vector_rule(core[xmath.ErfOp], _f64)(_math(_libm("erf")))
    out[tt.BitcastOp] = _vector_rule(core[tt.BitcastOp], _numbers)(_bitcast)
    out[tt.AddPtrOp] = _vector_rule(core[tt.AddPtrOp], _all_plain)(_addptr)
    from kernellab.backends.llvm import shape

    out[tt.MakeRangeOp] = _vector_rule(shape.RULES[tt.MakeRangeOp], lambda op: True)(_make_range)
    out[tt.SplatOp] = _vector_rule(shape.RULES[tt.SplatOp], lambda op: takes_vectors(op.result.type))(_splat)
    if not debug:
        out[tt.LoadOp] = _vector_rule(memory.RULES[tt.LoadOp], _memory_accepts)(_load)
        out[tt.StoreOp] = _vector_rule(memory.RULES[tt.StoreOp], _memory_accepts)(_store)
    return out


__all__ = ["rules", "takes_vectors", "vector_binary", "vcall", "VECTOR_BINARY"]
