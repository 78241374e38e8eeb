"""The CPU backend: options, the stage dict {ttir, ttgir, llir, obj} and asm, parsers, launcher.

    ttir   the TTIR pipeline (shared with the interpreter)
    ttgir  pipeline.make_ttgir: the CPU layout (warps of one thread: chunks, or whole tensors)
    llir   kernellab.backends.cpu.lowering.make_llir: the shared lowering core with the CPU target
    obj    pipeline.make_object: LLVM verify, O3 for the host CPU, the object code the launcher
           loads into llvmlite's MCJIT
    asm    the host's assembly (x86-64, AArch64), made on first access of asm["asm"] (LLVM's
           code generator then runs again: a launch needs only the object code)

Compiles go through the disk cache like GPU ones (the object code is what a hit loads). The
launcher runs the grid's programs in parallel on a thread pool (launcher.py).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from kernellab.backends.cpu import TARGET, is_cpu_target
from kernellab.backends.base import Backend, StageOutput, _parse_ir, _ttir_stage, module_stage_output
from kernellab.backends.metadata import KernelMetadata
from kernellab.backends.options import CompileOptions


@dataclass(frozen=True)
class CpuOptions(CompileOptions):
    """The shared options; `num_warps`, `num_stages`, `maxnreg` are recorded but change nothing
    on the CPU (a program is one thread). `debug=True` bounds-checks every access."""

    target: str = TARGET

    def __post_init__(self):
        super().__post_init__()
        if self.num_ctas != 1:
            raise ValueError("num_ctas > 1 (thread block clusters) has no CPU meaning; use num_ctas=1")


@dataclass
class CpuArtifact:
    """What the stages after TTGIR hand on: LLVM IR, object code, launch facts."""

    name: str
    llir: str = ""
    obj: bytes = b""
    metadata: Mapping = field(default_factory=dict)


def make_options(target: str, **fields) -> CpuOptions:
    return CpuOptions(target=TARGET, **fields)


def _ttgir_stage(module, options) -> StageOutput:
    from kernellab.backends.cpu.pipeline import make_ttgir

    return module_stage_output(module, make_ttgir(module, options))


def _llir_stage(module, options) -> StageOutput:
    from kernellab.backends.cpu.host import host_description
    from kernellab.backends.cpu.lowering import make_llir

    llvm_ir, facts = make_llir(module, options)
    facts = {**facts, "host": host_description()}  # "host" lands in metadata.extra
    return StageOutput(CpuArtifact(facts["name"], llir=llvm_ir, metadata=facts), llvm_ir, [], metadata=dict(facts))


def _obj_stage(art: CpuArtifact, options) -> StageOutput:
    from kernellab.backends.cpu.pipeline import make_object

    host, passes = make_object(art.llir)
    return StageOutput(replace(art, obj=host.obj), host.obj, passes)


def _lazy_asm(llir: str) -> str:
    from kernellab.backends.cpu.pipeline import host_assembly

    return host_assembly(llir)


def stages() -> dict:
    return {"ttir": _ttir_stage, "ttgir": _ttgir_stage, "llir": _llir_stage, "obj": _obj_stage}


_LLVM_DEFINE = re.compile(r"define\s+(?:[\w()]+\s+)*?void\s+@\"?([\w.$]+)_grid\"?\s*\(")


def _parse_llir(text: str) -> CpuArtifact:
    """LLVM IR text (as the llir stage wrote it, maybe edited) → artifact: the kernel is the
    one whose `<name>_grid` loop the launcher calls, its scratch what `<name>.scratch_bytes`
    says (lowering/__init__.py writes it)."""
    m = _LLVM_DEFINE.search(text)
    if not m:
        raise ValueError("no grid function (`define void @<kernel>_grid(...)`) in the LLVM IR: "
                         "resume a CPU compile from the llir stage's text")  # fmt: skip
    scratch = re.search(rf'@"{re.escape(m.group(1))}.scratch_bytes" = internal constant i64 (\d+)', text)
    shared = int(scratch.group(1)) if scratch else 0
    return CpuArtifact(m.group(1), llir=text, metadata={"name": m.group(1), "shared": shared})


def restore(asm: Mapping, metadata: KernelMetadata) -> CpuArtifact:
    return CpuArtifact(metadata.name, llir=asm.get("llir") or "", obj=asm["obj"], metadata=metadata)


def _launcher(artifact):
    from kernellab.backends.cpu.launcher import CpuLauncher

    return CpuLauncher(artifact)


CPU = Backend(
    name="cpu",
    stages=stages,
    parsers={"ttir": _parse_ir, "ttgir": _parse_ir, "llir": _parse_llir},
    launcher=_launcher,
    make_options=make_options,
    resolve_target=lambda name: TARGET,
    lazy_asm={"asm": ("llir", _lazy_asm)},
    disk_cache=True,
    restore=restore,
    launch_stages=("obj",),
    stage_markers={"ttir": r"\btt\.func\b", "ttgir": r"\bttg\.|#ttg\.", "llir": r"^\s*define\s"},
)

__all__ = ["CPU", "CpuOptions", "CpuArtifact", "is_cpu_target", "stages"]
