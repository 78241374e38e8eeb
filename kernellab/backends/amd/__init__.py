"""AMD GPUs, compile-only: gfx942 (MI300) and gfx950 (MI350) through LLVM AMDGPU.

The target names are here, apart from the backend (backend.py), so that the backend table
(kernellab.backends) can tell an AMD target without loading the AMD backend.
"""

ARCHS = ("gfx942", "gfx950")


def is_amd_target(target) -> bool:
    return target in ARCHS


__all__ = ["ARCHS", "is_amd_target"]
