"""The CPU target of the LLVM lowering core: the host's triple, one thread per program that
holds whole tensors in registers (no lanes, so no shuffles and no barriers), plain LLVM vector
loads and stores (`llvm.masked.load`/`store` under a mask), LLVM atomics, and LLVM's own
intrinsics where a GPU has an approximate instruction.

The kernel function takes its program ids, the grid size, a scratch buffer (the program's
"shared memory") and a launch status record as hidden parameters after its own arguments;
`grid.define_grid_loop` wraps it in the function the launcher calls, a loop over a range of
program ids. Accesses under `debug=True` are bounds-checked (`checks.py`).
"""

from __future__ import annotations

from dataclasses import dataclass

import llvmlite.ir as ir

from kernellab.backends.cpu.lowering import checks, grid
from kernellab.backends.llvm.types import F16, BF16, F32, F64, I1, I8, I16, I32, I64, PTR, SPTR, bitwidth, llty, mem_llty

HIDDEN = (
    ("pid_x", I32), ("pid_y", I32), ("pid_z", I32),
    ("nprog_x", I32), ("nprog_y", I32), ("nprog_z", I32),
    ("scratch", SPTR), ("status", PTR),
)  # fmt: skip

_RMW = {"add": "add", "fadd": "fadd", "max": "max", "min": "min", "umax": "umax", "umin": "umin",
        "and": "and", "or": "or", "xor": "xor", "exch": "xchg"}  # fmt: skip


@dataclass(frozen=True)
class CpuTarget:
    triple: str
    data_layout: str
    name: str = "CPU"
    threads_per_warp: int = 1
    arch: int = 0
    hidden_params: tuple = HIDDEN

    # -- the kernel function and program ids ---------------------------------------------------

    def define_kernel(self, ctx, fn, threads: int) -> None:
        """The kernel is inlined into its grid loop, the one function the launcher calls."""
        fn.linkage = "internal"
        fn.attributes.add("nounwind")
        fn.attributes.add("alwaysinline")
        grid.define_grid_loop(ctx, fn, len(HIDDEN))

    def thread_id(self, ctx):
        return I32(0)

    def program_id(self, ctx, axis: int):
        return ctx.hidden["pid_" + "xyz"[axis]]

    def num_programs(self, ctx, axis: int):
        return ctx.hidden["nprog_" + "xyz"[axis]]

    def shared_memory(self, ctx, nbytes: int):
        return ctx.hidden["scratch"]  # the launcher gives each worker thread its own buffer

    # -- exchange between threads: one thread, nothing to exchange ---------------------------

    def barrier(self, ctx) -> None:
        pass

    def shuffle_i32(self, ctx, value, lane, kind: str):
        return value

    # -- global memory ------------------------------------------------------------------------

    def load(self, ctx, op, addr, pred, others, elem, vec: int) -> list:
        b = ctx.b
        mty, ety = mem_llty(elem), llty(elem)
        vty = ir.VectorType(mty, vec)
        align = vec * _bytes(mty)
        pred = checks.guard(ctx, op, addr, vec * _bytes(mty), pred)
        if pred is None:
            v = b.load(addr, typ=vty)
            v.align = align
        else:
            passthru = ir.Constant(vty, None)
            if others is not None:
                for i, o in enumerate(others):
                    passthru = b.insert_element(passthru, _to_mem(b, o, mty), I32(i))
            mask = _splat(b, pred, vec)
            fn = ctx.intrinsic(f"llvm.masked.load.{_vname(vty)}.p{addr.type.addrspace}", vty,
                               [addr.type, I32, mask.type, vty])  # fmt: skip
            v = b.call(fn, [addr, I32(align), mask, passthru])
        return [_from_mem(b, b.extract_element(v, I32(i)), ety) for i in range(vec)]

    def store(self, ctx, op, addr, pred, values: list, elem) -> None:
        b = ctx.b
        mty = mem_llty(elem)
        vec = len(values)
        vty = ir.VectorType(mty, vec)
        align = vec * _bytes(mty)
        pred = checks.guard(ctx, op, addr, vec * _bytes(mty), pred)
        v = ir.Constant(vty, None)
        for i, x in enumerate(values):
            v = b.insert_element(v, _to_mem(b, x, mty), I32(i))
        if pred is None:
            b.store(v, addr).align = align
            return
        mask = _splat(b, pred, vec)
        fn = ctx.intrinsic(f"llvm.masked.store.{_vname(vty)}.p{addr.type.addrspace}", ir.VoidType(),
                           [vty, addr.type, I32, mask.type])  # fmt: skip
        b.call(fn, [v, addr, I32(align), mask])

    def atomic(self, ctx, op, kind: str, addr, val, cmp, pred, elem):
        """One LLVM atomic (seq_cst, as the language's default `acq_rel` at least promises)
        under `pred`; a masked-off element returns an undefined old value, as on the GPU."""
        b = ctx.b
        ety = llty(elem)
        pred = checks.guard(ctx, op, addr, max(1, bitwidth(elem) // 8), pred)
        if kind not in _RMW and kind != "cas":
            from kernellab.backends.llvm.errors import LoweringError

            raise LoweringError(f"atomic {kind} is not supported by the CPU lowering")
        with_pred = pred is not None
        if with_pred:
            before = b.block
            then = b.append_basic_block("atomic")
            after = b.append_basic_block("atomic.end")
            b.cbranch(pred, then, after)
            b.position_at_end(then)
        if kind == "cas":
            pair = b.cmpxchg(addr, cmp, val, "seq_cst", "seq_cst")
            old = b.extract_value(pair, 0)
        elif kind in ("max", "min", "umax", "umin") and isinstance(ety, (ir.FloatType, ir.DoubleType, ir.HalfType)):
            old = b.atomic_rmw("f" + kind, addr, val, "seq_cst")
        else:
            old = b.atomic_rmw(_RMW[kind], addr, val, "seq_cst")
        if not with_pred:
            return old
        done = b.block
        b.branch(after)
        b.position_at_end(after)
        phi = b.phi(ety)
        phi.add_incoming(old, done)
        phi.add_incoming(ir.Constant(ety, None), before)
        return phi

    # -- arithmetic: LLVM's intrinsics --------------------------------------------------------

    def exp2_approx_f32(self, ctx, x):
        return ctx.call("llvm.exp2.f32", F32, [x])

    def sqrt_approx_f32(self, ctx, x):
        return ctx.call("llvm.sqrt.f32", F32, [x])

    def rsqrt_approx_f32(self, ctx, x):
        return ctx.b.fdiv(ir.Constant(F32, 1.0), self.sqrt_approx_f32(ctx, x))

    def fdiv_f32(self, ctx, x, y):
        return ctx.b.fdiv(x, y)

    def mulhi(self, ctx, x, y):
        b = ctx.b
        wide = ir.IntType(2 * x.type.width)
        p = b.mul(b.zext(x, wide), b.zext(y, wide))
        return b.trunc(b.lshr(p, ir.Constant(wide, x.type.width)), x.type)

    def f64_to_f32_toward_zero(self, ctx, x):
        return _toward_zero(ctx, x, F32)

    def convert_float(self, ctx, x, src, dst, rounding: str):
        from kernellab.backends.llvm.float_casts import fp_ext, fp_trunc
        from kernellab.backends.llvm.errors import LoweringError
        from kernellab.backends.llvm.types import is_fp8

        if is_fp8(src) or is_fp8(dst):
            raise LoweringError(f"fp8 conversions are not supported by the {self.name} lowering; "
                                "run fp8 kernels on the interpreter or an NVIDIA target")  # fmt: skip
        b = ctx.b
        sty, dty = llty(src), llty(dst)
        widths = {F16: 16, BF16: 16, F32: 32, F64: 64}
        if sty == dty:
            return x
        if {sty, dty} == {F16, BF16}:
            mid = b.fpext(x, F32)
            return _toward_zero(ctx, mid, dty) if rounding == "rtz" else b.fptrunc(mid, dty)
        if widths[dty] > widths[sty]:
            return fp_ext(ctx, x, dty)
        if rounding == "rtz":
            return _toward_zero(ctx, x, dty)
        return fp_trunc(ctx, x, dty)

    def tf32_round(self, ctx, x):
        """Round to the nearest tf32 (10 mantissa bits), ties away from zero: add half of the
        dropped place and clear the 13 low bits (finite values; inf and NaN pass through)."""
        b = ctx.b
        bits = b.bitcast(x, I32)
        rounded = b.and_(b.add(bits, I32(0x1000)), I32(~0x1FFF))
        finite = b.icmp_unsigned("<", b.and_(bits, I32(0x7F800000)), I32(0x7F800000))
        return b.bitcast(b.select(finite, rounded, bits), F32)


def _toward_zero(ctx, x, dty):
    """x narrowed to float type `dty` rounded toward zero: the nearest value, stepped one ulp
    toward zero when it lies farther from zero than x (overflow to inf becomes the largest
    finite value the same way); NaN stays NaN."""
    b = ctx.b
    r = b.fptrunc(x, dty)
    back = b.fpext(r, x.type)
    fabs = f"llvm.fabs.{ {F32: 'f32', F64: 'f64'}[x.type] }".replace(" ", "")
    farther = b.fcmp_ordered(">", ctx.call(fabs, x.type, [back]), ctx.call(fabs, x.type, [x]))
    ity = ir.IntType({F16: 16, BF16: 16, F32: 32}[dty])
    stepped = b.bitcast(b.sub(b.bitcast(r, ity), ir.Constant(ity, 1)), dty)
    return b.select(farther, stepped, r)


def _bytes(ty) -> int:
    if isinstance(ty, ir.PointerType):
        return 8
    if isinstance(ty, ir.IntType):
        return max(1, ty.width // 8)
    return {F16: 2, BF16: 2, F32: 4, F64: 8}[ty]


def _vname(vty: ir.VectorType) -> str:
    e = vty.element
    if isinstance(e, ir.PointerType):
        name = f"p{e.addrspace}"
    elif isinstance(e, ir.IntType):
        name = f"i{e.width}"
    else:
        name = {F16: "f16", BF16: "bf16", F32: "f32", F64: "f64"}[e]
    return f"v{vty.count}{name}"


def _splat(b, pred, vec: int):
    mask = ir.Constant(ir.VectorType(I1, vec), None)
    for i in range(vec):
        mask = b.insert_element(mask, pred, I32(i))
    return mask


def _to_mem(b, v, mty):
    return b.zext(v, I8) if v.type == I1 and mty == I8 else v


def _from_mem(b, v, ety):
    return b.icmp_unsigned("!=", v, I8(0)) if ety == I1 else v


__all__ = ["CpuTarget", "HIDDEN"]
