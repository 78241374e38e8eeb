"""ttng.warp_group_dot on Hopper's tensor cores: wgmma.mma_async with B (and usually A) read from
shared memory through matrix descriptors (sm_90a).

Each warp group (4 consecutive warps) computes 64 rows of the tile per instruction
`wgmma.mma_async.sync.aligned.m64nNkK.f32.{f16,bf16,e4m3,e5m2,tf32}` or `.s32.s8.s8` (K: 32
bytes of operand, 16, 32 or 8 elements; tf32 takes the fp32 bits and ignores the low 13 of the
mantissa, int8 accumulates exactly in s32): the accumulator's MMA v3 layout gives
every warp 16 rows, and instruction register i of a thread holds row 8*((i >> 1) & 1) and
column (i & 1) + 8*(i >> 2) of the thread's part (the layout's register bases say which
accumulator register that is). Each K step issues one instruction per 64-row repeat and per
N repeat; the steps run between `wgmma.fence` and one `commit_group`, then `wait_group 0`, or,
for an asynchronous dot, nothing: a `ttng.warp_group_dot_wait` later waits (wait_group N with
the accumulator's registers passed through it, so nothing reads them earlier).

fp8 with `maxNumImpreciseAcc = N <= K` (tl.dot's max_num_imprecise_acc) runs each N of K into
a fresh accumulator (zeros in, `wait_group 0`) and adds it into the fp32 one: synchronous, but
rounded like fp32 every N products.

A register operand A (#ttg.dot_op with the MMA v3 parent) is passed as four .b32 registers per
instruction, each two consecutive K elements: per warp the fragment of mma.sync's m16n8k16 A,
a_i at row 8*(i & 1) and columns 8*(i >> 1) + {0, 1} of the thread's part of the 16x16 slice
(the layout's register bases say which registers those are).

Descriptors (PTX ISA, "Matrix Descriptor Format"): start address, leading and stride byte
offsets and the swizzle mode of the operand's #ttg.nvmma_shared buffer. The buffer is cut along
its contiguous dim into panels of the swizzle width S, each panel holding every line (row of the
other dim) S bytes apart; a sub-tile starts at panel * lines * S + line * S + (offset in the
panel), unswizzled: the hardware swizzles address bits 4-6 with 7-9 itself, which is why NVMMA
buffers are aligned to 8 lines of S bytes. An operand whose contiguous dim is K is K-major
(stride byte offset: 8 lines; leading byte offset unused, 16); one whose contiguous dim is M
or N is MN-major (transposed in the instruction; leading byte offset: the panel stride).

Ordering: threads write the buffers with ordinary or cp.async stores, which the tensor cores
(the async proxy) see only after `fence.proxy.async.shared::cta` in the writing threads and a
barrier: TTGIR's `ttng.fence_async_shared` after ordinary writes (passes/ttgir/fence_insertion.py),
the cp.async wait's own fence (async_copy.py); the barrier tracker adds the barrier here.
"""

from __future__ import annotations

import llvmlite.ir as ir
from xdsl.dialects.builtin import (
    BFloat16Type,
    Float8E4M3FNType,
    Float8E5M2Type,
    Float16Type,
    Float32Type,
    IntegerType,
)

from kernellab.backends.llvm.layout import _log2
from kernellab.backends.llvm.shared_buffers import base_offset, buffer_interval
from kernellab.backends.llvm.types import F32, I32, I64, TV
from kernellab.backends.nvidia.lowering.mma import fragment_packer
from kernellab.ir import ttg, ttng

SWIZZLE_MODE = {128: 1, 64: 2, 32: 3}
_KINDS = {Float16Type: "f16", BFloat16Type: "bf16", Float8E4M3FNType: "e4m3", Float8E5M2Type: "e5m2",
          Float32Type: "tf32", IntegerType: "s8"}  # fmt: skip
FENCE_ASYNC_PROXY = "fence.proxy.async.shared::cta;"


def _warp_group_dot(ctx, op: ttng.WarpGroupDotOp) -> None:
    b = ctx.b
    mma = ttg.encoding_of(op.d.type)
    wm, wn = mma.warps_per_cta
    n_instr, k_instr = mma.instr_shape[1], mma.instr_shape[2]
    m, n = op.d.type.get_shape()
    k = op.a.type.get_shape()[1]
    lay = ctx.lay(op.d.type)
    regs = list(ctx.regs(op.c, lay))

    a_in_registers = not isinstance(op.a.type, ttg.MemDescType)
    if not a_in_registers:
        ctx.smem_access(buffer_interval(ctx, op.a), write=False)
    ctx.smem_access(buffer_interval(ctx, op.b), write=False)

    warp = _uniform_warp(ctx)
    warp_m = b.and_(warp, I32(wm - 1))  # warps are numbered along M first (MMA v3)
    group_row = b.shl(b.lshr(warp_m, I32(2)), I32(6))  # 64 rows per warp group
    warp_n = b.and_(b.lshr(warp, I32(_log2(wm))), I32(wn - 1))
    warp_col = b.mul(warp_n, I32(n_instr))
    a_operand = _RegisterA(ctx, op.a) if a_in_registers else _Descriptor(ctx, op.a, k_dim=1)
    b_desc = _Descriptor(ctx, op.b, k_dim=0)
    kinds = [_KINDS[type(v.type.element_type)] for v in (op.a, op.b)]
    text = _instruction_text(n_instr, k_instr, kinds, a_operand.transposed, b_desc.transposed, a_in_registers)
    count = n_instr // 2
    acc_type, acc_constraint = _accumulator(op)
    a_constraints = ["r"] * 4 if a_in_registers else ["l"]
    constraints = ",".join([acc_constraint] * count + a_constraints + ["l"] + [str(i) for i in range(count)])
    result_type = ir.LiteralStructType([acc_type] * count)

    promote = _promotion_k(op, k, k_instr)
    # a zero accumulator (attention's Q·Kᵀ) is not read: its first instructions get scale-d
    # false (D = A·B), so no registers are zeroed for them
    skip_c = promote or all(isinstance(r, ir.Constant) and r.constant == 0 for r in regs)
    first_text = _instruction_text(n_instr, k_instr, kinds, a_operand.transposed, b_desc.transposed,
                                   a_in_registers, accumulate=False)  # fmt: skip
    if a_in_registers:  # packed before the fence: a register written between a warp group's
        # wgmmas makes ptxas wait for the ones before it (its warning C7519)
        fragments = a_operand.fragments()
    for k0 in range(0, k, promote or k):
        sums = [ir.Constant(acc_type, ir.Undefined)] * len(regs) if skip_c else regs
        ctx.asm(ir.VoidType(), "wgmma.fence.sync.aligned;", "", [], side_effect=True)
        for kk in range(k0, k0 + (promote or k), k_instr):
            for m_rep in range(0, m, 16 * wm):
                rows = b.add(group_row, I32(m_rep))
                for n_rep in range(0, n, n_instr * wn):
                    cols = b.add(warp_col, I32(n_rep))
                    slots = [_register(lay, m_rep + 8 * ((i >> 1) & 1), n_rep + (i & 1) + 8 * (i >> 2))
                             for i in range(count)]  # fmt: skip
                    a_args = fragments[m_rep, kk] if a_in_registers else [a_operand.at(rows, I32(kk))]
                    args = a_args + [b_desc.at(I32(kk), cols)] + [sums[r] for r in slots]
                    fresh = skip_c and kk == k0
                    out = ctx.asm(result_type, first_text if fresh else text, constraints, args, side_effect=True)
                    for i, r in enumerate(slots):
                        sums[r] = b.extract_value(out, i)
        ctx.asm(ir.VoidType(), "wgmma.commit_group.sync.aligned;", "", [], side_effect=True)
        ctx.rule_state[_DRAINED] = None
        if promote:  # this chunk's imprecise sum, added into the fp32 accumulator
            regs = [b.fadd(acc, part) for acc, part in zip(regs, _wait(ctx, sums, 0, op))]
        else:
            regs = sums
    if op.is_async is None and not promote:
        regs = _wait(ctx, regs, 0, op)
    ctx.set(op.d, TV(regs, lay, op.d.type.element_type))


def _uniform_warp(ctx):
    """The thread's warp index as a value ptxas knows is the same in every lane: lane 0's, read
    with `shfl.sync.idx` once in the prologue. From tid.x >> 5 ptxas cannot tell, so the
    descriptors built from it (A's warp-group rows) stay in per-thread registers and every
    wgmma first copies them to uniform ones (R2UR); from this value they are computed and kept
    on the uniform datapath, as in Triton's kernels. LLVM no longer knows its range, hence the
    masks at the use."""
    return ctx.once(("uniform warp",), lambda: ctx.call(
        "llvm.nvvm.shfl.sync.idx.i32", I32, [I32(-1), ctx.warp, I32(0), I32(31)], builder=ctx.pro))


def _promotion_k(op, k: int, k_instr: int) -> int:
    """K elements per partial sum when fp8 products are promoted (maxNumImpreciseAcc = N with
    N <= K, as Triton: Hopper's fp8 tensor cores add into the accumulator with about 13
    significant bits, so each run of N is summed in a fresh accumulator, waited for and added
    into the fp32 one); 0: one sum over all of K, in the accumulator itself."""
    attr = op.max_num_imprecise_acc
    limit = attr.value.data if attr is not None else 0
    if not 0 < limit <= k:
        return 0
    return max(k_instr, limit // k_instr * k_instr)


def _warp_group_dot_wait(ctx, op: ttng.WarpGroupDotWaitOp) -> None:
    tv = ctx.get(op.src)
    keep = [reg for value in op.keep for fragment in _RegisterA(ctx, value).fragments().values()
            for reg in fragment]  # fmt: skip
    ctx.set(op.result, TV(_wait(ctx, list(tv.regs), op.pendings.value.data, op, keep), tv.lay, tv.elem))


def _accumulator(op) -> tuple[ir.Type, str]:
    """The accumulator registers' LLVM type and inline-asm constraint: s32 for int8, else f32."""
    if isinstance(op.results[0].type.element_type, IntegerType):
        return I32, "=r"
    return F32, "=f"


_DRAINED = "wgmma drained"  # rule_state key: the LLVM block whose last wgmma wait left none pending


def _wait(ctx, regs: list, pendings: int, op, keep: tuple = ()) -> list:
    """`wgmma.wait_group pendings` with the accumulator registers passed through it, so that
    nothing reads them before it (LLVM sees the wait produce them), and reading `keep` (the
    packed registers of a register operand A: the same values the dot's packing made, merged by
    LLVM's CSE), so that nothing is written into them while the tensor cores may still read
    them. Where an earlier `wait_group 0` in the same block left nothing pending (no commit
    since: a synchronous dot right before the wait of the loop's carried asynchronous
    accumulator), the registers pass through an empty statement instead, which still orders
    their reads after that wait."""
    count = len(regs)
    acc_type, acc_constraint = _accumulator(op)
    constraints = ",".join([acc_constraint] * count + [str(i) for i in range(count)] + ["r"] * len(keep))
    result_type = ir.LiteralStructType([acc_type] * count)
    drained = ctx.rule_state.get(_DRAINED) is ctx.b.block
    text = "" if drained else f"wgmma.wait_group.sync.aligned {pendings};"
    out = ctx.asm(result_type, text, constraints, [*regs, *keep], side_effect=True)
    if pendings == 0:
        ctx.rule_state[_DRAINED] = ctx.b.block
    return [ctx.b.extract_value(out, i) for i in range(count)]


def _instruction_text(n_instr: int, k_instr: int, kinds, trans_a: bool, trans_b: bool,
                      a_in_registers: bool = False, accumulate: bool = True) -> str:  # fmt: skip
    """16-bit operands take the transpose immediates (a register A none of its own); fp8 and
    tf32 ones are K-major only and take none; s8 ones take no scale immediates either (the
    accumulator is s32). `accumulate` False sets scale-d false: D = A·B, C not read."""
    count = n_instr // 2
    outs = ",".join(f"${i}" for i in range(count))
    if kinds[0] == "s8":
        immediates = ""
    elif kinds[0] in ("f16", "bf16"):
        immediates = f", 1, 1, {int(trans_b)}" if a_in_registers else f", 1, 1, {int(trans_a)}, {int(trans_b)}"
    else:
        immediates = ", 1, 1"
    dtype = "s32" if kinds[0] == "s8" else "f32"
    a_text = f"{{${count}, ${count + 1}, ${count + 2}, ${count + 3}}}" if a_in_registers else f"${count}"
    b_index = count + (4 if a_in_registers else 1)
    return (
        f"{{ .reg .pred p; setp.eq.u32 p, 1, {int(accumulate)}; "
        f"wgmma.mma_async.sync.aligned.m64n{n_instr}k{k_instr}.{dtype}.{kinds[0]}.{kinds[1]} "
        f"{{{outs}}}, {a_text}, ${b_index}, p{immediates}; }}"
    )


def _register(lay, row: int, col: int) -> int:
    """The accumulator register holding (row, col) of the register part of the layout."""
    flat = (row << lay.dim_shift(0)) | (col << lay.dim_shift(1))
    return lay.reg_of_flat[flat]


class _RegisterA:
    """Operand A held in registers (#ttg.dot_op, opIdx 0, MMA v3 parent, 16-bit elements)."""

    transposed = False

    def __init__(self, ctx, value):
        self.lay = ctx.lay(value.type)
        self.regs = list(ctx.regs(value, self.lay))
        self.encoding = ttg.encoding_of(value.type)
        self.shape = value.type.get_shape()
        self.pack = fragment_packer(ctx, value.type.element_type)  # mma.sync's: 2 halves per .b32

    def fragments(self) -> dict:
        """(m_rep, kk) -> the four .b32 registers of each instruction's A, over the whole tile:
        rows in steps of the warp groups' 16 * warps along M, K in steps of the instruction's."""
        mma = self.encoding.parent
        m, k = self.shape
        rows_step, k_instr = 16 * mma.warps_per_cta[0], mma.instr_shape[2]
        return {(m_rep, kk): self.fragment(m_rep, kk)
                for kk in range(0, k, k_instr) for m_rep in range(0, m, rows_step)}  # fmt: skip

    def fragment(self, m_rep: int, kk: int) -> list:
        """The four .b32 registers of the instruction at rows m_rep.., columns kk..: a_i holds
        row 8*(i & 1), columns 8*(i >> 1) + {0, 1} of the thread's part."""
        values = []
        for i in range(4):
            row, col = m_rep + 8 * (i & 1), kk + 8 * (i >> 1)
            values += [self.regs[_register(self.lay, row, col + c)] for c in (0, 1)]
        return self.pack(values)


class _Descriptor:
    """wgmma matrix descriptors of sub-tiles of one operand buffer (see the module docstring);
    `k_dim` is the operand's K dim (1 for A, 0 for B)."""

    def __init__(self, ctx, value, k_dim: int):
        encoding = value.type.encoding
        self.ctx = ctx
        self.buf = ctx.get(value)
        self.swizzle = encoding.swizzle_bytes
        self.elem_bytes = encoding.element_bits // 8
        contiguous = self.buf.order[0]
        self.transposed = contiguous != k_dim  # MN-major
        self.contiguous = contiguous
        self.lines = self.buf.shape[self.buf.order[1]]
        panel_stride = self.lines * self.swizzle
        leading = panel_stride if self.transposed else 16
        stride = 8 * self.swizzle
        self.fields = I64(
            ((leading >> 4) & 0x3FFF) << 16
            | ((stride >> 4) & 0x3FFF) << 32
            | SWIZZLE_MODE[self.swizzle] << 62
        )
        b = ctx.b
        base = b.ptrtoint(ctx.smem_ptr(base_offset(ctx, self.buf)), I32)
        self.base = b.or_(b.zext(b.and_(b.lshr(base, I32(4)), I32(0x3FFF)), I64), self.fields)

    def at(self, row, col):
        """The descriptor of the sub-tile starting at (row, col) (i32 values) of the buffer: the
        buffer's own plus the sub-tile's offset in 16-byte units, one 64-bit add (shared
        addresses stay below 2^18, so the 14-bit start field does not carry into the next)."""
        b = self.ctx.b
        coords = (row, col)
        along = b.mul(coords[self.contiguous], I32(self.elem_bytes))
        line = coords[1 - self.contiguous]
        shift = _log2(self.swizzle)
        panel = b.mul(b.lshr(along, I32(shift)), I32(self.lines * self.swizzle))
        offset = b.add(panel, b.add(b.mul(line, I32(self.swizzle)), b.and_(along, I32(self.swizzle - 1))))
        return b.add(self.base, b.zext(b.lshr(offset, I32(4)), I64))


# op class -> fn(ctx, op): NVIDIA's rule for Hopper's warp-group dot
RULES = {ttng.WarpGroupDotOp: _warp_group_dot, ttng.WarpGroupDotWaitOp: _warp_group_dot_wait}
