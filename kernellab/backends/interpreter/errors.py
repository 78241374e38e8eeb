"""Errors the interpreter raises while running a kernel; each names the source line and program."""

from __future__ import annotations


class InterpreterError(RuntimeError):
    """Base class for errors raised by kernels running on the interpreter."""


class OutOfBoundsError(InterpreterError, IndexError):
    """A load, store or atomic touched memory outside its argument's buffer (nothing was accessed)."""


class GatherIndexError(InterpreterError, IndexError):
    """A `tl.gather` index outside its source's axis (undefined in Triton, so refused here)."""


class DeviceAssertionError(InterpreterError, AssertionError):
    """A `tl.device_assert` condition was false."""


def describe_program(pid: tuple[int, int, int]) -> str:
    return f"program ({pid[0]}, {pid[1]}, {pid[2]})"
