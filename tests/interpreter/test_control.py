"""scf.for / scf.if / scf.while: uniform (one batch) and divergent (per-program subsets)."""

from __future__ import annotations

import numpy as np
from interp_helpers import poisoned, run

from kernellab.backends.interpreter import prepare
from kernellab.ir import parse_module

ROW_SUM = """
builtin.module {
  tt.func public @k(%x_ptr: !tt.ptr<f32>, %out_ptr: !tt.ptr<f32>, %n: i32) {
    %pid = tt.get_program_id x : i32
    %row = arith.muli %pid, %n : i32
    %base = tt.addptr %x_ptr, %row : !tt.ptr<f32>, i32
    %r = tt.make_range {start = 0 : i32, end = 32 : i32} : tensor<32xi32>
    %zero = arith.constant 0.0 : f32
    %acc0 = tt.splat %zero : f32 -> tensor<32xf32>
    %c0 = arith.constant 0 : i32
    %c32 = arith.constant 32 : i32
    %acc = scf.for %k = %c0 to %n step %c32 iter_args(%a = %acc0) -> (tensor<32xf32>) : i32 {
      %ks = tt.splat %k : i32 -> tensor<32xi32>
      %offs = arith.addi %ks, %r : tensor<32xi32>
      %bs = tt.splat %base : !tt.ptr<f32> -> tensor<32x!tt.ptr<f32>>
      %ptrs = tt.addptr %bs, %offs : tensor<32x!tt.ptr<f32>>, tensor<32xi32>
      %v = tt.load %ptrs : tensor<32x!tt.ptr<f32>>
      %s = arith.addf %a, %v : tensor<32xf32>
      scf.yield %s : tensor<32xf32>
    }
    %o32 = arith.muli %pid, %c32 : i32
    %os = tt.splat %out_ptr : !tt.ptr<f32> -> tensor<32x!tt.ptr<f32>>
    %o32s = tt.splat %o32 : i32 -> tensor<32xi32>
    %ooffs = arith.addi %o32s, %r : tensor<32xi32>
    %optrs = tt.addptr %os, %ooffs : tensor<32x!tt.ptr<f32>>, tensor<32xi32>
    tt.store %optrs, %acc : tensor<32x!tt.ptr<f32>>
    tt.return
  }
}
"""


def test_for_with_uniform_bounds_accumulates():
    rng = np.random.default_rng()
    rows, n = 5, 32 * 6
    x = rng.standard_normal((rows, n), dtype=np.float32)
    out = poisoned((rows, 32), np.float32)
    run(ROW_SUM, [x, out, n], (rows,))
    expected = np.zeros((rows, 32), np.float32)
    for k in range(0, n, 32):
        expected += x[:, k : k + 32]
    np.testing.assert_array_equal(out, expected)


# Per program p: acc = sum of x[p, i] for i in range(lb, p + 1) where lb = (p % 3); then store
# only if the program is even; odd programs store -acc through the else branch of a second if.
DIVERGENT = """
builtin.module {
  tt.func public @k(%x_ptr: !tt.ptr<f32>, %out_ptr: !tt.ptr<f32>, %flag_ptr: !tt.ptr<i32>, %n: i32) {
    %pid = tt.get_program_id x : i32
    %row = arith.muli %pid, %n : i32
    %base = tt.addptr %x_ptr, %row : !tt.ptr<f32>, i32
    %zero = arith.constant 0.0 : f32
    %c1 = arith.constant 1 : i32
    %c3 = arith.constant 3 : i32
    %lb = arith.remsi %pid, %c3 : i32
    %ub = arith.addi %pid, %c1 : i32
    %acc = scf.for %i = %lb to %ub step %c1 iter_args(%a = %zero) -> (f32) : i32 {
      %p = tt.addptr %base, %i : !tt.ptr<f32>, i32
      %v = tt.load %p : !tt.ptr<f32>
      %s = arith.addf %a, %v : f32
      scf.yield %s : f32
    }
    %c2 = arith.constant 2 : i32
    %parity = arith.remsi %pid, %c2 : i32
    %c0 = arith.constant 0 : i32
    %even = arith.cmpi eq, %parity, %c0 : i32
    %o = tt.addptr %out_ptr, %pid : !tt.ptr<f32>, i32
    scf.if %even {
      tt.store %o, %acc : !tt.ptr<f32>
    }
    %r = scf.if %even -> (i32) {
      scf.yield %pid : i32
    } else {
      %neg = arith.subi %c0, %pid : i32
      scf.yield %neg : i32
    }
    %f = tt.addptr %flag_ptr, %pid : !tt.ptr<i32>, i32
    tt.store %f, %r : !tt.ptr<i32>
    tt.return
  }
}
"""


def test_if_and_for_with_per_program_conditions_and_trip_counts():
    rng = np.random.default_rng()
    programs, n = 9, 16
    x = rng.standard_normal((programs, n), dtype=np.float32)
    out, flags = poisoned(programs, np.float32), poisoned(programs, np.int32)
    run(DIVERGENT, [x, out, flags, n], (programs,))
    for p in range(programs):
        acc = np.float32(0)
        for i in range(p % 3, p + 1):
            acc = np.float32(acc + x[p, i])
        if p % 2 == 0:
            assert out[p] == acc, p
        else:
            assert np.isnan(out[p]), p  # the odd programs never store
        assert flags[p] == (p if p % 2 == 0 else -p)


# Collatz: each program counts steps from pid + 1 down to 1 (per-program trip counts).
COLLATZ = """
builtin.module {
  tt.func public @k(%out_ptr: !tt.ptr<i32>) {
    %pid = tt.get_program_id x : i32
    %c1 = arith.constant 1 : i32
    %c0 = arith.constant 0 : i32
    %start = arith.addi %pid, %c1 : i32
    %res:2 = scf.while (%v = %start, %steps = %c0) : (i32, i32) -> (i32, i32) {
      %go = arith.cmpi ne, %v, %c1 : i32
      scf.condition(%go) %v, %steps : i32, i32
    } do {
    ^bb0(%w: i32, %s: i32):
      %c2 = arith.constant 2 : i32
      %c3 = arith.constant 3 : i32
      %odd = arith.remui %w, %c2 : i32
      %is_odd = arith.cmpi ne, %odd, %c0 : i32
      %half = arith.divui %w, %c2 : i32
      %tri = arith.muli %w, %c3 : i32
      %tri1 = arith.addi %tri, %c1 : i32
      %next = arith.select %is_odd, %tri1, %half : i1, i32
      %s1 = arith.addi %s, %c1 : i32
      scf.yield %next, %s1 : i32, i32
    }
    %o = tt.addptr %out_ptr, %pid : !tt.ptr<i32>, i32
    tt.store %o, %res#1 : !tt.ptr<i32>
    tt.return
  }
}
"""


def collatz_steps(v):
    steps = 0
    while v != 1:
        v = 3 * v + 1 if v % 2 else v // 2
        steps += 1
    return steps


def test_while_with_per_program_trip_counts():
    programs = 40
    out = poisoned(programs, np.int32)
    run(COLLATZ, [out], (programs,))
    np.testing.assert_array_equal(out, [collatz_steps(p + 1) for p in range(programs)])


def test_uniform_while_runs_once_for_all_programs():
    kernel = prepare(parse_module(COLLATZ.replace("%start = arith.addi %pid, %c1", "%start = arith.addi %c1, %c1")))
    out = poisoned(7, np.int32)
    kernel.run([out], (7,))
    np.testing.assert_array_equal(out, np.full(7, 1))
    assert not kernel.per_program


def test_grid_axes_and_num_programs():
    text = """
builtin.module {
  tt.func public @k(%out_ptr: !tt.ptr<i32>) {
    %x = tt.get_program_id x : i32
    %y = tt.get_program_id y : i32
    %z = tt.get_program_id z : i32
    %nx = tt.get_num_programs x : i32
    %ny = tt.get_num_programs y : i32
    %nz = tt.get_num_programs z : i32
    %yz = arith.muli %z, %ny : i32
    %yy = arith.addi %yz, %y : i32
    %lin0 = arith.muli %yy, %nx : i32
    %lin = arith.addi %lin0, %x : i32
    %c100 = arith.constant 100 : i32
    %v0 = arith.muli %x, %c100 : i32
    %c10 = arith.constant 10 : i32
    %v1 = arith.muli %y, %c10 : i32
    %v2 = arith.addi %v0, %v1 : i32
    %v = arith.addi %v2, %z : i32
    %nn = arith.muli %nx, %ny : i32
    %total = arith.muli %nn, %nz : i32
    %vt = arith.addi %v, %total : i32
    %p = tt.addptr %out_ptr, %lin : !tt.ptr<i32>, i32
    tt.store %p, %vt : !tt.ptr<i32>
    tt.return
  }
}
"""
    out = poisoned((4, 3, 2), np.int32)
    run(text, [out], (2, 3, 4))
    z, y, x = np.meshgrid(range(4), range(3), range(2), indexing="ij")
    np.testing.assert_array_equal(out, 100 * x + 10 * y + z + 24)


GUARDED_COPY = """
builtin.module {
  tt.func public @k(%src: !tt.ptr<f32>, %dst: !tt.ptr<f32>, %n: i32) {
    %pid = tt.get_program_id x : i32
    %inside = arith.cmpi slt, %pid, %n : i32
    scf.if %inside {
      %p = tt.addptr %src, %pid : !tt.ptr<f32>, i32
      %v = tt.load %p : !tt.ptr<f32>
      %q = tt.addptr %dst, %pid : !tt.ptr<f32>, i32
      tt.store %q, %v : !tt.ptr<f32>
    }
    tt.return
  }
}
"""


def test_programs_outside_an_if_never_access_memory():
    """Programs 5.. skip the branch, so their out-of-bounds addresses are never touched."""
    src = np.random.default_rng().standard_normal(5, dtype=np.float32)
    dst = poisoned(5, np.float32)
    run(GUARDED_COPY, [src, dst, 5], (8,))
    np.testing.assert_array_equal(dst, src)
