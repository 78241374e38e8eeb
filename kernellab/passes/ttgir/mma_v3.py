"""MMA v3 (Hopper's wgmma) for accelerate_matmul: which dots qualify and how they are rewritten.

A dot qualifies on sm_90 when its operands are fp16 or bf16 into fp32, it is 2-D, the kernel has
a multiple of 4 warps, and the tile fills whole wgmma instructions: each warp group (4
consecutive warps) computes 64 rows, so M is a multiple of 16 x the warps along M, and the
instruction's N (the tile's N over the warps along N, at most 256) is a multiple of 8; K is a
multiple of 16 and each operand's contiguous dim spans at least 32 bytes (the narrowest
swizzle). warpsPerCTA puts warps along M first (as many as M holds, in fours), the rest along N.

The rewrite stages both operands into shared memory as they come from their loads
(`ttg.local_alloc` into a #ttg.nvmma_shared layout: the contiguous dim of the load stays
contiguous, cut into blocks of the widest swizzle it fills, 128, 64 or 32 bytes) and replaces
the dot by `ttng.warp_group_dot` on the two buffers with an accumulator in
`#ttg.nvidia_mma<{versionMajor = 3, ..., instrShape = [16, N, 16]}>`. The tensor cores then
read the buffers through descriptors; no operand passes through registers.
"""

from __future__ import annotations

from xdsl.dialects.builtin import BFloat16Type, Float16Type, Float32Type
from xdsl.ir import SSAValue

from kernellab.ir import tt, ttg, ttng

INSTR_K = 16
MAX_INSTR_N = 256
SWIZZLES = (128, 64, 32)


def why_not(op: tt.DotOp, num_warps: int) -> str:
    """Why `op` has no wgmma form ("" when it has one)."""
    a_t, b_t, d_t = op.a.type, op.b.type, op.d.type
    a_elem, b_elem = a_t.element_type, b_t.element_type
    if not isinstance(a_elem, (Float16Type, BFloat16Type)) or type(a_elem) is not type(b_elem):
        return f"wgmma here takes fp16 or bf16 operands, not {a_elem} and {b_elem}"
    if not isinstance(d_t.element_type, Float32Type):
        return f"wgmma here accumulates in fp32, not {d_t.element_type}"
    if len(d_t.get_shape()) != 2:
        return "batched (3-D) dots have no wgmma form here"
    if num_warps % 4:
        return f"wgmma needs warp groups of 4 warps; the kernel has {num_warps}"
    m, n = d_t.get_shape()
    k = a_t.get_shape()[-1]
    wm, wn = warps_per_tile(m, n, num_warps)
    if m % (16 * wm) or n % (8 * wn) or k % INSTR_K:
        return f"the {m}x{n}x{k} tile does not fill m64nNk16 instructions with {num_warps} warps"
    for value in (op.a, op.b):
        if _swizzle(_unconverted(value)) is None:
            return "an operand's contiguous dim spans less than 32 bytes"
    return ""


def warps_per_tile(m: int, n: int, num_warps: int) -> tuple[int, int]:
    """Warps along M (a multiple of 4, as many as M's 16-row slices allow) and along N."""
    wm = 4
    while wm < num_warps and m >= 16 * wm * 2:
        wm *= 2
    return wm, num_warps // wm


def instr_n(n: int, wn: int) -> int:
    return min(MAX_INSTR_N, n // wn)


def to_warp_group_dot(op: tt.DotOp, num_warps: int) -> list:
    """The ops replacing `op`: the operands' local_allocs, the warp-group dot (and the caller
    converts its result back to the old layout)."""
    m, n = op.d.type.get_shape()
    wm, wn = warps_per_tile(m, n, num_warps)
    mma = ttg.NvidiaMmaEncodingAttr(3, 0, [wm, wn], [16, instr_n(n, wn), INSTR_K])
    allocs = [ttg.LocalAllocOp(_nvmma_memdesc(_unconverted(v)), _unconverted(v)) for v in (op.a, op.b)]
    return allocs, mma


def warp_group_dot(allocs, acc: SSAValue, op: tt.DotOp) -> ttng.WarpGroupDotOp:
    dot = ttng.WarpGroupDotOp(allocs[0].result, allocs[1].result, acc, op.input_precision.data)
    dot.location = op.location
    return dot


def _nvmma_memdesc(value: SSAValue) -> ttg.MemDescType:
    t = value.type
    transposed = _contiguous_dim(value) == 0
    bits = t.element_type.bitwidth
    encoding = ttg.NVMMASharedEncodingAttr(_swizzle(value), int(transposed), bits)
    return ttg.MemDescType(t.get_shape(), t.element_type, encoding)


def _contiguous_dim(value: SSAValue) -> int:
    """The dim the value's layout keeps contiguous per thread (its order[0])."""
    encoding = ttg.encoding_of(value.type)
    order = getattr(encoding, "order", (1, 0))
    return int(order[0])


def _swizzle(value: SSAValue) -> int | None:
    """The widest swizzle (bytes) the operand's contiguous dim fills, if any."""
    t = value.type
    span = t.get_shape()[_contiguous_dim(value)] * t.element_type.bitwidth // 8
    return next((s for s in SWIZZLES if span >= s), None)


def _unconverted(value: SSAValue) -> SSAValue:
    """The value a convert_layout chain starts from (the operand as its load made it)."""
    while isinstance(value.owner, ttg.ConvertLayoutOp):
        value = value.owner.src
    return value
