"""tt.dot in the accumulator's precision, batched over programs."""

from __future__ import annotations

import ml_dtypes
import numpy as np
from interp_helpers import poisoned, run

M, K, N, P = 16, 32, 8, 3


def load_tile(name, t, rows, cols):
    n = rows * cols
    return f"""
    %{name}_n = arith.constant {n} : i32
    %{name}_start = arith.muli %pid, %{name}_n : i32
    %{name}_ss = tt.splat %{name}_start : i32 -> tensor<{n}xi32>
    %{name}_r = tt.make_range {{start = 0 : i32, end = {n} : i32}} : tensor<{n}xi32>
    %{name}_offs = arith.addi %{name}_ss, %{name}_r : tensor<{n}xi32>
    %{name}_ps = tt.splat %{name}_ptr : !tt.ptr<{t}> -> tensor<{n}x!tt.ptr<{t}>>
    %{name}_pa = tt.addptr %{name}_ps, %{name}_offs : tensor<{n}x!tt.ptr<{t}>>, tensor<{n}xi32>
    %{name}_flat = tt.load %{name}_pa : tensor<{n}x!tt.ptr<{t}>>
    %{name} = tt.reshape %{name}_flat : tensor<{n}x{t}> -> tensor<{rows}x{cols}x{t}>"""


def dot_kernel(t, acc_t, precision):
    n = M * N
    return f"""
builtin.module {{
  tt.func public @k(%a_ptr: !tt.ptr<{t}>, %b_ptr: !tt.ptr<{t}>, %c_ptr: !tt.ptr<{acc_t}>, %d_ptr: !tt.ptr<{acc_t}>) {{
    %pid = tt.get_program_id x : i32{load_tile("a", t, M, K)}{load_tile("b", t, K, N)}{load_tile("c", acc_t, M, N)}
    %d = tt.dot %a, %b, %c {{input_precision = "{precision}", max_num_imprecise_acc = 0 : i32}} : tensor<{M}x{K}x{t}> * tensor<{K}x{N}x{t}> -> tensor<{M}x{N}x{acc_t}>
    %d_flat = tt.reshape %d : tensor<{M}x{N}x{acc_t}> -> tensor<{n}x{acc_t}>
    %d_ps = tt.splat %d_ptr : !tt.ptr<{acc_t}> -> tensor<{n}x!tt.ptr<{acc_t}>>
    %d_pa = tt.addptr %d_ps, %c_offs : tensor<{n}x!tt.ptr<{acc_t}>>, tensor<{n}xi32>
    tt.store %d_pa, %d_flat : tensor<{n}x!tt.ptr<{acc_t}>>
    tt.return
  }}
}}
"""


def run_dot(a, b, c, t, acc_t, precision="ieee"):
    d = poisoned(c.shape, c.dtype)
    run(dot_kernel(t, acc_t, precision), [a, b, c, d], (P,))
    return d


def test_fp32_ieee():
    rng = np.random.default_rng()
    a, b, c = (rng.standard_normal(s, dtype=np.float32) for s in ((P, M, K), (P, K, N), (P, M, N)))
    d = run_dot(a, b, c, "f32", "f32")
    np.testing.assert_allclose(d, a.astype(np.float64) @ b + c, rtol=1e-5, atol=1e-5)


def tf32_rna_reference(x: np.ndarray) -> np.ndarray:
    """PTX's cvt.rna.tf32.f32 computed independently in float64: round to 11 significant bits
    (tf32's quantum 2^(e-11), never finer than 2^-136, the quantum of fp32 subnormals with the
    low 13 bits cleared), to nearest with ties away from zero; infinities and NaNs kept."""
    x = np.asarray(x, np.float32)
    x64 = x.astype(np.float64)
    _, e = np.frexp(x64)
    q = np.ldexp(1.0, np.maximum(e - 11, -136))
    r = np.copysign(np.floor(np.abs(x64) / q + 0.5) * q, x64)  # exact in float64
    with np.errstate(over="ignore"):
        r = r.astype(np.float32)  # 2^128 and above: infinity
    return np.where(np.isfinite(x), r, x)


def tie_heavy_fp32(rng, n) -> np.ndarray:
    """Random fp32 values plus ones whose dropped 13 bits are exactly half (ties), just below
    and above half, all ones, and subnormals, the largest finite values, zeros, inf, NaN."""
    bits = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    bits[rng.random(n) < 0.1] &= np.uint32(0x807FFFFF)  # subnormals and zeros
    low = np.array([0x1000, 0x0FFF, 0x1001, 0x1FFF, 0x0000], np.uint32)
    kind = rng.integers(0, len(low) + 1, n)
    pick = kind < len(low)
    bits[pick] = (bits[pick] & np.uint32(0xFFFFE000)) | low[kind[pick]]
    special = np.array([0x7F7FFFFF, 0xFF7FF000, 0x7F7FEFFF, 0x00001000, 0x80001000, 0x3FFFF000,
                        0x00000000, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000], np.uint32)  # fmt: skip
    return np.concatenate([bits, special]).view(np.float32)


def test_tf32_rna_rounding_is_bit_exact_including_ties():
    from kernellab.backends.interpreter.tensor import tf32_rna

    x = tie_heavy_fp32(np.random.default_rng(), 200_000)
    with np.errstate(invalid="ignore"):
        got, want = tf32_rna(x), tf32_rna_reference(x)
    finite = np.isfinite(x)
    assert np.array_equal(got.view(np.uint32)[finite], want.view(np.uint32)[finite])
    assert np.array_equal(np.isnan(got), np.isnan(x)) and np.array_equal(got[np.isinf(x)], x[np.isinf(x)])
    assert not (got.view(np.uint32)[finite] & np.uint32(0x1FFF)).any()
    # ties go away from zero (nearest-even would send 1 + 2^-11 down to 1)
    t = np.array([1 + 2**-11, -(1 + 2**-11), 1 + 3 * 2**-11], np.float32)
    assert tf32_rna(t).tolist() == [1 + 2**-10, -(1 + 2**-10), 1 + 2 * 2**-10]
    assert tf32_rna(np.array([np.finfo(np.float32).max], np.float32))[0] == np.inf


def random_fp32(rng, shape) -> np.ndarray:
    x = rng.standard_normal(shape, dtype=np.float32)
    ties = rng.random(shape) < 0.25  # a quarter of the operands sit exactly on a tf32 tie
    bits = x.view(np.uint32)
    bits[ties] = (bits[ties] & np.uint32(0xFFFFE000)) | np.uint32(0x1000)
    return x


def test_fp32_tf32_rounds_inputs():
    rng = np.random.default_rng()
    a, b, c = random_fp32(rng, (P, M, K)), random_fp32(rng, (P, K, N)), random_fp32(rng, (P, M, N))
    d = run_dot(a, b, c, "f32", "f32", "tf32")
    ra, rb = (tf32_rna_reference(v).astype(np.float64) for v in (a, b))
    np.testing.assert_allclose(d, ra @ rb + c, rtol=1e-5, atol=1e-5)
    assert np.abs(d - (a.astype(np.float64) @ b + c)).max() > 1e-4  # tf32 is visibly coarser


def test_fp32_tf32x3_is_big_big_plus_big_small_plus_small_big():
    rng = np.random.default_rng()
    a, b, c = random_fp32(rng, (P, M, K)), random_fp32(rng, (P, K, N)), random_fp32(rng, (P, M, N))
    d = run_dot(a, b, c, "f32", "f32", "tf32x3")
    ab, bb = tf32_rna_reference(a), tf32_rna_reference(b)
    a_s, b_s = tf32_rna_reference(a - ab), tf32_rna_reference(b - bb)
    ab, bb, a_s, b_s = (v.astype(np.float64) for v in (ab, bb, a_s, b_s))
    want = ab @ bb + ab @ b_s + a_s @ bb + c
    np.testing.assert_allclose(d, want, rtol=1e-6, atol=1e-5)
    exact = a.astype(np.float64) @ b + c
    assert np.abs(d - exact).max() < 1e-4  # about fp32 accuracy, unlike tf32
    assert np.abs(want - exact).max() > 0  # the dropped small*small term


def test_fp16_accumulates_in_fp32():
    rng = np.random.default_rng()
    a, b = rng.standard_normal((P, M, K)).astype(np.float16), rng.standard_normal((P, K, N)).astype(np.float16)
    c = rng.standard_normal((P, M, N), dtype=np.float32)
    d = run_dot(a, b, c, "f16", "f32")
    np.testing.assert_allclose(d, a.astype(np.float64) @ b.astype(np.float64) + c, rtol=1e-5, atol=1e-5)


def test_int8_accumulates_in_int32():
    rng = np.random.default_rng()
    a = rng.integers(-128, 128, (P, M, K), dtype=np.int8)
    b = rng.integers(-128, 128, (P, K, N), dtype=np.int8)
    c = rng.integers(-1000, 1000, (P, M, N), dtype=np.int32)
    d = run_dot(a, b, c, "i8", "i32")
    np.testing.assert_array_equal(d, a.astype(np.int64) @ b.astype(np.int64) + c)


def test_bf16_products_exact_in_fp32():
    rng = np.random.default_rng()
    a = rng.standard_normal((P, M, K)).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((P, K, N)).astype(ml_dtypes.bfloat16)
    c = rng.standard_normal((P, M, N), dtype=np.float32)
    d = run_dot(a, b, c, "bf16", "f32")
    np.testing.assert_allclose(d, a.astype(np.float64) @ b.astype(np.float64) + c, rtol=1e-5, atol=1e-5)
