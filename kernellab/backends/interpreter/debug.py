"""tt.print (device_print) and tt.assert (device_assert)."""

from __future__ import annotations

import sys

import numpy as np

from kernellab.backends.interpreter.compiler import builds
from kernellab.backends.interpreter.errors import DeviceAssertionError, describe_program
from kernellab.backends.interpreter.dtypes import unsigned
from kernellab.ir import tt


def _format(value, hex_: bool) -> str:
    if hex_:
        bits = unsigned(np.asarray(value).reshape(1).view(np.dtype(f"i{value.dtype.itemsize}")))
        return f"0x{int(bits[0]):0{2 * value.dtype.itemsize}x}"
    if value.dtype == np.bool_:
        return str(int(value))
    return str(value.item() if value.dtype.kind in "iuf" else float(value))


@builds(tt.PrintOp)
def _print(c, op):
    """Prints one line per program and element, like Triton: `pid (x, y, z) idx (i, j) prefix value`."""
    slots = [c.slot(v) for v in op.args]
    prefix, hex_ = op.prefix.data, op.hex.value.data != 0
    label = prefix.strip()

    def run(fr):
        if not slots:
            for row in range(fr.P):
                print(f"pid {fr.program_of(row)} {label}", file=sys.stdout)
            return
        for n, s in enumerate(slots):
            v = fr.env[s]
            v = np.broadcast_to(v, (fr.P,) + v.shape[1:])
            suffix = f" (operand {n})" if len(slots) > 1 else ""
            for row in range(fr.P):
                pid = fr.program_of(row)
                for index in np.ndindex(*v.shape[1:]):
                    idx = ", ".join(str(i) for i in index)
                    text = _format(v[(row, *index)], hex_)
                    print(f"pid {pid} idx ({idx}) {label}{suffix} {text}".replace("  ", " "), file=sys.stdout)

    return run


@builds(tt.AssertOp)
def _assert(c, op):
    return condition_check(c, op, f"device assertion failed: {op.message.data}", "")


def condition_check(c, op, failure: str, consequence: str):
    """The instruction checking `op.condition` in every program: a false element raises a
    DeviceAssertionError saying `failure`, the program and the element, then `consequence`."""
    cond = c.slot(op.condition)
    where = c.location(op)

    def run(fr):
        v = fr.env[cond]
        if v.all():
            return
        at, index = first_false(fr, v)
        raise DeviceAssertionError(f"{where}: {failure} ({at}, index {index}){consequence}")

    return run


def first_false(fr, v: np.ndarray) -> tuple[str, tuple]:
    """(the program, the element index) of the first false element of condition `v`."""
    v = np.broadcast_to(v, (fr.P,) + v.shape[1:])
    first = np.unravel_index(int(np.argmin(v)), v.shape)
    return describe_program(fr.program_of(int(first[0]))), tuple(int(i) for i in first[1:])
