"""kernellab: a Triton-compatible block language, a compiler you can watch, and a numpy interpreter.

    import kernellab as kl
    import kernellab.language as tl

    @kl.jit
    def add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr): ...

    add[(kl.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)

The compiler (xDSL, LLVM) loads on first use, so `import kernellab` stays quick and pulls in
neither Jupyter, torch, matplotlib nor numpy (which comes with the first CPU array or compile).

This module is the public facade: it ranks with the lab, the top of the layers (language, ir,
frontend, layouts, passes, backends, compiler, testing, runtime, lab; tests/test_layers.py), so
it may name anything below. It imports the compiler and the runtime eagerly, and the autotuner,
`testing`, `language` and `lab` only on first access (`kl.lab`) or inside a function (`%load_ext
kernellab`), so `import kernellab` never loads the lab.
"""

from __future__ import annotations

import importlib

from kernellab.backends.allocation import set_allocator
from kernellab.backends.typed_view import reinterpret
from kernellab.compiler import CompiledKernel, compile
from kernellab.runtime import cdiv, next_power_of_2
from kernellab.runtime.jit import JITFunction, jit

__version__ = "0.1.0"

# name → module that defines it; imported on first access (PEP 562): the autotuner only when a
# program tunes, not for a plain compile (issue 13)
_LAZY = {
    "Config": "kernellab.runtime.autotuner",
    "autotune": "kernellab.runtime.autotuner",
    "heuristics": "kernellab.runtime.autotuner",
    "CompilationError": "kernellab.frontend.errors",
    "DevicePool": "kernellab.runtime.bench_pool",
    "as_triton": "kernellab.triton_compat",
    "torch": None,
    "testing": None,
    "language": None,
    "lab": None,
    "profiler": None,
}


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module 'kernellab' has no attribute {name!r}")
    module_name = _LAZY[name]
    value = (
        importlib.import_module(f"kernellab.{name}")
        if module_name is None
        else getattr(importlib.import_module(module_name), name)
    )
    globals()[name] = value
    return value


def load_ipython_extension(ip) -> None:
    """`%load_ext kernellab`: registers the `%%kernel` cell magic (kernellab.lab.magic)."""
    from kernellab.lab.magic import load_ipython_extension as load

    load(ip)


def _jupyter_labextension_paths() -> list[dict[str, str]]:
    """JupyterLab extension (built from extension/ into kernellab/labextension)."""
    return [{"src": "labextension", "dest": "kernellab"}]


__all__ = [
    "jit", "JITFunction", "compile", "CompiledKernel", "CompilationError", "autotune", "Config",
    "heuristics", "DevicePool", "cdiv", "next_power_of_2", "reinterpret", "set_allocator", "as_triton", "testing",
    "language", "lab", "torch",
]  # fmt: skip
