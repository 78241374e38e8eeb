"""The native CPU backend: kernels compiled by LLVM for the machine they run on.

TTIR → TTGIR with the CPU layout (warps of one thread, each holding its chunk of a tensor or the whole of it) → LLVM IR
through the shared lowering core (lowering/) → the host's assembly and object code
(pipeline.py) → llvmlite's MCJIT, the grid's programs spread over the cores (launcher.py).
`kernel[grid](..., target="cpu")`, `KERNELLAB_TARGET=cpu` or `kl.compile(..., target="cpu")`.

The target names are here, apart from the backend (backend.py), so that the backend table
(kernellab.backends) can tell a CPU target without loading the CPU backend; `CPU` and
`CpuOptions` load it on first access.
"""

TARGET = "cpu"


def is_cpu_target(target) -> bool:
    return target in (TARGET, "host")


def __getattr__(name: str):
    if name in ("CPU", "CpuOptions"):
        from kernellab.backends.cpu import backend

        return getattr(backend, name)
    raise AttributeError(f"module 'kernellab.backends.cpu' has no attribute {name!r}")


__all__ = ["CPU", "CpuOptions", "TARGET", "is_cpu_target"]
