"""The Jupyter lab: the `%%kernel` magic, the compiled-kernel viewer, widgets and graphs.

    %load_ext kernellab                    # registers %%kernel
    kl.lab.show(add_kernel)                # the viewer for a kernel's last compile
    kl.lab.show(add_kernel, signature="*fp32,*fp32,*fp32,i32", constexprs={"BLOCK": 1024})

Nothing here is imported by `import kernellab`; each name below loads its module (and the
Jupyter packages it needs) on first use.
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path

# public name → module defining it (names of other lab modules are found by `_find` if absent)
_LAZY = {
    "show": "kernellab.lab.kernel_view",
    "view": "kernellab.lab.kernel_view",
    "KernelView": "kernellab.lab.kernel_view",
    "build_bundle": "kernellab.lab.bundle",
    "KernelMagics": "kernellab.lab.magic",
    "layout": "kernellab.lab.widgets",
    "layouts": "kernellab.lab.widgets",
    "swizzle": "kernellab.lab.widgets",
    "tile_order": "kernellab.lab.widgets",
    "access_view": "kernellab.lab.widgets",
    "sram_row": "kernellab.lab.widgets",
    "tile_walk": "kernellab.lab.widgets",
    "bitonic": "kernellab.lab.widgets",
    "ProfileView": "kernellab.lab.widgets",
    "dataflow_graph": "kernellab.lab.graphs",
    "pipeline_graph": "kernellab.lab.graphs",
    "check": "kernellab.lab.checks",
    "puzzle": "kernellab.lab.puzzles",
    "diff": "kernellab.lab.ir_diff",
}


def _find(name: str) -> str | None:
    """The lab module that defines `name` at top level (read from the source, not imported)."""
    here = Path(__file__).parent
    pattern = re.compile(rf"^(?:def|class)\s+{re.escape(name)}\b|^{re.escape(name)}\s*=", re.MULTILINE)
    for path in sorted(here.glob("*.py")):
        if path.stem != "__init__" and pattern.search(
            path.read_text(encoding="utf-8", errors="replace")
        ):
            return f"kernellab.lab.{path.stem}"
    return None


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(name)
    module_name = _LAZY.get(name)
    module = None
    if module_name is not None:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as e:
            if e.name != module_name:
                raise
    if module is None or not hasattr(module, name):
        found = _find(name)
        if found is None:
            raise AttributeError(f"module 'kernellab.lab' has no attribute {name!r}")
        module = importlib.import_module(found)
    value = getattr(module, name)
    globals()[name] = value
    return value


def load_ipython_extension(ip) -> None:
    """`%load_ext kernellab.lab` works too."""
    from kernellab.lab.magic import load_ipython_extension as load

    load(ip)


__all__ = [
    "KernelView",
    "access_view",
    "build_bundle",
    "check",
    "dataflow_graph",
    "diff",
    "layout",
    "layouts",
    "pipeline_graph",
    "puzzle",
    "show",
    "sram_row",
    "swizzle",
    "tile_order",
    "tile_walk",
    "view",
]  # fmt: skip
