"""Target names: which built-in backend compiles a target, answered without importing any
backend (backends/__init__.py's table loads a backend only when a lookup picks it)."""

from __future__ import annotations

NVIDIA_GENERIC_TARGETS = ("cuda", "nvidia")  # the visible GPU (sm_90 without one)
CPU_TARGET = "cpu"
CPU_TARGETS = (CPU_TARGET, "host")
AMD_ARCHS = ("gfx942", "gfx950")


def parse_arch(target: str) -> tuple[int, str]:
    """'sm_90' → (90, 'sm_90'); 'sm_90a' → (90, 'sm_90a'). Raises ValueError for anything else."""
    t = str(target)
    digits = t[3:-1] if t.endswith("a") else t[3:]
    if not (t.startswith("sm_") and len(digits) == 2 and digits.isdigit() and digits.isascii()):
        raise ValueError(f"unknown NVIDIA target {target!r}; use 'sm_80', 'sm_90' or 'sm_90a'")
    return int(digits), t


def is_nvidia_target(target) -> bool:
    if not isinstance(target, str):
        return False
    if target in NVIDIA_GENERIC_TARGETS:
        return True
    try:
        parse_arch(target)
        return True
    except ValueError:
        return False


def is_cpu_target(target) -> bool:
    return target in CPU_TARGETS


def is_amd_target(target) -> bool:
    return target in AMD_ARCHS


__all__ = [
    "NVIDIA_GENERIC_TARGETS", "CPU_TARGET", "CPU_TARGETS", "AMD_ARCHS", "parse_arch",
    "is_nvidia_target", "is_cpu_target", "is_amd_target",
]  # fmt: skip
