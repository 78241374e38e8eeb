"""MMA v3 (Hopper's wgmma) for accelerate_matmul: which dots qualify and how they are rewritten.

A dot qualifies on sm_90a when its operands are fp16 or bf16 into fp32, fp8 e4m3/e5m2 into fp32
or int8 into int32 (8-bit ones loaded K-major: A row-major, B column-major), or fp32 with
input_precision "tf32" into fp32 ("tf32x3" stays on mma.sync), it is 2-D, the kernel has a
multiple of 4 warps, and the tile fills whole wgmma instructions: each warp group (4 consecutive warps)
computes 64 rows, so M is a multiple of 16 x the warps along M, and the instruction's N (the
tile's N over the warps along N, at most 256) is a multiple of 8; K is a multiple of the
instruction's K (32 bytes: 16 for 16-bit operands, 32 for 8-bit ones, 8 for tf32) and each operand's contiguous dim spans at
least 32 bytes (the narrowest swizzle). warpsPerCTA puts warps along M first (as many as M holds, in fours), the rest along N.

The rewrite stages the operands into shared memory as they come from their loads
(`ttg.local_alloc` into a #ttg.nvmma_shared layout, cut into blocks of the widest swizzle its
contiguous dim fills, 128, 64 or 32 bytes: a 16-bit operand keeps its load's contiguous dim,
since wgmma transposes those itself; a 32- or 8-bit one is K-major, which it reads only, and a
tf32 tile loaded MN-major is transposed on its way in, by the pipeliner's 4-byte copies
rather than through registers: 16-byte loads and stores would take half the memory
instructions but hold the next tile in registers across the loop, 64 per thread for a 64x256
B next to 128 accumulators; an 8-bit one cannot be copied in 4-byte pieces, so it stays on
mma.sync) and replaces
the dot by `ttng.warp_group_dot` on the buffers with an accumulator in
`#ttg.nvidia_mma<{versionMajor = 3, ..., instrShape = [16, N, 16]}>`. The tensor cores then
read the buffers through descriptors. A 16-bit operand A that the kernel computes rather than
loads (attention's probabilities P, cast from the first dot's accumulator) stays in registers,
as Triton keeps it: converted to `#ttg.dot_op<{opIdx = 0, parent = #mma, kWidth = 2}>`, which
holds each thread's accumulator elements where they already are, so P never goes through
shared memory and no barrier waits for it.
"""

from __future__ import annotations

from xdsl.dialects import scf
from xdsl.dialects.builtin import (
    BFloat16Type,
    Float8E4M3FNType,
    Float8E5M2Type,
    Float16Type,
    Float32Type,
    IntegerType,
)
from xdsl.ir import Block, Operation, SSAValue

from kernellab.ir import tt, ttg, ttng
from kernellab.passes.ttgir.encodings import relayout, transposing_blocked

MAX_INSTR_N = 256
HALF = (Float16Type, BFloat16Type)
FP8 = (Float8E4M3FNType, Float8E5M2Type)
SWIZZLES = (128, 64, 32)


def why_not(op: tt.DotOp, num_warps: int) -> str:
    """Why `op` has no wgmma form ("" when it has one)."""
    a_t, b_t, d_t = op.a.type, op.b.type, op.d.type
    a_elem, b_elem, d_elem = a_t.element_type, b_t.element_type, d_t.element_type
    half = isinstance(a_elem, HALF) and type(a_elem) is type(b_elem)
    fp8 = isinstance(a_elem, FP8) and isinstance(b_elem, FP8)
    tf32 = isinstance(a_elem, Float32Type) and isinstance(b_elem, Float32Type)
    int8 = _is_int(a_elem, 8) and _is_int(b_elem, 8)
    if not (half or fp8 or tf32 or int8):
        return f"wgmma here takes fp16, bf16, fp8, tf32 or int8 operands, not {a_elem} and {b_elem}"
    if tf32 and op.input_precision.data != "tf32":
        return f"fp32 with input_precision='{op.input_precision.data}' (wgmma here does 'tf32' only)"
    if int8 and not _is_int(d_elem, 32):
        return f"int8 wgmma accumulates in int32, not {d_elem}"
    if not int8 and not isinstance(d_elem, Float32Type):
        return f"wgmma here accumulates in fp32, not {d_elem}"
    if a_elem.bitwidth == 8 and not _k_major(op):
        return "8-bit wgmma reads both operands K-major (A row-major, B column-major)"
    if len(d_t.get_shape()) != 2:
        return "batched (3-D) dots have no wgmma form here"
    if num_warps % 4:
        return f"wgmma needs warp groups of 4 warps; the kernel has {num_warps}"
    m, n = d_t.get_shape()
    k = a_t.get_shape()[-1]
    wm, wn = warps_per_tile(m, n, num_warps)
    instr_k = instruction_k(a_elem)
    if m % (16 * wm) or n % (8 * wn) or k % instr_k:
        return f"the {m}x{n}x{k} tile does not fill m64nNk{instr_k} instructions with {num_warps} warps"
    for idx, value in enumerate((op.a, op.b)):
        if _swizzle(_unconverted(value), idx) is None:
            return "an operand's contiguous dim in shared memory spans less than 32 bytes"
    return ""


def _is_int(elem, width: int) -> bool:
    return isinstance(elem, IntegerType) and elem.width.data == width


def _k_major(op: tt.DotOp) -> bool:
    """Both operands as loaded keep K contiguous (A row-major, B column-major)."""
    return _contiguous_dim(_unconverted(op.a)) == 1 and _contiguous_dim(_unconverted(op.b)) == 0


def warps_per_tile(m: int, n: int, num_warps: int) -> tuple[int, int]:
    """Warps along M (a multiple of 4, as many as M's 16-row slices allow) and along N."""
    wm = 4
    while wm < num_warps and m >= 16 * wm * 2:
        wm *= 2
    return wm, num_warps // wm


def instruction_k(elem) -> int:
    """K of one wgmma: 32 bytes of the operands' element type."""
    return 256 // elem.bitwidth


def instr_n(n: int, wn: int) -> int:
    return min(MAX_INSTR_N, n // wn)


def to_warp_group_dot(op: tt.DotOp, num_warps: int) -> tuple[list[Operation], ttg.NvidiaMmaEncodingAttr]:
    """The ops that stage `op`'s operands (the caller inserts them), A's first and B's last,
    and the accumulator's layout. A is a local_alloc, or a conversion to its register layout
    when `a_in_registers`; B is always a local_alloc."""
    m, n = op.d.type.get_shape()
    wm, wn = warps_per_tile(m, n, num_warps)
    k = instruction_k(op.a.type.element_type)
    mma = ttg.NvidiaMmaEncodingAttr(3, 0, [wm, wn], [16, instr_n(n, wn), k])
    a, b = _unconverted(op.a), _unconverted(op.b)
    if a_in_registers(op):
        layout = ttg.DotOperandEncodingAttr(0, mma, 32 // a.type.element_type.bitwidth)
        staged_a = ttg.ConvertLayoutOp(a, ttg.with_encoding(a.type, layout))
    else:
        staged_a = ttg.LocalAllocOp(_nvmma_memdesc(a, 0), _transposing_load(a, 0, num_warps))
    return [staged_a, ttg.LocalAllocOp(_nvmma_memdesc(b, 1), _transposing_load(b, 1, num_warps))], mma


def a_in_registers(op: tt.DotOp) -> bool:
    """A 16-bit A computed from an earlier dot's result (attention's P from QKᵀ): the MMA
    accumulator layout already holds it where wgmma's register operand wants it. Anything
    else (a loaded tile, or math on one) is written to shared memory once and read there by
    the tensor cores, which costs less than a round trip into the register operand."""
    a = _unconverted(op.a)
    return isinstance(a.type.element_type, HALF) and _computed_from_dot(a)


def _computed_from_dot(value: SSAValue, limit: int = 256) -> bool:
    """Whether the ops producing `value` in its block reach a dot's result. A loop-carried
    value counts by what the loop yields for it (a P the previous iteration computed, in a
    loop that issues the next Q·Kᵀ before this P·V)."""
    owner = value.owner
    block = owner.parent_block() if isinstance(owner, Operation) else owner
    seen, work = set(), [value]
    while work and len(seen) < limit:
        value = work.pop()
        owner = value.owner
        if isinstance(owner, Block) and owner is block and isinstance(owner.parent_op(), scf.ForOp):
            if value.index > 0 and owner not in seen:  # an iter_arg (not the induction variable)
                seen.add(owner)
                work.append(owner.last_op.operands[value.index - 1])
            continue
        if not isinstance(owner, Operation) or owner in seen or owner.parent_block() is not block:
            continue
        if isinstance(owner, (tt.DotOp, ttng.WarpGroupDotOp, ttng.WarpGroupDotWaitOp)):
            return True
        if isinstance(owner, tt.LoadOp):
            continue
        seen.add(owner)
        work += owner.operands
    return False


def warp_group_dot(staged: list[Operation], acc: SSAValue, op: tt.DotOp) -> ttng.WarpGroupDotOp:
    imprecise = op.max_num_imprecise_acc.value.data if isinstance(op.a.type.element_type, FP8) else 0
    dot = ttng.WarpGroupDotOp(staged[0].results[0], staged[1].results[0], acc, op.input_precision.data,
                              max_num_imprecise_acc=imprecise)  # fmt: skip
    dot.location = op.location
    return dot


def _nvmma_memdesc(value: SSAValue, op_idx: int) -> ttg.MemDescType:
    t = value.type
    transposed = _staged_contiguous_dim(value, op_idx) == 0
    bits = t.element_type.bitwidth
    encoding = ttg.NVMMASharedEncodingAttr(_swizzle(value, op_idx), int(transposed), bits)
    return ttg.MemDescType(t.get_shape(), t.element_type, encoding)


def _staged_contiguous_dim(value: SSAValue, op_idx: int) -> int:
    """The dim the operand's buffer keeps contiguous: the load's for 16-bit operands (wgmma
    transposes those itself), else K (A's dim 1, B's dim 0): wgmma reads 32- and 8-bit
    operands K-major only, so an MN-major tf32 tile is transposed on its way into shared
    memory (the store, or the pipeliner's 4-byte copies, scatter it)."""
    if value.type.element_type.bitwidth == 16:
        return _contiguous_dim(value)
    return 1 - op_idx


def _transposing_load(value: SSAValue, op_idx: int, num_warps: int) -> SSAValue:
    """The operand as its buffer should receive it. A tile loaded MN-major into a K-major
    buffer (tf32) is written one element per thread and instruction (4-byte copies); its load
    is put in `transposing_blocked`, which weighs the copies' global lines against their bank
    conflicts."""
    owner = value.owner
    k_dim = 1 - op_idx
    if _staged_contiguous_dim(value, op_idx) == _contiguous_dim(value) or not isinstance(owner, tt.LoadOp):
        return value
    relayout(owner, transposing_blocked(value.type.get_shape(), k_dim, num_warps))
    return owner.result


def _contiguous_dim(value: SSAValue) -> int:
    """The dim the value's layout keeps contiguous per thread (its order[0])."""
    encoding = ttg.encoding_of(value.type)
    order = getattr(encoding, "order", (1, 0))
    return int(order[0])


def _swizzle(value: SSAValue, op_idx: int) -> int | None:
    """The widest swizzle (bytes) the operand's contiguous dim in shared memory fills, if any."""
    t = value.type
    span = t.get_shape()[_staged_contiguous_dim(value, op_idx)] * t.element_type.bitwidth // 8
    return next((s for s in SWIZZLES if span >= s), None)


def _unconverted(value: SSAValue) -> SSAValue:
    """The value a convert_layout chain starts from (the operand as its load made it)."""
    while isinstance(value.owner, ttg.ConvertLayoutOp):
        value = value.owner.src
    return value
