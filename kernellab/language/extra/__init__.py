"""`tl.extra`: libraries beyond the core language, under Triton's names (`libdevice`, and
`cuda` for NVIDIA's grid-dependency control and special registers).

Each loads on first access (`tl.extra.libdevice`, `from kernellab.language.extra import cuda`):
libdevice's hundreds of kernel functions read their source when defined, which a compile that
calls none of them need not pay for (issue 13: the first compile in a fresh process)."""

import importlib

_LIBRARIES = ("cuda", "libdevice")


def __getattr__(name: str):
    if name in _LIBRARIES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["cuda", "libdevice"]
