"""prepare(module) → InterpretedKernel; InterpretedKernel.run(args, grid) executes it.

All programs of the grid run as one batch (split into chunks of programs so that no value
exceeds ~2M elements). One case runs program by program instead: a kernel with an scf.while
loop containing an atomic (a spin lock such as `while tl.atomic_cas(lock, 0, 1) == 1: pass`).
Batched, every program would spin until the lock holder finished the loop, which it cannot do
before all programs leave it; one program at a time gives sequential semantics and terminates.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from xdsl.dialects import scf
from xdsl.dialects.builtin import ModuleOp, TensorType

from kernellab.backends.interpreter import (  # noqa: F401  (register builders)
    atomics, control, debug, gpu_state, loadstore, ops, reduce, tensor,
)
from kernellab.backends.interpreter.compiler import Compiler
from kernellab.backends.interpreter.dtypes import I64, np_dtype
from kernellab.backends.interpreter.frame import Frame
from kernellab.backends.interpreter.memory import Buffer, Memory, base_address
from kernellab.backends.interpreter.ops import constant_array
from kernellab.backends.interpreter.trace import AccessTrace
from kernellab.ir import tt

_ELEMENTS_PER_VALUE = 1 << 21


def prepare(module: ModuleOp) -> InterpretedKernel:
    """Compile the public tt.func of an inlined TTIR module for the interpreter."""
    func = tt.entry_function(module)
    if any(isinstance(op, tt.CallOp) for op in func.walk()):
        raise ValueError("the module still contains tt.call; run the TTIR inline pass first")
    return InterpretedKernel(func)


def _spins(func: tt.FuncOp) -> bool:
    """Does an scf.while loop contain an atomic (a lock that other programs release)?"""
    return any(
        isinstance(op, scf.WhileOp)
        and any(isinstance(o, tt.AtomicRMWOp | tt.AtomicCASOp) for o in op.walk())
        for op in func.walk()
    )


def _reinterprets_pointers(func: tt.FuncOp) -> bool:
    """Can an address be misaligned for its element type (int_to_ptr, pointer bitcasts)?"""
    for op in func.walk():
        if isinstance(op, tt.IntToPtrOp):
            return True
        if isinstance(op, tt.BitcastOp) and isinstance(tt.element_type(op.result.type), tt.PointerType):
            return True
    return False


class InterpretedKernel:
    """A TTIR kernel pre-decoded into closures; `run` may be called many times."""

    def __init__(self, func: tt.FuncOp):
        self.name = func.sym_name.data
        args = func.body.block.args
        self.arg_names = [a.name_hint or f"arg{k}" for k, a in enumerate(args)]
        self.arg_types = [a.type for a in args]
        self._is_ptr = [isinstance(t, tt.PointerType) for t in self.arg_types]
        self._arg_dtypes = [np_dtype(t) for t in self.arg_types]
        self.per_program = _spins(func)
        self._check_alignment = _reinterprets_pointers(func)
        compiler = Compiler()
        self._arg_slots = [compiler.slot(a) for a in args]
        self._body = compiler.block(func.body.block)
        self._template = compiler.template
        numel = [1]
        for op in func.walk():
            for r in op.results:
                if isinstance(r.type, TensorType):
                    numel.append(int(np.prod(r.type.get_shape())))
        self._chunk = 1 if self.per_program else max(1, _ELEMENTS_PER_VALUE // max(numel))

    def run(self, args: Sequence, grid: Sequence[int], trace: AccessTrace | None = None) -> None:
        """Run every program of `grid`; pointer arguments (numpy arrays) are written in place."""
        if len(args) != len(self.arg_names):
            raise TypeError(
                f"kernel '{self.name}' takes {len(self.arg_names)} arguments "
                f"({', '.join(self.arg_names)}), got {len(args)}"
            )
        grid = tuple(int(g) for g in grid) + (1,) * (3 - len(grid))
        env = list(self._template)
        buffers = []
        for k, (value, slot) in enumerate(zip(args, self._arg_slots)):
            if self._is_ptr[k]:
                buffers.append(Buffer(self.arg_names[k], value, base_address(k)))
                env[slot] = np.array([base_address(k)], I64)
            else:
                env[slot] = self._scalar(k, value)
        mem = Memory(buffers, self._check_alignment)
        gx, gy, _ = grid
        total = grid[0] * grid[1] * grid[2]
        with np.errstate(all="ignore"):
            for start in range(0, total, self._chunk):
                prog = np.arange(start, min(total, start + self._chunk))
                pid = tuple(p.astype(np.int32) for p in (prog % gx, prog // gx % grid[1], prog // (gx * grid[1])))
                frame = Frame(env if total <= self._chunk else list(env), pid, prog, grid, mem, trace)
                self._body.run(frame)

    def _scalar(self, k: int, value) -> np.ndarray:
        dt = self._arg_dtypes[k]
        if isinstance(value, np.ndarray | np.generic):
            value = value.item()
        if not isinstance(value, int | float | bool):
            raise TypeError(
                f"argument '{self.arg_names[k]}' must be a number (it is {self.arg_types[k]}), "
                f"got {type(value).__name__}"
            )
        return constant_array([value], dt)
