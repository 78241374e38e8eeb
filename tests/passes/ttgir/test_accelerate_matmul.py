"""Golden TTGIR tests for accelerate_matmul: which dots go to MMA v2, with which warps and
operand layouts, and the reasons the others stay on the FMA path."""

from __future__ import annotations

import re

import pytest

from kernellab.ir import tt
from kernellab.passes.manager import PassManager
from kernellab.passes.ttgir import (
    accelerate_matmul,
    coalesce,
    convert_to_ttgpuir,
    reduce_data_duplication,
    remove_layout_conversions,
)
from tests.filecheck import check, check_not

from .test_passes import run
from .ttir import parse


def dot_ttir(m, n, k, elem="f16", acc="f32", precision="ieee", batch=None):
    """d = dot(a, b, zeros) stored to %out; a and b are function arguments."""
    lead = f"{batch}x" if batch else ""
    zero = "0" if acc.startswith("i") else "0.000000e+00"
    a, b, d = f"tensor<{lead}{m}x{k}x{elem}>", f"tensor<{lead}{k}x{n}x{elem}>", f"tensor<{lead}{m}x{n}x{acc}>"
    return f"""builtin.module {{
  tt.func public @mm(%a: {a}, %b: {b}, %out: !tt.ptr<{acc}> {{tt.divisibility = 16 : i32}}) {{
    %acc = arith.constant dense<{zero}> : {d}
    %d = tt.dot %a, %b, %acc {{input_precision = "{precision}", max_num_imprecise_acc = 0 : i32}} : {a} * {b} -> {d}
    %s = tt.splat %out : !tt.ptr<{acc}> -> tensor<{lead}{m}x{n}x!tt.ptr<{acc}>>
    tt.store %s, %d : tensor<{lead}{m}x{n}x!tt.ptr<{acc}>>
    tt.return
  }}
}}
"""


PIPELINE = (coalesce, accelerate_matmul, remove_layout_conversions, reduce_data_duplication)


def test_fp16_dot_becomes_an_mma_v2_dot_with_operands_through_swizzled_shared_memory():
    ir = run(dot_ttir(32, 64, 16), *PIPELINE)
    check(ir, [
        "#mma = #ttg.nvidia_mma<{versionMajor = 2, versionMinor = 0, warpsPerCTA = [1, 4], instrShape = [16, 8]}>",
        re.compile(r"#shared = #ttg\.swizzled_shared<\{vec = 8, perPhase = \d, maxPhase = \d, order = \[1, 0\]\}>"),
        "%acc = arith.constant dense<0.000000e+00> : tensor<32x64xf32, #mma>",
        re.compile(r"ttg\.local_alloc %a : \(tensor<32x16xf16, #blocked\d?>\) -> !ttg\.memdesc<32x16xf16, #shared, #smem>"),
        "-> tensor<32x16xf16, #ttg.dot_op<{opIdx = 0, parent = #mma, kWidth = 2}>>",
        "ttg.local_alloc %b",
        "-> tensor<16x64xf16, #ttg.dot_op<{opIdx = 1, parent = #mma, kWidth = 2}>>",
        "-> tensor<32x64xf32, #mma>",
        re.compile(r"ttg\.convert_layout %d : tensor<32x64xf32, #mma> -> tensor<32x64xf32, #blocked\d?>"),
        "tt.store",
    ])  # fmt: skip
    check_not(ir, ["ttg.convert_layout %a", "ttg.convert_layout %b", "ttg.convert_layout %acc"])


@pytest.mark.parametrize(
    "elem, acc, precision, k_width",
    [("bf16", "f32", "ieee", 2), ("f16", "f16", "ieee", 2), ("f32", "f32", "tf32", 1),
     ("f32", "f32", "tf32x3", 1), ("i8", "i32", "ieee", 4), ("f8E4M3FN", "f32", "ieee", 4)],
)  # fmt: skip
def test_each_tensor_core_form_gets_its_k_width(elem, acc, precision, k_width):
    ir = run(dot_ttir(64, 64, 32, elem, acc, precision), accelerate_matmul)
    check(ir, [
        "#mma = #ttg.nvidia_mma<{versionMajor = 2, versionMinor = 0, warpsPerCTA = [2, 2], instrShape = [16, 8]}>",
        f"#ttg.dot_op<{{opIdx = 0, parent = #mma, kWidth = {k_width}}}>",
        f"#ttg.dot_op<{{opIdx = 1, parent = #mma, kWidth = {k_width}}}>",
        f"-> tensor<64x64x{acc}, #mma>",
    ])  # fmt: skip


@pytest.mark.parametrize(
    "text, target, reason",
    [
        (dot_ttir(64, 64, 32, "f32", "f32", "ieee"), "sm_90", "fp32 with input_precision='ieee'"),
        (dot_ttir(64, 64, 32, "f64", "f64"), "sm_90", "no mma.sync form for f64"),
        (dot_ttir(8, 64, 32), "sm_90", "the 8x64x32 tile is smaller than one m16n8k16 instruction"),
        (dot_ttir(32, 32, 8), "sm_90", "the 32x32x8 tile is smaller than one m16n8k16 instruction"),
        (dot_ttir(8, 16, 32, batch=2), "sm_90", "the 8x16x32 tile is smaller than one m16n8k16 instruction"),
        (dot_ttir(16, 16, 32, "f32", "f32", "ieee", batch=4), "sm_80", "fp32 with input_precision='ieee'"),
        (dot_ttir(64, 64, 32, "bf16", "bf16"), "sm_90", "no mma.sync form for bf16 into bf16"),
        (dot_ttir(64, 64, 32, "f8E5M2", "f32"), "sm_80", "f8E5M2 mma.sync needs sm_89+, the target is sm_80"),
    ],
)  # fmt: skip
def test_dots_without_a_tensor_core_form_stay_on_fma_and_the_record_says_why(text, target, reason):
    module = parse(text)
    convert_to_ttgpuir.run(module, num_warps=4, target=target)
    (record,) = PassManager([accelerate_matmul]).run(module)
    assert record.summary == f"no change; tt.dot stays on FMA: {reason}"
    dot = next(op for op in module.walk() if isinstance(op, tt.DotOp))
    assert "nvidia_mma" not in str(dot.d.type)


@pytest.mark.parametrize(
    "elem, acc, k_width", [("f16", "f32", 2), ("i8", "i32", 4), ("f16", "f16", 2)]
)
def test_batched_dot_puts_warps_along_the_batch(elem, acc, k_width):
    ir = run(dot_ttir(32, 64, 32, elem, acc, batch=4), *PIPELINE)
    check(ir, [
        "#mma = #ttg.nvidia_mma<{versionMajor = 2, versionMinor = 0, warpsPerCTA = [4, 1, 1], instrShape = [1, 16, 8]}>",
        re.compile(r"#shared = #ttg\.swizzled_shared<\{vec = \d+, perPhase = \d, maxPhase = \d+, order = \[\d, \d, \d\]\}>"),
        f"-> tensor<4x32x32x{elem}, #ttg.dot_op<{{opIdx = 0, parent = #mma, kWidth = {k_width}}}>>",
        f"-> tensor<4x32x64x{elem}, #ttg.dot_op<{{opIdx = 1, parent = #mma, kWidth = {k_width}}}>>",
        f"-> tensor<4x32x64x{acc}, #mma>",
        "tt.store",
    ])  # fmt: skip


@pytest.mark.parametrize(
    "shape, warps, expected",
    [((128, 256), 8, [2, 4]), ((64, 64), 4, [2, 2]), ((128, 32), 4, [4, 1]), ((32, 64), 4, [1, 4]),
     ((16, 16), 4, [2, 2]), ((256, 128), 8, [4, 2]), ((64, 64), 1, [1, 1])],
)  # fmt: skip
def test_warps_per_tile_balances_the_instruction_tiles_per_warp(shape, warps, expected):
    m, n = shape
    module = parse(dot_ttir(m, n, 32))
    convert_to_ttgpuir.run(module, num_warps=warps, target="sm_90")
    dot = next(op for op in module.walk() if isinstance(op, tt.DotOp))
    assert accelerate_matmul.warps_per_tile(dot, warps) == expected
