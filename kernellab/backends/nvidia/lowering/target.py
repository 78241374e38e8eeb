"""The NVIDIA target of the LLVM lowering core: nvptx64, `ptx_kernel` functions with an
`nvvm.annotations` thread count, PTX special registers, `shfl.sync`, `bar.sync`, and the
instructions where PTX has a form of its own (ex2/sqrt/rsqrt.approx, div.full, mulhi,
cvt.rz/cvt.rna, fp8 cvt on sm_90; global memory and atomics as inline PTX)."""

from __future__ import annotations

from dataclasses import dataclass

import llvmlite.ir as ir

from kernellab.backends.llvm.context import opaque
from kernellab.backends.llvm.smem import BASE_ALIGN
from kernellab.backends.llvm.types import F32, I8, I32, I64, VOID
from kernellab.backends.nvidia.lowering import fp8, ptx_memory


@dataclass(frozen=True)
class NvidiaTarget:
    arch: int  # 80 for sm_80, 90 for sm_90
    name: str = "NVIDIA"
    triple: str = "nvptx64-nvidia-cuda"
    # 32-bit shared (3), constant (4) and local (5) pointers: NVPTX's layout under
    # nvptx-short-ptr, which ptx.target_machine sets
    data_layout: str = "e-p3:32:32-p4:32:32-p5:32:32-p6:32:32-p7:32:32-i64:64-i128:128-v16:16-v32:32-n16:32:64"
    threads_per_warp: int = 32
    hidden_params: tuple = ()

    def define_kernel(self, ctx, fn, threads: int) -> None:
        fn.calling_convention = "ptx_kernel"
        fn.attributes.add("nounwind")
        ctx.mod.add_named_metadata("nvvm.annotations", ctx.mod.add_metadata([fn, "maxntidx", I32(threads)]))
        maxnreg = getattr(ctx.options, "maxnreg", None)
        if maxnreg:  # `.maxnreg` in the PTX, as Triton: ptxas' -maxrregcount leaves wgmma kernels be
            ctx.mod.add_named_metadata("nvvm.annotations", ctx.mod.add_metadata([fn, "maxnreg", I32(int(maxnreg))]))
        by_value = [I32(i + 1) for i, a in enumerate(fn.args) if "byval" in a.attributes]
        if by_value:  # read in place (`cvta.param`), never copied to local memory: TMA needs that
            ctx.mod.add_named_metadata(
                "nvvm.annotations", ctx.mod.add_metadata([fn, "grid_constant", ctx.mod.add_metadata(by_value)])
            )

    def shared_memory(self, ctx, nbytes: int):
        """The dynamic shared array (`extern __shared__`), sized at launch."""
        g = ir.GlobalVariable(ctx.mod, ir.ArrayType(I8, 0), "global_smem", addrspace=3)
        g.linkage = "external"
        g.align = BASE_ALIGN
        return opaque(g)

    def thread_id(self, ctx):
        return ctx.pro.call(ctx.intrinsic("llvm.nvvm.read.ptx.sreg.tid.x", I32, []), [], name="tid")

    def _special_register(self, ctx, name: str):
        return ctx.once(("sreg", name), lambda: ctx.call(f"llvm.nvvm.read.ptx.sreg.{name}", I32, [], builder=ctx.pro))

    def program_id(self, ctx, axis: int):
        return self._special_register(ctx, "ctaid." + "xyz"[axis])

    def num_programs(self, ctx, axis: int):
        return self._special_register(ctx, "nctaid." + "xyz"[axis])

    def barrier(self, ctx) -> None:
        ctx.call("llvm.nvvm.barrier0", VOID, [])

    @property
    def matrix_stores(self) -> bool:
        return self.arch >= 90  # stmatrix is sm_90's

    def store_matrices(self, ctx, offset, words: list) -> None:
        # a 32-bit shared address (the array's own plus the offset), so that ptxas folds the
        # constant parts of the offsets into the instructions
        base = ctx.once(("smem", "u32"), lambda: ctx.pro.ptrtoint(ctx.smem_base, I32))
        text = "stmatrix.sync.aligned.m8n8.x4.shared.b16 [$0], {$1, $2, $3, $4};"
        ctx.asm(VOID, text, "r,r,r,r,r", [ctx.b.add(base, offset), *words], side_effect=True)

    def shuffle_i32(self, ctx, value, lane, kind: str):
        clamp = I32(0) if kind == "up" else I32(31)
        return ctx.call(f"llvm.nvvm.shfl.sync.{kind}.i32", I32, [I32(-1), value, lane, clamp])

    def load(self, ctx, op, addr, pred, others, elem, vec: int) -> list:
        return ptx_memory.load(ctx, op, addr, pred, others, elem, vec)

    def store(self, ctx, op, addr, pred, values: list, elem) -> None:
        ptx_memory.store(ctx, op, addr, pred, values, elem)

    def atomic(self, ctx, op, kind: str, addr, val, cmp, pred, elem):
        return ptx_memory.atomic(ctx, op, kind, addr, val, cmp, pred, elem)

    def exp2_approx_f32(self, ctx, x, flush_subnormal: bool = False):
        # ex2.approx.f32 without .ftz is three instructions more: scale, MUFU.EX2, unscale
        return ctx.call("llvm.nvvm.ex2.approx.ftz.f" if flush_subnormal else "llvm.nvvm.ex2.approx.f", F32, [x])

    def sqrt_approx_f32(self, ctx, x):
        return ctx.call("llvm.nvvm.sqrt.approx.f", F32, [x])

    def rsqrt_approx_f32(self, ctx, x):
        return ctx.call("llvm.nvvm.rsqrt.approx.f", F32, [x])

    def fdiv_f32(self, ctx, x, y):
        return ctx.call("llvm.nvvm.div.full", F32, [x, y])

    def mulhi(self, ctx, x, y):
        if x.type == I32:
            return ctx.call("llvm.nvvm.mulhi.ui", I32, [x, y])
        return ctx.call("llvm.nvvm.mulhi.ull", I64, [x, y])

    def f64_to_f32_toward_zero(self, ctx, x):
        return ctx.asm(F32, "cvt.rz.f32.f64 $0, $1;", "=f,d", [x], side_effect=False)

    def convert_float(self, ctx, x, src, dst, rounding: str):
        return fp8.convert_float(ctx, x, src, dst, rounding)

    def tf32_round(self, ctx, x):
        """`cvt.rna.tf32.f32`: the result register holds the tf32 bits with the low 13 zero,
        i.e. the rounded fp32 value."""
        bits = ctx.asm(I32, "cvt.rna.tf32.f32 $0, $1;", "=r,f", [x], side_effect=False)
        return ctx.b.bitcast(bits, F32)
