"""Errors a kernel running on the CPU backend raises; each names the source line and program."""

from __future__ import annotations


class CpuKernelError(RuntimeError):
    """Base class for errors raised by kernels running on the CPU backend."""


class CpuOutOfBoundsError(CpuKernelError, IndexError):
    """Under `debug=True`: a load, store or atomic touched memory outside every argument's
    buffer (that access was skipped)."""


class CpuAssertionError(CpuKernelError, AssertionError):
    """A `tl.device_assert` condition was false."""


__all__ = ["CpuKernelError", "CpuOutOfBoundsError", "CpuAssertionError"]
