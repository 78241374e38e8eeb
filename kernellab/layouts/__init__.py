"""Linear layouts: where every element of a tensor lives (register, lane, warp, block), as a
linear map over GF(2), and the named layouts Triton builds from it.

The lowering asks these maps for each thread's coordinates; conversions, vector widths,
broadcast masks and bank conflicts are computed from them; the lab's widgets draw them.
"""

from kernellab.layouts.banks import SharedAccess, analyze, bank_conflicts, bank_map, best_swizzle
from kernellab.layouts.blocked import blocked, slice_layout
from kernellab.layouts.conversion import ConversionPlan, conversion_plan, staging
from kernellab.layouts.dot_operand import dot_operand
from kernellab.layouts.encodings import from_encoding, to_named
from kernellab.layouts.ldmatrix import ldmatrix_access, ldmatrix_rows, stmatrix_access, stmatrix_rows
from kernellab.layouts.linear import HARDWARE_DIMS, LinearLayout, standard_dims
from kernellab.layouts.mma import nvidia_mma_v2, nvidia_mma_v3
from kernellab.layouts.named import Blocked, DotOperand, NvidiaMma, NvmmaShared, Slice, SwizzledShared
from kernellab.layouts.printing import (
    describe_blocked,
    describe_dot_operand,
    describe_mma,
    describe_slice,
    describe_swizzled_shared,
)
from kernellab.layouts.shared import nvmma_shared, nvmma_swizzle, swizzled_shared
from kernellab.layouts.tiling import identity_1d, zeros_1d
from kernellab.layouts.vector import max_contiguous_registers

__all__ = [
    "HARDWARE_DIMS",
    "Blocked",
    "ConversionPlan",
    "DotOperand",
    "LinearLayout",
    "NvidiaMma",
    "SharedAccess",
    "Slice",
    "SwizzledShared",
    "NvmmaShared",
    "analyze",
    "bank_conflicts",
    "bank_map",
    "best_swizzle",
    "blocked",
    "conversion_plan",
    "staging",
    "describe_blocked",
    "describe_dot_operand",
    "describe_mma",
    "describe_slice",
    "describe_swizzled_shared",
    "dot_operand",
    "from_encoding",
    "identity_1d",
    "ldmatrix_access",
    "ldmatrix_rows",
    "max_contiguous_registers",
    "nvidia_mma_v2",
    "nvidia_mma_v3",
    "slice_layout",
    "stmatrix_access",
    "stmatrix_rows",
    "standard_dims",
    "swizzled_shared",
    "nvmma_shared",
    "nvmma_swizzle",
    "to_named",
    "zeros_1d",
]
