"""Golden tests for dce: dead pure chains go, effects stay, uncalled private functions go."""

from __future__ import annotations

from kernellab.passes import dce
from tests.filecheck import check, check_not

from .ir import apply, run_on_body


def test_dead_chains_go_and_effects_stay():
    ir = run_on_body(
        dce,
        """
    %a = arith.addi %x, %x : i32
    %b = arith.muli %a, %a : i32
    %s = tt.splat %b : i32 -> tensor<4xi32>
    %unused_load = tt.load %p : !tt.ptr<i32>
    %kept = arith.subi %x, %x : i32
    tt.store %p, %kept : !tt.ptr<i32>
    %old = tt.atomic_rmw add, acq_rel, gpu, %p, %x : !tt.ptr<i32>
    tt.return""",
        args="%x: i32, %p: !tt.ptr<i32>",
    )
    # loads stay too: the interpreter reports out-of-bounds loads, so they are observable
    check(ir, ["%unused_load = tt.load", "%kept = arith.subi", "tt.store %p, %kept",
               "tt.atomic_rmw add"])  # fmt: skip
    check_not(ir, ["arith.addi", "arith.muli", "tt.splat"])


def test_pure_loops_without_users_go_effectful_ones_stay():
    ir = run_on_body(
        dce,
        """
    %lb = arith.constant 0 : i32
    %step = arith.constant 1 : i32
    %pure = scf.for %i = %lb to %n step %step iter_args(%acc = %x) -> (i32) : i32 {
      %next = arith.addi %acc, %i : i32
      scf.yield %next : i32
    }
    %stores = scf.for %j = %lb to %n step %step iter_args(%acc2 = %x) -> (i32) : i32 {
      tt.store %p, %acc2 : !tt.ptr<i32>
      scf.yield %acc2 : i32
    }
    %w = scf.while (%a = %lb) : (i32) -> i32 {
      %go = arith.cmpi slt, %a, %n : i32
      scf.condition(%go) %a : i32
    } do {
    ^bb0(%b: i32):
      %b1 = arith.addi %b, %step : i32
      scf.yield %b1 : i32
    }
    tt.return""",
        args="%x: i32, %n: i32, %p: !tt.ptr<i32>",
    )
    check(ir, ["%stores = scf.for %j", "tt.store %p, %acc2", "scf.while"])
    check_not(ir, ["%pure", "%next"])


def test_private_functions_nobody_calls_go():
    text = """builtin.module {
  tt.func public @kernel(%x: i32) -> i32 {
    %y = tt.call @used(%x) : (i32) -> i32
    tt.return %y : i32
  }
  tt.func private @used(%a: i32) -> i32 {
    tt.return %a : i32
  }
  tt.func private @unused(%a: i32) -> i32 {
    %b = tt.call @only_from_unused(%a) : (i32) -> i32
    tt.return %b : i32
  }
  tt.func private @only_from_unused(%a: i32) -> i32 {
    tt.return %a : i32
  }
  tt.func public @other_kernel() {
    tt.return
  }
}
"""
    ir = apply(dce, text)
    check(ir, ["@kernel", "@used", "@other_kernel"])
    check_not(ir, ["@unused", "@only_from_unused"])


def test_nothing_dead_means_unchanged():
    body = "    %y = arith.addi %x, %x : i32\n    tt.return %y : i32"
    ir = run_on_body(dce, body, "%x: i32", "i32", changed=False)
    check(ir, ["%y = arith.addi %x, %x", "tt.return %y"])
