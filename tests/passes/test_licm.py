"""Golden tests for licm: invariant pure ops leave loops; loads and loop-dependent ops stay."""

from __future__ import annotations

import re

from kernellab.passes import licm
from tests.filecheck import check, check_not

from .ir import run_on_body

LOOP_ARGS = "%p: !tt.ptr<f32>, %n: i32, %x: i32"


def test_invariant_ops_hoist_loads_stay():
    ir = run_on_body(
        licm,
        """
    %lb = arith.constant 0 : i32
    %step = arith.constant 1 : i32
    %init = arith.constant 0.0 : f32
    %r = scf.for %i = %lb to %n step %step iter_args(%acc = %init) -> (f32) : i32 {
      %scaled = arith.muli %x, %n : i32
      %ptr = tt.addptr %p, %scaled : !tt.ptr<f32>, i32
      %v = tt.load %ptr : !tt.ptr<f32>
      %moving = tt.addptr %p, %i : !tt.ptr<f32>, i32
      %w = tt.load %moving : !tt.ptr<f32>
      %s = arith.addf %acc, %v : f32
      %t = arith.addf %s, %w : f32
      scf.yield %t : f32
    }
    tt.return %r : f32""",
        LOOP_ARGS,
        "f32",
    )
    check(ir, ["%scaled = arith.muli %x, %n", "%ptr = tt.addptr %p, %scaled",
               re.compile(r"scf.for %i .*\{"), "%v = tt.load %ptr", "%moving = tt.addptr %p, %i",
               "%w = tt.load %moving", "scf.yield"])  # fmt: skip


def test_ops_climb_out_of_nested_loops():
    ir = run_on_body(
        licm,
        """
    %lb = arith.constant 0 : i32
    %step = arith.constant 1 : i32
    scf.for %i = %lb to %n step %step : i32 {
      scf.for %j = %lb to %n step %step : i32 {
        %both = arith.addi %x, %n : i32
        %outer_only = arith.addi %i, %x : i32
        %neither = arith.addi %j, %outer_only : i32
        %ptr = tt.addptr %p, %neither : !tt.ptr<f32>, i32
        %c = arith.constant 1.0 : f32
        tt.store %ptr, %c : !tt.ptr<f32>
      }
    }
    tt.return""",
        LOOP_ARGS,
    )
    check(ir, ["%both = arith.addi %x, %n", "%c = arith.constant 1.0", "scf.for %i",
               "%outer_only = arith.addi %i, %x", "scf.for %j", "%neither = arith.addi %j",
               "tt.store %ptr, %c"])  # fmt: skip


def test_while_body_ops_hoist():
    ir = run_on_body(
        licm,
        """
    %lb = arith.constant 0 : i32
    %w = scf.while (%a = %lb) : (i32) -> i32 {
      %limit = arith.muli %n, %x : i32
      %go = arith.cmpi slt, %a, %limit : i32
      scf.condition(%go) %a : i32
    } do {
    ^bb0(%b: i32):
      %inc = arith.addi %x, %x : i32
      %b1 = arith.addi %b, %inc : i32
      scf.yield %b1 : i32
    }
    tt.return""",
        LOOP_ARGS,
    )
    check(ir, ["%limit = arith.muli", "%inc = arith.addi %x, %x", "scf.while",
               "%go = arith.cmpi slt, %a, %limit", "%b1 = arith.addi %b, %inc"])  # fmt: skip


def test_division_that_could_fault_and_nested_regions_stay():
    ir = run_on_body(
        licm,
        """
    %lb = arith.constant 0 : i32
    %step = arith.constant 1 : i32
    %four = arith.constant 4 : i32
    scf.for %i = %lb to %n step %step : i32 {
      %by_n = arith.divsi %x, %n : i32
      %by_four = arith.divsi %x, %four : i32
      %c = arith.cmpi slt, %i, %x : i32
      scf.if %c {
        %in_branch = arith.muli %x, %x : i32
        %q = tt.addptr %p, %in_branch : !tt.ptr<f32>, i32
        %one = arith.constant 1.0 : f32
        tt.store %q, %one : !tt.ptr<f32>
      }
      %ptr = tt.addptr %p, %by_n : !tt.ptr<f32>, i32
      %ptr2 = tt.addptr %ptr, %by_four : !tt.ptr<f32>, i32
      %zero = arith.constant 0.0 : f32
      tt.store %ptr2, %zero : !tt.ptr<f32>
    }
    tt.return""",
        LOOP_ARGS,
    )
    check(ir, ["%by_four = arith.divsi %x, %four", "%zero = arith.constant", "scf.for",
               "%by_n = arith.divsi %x, %n", "scf.if", "%in_branch = arith.muli",
               "%ptr = tt.addptr %p, %by_n"])  # fmt: skip


def test_nothing_invariant_means_unchanged():
    ir = run_on_body(
        licm,
        """
    %lb = arith.constant 0 : i32
    %step = arith.constant 1 : i32
    scf.for %i = %lb to %n step %step : i32 {
      %ptr = tt.addptr %p, %i : !tt.ptr<f32>, i32
      %v = tt.load %ptr : !tt.ptr<f32>
      tt.store %ptr, %v : !tt.ptr<f32>
    }
    tt.return""",
        LOOP_ARGS,
        changed=False,
    )
    check_not(ir, ["arith.muli"])
    check(ir, ["scf.for", "%ptr = tt.addptr %p, %i", "%v = tt.load %ptr"])
