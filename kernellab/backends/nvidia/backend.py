"""The NVIDIA backend: options, the stage dict {ttir, ttgir, llir, ptx, cubin}, parsers, launcher.

    ttir   the TTIR pipeline (shared with the interpreter; on sm_90a TMA's descriptor accesses stay ops)
    ttgir  pipeline.make_ttgir: layouts, coalescing, ... (the backend's own TTGIR pipeline)
    llir   kernellab.backends.nvidia.lowering.make_llir: LLVM IR text + metadata (shared bytes)
    ptx    pipeline.make_ptx: LLVM verify, O3 and NVPTX code generation (llvmlite), traced
    cubin  cubin.make_cubin: ptxas through nvJitLink, with the resource report

Every stage runs without a GPU. After `llir` the artifact is a `CudaArtifact` that accumulates
the LLVM IR, PTX and cubin plus what the launcher needs (kernel name, parameter types, dynamic
shared memory, threads per block). SASS is made on demand (`asm["sass"]`) because nvdisasm takes
a few hundred milliseconds.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from kernellab.backends.base import Backend, StageOutput, _parse_ir, module_stage_output
from kernellab.backends.metadata import KernelMetadata
from kernellab.backends.nvidia.header import read_header
from kernellab.backends.options import CompileOptions
from kernellab.backends.nvidia.ptx import (
    EXTERN_LIBS,
    entry_points,
    max_threads_directive,
    parse_arch,
    ptx_version,
)

DEFAULT_ARCH = "sm_90"


@dataclass(frozen=True)
class NvidiaOptions(CompileOptions):
    """Compile options of the NVIDIA backend: the shared ones plus the target architecture."""

    target: str = DEFAULT_ARCH  # "sm_80", "sm_90", "sm_90a", ...

    def __post_init__(self):
        super().__post_init__()
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
    """What the stages after TTGIR hand on: LLVM IR, PTX, cubin and the launch facts.

    Between stages `metadata` holds the facts the stages found so far (name, shared, threads,
    params); the launchable artifact (`restore`) carries the kernel's whole `KernelMetadata`."""

    name: str
    llir: str = ""
    ptx: str = ""
    cubin: bytes = b""
    metadata: Mapping = field(default_factory=dict)


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


def _ttir_stage_nvidia(module, options) -> StageOutput:
    """The shared TTIR pipeline; on sm_90a the tensor-descriptor accesses TMA can copy stay
    ops (passes/ttgir/tma.py says which), the others are lowered to pointers as everywhere,
    and the pointer tiles that wgmma reads and TMA can copy become descriptor loads."""
    from kernellab.passes.ttir import make_ttir

    keep = tiles = None
    if options.target == "sm_90a":
        from kernellab.passes.ttgir import tma

        keep = tma.why_not
        tiles = functools.partial(tma.why_not_for_dot_operand, num_warps=options.num_warps)
    records = make_ttir(module, options, keep_descriptors=keep, tile_descriptors=tiles)
    return module_stage_output(module, records)


def _ttgir_stage(module, options) -> StageOutput:
    from kernellab.backends.nvidia.pipeline import make_ttgir

    _refuse_amd_fp8(module)
    return module_stage_output(module, make_ttgir(module, options))


def _refuse_amd_fp8(module) -> None:
    """NVIDIA GPUs have no conversions for the fnuz fp8 formats (AMD's, as in Triton, whose CUDA
    backend refuses them too); the interpreter runs such kernels."""
    from xdsl.dialects import builtin

    from kernellab.ir.tt import element_type

    fnuz = {builtin.Float8E4M3FNUZType: "fp8e4b8", builtin.Float8E5M2FNUZType: "fp8e5b16"}
    for op in module.walk():
        for value in (*op.operands, *op.results):
            t = element_type(value.type)
            name = fnuz.get(type(getattr(t, "pointee", t)))  # fnuz values or pointers to them
            if name is not None:
                raise ValueError(
                    f"{name} (torch's float8_{'e4m3' if name == 'fp8e4b8' else 'e5m2'}fnuz, an AMD "
                    "format) has no NVIDIA lowering; run the kernel on the interpreter (CPU "
                    "tensors or numpy arrays) or use fp8e4nv / fp8e5 (float8_e4m3fn / float8_e5m2)"
                )


def _llir_stage(module, options) -> StageOutput:
    """The lowering's LLVM IR with the launch header (header.py): the text alone must be
    enough to resume a compile from, once a user has edited it."""
    from kernellab.backends.nvidia.header import LaunchHeader, header_lines
    from kernellab.backends.nvidia.lowering import make_llir

    llvm_ir, facts = make_llir(module, options)  # name, num_warps, threads_per_block, shared, bar_syncs
    _check_shared_memory(module, facts, options.target)
    header = LaunchHeader(facts["name"], facts["shared"], facts["num_warps"], facts.get("global_scratch_size", 0))
    first, last = header_lines(header)
    text = f"{first}\n{llvm_ir}\n{last}\n"
    return StageOutput(CudaArtifact(facts["name"], llir=text, metadata=facts), text, [], metadata=dict(facts))


def _check_shared_memory(module, facts, target: str) -> None:
    """Refuse, while compiling, a kernel that needs more shared memory per block than `target`
    has, saying what the software pipeline's rings take per stage."""
    from kernellab.backends.nvidia.launcher import OutOfResources
    from kernellab.backends.nvidia.limits import DEVICE_LIMITS
    from kernellab.passes.ttgir.pipeline_loops import ring_slots

    limits = DEVICE_LIMITS.get(target)
    if limits is None or facts["shared"] <= limits["max_shared_per_block"]:
        return
    rings = ring_slots(module)
    if rings:
        slots = max(s for s, _ in rings)
        per_slot = sum(b for _, b in rings)
        advice = (f"The software pipeline's rings keep {slots} tiles of {per_slot} bytes "
                  f"({slots * per_slot} bytes); lower num_stages or the BLOCK sizes.")  # fmt: skip
    else:
        advice = "Reduce the BLOCK sizes (fewer elements staged through shared memory)."
    raise OutOfResources(facts["name"], f"shared memory on {target}", facts["shared"],
                         limits["max_shared_per_block"], advice)  # fmt: skip


def _ptx_stage(art: CudaArtifact, options) -> StageOutput:
    from kernellab.backends.nvidia.pipeline import make_ptx

    ptx, passes = make_ptx(art.llir, options, dynamic_shared=art.metadata["shared"])
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
    return StageOutput(art, ptx, passes, metadata=md)


def _cubin_stage(art: CudaArtifact, options) -> StageOutput:
    from kernellab.backends.nvidia.cubin import PtxAssembly
    from kernellab.backends.nvidia.pipeline import make_cubin
    from kernellab.backends.nvidia.sass import sass_status

    threads = art.metadata["threads_per_block"] or options.threads_per_block  # text without .maxntid
    assembly = PtxAssembly(art.ptx, art.name, options, art.metadata["shared"], threads)
    records = make_cubin(assembly)
    md = {k: v for k, v in assembly.resources.items() if k != "log"}
    md["spills"] = md["spill_stores"] + md["spill_loads"]
    md["shared_total"] = art.metadata["shared"] + md["static_shared"]
    md["sass"] = sass_status()
    art = replace(art, cubin=assembly.cubin, metadata={**art.metadata, **md})
    return StageOutput(art, assembly.cubin, records, metadata=md)


def prepare_toolchain(options) -> None:
    """Get nvJitLink ready ahead of the cubin stage: `kl.compile` calls this when it is about to
    compile (not on a cache hit). nvJitLink's one-time initialization (hundreds of milliseconds
    on a GPU machine) then runs in a background thread without the GIL while the frontend and
    the IR stages run (cubin.start_warm_up)."""
    from kernellab.backends.nvidia import cubin

    cubin.start_warm_up(options.target)


def stages() -> dict:
    return {"ttir": _ttir_stage_nvidia, "ttgir": _ttgir_stage, "llir": _llir_stage, "ptx": _ptx_stage, "cubin": _cubin_stage}


# -- resuming from text ----------------------------------------------------------------------
# Edited LLVM IR or PTX carries kernellab's launch facts in its header (header.py). Text
# without one (written by hand or by another tool) is read for what LLVM and PTX say
# themselves: the kernel's name and its thread-count directive; it then uses no dynamic
# shared memory.

_LLVM_KERNEL = re.compile(r"define\s+(?:[\w()]+\s+)*?ptx_kernel\s+void\s+@\"?([\w.$]+)\"?")
_LLVM_DEFINE = re.compile(r"define\s+(?:[\w()]+\s+)*?void\s+@\"?([\w.$]+)\"?\s*\(")
_LLVM_THREADS = re.compile(r'"nvvm\.(?:maxntid|reqntid)"="(\d+)|!"(?:maxntidx|reqntidx)",\s*i32\s+(\d+)')


def _launch_facts(name: str, threads: int | None, header) -> dict:
    if header is None:
        return {"name": name, "shared": 0, "threads_per_block": threads}
    facts = {"name": header.name, "shared": header.shared, "threads_per_block": header.threads_per_block}
    if header.global_scratch_size:  # the kernel builds tensor maps: the launch gives it scratch
        facts |= {"global_scratch_size": header.global_scratch_size, "global_scratch_align": 128}
    return facts


def _parse_llir(text: str) -> CudaArtifact:
    """LLVM IR text → artifact. The kernel is the `ptx_kernel` function (else the first defined
    void function); threads per block come from `"nvvm.maxntid"`/`!nvvm.annotations`."""
    m = _LLVM_KERNEL.search(text) or _LLVM_DEFINE.search(text)
    if not m:
        raise ValueError("no kernel function (`define ptx_kernel void @name(...)`) in the LLVM IR")
    nt = _LLVM_THREADS.search(text)
    facts = _launch_facts(m.group(1), int(nt.group(1) or nt.group(2)) if nt else None, read_header(text))
    return CudaArtifact(facts["name"], llir=text, metadata=facts)


def _parse_ptx(text: str) -> CudaArtifact:
    entries = entry_points(text)
    if not entries:
        raise ValueError("no `.entry` kernel in the PTX text")
    first = next(iter(entries))
    facts = _launch_facts(first, max_threads_directive(text, first), read_header(text))
    facts["params"] = entries.get(facts["name"], entries[first])
    return CudaArtifact(facts["name"], ptx=text, metadata=facts)


def restore(asm: Mapping, metadata: KernelMetadata) -> CudaArtifact:
    """The launchable artifact of a compiled (or cached) kernel: its asm and its metadata."""
    return CudaArtifact(metadata.name, llir=asm.get("llir") or "", ptx=asm.get("ptx") or "",
                        cubin=asm["cubin"], metadata=metadata)  # fmt: skip


def _launcher(artifact):
    from kernellab.backends.nvidia.launcher import CudaLauncher

    return CudaLauncher(artifact)


def _arguments_of(metadata: KernelMetadata):
    from kernellab.backends.nvidia.launcher import ptx_signature

    return ptx_signature(metadata.params or [])


def _lazy_sass(cubin: bytes):
    from kernellab.backends.nvidia.sass import make_sass

    return make_sass(cubin)


NVIDIA = Backend(
    name="nvidia",
    stages=stages,
    parsers={"ttir": _parse_ir, "ttgir": _parse_ir, "llir": _parse_llir, "ptx": _parse_ptx},
    launcher=_launcher,
    make_options=make_options,
    resolve_target=resolve_target,
    lazy_asm={"sass": ("cubin", _lazy_sass)},
    disk_cache=True,
    restore=restore,
    launch_stages=("ptx", "cubin"),  # the PTX names the parameters of a kernel resumed from it
    prepare=lambda options: prepare_toolchain(options),  # looked up per call: tests replace it
    arguments_of=_arguments_of,
    extern_libs=EXTERN_LIBS,  # linked by the ptx stage's link-extern-libs pass
    stage_markers={"ttir": r"\btt\.func\b", "ttgir": r"\bttg\.|#ttg\.", "llir": r"^\s*define\s", "ptx": r"^\s*\.entry\s|^\.version\s"},
)

__all__ = [
    "NvidiaOptions", "CudaArtifact", "NVIDIA", "resolve_target", "is_nvidia_target",
    "stages", "prepare_toolchain",
]  # fmt: skip
