"""The lowering context: one TTGIR kernel function → one LLVM module (llvmlite.ir), for any target.

A `Lowering` walks the kernel's ops in order and asks the rule its target's table gives for
each op class (`rules[OpClass](ctx, op)`) to emit LLVM IR; what differs between targets it
asks of `target` (see target.py). Values map from SSA values to:
  - an llvmlite value for a scalar (uniform across the CTA),
  - a `TV` (one llvmlite value per register of the tensor's layout) for a distributed tensor,
  - a `SmemBuf` for a shared-memory descriptor.
The entry block is a prologue holding everything computed once per thread (thread id, lane,
warp, and each layout's thread part of the element index); the code proper starts in the
block after it, so prologue values dominate every use.
"""

from __future__ import annotations

import llvmlite.ir as ir
from xdsl.dialects.builtin import FileLineColLoc, ModuleOp, TensorType
from xdsl.ir import Block, Operation, SSAValue

from kernellab.backends.llvm.debuginfo import DebugInfo
from kernellab.backends.llvm.errors import LoweringError
from kernellab.backends.llvm.layout import Lay, _log2, layout_of_type
from kernellab.backends.llvm.smem import ALIGN, BarrierTracker, Interval, SmemPlan, plan_shared_memory
from kernellab.backends.llvm.target import Target
from kernellab.backends.llvm.types import I32, I8, TV, VOID, llty, mem_bytes
from kernellab.ir import tt, ttg


class Lowering:
    """`rules`: op class → fn(ctx, op) emitting its LLVM IR; `scratch`: op class →
    fn(ctx, op) -> bytes of shared-memory scratch the op needs (both assembled by the target)."""

    def __init__(self, module: ModuleOp, target: Target, rules: dict, scratch: dict, options=None):
        self.module_op = module
        self.target = target
        self.rules = rules
        self.scratch_rules = scratch
        self.options = options
        # Triton's enable_fp_fusion: fp add/sub/mul may contract into FMAs (LLVM's `contract`)
        self.fp_fusion = getattr(options, "enable_fp_fusion", True)
        self.num_warps = ttg.num_warps(module)
        self.threads_per_warp = ttg.threads_per_warp(module)
        if self.threads_per_warp != target.threads_per_warp:
            raise LoweringError(
                f"{target.name} warps have {target.threads_per_warp} threads, the module says "
                f"{self.threads_per_warp}"
            )
        self.lane_bits = _log2(self.threads_per_warp)
        self.mod = ir.Module(name="kernellab")
        self.mod.triple = target.triple
        self.mod.data_layout = target.data_layout
        self.vals: dict[SSAValue, object] = {}
        self._intrinsics: dict[str, ir.Function] = {}
        self._thread_cache: dict = {}
        self.rule_state: dict = {}  # what a target's rules remember between ops, under their keys
        self._strings: dict[str, ir.GlobalVariable] = {}
        self.b: ir.IRBuilder | None = None
        self.current_op: Operation | None = None

    # ------------------------------------------------------------------------ driver

    def run(self) -> tuple[str, dict]:
        try:
            func = tt.entry_function(self.module_op)
        except ValueError as e:
            raise LoweringError(str(e)) from None
        self.func_op = func
        name = func.sym_name.data
        arg_types = [llty(t) for t in func.function_type.inputs.data]
        by_value = _by_value_params(func)
        for i in by_value:  # the bytes themselves are the parameter: a typed pointer for byval
            arg_types[i] = ir.PointerType(ir.ArrayType(I8, BY_VALUE_BYTES))
        hidden = self.target.hidden_params
        fty = ir.FunctionType(VOID, arg_types + [ty for _, ty in hidden])
        fn = ir.Function(self.mod, fty, name)
        for i in by_value:
            fn.args[i].attributes.add("byval")
            fn.args[i].attributes.align = BY_VALUE_ALIGN
        self.fn = fn
        self.hidden = {hname: arg for (hname, _), arg in zip(hidden, fn.args[len(arg_types):])}
        threads = self.num_warps * self.threads_per_warp
        self.debug = DebugInfo(self.mod, fn, func, name)  # before define_kernel: a wrapper may need it
        self.target.define_kernel(self, fn, threads)

        entry = fn.append_basic_block("entry")
        body = fn.append_basic_block("body")
        self.pro = ir.IRBuilder(entry)
        self.pro.debug_metadata = self.debug.location(self.debug.func_line, 0)
        term = self.pro.branch(body)
        self.pro.position_before(term)
        self.b = ir.IRBuilder(body)

        tid = self.target.thread_id(self)
        self.tid = tid
        self.lane = self.pro.and_(tid, I32(self.threads_per_warp - 1), name="lane")
        self.warp = self.pro.lshr(tid, I32(self.lane_bits), name="warp")

        for arg, value, ty in zip(fn.args, func.args, func.function_type.inputs.data):
            if value.name_hint:
                arg.name = value.name_hint
            self.vals[value] = arg

        self.smem = self.plan_shared_memory(func)
        if self.smem.total:
            self.smem_base = self.target.shared_memory(self, self.smem.total)
        self.barriers = BarrierTracker(lambda: self.target.barrier(self))

        self.lower_block(func.body.block)
        if not self.b.block.is_terminated:
            self.b.ret_void()
        metadata = {
            "name": name,
            "num_warps": self.num_warps,
            "threads_per_block": threads,
            "shared": self.smem.total,
            "bar_syncs": self.barriers.count,
        }
        return str(self.mod), metadata

    def lower_block(self, block: Block) -> None:
        for op in block.ops:
            self.lower_op(op)

    def lower_op(self, op: Operation) -> None:
        fn = self.rules.get(type(op))
        if fn is None:
            raise LoweringError(
                f"the {self.target.name} lowering has no rule for {op.name}"
                + self._where(op)
            )
        saved = self.current_op
        self.current_op = op
        loc = self.debug.location_of(op)
        if loc is not None:
            self.b.debug_metadata = loc
        try:
            fn(self, op)
        finally:
            self.current_op = saved

    def _where(self, op) -> str:
        loc = op.location
        if isinstance(loc, FileLineColLoc):
            return f" (at {loc.filename.data}:{loc.line.data}:{loc.column.data})"
        return ""

    # ------------------------------------------------------------------------ values

    def get(self, v: SSAValue):
        try:
            return self.vals[v]
        except KeyError:
            raise LoweringError(f"value {v} used before it was lowered") from None

    def set(self, v: SSAValue, x) -> None:
        self.vals[v] = x

    def lay(self, t) -> Lay:
        if not isinstance(t, TensorType):
            raise LoweringError(f"{t} is not a tensor type")
        if ttg.encoding_of(t) is None:
            raise LoweringError(
                f"tensor type {t} has no layout encoding: the {self.target.name} lowering takes TTGIR "
                "(run make_ttgir first)"
            )
        return layout_of_type(t)

    def regs(self, v: SSAValue, lay: Lay | None = None) -> list:
        """The per-register values of operand `v` (a scalar operand is splat over `lay`)."""
        x = self.get(v)
        if isinstance(x, TV):
            return x.regs
        assert lay is not None
        return [x] * lay.nregs

    # --------------------------------------------------------------------- intrinsics

    def intrinsic(self, name: str, ret, args) -> ir.Function:
        f = self._intrinsics.get(name)
        if f is None:
            f = self.mod.globals.get(name)
            if f is None:
                f = ir.Function(self.mod, ir.FunctionType(ret, args), name)
            self._intrinsics[name] = f
        return f

    def call(self, name: str, ret, args: list, builder=None):
        b = builder or self.b
        return b.call(self.intrinsic(name, ret, [a.type for a in args]), args)

    def asm(self, ret, text: str, constraints: str, args: list, side_effect: bool = True):
        fty = ir.FunctionType(ret, [a.type for a in args])
        return self.b.asm(fty, text, constraints, args, side_effect)

    # ----------------------------------------------------------------- thread indices

    def once(self, key, make):
        """The prologue value `make()` computed once per kernel under `key` (thread ids,
        special registers, per-layout index parts)."""
        v = self._thread_cache.get(key)
        if v is None:
            v = make()
            self._thread_cache[key] = v
        return v

    def thread_flat(self, lay: Lay):
        """i32: the thread part of the flat element index (XOR of its lane and warp bases),
        computed once per distinct (lane, warp) bases in the prologue."""
        key = ("flat", lay.lane, lay.warp)
        v = self._thread_cache.get(key)
        if v is None:
            v = self._emit_index_terms([(self.lane, lay.lane), (self.warp, lay.warp)])
            self._thread_cache[key] = v
        return v

    def _emit_index_terms(self, sources):
        """XOR over sources of (XOR of bases[i] for each set bit i of the source value)."""
        b = self.pro
        terms = []  # (value, possible-bits mask)
        for src, bases in sources:
            i = 0
            n = len(bases)
            while i < n:
                base = bases[i]
                if base == 0:
                    i += 1
                    continue
                if base & (base - 1) == 0:
                    j = i + 1
                    while j < n and bases[j] == base << (j - i):
                        j += 1
                    width = j - i
                    v = b.lshr(src, I32(i)) if i else src
                    v = b.and_(v, I32((1 << width) - 1))
                    shift = base.bit_length() - 1
                    if shift:
                        v = b.shl(v, I32(shift))
                    terms.append((v, ((1 << width) - 1) << shift))
                    i = j
                else:
                    bit = b.and_(b.lshr(src, I32(i)), I32(1))
                    terms.append((b.mul(bit, I32(base)), base))
                    i += 1
        if not terms:
            return I32(0)
        acc, mask = terms[0]
        for v, m in terms[1:]:
            acc = b.or_(acc, v) if (m & mask) == 0 else b.xor(acc, v)
            mask |= m
        return acc

    def thread_dim(self, lay: Lay, d: int):
        key = ("dim", lay.lane, lay.warp, lay.shape, d)
        v = self._thread_cache.get(key)
        if v is None:
            flat = self.thread_flat(lay)
            shift = lay.dim_shift(d)
            mask = lay.shape[d] - 1
            if lay.rank == 1:
                v = flat
            else:
                v = self.pro.lshr(flat, I32(shift)) if shift else flat
                if d != 0:
                    v = self.pro.and_(v, I32(mask))
            self._thread_cache[key] = v
        return v

    def coord(self, lay: Lay, r: int, d: int):
        """i32 coordinate along dim d of register r of this thread."""
        c = lay.dim_part(lay.reg_flat[r], d)
        t = self.thread_dim(lay, d)
        if c == 0:
            return t
        if c & lay.dim_part(lay.thread_bits, d) == 0:  # disjoint bits: an add (addressing.py)
            return self.b.add(t, I32(c))
        return self.b.xor(t, I32(c))

    def flat_index(self, lay: Lay, r: int):
        """i32 row-major flat element index of register r of this thread."""
        c = lay.reg_flat[r]
        t = self.thread_flat(lay)
        if c == 0:
            return t
        if c & lay.thread_bits == 0:  # disjoint bits: an add (addressing.py)
            return self.b.add(t, I32(c))
        return self.b.xor(t, I32(c))

    def dup_predicate(self, lay: Lay | None, builder=None):
        """i1 true in exactly one thread of each group holding the same elements (lanes/warps
        whose differing bits are free variables of the layout), or None when every thread
        holds distinct data. With lay=None (a scalar), only thread 0."""
        b = builder or self.b
        if lay is None:
            return b.icmp_unsigned("==", self.tid, I32(0))
        lane_mask = lay.free_lane_mask()
        warp_mask = lay.free_warp_mask()
        mask = lane_mask | (warp_mask << self.lane_bits)
        if mask == 0:
            return None
        key = ("dup", mask)
        v = self._thread_cache.get(key)
        if v is None:
            v = self.pro.icmp_unsigned("==", self.pro.and_(self.tid, I32(mask)), I32(0))
            self._thread_cache[key] = v
        return v

    # ------------------------------------------------------------------ shared memory

    def plan_shared_memory(self, func) -> SmemPlan:
        """Where each op's scratch and each ttg.local_alloc buffer lives (liveness-based)."""
        return plan_shared_memory(func, self._scratch_bytes, self._memdesc_bytes, self._memdesc_align)

    def _scratch_bytes(self, op) -> int:
        fn = self.scratch_rules.get(type(op))
        return fn(self, op) if fn else 0

    def _memdesc_bytes(self, t) -> int:
        n = 1
        for s in t.shape:
            n *= s
        return n * mem_bytes(t.element_type)

    @staticmethod
    def _memdesc_align(t) -> int:
        """An NVMMA buffer starts where its swizzle pattern does (8 rows of the swizzle width),
        as the tensor cores' descriptors assume; other buffers on 16 bytes."""
        if isinstance(t.encoding, ttg.NVMMASharedEncodingAttr):
            return 8 * t.encoding.swizzle_bytes
        return ALIGN

    def smem_ptr(self, byte_offset):
        """ptr addrspace(3) to `byte_offset` (int or i32 value) in the dynamic shared array."""
        if isinstance(byte_offset, int):
            byte_offset = I32(byte_offset)
        return self.b.gep(self.smem_base, [byte_offset], source_etype=I8)

    def scratch_offset(self, op=None) -> int:
        op = op or self.current_op
        return self.smem.scratch[op]

    def scratch_interval(self, op=None) -> Interval:
        op = op or self.current_op
        off = self.smem.scratch[op]
        return Interval(off, off + self.smem.scratch_size[op])

    def smem_access(self, iv: Interval, write: bool, keep: list = ()) -> list:
        """Record a shared-memory access (a barrier first where it conflicts); returns `keep`,
        LLVM values the op computed before and uses after the access, as valid after it."""
        return self.barriers.access(iv, write, keep)

    # ---------------------------------------------------------------------- strings

    def cstring(self, text: str):
        """A generic-address-space pointer to a NUL-terminated global string."""
        g = self._strings.get(text)
        if g is None:
            data = bytearray(text.encode()) + b"\0"
            ty = ir.ArrayType(I8, len(data))
            g = ir.GlobalVariable(self.mod, ty, f"str.{len(self._strings)}")
            g.global_constant = True
            g.linkage = "internal"
            g.initializer = ir.Constant(ty, data)
            self._strings[text] = g
        return opaque(g)


def opaque(g: ir.GlobalVariable):
    """An opaque-pointer reference to global `g` (llvmlite keeps globals' pointee types)."""
    return ir.FormattedConstant(ir.PointerType(addrspace=g.addrspace), g.get_reference())


# A parameter whose argument attributes hold this key is passed by value: the kernel receives
# the bytes (a 128-byte CUtensorMap, 64-byte aligned, for Hopper's TMA) and reads them in place
BY_VALUE_ATTR = "tt.nv_tma_desc"
BY_VALUE_BYTES = 128
BY_VALUE_ALIGN = 64


def _by_value_params(func) -> list[int]:
    attrs = func.arg_attrs.data if func.arg_attrs else ()
    return [i for i, a in enumerate(attrs) if BY_VALUE_ATTR in a.data]
