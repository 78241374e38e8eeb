"""The lowering driver: one TTGIR kernel function → one LLVM module (llvmlite.ir).

A `Lowering` walks the kernel's ops in order and asks the function registered for each op
class (`@lowers(OpClass)`) to emit LLVM IR. Values map from SSA values to:
  - an llvmlite value for a scalar (uniform across the CTA),
  - a `TV` (one llvmlite value per register of the tensor's layout) for a distributed tensor,
  - a `SmemBuf` for a shared-memory descriptor.
The entry block is a prologue holding everything computed once per thread (thread id, lane,
warp, and each layout's thread part of the element index); the code proper starts in the
block after it, so prologue values dominate every use.
"""

from __future__ import annotations

import os

import llvmlite.ir as ir
from xdsl.dialects.builtin import FileLineColLoc, ModuleOp, TensorType
from xdsl.ir import Block, Operation, SSAValue

from kernellab.backends.nvidia.lowering.layout import Lay, layout_of_type
from kernellab.backends.nvidia.lowering.smem import BarrierTracker, Interval, plan_shared_memory
from kernellab.backends.nvidia.lowering.types import (
    GPTR, I1, I32, I64, I8, SPTR, VOID, SmemBuf, TV, llty, mem_bytes,
)  # fmt: skip
from kernellab.ir import tt, ttg

REGISTRY: dict[type, object] = {}
SCRATCH: dict[type, object] = {}

DATA_LAYOUT = "e-p6:32:32-i64:64-i128:128-v16:16-v32:32-n16:32:64"
TRIPLE = "nvptx64-nvidia-cuda"


def lowers(*op_classes):
    """Register `fn(ctx, op)` as the lowering of these op classes."""

    def deco(fn):
        for cls in op_classes:
            REGISTRY[cls] = fn
        return fn

    return deco


def scratch(*op_classes):
    """Register `fn(ctx, op) -> bytes` as the shared-memory scratch an op needs."""

    def deco(fn):
        for cls in op_classes:
            SCRATCH[cls] = fn
        return fn

    return deco


class LoweringError(NotImplementedError):
    pass


def _arch_of(module: ModuleOp, options) -> int:
    target = getattr(options, "target", None)
    if target:
        digits = "".join(ch for ch in str(target) if ch.isdigit())
        if digits:
            return int(digits)
    t = ttg.target(module)
    digits = "".join(ch for ch in t if ch.isdigit())
    return int(digits) if digits else 90


class Lowering:
    def __init__(self, module: ModuleOp, options=None):
        self.module_op = module
        self.options = options
        self.num_warps = ttg.num_warps(module)
        self.threads_per_warp = ttg.threads_per_warp(module)
        assert self.threads_per_warp == 32, "NVIDIA warps have 32 threads"
        self.arch = _arch_of(module, options)
        self.mod = ir.Module(name="kernellab")
        self.mod.triple = TRIPLE
        self.mod.data_layout = DATA_LAYOUT
        self.vals: dict[SSAValue, object] = {}
        self._intrinsics: dict[str, ir.Function] = {}
        self._thread_cache: dict = {}
        self._strings: dict[str, ir.GlobalVariable] = {}
        self._dilocs: dict = {}
        self.b: ir.IRBuilder | None = None
        self.current_op: Operation | None = None
        self.smem_global = None

    # ------------------------------------------------------------------------ driver

    def run(self) -> tuple[str, dict]:
        try:
            func = tt.entry_function(self.module_op)
        except ValueError as e:
            raise LoweringError(str(e)) from None
        self.func_op = func
        name = func.sym_name.data
        arg_types = [llty(t) for t in func.function_type.inputs.data]
        fty = ir.FunctionType(VOID, arg_types)
        fn = ir.Function(self.mod, fty, name)
        fn.calling_convention = "ptx_kernel"
        fn.attributes.add("nounwind")
        self.fn = fn
        threads = self.num_warps * 32
        self.mod.add_named_metadata(
            "nvvm.annotations", self.mod.add_metadata([fn, "maxntidx", I32(threads)])
        )
        self._setup_debug(func, name)

        entry = fn.append_basic_block("entry")
        body = fn.append_basic_block("body")
        self.pro = ir.IRBuilder(entry)
        self.pro.debug_metadata = self._diloc(self._func_line, 0)
        term = self.pro.branch(body)
        self.pro.position_before(term)
        self.b = ir.IRBuilder(body)

        tid = self.pro.call(self.intrinsic("llvm.nvvm.read.ptx.sreg.tid.x", I32, []), [], name="tid")
        self.tid = tid
        self.lane = self.pro.and_(tid, I32(31), name="lane")
        self.warp = self.pro.lshr(tid, I32(5), name="warp")

        for arg, value, ty in zip(fn.args, func.args, func.function_type.inputs.data):
            if value.name_hint:
                arg.name = value.name_hint
            self.vals[value] = arg

        self.smem = plan_shared_memory(func, self._scratch_bytes, self._memdesc_bytes)
        if self.smem.total:
            g = ir.GlobalVariable(self.mod, ir.ArrayType(I8, 0), "global_smem", addrspace=3)
            g.linkage = "external"
            g.align = 16
            self.smem_global = g
            self.smem_base = opaque(g)
        self.barriers = BarrierTracker(self._emit_barrier)

        self.lower_block(func.body.block)
        if not self.b.block.is_terminated:
            self.b.ret_void()
        # the shared-memory size travels with the text, so compiling can resume from LLVM IR
        # or PTX (backend.py reads `kernellab.shared = N`); module asm lands in the PTX verbatim
        text = (
            f"; kernellab.shared = {self.smem.total}\n"
            + str(self.mod)
            + f'\nmodule asm "// kernellab.shared = {self.smem.total}"\n'
        )
        metadata = {
            "name": name,
            "num_warps": self.num_warps,
            "threads_per_block": threads,
            "shared": self.smem.total,
            "bar_syncs": self.barriers.count,
        }
        return text, metadata

    def lower_block(self, block: Block) -> None:
        for op in block.ops:
            self.lower_op(op)

    def lower_op(self, op: Operation) -> None:
        fn = REGISTRY.get(type(op))
        if fn is None:
            raise LoweringError(
                f"the NVIDIA lowering has no rule for {op.name}"
                + self._where(op)
            )
        saved = self.current_op
        self.current_op = op
        loc = self._loc_of(op)
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
                f"tensor type {t} has no layout encoding: the NVIDIA lowering takes TTGIR "
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
        if c & lay.dim_part(lay.thread_bits, d) == 0:
            return self.b.or_(t, I32(c))
        return self.b.xor(t, I32(c))

    def flat_index(self, lay: Lay, r: int):
        """i32 row-major flat element index of register r of this thread."""
        c = lay.reg_flat[r]
        t = self.thread_flat(lay)
        if c == 0:
            return t
        if c & lay.thread_bits == 0:
            return self.b.or_(t, I32(c))
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
        mask = lane_mask | (warp_mask << 5)
        if mask == 0:
            return None
        key = ("dup", mask)
        v = self._thread_cache.get(key)
        if v is None:
            v = self.pro.icmp_unsigned("==", self.pro.and_(self.tid, I32(mask)), I32(0))
            self._thread_cache[key] = v
        return v

    # ------------------------------------------------------------------ shared memory

    def _scratch_bytes(self, op) -> int:
        fn = SCRATCH.get(type(op))
        return fn(self, op) if fn else 0

    def _memdesc_bytes(self, t) -> int:
        n = 1
        for s in t.shape:
            n *= s
        return n * mem_bytes(t.element_type)

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

    def smem_access(self, iv: Interval, write: bool) -> None:
        self.barriers.access(iv, write)

    def _emit_barrier(self) -> None:
        self.call("llvm.nvvm.barrier0", VOID, [])

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

    # -------------------------------------------------------------------- debug info

    def _setup_debug(self, func, name: str) -> None:
        loc = func.location
        filename, line = "<kernel>", 1
        first = None
        if isinstance(loc, FileLineColLoc):
            filename, line = loc.filename.data, loc.line.data
        else:
            for op in func.walk():
                if isinstance(op.location, FileLineColLoc):
                    first = op.location
                    break
            if first is not None:
                filename, line = first.filename.data, first.line.data
        self._func_line = line
        m = self.mod
        directory, base = os.path.split(filename)
        di_file = m.add_debug_info("DIFile", {"filename": base or filename, "directory": directory})
        cu = m.add_debug_info(
            "DICompileUnit",
            {
                "language": ir.DIToken("DW_LANG_C"),
                "file": di_file,
                "producer": "kernellab",
                "isOptimized": True,
                "runtimeVersion": 0,
                "emissionKind": ir.DIToken("DebugDirectivesOnly"),
            },
            is_distinct=True,
        )
        sp_type = m.add_debug_info("DISubroutineType", {"types": m.add_metadata([])})
        self._disp = m.add_debug_info(
            "DISubprogram",
            {
                "name": name,
                "scope": di_file,
                "file": di_file,
                "line": line,
                "type": sp_type,
                "scopeLine": line,
                "spFlags": ir.DIToken("DISPFlagDefinition | DISPFlagOptimized"),
                "unit": cu,
            },
            is_distinct=True,
        )
        self._difile = filename
        m.add_named_metadata("llvm.dbg.cu", cu)
        m.add_named_metadata(
            "llvm.module.flags", m.add_metadata([I32(2), "Debug Info Version", I32(3)])
        )
        m.add_named_metadata(
            "llvm.module.flags", m.add_metadata([I32(2), "Dwarf Version", I32(4)])
        )
        self.fn.set_metadata("dbg", self._disp)

    def _diloc(self, line: int, col: int):
        key = (line, col)
        d = self._dilocs.get(key)
        if d is None:
            d = self.mod.add_debug_info("DILocation", {"line": line, "column": col, "scope": self._disp})
            self._dilocs[key] = d
        return d

    def _loc_of(self, op):
        loc = op.location
        if isinstance(loc, FileLineColLoc) and loc.filename.data == self._difile:
            return self._diloc(loc.line.data, loc.column.data + 1)
        return None


def opaque(g: ir.GlobalVariable):
    """An opaque-pointer reference to global `g` (llvmlite keeps globals' pointee types)."""
    return ir.FormattedConstant(ir.PointerType(addrspace=g.addrspace), g.get_reference())


def make_llir(module: ModuleOp, options=None) -> tuple[str, dict]:
    """TTGIR module → (LLVM IR text, metadata with name, num_warps, shared, threads_per_block)."""
    # the rule modules register themselves on import
    from kernellab.backends.nvidia.lowering import (  # noqa: F401
        control, debug, dot, elementwise, memory, reduce, scan, shape,
    )

    return Lowering(module, options).run()
