"""The interpreter backend: executes TTIR with numpy, all programs of a grid batched together.

`prepare(module)` compiles the kernel's tt.func once into pre-decoded instructions;
`InterpretedKernel.run(args, grid, trace=None)` runs it on numpy arrays (written in place).
"""

from kernellab.backends.interpreter.errors import (
    DeviceAssertionError,
    GatherIndexError,
    InterpreterError,
    OutOfBoundsError,
)
from kernellab.backends.interpreter.kernel import InterpretedKernel, prepare
from kernellab.backends.interpreter.trace import AccessRecord, AccessTrace

__all__ = [
    "AccessRecord",
    "AccessTrace",
    "DeviceAssertionError",
    "GatherIndexError",
    "InterpretedKernel",
    "InterpreterError",
    "OutOfBoundsError",
    "prepare",
]
