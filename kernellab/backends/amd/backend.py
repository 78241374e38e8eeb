"""The AMD backend (compile-only): options, the stage dict {ttir, ttgir, llir, amdgcn}.

    ttir    the TTIR pipeline (shared with the interpreter)
    ttgir   pipeline.make_ttgir: wave64 blocked layouts
    llir    lowering.make_llir: the shared lowering core with the AMD target
    amdgcn  pipeline.make_amdgcn: LLVM O3 and AMDGPU code generation for gfx942 / gfx950

No AMD GPU runtime is here: a launch says so. The assembly is LLVM's own, so it is valid code
for the architecture.
"""

from __future__ import annotations

from dataclasses import dataclass

from kernellab.backends.amd import ARCHS, is_amd_target
from kernellab.backends.base import Backend, StageOutput, _parse_ir, _ttir_stage, module_stage_output
from kernellab.backends.options import CompileOptions


@dataclass(frozen=True)
class AmdOptions(CompileOptions):
    target: str = "gfx942"

    def __post_init__(self):
        super().__post_init__()
        if self.target not in ARCHS:
            raise ValueError(f"unknown AMD target {self.target!r}; use {' or '.join(map(repr, ARCHS))}")
        w = self.num_warps
        if not isinstance(w, int) or w < 1 or w > 16 or w & (w - 1):
            raise ValueError(f"num_warps must be a power of two from 1 to 16 (64-lane waves, at most 1024 threads), got {w!r}")
        if self.num_ctas != 1:
            raise ValueError("num_ctas > 1 is not supported on AMD targets; use num_ctas=1")


@dataclass
class AmdArtifact:
    name: str
    llir: str = ""
    amdgcn: str = ""
    metadata: dict | None = None


def _ttgir_stage(module, options) -> StageOutput:
    from kernellab.backends.amd.pipeline import make_ttgir

    return module_stage_output(module, make_ttgir(module, options))


# LDS (shared memory) a workgroup may use: LLVM's AMDGPU backend aborts the process past it
LDS_BYTES = {"gfx942": 65536, "gfx950": 163840}


def _llir_stage(module, options) -> StageOutput:
    from kernellab.backends.amd.lowering import make_llir
    from kernellab.backends.llvm.errors import LoweringError

    llvm_ir, facts = make_llir(module, options)
    limit = LDS_BYTES.get(options.target)
    if limit is not None and facts["shared"] > limit:
        raise LoweringError(
            f"{facts['name']} needs {facts['shared']} bytes of LDS (shared memory); {options.target} "
            f"has {limit} per workgroup. Reduce the BLOCK sizes or num_stages."
        )
    return StageOutput(AmdArtifact(facts["name"], llir=llvm_ir, metadata=facts), llvm_ir, [], metadata=dict(facts))


def _amdgcn_stage(art: AmdArtifact, options) -> StageOutput:
    from kernellab.backends.amd.pipeline import make_amdgcn

    text, passes = make_amdgcn(art.llir, options.target)
    return StageOutput(AmdArtifact(art.name, art.llir, text, art.metadata), text, passes)


def _launcher(artifact):
    raise RuntimeError(
        f"kernel '{artifact.name}' was compiled for an AMD GPU, which kernellab can compile for but "
        "not run; launch with target='cpu' or on the interpreter, or read its asm['amdgcn']"
    )


AMD = Backend(
    name="amd",
    stages=lambda: {"ttir": _ttir_stage, "ttgir": _ttgir_stage, "llir": _llir_stage, "amdgcn": _amdgcn_stage},
    parsers={"ttir": _parse_ir, "ttgir": _parse_ir},
    launcher=_launcher,
    make_options=lambda target, **fields: AmdOptions(target=target, **fields),
    stage_markers={"ttir": r"\btt\.func\b", "ttgir": r"\bttg\.|#ttg\."},
)

__all__ = ["AMD", "AmdOptions", "is_amd_target", "ARCHS"]
