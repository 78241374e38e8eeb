"""The NVIDIA backend: options, the stage dict {ttir, ttgir, llir, ptx, cubin}, parsers, launcher.

    ttir   the TTIR pipeline (shared with the interpreter)
    ttgir  kernellab.passes.ttgir.pipeline.make_ttgir: layouts, coalescing, ...
    llir   kernellab.backends.nvidia.lowering.make_llir: LLVM IR text + metadata (shared bytes)
    ptx    ptx.make_ptx: LLVM O3 + NVPTX code generation (llvmlite)
    cubin  cubin.make_cubin: ptxas through nvJitLink, with the resource report

Every stage runs without a GPU. After `llir` the artifact is a `CudaArtifact` that accumulates
the LLVM IR, PTX and cubin plus what the launcher needs (kernel name, parameter types, dynamic
shared memory, threads per block). SASS is made on demand (`asm["sass"]`) because nvdisasm takes
a few hundred milliseconds.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field, replace

from kernellab.backends import Backend, StageOutput, _parse_ir, _ttir_stage, module_stage_output
from kernellab.backends.nvidia.ptx import (
    entry_points,
    max_threads_directive,
    parse_arch,
    ptx_version,
)

DEFAULT_ARCH = "sm_90"


@dataclass(frozen=True)
class NvidiaOptions:
    """Compile options of the NVIDIA backend (frozen: part of the cache key)."""

    target: str = DEFAULT_ARCH  # "sm_80", "sm_90", "sm_90a", ...
    num_warps: int = 4
    num_stages: int = 3
    num_ctas: int = 1
    maxnreg: int | None = None
    debug: bool = False

    def __post_init__(self):
        parse_arch(self.target)
        w = self.num_warps
        if not isinstance(w, int) or w < 1 or w > 32 or w & (w - 1):
            raise ValueError(f"num_warps must be a power of two from 1 to 32 (at most 1024 threads), got {w!r}")
        if not isinstance(self.num_stages, int) or self.num_stages < 1:
            raise ValueError(f"num_stages must be a positive int, got {self.num_stages!r}")
        if self.num_ctas != 1:
            raise ValueError("num_ctas > 1 (thread block clusters) is not supported yet; use num_ctas=1")
        if self.maxnreg is not None and not 16 <= int(self.maxnreg) <= 255:
            raise ValueError(f"maxnreg must be between 16 and 255, got {self.maxnreg!r}")

    @property
    def capability(self) -> int:
        return parse_arch(self.target)[0]

    @property
    def threads_per_block(self) -> int:
        return self.num_warps * 32


@dataclass
class CudaArtifact:
    """What the stages after TTGIR hand on: LLVM IR, PTX, cubin and the launch facts."""

    name: str
    llir: str = ""
    ptx: str = ""
    cubin: bytes = b""
    metadata: dict = field(default_factory=dict)

    @property
    def params(self) -> list[str]:
        return self.metadata.get("params", [])


# -- target names ----------------------------------------------------------------------------

GENERIC_TARGETS = ("cuda", "nvidia")


def resolve_target(target: str) -> str:
    """'cuda'/'nvidia' → the visible GPU's 'sm_XY' (sm_90 without a GPU); 'sm_XY' as is."""
    if target in GENERIC_TARGETS:
        from kernellab.backends.nvidia import driver

        return driver.visible_arch() or DEFAULT_ARCH
    return parse_arch(target)[1]


def is_nvidia_target(target) -> bool:
    if not isinstance(target, str):
        return False
    if target in GENERIC_TARGETS:
        return True
    try:
        parse_arch(target)
        return True
    except ValueError:
        return False


def make_options(target: str, **fields) -> NvidiaOptions:
    return NvidiaOptions(target=target, **fields)


# -- stages ----------------------------------------------------------------------------------


def _ttgir_stage(module, options) -> StageOutput:
    from kernellab.passes.ttgir.pipeline import make_ttgir

    return module_stage_output(module, make_ttgir(module, options))


# metadata keys the lowering may use for the dynamic shared memory it needs
_SHARED_KEYS = ("shared", "shared_bytes", "shared_memory", "smem")


def _llir_stage(module, options) -> StageOutput:
    from kernellab.backends.nvidia.lowering import make_llir

    text, metadata = make_llir(module, options)  # name, num_warps, threads_per_block, shared, bar_syncs
    return StageOutput(CudaArtifact(metadata["name"], llir=text, metadata=metadata), text, [], metadata=dict(metadata))


def _record(name: str, ir_after: str, seconds: float, summary: str = ""):
    from kernellab.passes.manager import PassRecord

    return PassRecord(name, ir_after, seconds, True, summary)


def _ptx_stage(art: CudaArtifact, options) -> StageOutput:
    from kernellab.backends.nvidia.ptx import make_ptx

    start = time.perf_counter()
    ptx = make_ptx(art.llir, options)
    seconds = time.perf_counter() - start
    entries = entry_points(ptx)
    name = art.name if art.name in entries else next(iter(entries), art.name)
    if name not in entries:
        raise ValueError(f"the PTX has no kernel entry point (expected .entry {art.name})")
    md = {
        "name": name,
        "params": entries[name],
        "ptx_version": "{}.{}".format(*ptx_version()),
        "target": options.target,
    }
    art = replace(art, name=name, ptx=ptx, metadata={**art.metadata, **md})
    passes = [_record("llvm-O3+nvptx", ptx, seconds, f"{len(ptx.splitlines())} PTX lines")]
    return StageOutput(art, ptx, passes, metadata=md)


def _cubin_stage(art: CudaArtifact, options) -> StageOutput:
    from kernellab.backends.nvidia.cubin import make_cubin
    from kernellab.backends.nvidia.sass import sass_status

    start = time.perf_counter()
    cubin, res = make_cubin(art.ptx, options, name=art.name)
    seconds = time.perf_counter() - start
    log = res.pop("log", "")
    md = dict(res)
    md["spills"] = res["spill_stores"] + res["spill_loads"]
    md["shared_total"] = art.metadata.get("shared", 0) + res["static_shared"]
    md["sass"] = sass_status()
    threads = art.metadata.get("threads_per_block", options.threads_per_block)
    summary = (
        f"{res['registers']} registers, {md['spills']} bytes spilled, "
        f"{md['shared_total']} bytes shared, {threads} threads"
    )
    art = replace(art, cubin=cubin, metadata={**art.metadata, **md})
    return StageOutput(art, cubin, [_record("ptxas", log, seconds, summary)], metadata=md)


def prepare_toolchain(options) -> None:
    """Get nvJitLink ready ahead of the cubin stage: `kl.compile` calls this when it is about to
    compile (not on a cache hit). nvJitLink's one-time initialization (hundreds of milliseconds
    on a GPU machine) then runs in a background thread without the GIL while the frontend and
    the IR stages run (cubin.start_warm_up)."""
    from kernellab.backends.nvidia import cubin

    cubin.start_warm_up(getattr(options, "target", None) or DEFAULT_ARCH)


def stages() -> dict:
    return {"ttir": _ttir_stage, "ttgir": _ttgir_stage, "llir": _llir_stage, "ptx": _ptx_stage, "cubin": _cubin_stage}


# -- resuming from text ----------------------------------------------------------------------

_LLVM_DEFINE = r"define\s+(?:[\w()]+\s+)*?void\s+@\"?([\w.$]+)\"?\s*\("


def _parse_llir(text: str) -> CudaArtifact:
    """LLVM IR text → artifact. The kernel is the `ptx_kernel` function (else the first defined
    void function); threads per block come from `"nvvm.maxntid"`/`!nvvm.annotations` if present."""
    kernel = re.search(r"define\s+(?:[\w()]+\s+)*?ptx_kernel\s+void\s+@\"?([\w.$]+)\"?", text)
    m = kernel or re.search(_LLVM_DEFINE, text)
    if not m:
        raise ValueError("no kernel function (`define ptx_kernel void @name(...)`) in the LLVM IR")
    md = {"name": m.group(1)}
    nt = re.search(r'"nvvm\.(?:maxntid|reqntid)"="(\d+)', text) or re.search(r'!"(?:maxntidx|reqntidx)",\s*i32\s+(\d+)', text)
    if nt:
        md["threads_per_block"] = int(nt.group(1))
        md["num_warps"] = max(1, int(nt.group(1)) // 32)
    sh = re.search(r"kernellab\.shared\s*=\s*(\d+)", text)
    md["shared"] = int(sh.group(1)) if sh else 0
    return CudaArtifact(m.group(1), llir=text, metadata=md)


def _parse_ptx(text: str) -> CudaArtifact:
    entries = entry_points(text)
    if not entries:
        raise ValueError("no `.entry` kernel in the PTX text")
    name = next(iter(entries))
    md = {"name": name, "params": entries[name]}
    threads = max_threads_directive(text, name)
    if threads:
        md["threads_per_block"] = threads
        md["num_warps"] = max(1, threads // 32)
    sh = re.search(r"kernellab\.shared\s*=\s*(\d+)", text)
    md["shared"] = int(sh.group(1)) if sh else 0
    return CudaArtifact(name, ptx=text, metadata=md)


def restore(asm: dict, metadata: dict) -> CudaArtifact:
    """The launchable artifact of a cached compile (its asm and metadata)."""
    return CudaArtifact(
        metadata["name"], llir=asm.get("llir") or "", ptx=asm.get("ptx") or "",
        cubin=asm["cubin"], metadata=dict(metadata),
    )


def _launcher(artifact):
    from kernellab.backends.nvidia.launcher import CudaLauncher

    return CudaLauncher(artifact)


def _lazy_sass(cubin: bytes):
    from kernellab.backends.nvidia.sass import make_sass

    return make_sass(cubin)


@dataclass(frozen=True)
class NvidiaBackend(Backend):
    """The NVIDIA backend; `prepare(options)` runs before a compile that misses the cache."""

    def prepare(self, options) -> None:
        prepare_toolchain(options)


NVIDIA = NvidiaBackend(
    name="nvidia",
    stages=stages,
    parsers={"ttir": _parse_ir, "ttgir": _parse_ir, "llir": _parse_llir, "ptx": _parse_ptx},
    launcher=_launcher,
    make_options=make_options,
    resolve_target=resolve_target,
    lazy_asm={"sass": ("cubin", _lazy_sass)},
    disk_cache=True,
    restore=restore,
    stage_markers={"ttir": r"\btt\.func\b", "ttgir": r"\bttg\.|#ttg\.", "llir": r"^\s*define\s", "ptx": r"^\s*\.entry\s|^\.version\s"},
)

__all__ = [
    "NvidiaOptions", "CudaArtifact", "NVIDIA", "NvidiaBackend", "resolve_target", "is_nvidia_target",
    "stages", "prepare_toolchain",
]  # fmt: skip
