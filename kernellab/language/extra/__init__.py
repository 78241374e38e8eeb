"""`tl.extra`: libraries beyond the core language, under Triton's names (`libdevice`, and
`cuda` for NVIDIA's grid-dependency control and special registers)."""

from kernellab.language.extra import cuda, libdevice

__all__ = ["cuda", "libdevice"]
