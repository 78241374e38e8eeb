"""AxisInfo: contiguity, divisibility and constancy, checked against hand-worked values."""

from __future__ import annotations

import pytest

from kernellab.ir import parse_module
from kernellab.passes.ttgir import axis_info
from kernellab.passes.ttgir.axis_info import MAX_DIVISIBILITY, AxisInfo, analyze

from .ttir import SOFTMAX_ROWS, vector_add


def values(module) -> dict:
    """SSA name → value, for the names written in the test's IR."""
    found = {}
    for op in module.walk():
        for region in op.regions:
            for block in region.blocks:
                found.update({a.name_hint: a for a in block.args if a.name_hint})
        found.update({r.name_hint: r for r in op.results if r.name_hint})
    return found


@pytest.fixture
def add():
    module = parse_module(vector_add(aligned=True))
    return module, analyze(module), values(module)


def test_make_range_is_contiguous_over_its_length(add):
    _, a, v = add
    assert a[v["range"]] == AxisInfo((1024,), (MAX_DIVISIBILITY,), (1,))


def test_splat_is_constant_over_the_tensor(add):
    _, a, v = add
    assert a[v["nn"]].constancy == (1024,) and a[v["nn"]].divisibility == (16,)


def test_program_id_times_block_is_divisible_by_block(add):
    _, a, v = add
    assert a[v["start"]].divisibility == (1024,)
    assert a[v["offs"]] == AxisInfo((1024,), (1024,), (1,))


def test_aligned_pointer_plus_offsets_is_16_byte_aligned(add):
    _, a, v = add
    assert a[v["xp"]].divisibility == (16,) and a[v["xp"]].contiguity == (1024,)
    assert a.ptr_vector_elems(v["xp"]) == 4  # 16 bytes of f32


def test_mask_against_aligned_bound_is_constant_in_runs_of_its_alignment(add):
    _, a, v = add
    assert a[v["mask"]].constancy == (16,)
    assert a.mask_alignment(v["mask"]) == 16


def test_unaligned_arguments_limit_vectors_to_one_element():
    module = parse_module(vector_add(aligned=False))
    a, v = analyze(module), values(module)
    assert a[v["x"]].divisibility == (4,)  # a f32 pointer is 4-byte aligned by nature
    assert a.ptr_vector_elems(v["xp"]) == 1
    assert a.mask_alignment(v["mask"]) == 1


def test_fp16_vectors_hold_eight_elements():
    module = parse_module(vector_add(aligned=True, elem="f16"))
    a, v = analyze(module), values(module)
    assert a.ptr_vector_elems(v["xp"]) == 8


def test_two_dimensional_row_offsets():
    module = parse_module(SOFTMAX_ROWS)
    a, v = analyze(module), values(module)
    assert a[v["rows2"]] == AxisInfo((4, 1), (4, 1), (1, 1))
    assert a[v["rowoff"]] == AxisInfo((1, 1), (16, 16), (1, 1))
    assert a[v["cb"]].contiguity == (1, 256) and a[v["cb"]].constancy == (4, 1)
    assert a[v["offs"]].contiguity == (1, 256) and a[v["offs"]].divisibility == (1, 16)
    assert a[v["mask"]].constancy == (4, 16)
    assert axis_info.order_from_contiguity(a[v["inp"]]) == [1, 0]


def _body(body: str, args: str = "%n: i32") -> dict:
    module = parse_module(
        f"builtin.module {{\n  tt.func public @k({args}) {{\n{body}\n    tt.return\n  }}\n}}\n"
    )
    a = analyze(module)
    return {name: a[value] for name, value in values(module).items()}


def test_division_and_remainder_by_powers_of_two():
    info = _body("""
    %r = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %c8 = arith.constant dense<8> : tensor<64xi32>
    %q = arith.divsi %r, %c8 : tensor<64xi32>
    %m = arith.remsi %r, %c8 : tensor<64xi32>
    %s = arith.shrui %r, %c8 : tensor<64xi32>""")
    assert info["q"].constancy == (8,) and info["q"].contiguity == (1,)
    assert info["m"].contiguity == (8,) and info["m"].divisibility == (8,)
    assert info["s"].constancy == (64,)  # r >> 8 is 0 for r < 256: runs as long as the range


def test_remainder_by_an_aligned_runtime_value_keeps_aligned_runs():
    info = _body(
        """
    %r = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %ns = tt.splat %n : i32 -> tensor<64xi32>
    %m = arith.remsi %r, %ns : tensor<64xi32>""",
        args="%n: i32 {tt.divisibility = 16 : i32}",
    )
    assert info["m"].contiguity == (16,)


def test_multiplication_by_a_runtime_value_loses_contiguity():
    info = _body("""
    %r = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %ns = tt.splat %n : i32 -> tensor<64xi32>
    %p = arith.muli %r, %ns : tensor<64xi32>""")
    assert info["p"] == AxisInfo((1,), (1,), (1,))


def test_hints_raise_what_is_known():
    info = _body("""
    %l = tt.load %p : tensor<64x!tt.ptr<i32>>
    %h = arith.addi %l, %l {tt.contiguity = dense<64> : tensor<1xi32>, tt.divisibility = dense<16> : tensor<1xi32>} : tensor<64xi32>""",
                 args="%p: tensor<64x!tt.ptr<i32>>")  # fmt: skip
    assert info["l"] == AxisInfo((1,), (1,), (1,))
    assert info["h"].contiguity == (64,) and info["h"].divisibility == (16,)


def test_equal_to_1_arguments_are_constant_one():
    info = _body(
        """
    %r = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %ss = tt.splat %s : i32 -> tensor<64xi32>
    %p = arith.muli %r, %ss : tensor<64xi32>""",
        args="%s: i32 {tt.equal_to_1}",
    )
    assert info["p"].contiguity == (64,)


def test_loop_carried_values_keep_only_what_holds_on_every_iteration():
    info = _body("""
    %c0 = arith.constant 0 : i32
    %c64 = arith.constant 64 : i32
    %init = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %res = scf.for %i = %c0 to %n step %c64 iter_args(%acc = %init) -> (tensor<64xi32>) : i32 {
      %is = tt.splat %i : i32 -> tensor<64xi32>
      %next = arith.addi %acc, %is : tensor<64xi32>
      scf.yield %next : tensor<64xi32>
    }""")
    assert info["i"].divisibility == (64,)
    assert info["res"].contiguity == (64,) and info["res"].divisibility == (64,)
    assert info["acc"] == info["res"]


def test_of_finds_the_module_and_caches_it(add):
    module, _, v = add
    assert AxisInfo.of(v["offs"]).contiguity == (1024,)
    axis_info.invalidate(module)
    assert AxisInfo.of(v["xp"]).divisibility == (16,)
