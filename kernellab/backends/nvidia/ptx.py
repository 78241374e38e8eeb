"""LLVM IR text → PTX text with llvmlite's NVPTX target (no GPU, no CUDA toolkit needed).

The LLVM passes the pass manager runs (pipeline.LLVM_PASSES orders them) over one `LlvmModule`:
  llvm-verify    parse the text and verify it;
  link-extern-libs  link the bitcode of the libraries the kernel calls (NVIDIA's libdevice,
                 from the `extern_libs` option), keeping only the functions it calls;
  llvm-O3        give it NVPTX's triple and data layout, run LLVM's O3 module pipeline (new
                 pass manager);
  nvptx-codegen  print it as PTX for the requested `sm_XX`.
Debug locations in the IR come out as `.file`/`.loc` lines, which later map PTX and SASS back
to the kernel's source. The passes share LLVM's global context: run them under `llvm_lock`.

LLVM is initialized once per process, lazily, and the target machine per (arch, PTX version) is
cached, so the first compile pays a few tens of milliseconds and later ones nothing.

Shared-memory pointers are 32 bits (LLVM's `nvptx-short-ptr`, as Triton's): shared addresses
fit in 32 bits, and with 64-bit pointers every shared address was a 64-bit sum truncated where
an instruction takes 32 (cp.async, ldmatrix, wgmma's descriptors), a few instructions more each.
The option is global to the process's LLVM, so it is set once, before the first NVPTX target
machine, whose data layout it changes (`p3:32:32`).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from kernellab.backends.toolchain import binding, llvm_lock, optimize, parse_verified
from kernellab.passes.manager import PassOutcome

TRIPLE = "nvptx64-nvidia-cuda"

# the libraries of the extern_libs option this target links, and the prefix of their functions
EXTERN_LIBS = frozenset({"libdevice"})
LIBDEVICE_PREFIX = "__nv_"

# PTX ISA version written into `.version`. 8.5 (CUDA 12.5) covers every instruction sm_80/sm_90/
# sm_90a kernels use here and is accepted by nvJitLink 12.5+ and 13.x and by drivers ≥ 555.
# LLVM 22 (llvmlite 0.50) can emit up to 9.0; nvJitLink 13.0 accepts up to 9.0 as well.
PTX_VERSION = (8, 5)


class PTXGenerationError(RuntimeError):
    """LLVM rejected the IR (parse/verify error) or could not emit PTX for it."""


_machines: dict[tuple, object] = {}


def parse_arch(target: str) -> tuple[int, str]:
    """'sm_90' → (90, 'sm_90'); 'sm_90a' → (90, 'sm_90a'). Raises ValueError for anything else."""
    t = str(target)
    digits = t[3:-1] if t.endswith("a") else t[3:]
    if not (t.startswith("sm_") and len(digits) == 2 and digits.isdigit() and digits.isascii()):
        raise ValueError(f"unknown NVIDIA target {target!r}; use 'sm_80', 'sm_90' or 'sm_90a'")
    return int(digits), t


def ptx_version() -> tuple[int, int]:
    """PTX_VERSION, or 7.8 (enough for sm_90) when llvmlite's LLVM predates PTX 8.5 (LLVM < 19)."""
    return PTX_VERSION if binding().llvm_version_info[0] >= 19 else (7, 8)


def target_machine(arch: str, version: tuple[int, int] | None = None):
    """The (cached) llvmlite TargetMachine for `arch` ('sm_90') emitting PTX ISA `version`."""
    major, minor = version or ptx_version()
    key = (arch, major, minor)
    tm = _machines.get(key)
    if tm is None:
        llvm = binding()
        if not _machines:  # the first NVPTX machine: 32-bit shared pointers (module docstring)
            llvm.set_option("kernellab", "--nvptx-short-ptr")
        target = llvm.Target.from_triple(TRIPLE)
        tm = target.create_target_machine(cpu=arch, features=f"+ptx{major}{minor}", opt=3)
        _machines[key] = tm
    return tm


def options_arch(options) -> str:
    """The 'sm_XY' of compile options (sm_90 when they name none)."""
    target = getattr(options, "target", None) or "sm_90"
    return parse_arch(target)[1]


@dataclass
class LlvmModule:
    """What the LLVM passes work on: the LLVM IR text, then the parsed module, then the PTX."""

    text: str
    arch: str  # 'sm_90'
    module: object = None  # llvmlite ModuleRef, once llvm-verify parsed the text
    ptx: str | None = None  # once nvptx-codegen ran
    extern_libs: dict = field(default_factory=dict)  # {name: path} of the libraries to link
    options: object = None  # the NvidiaOptions, for the occupancy pass's trial assembly
    dynamic_shared: int = 0  # bytes of shared memory the lowering laid out

    def print(self) -> str:
        """The IR as it is now (the pass manager's printer)."""
        if self.ptx is not None:
            return self.ptx
        return self.text if self.module is None else str(self.module)


class _Verify:
    NAME = "llvm-verify"
    STAGE = "llir"

    @staticmethod
    def run(m: LlvmModule) -> PassOutcome:
        """Parse and verify (nothing changes: the record shares the text it was given). LLVM
        errors become PTXGenerationError with the offending IR lines."""
        m.module = parse_verified(m.text, PTXGenerationError)
        return PassOutcome(False, "valid LLVM IR")


class _LinkExternLibs:
    NAME = "link-extern-libs"
    STAGE = "llir"

    @staticmethod
    def run(m: LlvmModule) -> PassOutcome:
        """Link libdevice's bitcode where the kernel calls its `__nv_*` functions, before O3
        inlines them: the library's functions become internal and the ones not called are
        dropped here. libdevice asks `__nvvm_reflect("__CUDA_FTZ")` whether to flush
        denormals to zero; the module flag nvvm-reflect-ftz = 0 answers no (as kernellab's own
        code keeps them, tl.exp2 aside), and O3's NVVMReflect pass folds the calls."""
        called = sorted(
            f.name for f in m.module.functions if f.is_declaration and f.name.startswith(LIBDEVICE_PREFIX)
        )
        if not called:
            return PassOutcome(False, "no library function called")
        path = m.extern_libs.get("libdevice")
        if path is None:
            raise PTXGenerationError(
                f"the kernel calls {', '.join(called)} from NVIDIA's libdevice, which is not linked: "
                "compile with extern_libs={'libdevice': '/usr/local/cuda/nvvm/libdevice/libdevice.10.bc'}"
            )
        llvm = binding()
        tm = target_machine(m.arch)
        with open(path, "rb") as f:
            try:
                library = llvm.parse_bitcode(f.read())
            except RuntimeError as e:
                raise PTXGenerationError(f"extern_libs['libdevice'] = {path!r} is not LLVM bitcode: {e}") from None
        defined = {f.name for f in library.functions if not f.is_declaration}
        missing = [name for name in called if name not in defined]
        if missing:
            raise PTXGenerationError(f"{path} defines no {', '.join(missing)}")
        reflect = llvm.parse_assembly('!llvm.module.flags = !{!0}\n!0 = !{i32 4, !"nvvm-reflect-ftz", i32 0}\n')
        for module in (m.module, library, reflect):  # one triple: no mismatch warnings
            module.triple, module.data_layout = TRIPLE, str(tm.target_data)
        m.module.link_in(library)
        m.module.link_in(reflect)
        for f in m.module.functions:
            if f.name in defined:
                f.linkage = "internal"
        dce = llvm.create_new_module_pass_manager()
        dce.add_global_dead_code_eliminate_pass()
        dce.run(m.module, llvm.create_pass_builder(tm, llvm.create_pipeline_tuning_options(speed_level=0)))
        kept = sum(1 for f in m.module.functions if f.name in defined)
        return PassOutcome(True, f"{os.path.basename(path)} linked for {', '.join(called)} ({kept} functions kept)")


class _OptimizeO3:
    NAME = "llvm-O3"
    STAGE = "llir"

    @staticmethod
    def run(m: LlvmModule) -> PassOutcome:
        """Give the module NVPTX's triple and data layout (what O3 optimizes for), run O3."""
        tm = target_machine(m.arch)
        m.module.triple = TRIPLE
        m.module.data_layout = str(tm.target_data)
        optimize(m.module, tm)
        return PassOutcome(True)  # the manager describes it by the IR's size


class _EmitPtx:
    NAME = "nvptx-codegen"
    STAGE = "ptx"

    @staticmethod
    def run(m: LlvmModule) -> PassOutcome:
        try:
            ptx = target_machine(m.arch).emit_assembly(m.module)
        except RuntimeError as e:
            raise PTXGenerationError(f"LLVM could not emit PTX for {m.arch}: {e}") from None
        # With debug info LLVM writes `.target sm_90, debug`, which makes ptxas compile without
        # optimization (like -G). Line tables (.loc) are all we want: drop the flag.
        m.ptx = re.sub(r"^(\.target\s+[\w]+)\s*,\s*debug\b", r"\1", ptx, count=1, flags=re.M)
        return PassOutcome(True, f"{len(m.ptx.splitlines())} PTX lines for {m.arch}")


VERIFY = _Verify()
LINK_EXTERN_LIBS = _LinkExternLibs()
OPTIMIZE_O3 = _OptimizeO3()
EMIT_PTX = _EmitPtx()


_ENTRY = r"\.entry\s+([\w$.]+)\s*\(([^)]*)\)"
_PARAM = r"\.param\s+(?:\.align\s+\d+\s+)?\.(\w+)(?:\s+\.ptr(?:\s+\.\w+)*(?:\s+\.align\s+\d+)?)?\s+([\w$]+)(\[\d+\])?"


def entry_points(ptx: str) -> dict[str, list[str]]:
    """{kernel name: [PTX type of each parameter, e.g. 'u64', 'u32', 'f32', 'b8[16]']}."""
    out = {}
    for m in re.finditer(_ENTRY, ptx, re.S):
        params = []
        for p in re.finditer(_PARAM, m.group(2)):
            params.append(p.group(1) + (p.group(3) or ""))
        out[m.group(1)] = params
    return out


def max_threads_directive(ptx: str, name: str) -> int | None:
    """Threads per block fixed by `.maxntid`/`.reqntid` on entry `name` (None if absent)."""
    m = re.search(
        r"\.entry\s+" + re.escape(name) + r"\s*\([^)]*\)\s*((?:\.\w+[^{]*?)*)\{", ptx, re.S
    )
    if not m:
        return None
    d = re.search(r"\.(?:maxntid|reqntid)\s+(\d+)(?:\s*,\s*(\d+))?(?:\s*,\s*(\d+))?", m.group(1))
    if not d:
        return None
    n = 1
    for g in d.groups():
        if g:
            n *= int(g)
    return n


__all__ = [
    "LlvmModule", "VERIFY", "LINK_EXTERN_LIBS", "EXTERN_LIBS", "OPTIMIZE_O3", "EMIT_PTX", "llvm_lock", "options_arch", "PTXGenerationError",
    "PTX_VERSION", "ptx_version", "TRIPLE", "target_machine", "parse_arch", "entry_points",
    "max_threads_directive", "optimize",
]  # fmt: skip
