"""Golden tests for cse: pure duplicates merge, memory ops never do, regions scope reuse."""

from __future__ import annotations

import re

from kernellab.passes import cse
from tests.filecheck import check, check_not

from .ir import run_on_body


def test_duplicate_pure_ops_merge_keeping_the_first():
    ir = run_on_body(
        cse,
        """
    %s1 = tt.splat %n : i32 -> tensor<8xi32>
    %r = tt.make_range {start = 0 : i32, end = 8 : i32} : tensor<8xi32>
    %m1 = arith.cmpi slt, %r, %s1 : tensor<8xi32>
    %s2 = tt.splat %n : i32 -> tensor<8xi32>
    %m2 = arith.cmpi slt, %r, %s2 : tensor<8xi32>
    %c1 = arith.constant 4 : i32
    %c2 = arith.constant 4 : i32
    %sum = arith.addi %c1, %c2 : i32
    tt.return %m1, %m2, %sum : tensor<8xi1>, tensor<8xi1>, i32""",
        args="%n: i32",
        results="(tensor<8xi1>, tensor<8xi1>, i32)",
    )
    check(ir, ["%s1 = tt.splat", "%m1 = arith.cmpi slt, %r, %s1", "arith.addi %c1, %c1",
               "tt.return %m1, %m1, %sum"])  # fmt: skip
    check_not(ir, ["%s2", "%m2", "%c2"])


def test_different_predicates_attributes_or_types_do_not_merge():
    ir = run_on_body(
        cse,
        """
    %a = arith.cmpi slt, %x, %y : i32
    %b = arith.cmpi sgt, %x, %y : i32
    %c = arith.constant 0 : i32
    %d = arith.constant 0 : i64
    %e = tt.get_program_id x : i32
    %f = tt.get_program_id y : i32
    tt.return %a, %b, %c, %d, %e, %f : i1, i1, i32, i64, i32, i32""",
        args="%x: i32, %y: i32",
        results="(i1, i1, i32, i64, i32, i32)",
        changed=False,
    )
    check(ir, ["tt.return %a, %b, %c, %d, %e, %f"])


def test_loads_are_not_merged_across_a_store():
    ir = run_on_body(
        cse,
        """
    %v1 = tt.load %p : !tt.ptr<f32>
    %w = arith.addf %v1, %v1 : f32
    tt.store %p, %w : !tt.ptr<f32>
    %v2 = tt.load %p : !tt.ptr<f32>
    tt.return %v2 : f32""",
        args="%p: !tt.ptr<f32>",
        results="f32",
        changed=False,
    )
    check(ir, ["%v1 = tt.load %p", "tt.store %p, %w", "%v2 = tt.load %p", "tt.return %v2"])


def test_outer_values_are_reused_inside_regions_not_the_reverse():
    ir = run_on_body(
        cse,
        """
    %outer = arith.muli %x, %x : i32
    %r = scf.if %c -> (i32) {
      %inner = arith.muli %x, %x : i32
      %only_then = arith.addi %x, %outer : i32
      scf.yield %only_then : i32
    } else {
      %only_else = arith.addi %x, %outer : i32
      scf.yield %only_else : i32
    }
    %after = arith.addi %x, %outer : i32
    %s = arith.addi %r, %after : i32
    tt.return %s : i32""",
        args="%x: i32, %c: i1",
        results="i32",
    )
    # %inner merges into %outer; the two branches' adds and %after are in sibling/outer scopes
    check(ir, ["%outer = arith.muli", "scf.if", "%only_then = arith.addi %x, %outer",
               "scf.yield %only_then", "%only_else = arith.addi %x, %outer",
               "%after = arith.addi %x, %outer"])  # fmt: skip
    check_not(ir, ["%inner ="])


def test_loop_body_reuses_values_from_before_the_loop():
    ir = run_on_body(
        cse,
        """
    %lb = arith.constant 0 : i32
    %step = arith.constant 1 : i32
    %base = tt.splat %x : i32 -> tensor<4xi32>
    %r = scf.for %i = %lb to %n step %step iter_args(%acc = %base) -> (tensor<4xi32>) : i32 {
      %again = tt.splat %x : i32 -> tensor<4xi32>
      %one = arith.constant 1 : i32
      %next = arith.addi %acc, %again : tensor<4xi32>
      scf.yield %next : tensor<4xi32>
    }
    tt.return %r : tensor<4xi32>""",
        args="%x: i32, %n: i32",
        results="tensor<4xi32>",
    )
    check(ir, [re.compile(r"scf.for .*\{"), "%next = arith.addi %acc, %base"])
    check_not(ir, ["%again", "%one"])


def test_immutable_shared_copies_of_one_value_merge_and_mutable_buffers_do_not():
    # two dots reading one Q stage it twice; one buffer holds it for both
    shared = "#ttg.swizzled_shared<{vec = 1, perPhase = 1, maxPhase = 1, order = [1, 0]}>"
    frozen = f"!ttg.memdesc<16x16xf16, {shared}, #ttg.shared_memory>"
    mutable = f"!ttg.memdesc<16x16xf16, {shared}, #ttg.shared_memory, mutable>"
    ir = run_on_body(
        cse,
        f"""
    %q1 = ttg.local_alloc %x : (tensor<16x16xf16>) -> {frozen}
    %q2 = ttg.local_alloc %x : (tensor<16x16xf16>) -> {frozen}
    %y1 = ttg.local_load %q1 : {frozen} -> tensor<16x16xf16>
    %y2 = ttg.local_load %q2 : {frozen} -> tensor<16x16xf16>
    %r1 = ttg.local_alloc : () -> {mutable}
    %r2 = ttg.local_alloc : () -> {mutable}
    %z1 = ttg.local_alloc %y1 : (tensor<16x16xf16>) -> {frozen}
    tt.return %y1, %y2, %r1, %r2, %z1 : tensor<16x16xf16>, tensor<16x16xf16>, {mutable}, {mutable}, {frozen}""",
        args="%x: tensor<16x16xf16>",
        results=f"(tensor<16x16xf16>, tensor<16x16xf16>, {mutable}, {mutable}, {frozen})",
    )
    check(ir, ["%q1 = ttg.local_alloc %x", "%y2 = ttg.local_load %q1", "%r1 = ttg.local_alloc :",
               "%r2 = ttg.local_alloc :", "%z1 = ttg.local_alloc %y1"])  # fmt: skip
    check_not(ir, ["%q2"])
