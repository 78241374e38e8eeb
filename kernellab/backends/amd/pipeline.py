"""The AMD backend's pass pipelines (compile-only), all through the traced pass manager.

ttgir stage, TTIR in, TTGIR with wave64 layouts out:
1. convert_to_ttgpuir        blocked layouts over 64-lane waves, module target "hip:gfx942".
2. coalesce                  memory ops get the layouts whose threads load 16-byte vectors.
3. remove_layout_conversions
4. reduce_data_duplication   dot operands through LDS
5. cse, canonicalize, dce
(tl.dot stays on FMAs: no MFMA layouts in this version.)

amdgcn stage, the lowering's LLVM IR in (under LLVM's lock):
1. llvm-verify     parse, verify                                  (records stage "llir")
2. llvm-O3         AMDGPU's triple and data layout, LLVM's O3     (records stage "llir")
3. amdgcn-codegen  AMDGPU assembly for gfx942/gfx950, wave64      (records stage "amdgcn")
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from xdsl.dialects.builtin import ModuleOp

from kernellab.backends.amd import ARCHS
from kernellab.backends.toolchain import LlvmOptimize, LlvmVerify, binding, llvm_lock
from kernellab.passes import canonicalize, cse, dce
from kernellab.passes.manager import PassManager, PassOutcome, PassRecord
from kernellab.passes.ttgir import coalesce, convert_to_ttgpuir, reduce_data_duplication, remove_layout_conversions

TRIPLE = "amdgcn-amd-amdhsa"


class AmdgcnGenerationError(RuntimeError):
    """LLVM rejected the IR or could not make AMDGPU code for it."""


@functools.cache
def target_machine(arch: str):
    """The llvmlite TargetMachine for `arch` in wave64 mode."""
    return binding().Target.from_triple(TRIPLE).create_target_machine(cpu=arch, features="+wavefrontsize64", opt=3)


@dataclass(frozen=True)
class _ConvertForAmd:
    NAME = convert_to_ttgpuir.NAME
    num_warps: int
    arch: str

    def run(self, module: ModuleOp):
        return convert_to_ttgpuir.run(module, num_warps=self.num_warps, target=f"hip:{self.arch}", threads_per_warp=64)


def make_ttgir(module: ModuleOp, options, trace: bool = True) -> list[PassRecord]:
    passes = [_ConvertForAmd(options.num_warps, options.target), coalesce, remove_layout_conversions,
              reduce_data_duplication, cse, canonicalize, dce]  # fmt: skip
    return PassManager(passes, trace=trace, verify=bool(options.debug)).run(module)


@dataclass
class AmdModule:
    text: str
    arch: str
    module: object = None
    amdgcn: str | None = None

    def print(self) -> str:
        if self.amdgcn is not None:
            return self.amdgcn
        return self.text if self.module is None else str(self.module)


class _EmitAmdgcn:
    NAME = "amdgcn-codegen"
    STAGE = "amdgcn"

    @staticmethod
    def run(m: AmdModule) -> PassOutcome:
        try:
            m.amdgcn = target_machine(m.arch).emit_assembly(m.module)
        except RuntimeError as e:
            raise AmdgcnGenerationError(f"LLVM could not emit AMDGPU code for {m.arch}: {e}") from None
        return PassOutcome(True, f"{len(m.amdgcn.splitlines())} AMDGPU assembly lines for {m.arch}")


LLVM_PASSES = [LlvmVerify(AmdgcnGenerationError), LlvmOptimize(lambda m: target_machine(m.arch)), _EmitAmdgcn()]


def make_amdgcn(llir: str, arch: str, trace: bool = True) -> tuple[str, list[PassRecord]]:
    artifact = AmdModule(llir, arch)
    manager = PassManager(LLVM_PASSES, trace=trace, printer=AmdModule.print, verifier=None)
    with llvm_lock:
        records = manager.run(artifact, text_before=llir)
    return artifact.amdgcn, records


__all__ = ["make_ttgir", "make_amdgcn", "target_machine", "AmdgcnGenerationError", "ARCHS", "TRIPLE"]
