"""Atomics: add/max/min/and/or/xor/xchg/cas, on distinct and on colliding addresses, with the
old values they return (every interleaving of colliding lanes is allowed; the checks below hold
for all of them)."""

from collections import Counter

import numpy as np
import pytest
from conftest import NP_DTYPES, assert_close, assert_equal, cdiv, poison, random_array

import kernellab as kl
import kernellab.language as tl

N, BLOCK = 1000, 128
GRID = (cdiv(N, BLOCK),)


@kl.jit
def atomic_kernel(target_ptr, idx_ptr, val_ptr, old_ptr, n, OP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    idx = tl.load(idx_ptr + offs, mask=mask, other=0)
    val = tl.load(val_ptr + offs, mask=mask)
    ptrs = target_ptr + idx
    if OP == "add":
        old = tl.atomic_add(ptrs, val, mask=mask)
    elif OP == "max":
        old = tl.atomic_max(ptrs, val, mask=mask)
    elif OP == "min":
        old = tl.atomic_min(ptrs, val, mask=mask)
    elif OP == "and":
        old = tl.atomic_and(ptrs, val, mask=mask)
    elif OP == "or":
        old = tl.atomic_or(ptrs, val, mask=mask)
    elif OP == "xor":
        old = tl.atomic_xor(ptrs, val, mask=mask)
    elif OP == "xchg":
        old = tl.atomic_xchg(ptrs, val, mask=mask)
    elif OP == "add_relaxed":
        old = tl.atomic_add(ptrs, val, mask=mask, sem="relaxed", scope="gpu")
    elif OP == "add_acq_rel":
        old = tl.atomic_add(ptrs, val, mask=mask, sem="acq_rel", scope="cta")
    tl.store(old_ptr + offs, old, mask=mask)


UFUNC = {"add": np.add, "max": np.maximum, "min": np.minimum, "and": np.bitwise_and,
         "or": np.bitwise_or, "xor": np.bitwise_xor, "add_relaxed": np.add,
         "add_acq_rel": np.add}  # fmt: skip


def values_for(rng, op, dtype, n):
    np_dtype = NP_DTYPES[dtype]
    if op in ("and", "or", "xor"):
        info = np.iinfo(np_dtype)
        return rng.integers(int(info.min), int(info.max), n, dtype=np.int64).astype(np_dtype)
    return random_array(rng, n, np_dtype)


def run_atomic(launch, op, target, idx, val):
    old = poison(N, target.dtype)
    launch(atomic_kernel, GRID, target, idx, val, old, N, OP=op, BLOCK=BLOCK)
    return old


CASES = [("add", "int32"), ("add", "uint32"), ("add", "float32"), ("add", "int64"),
         ("max", "int32"), ("max", "uint32"), ("max", "float32"),
         ("min", "int32"), ("min", "uint32"), ("min", "float32"),
         ("and", "int32"), ("or", "int32"), ("xor", "int32"), ("xor", "uint32"),
         ("add_relaxed", "int32"), ("add_acq_rel", "int32")]  # fmt: skip


@pytest.mark.parametrize("op,dtype", CASES)
def test_atomic_on_distinct_addresses(launch, rng, op, dtype):
    """Each lane owns one element: it ends as op(initial, val), and the lane gets `initial`."""
    initial = values_for(rng, op, dtype, N)
    val = values_for(rng, op, dtype, N)
    target = initial.copy()
    idx = rng.permutation(N).astype(np.int32)
    old = run_atomic(launch, op, target, idx, val)
    expected = initial.copy()
    expected[idx] = UFUNC[op](initial[idx], val)
    assert_equal(target, expected)
    assert_equal(old, initial[idx])


def assert_serial_add_history(initial, vals, olds, final):
    """Colliding adds (of positive values) happened in some order: sorted by the old value each
    lane saw, every lane saw the state the previous one left, and the last left `final`."""
    order = np.argsort(olds, kind="stable")
    olds, vals = olds[order].astype(np.int64), vals[order].astype(np.int64)
    assert olds[0] == initial
    assert_equal(olds[1:], olds[:-1] + vals[:-1])
    assert olds[-1] + vals[-1] == final


@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_atomic_add_with_colliding_lanes(launch, rng, dtype):
    """1000 lanes of 8 programs add into 5 counters: exact totals, olds a serial history."""
    bins = 5
    target = random_array(rng, bins, NP_DTYPES[dtype])
    initial = target.copy()
    idx = rng.integers(0, bins, N).astype(np.int32)
    val = random_array(rng, N, NP_DTYPES[dtype], 1, 50)  # positive: every state is distinct
    old = run_atomic(launch, "add", target, idx, val)
    for b in range(bins):
        lanes = idx == b
        assert target[b] == initial[b] + val[lanes].sum()
        assert_serial_add_history(initial[b], val[lanes], old[lanes], target[b])


def test_atomic_add_fp32_with_colliding_lanes(launch, rng):
    target = np.zeros(3, np.float32) + 1.0
    idx = rng.integers(0, 3, N).astype(np.int32)
    val = random_array(rng, N, np.float32)
    run_atomic(launch, "add", target, idx, val)
    expected = np.array([1.0 + val[idx == b].astype(np.float64).sum() for b in range(3)])
    # each of the k additions into a bin rounds once, by at most 2^-24 of a partial sum
    bound = np.array([(idx == b).sum() * (np.abs(val[idx == b]).astype(np.float64).sum() + 1)
                      for b in range(3)])  # fmt: skip
    assert_close(target, expected, atol=bound * 2**-24)


@pytest.mark.parametrize("op,dtype", [("max", "int32"), ("max", "float32"), ("min", "int32"),
                                      ("min", "float32"), ("max", "uint32"), ("and", "int32"),
                                      ("or", "int32"), ("xor", "int32")])  # fmt: skip
def test_atomic_reductions_with_colliding_lanes(launch, rng, op, dtype):
    bins = 4
    target = values_for(rng, op, dtype, bins)
    initial = target.copy()
    idx = rng.integers(0, bins, N).astype(np.int32)
    val = values_for(rng, op, dtype, N)
    old = run_atomic(launch, op, target, idx, val)
    for b in range(bins):
        lanes = idx == b
        assert_equal(target[b], UFUNC[op].reduce(np.concatenate([[initial[b]], val[lanes]])))
        if op in ("max", "min"):  # every old is some state between the initial and the final
            olds = old[lanes]
            inside = (olds >= min(initial[b], target[b])) & (olds <= max(initial[b], target[b]))
            assert inside.all()
            assert initial[b] in olds  # somebody went first


def test_atomic_xchg_with_colliding_lanes(launch, rng):
    """Exchanges form a chain: the olds plus the final value are the initial plus all values."""
    target = random_array(rng, 1, np.int32, 1000, 2000)
    initial = target.copy()
    idx = np.zeros(N, np.int32)
    val = rng.permutation(N).astype(np.int32) + 1
    old = run_atomic(launch, "xchg", target, idx, val)
    assert Counter(old.tolist()) + Counter(target.tolist()) == Counter(val.tolist()) + Counter(
        initial.tolist()
    )


def test_atomic_xchg_on_distinct_addresses(launch, rng):
    target = random_array(rng, N, np.float32)
    initial = target.copy()
    idx = rng.permutation(N).astype(np.int32)
    val = random_array(rng, N, np.float32)
    old = run_atomic(launch, "xchg", target, idx, val)
    expected = initial.copy()
    expected[idx] = val
    assert_equal(target, expected)
    assert_equal(old, initial[idx])


@kl.jit
def masked_atomic_kernel(target_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.atomic_add(target_ptr + offs, 1.0, mask=offs < n)


def test_masked_atomic_leaves_other_elements_alone(launch):
    padded = GRID[0] * BLOCK
    target = poison(padded, np.float32)
    target[:N] = 2.0
    launch(masked_atomic_kernel, GRID, target, N, BLOCK=BLOCK)
    assert_equal(target[:N], np.full(N, 3.0, np.float32))
    assert np.isnan(target[N:]).all()


@kl.jit
def ticket_kernel(counter_ptr, ticket_ptr):
    ticket = tl.atomic_add(counter_ptr, 1)  # a scalar atomic: one per program
    tl.store(ticket_ptr + tl.program_id(0), ticket)


def test_scalar_atomic_add_hands_out_distinct_tickets(launch):
    programs = 37
    counter = np.array([5], np.int32)
    tickets = poison(programs, np.int32)
    launch(ticket_kernel, (programs,), counter, tickets)
    assert counter[0] == 5 + programs
    assert sorted(tickets.tolist()) == list(range(5, 5 + programs))


# -- compare and swap ------------------------------------------------------------------------


@kl.jit
def cas_kernel(target_ptr, cmp_ptr, val_ptr, old_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    cmp = tl.load(cmp_ptr + offs)
    val = tl.load(val_ptr + offs)
    old = tl.atomic_cas(target_ptr + offs, cmp, val)
    tl.store(old_ptr + offs, old)


@pytest.mark.parametrize("dtype", ["int32", "int64", "float32"])
def test_atomic_cas_swaps_only_where_equal(launch, rng, dtype):
    B = 256
    initial = random_array(rng, B, NP_DTYPES[dtype])
    cmp = np.where(rng.random(B) < 0.5, initial, random_array(rng, B, NP_DTYPES[dtype]) + 1000)
    cmp = cmp.astype(initial.dtype)
    val = random_array(rng, B, NP_DTYPES[dtype])
    target, old = initial.copy(), poison(B, initial.dtype)
    launch(cas_kernel, (1,), target, cmp, val, old, BLOCK=B)
    assert_equal(target, np.where(initial == cmp, val, initial))
    assert_equal(old, initial)


@kl.jit
def election_kernel(lock_ptr, winner_ptr, seen_ptr):
    pid = tl.program_id(0)
    seen = tl.atomic_cas(lock_ptr, 0, pid + 1)  # only the first program finds the lock free
    tl.store(seen_ptr + pid, seen)
    if seen == 0:
        tl.store(winner_ptr, pid)


def test_atomic_cas_elects_exactly_one_program(launch):
    programs = 40
    lock = np.zeros(1, np.int32)
    winner = poison(1, np.int32)
    seen = poison(programs, np.int32)
    launch(election_kernel, (programs,), lock, winner, seen)
    w = int(winner[0])
    assert 0 <= w < programs
    assert lock[0] == w + 1
    expected = np.full(programs, w + 1, np.int32)
    expected[w] = 0
    assert_equal(seen, expected)
