"""The CPU target of the LLVM lowering core: the host's triple, warps of one thread that hold
their part of each tensor in registers (no lanes, so no shuffles), memory and
atomics in plain LLVM (backends/llvm/portable.py: `llvm.masked.load`/`store`, LLVM atomics),
and LLVM's own intrinsics where a GPU has an approximate instruction.

The kernel function takes its program ids, the grid size, a scratch buffer (the program's
"shared memory"), a launch status record, its warp and its phase as hidden parameters after
its own arguments (a program has several warps only when they exchange data at most in
reductions and scans, which a barrier splits into phases run for every warp in turn: phases.py);
`grid.define_grid_loop` wraps it in the function the launcher calls, a loop over a range of
program ids. Accesses under `debug=True` are bounds-checked (`checks.py`).
"""

from __future__ import annotations

from dataclasses import dataclass

import llvmlite.ir as ir

from kernellab.backends.cpu.lowering import checks, grid, phases
from kernellab.backends.llvm import portable
from kernellab.backends.llvm.types import F32, I32, PTR, SPTR

HIDDEN = (
    ("pid_x", I32), ("pid_y", I32), ("pid_z", I32),
    ("nprog_x", I32), ("nprog_y", I32), ("nprog_z", I32),
    ("scratch", SPTR), ("status", PTR), ("tid", I32), ("phase", I32),
)  # fmt: skip


@dataclass(frozen=True)
class CpuTarget(portable.PortableArithmetic):
    triple: str
    data_layout: str
    name: str = "CPU"
    threads_per_warp: int = 1
    arch: int = 0
    hidden_params: tuple = HIDDEN
    matrix_stores: bool = False

    # -- the kernel function and program ids ---------------------------------------------------

    def define_kernel(self, ctx, fn, threads: int) -> None:
        """The kernel is inlined into its grid loop, the one function the launcher calls."""
        fn.linkage = "internal"
        fn.attributes.add("nounwind")
        fn.attributes.add("alwaysinline")
        grid.define_grid_loop(ctx, fn, len(HIDDEN), threads)

    def thread_id(self, ctx):
        return ctx.hidden["tid"]  # the grid loop runs a program's warps one after another

    def program_id(self, ctx, axis: int):
        return ctx.hidden["pid_" + "xyz"[axis]]

    def num_programs(self, ctx, axis: int):
        return ctx.hidden["nprog_" + "xyz"[axis]]

    def shared_memory(self, ctx, nbytes: int):
        return ctx.hidden["scratch"]  # the launcher gives each worker thread its own buffer

    # -- exchange between threads: one thread, nothing to exchange ---------------------------

    def barrier(self, ctx) -> None:
        if ctx.num_warps > 1:  # warps run in turn: the barrier ends a phase
            phases.split(ctx)

    def shuffle_i32(self, ctx, value, lane, kind: str):
        return value

    # -- global memory: plain LLVM, bounds-checked under debug=True ----------------------------

    def load(self, ctx, op, addr, pred, others, elem, vec: int) -> list:
        return portable.load(ctx, op, addr, pred, others, elem, vec, guard=checks.guard)

    def store(self, ctx, op, addr, pred, values: list, elem) -> None:
        portable.store(ctx, op, addr, pred, values, elem, guard=checks.guard)

    def atomic(self, ctx, op, kind: str, addr, val, cmp, pred, elem):
        return portable.atomic(ctx, op, kind, addr, val, cmp, pred, elem, guard=checks.guard)

    # -- arithmetic: LLVM's intrinsics --------------------------------------------------------

    def exp2_approx_f32(self, ctx, x, flush_subnormal: bool = False):
        return ctx.call("llvm.exp2.f32", F32, [x])

    def sqrt_approx_f32(self, ctx, x):
        return ctx.call("llvm.sqrt.f32", F32, [x])

    def rsqrt_approx_f32(self, ctx, x):
        return ctx.b.fdiv(ir.Constant(F32, 1.0), self.sqrt_approx_f32(ctx, x))

    def fdiv_f32(self, ctx, x, y):
        return ctx.b.fdiv(x, y)


__all__ = ["CpuTarget", "HIDDEN"]
