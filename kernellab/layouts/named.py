"""Records of the named layouts (the parameters of Triton's layout attributes).

A LinearLayout built by a constructor carries one of these as `.encoding`, so the lab and
error messages can say `#ttg.blocked<{...}>` instead of listing bases. They hold plain ints
and tuples and know nothing of xDSL; `str()` gives Triton's attribute syntax.
"""

from __future__ import annotations

from dataclasses import dataclass

from kernellab.layouts import printing


def _ints(values) -> tuple[int, ...]:
    return tuple(int(v) for v in values)


@dataclass(frozen=True)
class Blocked:
    size_per_thread: tuple[int, ...]
    threads_per_warp: tuple[int, ...]
    warps_per_cta: tuple[int, ...]
    order: tuple[int, ...]

    def __post_init__(self):
        for field in ("size_per_thread", "threads_per_warp", "warps_per_cta", "order"):
            object.__setattr__(self, field, _ints(getattr(self, field)))

    def __str__(self) -> str:
        return printing.describe_blocked(
            self.size_per_thread, self.threads_per_warp, self.warps_per_cta, self.order
        )


@dataclass(frozen=True)
class NvidiaMma:
    """version_major 2: mma.sync (instr_shape [16, 8]); 3: wgmma (instr_shape [16, N, 16])."""

    version_major: int
    warps_per_cta: tuple[int, ...]
    instr_shape: tuple[int, ...]
    version_minor: int = 0

    def __post_init__(self):
        object.__setattr__(self, "warps_per_cta", _ints(self.warps_per_cta))
        object.__setattr__(self, "instr_shape", _ints(self.instr_shape))

    def __str__(self) -> str:
        return printing.describe_mma(
            self.version_major, self.version_minor, self.warps_per_cta, self.instr_shape
        )


@dataclass(frozen=True)
class Slice:
    dim: int
    parent: object

    def __str__(self) -> str:
        return printing.describe_slice(self.dim, str(self.parent))


@dataclass(frozen=True)
class DotOperand:
    """k_width is 0 for a blocked parent (the FMA dot), as in Triton."""

    op_idx: int
    parent: object
    k_width: int = 0

    def __str__(self) -> str:
        return printing.describe_dot_operand(self.op_idx, str(self.parent), self.k_width)


@dataclass(frozen=True)
class SwizzledShared:
    vec: int
    per_phase: int
    max_phase: int
    order: tuple[int, ...]

    def __post_init__(self):
        object.__setattr__(self, "order", _ints(self.order))

    def __str__(self) -> str:
        return printing.describe_swizzled_shared(
            self.vec, self.per_phase, self.max_phase, self.order
        )


@dataclass(frozen=True)
class NvmmaShared:
    """Triton's #ttg.nvmma_shared: the shared layout wgmma descriptors describe."""

    swizzle_bytes: int
    element_bits: int
    transposed: bool = False

    def __str__(self) -> str:
        transposed = ", transposed = true" if self.transposed else ""
        return (f"#ttg.nvmma_shared<{{swizzlingByteWidth = {self.swizzle_bytes}{transposed}, "
                f"elementBitWidth = {self.element_bits}}}>")  # fmt: skip
