"""The AMD target of the LLVM lowering core (compile-only: gfx942 MI300, gfx950 MI350):
amdgcn-amd-amdhsa, `amdgpu_kernel` functions, wave64 (64 lanes exchange registers with
`ds_bpermute`), LDS (addrspace 3) for shared memory, `s_barrier`, and global memory and
atomics in plain LLVM (backends/llvm/portable.py), which the AMDGPU back end turns into
global_load_dwordx4 / global_store_dwordx4 / global_atomic_*.
"""

from __future__ import annotations

from dataclasses import dataclass

import llvmlite.ir as ir

from kernellab.backends.llvm import portable
from kernellab.backends.llvm.context import opaque
from kernellab.backends.llvm.types import F32, I8, I16, I32, I64, VOID

WAVE = 64


@dataclass(frozen=True)
class AmdTarget(portable.PortableArithmetic):
    arch: int  # 942 for gfx942
    data_layout: str
    name: str = "AMD"
    triple: str = "amdgcn-amd-amdhsa"
    threads_per_warp: int = WAVE
    hidden_params: tuple = ()
    matrix_stores: bool = False

    def define_kernel(self, ctx, fn, threads: int) -> None:
        # (llvmlite writes no string attributes, so no "amdgpu-flat-work-group-size": LLVM
        # assumes up to 1024 threads, which holds for every num_warps AmdOptions allows)
        fn.calling_convention = "amdgpu_kernel"
        fn.attributes.add("nounwind")

    def thread_id(self, ctx):
        return ctx.pro.call(ctx.intrinsic("llvm.amdgcn.workitem.id.x", I32, []), [], name="tid")

    def program_id(self, ctx, axis: int):
        return ctx.once(("wgid", axis), lambda: ctx.call(f"llvm.amdgcn.workgroup.id.{'xyz'[axis]}", I32, [], builder=ctx.pro))

    def num_programs(self, ctx, axis: int):
        """Grid size / workgroup size along `axis`, from the HSA dispatch packet (workgroup
        sizes are u16 at byte 4 + 2·axis, grid sizes u32 at byte 12 + 4·axis)."""

        def read():
            b = ctx.pro
            packet = ctx.call("llvm.amdgcn.dispatch.ptr", ir.PointerType(addrspace=4), [], builder=b)
            wg = b.zext(b.load(b.gep(packet, [I64(4 + 2 * axis)], source_etype=I8), typ=I16), I32)
            size = b.load(b.gep(packet, [I64(12 + 4 * axis)], source_etype=I8), typ=I32)
            return b.udiv(size, wg)

        return ctx.once(("nprog", axis), read)

    def shared_memory(self, ctx, nbytes: int):
        """A static LDS array of the program's shared bytes."""
        g = ir.GlobalVariable(ctx.mod, ir.ArrayType(I8, nbytes), "global_smem", addrspace=3)
        g.linkage = "internal"
        g.initializer = ir.Constant(ir.ArrayType(I8, nbytes), ir.Undefined)  # LDS has no initial value
        g.align = 16
        return opaque(g)

    def barrier(self, ctx) -> None:
        ctx.b.fence("release", "workgroup")
        ctx.call("llvm.amdgcn.s.barrier", VOID, [])
        ctx.b.fence("acquire", "workgroup")

    def shuffle_i32(self, ctx, value, lane, kind: str):
        """`ds_bpermute` reads lane `src` (byte address 4·src) of the wave; "up"/"down" keep
        this lane's own value where the source falls off the wave, as shfl.sync does."""
        b = ctx.b
        me = ctx.lane
        if kind == "idx":
            src = lane
        elif kind == "bfly":
            src = b.xor(me, lane)
        else:
            moved = b.sub(me, lane) if kind == "up" else b.add(me, lane)
            inside = b.icmp_signed(">=", moved, I32(0)) if kind == "up" else b.icmp_signed("<", moved, I32(WAVE))
            src = b.select(inside, moved, me)
        return ctx.call("llvm.amdgcn.ds.bpermute", I32, [b.shl(src, I32(2)), value])

    def load(self, ctx, op, addr, pred, others, elem, vec: int) -> list:
        return portable.load(ctx, op, addr, pred, others, elem, vec)

    def store(self, ctx, op, addr, pred, values: list, elem) -> None:
        portable.store(ctx, op, addr, pred, values, elem)

    def atomic(self, ctx, op, kind: str, addr, val, cmp, pred, elem):
        return portable.atomic(ctx, op, kind, addr, val, cmp, pred, elem)

    def exp2_approx_f32(self, ctx, x, flush_subnormal: bool = False):
        return ctx.call("llvm.amdgcn.exp2.f32", F32, [x])  # v_exp_f32

    def sqrt_approx_f32(self, ctx, x):
        return ctx.call("llvm.amdgcn.sqrt.f32", F32, [x])  # v_sqrt_f32

    def rsqrt_approx_f32(self, ctx, x):
        return ctx.call("llvm.amdgcn.rsq.f32", F32, [x])  # v_rsq_f32

    def fdiv_f32(self, ctx, x, y):
        return ctx.b.fmul(x, ctx.call("llvm.amdgcn.rcp.f32", F32, [y]))  # v_rcp_f32, as div.full


__all__ = ["AmdTarget", "WAVE"]
