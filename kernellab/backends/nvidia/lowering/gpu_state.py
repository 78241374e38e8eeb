"""tt.globaltimer and tt.smid → the PTX special registers %globaltimer and %smid;
tt.gdc_wait / tt.gdc_launch_dependents → griddepcontrol (sm_90 and
later; earlier GPUs have no dependent launches, so nothing is emitted)."""

from __future__ import annotations

import llvmlite.ir as ir

from kernellab.backends.llvm.types import I32, I64
from kernellab.ir import tt


def _global_timer(ctx, op):
    ctx.set(op.result, ctx.call("llvm.nvvm.read.ptx.sreg.globaltimer", I64, []))


def _sm_id(ctx, op):
    ctx.set(op.result, ctx.call("llvm.nvvm.read.ptx.sreg.smid", I32, []))


def _grid_dependency(instruction: str):
    def rule(ctx, op):
        if ctx.target.arch >= 90:
            ctx.asm(ir.VoidType(), f"griddepcontrol.{instruction};", "~{memory}", [])

    return rule


RULES = {
    tt.GlobalTimerOp: _global_timer,
    tt.SmIdOp: _sm_id,
    tt.GridDependencyWaitOp: _grid_dependency("wait"),
    tt.LaunchDependentsOp: _grid_dependency("launch_dependents"),
}
