"""From TTGIR encoding attributes (kernellab/ir/ttg.py) to LinearLayouts.

This is the only module of kernellab.layouts that knows the IR; it imports it lazily so the
layout core stays usable (and importable) without xDSL. `from_encoding` also accepts the
plain records of kernellab.layouts.named.
"""

from __future__ import annotations

from collections.abc import Sequence

from kernellab.layouts.blocked import blocked, slice_layout
from kernellab.layouts.dot_operand import dot_operand
from kernellab.layouts.linear import LinearLayout
from kernellab.layouts.mma import nvidia_mma_v2, nvidia_mma_v3
from kernellab.layouts.named import Blocked, DotOperand, NvidiaMma, NvmmaShared, Slice, SwizzledShared
from kernellab.layouts.shared import nvmma_shared, swizzled_shared


def to_named(attr):
    """The record of kernellab.layouts.named equivalent to a `ttg` encoding attribute."""
    from kernellab.ir import ttg

    if isinstance(attr, (Blocked, NvidiaMma, Slice, DotOperand, SwizzledShared, NvmmaShared)):
        return attr
    if isinstance(attr, ttg.BlockedEncodingAttr):
        return Blocked(attr.size_per_thread, attr.threads_per_warp, attr.warps_per_cta, attr.order)
    if isinstance(attr, ttg.SliceEncodingAttr):
        return Slice(attr.dim, to_named(attr.parent))
    if isinstance(attr, ttg.NvidiaMmaEncodingAttr):
        return NvidiaMma(
            attr.version_major, attr.warps_per_cta, attr.instr_shape, attr.version_minor
        )
    if isinstance(attr, ttg.DotOperandEncodingAttr):
        return DotOperand(attr.op_idx, to_named(attr.parent), attr.k_width)
    if isinstance(attr, ttg.SwizzledSharedEncodingAttr):
        return SwizzledShared(attr.vec, attr.per_phase, attr.max_phase, attr.order)
    if isinstance(attr, ttg.NVMMASharedEncodingAttr):
        return NvmmaShared(attr.swizzle_bytes, attr.element_bits, bool(attr.transposed))
    raise TypeError(f"no linear layout for encoding {attr}")


def from_encoding(attr, shape: Sequence[int]) -> LinearLayout:
    """The LinearLayout of a tensor (or shared buffer) of `shape` with encoding `attr`."""
    record = to_named(attr)
    shape = [int(s) for s in shape]
    if isinstance(record, Blocked):
        return blocked(
            record.size_per_thread,
            record.threads_per_warp,
            record.warps_per_cta,
            record.order,
            shape,
        )
    if isinstance(record, Slice):
        parent_shape = shape[: record.dim] + [1] + shape[record.dim :]
        return slice_layout(from_encoding(record.parent, parent_shape), record.dim)
    if isinstance(record, NvidiaMma):
        if record.version_major == 2:
            if record.instr_shape != (16, 8):
                raise ValueError(f"mma v2 has instrShape [16, 8], got {list(record.instr_shape)}")
            return nvidia_mma_v2(record.warps_per_cta, shape)
        if record.version_major == 3:
            return nvidia_mma_v3(record.warps_per_cta, record.instr_shape, shape)
        raise ValueError(f"unsupported nvidia_mma versionMajor {record.version_major}")
    if isinstance(record, DotOperand):
        return dot_operand(record.op_idx, record.parent, record.k_width, shape)
    if isinstance(record, NvmmaShared):
        return nvmma_shared(record.swizzle_bytes, record.element_bits, record.transposed, shape)
    return swizzled_shared(record.vec, record.per_phase, record.max_phase, record.order, shape)
