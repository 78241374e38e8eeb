"""Atomics with colliding lanes and programs: results equal a sequential (program, lane) order."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from interp_helpers import pointers, poisoned, program_offsets, run

from kernellab.backends.interpreter import prepare
from kernellab.ir import parse_module

L, P, SLOTS = 16, 5, 4


def rmw_kernel(op: str, t: str, use_old: bool = True) -> str:
    store_old = pointers("oa", "old_ptr", t, L, "offs") + f"""
    tt.store %oa, %old : tensor<{L}x!tt.ptr<{t}>>""" if use_old else ""
    return f"""
builtin.module {{
  tt.func public @k(%target: !tt.ptr<{t}>, %val_ptr: !tt.ptr<{t}>, %old_ptr: !tt.ptr<{t}>, %active: i32) {{
    %pid = tt.get_program_id x : i32{program_offsets(L)}{pointers("va", "val_ptr", t, L, "offs")}
    %v = tt.load %va : tensor<{L}x!tt.ptr<{t}>>
    %slots = arith.constant {SLOTS} : i32
    %slots_s = tt.splat %slots : i32 -> tensor<{L}xi32>
    %slot = arith.remsi %range, %slots_s : tensor<{L}xi32>{pointers("ta", "target", t, L, "slot")}
    %act = tt.splat %active : i32 -> tensor<{L}xi32>
    %mask = arith.cmpi slt, %range, %act : tensor<{L}xi32>
    %old = tt.atomic_rmw {op}, acq_rel, gpu, %ta, %v, %mask : tensor<{L}x!tt.ptr<{t}>>{store_old}
    tt.return
  }}
}}
"""


def sequential(op, target, vals, active, dtype):
    """Reference: apply lanes one at a time in (program, lane) order."""
    update = {
        "add": lambda cur, v: cur + v, "fadd": lambda cur, v: dtype(cur + v),
        "max": max, "min": min, "exch": lambda cur, v: v, "xor": lambda cur, v: cur ^ v,
        "and": lambda cur, v: cur & v, "or": lambda cur, v: cur | v,
        "umax": lambda cur, v: max(cur.view(np.uint32), v.view(np.uint32)).view(np.int32),
    }[op]  # fmt: skip
    mem = target.copy()
    old = np.zeros_like(vals)
    for p in range(P):
        for lane in range(active):
            i = lane % SLOTS
            old[p, lane] = mem[i]
            with np.errstate(over="ignore"):
                mem[i] = update(mem[i], vals[p, lane])
    return mem, old


@pytest.mark.parametrize("op", ["add", "max", "min", "exch", "xor", "and", "or", "umax"])
@pytest.mark.parametrize("use_old", [True, False])
def test_integer_rmw_with_collisions(op, use_old):
    rng = np.random.default_rng()
    active = 11  # lanes 11.. are masked off
    vals = rng.integers(-(2**31), 2**31, (P, L), dtype=np.int32)
    target = rng.integers(-(2**31), 2**31, SLOTS, dtype=np.int32)
    mem, old = sequential(op, target, vals, active, np.int32)
    got_old = poisoned((P, L), np.int32)
    run(rmw_kernel(op, "i32", use_old), [target, vals, got_old, active], (P,))
    np.testing.assert_array_equal(target, mem)
    if use_old:
        np.testing.assert_array_equal(got_old[:, :active], old[:, :active])
        np.testing.assert_array_equal(got_old[:, active:], 0)


@pytest.mark.parametrize("use_old", [True, False])
def test_float_add_rounds_in_sequential_order(use_old):
    rng = np.random.default_rng()
    vals = (rng.standard_normal((P, L)) * 10.0 ** rng.integers(-3, 4, (P, L))).astype(np.float32)
    target = rng.standard_normal(SLOTS).astype(np.float32)
    mem, old = sequential("fadd", target, vals, L, np.float32)
    got_old = poisoned((P, L), np.float32)
    run(rmw_kernel("fadd", "f32", use_old), [target, vals, got_old, L], (P,))
    np.testing.assert_array_equal(target, mem)
    if use_old:
        np.testing.assert_array_equal(got_old, old)


CAS = """
builtin.module {
  tt.func public @k(%target: !tt.ptr<i32>, %old_ptr: !tt.ptr<i32>) {
    %pid = tt.get_program_id x : i32
    %c1 = arith.constant 1 : i32
    %next = arith.addi %pid, %c1 : i32
    %old = tt.atomic_cas acq_rel, gpu, %target, %pid, %next : !tt.ptr<i32>
    %o = tt.addptr %old_ptr, %pid : !tt.ptr<i32>, i32
    tt.store %o, %old : !tt.ptr<i32>
    tt.return
  }
}
"""


def test_cas_sees_earlier_programs_writes():
    """Program p swaps p → p+1: in order, every CAS succeeds and the counter reaches P."""
    target, old = np.zeros(1, np.int32), poisoned(P, np.int32)
    run(CAS, [target, old], (P,))
    np.testing.assert_array_equal(old, np.arange(P))
    assert target[0] == P
    target, old = np.array([2], np.int32), poisoned(P, np.int32)  # only program 2 matches
    run(CAS, [target, old], (P,))
    np.testing.assert_array_equal(old, [2, 2, 2, 3, 4])
    assert target[0] == 5


# Triton's layer-norm backward lock: spin with atomic_cas, update under the lock, release.
SPIN_LOCK = """
builtin.module {
  tt.func public @k(%lock: !tt.ptr<i32>, %count: !tt.ptr<i32>, %order: !tt.ptr<i32>) {
    %pid = tt.get_program_id x : i32
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    scf.while () : () -> () {
      %old = tt.atomic_cas acq_rel, gpu, %lock, %c0, %c1 : !tt.ptr<i32>
      %held = arith.cmpi eq, %old, %c1 : i32
      scf.condition(%held)
    } do {
      scf.yield
    }
    %n = tt.load %count : !tt.ptr<i32>
    %o = tt.addptr %order, %n : !tt.ptr<i32>, i32
    tt.store %o, %pid : !tt.ptr<i32>
    %n1 = arith.addi %n, %c1 : i32
    tt.store %count, %n1 : !tt.ptr<i32>
    %released = tt.atomic_rmw exch, acq_rel, gpu, %lock, %c0 : !tt.ptr<i32>
    tt.return
  }
}
"""


def test_spin_lock_terminates_running_programs_one_by_one():
    kernel = prepare(parse_module(SPIN_LOCK))
    assert kernel.per_program
    lock, count, order = np.zeros(1, np.int32), np.zeros(1, np.int32), poisoned(6, np.int32)
    kernel.run([lock, count, order], (6,))
    assert lock[0] == 0 and count[0] == 6
    np.testing.assert_array_equal(order, np.arange(6))


def scalar_rmw_kernel(op: str, t: str) -> str:
    """Every program applies `op` with the same (uniform) pointer and value: one row of operands."""
    return f"""
builtin.module {{
  tt.func public @k(%target: !tt.ptr<{t}>, %old_ptr: !tt.ptr<{t}>, %v: {t}) {{
    %pid = tt.get_program_id x : i32
    %old = tt.atomic_rmw {op}, acq_rel, gpu, %target, %v : !tt.ptr<{t}>
    %o = tt.addptr %old_ptr, %pid : !tt.ptr<{t}>, i32
    tt.store %o, %old : !tt.ptr<{t}>
    tt.return
  }}
}}
"""


_SCALAR_UPDATE = {
    "add": lambda c, v: c + v, "max": max, "min": min, "xor": lambda c, v: c ^ v,
    "and": lambda c, v: c & v, "or": lambda c, v: c | v, "exch": lambda c, v: v,
    "umax": lambda c, v: max(c.view(np.uint32), v.view(np.uint32)).view(np.int32),
    "umin": lambda c, v: min(c.view(np.uint32), v.view(np.uint32)).view(np.int32),
    "fadd": lambda c, v: np.float32(c + v),
}  # fmt: skip


@pytest.mark.parametrize("op", sorted(_SCALAR_UPDATE))
def test_uniform_scalar_rmw_runs_once_per_program(op):
    """Uniform operands still mean P atomics, applied in program order, each with its own old."""
    rng = np.random.default_rng()
    programs = 7
    if op == "fadd":
        t, dtype = "f32", np.float32
        initial, v = rng.standard_normal(2).astype(np.float32)
    else:
        t, dtype = "i32", np.int32
        initial, v = rng.integers(-(2**31), 2**31, 2, dtype=np.int32)
    with np.errstate(over="ignore"):
        if _SCALAR_UPDATE[op](initial, v) == initial:  # let max/min change the target
            initial, v = v, initial
        expected_old, cur = [], initial
        for _ in range(programs):
            expected_old.append(cur)
            cur = _SCALAR_UPDATE[op](cur, v)
    target, old = np.array([initial], dtype), poisoned(programs, dtype)
    run(scalar_rmw_kernel(op, t), [target, old, v], (programs,))
    np.testing.assert_array_equal(target, [cur])
    np.testing.assert_array_equal(old, np.array(expected_old, dtype))


UNIFORM_VECTOR_ADD = f"""
builtin.module {{
  tt.func public @k(%target: !tt.ptr<i32>) {{
    %c3 = arith.constant dense<3> : tensor<{L}xi32>
    %r = tt.make_range {{start = 0 : i32, end = {L} : i32}} : tensor<{L}xi32>
    %ts = tt.splat %target : !tt.ptr<i32> -> tensor<{L}x!tt.ptr<i32>>
    %ta = tt.addptr %ts, %r : tensor<{L}x!tt.ptr<i32>>, tensor<{L}xi32>
    %old = tt.atomic_rmw add, acq_rel, gpu, %ta, %c3 : tensor<{L}x!tt.ptr<i32>>
    tt.return
  }}
}}
"""


def test_uniform_vector_rmw_without_old_runs_once_per_program():
    target = np.random.default_rng().integers(-1000, 1000, L, dtype=np.int32)
    expected = target + 3 * P
    run(UNIFORM_VECTOR_ADD, [target], (P,))
    np.testing.assert_array_equal(target, expected)


UNIFORM_CAS = """
builtin.module {
  tt.func public @k(%target: !tt.ptr<i32>, %old_ptr: !tt.ptr<i32>) {
    %pid = tt.get_program_id x : i32
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %old = tt.atomic_cas acq_rel, gpu, %target, %c0, %c1 : !tt.ptr<i32>
    %o = tt.addptr %old_ptr, %pid : !tt.ptr<i32>, i32
    tt.store %o, %old : !tt.ptr<i32>
    tt.return
  }
}
"""


def test_uniform_cas_only_the_first_program_wins():
    target, old = np.zeros(1, np.int32), poisoned(P, np.int32)
    run(UNIFORM_CAS, [target, old], (P,))
    np.testing.assert_array_equal(old, [0] + [1] * (P - 1))
    assert target[0] == 1


def cas_lanes_kernel(t: str, n: int) -> str:
    return f"""
builtin.module {{
  tt.func public @k(%target: !tt.ptr<{t}>, %cmp_ptr: !tt.ptr<{t}>, %val_ptr: !tt.ptr<{t}>, %old_ptr: !tt.ptr<{t}>) {{
    %r = tt.make_range {{start = 0 : i32, end = {n} : i32}} : tensor<{n}xi32>
    %cs = tt.splat %cmp_ptr : !tt.ptr<{t}> -> tensor<{n}x!tt.ptr<{t}>>
    %ca = tt.addptr %cs, %r : tensor<{n}x!tt.ptr<{t}>>, tensor<{n}xi32>
    %cmp = tt.load %ca : tensor<{n}x!tt.ptr<{t}>>
    %vs = tt.splat %val_ptr : !tt.ptr<{t}> -> tensor<{n}x!tt.ptr<{t}>>
    %va = tt.addptr %vs, %r : tensor<{n}x!tt.ptr<{t}>>, tensor<{n}xi32>
    %val = tt.load %va : tensor<{n}x!tt.ptr<{t}>>
    %ts = tt.splat %target : !tt.ptr<{t}> -> tensor<{n}x!tt.ptr<{t}>>
    %ta = tt.addptr %ts, %r : tensor<{n}x!tt.ptr<{t}>>, tensor<{n}xi32>
    %old = tt.atomic_cas acq_rel, gpu, %ta, %cmp, %val : tensor<{n}x!tt.ptr<{t}>>
    %os = tt.splat %old_ptr : !tt.ptr<{t}> -> tensor<{n}x!tt.ptr<{t}>>
    %oa = tt.addptr %os, %r : tensor<{n}x!tt.ptr<{t}>>, tensor<{n}xi32>
    tt.store %oa, %old : tensor<{n}x!tt.ptr<{t}>>
    tt.return
  }}
}}
"""


@pytest.mark.parametrize("t,dtype", [("f16", np.float16), ("bf16", ml_dtypes.bfloat16),
                                     ("f32", np.float32), ("f64", np.float64),
                                     ("f8E4M3FN", ml_dtypes.float8_e4m3fn),
                                     ("f8E5M2", ml_dtypes.float8_e5m2)])  # fmt: skip
def test_float_cas_compares_bit_patterns(t, dtype):
    """-0.0 does not match 0.0, and a NaN matches the same NaN bits (unlike float ==)."""
    rng = np.random.default_rng()
    n = 64
    initial = (rng.standard_normal(n) * 4).astype(dtype)
    initial[:3] = np.array([0.0, -0.0, np.nan]).astype(dtype)
    equal = rng.random(n) < 0.5
    equal[:3] = True
    cmp = np.where(equal, initial, (initial.astype(np.float64) + 1).astype(dtype)).astype(dtype)
    cmp[1] = np.array(0.0, dtype)  # same value as -0.0, other bits
    bits = f"u{np.dtype(dtype).itemsize}"
    swaps = initial.view(bits) == cmp.view(bits)
    val = (rng.standard_normal(n) * 4 + 20).astype(dtype)
    target, old = initial.copy(), poisoned(n, dtype)
    run(cas_lanes_kernel(t, n), [target, cmp, val, old], (1,))
    np.testing.assert_array_equal(target.view(bits), np.where(swaps, val, initial).view(bits))
    np.testing.assert_array_equal(old.view(bits), initial.view(bits))
    assert swaps[0] and not swaps[1] and swaps[2]
