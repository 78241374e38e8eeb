"""Compile options: one base every target shares, which each target's options type extends.

Options are frozen (they are part of the cache key; `extern_libs` by its files' contents too).
A target adds its own fields and checks by deriving from `CompileOptions`
(backends/nvidia/backend.py: `NvidiaOptions` adds `target`), so a field exists once and every
target reads the shared ones by the same name.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from kernellab.backends.extern_libs import normalize


@dataclass(frozen=True)
class CompileOptions:
    """Options every backend sees. The interpreter records them; GPU backends act on them."""

    num_warps: int = 4
    num_stages: int = 3
    num_ctas: int = 1
    maxnreg: int | None = None
    debug: bool = False
    # Launch behaviour (Triton's names): all programs resident at once (a grid-wide barrier
    # through atomics can't deadlock), and programmatic dependent launch (sm_90: the kernel
    # may start before the previous one ends; tl.extra.cuda.gdc_wait orders memory).
    launch_cooperative_grid: bool = False
    launch_pdl: bool = False
    # {library name: path to its bitcode} (Triton's option; backends/extern_libs.py): the NVIDIA
    # backend links 'libdevice' and calls its functions; elsewhere kernellab's own code runs.
    extern_libs: dict | None = None
    # Triton's name and default: a kernel's float a * b + c may become one fused multiply-add
    # (rounded once); False keeps every operation rounded on its own, as the interpreter does.
    enable_fp_fusion: bool = True
    # kernellab's: on Hopper a pipelined loop of two or more warp-group dots (attention) whose
    # program is alone on its SM hands its shared-memory rings between the copies and the dots
    # with mbarriers; False keeps a bar.sync per iteration, as Triton's loop
    # (passes/ttgir/pipeline_loops.py).
    ring_mbarriers: bool = True

    def __post_init__(self):
        if self.extern_libs is not None:  # a private copy: the caller's dict may change later
            object.__setattr__(self, "extern_libs", normalize(self.extern_libs))

    def as_dict(self) -> dict:
        """{field: value}, the base fields first (what metadata shows)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


# The launch options a kernel call or kl.compile(...) accepts by keyword.
OPTION_NAMES = frozenset(f.name for f in fields(CompileOptions))

__all__ = ["CompileOptions", "OPTION_NAMES"]
