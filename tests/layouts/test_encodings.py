"""from_encoding: TTGIR attributes map to the same layouts as the direct constructors, and the
layouts' text matches the attributes' printed form."""

from __future__ import annotations

import io

import pytest

from kernellab.layouts import (
    blocked,
    dot_operand,
    from_encoding,
    nvidia_mma_v2,
    nvidia_mma_v3,
    slice_layout,
    swizzled_shared,
)

ttg = pytest.importorskip("kernellab.ir.ttg")


def printed(attr) -> str:
    from xdsl.printer import Printer

    stream = io.StringIO()
    Printer(stream=stream).print_attribute(attr)
    return stream.getvalue()


BLOCKED = ([1, 8], [8, 4], [8, 1], [1, 0])


def cases():
    b = ttg.BlockedEncodingAttr(*BLOCKED)
    mma2 = ttg.NvidiaMmaEncodingAttr(2, 0, [2, 2], [16, 8])
    mma3 = ttg.NvidiaMmaEncodingAttr(3, 0, [4, 2], [16, 64, 16])
    return [
        (b, [128, 32], blocked(*BLOCKED, [128, 32])),
        (ttg.SliceEncodingAttr(1, b), [128], slice_layout(blocked(*BLOCKED, [128, 1]), 1)),
        (ttg.SliceEncodingAttr(0, b), [32], slice_layout(blocked(*BLOCKED, [1, 32]), 0)),
        (mma2, [64, 64], nvidia_mma_v2([2, 2], [64, 64])),
        (mma3, [128, 128], nvidia_mma_v3([4, 2], [16, 64, 16], [128, 128])),
        (
            ttg.DotOperandEncodingAttr(0, mma2, 2),
            [64, 32],
            dot_operand(0, nvidia_mma_v2([2, 2], [1, 1]), 2, [64, 32]),
        ),
        (
            ttg.DotOperandEncodingAttr(1, mma2, 4),
            [64, 64],
            dot_operand(1, nvidia_mma_v2([2, 2], [1, 1]), 4, [64, 64]),
        ),
        (
            ttg.DotOperandEncodingAttr(0, b),
            [128, 16],
            dot_operand(0, blocked(*BLOCKED, [1, 1]), 0, [128, 16]),
        ),
        (
            ttg.SwizzledSharedEncodingAttr(8, 1, 8, [1, 0]),
            [64, 64],
            swizzled_shared(8, 1, 8, [1, 0], [64, 64]),
        ),
    ]


@pytest.mark.parametrize("index", range(9))
def test_from_encoding_matches_the_constructors(index):
    attr, shape, expected = cases()[index]
    layout = from_encoding(attr, shape)
    assert layout.equivalent(expected)
    assert layout.out_shape == tuple(shape)
    assert str(layout.encoding) == printed(attr)


def test_unknown_encodings_are_rejected():
    with pytest.raises(TypeError, match="no linear layout"):
        from_encoding(ttg.SharedMemorySpaceAttr(), [4])
    with pytest.raises(ValueError, match="instrShape"):
        from_encoding(ttg.NvidiaMmaEncodingAttr(2, 0, [2, 2], [16, 16]), [64, 64])
