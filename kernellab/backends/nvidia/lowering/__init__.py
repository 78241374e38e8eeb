"""TTGIR → LLVM IR for NVIDIA GPUs, built with llvmlite.ir.

`make_llir(module, options) -> (llir_text, metadata)`; see core.py for the driver and the
modules beside it for each family of ops (elementwise, memory, shape, reduce, scan, dot,
control, debug).
"""

from kernellab.backends.nvidia.lowering.core import LoweringError, make_llir

__all__ = ["make_llir", "LoweringError"]
