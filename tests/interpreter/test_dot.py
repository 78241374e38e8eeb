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


def test_fp32_tf32_rounds_inputs():
    rng = np.random.default_rng()
    a, b, c = (rng.standard_normal(s, dtype=np.float32) for s in ((P, M, K), (P, K, N), (P, M, N)))
    d = run_dot(a, b, c, "f32", "f32", "tf32")

    def tf32(x):  # nearest-even to 10 mantissa bits, computed independently in float64
        m, e = np.frexp(x.astype(np.float64))
        return np.ldexp(np.round(m * 2**11) / 2**11, e)

    np.testing.assert_allclose(d, tf32(a) @ tf32(b) + c, rtol=1e-5, atol=1e-5)
    assert np.abs(d - (a.astype(np.float64) @ b + c)).max() > 1e-4  # tf32 is visibly coarser


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
