"""Golden tests for fuse_nested_loops: a flatten=True nest becomes one loop over (outer, inner)
steps, guarded by both loops running; nests of another shape stay, with the reason."""

from __future__ import annotations

import re

from kernellab.ir import parse_module
from kernellab.passes import fuse_nested_loops
from tests.filecheck import check, check_not

from .ir import module_text, run_on_body

ARGS = "%p: !tt.ptr<f32>, %a: tensor<16x16xf16>, %b: tensor<16x16xf16>, %n: i32, %k: i32"

# tiles %t of [%x, %n) step 4, each a K loop of [0, %k) onto a zero accumulator, then a store
NEST = """
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %c4 = arith.constant 4 : i32
    %zero = arith.constant dense<0.0> : tensor<16x16xf32>
    %count = arith.constant 0 : i32
    %r = scf.for %t = %c1 to %n step %c4 iter_args(%done = %count) -> (i32) : i32 {
      %off = arith.muli %t, %c4 : i32
      %acc = scf.for %kk = %c0 to %k step %c1 iter_args(%s = %zero) -> (tensor<16x16xf32>) : i32 {
        %d = tt.dot %a, %b, %s {input_precision = "ieee", max_num_imprecise_acc = 0 : i32} : tensor<16x16xf16> * tensor<16x16xf16> -> tensor<16x16xf32>
        scf.yield %d : tensor<16x16xf32>
      }
      %ptr = tt.addptr %p, %off : !tt.ptr<f32>, i32
      %v = "tt.reduce"(%acc) <{axis = 0 : i32}> ({
      ^bb0(%l: f32, %m: f32):
        %sum = arith.addf %l, %m : f32
        tt.reduce.return %sum : f32
      }) : (tensor<16x16xf32>) -> tensor<16xf32>
      %ptrs = tt.splat %ptr : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>>
      tt.store %ptrs, %v : tensor<16x!tt.ptr<f32>>
      %next = arith.addi %done, %c1 : i32
      scf.yield %next : i32
    } {tt.flatten}
    tt.return %r : i32"""


def test_nest_becomes_one_loop_with_the_epilogue_at_the_last_inner_step():
    ir = run_on_body(fuse_nested_loops, NEST, ARGS, "i32")
    check(ir, [
        # trip counts, and the guard: fused only where both loops run
        "arith.divsi", "arith.divsi", re.compile(r"%\w+ = arith.muli"),
        re.compile(r"= scf.if %\w+ -> \(i32\)"),
        # it carries the inner index j (from 0) and the outer induction variable (from %c1)
        re.compile(r"scf.for %\w+ = %\w+ to %\w+ step %\w+ iter_args\(%\w+ = %count, %\w+ = %zero, "
                   r"%(\w+) = %\w+, %(\w+) = %c1\) -> \(i32, tensor<16x16xf32>, i32, i32\)"),
        # the inner induction variable of this step
        "arith.muli", "arith.addi %c0",
        re.compile(r"%d = tt.dot %a, %b, %\w+ \{"),
        # the epilogue at the last inner step, with the prologue's ops only it reads; it
        # yields the outer carried value and the next tile's accumulator: zeros
        "arith.addi", re.compile(r"arith.cmpi eq"), re.compile(r"scf.if %\w+ -> \(i32, tensor<16x16xf32>\)"),
        "%off = arith.muli", "tt.addptr %p, %off", "tt.reduce", "tt.store", "arith.addi",
        re.compile(r"scf.yield %next, %zero : i32, tensor<16x16xf32>"),
        "} else {", re.compile(r"scf.yield %\w+, %d : i32, tensor<16x16xf32>"),
        # j wraps to 0 and the outer variable steps at a tile's last step: no division per step
        re.compile(r"arith.select %\w+, %\w+, %\w+ : i1, i32"), re.compile(r"arith.addi %\w+, %c4"),
        re.compile(r"arith.select %\w+, %\w+, %\w+ : i1, i32"),
        re.compile(r"scf.yield %\w+, %\w+, %\w+, %\w+ : i32, tensor<16x16xf32>, i32, i32"),
        # zero trips: the nest as written, without its inner loop (its results are its inits)
        "} else {", re.compile(r"scf.for %t = %c1 to %n step %c4"), "tt.reduce\"(%zero)", "tt.store",
    ])  # fmt: skip
    check_not(ir, ["tt.flatten"])
    check_not(ir.split("scf.for")[1], ["arith.divui", "arith.divsi", "arith.remsi"])
    assert not re.search(r"arith.select .*tensor", ir)


def test_a_tiles_prologue_runs_at_its_first_step_and_is_carried_to_the_others():
    body = NEST.replace("iter_args(%s = %zero)", "iter_args(%s = %start)").replace(
        "%off = arith.muli %t, %c4 : i32",
        "%off = arith.muli %t, %c4 : i32\n      %f = arith.sitofp %off : i32 to f32\n"
        "      %start = tt.splat %f : f32 -> tensor<16x16xf32>",
    )
    ir = run_on_body(fuse_nested_loops, body, ARGS, "i32")
    # the first tile's values are computed before the loop; the scalar index math of each tile
    # at its first step (a branch, the other steps carry its result), the tensors built from
    # it at every step (they take their loads' layouts later); a value the prologue starts
    # restarts through a select
    check(ir, ["arith.sitofp", "tt.splat", re.compile(r"scf.for .* -> \(i32, tensor<16x16xf32>, i32, i32, f32\)"),
               re.compile(r"%(\w+) = arith.cmpi eq, %\w+, %\w+"), re.compile(r"scf.if %\w+ -> \(f32\)"),
               "arith.sitofp", "scf.yield", "} else {", "scf.yield", re.compile(r"%start_\w+ = tt.splat"),
               re.compile(r"arith.select %\w+, %start\w*, %\w+ : i1, tensor<16x16xf32>"),
               re.compile(r"tt.dot %a, %b, %\w+ \{"), re.compile(r"scf.if %\w+ -> \(i32\)")])  # fmt: skip


def _kept_reason(body: str) -> str:
    module = parse_module(module_text(body, ARGS, "i32"))
    outcome = fuse_nested_loops.run(module)
    assert not outcome.changed
    assert "tt.flatten" in str(module)  # left as written
    return outcome.summary


def test_nests_of_another_shape_stay_and_say_why():
    varying = NEST.replace("scf.for %kk = %c0 to %k", "scf.for %kk = %c0 to %t")
    assert "the inner loop's end is computed in the outer loop" in _kept_reason(varying)
    loaded = NEST.replace("%off = arith.muli %t, %c4 : i32",
                          "%off0 = tt.load %p : !tt.ptr<f32>\n      %off = arith.fptosi %off0 : f32 to i32")
    assert "tt.load before the inner loop" in _kept_reason(loaded)
    flat = NEST.replace(
        """      %acc = scf.for %kk = %c0 to %k step %c1 iter_args(%s = %zero) -> (tensor<16x16xf32>) : i32 {
        %d = tt.dot %a, %b, %s {input_precision = "ieee", max_num_imprecise_acc = 0 : i32} : tensor<16x16xf16> * tensor<16x16xf16> -> tensor<16x16xf32>
        scf.yield %d : tensor<16x16xf32>
      }
""",
        "      %acc = tt.dot %a, %b, %zero {input_precision = \"ieee\", max_num_imprecise_acc = 0 : i32} : "
        "tensor<16x16xf16> * tensor<16x16xf16> -> tensor<16x16xf32>\n",
    )
    assert "holds 0 scf.for directly" in _kept_reason(flat)


def test_loops_without_flatten_are_left_alone():
    module = parse_module(module_text(NEST.replace(" {tt.flatten}", ""), ARGS, "i32"))
    outcome = fuse_nested_loops.run(module)
    assert not outcome.changed and outcome.summary == "no change"
