"""accelerate_matmul: put every tt.dot that a tensor-core instruction can compute on mma.sync.

convert_to_ttgpuir gives a dot a blocked accumulator (the FMA dot). When the element types
have an mma.sync form (table below) and the tile holds at least one instruction tile
(M >= 16, N >= 8, K >= the instruction's K), the dot's accumulator becomes
`#ttg.nvidia_mma<{versionMajor = 2, ..., instrShape = [16, 8]}>` and its operands
`#ttg.dot_op<{opIdx, parent = #mma, kWidth = 32 / element bits}>` (the PTX fragments hold
32-bit registers of kWidth consecutive K elements). Conversions into those layouts are
inserted before the dot and one back to the old layout after it; remove_layout_conversions
then moves the surrounding math into the MMA layout and reduce_data_duplication stages the
operands through shared memory. The rewrite is the pattern `mma-v2-dot` of the rewrite engine,
swept once over the dots in order (a dot chained to an already converted one takes its warps);
a dot that stays on FMA is named, with the reason, in the pass record's summary, and so, on
sm_90a, is a dot left on mma.sync for want of a wgmma form (tf32x3, 8-bit operands not
K-major, 2 warps, ...).

A batched (3-D) dot is a batch of 2-D ones: instrShape [1, 16, 8], and, as in Triton, all warps
along the batch (warpsPerCTA [num_warps, 1, 1]), each warp computing whole batch elements.

warpsPerCTA of a 2-D dot follows Triton's choice for MMA v2: a dot that feeds (or is fed by)
another dot in its region takes that dot's warps, or all warps along its longer dim; otherwise
warps are doubled along M or N, whichever still has more instruction tiles per warp (M on
ties, since an A fragment is twice a B fragment), which balances the operand registers each
warp holds.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects.builtin import (
    BFloat16Type,
    Float8E4M3FNType,
    Float8E5M2Type,
    Float16Type,
    Float32Type,
    FileLineColLoc,
    IntegerType,
    ModuleOp,
)
from xdsl.ir import BlockArgument, Operation, OpResult, SSAValue
from xdsl.pattern_rewriter import PatternRewriter
from xdsl.rewriter import InsertPoint

from kernellab.ir import tt, ttg
from kernellab.layouts.mma import mma_v2_instr_shape
from kernellab.passes.manager import PassOutcome
from kernellab.passes.rewrite import Rewrites, apply_to_each, pattern
from kernellab.passes.ttgir import mma_v3
from kernellab.passes.ttgir.encodings import convert_before

NAME = "accelerate_matmul"

INSTR_M, INSTR_N = 16, 8


@dataclass(frozen=True)
class MmaForm:
    """One mma.sync instruction family: its K and whether it needs sm_89 (fp8)."""

    k: int
    min_arch: int = 80


def mma_form(a_elem, b_elem, acc_elem, input_precision: str) -> MmaForm | str:
    """The mma.sync form of a dot with these element types, or why it has none."""
    fp8 = (Float8E4M3FNType, Float8E5M2Type)
    if isinstance(a_elem, fp8) and isinstance(b_elem, fp8):  # e4m3 and e5m2 mix in one mma
        if isinstance(acc_elem, Float32Type):
            return MmaForm(32, min_arch=89)
        return f"no mma.sync form for {a_elem} into {acc_elem}"
    if type(a_elem) is not type(b_elem):
        return f"operands {a_elem} and {b_elem} differ"
    if isinstance(a_elem, (Float16Type, BFloat16Type)):
        if isinstance(acc_elem, Float32Type) or (
            isinstance(a_elem, Float16Type) and isinstance(acc_elem, Float16Type)
        ):
            return MmaForm(16)
        return f"no mma.sync form for {a_elem} into {acc_elem}"
    if isinstance(a_elem, Float32Type):
        if input_precision in ("tf32", "tf32x3") and isinstance(acc_elem, Float32Type):
            return MmaForm(8)
        return f"fp32 with input_precision='{input_precision}'"
    if isinstance(a_elem, IntegerType) and a_elem.width.data == 8:
        if isinstance(acc_elem, IntegerType) and acc_elem.width.data == 32:
            return MmaForm(32)
        return f"no mma.sync form for i8 into {acc_elem}"
    return f"no mma.sync form for {a_elem}"


def k_width(elem) -> int:
    """Consecutive K elements per 32-bit fragment register."""
    return max(1, 32 // elem.bitwidth)


def run(module: ModuleOp, wgmma: bool = False) -> PassOutcome:
    """`wgmma`: the target is sm_90a, whose dots may use MMA v3 (mma_v3.py) before MMA v2."""
    rewrites = Rewrites()
    arch = _arch(ttg.target(module))
    on_v2 = []
    if wgmma:  # why a dot with a tensor-core form gets mma.sync rather than wgmma
        num_warps = ttg.num_warps(module)
        on_v2 = [f"tt.dot{_line(op)} on mma.sync: {mma_v3.why_not(op, num_warps)}"
                 for op in _fma_dots(module) if not _why_not(op, arch) and mma_v3.why_not(op, num_warps)]  # fmt: skip
    apply_to_each(_fma_dots(module), [MMA_V3_DOT, MMA_V2_DOT] if wgmma else [MMA_V2_DOT], rewrites)
    stays = [f"tt.dot{_line(op)} stays on FMA: {_why_not(op, arch)}" for op in _fma_dots(module)]
    return PassOutcome(rewrites.changed, "; ".join([rewrites.summary, *on_v2, *stays]))


def _fma_dots(module: ModuleOp) -> list[tt.DotOp]:
    return [op for op in module.walk() if isinstance(op, tt.DotOp) and _on_fma(op)]


def _on_fma(op: tt.DotOp) -> bool:
    """convert_to_ttgpuir's blocked accumulator: the FMA dot."""
    return isinstance(ttg.encoding_of(op.d.type), ttg.BlockedEncodingAttr)


def _arch(target: str) -> int:
    digits = "".join(ch for ch in target if ch.isdigit())
    return int(digits) if digits else 90


def _line(op: Operation) -> str:
    loc = op.location
    return f" at line {loc.line.data}" if isinstance(loc, FileLineColLoc) else ""


def _why_not(op: tt.DotOp, arch: int) -> str:
    a_t, b_t, d_t = op.a.type, op.b.type, op.d.type
    form = mma_form(a_t.element_type, b_t.element_type, d_t.element_type, op.input_precision.data)
    if isinstance(form, str):
        return form
    if arch < form.min_arch:
        return f"{a_t.element_type} mma.sync needs sm_{form.min_arch}+, the target is sm_{arch}"
    m, n = d_t.get_shape()[-2:]
    k = a_t.get_shape()[-1]
    if m < INSTR_M or n < INSTR_N or k < form.k:
        return f"the {m}x{n}x{k} tile is smaller than one m{INSTR_M}n{INSTR_N}k{form.k} instruction"
    return ""


def warps_per_tile(op: tt.DotOp, num_warps: int) -> list[int]:
    """warpsPerCTA of the MMA accumulator (see the module docstring)."""
    shape = op.d.type.get_shape()
    if len(shape) == 3:
        return [num_warps, 1, 1]
    m, n = shape
    chained = _chained_dots(op)
    for other in chained:
        encoding = ttg.encoding_of(other.d.type)
        if isinstance(encoding, ttg.NvidiaMmaEncodingAttr):
            return list(encoding.warps_per_cta)
    if chained:
        return [num_warps, 1] if m >= n else [1, num_warps]
    warps = [1, 1]
    reps = [max(1, m // INSTR_M), max(1, n // INSTR_N)]
    while warps[0] * warps[1] < num_warps:
        if reps[0] >= reps[1]:
            warps[0] *= 2
            reps[0] = max(1, reps[0] // 2)
        else:
            warps[1] *= 2
            reps[1] //= 2
    return warps


def _chained_dots(op: tt.DotOp) -> list[tt.DotOp]:
    """Other dots of op's region reached through its operands' producers or result's users
    (conversions are looked through: they are what this pass rewrites)."""
    region = op.parent_region()
    seen: set[Operation] = {op}
    frontier = [op]
    found = []
    while frontier:
        current = frontier.pop()
        neighbours = [v.owner for v in current.operands if isinstance(v.owner, Operation)]
        neighbours += [use.operation for r in current.results for use in r.uses]
        for other in neighbours:
            if other in seen or other.parent_region() is not region:
                continue
            seen.add(other)
            if isinstance(other, tt.DotOp):
                found.append(other)
            frontier.append(other)
    return found


def _to_mma(op: tt.DotOp, rewriter: PatternRewriter) -> bool:
    """The FMA dot `op` on MMA v2 layouts, if it has a tensor-core form on the target."""
    module = op.get_toplevel_object()
    if not _on_fma(op) or _why_not(op, _arch(ttg.target(module))):
        return False
    warps = warps_per_tile(op, ttg.num_warps(module))
    mma = ttg.NvidiaMmaEncodingAttr(2, 0, warps, list(mma_v2_instr_shape(len(warps))))
    old_converts = [v.owner for v in op.operands]
    operands = []
    for idx, value in enumerate((op.a, op.b)):
        layout = ttg.DotOperandEncodingAttr(idx, mma, k_width(value.type.element_type))
        operands.append(convert_before(_unconverted(value), layout, op))
    acc = convert_before(_unconverted(op.c), mma, op)
    dot = tt.DotOp(*operands, acc, op.input_precision.data, op.max_num_imprecise_acc.value.data)
    dot.location = op.location
    rewriter.replace(op, [dot, ttg.ConvertLayoutOp(dot.d, op.d.type)])
    _erase_unused_conversions(old_converts, rewriter)
    return True


def _unconverted(value: SSAValue) -> SSAValue:
    """The value a convert_layout chain starts from (the dot takes it in its own layout)."""
    while isinstance(value.owner, ttg.ConvertLayoutOp):
        value = value.owner.src
    return value


def _to_mma_v3(op: tt.DotOp, rewriter: PatternRewriter) -> bool:
    """The FMA dot `op` as a warp-group dot on MMA v3, if it has a wgmma form (mma_v3.py)."""
    module = op.get_toplevel_object()
    num_warps = ttg.num_warps(module)
    if not _on_fma(op) or _why_not(op, _arch(ttg.target(module))) or mma_v3.why_not(op, num_warps):
        return False
    old_converts = [v.owner for v in op.operands]
    staged, mma = mma_v3.to_warp_group_dot(op, num_warps)
    for staging in staged:
        rewriter.insert(staging, _staging_point(staging.operands[0], op))
    acc = convert_before(_unconverted(op.c), mma, op)
    dot = mma_v3.warp_group_dot(staged, acc, op)
    rewriter.replace(op, [dot, ttg.ConvertLayoutOp(dot.d, op.d.type)])
    _erase_unused_conversions(old_converts, rewriter)
    return True


def _staging_point(value: SSAValue, dot: Operation) -> InsertPoint:
    """Where an operand is staged for the dot (written to shared memory, or converted to its
    register layout): before the dot, or right after its definition when that lies outside
    the dot's block (a loop-invariant operand, such as attention's Q tile, is staged once
    instead of every iteration)."""
    if isinstance(value, OpResult) and value.op.parent_block() is not dot.parent_block():
        return InsertPoint.after(value.op)
    if isinstance(value, BlockArgument) and value.block is not dot.parent_block():
        return InsertPoint.at_start(value.block)
    return InsertPoint.before(dot)


def _erase_unused_conversions(owners, rewriter: PatternRewriter) -> None:
    """The old operands' conversions, now unused."""
    for owner in owners:
        while isinstance(owner, ttg.ConvertLayoutOp) and not owner.result.uses:
            source = owner.src.owner
            rewriter.erase(owner)
            owner = source


MMA_V2_DOT = pattern("mma-v2-dot", _to_mma, [tt.DotOp.name])
MMA_V3_DOT = pattern("mma-v3-dot", _to_mma_v3, [tt.DotOp.name])
