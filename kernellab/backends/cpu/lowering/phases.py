"""Barriers among the warps of a CPU program: the kernel function as a state machine of phases.

The grid loop (grid.py) runs a program's warps one after another, so a warp cannot wait at a
barrier for the others. Instead a barrier ends a phase: the kernel function takes the phase
to run as a hidden parameter, and the grid loop calls phase 0 for every warp, then phase 1
for every warp, and so on. At a barrier the lowering

1. stores each value the rest of the kernel uses and the phase computed (a TV's `carried()`
   values: a vector, or its registers) to this warp's slots in a save area past the planned
   scratch (slot offsets fixed at compile time, the warp's area at `tid * stride`, one
   stride for every barrier of the kernel),
2. returns, and starts the next phase in a new block the entry's `switch` on the phase
   jumps to (the prologue, computed from the warp id, stays in the entry),
3. loads those values back there and rebinds them, so everything after sees this phase's
   copies.

Only reductions and scans along an axis split among warps and layout conversions meet at a
barrier (pipeline.py gives warps to no other exchanging kernel), and only at two points of
their lowering (`phased`): before the op computes anything (its operands are saved too), and
between its stores to the scratch and its loads, where the op keeps no LLVM value of its own
across but those its access names (`keep`: a scan's scanned part, its slots) and gets back
reloaded.
Both must be at the kernel's top level: a barrier in a loop or a branch would need the
loop's state carried between phases.
"""

from __future__ import annotations

from dataclasses import dataclass

import llvmlite.ir as ir
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation

from kernellab.backends.cpu.host import host_machine
from kernellab.backends.cpu.lowering.vectors import VTV, as_vector
from kernellab.backends.llvm.errors import LoweringError
from kernellab.backends.llvm.types import I8, I32, TV

SLOT_ALIGN = 16
"""Save slots start on 16 bytes (the launcher's scratch is at least that aligned)."""


def phase_count_name(kernel: str) -> str:
    """The module constant holding how many phases a program runs (the grid loop's bound)."""
    return f"{kernel}.phases"


@dataclass
class _Phases:
    switch: ir.SwitchInstr
    save_base: int  # byte offset of the save area in the scratch, past the planned buffers
    # the bytes of each warp's save area, the most any barrier saves (a module constant the
    # later barriers may raise): one stride for all keeps a warp saving at the end of a phase
    # off the slots the next warps have yet to load at its start
    stride: ir.GlobalVariable
    allowed: object = None  # the op whose lowering may meet a barrier now
    keep_operands: bool = True  # whether its operands are still to be used after the barrier


def phased(rule):
    """`rule` for an op that may exchange data among warps through its scratch (a reduction, a
    scan, a layout conversion): with several warps, a barrier may end a phase before the op
    computes anything (its scratch still pending from an earlier exchange; its operands are kept
    for the next phase), and between its stores to the scratch and its loads (after which it
    reads only the scratch and the values its access keeps: what the core's
    reduce.across_warps, scan.across_warps and remap.through_smem do)."""

    def lower(ctx, op):
        if ctx.num_warps == 1 or not ctx.smem.scratch_size.get(op):  # no scratch, no exchange
            rule(ctx, op)
            return
        st = _state(ctx)
        outer = st.allowed, st.keep_operands  # an op lowered inside another's region
        st.allowed, st.keep_operands = op, True
        ctx.barriers.free(ctx.scratch_interval(op))
        st.keep_operands = False
        try:
            rule(ctx, op)
        finally:
            st.allowed, st.keep_operands = outer

    return lower


def split(ctx) -> None:
    """End the current phase at the builder's position and continue in the next one."""
    st = _state(ctx)
    op = ctx.current_op
    if st.allowed is not op or op is None:
        where = f" in {op.name}" if op is not None else ""
        raise LoweringError(
            f"a barrier among the {ctx.num_warps} warps of a CPU program{where}: only reductions, "
            "scans and layout conversions may exchange data among warps (the CPU pipeline should have "
            "kept one warp)"
        )
    body = ctx.func_op.body.block
    if op.parent_block() is not body:
        raise LoweringError(
            f"an exchange among the {ctx.num_warps} warps of a CPU program in {op.name} inside a "
            "loop or branch: warps run in phases only at the kernel's top level (the CPU pipeline "
            "should have kept one warp)"
        )
    recompute, kept = _plan(_live(body, op, st.keep_operands), ctx.smem.scratch_size)
    entry = ctx.fn.entry_basic_block
    b = ctx.b
    saves = []  # (ssa value or index in `own`, llvm value): a tensor as one vector, so its slot is one store
    for v in kept:
        x = ctx.get(v)
        if isinstance(x, TV) and not isinstance(x, VTV) and x.lay.nregs > 1:
            x = VTV(ctx, as_vector(ctx, x, x.lay), x.lay, x.elem)
            ctx.set(v, x)
        elif not isinstance(x, (TV, ir.Value)):
            raise LoweringError(f"a CPU program's warps cannot keep {type(x).__name__} values across a barrier")
        val = x.carried()[0] if isinstance(x, TV) else x
        if isinstance(val, ir.Instruction) and val.parent is not entry:
            saves.append((v, val))
    own = ctx.barriers.kept  # LLVM values of the op itself (its access's `keep`), saved as they are
    saves += [(i, val) for i, val in enumerate(own) if isinstance(val, ir.Instruction) and val.parent is not entry]
    target_data = host_machine().target_data
    offsets, size = [], 0
    for _, val in saves:
        align = _align(val, target_data)
        size = -(-size // align) * align
        offsets.append(size)
        size += val.type.get_abi_size(target_data)
    stride = max(st.stride.initializer.constant, -(-size // 64) * 64)
    st.stride.initializer = I32(stride)
    ctx.smem.total = max(ctx.smem.total, st.save_base + ctx.num_warps * stride)

    scratch, tid = ctx.hidden["scratch"], ctx.hidden["tid"]

    def slots():
        per_warp = b.load(st.stride, typ=I32)
        area = b.gep(scratch, [b.add(I32(st.save_base), b.mul(tid, per_warp))], source_etype=I8)
        return [b.gep(area, [I32(off)], source_etype=I8) for off in offsets]

    for (_, val), ptr in zip(saves, slots() if saves else []):
        b.store(val, ptr, align=_align(val, target_data))
    b.ret_void()
    phase = len(st.switch.cases) + 1
    block = ctx.fn.append_basic_block(f"phase{phase}")
    st.switch.add_case(I32(phase), block)
    b.position_at_end(block)
    ctx.mod.globals[phase_count_name(ctx.fn.name)].initializer = I32(phase + 1)

    reloaded = list(own)
    for (v, val), ptr in zip(saves, slots() if saves else []):
        new = b.load(ptr, typ=val.type, align=_align(val, target_data))
        if isinstance(v, int):
            reloaded[v] = new
            continue
        x = ctx.get(v)
        ctx.set(v, x.rebuilt([new]) if isinstance(x, TV) else new)
    ctx.barriers.kept = reloaded
    for o in body.ops:
        if o in recompute:
            ctx.lower_op(o)


def _align(val, target_data) -> int:
    """A slot's alignment: its size up to SLOT_ALIGN (sizes are powers of two or multiples of
    16: scalars, and vectors of power-of-two lanes)."""
    return min(SLOT_ALIGN, val.type.get_abi_size(target_data))


# Ops the next phase computes again rather than loads (when their operands are kernel
# arguments, computed again too, or scalars): a splat or a range is one instruction, its
# saved copy a vector store and load per warp and phase, which in a layer norm cost more than
# the warps saved.
_RECOMPUTED = {"arith.constant", "tt.splat", "tt.make_range", "tt.get_program_id", "tt.get_num_programs",
               "tt.addptr", "tt.expand_dims", "tt.broadcast"}  # fmt: skip


def _plan(live: list, scratch: dict) -> tuple[set, list]:
    """(the ops to lower again in the next phase, the values to save) for the `live` values:
    an op of _RECOMPUTED or an arith op (one instruction a vector) is lowered again when its
    operands are arguments, lowered again too, or scalars (saved: a scalar is cheap to keep),
    and it needs no `scratch` (a conversion through it would meet a barrier again)."""
    memo: dict = {}

    def again(o) -> bool:
        if o not in memo:
            cheap = o.name in _RECOMPUTED or o.name.startswith("arith.")
            memo[o] = cheap and not o.regions and not scratch.get(o)
            memo[o] = memo[o] and all(_scalar(x) or _argument(x) or again(x.owner) for x in o.operands)
        return memo[o]

    recompute: set = set()
    kept: list = []

    def need(v) -> None:
        if _argument(v) or v.owner in recompute or v in kept:
            return
        if again(v.owner):
            recompute.add(v.owner)
            for x in v.owner.operands:
                need(x)
        else:
            kept.append(v)

    for v in live:
        need(v)
    return recompute, kept


def _argument(v) -> bool:
    return not isinstance(v.owner, Operation)


def _scalar(v) -> bool:
    return not isinstance(v.type, TensorType)


def _live(body, op, keep_operands: bool) -> list:
    """Results of the top-level ops before `op` that `op` (when `keep_operands`) or a later op
    (or one nested in it) uses, in definition order."""
    ops = list(body.ops)
    i = ops.index(op)
    before = [r for o in ops[:i] for r in o.results]
    defined = set(before)
    used = set()
    for later in ops[i if keep_operands else i + 1:]:
        for nested in later.walk():
            used.update(x for x in nested.operands if x in defined)
    return [r for r in before if r in used]


def _state(ctx) -> _Phases:
    """This lowering's phases, made at the first use: the entry block's branch to the body
    becomes a switch on the phase parameter."""
    st = getattr(ctx, "cpu_phases", None)
    if st is None:
        entry = ctx.fn.entry_basic_block
        branch = entry.terminator
        entry.instructions.remove(branch)
        entry.terminator = None
        switch = ir.IRBuilder(entry).switch(ctx.hidden["phase"], branch.operands[0])
        stride = ir.GlobalVariable(ctx.mod, I32, f"{ctx.fn.name}.save_stride")
        stride.linkage, stride.global_constant, stride.initializer = "internal", True, I32(0)
        st = _Phases(switch, save_base=-(-ctx.smem.total // 64) * 64, stride=stride)
        ctx.cpu_phases = st
    return st


__all__ = ["phased", "split", "phase_count_name"]
