"""Tensor cores on mma.sync: tt.dot with an MMA v2 accumulator, and ttg.local_load into its
operand layouts with ldmatrix.

Every register order comes from the TTGIR types: the accumulator's `#ttg.nvidia_mma` and the
operands' `#ttg.dot_op<{parent = #mma, kWidth}>` layouts (kernellab.layouts) hold, within one
instruction tile, exactly the PTX ISA fragments of mma.m16n8kK in fragment order (the lowest
register bits), and repeat those tiles with higher register bits. So the dot groups each
layout's registers by instruction tile (the tile a register's coordinates fall in) and issues
one mma.sync per (M tile, N tile, K tile), passing each tile's registers in register order.

ttg.local_load into a 16-bit operand layout uses ldmatrix.x4 where kernellab.layouts'
`ldmatrix_rows` gives the lanes' row addresses for the buffer (plain or .trans, by which dim
is contiguous); the lowering computes those addresses like any layout's coordinates. When the
load's only user is an MMA dot, the dot issues each ldmatrix just before the K step that
first needs it (LdmatrixOperand); other element widths (8- and 32-bit operands) are read the
same way with plain shared loads, a run of consecutive registers per access (SharedOperand).

Both are NVIDIA rules over the core's: the NVIDIA table maps tt.DotOp and ttg.LocalLoadOp
here (RULES), and every dot or local_load these do not apply to goes to the core's rule (the
FMA dot, the element-by-element load). The buffer's element offsets are the core's
(shared_buffers.smem_offset: its swizzle).
"""

from __future__ import annotations

from dataclasses import dataclass

import llvmlite.ir as ir
from xdsl.dialects import builtin

from kernellab.backends.llvm import CORE_RULES
from kernellab.backends.llvm.layout import Lay
from kernellab.backends.llvm.shared_buffers import base_offset, buffer_interval, smem_offset, vector_run
from kernellab.backends.llvm.smem_vectors import load_run, smem_elem_bytes
from kernellab.backends.llvm.types import F16, I32, TV, SmemBuf, bitwidth, llty
from kernellab.ir import tt, ttg
from kernellab.layouts import ldmatrix_rows

# ------------------------------------------------------------------------------ tt.dot


def is_mma_dot(op) -> bool:
    encoding = ttg.encoding_of(op.d.type)
    return isinstance(encoding, ttg.NvidiaMmaEncodingAttr) and encoding.version_major == 2


_PTX_TYPE = {
    builtin.Float16Type: "f16",
    builtin.BFloat16Type: "bf16",
    builtin.Float32Type: "tf32",
    builtin.Float8E4M3FNType: "e4m3",
    builtin.Float8E5M2Type: "e5m2",
    builtin.IntegerType: "s8",
}


def _instr_k(elem) -> int:
    return 256 // bitwidth(elem) if bitwidth(elem) < 32 else 8


def _tiles(lay: Lay, tile: tuple[int, int]) -> dict[tuple[int, ...], list[int]]:
    """Registers of `lay` grouped by instruction tile ((batch,) row tile, column tile), in
    register order."""
    out: dict[tuple[int, ...], list[int]] = {}
    for r in range(lay.nregs):
        *batch, row, col = lay.coords(lay.reg_flat[r])
        out.setdefault((*batch, row // tile[0], col // tile[1]), []).append(r)
    return out


def _dot(ctx, op) -> None:
    """An MMA v2 dot on mma.sync; any other dot is the core's FMA dot."""
    if is_mma_dot(op):
        _mma_dot(ctx, op)
    else:
        CORE_RULES[tt.DotOp](ctx, op)


def _mma_dot(ctx, op) -> None:
    """d = a @ b + c as mma.sync over the warp's instruction tiles."""
    (a_lay, a_reg), (b_lay, b_reg) = _reader(ctx, op.a), _reader(ctx, op.b)
    c_tv = ctx.get(op.c)
    elem, acc_elem = op.a.type.element_type, op.d.type.element_type
    k = _instr_k(elem)
    a_tiles = _tiles(a_lay, (16, k))
    b_tiles = _tiles(b_lay, (k, 8))
    c_tiles = _tiles(c_tv.lay, (16, 8))
    precision = op.input_precision.data if isinstance(elem, builtin.Float32Type) else ""
    pack = fragment_packer(ctx, elem)
    out = list(c_tv.regs)
    k_tiles = sorted({key[-1] for key in a_tiles})
    for kt in k_tiles:  # tile keys: (batch,) row tile, column tile
        a_parts = {key[:-1]: pack([a_reg(r) for r in regs])
                   for key, regs in a_tiles.items() if key[-1] == kt}  # fmt: skip
        b_parts = {(*key[:-2], key[-1]): pack([b_reg(r) for r in regs])
                   for key, regs in b_tiles.items() if key[-2] == kt}  # fmt: skip
        for (*batch, mt, nt), regs in sorted(c_tiles.items()):
            acc = [out[r] for r in regs]
            pairs = _products(a_parts[(*batch, mt)], b_parts[(*batch, nt)], precision)
            for a_part, b_part in pairs:
                acc = _mma(ctx, k, elem, op.b.type.element_type, acc_elem, a_part, b_part, acc)
            for r, v in zip(regs, acc):
                out[r] = v
    ctx.set(op.d, TV(out, c_tv.lay, acc_elem))


def _reader(ctx, value):
    """(Lay, fn(register) -> LLVM value) of a dot operand: registers, or a DeferredOperand
    loaded as the K loop reaches it."""
    operand = ctx.get(value)
    if isinstance(operand, DeferredOperand):
        return operand.lay, lambda r: operand.register(ctx, r)
    return operand.lay, lambda r: operand.regs[r]


def _products(a_part, b_part, precision: str):
    """The (A, B) register sets one tile's MMAs multiply. tf32x3 splits each fp32 operand into
    big = tf32(x) and small = tf32(x - big) and accumulates small*big, big*small, big*big (as
    the FMA path and the interpreter do)."""
    if precision == "tf32x3":
        (a_big, a_small), (b_big, b_small) = a_part, b_part
        return [(a_small, b_big), (a_big, b_small), (a_big, b_big)]
    if precision == "tf32":
        return [(a_part[0], b_part[0])]
    return [(a_part, b_part)]


def fragment_packer(ctx, elem):
    """fn(fragment values) -> the 32-bit registers mma.sync takes (fp32: (big, small) tf32
    register lists, rounded by the target's tf32_round like the FMA dot and the interpreter)."""
    b = ctx.b
    bits = bitwidth(elem)
    if bits == 32:

        def tf32_parts(values):
            big, small = [], []
            for v in values:
                hi = ctx.target.tf32_round(ctx, v)
                big.append(b.bitcast(hi, I32))
                small.append(b.bitcast(ctx.target.tf32_round(ctx, b.fsub(v, hi)), I32))
            return big, small

        return tf32_parts
    per_reg = 32 // bits

    def pack(values):
        regs = []
        for i in range(0, len(values), per_reg):
            group = values[i : i + per_reg]
            vec = ir.Constant(ir.VectorType(group[0].type, per_reg), None)
            for j, v in enumerate(group):
                vec = b.insert_element(vec, v, I32(j))
            regs.append(b.bitcast(vec, I32))
        return regs

    return pack


def _mma(ctx, k: int, a_elem, b_elem, acc_elem, a_regs, b_regs, acc):
    """One mma.sync.aligned.m16n8kK.row.col; `acc` holds the four accumulator elements."""
    b = ctx.b
    a_type, b_type = _PTX_TYPE[type(a_elem)], _PTX_TYPE[type(b_elem)]
    if isinstance(acc_elem, builtin.Float16Type):
        c_regs = []
        for i in (0, 2):
            vec = ir.Constant(ir.VectorType(F16, 2), None)
            vec = b.insert_element(b.insert_element(vec, acc[i], I32(0)), acc[i + 1], I32(1))
            c_regs.append(b.bitcast(vec, I32))
        c_type, c_con = "f16", "r"
    elif isinstance(acc_elem, builtin.IntegerType):
        c_regs, c_type, c_con = list(acc), "s32", "r"
    else:
        c_regs, c_type, c_con = list(acc), "f32", "f"
    n_c, n_a, n_b = len(c_regs), len(a_regs), len(b_regs)

    def operands(first, count):
        return "{" + ",".join(f"${first + i}" for i in range(count)) + "}"

    text = (
        f"mma.sync.aligned.m16n8k{k}.row.col.{c_type}.{a_type}.{b_type}.{c_type} "
        f"{operands(0, n_c)}, {operands(n_c, n_a)}, {operands(n_c + n_a, n_b)}, "
        f"{operands(n_c + n_a + n_b, n_c)};"
    )
    constraints = ",".join(
        [f"={c_con}"] * n_c + ["r"] * (n_a + n_b) + [str(i) for i in range(n_c)]
    )
    ret = ir.LiteralStructType([c_regs[0].type] * n_c)
    res = ctx.asm(ret, text, constraints, [*a_regs, *b_regs, *c_regs], side_effect=False)
    d = [b.extract_value(res, i) for i in range(n_c)]
    if isinstance(acc_elem, builtin.Float16Type):
        halves = [b.bitcast(x, ir.VectorType(F16, 2)) for x in d]
        return [b.extract_element(h, I32(j)) for h in halves for j in (0, 1)]
    return d


# ------------------------------------------------------------------ local_load: ldmatrix


def _ldmatrix_rows(buf: SmemBuf, lay: Lay, op_idx: int) -> tuple[Lay, bool] | None:
    """(row-address Lay, .trans?) when ldmatrix.x4 can load the dot operand laid out as `lay`
    from `buf`: 16-bit elements, rows of 8 elements that stay contiguous under the
    buffer's swizzle (kernellab.layouts.ldmatrix_rows decides the rest), rank 2 or batched 3."""
    if bitwidth(buf.elem) != 16 or len(buf.shape) not in (2, 3):
        return None
    if buf.max_phase > 1 and buf.vec < 8:
        return None
    found = ldmatrix_rows(lay.linear, op_idx, buf.order[0])
    if found is None:
        return None
    rows, trans = found
    return Lay(rows), trans


def _local_load(ctx, op) -> None:
    """An MMA dot operand: with ldmatrix where it applies (16-bit elements), else with shared
    loads of runs of registers; deferred to the dot when that is the only user. Any other
    local_load is the core's."""
    t = op.result.type
    encoding = ttg.encoding_of(t)
    if not (isinstance(encoding, ttg.DotOperandEncodingAttr)
            and isinstance(encoding.parent, ttg.NvidiaMmaEncodingAttr)):  # fmt: skip
        CORE_RULES[ttg.LocalLoadOp](ctx, op)
        return
    buf, lay = ctx.get(op.src), ctx.lay(t)
    place = (buf, lay, t.element_type, buffer_interval(ctx, op.src))
    rows = _ldmatrix_rows(buf, lay, encoding.op_idx)
    deferred = _feeds_one_mma_dot(op.result)
    if rows is not None:
        operand = LdmatrixOperand(*place, *rows)
    elif deferred:
        operand = SharedOperand(*place)
    else:
        CORE_RULES[ttg.LocalLoadOp](ctx, op)
        return
    ctx.set(op.result, operand if deferred else operand.tensor(ctx))


@dataclass
class DeferredOperand:
    """A dot operand in shared memory whose registers are loaded, a group at a time, the first
    time one of them is asked for. A ttg.local_load whose only user is an MMA dot leaves this
    in place of its registers, so the dot loads each K step's fragments just before that
    step's mma.sync (short live ranges: the whole operand at once spills on large tiles);
    other local_loads read all of it at once (`tensor`)."""

    buf: SmemBuf
    lay: Lay
    elem: object
    interval: object

    def __post_init__(self):
        self.loaded: dict = {}

    def register(self, ctx, r: int):
        group, index = self._group_of(r)
        if group not in self.loaded:
            if not self.loaded:
                ctx.smem_access(self.interval, write=False)
            self.loaded[group] = self._load(ctx, group)
        return self.loaded[group][index]

    def tensor(self, ctx) -> TV:
        return TV([self.register(ctx, r) for r in range(self.lay.nregs)], self.lay, self.elem)


@dataclass
class SharedOperand(DeferredOperand):
    """Loaded with plain shared loads, one per run of registers at consecutive aligned
    addresses (for an 8-bit operand stored K-contiguous: kWidth elements, one 32-bit word)."""

    def _group_of(self, r: int) -> tuple[int, int]:
        r = self.lay.reg_of_flat[self.lay.reg_flat[r]]  # the register holding r's element
        run = vector_run(self.lay, self.buf)
        return r - r % run, r % run

    def _load(self, ctx, first: int) -> list:
        b = ctx.b
        coords = [ctx.coord(self.lay, first, d) for d in range(self.lay.rank)]
        offset = b.mul(smem_offset(ctx, self.buf, coords), I32(smem_elem_bytes(self.elem)))
        ptr = ctx.smem_ptr(b.add(base_offset(ctx, self.buf), offset))
        return load_run(ctx, self.elem, vector_run(self.lay, self.buf), ptr)


@dataclass
class LdmatrixOperand(DeferredOperand):
    """A 16-bit operand read by one ldmatrix.x4 per register of `rows` (the row addresses,
    from _ldmatrix_rows)."""

    rows: Lay = None
    trans: bool = False

    def _group_of(self, r: int) -> tuple[int, int]:
        return r >> 3, r & 7  # registers (outer, matrix j, pair element): one ldmatrix per outer

    def _load(self, ctx, outer: int) -> list:
        b = ctx.b
        text = "ldmatrix.sync.aligned.m8n8.x4{}.shared.b16 {{$0,$1,$2,$3}}, [$4];".format(
            ".trans" if self.trans else ""
        )
        coords = [ctx.coord(self.rows, outer, d) for d in range(self.rows.rank)]
        offset = smem_offset(ctx, self.buf, coords)
        ptr = ctx.smem_ptr(b.add(base_offset(ctx, self.buf), b.mul(offset, I32(2))))
        ret = ir.LiteralStructType([I32] * 4)
        res = ctx.asm(ret, text, "=r,=r,=r,=r,r", [b.ptrtoint(ptr, I32)], side_effect=True)
        pair_type = ir.VectorType(llty(self.elem), 2)
        out = []
        for j in range(4):  # matrix j holds registers (outer, j, 0) and (outer, j, 1)
            pair = b.bitcast(b.extract_value(res, j), pair_type)
            out += [b.extract_element(pair, I32(0)), b.extract_element(pair, I32(1))]
        return out


def _feeds_one_mma_dot(value) -> bool:
    """`value` (a local_load's result) has exactly one use, an MMA dot's operand."""
    uses = list(value.uses)
    return len(uses) == 1 and isinstance(uses[0].operation, tt.DotOp) and is_mma_dot(
        uses[0].operation
    )


# op class -> fn(ctx, op): NVIDIA's rules over the core's for these ops
RULES = {
    tt.DotOp: _dot,
    ttg.LocalLoadOp: _local_load,
}
