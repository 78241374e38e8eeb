"""tt.scan on the CPU in registers, instead of the core's chain of one scalar op per element
(which ran at the latency of the op, and took LLVM 12 s to compile for a 64x64 tile):
- where the axis holds the top register bits (a tile scanned along dim 0 by one warp), the
  warp's vector is n slices of whole rows, each combined into the next: n - 1 ops on vectors;
- else a warp's part of the tensor as one vector is scanned in log2(n) vector steps along the
  axis (Hillis-Steele: lane i combines the lane 2^k before it in scan order, a shufflevector,
  the op on vectors and a select of the lanes that have one), where the warp's registers are
  few enough for tensor-wide shuffles (MAX_LANES: LLVM's x86 code generator is superlinear in
  their width).
Taken when the combine region is one binary op in order (tl.cumsum, tl.cumprod, a max scan)
and every axis bit a warp holds in registers is below those the warps split; anything else
goes through the core's rule.

When the axis is split among warps (pipeline.py), each warp's totals go through the core's
exchange in the scratch (scan.across_warps, whose barrier ends a phase: phases.py; the
scanned vector crosses it as one saved value), and each warp combines the totals of the warps
before it into its vector.
"""

from __future__ import annotations

from xdsl.dialects.builtin import IntegerType

from kernellab.backends.cpu.lowering.reductions import single_binary
from kernellab.backends.cpu.lowering.vector_rules import takes_vectors, vector_binary
from kernellab.backends.cpu.lowering.vectors import VTV, as_vector, concat, constant_vector, lanes, permute, undefined
from kernellab.backends.llvm import scan as core_scan
from kernellab.backends.llvm.axis import combiner
from kernellab.backends.llvm.errors import LoweringError
from kernellab.backends.llvm.layout import layout_of_type
from kernellab.backends.llvm.types import I1, I32
from kernellab.ir import tt

MAX_LANES = 256
"""The widest warp part scanned in vector steps (a one-warp 1024-element row stays on the
core's per-element chain rather than 1024-lane shuffles)."""
MIN_SLICE = 8
"""The fewest lanes a slice of rows must have to be combined slice by slice."""


def _slices(lay, plan) -> int:
    """The lanes of each slice when the axis holds the top register bits in order, else 0."""
    top = lay.nregs.bit_length() - 1
    width = lay.nregs >> len(plan.low)
    if plan.low != list(range(top - len(plan.low), top)) or width < MIN_SLICE:
        return 0
    return width


def _plan(op) -> core_scan.Plan | None:
    """The core's plan of the axis bits when the vector scan takes `op`, else None."""
    if len(op.srcs) != 1 or single_binary(op, in_order=True) is None:
        return None
    t = op.srcs[0].type
    if not takes_vectors(t) or (isinstance(t.element_type, IntegerType) and t.element_type.width.data == 1):
        return None
    lay = layout_of_type(t)
    if lay.lane:
        return None
    try:
        plan = core_scan.Plan(lay, op.axis.value.data)
    except LoweringError:
        return None  # the core's rule says what is wrong
    if plan.high or (lay.nregs > MAX_LANES and not _slices(lay, plan)):
        return None
    return plan


def _by_slices(ctx, name, vec, n: int, width: int, reverse: bool):
    """Slice i of `width` lanes holds position i along the axis: each combined into the next."""
    parts = [lanes(ctx, vec, i * width, width) for i in range(n)]
    order = list(range(n))[::-1] if reverse else list(range(n))
    for earlier, i in zip(order, order[1:]):
        parts[i] = vector_binary(ctx, name, parts[earlier], parts[i])
    return concat(ctx, parts)


def _by_steps(ctx, name, vec, lay, plan, reverse: bool):
    """Hillis-Steele: step k combines into each lane the lane 2^k before it in scan order."""
    n = 1 << len(plan.low)
    for k in range(len(plan.low)):
        step = -(1 << k) if not reverse else 1 << k
        picks, has = [], []
        for r in range(lay.nregs):
            earlier = _position(plan, r) + step
            has.append(0 <= earlier < n)
            picks.append(_register(plan, r & ~_axis_bits(plan), earlier) if has[-1] else r)
        combined = vector_binary(ctx, name, permute(ctx, vec, picks), vec)
        vec = ctx.b.select(constant_vector([I1(int(h)) for h in has]), combined, vec)
    return vec


def _axis_bits(plan) -> int:
    return sum(1 << j for j in plan.low)


def _position(plan, r: int) -> int:
    """Register r's index along the axis among the warp's registers."""
    return sum(1 << k for k, j in enumerate(plan.low) if r >> j & 1)


def _register(plan, other: int, pos: int) -> int:
    """The register at index `pos` along the axis whose other bits are `other`."""
    return other | sum(1 << j for k, j in enumerate(plan.low) if pos >> k & 1)


def _scan(ctx, op, plan):
    b = ctx.b
    name = single_binary(op, in_order=True)
    reverse = bool(op.reverse.value.data)
    src = ctx.get(op.srcs[0])
    lay, elem = src.lay, src.elem
    vec = as_vector(ctx, src, lay)
    n = 1 << len(plan.low)
    width = _slices(lay, plan)
    if width:
        vec = _by_slices(ctx, name, vec, n, width, reverse)
    else:
        vec = _by_steps(ctx, name, vec, lay, plan, reverse)
    if plan.warps:  # the warps before this one in scan order: their totals combined into every lane
        off_axis = ~_axis_bits(plan)
        last = n - 1 if not reverse else 0
        others = sorted({r & off_axis for r in range(lay.nregs)})
        totals = {(o, 0): [b.extract_element(vec, I32(_register(plan, o, last)))] for o in others}
        (vec,), has, mine, _ = core_scan.across_warps(ctx, op, [elem], totals, combiner(ctx, op.combineOp, 1),
                                                      keep=[vec])  # fmt: skip
        carry = undefined(vec.type)
        for r in range(lay.nregs):
            carry = b.insert_element(carry, mine[(r & off_axis, 0)][0], I32(r))
        vec = b.select(has, vector_binary(ctx, name, carry, vec), vec)
    ctx.set(op.result[0], VTV(ctx, vec, lay, elem))


def rules() -> dict:
    core = core_scan.RULES[tt.ScanOp]

    def lower(ctx, op):
        plan = _plan(op)
        if plan is None:
            core(ctx, op)
        else:
            _scan(ctx, op, plan)

    return {tt.ScanOp: lower}


__all__ = ["rules", "MAX_LANES", "MIN_SLICE"]
