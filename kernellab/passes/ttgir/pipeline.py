"""The TTGIR pipeline: TTIR in, TTGIR with every layout chosen out.

1. convert_to_ttgpuir        default layouts and module attributes (num_warps, target).
2. coalesce                   memory ops get the layouts that vectorize and coalesce (AxisInfo).
3. accelerate_matmul          dots with a tensor-core form get MMA v2 layouts (mma.sync).
4. remove_layout_conversions  computations move into the memory ops' layouts.
5. reduce_data_duplication    conversions into dot-operand layouts go through shared memory.
6. cse, canonicalize, dce     the TTIR clean-ups, which treat layouts as part of the type:
                              rematerialization can leave duplicate index math, and folding
                              keeps each constant's layout.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects.builtin import ModuleOp

from kernellab.passes import canonicalize, cse, dce
from kernellab.passes.manager import PassManager, PassRecord
from kernellab.passes.ttgir import (
    accelerate_matmul,
    coalesce,
    convert_to_ttgpuir,
    reduce_data_duplication,
    remove_layout_conversions,
)


@dataclass(frozen=True)
class _Configured:
    """A pass that takes options, bound to them: what PassManager runs (NAME + run(module))."""

    NAME: str
    fn: object
    options: dict

    def run(self, module: ModuleOp) -> bool:
        return self.fn(module, **self.options)


TTGIR_PASSES = [
    convert_to_ttgpuir,
    coalesce,
    accelerate_matmul,
    remove_layout_conversions,
    reduce_data_duplication,
    cse,
    canonicalize,
    dce,
]


def _option(options, name: str, default):
    if isinstance(options, dict):
        return options.get(name, default)
    return getattr(options, name, default)


def make_ttgir(module: ModuleOp, options=None, trace: bool = True) -> list[PassRecord]:
    """Run the TTGIR passes on `module` (TTIR) in place; options: target ("sm_80" | "sm_90"),
    num_warps, num_ctas, debug (verify after each pass)."""
    convert = _Configured(
        convert_to_ttgpuir.NAME,
        convert_to_ttgpuir.run,
        {
            "num_warps": _option(options, "num_warps", 4),
            "target": _option(options, "target", "sm_90"),
            "num_ctas": _option(options, "num_ctas", 1),
        },
    )
    passes = [convert if p is convert_to_ttgpuir else p for p in TTGIR_PASSES]
    verify = bool(_option(options, "debug", False))
    return PassManager(passes, trace=trace, verify=verify).run(module)
