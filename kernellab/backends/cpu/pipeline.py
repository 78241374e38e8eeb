"""The CPU backend's pass pipelines: which passes run in which order, all through the traced
pass manager.

ttgir stage, TTIR in, TTGIR with the CPU layout out:
1. convert_to_ttgpuir        one warp of one thread per program: every tensor is held whole
                             by that thread (blocked layouts with no lanes and no warps).
2. coalesce                  memory ops get the layouts whose registers run along the most
                             contiguous dim, so loads and stores become vector instructions.
3. remove_layout_conversions computations move into the memory ops' layouts.
4. cse, canonicalize, dce    as on the GPU.
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

from dataclasses import dataclass

from xdsl.dialects.builtin import ModuleOp

from kernellab.backends.cpu.host import host_machine
from kernellab.backends.toolchain import LlvmOptimize, LlvmVerify, llvm_lock
from kernellab.passes import canonicalize, cse, dce
from kernellab.passes.manager import PassManager, PassOutcome, PassRecord
from kernellab.passes.ttgir import coalesce, convert_to_ttgpuir, remove_layout_conversions

TARGET = "cpu"


class CpuCodegenError(RuntimeError):
    """LLVM rejected the IR or could not make code for the host."""


@dataclass(frozen=True)
class _ConvertForCpu:
    NAME = convert_to_ttgpuir.NAME

    def run(self, module: ModuleOp):
        return convert_to_ttgpuir.run(module, num_warps=1, target=TARGET, threads_per_warp=1)


TTGIR_PASSES = [_ConvertForCpu(), coalesce, remove_layout_conversions, cse, canonicalize, dce]


def make_ttgir(module: ModuleOp, options=None, trace: bool = True) -> list[PassRecord]:
    """Run the CPU TTGIR passes on `module` (TTIR) in place."""
    verify = bool(getattr(options, "debug", False))
    return PassManager(TTGIR_PASSES, trace=trace, verify=verify).run(module)


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
