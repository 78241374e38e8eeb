"""The ttg dialect: encodings print exactly as Triton's, aliases print once and parse back."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects.builtin import TensorType, f16, f32

from kernellab.ir import parse_module, print_module, ttg
from tests.filecheck import check, check_not

BLOCKED = ttg.BlockedEncodingAttr([1, 8], [8, 4], [8, 1], [1, 0])
MMA = ttg.NvidiaMmaEncodingAttr(2, 0, [2, 2], [16, 8])


@pytest.mark.parametrize(
    "attr, text",
    [
        (BLOCKED, "#ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [8, 1], order = [1, 0]}>"),
        (MMA, "#ttg.nvidia_mma<{versionMajor = 2, versionMinor = 0, warpsPerCTA = [2, 2], instrShape = [16, 8]}>"),
        (ttg.SwizzledSharedEncodingAttr(8, 1, 8, [1, 0]), "#ttg.swizzled_shared<{vec = 8, perPhase = 1, maxPhase = 8, order = [1, 0]}>"),
        (ttg.SharedMemorySpaceAttr(), "#ttg.shared_memory"),
    ],
)  # fmt: skip
def test_encodings_print_like_triton(attr, text):
    assert str(attr) == text


def test_fields_read_as_python_values():
    assert BLOCKED.size_per_thread == (1, 8) and BLOCKED.threads_per_warp == (8, 4)
    assert BLOCKED.warps_per_cta == (8, 1) and BLOCKED.order == (1, 0) and BLOCKED.rank == 2
    s = ttg.SliceEncodingAttr(1, BLOCKED)
    assert (s.dim, s.parent, s.rank) == (1, BLOCKED, 1)
    d = ttg.DotOperandEncodingAttr(0, MMA, 2)
    assert (d.op_idx, d.parent, d.k_width) == (0, MMA, 2)
    assert (MMA.version_major, MMA.version_minor, MMA.instr_shape) == (2, 0, (16, 8))
    m = ttg.MemDescType(
        [64, 32], f16, ttg.SwizzledSharedEncodingAttr(8, 1, 8, [1, 0]), mutable=True
    )
    assert m.shape == (64, 32) and m.mutable and m.element_type == f16
    assert ttg.BlockedEncodingAttr([1], [32], [4], [0]) != ttg.BlockedEncodingAttr(
        [4], [32], [4], [0]
    )


TTGIR = """\
#blocked = #ttg.blocked<{sizePerThread = [4], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
#blocked1 = #ttg.blocked<{sizePerThread = [1, 1], threadsPerWarp = [1, 32], warpsPerCTA = [4, 1], order = [1, 0]}>
#mma = #ttg.nvidia_mma<{versionMajor = 2, versionMinor = 0, warpsPerCTA = [2, 2], instrShape = [16, 8]}>
#shared = #ttg.swizzled_shared<{vec = 8, perPhase = 1, maxPhase = 8, order = [1, 0]}>
#smem = #ttg.shared_memory
builtin.module attributes {"ttg.num-warps" = 4 : i32, ttg.target = "cuda:90"} {
  tt.func public @k(%x: tensor<128xf32, #blocked>) {
    %0 = ttg.convert_layout %x : tensor<128xf32, #blocked> -> tensor<128xf32, #ttg.slice<{dim = 0, parent = #blocked1}>>
    %1 = tt.expand_dims %0 {axis = 0 : i32} : tensor<128xf32, #ttg.slice<{dim = 0, parent = #blocked1}>> -> tensor<1x128xf32, #blocked1>
    %2 = tt.broadcast %1 : tensor<1x128xf32, #blocked1> -> tensor<64x128xf32, #blocked1>
    %3 = arith.truncf %2 : tensor<64x128xf32, #blocked1> to tensor<64x128xf16, #blocked1>
    %4 = ttg.local_alloc %3 : (tensor<64x128xf16, #blocked1>) -> !ttg.memdesc<64x128xf16, #shared, #smem>
    %5 = ttg.local_load %4 : !ttg.memdesc<64x128xf16, #shared, #smem> -> tensor<64x128xf16, #ttg.dot_op<{opIdx = 0, parent = #mma, kWidth = 2}>>
    %6 = ttg.local_alloc : () -> !ttg.memdesc<64x128xf16, #shared, #smem, mutable>
    ttg.local_store %3, %6 : tensor<64x128xf16, #blocked1> -> !ttg.memdesc<64x128xf16, #shared, #smem, mutable>
    %7 = arith.constant dense<0xff800000> : tensor<64x128xf32, #mma>
    ttg.local_dealloc %6 : !ttg.memdesc<64x128xf16, #shared, #smem, mutable>
    tt.return
  }
}
"""


def test_aliased_text_round_trips_exactly():
    module = parse_module(TTGIR)
    module.verify()
    assert print_module(module) == TTGIR


def test_each_encoding_is_printed_once_and_referenced_by_alias():
    text = print_module(parse_module(TTGIR))
    assert text.count("#ttg.blocked<") == 2 and text.count("#ttg.nvidia_mma<") == 1
    check(text, ["#blocked = ", "#blocked1 = ", "#mma = ", "#shared = ", "#smem = #ttg.shared_memory",
                 "tensor<128xf32, #blocked>", "#ttg.slice<{dim = 0, parent = #blocked1}>",
                 "#ttg.dot_op<{opIdx = 0, parent = #mma, kWidth = 2}>"])  # fmt: skip


def test_aliases_are_numbered_in_order_of_first_use():
    one = ttg.BlockedEncodingAttr([1], [32], [4], [0])
    two = ttg.BlockedEncodingAttr([4], [32], [4], [0])
    text = (
        "builtin.module {\n  tt.func public @k("
        f"%a: {TensorType(f32, [8], two)}, %b: {TensorType(f32, [8], one)}) {{\n    tt.return\n  }}\n}}\n"
    )
    printed = print_module(parse_module(text))
    check(printed, [f"#blocked = {two}", f"#blocked1 = {one}",
                    "%a: tensor<8xf32, #blocked>, %b: tensor<8xf32, #blocked1>"])  # fmt: skip


def test_ttir_prints_without_alias_header():
    text = "builtin.module {\n  tt.func public @k(%x: tensor<8xf32>) {\n    tt.return\n  }\n}\n"
    printed = print_module(parse_module(text))
    assert printed == text
    check_not(printed, ["#"])


def test_hex_float_constants_parse_as_bit_patterns():
    module = parse_module(TTGIR)
    const = next(op for op in module.walk() if op.name == "arith.constant")
    assert np.isneginf(const.value.get_values()[0])


def test_unknown_encoding_field_is_an_error():
    bad = TTGIR.replace("maxPhase = 8", "maxPhaze = 8")
    with pytest.raises(Exception, match="maxPhaze"):
        parse_module(bad)
