"""The host side of a launch: JIT binding and caching, autotuning, the active driver
(`driver.active`, as Triton's), and small integer helpers."""

from __future__ import annotations

from kernellab.runtime import driver, launch_hooks


def cdiv(x: int, y: int) -> int:
    """Ceiling division: how many blocks of `y` cover `x` (the usual grid size)."""
    return (x + y - 1) // y


def next_power_of_2(n: int) -> int:
    """The smallest power of two ≥ n (block sizes must be powers of two); 1 for n ≤ 1."""
    n = int(n)
    return 1 if n <= 1 else 1 << (n - 1).bit_length()


__all__ = ["cdiv", "driver", "launch_hooks", "next_power_of_2"]
