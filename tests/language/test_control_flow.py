"""Control flow and compile-time features: static_range, range/tl.range with runtime and
per-program bounds, while, if on constexprs and on runtime scalars, early return, calls to
@jit functions, static_assert, static_print, device_print, device_assert."""

import re
from collections import Counter

import numpy as np
import pytest
from conftest import assert_close, assert_equal, fp32_sum_bound, poison, random_array

import kernellab as kl
import kernellab.language as tl
from kernellab.frontend.errors import CompilationError

BLOCK = 64

# -- loops -----------------------------------------------------------------------------------


@kl.jit
def static_range_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr, STEPS: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), tl.float32)
    for i in tl.static_range(STEPS):
        acc += tl.load(x_ptr + i * BLOCK + offs) * (i + 1)
    for j in tl.static_range(1, STEPS, 2):  # start, end, step
        acc += tl.load(x_ptr + j * BLOCK + offs)
    tl.store(out_ptr + offs, acc)


def test_static_range(launch, rng):
    steps = 5
    x = random_array(rng, (steps, BLOCK), np.float32)
    out = poison(BLOCK, np.float32)
    launch(static_range_kernel, (1,), x, out, BLOCK=BLOCK, STEPS=steps)
    terms = np.concatenate([np.arange(1, steps + 1)[:, None] * x.astype(np.float64), x[1::2]])
    assert_close(out, terms.sum(0), atol=fp32_sum_bound(terms))


@kl.jit
def range_kernel(x_ptr, out_ptr, start, end, step, BLOCK: tl.constexpr, TL_RANGE: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), tl.float32) + 0.5
    if TL_RANGE:
        for i in tl.range(start, end, step, num_stages=2):
            acc += tl.load(x_ptr + i * BLOCK + offs)
    else:
        for i in range(start, end, step):
            acc += tl.load(x_ptr + i * BLOCK + offs)
    tl.store(out_ptr + offs, acc)


@pytest.mark.parametrize("tl_range", [False, True], ids=["range", "tl.range"])
@pytest.mark.parametrize("bounds", [(0, 7, 1), (2, 9, 3), (6, 3, 1), (4, 5, 2)], ids=str)
def test_for_with_runtime_bounds(launch, rng, bounds, tl_range):
    start, end, step = bounds
    x = random_array(rng, (10, BLOCK), np.float32)
    out = poison(BLOCK, np.float32)
    launch(range_kernel, (1,), x, out, start, end, step, BLOCK=BLOCK, TL_RANGE=tl_range)
    terms = np.concatenate([np.full((1, BLOCK), 0.5), x[start:end:step]])
    assert_close(out, terms.sum(0), atol=fp32_sum_bound(terms))


@kl.jit
def divergent_loop_kernel(counts_ptr, x_ptr, total_ptr, rows_ptr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    count = tl.load(counts_ptr + pid)
    total = 0
    row = tl.zeros((BLOCK,), tl.int32)
    for i in range(count):  # a different trip count in every program
        total += i * (pid + 1)
        row += tl.load(x_ptr + i * BLOCK + tl.arange(0, BLOCK))
    tl.store(total_ptr + pid, total)
    tl.store(rows_ptr + pid * BLOCK + tl.arange(0, BLOCK), row)


def test_for_with_per_program_trip_counts(launch, rng):
    programs = 12
    counts = rng.permutation(programs).astype(np.int32)  # includes a zero-trip program
    x = random_array(rng, (programs, BLOCK), np.int32)
    total, rows = poison(programs, np.int32), poison((programs, BLOCK), np.int32)
    launch(divergent_loop_kernel, (programs,), counts, x, total, rows, BLOCK=BLOCK)
    pid = np.arange(programs)
    assert_equal(total, (counts * (counts - 1) // 2 * (pid + 1)).astype(np.int32))
    assert_equal(rows, np.stack([x[:c].sum(0) for c in counts]).astype(np.int32))


@kl.jit
def while_kernel(x_ptr, steps_ptr, final_ptr, limit):
    pid = tl.program_id(0)
    v = tl.load(x_ptr + pid)
    steps = 0
    while v < limit:
        v = v * 2 + 1
        steps += 1
    tl.store(steps_ptr + pid, steps)
    tl.store(final_ptr + pid, v)


def test_while_with_per_program_trip_counts(launch, rng):
    programs, limit = 20, 5000
    x = random_array(rng, programs, np.int32, 1, 6000)
    steps, final = poison(programs, np.int32), poison(programs, np.int32)
    launch(while_kernel, (programs,), x, steps, final, limit)
    for p in range(programs):
        v, s = int(x[p]), 0
        while v < limit:
            v, s = v * 2 + 1, s + 1
        assert (steps[p], final[p]) == (s, v), f"program {p}"


@kl.jit
def nested_loops_kernel(out_ptr, n):
    pid = tl.program_id(0)
    total = 0
    for i in range(pid, n):
        for j in range(i):  # the inner bound depends on the outer variable
            total += j
    for k in range(n - 1, -1, -1):  # a negative constant step counts down
        total = total * 2 + k % 2
    tl.store(out_ptr + pid, total)


def test_nested_loops_and_negative_step(launch):
    programs, n = 6, 9
    out = poison(programs, np.int64)
    launch(nested_loops_kernel, (programs,), out, n)
    expected = []
    for pid in range(programs):
        total = sum(j for i in range(pid, n) for j in range(i))
        for k in range(n - 1, -1, -1):
            total = total * 2 + k % 2
        expected.append(total)
    assert_equal(out, np.array(expected, np.int64))


@kl.jit
def while_tensor_kernel(x_ptr, out_ptr, rounds_ptr, limit, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    rounds = 0
    while tl.max(x, axis=0) < limit:  # a block carried through the loop, a reduced condition
        x = x * 2
        rounds += 1
    tl.store(out_ptr + offs, x)
    tl.store(rounds_ptr + tl.program_id(0), rounds)


def test_while_carrying_a_block(launch, rng):
    programs, limit = 5, 1000.0
    x = random_array(rng, (programs, BLOCK), np.float32, 0.5, 50.0)
    x[1] /= 64  # programs need different numbers of rounds
    out, rounds = poison((programs, BLOCK), np.float32), poison(programs, np.int32)
    launch(while_tensor_kernel, (programs,), x, out, rounds, limit, BLOCK=BLOCK)
    expected_rounds = np.ceil(np.log2(limit / x.max(axis=1))).astype(np.int32)
    assert_equal(rounds, expected_rounds)
    assert_equal(out, x * 2.0 ** expected_rounds[:, None])


@kl.jit
def loop_with_branch_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), tl.int32)
    for i in range(n):
        row = tl.load(x_ptr + i * BLOCK + offs)
        if (i + pid) % 3 == 0:  # a branch inside the loop that differs per program
            acc += row
        else:
            acc -= row
    tl.store(out_ptr + pid * BLOCK + offs, acc)


def test_branch_inside_loop(launch, rng):
    programs, n = 4, 7
    x = random_array(rng, (n, BLOCK), np.int32)
    out = poison((programs, BLOCK), np.int32)
    launch(loop_with_branch_kernel, (programs,), x, out, n, BLOCK=BLOCK)
    signs = np.array([[1 if (i + p) % 3 == 0 else -1 for i in range(n)] for p in range(programs)])
    assert_equal(out, signs @ x)


# -- branches --------------------------------------------------------------------------------


@kl.jit
def constexpr_if_kernel(x_ptr, out_ptr, FLAG: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    if FLAG:
        y = x * 2
    else:
        y = x - 1
        tl.static_assert(not FLAG, "the untaken branch of a constexpr if is never compiled")
    if FLAG == False:
        y = y * 3
    tl.store(out_ptr + offs, y)


@pytest.mark.parametrize("flag", [True, False])
def test_if_on_constexpr(launch, rng, flag):
    x = random_array(rng, BLOCK, np.int32)
    out = poison(BLOCK, np.int32)
    launch(constexpr_if_kernel, (1,), x, out, FLAG=flag, BLOCK=BLOCK)
    assert_equal(out, x * 2 if flag else (x - 1) * 3)


@kl.jit
def runtime_if_kernel(x_ptr, out_ptr, threshold, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    first = tl.load(x_ptr + pid * BLOCK)
    if pid % 2 == 0:
        y = x + 1.0
    else:
        y = x * 2.0
    if first > threshold:
        y = y - 100.0
    elif first < -threshold:
        y = -y
    if not (pid < 3):
        y = y + 0.25
    tl.store(out_ptr + offs, y)


def test_if_on_runtime_scalars_diverging_per_program(launch, rng):
    programs, threshold = 16, 1.0
    x = random_array(rng, (programs, BLOCK), np.float32)
    out = poison((programs, BLOCK), np.float32)
    launch(runtime_if_kernel, (programs,), x, out, threshold, BLOCK=BLOCK)
    expected = np.empty_like(x, dtype=np.float64)
    for p in range(programs):
        y = x[p] + 1.0 if p % 2 == 0 else x[p] * 2.0
        if x[p, 0] > threshold:
            y = y - 100.0
        elif x[p, 0] < -threshold:
            y = -y
        expected[p] = y + 0.25 if p >= 3 else y
    assert_close(out, expected, atol=2**-23 * 110)  # one or two fp32 roundings of |y| < 110


@kl.jit
def bool_ops_kernel(out_ptr, lo, hi):
    pid = tl.program_id(0)
    inside = pid >= lo and pid < hi
    edge = pid == lo or pid == hi - 1
    tl.store(out_ptr + pid * 2, inside.to(tl.int32))
    tl.store(out_ptr + pid * 2 + 1, tl.where(edge, 1, 0))


def test_and_or_on_scalars(launch):
    programs, lo, hi = 10, 3, 7
    out = poison((programs, 2), np.int32)
    launch(bool_ops_kernel, (programs,), out, lo, hi)
    pid = np.arange(programs)
    assert_equal(out[:, 0], ((pid >= lo) & (pid < hi)).astype(np.int32))
    assert_equal(out[:, 1], ((pid == lo) | (pid == hi - 1)).astype(np.int32))


@kl.jit
def early_return_kernel(x_ptr, out_ptr, active, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    if pid >= active:
        return
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs) + 1)


def test_early_return(launch, rng):
    programs, active = 10, 6
    x = random_array(rng, (programs, BLOCK), np.int32)
    out = poison((programs, BLOCK), np.int32)
    launch(early_return_kernel, (programs,), x, out, active, BLOCK=BLOCK)
    assert_equal(out[:active], x[:active] + 1)
    assert_equal(out[active:], poison((programs - active, BLOCK), np.int32))


# -- calls to other @jit functions -------------------------------------------------------------


@kl.jit
def scale_shift(x, scale, SHIFT: tl.constexpr):
    return x * scale + SHIFT


@kl.jit
def ordered_pair(x, y):
    return tl.minimum(x, y), tl.maximum(x, y)


@kl.jit
def spread(x):
    lo, hi = ordered_pair(x, -x)  # a call inside a call
    return scale_shift(hi - lo, 0.5, 1)


@kl.jit
def store_block(ptr, value, BLOCK: tl.constexpr):
    tl.store(ptr + tl.arange(0, BLOCK), value)  # no return value


@kl.jit
def calls_kernel(x_ptr, y_ptr, a_ptr, b_ptr, lo_ptr, hi_ptr, s_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    store_block(a_ptr, scale_shift(x, 3.0, 2), BLOCK)
    store_block(b_ptr, scale_shift(x, 3.0, SHIFT=5), BLOCK=BLOCK)  # another specialization
    lo, hi = ordered_pair(x, y)
    store_block(lo_ptr, lo, BLOCK)
    store_block(hi_ptr, hi, BLOCK)
    store_block(s_ptr, spread(x), BLOCK)


def test_calls_to_jit_functions(launch, rng):
    x, y = random_array(rng, BLOCK, np.float32), random_array(rng, BLOCK, np.float32)
    a, b, lo, hi, s = (poison(BLOCK, np.float32) for _ in range(5))
    launch(calls_kernel, (1,), x, y, a, b, lo, hi, s, BLOCK=BLOCK)
    x64 = x.astype(np.float64)
    # x * 3 + SHIFT rounds twice (or once, fused): within 2^-23 of |3x| + SHIFT
    assert_close(a, x64 * 3 + 2, atol=2**-23 * (np.abs(3 * x64) + 2))
    assert_close(b, x64 * 3 + 5, atol=2**-23 * (np.abs(3 * x64) + 5))
    assert_equal(lo, np.minimum(x, y))
    assert_equal(hi, np.maximum(x, y))
    assert_close(s, np.abs(x64) + 1, rtol=1e-6)  # (|x| - -|x|) * 0.5 + 1


# -- compile-time and debugging builtins ---------------------------------------------------------


@kl.jit
def static_assert_kernel(out_ptr, BLOCK: tl.constexpr):
    tl.static_assert(BLOCK % 16 == 0, "BLOCK must be a multiple of 16")
    tl.store(out_ptr + tl.arange(0, BLOCK), tl.full((BLOCK,), 7, tl.int32))


def test_static_assert_passes(launch):
    out = poison(32, np.int32)
    launch(static_assert_kernel, (1,), out, BLOCK=32)
    assert_equal(out, np.full(32, 7, np.int32))


def test_static_assert_fails_at_compile_time():
    out = poison(8, np.int32)
    with pytest.raises(CompilationError, match="BLOCK must be a multiple of 16"):
        static_assert_kernel[(1,)](out, BLOCK=8)
    assert_equal(out, poison(8, np.int32))  # nothing ran


@kl.jit
def static_print_kernel(out_ptr, MARK: tl.constexpr):
    tl.static_print("static_print says", MARK)
    tl.store(out_ptr, MARK)


def test_static_print_prints_once_at_compile_time(launch, rng, capfd):
    mark = int(rng.integers(10**6, 10**7))  # a fresh specialization: nothing cached
    out = poison(1, np.int32)
    launch(static_print_kernel, (3,), out, MARK=mark)
    launch(static_print_kernel, (3,), out, MARK=mark)  # cached: compiles (and prints) no more
    printed = [line for line in capfd.readouterr().out.splitlines() if "static_print says" in line]
    assert len(printed) == 1 and str(mark) in printed[0], printed
    assert out[0] == mark


@kl.jit
def device_print_kernel(x_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.device_print("dp value", tl.load(x_ptr + offs))


def test_device_print_prints_every_element(launch, rng, capfd):
    programs, B = 2, 8
    x = random_array(rng, programs * B, np.int32, 1000, 100000)
    launch(device_print_kernel, (programs,), x, BLOCK=B)
    lines = [line for line in capfd.readouterr().out.splitlines() if "dp value" in line]
    values = [int(re.search(r"(-?\d+)\s*$", line).group(1)) for line in lines]
    assert Counter(values) == Counter(x.tolist())


@kl.jit(debug=True)
def device_assert_kernel(x_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    tl.device_assert(x > 0, "x must be positive")


def test_device_assert_passes_when_true(launch, rng):
    launch(device_assert_kernel, (1,), random_array(rng, 16, np.float32, 0.5, 2.0), BLOCK=16)


def test_device_assert_raises_when_false(launch, rng):
    x = random_array(rng, 16, np.float32, 0.5, 2.0)
    x[5] = -1.0
    with pytest.raises(Exception, match="x must be positive"):
        launch(device_assert_kernel, (1,), x, BLOCK=16)
