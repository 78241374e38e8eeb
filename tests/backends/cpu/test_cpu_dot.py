"""tl.dot on the CPU: the register-blocked micro-tile (its choice for each register file, and
runs over tiles that need several micro-tiles along both M and N, checked against float64)."""

import llvmlite.ir as ir
import numpy as np
import pytest
from conftest import poison

import kernellab as kl
import kernellab.language as tl
from kernellab.backends.cpu.lowering.dot import micro_tile

AVX512, AVX2, NEON = (32, 64), (16, 32), (32, 16)


@pytest.mark.parametrize("registers", [AVX512, AVX2, NEON], ids=["avx512", "avx2", "neon"])
@pytest.mark.parametrize("ty", [ir.FloatType(), ir.DoubleType(), ir.IntType(32)], ids=str)
@pytest.mark.parametrize("M,N", [(1, 1), (2, 8), (16, 32), (32, 64), (64, 128), (128, 16)], ids=str)
@pytest.mark.parametrize("terms", [(1, 1), (2, 2)], ids=["ieee", "tf32x3"])
def test_the_micro_tile_fits_the_register_file_and_divides_the_tile(registers, ty, M, N, terms):
    count, size = registers
    rows, vectors, lanes = micro_tile(ty, M, N, *terms, registers)
    bits = ty.width if isinstance(ty, ir.IntType) else (64 if isinstance(ty, ir.DoubleType) else 32)
    assert lanes == min(N, size * 8 // bits)
    assert M % rows == 0 and N % (vectors * lanes) == 0
    a_terms, b_terms = terms
    assert rows * vectors + vectors * b_terms + a_terms <= count - 2  # accumulators, B, broadcast A
    if M * N >= 8 * lanes and count == 32:  # room for many independent FMA chains
        assert rows * vectors >= 8


def test_avx512_fp32_blocks_are_sixteen_accumulators():
    assert micro_tile(ir.FloatType(), 32, 64, 1, 1, AVX512) == (4, 4, 16)  # 4 broadcasts + 4 loads, 16 FMAs
    assert micro_tile(ir.FloatType(), 16, 32, 1, 1, AVX512) == (8, 2, 16)


@kl.jit
def _tile_dot(a_ptr, b_ptr, c_ptr, d_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
              PRECISION: tl.constexpr):  # fmt: skip
    rm, rn, rk = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    c = tl.load(c_ptr + rm[:, None] * N + rn[None, :])
    tl.store(d_ptr + rm[:, None] * N + rn[None, :], tl.dot(a, b, c, input_precision=PRECISION))


@pytest.mark.parametrize("shape", [(64, 128, 32), (32, 64, 64), (8, 256, 16)], ids=str)
@pytest.mark.parametrize("precision", ["ieee", "tf32x3"])
def test_a_dot_over_many_micro_tiles_matches_float64(rng, shape, precision):
    M, N, K = shape
    a = rng.standard_normal((M, K), dtype=np.float32)
    b = rng.standard_normal((K, N), dtype=np.float32)
    c = rng.standard_normal((M, N), dtype=np.float32)
    d = poison((M, N), np.float32)
    _tile_dot[(1,)](a, b, c, d, M=M, N=N, K=K, PRECISION=precision, target="cpu")
    ref = a.astype(np.float64) @ b.astype(np.float64) + c
    bound = (K + 1) * np.finfo(np.float32).eps * (np.abs(a).astype(np.float64) @ np.abs(b) + np.abs(c))
    assert np.all(np.abs(d - ref) <= bound)


def test_an_int8_dot_over_many_micro_tiles_is_exact_in_int32(rng):
    M, N, K = 32, 128, 16
    a = rng.integers(-128, 128, (M, K), dtype=np.int8)
    b = rng.integers(-128, 128, (K, N), dtype=np.int8)
    c = rng.integers(-(2**20), 2**20, (M, N), dtype=np.int32)
    d = poison((M, N), np.int32)
    _tile_dot[(1,)](a, b, c, d, M=M, N=N, K=K, PRECISION="ieee", target="cpu")
    np.testing.assert_array_equal(d, a.astype(np.int64) @ b + c)
