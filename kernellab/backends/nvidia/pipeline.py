"""The NVIDIA backend's pass pipelines (Triton's per-backend `add_stages`): which passes run in
which order. The passes themselves are a library (kernellab.passes, kernellab.passes.ttgir,
ptx.py for LLVM's); every pipeline runs through the traced pass manager.

ttgir stage, TTIR in, TTGIR with every layout chosen out:
1. convert_to_ttgpuir        default layouts and module attributes (num_warps, target).
2. coalesce                   memory ops get the layouts that vectorize and coalesce (AxisInfo).
3. accelerate_matmul          dots with a tensor-core form get MMA v3 (wgmma, on sm_90a) or
                              MMA v2 layouts (mma.sync).
4. remove_layout_conversions  computations move into the memory ops' layouts.
5. reduce_data_duplication    conversions into dot-operand layouts go through shared memory.
6. pipeline                   loops over dot operands (and loops asking with tl.range's
                              num_stages) load the next num_stages-1 iterations' tiles with
                              cp.async into rings of shared buffers while this one computes
                              (fewer stages where the rings would not fit the target).
7. tma                        on sm_90a, the tensor-descriptor accesses the TTIR stage kept
                              become TMA copies completed through mbarriers (passes/ttgir/tma.py).
8. fence_insertion          `ttng.fence_async_shared` after the threads' own writes of a
                              buffer a warp-group dot reads (the async proxy's view).
9. cse, canonicalize, dce     the TTIR clean-ups, which treat layouts as part of the type:
                              rematerialization can leave duplicate index math, and folding
                              keeps each constant's layout.

ptx stage, the lowering's LLVM IR in, PTX out (one llvmlite module, under LLVM's lock):
1. llvm-verify     parse, verify                                      (records stage "llir")
2. link-extern-libs  libdevice's bitcode linked where the kernel calls its __nv_* functions
                   (extern_libs), the functions not called dropped    (records stage "llir")
3. llvm-O3         NVPTX triple and data layout, LLVM's O3 pipeline   (records stage "llir")
4. nvptx-codegen   PTX for the target sm_XX                           (records stage "ptx")
5. ptxas-workarounds  PTX patterns some ptxas versions miscompile, spelled another way
                      (ptxas_workarounds.py)                          (records stage "ptx")
6. occupancy       a warp-group kernel whose registers just miss one more program per SM
                   gets `.maxnreg` at that step if ptxas fits it without spills
                   (occupancy.py; its trial cubin is the cubin stage's) (records stage "ptx")

cubin stage, PTX in, cubin out:
1. ptxas           through nvJitLink; the record's IR is ptxas' resource log
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects.builtin import ModuleOp

from kernellab.backends.nvidia.cubin import PTXAS, PtxAssembly
from kernellab.backends.nvidia.interruptible import run_interruptibly
from kernellab.backends.nvidia.limits import DEVICE_LIMITS
from kernellab.backends.extern_libs import linked
from kernellab.backends.nvidia.ptx import (
    EMIT_PTX,
    EXTERN_LIBS,
    LINK_EXTERN_LIBS,
    OPTIMIZE_O3,
    VERIFY,
    LlvmModule,
    llvm_lock,
    options_arch,
)
from kernellab.backends.nvidia.occupancy import OCCUPANCY
from kernellab.backends.nvidia.ptxas_workarounds import PTXAS_WORKAROUNDS
from kernellab.passes import canonicalize, cse, dce
from kernellab.passes.manager import PassManager, PassRecord
from kernellab.passes.ttgir import (
    accelerate_matmul,
    coalesce,
    convert_to_ttgpuir,
    fence_insertion,
    pipeline_loops,
    reduce_data_duplication,
    remove_layout_conversions,
    tma,
)


@dataclass(frozen=True)
class _Configured:
    """A pass that takes options, bound to them: what PassManager runs (NAME + run(module))."""

    NAME: str
    fn: object
    options: dict

    def run(self, module: ModuleOp):
        return self.fn(module, **self.options)


TTGIR_PASSES = [
    convert_to_ttgpuir,
    coalesce,
    accelerate_matmul,
    remove_layout_conversions,
    reduce_data_duplication,
    pipeline_loops,
    tma,
    fence_insertion,
    cse,
    canonicalize,
    dce,
]

LLVM_PASSES = [VERIFY, LINK_EXTERN_LIBS, OPTIMIZE_O3, EMIT_PTX, PTXAS_WORKAROUNDS]
PTX_PASSES = [OCCUPANCY]
CUBIN_PASSES = [PTXAS]


def _option(options, name: str, default):
    if isinstance(options, dict):
        return options.get(name, default)
    return getattr(options, name, default)


def make_ttgir(module: ModuleOp, options=None, trace: bool = True) -> list[PassRecord]:
    """Run the TTGIR passes on `module` (TTIR) in place; options: target ("sm_80" | "sm_90"),
    num_warps, num_ctas, num_stages, debug (verify after each pass)."""
    convert = _Configured(
        convert_to_ttgpuir.NAME,
        convert_to_ttgpuir.run,
        {
            "num_warps": _option(options, "num_warps", 4),
            "target": _option(options, "target", "sm_90"),
            "num_ctas": _option(options, "num_ctas", 1),
        },
    )
    limits = DEVICE_LIMITS.get(_option(options, "target", "sm_90"))
    pipeline = _Configured(
        pipeline_loops.NAME,
        pipeline_loops.run,
        {
            "num_stages": _option(options, "num_stages", 3),
            "shared_limit": limits["max_shared_per_block"] if limits else None,
            "ring_mbarriers": bool(_option(options, "ring_mbarriers", True)),
            "sm": pipeline_loops.SmBudget(limits["shared_per_sm"], limits["shared_reserved_per_block"],
                                          limits["registers_per_sm"]) if limits else None,  # fmt: skip
        },
    )
    accelerate = _Configured(
        accelerate_matmul.NAME,
        accelerate_matmul.run,
        {"wgmma": _option(options, "target", "sm_90") == "sm_90a"},
    )
    tma_copies = _Configured(
        tma.NAME, tma.run, {"shared_limit": limits["max_shared_per_block"] if limits else None}
    )
    configured = {convert_to_ttgpuir: convert, accelerate_matmul: accelerate, pipeline_loops: pipeline,
                  tma: tma_copies}  # fmt: skip
    passes = [configured.get(p, p) for p in TTGIR_PASSES]
    verify = bool(_option(options, "debug", False))
    return PassManager(passes, trace=trace, verify=verify).run(module)


def make_ptx(llir: str, options=None, trace: bool = True, dynamic_shared: int = 0) -> tuple[str, list[PassRecord]]:
    """PTX for the LLVM IR text `llir`, optimized at O3, for `options.target` (default sm_90),
    and the passes' records. The IR's triple and data layout are replaced by NVPTX's;
    LLVM errors become PTXGenerationError (wrapped in the PassError that names the pass).
    `options.extern_libs` names the libraries to link (those whose file exists);
    `dynamic_shared` (the lowering's shared bytes) is what the occupancy pass counts."""
    libraries = linked(_option(options, "extern_libs", None), EXTERN_LIBS)
    artifact = LlvmModule(llir, options_arch(options), extern_libs=libraries, options=options,
                          dynamic_shared=dynamic_shared)  # fmt: skip
    manager = PassManager(LLVM_PASSES, trace=trace, printer=LlvmModule.print, verifier=None)

    def run():
        with llvm_lock:
            return manager.run(artifact, text_before=llir)

    records = run_interruptibly(run)
    # ptxas runs outside LLVM's lock
    after_llvm = PassManager(PTX_PASSES, trace=trace, printer=LlvmModule.print, verifier=None)
    records += run_interruptibly(lambda: after_llvm.run(artifact, text_before=artifact.ptx))
    return artifact.ptx, records


def make_cubin(assembly: PtxAssembly, trace: bool = True) -> list[PassRecord]:
    """Assemble `assembly.ptx` into `assembly.cubin` (ptxas through nvJitLink) and record it."""
    manager = PassManager(CUBIN_PASSES, trace=trace, printer=PtxAssembly.print, verifier=None)
    return manager.run(assembly, text_before="")
