"""tt.reduce on the CPU in registers: the tensor as one vector is halved along the reduced
axis, one register bit at a time (shufflevector the two halves, combine them as vectors), so a
reduction of n elements is log2(n) vector steps. Taken when the combine region is one binary
op (sum, max, min, ...: what tl.sum/tl.max/tl.min make); anything else (argmax's two-operand
regions, user combine functions) goes through the core's in-thread loop.

When the axis is split among warps (pipeline.py), each warp's partials go through the core's
exchange in the scratch (reduce.across_warps), whose barrier ends a phase (phases.py).
"""

from __future__ import annotations

from xdsl.dialects.builtin import IntegerType, TensorType

from kernellab.backends.cpu.lowering.vector_rules import VECTOR_BINARY, takes_vectors, vector_binary
from kernellab.backends.cpu.lowering.vectors import VTV, as_vector, permute
from kernellab.backends.llvm import reduce as core_reduce
from kernellab.backends.llvm.axis import axis_mask, combiner
from kernellab.backends.llvm.layout import coords_of, flat_of, layout_of_type
from kernellab.backends.llvm.types import I32
from kernellab.ir import arith, tt

_NAMES = {cls: name for name, cls in arith.BINARY_OPS.items() if name in VECTOR_BINARY}


def single_binary(op, in_order: bool = False) -> str | None:
    """The arith op name when the combine region of `op` (a reduction or a scan) is
    `yield op(arg0, arg1)` (or `op(arg1, arg0)`, unless `in_order`: a scan combines the
    earlier element first)."""
    ops = list(op.combineOp.block.ops)
    if len(ops) != 2 or type(ops[0]) not in _NAMES:
        return None
    binary, term = ops
    args = list(op.combineOp.block.args)
    same = list(binary.operands) == args if in_order else set(binary.operands) == set(args)
    if not same or len(set(args)) != 2 or list(term.operands) != [binary.results[0]]:
        return None
    return _NAMES[type(binary)]


def _accepts(op) -> bool:
    """One operand, a one-op combine region, and a layout whose registers are distinct
    elements (each register basis one bit of the flat index; no lanes on a CPU, and each
    warp basis one bit too, on the axis or off it)."""
    if len(op.srcs) != 1 or single_binary(op) is None:
        return False
    t = op.srcs[0].type
    if not takes_vectors(t) or (isinstance(t.element_type, IntegerType) and t.element_type.width.data == 1):
        return False
    lay = layout_of_type(t)
    return not lay.lane and all(basis and basis & (basis - 1) == 0 for basis in (*lay.reg, *lay.warp))


def _across_warps(lay, axis: int) -> bool:
    am = axis_mask(lay, axis)
    return any(basis & am for basis in lay.warp)


def _halve(ctx, op, lay, am):
    """The operand's registers combined along the axis: (vector, the register each lane
    stands for), one lane per group of registers equal off the axis."""
    name = single_binary(op)
    vec = as_vector(ctx, ctx.get(op.srcs[0]), lay)
    current = list(range(lay.nregs))  # the register each lane holds
    for bit in reversed([i for i, basis in enumerate(lay.reg) if basis & am]):
        low = [j for j, r in enumerate(current) if not r >> bit & 1]
        position = {r: j for j, r in enumerate(current)}
        high = [position[current[j] | 1 << bit] for j in low]
        lo, hi = permute(ctx, vec, low), permute(ctx, vec, high)
        vec = vector_binary(ctx, name, lo, hi)
        current = [current[j] for j in low]
    return vec, current


def _reduce(ctx, op):
    lay = ctx.lay(op.srcs[0].type)
    axis = op.axis.value.data
    am = axis_mask(lay, axis)
    vec, current = _halve(ctx, op, lay, am)
    b = ctx.b
    res = op.result[0]
    if _across_warps(lay, axis):  # this warp's partial of each output it holds, to the core's exchange
        acc = {lay.reg_flat[r] & ~am: [b.extract_element(vec, I32(j))] for j, r in enumerate(current)}
        combine = combiner(ctx, op.combineOp, 1)
        core_reduce.across_warps(ctx, op, [ctx.get(op.srcs[0])], acc, combine)
        return
    if not isinstance(res.type, TensorType):
        ctx.set(res, b.extract_element(vec, I32(0)))
        return
    # the result stays one vector: each result register picks the lane of its group
    lane_of = {lay.reg_flat[r] & ~am: j for j, r in enumerate(current)}
    res_lay = ctx.lay(res.type)
    picks = []
    for r in range(res_lay.nregs):
        co = coords_of(res_lay.reg_flat[r], res_lay.shape)
        picks.append(lane_of[flat_of(co[:axis] + (0,) + co[axis:], lay.shape)])
    ctx.set(res, VTV(ctx, permute(ctx, vec, picks), res_lay, res.type.element_type))


def rules() -> dict:
    core = core_reduce.RULES[tt.ReduceOp]

    def lower(ctx, op):
        (_reduce if _accepts(op) else core)(ctx, op)

    return {tt.ReduceOp: lower}


__all__ = ["rules", "single_binary"]
