"""The native CPU backend: kernels compiled by LLVM for the machine they run on.

TTIR → TTGIR with the CPU layout (warps of one thread, each holding its chunk of a tensor or the whole of it) → LLVM IR
through the shared lowering core (lowering/) → the host's assembly and object code
(pipeline.py) → llvmlite's MCJIT, the grid's programs spread over the cores (launcher.py).
`kernel[grid](..., target="cpu")`, `KERNELLAB_TARGET=cpu` or `kl.compile(..., target="cpu")`.
"""

from kernellab.backends.cpu.backend import CPU, CpuOptions, is_cpu_target

__all__ = ["CPU", "CpuOptions", "is_cpu_target"]
