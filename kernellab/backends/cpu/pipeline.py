"""The CPU backend's pass pipelines: which passes run in which order, all through the traced
pass manager.

ttgir stage, TTIR in, TTGIR with the CPU layout out:
1. convert_to_ttgpuir        warps of one thread: a kernel whose ops never exchange data
                             between threads but in reductions and scans at its top level (decided on
                             its TTIR ops) gets a warp per 64 elements, in runs along the last
                             dim (the grid loop runs them one after another, in phases between
                             the barriers of their exchanges: lowering/phases.py),
                             any other one warp holding every tensor whole (no lanes, no
                             warps); so does one whose passes leave a layout conversion in a
                             loop or branch (the passes run again with one warp).
2. coalesce                  (one warp) memory ops get the layouts whose registers run along
                             the most contiguous dim, so loads and stores become vector
                             instructions; with several warps each already holds a chunk.
3. remove_layout_conversions computations move into the memory ops' layouts.
4. loop_pointer_offsets      a tile of pointers a loop advances uniformly (`a_ptrs += BK`)
                             is carried as one scalar offset: the loop no longer adds to and
                             keeps live every pointer of the tile (a 16x32 fp32 matmul spent
                             more instructions on its pointer tiles than on its FMAs).
5. bitonic_columns          (one warp) the compare-exchange columns of tl.sort's and tl.topk's
                             networks become cpu.bitonic_columns ops, which the lowering runs as
                             loops over vector registers (as tensor-wide shuffles, LLVM's x86
                             code generator took over two minutes on a 2048-element sort).
6. cse, canonicalize, dce    as on the GPU.
(no accelerate_matmul: tl.dot is register-tiled vector FMAs; no reduce_data_duplication: with
one thread nothing is duplicated and no operand goes through shared memory.)

obj stage, the lowering's LLVM IR in (one llvmlite module, under LLVM's lock):
1. llvm-verify     parse, verify                                  (records stage "llir")
2. llvm-O3         the host's triple and data layout, LLVM's O3   (records stage "llir")
3. host-object     the host's object code, which the launcher     (records stage "obj")
                   loads into MCJIT (and the disk cache keeps)
asm (x86-64 or AArch64 assembly with `.loc` lines) is made from the llir on first access of
asm["asm"]: verify, O3 and host-codegen again, so a compile and a launch run the code generator
once.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.dialects.builtin import ModuleOp, TensorType

from kernellab.backends.cpu import TARGET
from kernellab.backends.cpu.host import host_machine
from kernellab.backends.toolchain import LlvmOptimize, LlvmVerify, llvm_lock
from kernellab.passes import canonicalize, cse, dce
from kernellab.passes.manager import PassManager, PassOutcome, PassRecord
from kernellab.passes.ttgir import (
    bitonic_columns,
    coalesce,
    convert_to_ttgpuir,
    loop_pointer_offsets,
    remove_layout_conversions,
)


class CpuCodegenError(RuntimeError):
    """LLVM rejected the IR or could not make code for the host."""


@dataclass(frozen=True)
class _ConvertForCpu:
    NAME = convert_to_ttgpuir.NAME
    num_warps: int = 1

    def run(self, module: ModuleOp):
        return convert_to_ttgpuir.run(module, num_warps=self.num_warps, target=TARGET, threads_per_warp=1,
                                      elements_per_thread=ELEMENTS_PER_WARP if self.num_warps > 1 else 1)  # fmt: skip


def ttgir_passes(num_warps: int = 1) -> list:
    tidy = [cse, canonicalize, dce]
    if num_warps > 1:  # the default layout already gives each warp a contiguous chunk
        return [_ConvertForCpu(num_warps), remove_layout_conversions, loop_pointer_offsets, *tidy]
    return [_ConvertForCpu(num_warps), coalesce, remove_layout_conversions, loop_pointer_offsets, bitonic_columns, *tidy]


TTGIR_PASSES = ttgir_passes()

# Ops whose lowering never moves data between the threads of a program: a kernel made of
# these alone (and reductions and scans at its top level) may split its tensors over several warps,
# which the grid loop runs one after another (grid.py), each holding a slice the host's vector
# registers can keep.
_WARP_LOCAL = {
    "builtin.module", "tt.func", "tt.return", "tt.get_program_id", "tt.get_num_programs",
    "tt.make_range", "tt.splat", "tt.broadcast", "tt.expand_dims", "tt.addptr", "tt.load",
    "tt.store", "tt.bitcast", "tt.fp_to_fp", "tt.int_to_ptr", "tt.ptr_to_int", "tt.precise_sqrt",
    "tt.precise_divf", "tt.mulhiui", "tt.clampf", "tt.assume", "scf.for", "scf.if", "scf.yield",
    "scf.while", "scf.condition",
}  # fmt: skip
ELEMENTS_PER_WARP = 64
"""Elements of a tensor each warp holds when a program runs as a loop of warps: 64 fp32 are
four AVX-512 registers. One warp holding a 1024-element block spills, and ran vector add at
a third of numpy's speed."""
MAX_WARPS = 64


def _warp_local(module: ModuleOp) -> bool:
    """Whether every op is warp-local, a reduction at the kernel's top level or a scan there
    along the last dim: their exchange among warps ends a phase of the program
    (lowering/phases.py), which one inside a loop or branch could not. A scan along another
    dim keeps one warp: the warps would split it a row each, so the exchange would carry the
    whole scan (each warp loading every warp's row of totals: 30x slower on a 64x64 tile than
    one warp adding its rows as vectors)."""
    for op in module.walk():
        name = op.name
        if name.startswith(("arith.", "math.")) or name in _WARP_LOCAL:
            continue
        top = op.parent_op().name == "tt.func"
        if (name == "tt.reduce" and top) or (name == "tt.scan" and top and _along_last_dim(op)):
            continue
        if name in ("tt.reduce.return", "tt.scan.return"):
            continue
        return False
    return True


def _along_last_dim(scan) -> bool:
    return scan.axis.value.data == len(scan.srcs[0].type.get_shape()) - 1


# What a tensor of lower rank than the kernel's tiles may come from when the tiles are split
# over warps: values each warp can compute for its own part (from scalars and tl.arange), which
# remove_layout_conversions rematerializes in the layout a broadcast needs.
_RECOMPUTABLE = {"tt.make_range", "tt.splat", "tt.expand_dims", "tt.addptr"}


def _lower_ranks_recomputable(module: ModuleOp, rank: int) -> bool:
    """Whether every tensor of rank below `rank` is computed from scalars and ranges only, or
    by a reduction (whose exchange leaves each warp the outputs its part of the tile needs). A
    loaded row, or one carried by a loop, broadcast across a tile split by rows would have to
    reach every warp: an exchange the passes would put where the row is used, maybe in a loop."""
    for op in module.walk():
        lower = [v for v in (*op.results, *(a for r in op.regions for b in r.blocks for a in b.args))
                 if isinstance(v.type, TensorType) and len(v.type.get_shape()) < rank]  # fmt: skip
        if not lower or op.name == "tt.reduce":
            continue
        if op.regions or not (op.name.startswith(("arith.", "math.")) or op.name in _RECOMPUTABLE):
            return False
    return True


def _warps_for(module: ModuleOp) -> int:
    """How many warps a program gets: 1, or for a kernel whose ops never exchange data between
    threads but in reductions and scans at its top level, enough that each holds about
    ELEMENTS_PER_WARP elements of its largest tensor (runs of up to that many along the last
    dim; a 2-D tile's rows are split among the warps, and a row or column operand is held
    whole by each warp that reads it, as broadcasting needs no exchange)."""
    if not _warp_local(module):
        return 1
    widest, rank = 1, 0
    for op in module.walk():
        for t in op.result_types:
            if isinstance(t, TensorType):
                widest = max(widest, math.prod(t.get_shape()))
                rank = max(rank, len(t.get_shape()))
    if rank > 1 and not _lower_ranks_recomputable(module, rank):
        return 1
    warps = 1
    while warps * 2 <= MAX_WARPS and widest // (warps * 2) >= ELEMENTS_PER_WARP:
        warps *= 2
    return warps


def _exchanges_at_top_level(module: ModuleOp) -> bool:
    """Whether every layout conversion (the exchange the passes may add, for a reduction's
    result that meets a tensor of another layout) is at the kernel's top level, where warps
    run in phases (lowering/phases.py)."""
    return all(op.parent_op().name == "tt.func" for op in module.walk() if op.name == "ttg.convert_layout")


def make_ttgir(module: ModuleOp, options=None, trace: bool = True) -> list[PassRecord]:
    """Run the CPU TTGIR passes on `module` (TTIR) in place: with the warps `_warps_for` gives,
    or one warp when those would have to exchange data inside a loop or branch."""
    verify = bool(getattr(options, "debug", False))
    warps = _warps_for(module)
    ttir = module.clone() if warps > 1 else None
    records = PassManager(ttgir_passes(warps), trace=trace, verify=verify).run(module)
    if ttir is None or _exchanges_at_top_level(module):
        return records
    records = PassManager(ttgir_passes(1), trace=trace, verify=verify).run(ttir)
    block = module.body.block
    for op in list(block.ops):
        op.detach()
        op.erase(safe_erase=False)
    for op in list(ttir.body.block.ops):
        op.detach()
        block.add_op(op)
    module.attributes = dict(ttir.attributes)
    return records


@dataclass
class HostModule:
    """What the LLVM passes work on: the IR text, then the parsed module, then assembly and
    object code."""

    text: str
    module: object = None
    asm: str | None = None
    obj: bytes | None = None

    def print(self) -> str:
        if self.asm is not None:
            return self.asm
        return self.text if self.module is None else str(self.module)


class _EmitAssembly:
    NAME = "host-codegen"
    STAGE = "asm"

    @staticmethod
    def run(m: HostModule) -> PassOutcome:
        m.asm = host_machine().emit_assembly(m.module)
        return PassOutcome(True, f"{len(m.asm.splitlines())} assembly lines for {host_machine().triple}")


class _EmitObject:
    NAME = "host-object"
    STAGE = "obj"

    @staticmethod
    def run(m: HostModule) -> PassOutcome:
        m.obj = host_machine().emit_object(m.module)
        return PassOutcome(True, f"{len(m.obj)} bytes of object code")


_VERIFY = LlvmVerify(CpuCodegenError)
_OPTIMIZE = LlvmOptimize(lambda m: host_machine())
LLVM_PASSES = [_VERIFY, _OPTIMIZE, _EmitObject()]


def make_object(llir: str, trace: bool = True) -> tuple[HostModule, list[PassRecord]]:
    """Optimize `llir` for the host and make its object code (what the launcher loads)."""
    artifact = HostModule(llir)
    manager = PassManager(LLVM_PASSES, trace=trace, printer=HostModule.print, verifier=None)
    with llvm_lock:
        records = manager.run(artifact, text_before=llir)
    return artifact, records


def host_assembly(llir: str) -> str:
    """The host assembly of `llir`, optimized as the obj stage does (with `.loc` lines that map
    it to the source)."""
    artifact = HostModule(llir)
    with llvm_lock:
        for p in (_VERIFY, _OPTIMIZE, _EmitAssembly()):
            p.run(artifact)
    return artifact.asm


__all__ = ["make_ttgir", "make_object", "host_assembly", "HostModule", "CpuCodegenError", "TTGIR_PASSES", "TARGET"]
