"""tl.randint / tl.rand / tl.randn: Triton's exact Philox 4x32-10 stream (checked against a
numpy reference written from the algorithm, itself checked against Random123's known-answer
vectors), plus statistics, determinism and independence."""

import numpy as np
import pytest
from conftest import assert_close, assert_equal, cdiv, poison

import kernellab as kl
import kernellab.language as tl

# -- the reference ---------------------------------------------------------------------------

PHILOX_ROUND_A, PHILOX_ROUND_B = 0xD2511F53, 0xCD9E8D57
PHILOX_KEY_A, PHILOX_KEY_B = 0x9E3779B9, 0xBB67AE85
MASK32 = np.uint64(0xFFFFFFFF)


def philox4x32(c0, c1, c2, c3, k0, k1, rounds=10):
    """Philox 4x32 on uint32 arrays (broadcast); returns the four output words."""
    c = [np.asarray(v, dtype=np.uint64) & MASK32 for v in (c0, c1, c2, c3)]
    k0, k1 = np.uint64(k0) & MASK32, np.uint64(k1) & MASK32
    A, B = np.uint64(PHILOX_ROUND_A), np.uint64(PHILOX_ROUND_B)
    for _ in range(rounds):
        prod_a, prod_b = A * c[0], B * c[2]  # < 2^64: exact in uint64
        c = [
            ((prod_b >> np.uint64(32)) ^ c[1] ^ k0) & MASK32,
            prod_b & MASK32,
            ((prod_a >> np.uint64(32)) ^ c[3] ^ k1) & MASK32,
            prod_a & MASK32,
        ]
        k0 = (k0 + np.uint64(PHILOX_KEY_A)) & MASK32
        k1 = (k1 + np.uint64(PHILOX_KEY_B)) & MASK32
    return [v.astype(np.uint32) for v in c]


def reference_randint4x(seed, offsets):
    """Triton's randint4x for int32 offsets: counter (offset, 0, 0, 0), key (seed lo, seed hi)."""
    offsets = np.asarray(offsets).astype(np.int64).astype(np.uint64) & MASK32
    zero = np.zeros_like(offsets)
    return philox4x32(offsets, zero, zero, zero, seed & 0xFFFFFFFF, (seed >> 32) & 0xFFFFFFFF)


def reference_uniform(bits):
    """Triton's uint_to_uniform_float: as int32, negatives folded to -x - 1, times 2^-31-ish."""
    x = bits.view(np.int32).astype(np.int64)
    x = np.where(x < 0, -x - 1, x)
    return x.astype(np.float32) * np.float32(4.6566127342e-10)


def reference_normal(bits1, bits2):
    """Triton's Box-Muller: u1 clamped away from 0, sqrt(-2 log u1) * cos(2 pi u2)."""
    u1 = np.maximum(np.float32(1.0e-7), reference_uniform(bits1)).astype(np.float64)
    u2 = reference_uniform(bits2).astype(np.float64)
    return np.sqrt(-2.0 * np.log(u1)) * np.cos(np.float32(6.283185307179586) * u2)


def test_reference_philox_matches_random123_known_answers():
    """The reference itself, against the known-answer vectors published with Random123."""
    kat = [
        ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
        ((0xFFFFFFFF,) * 4, (0xFFFFFFFF,) * 2, (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
        ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
         (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)),
    ]  # fmt: skip
    for counter, key, expected in kat:
        assert [int(w) for w in philox4x32(*counter, *key)] == list(expected)


# -- kernels ---------------------------------------------------------------------------------

N, BLOCK = 4096 + 100, 512
GRID = (cdiv(N, BLOCK),)


@kl.jit
def random_kernel(out_ptr, seed, base, n, KIND: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    if KIND == "randint":
        r = tl.randint(seed, base + offs)
    elif KIND == "rand":
        r = tl.rand(seed, base + offs)
    elif KIND == "randn":
        r = tl.randn(seed, base + offs)
    elif KIND == "randint_i64_offsets":
        r = tl.randint(seed, base.to(tl.int64) * 65536 + offs)
    tl.store(out_ptr + offs, r, mask=mask)


OUT_DTYPE = {"randint": np.uint32, "rand": np.float32, "randn": np.float32,
             "randint_i64_offsets": np.uint32}  # fmt: skip


def draw(launch, kind, seed, base=0, n=N):
    out = poison(n, OUT_DTYPE[kind])
    launch(random_kernel, (cdiv(n, BLOCK),), out, seed, base, n, KIND=kind, BLOCK=BLOCK)
    return out


def random_seed(rng, wide=False):
    return int(rng.integers(2**32, 2**62)) if wide else int(rng.integers(1, 2**31 - 1))


def test_randint_known_value(launch):
    """seed 0, offset 0 is Philox's all-zero known answer: first word 0x6627e8d5."""
    out = draw(launch, "randint", 0, n=BLOCK)
    assert int(out[0]) == 0x6627E8D5
    assert_equal(out, reference_randint4x(0, np.arange(BLOCK))[0])


@pytest.mark.parametrize("wide_seed", [False, True], ids=["i32-seed", "i64-seed"])
def test_randint_is_triton_philox_stream(launch, rng, wide_seed):
    seed = random_seed(rng, wide_seed)
    base = int(rng.integers(0, 2**30))
    out = draw(launch, "randint", seed, base)
    assert_equal(out, reference_randint4x(seed, base + np.arange(N))[0])


def test_randint_with_64_bit_offsets_uses_the_high_word(launch, rng):
    """int64 offsets put their high 32 bits in the second counter word."""
    seed = random_seed(rng)
    base = int(rng.integers(2**17, 2**30))  # base * 65536 is beyond 2^32
    out = draw(launch, "randint_i64_offsets", seed, base)
    offsets = base * 65536 + np.arange(N, dtype=np.int64)
    zero = np.zeros(N, np.uint64)
    expected = philox4x32(offsets & 0xFFFFFFFF, offsets >> 32, zero, zero, seed, 0)[0]
    assert_equal(out, expected)


@pytest.mark.parametrize("wide_seed", [False, True], ids=["i32-seed", "i64-seed"])
def test_rand_is_triton_uniform_stream(launch, rng, wide_seed):
    seed = random_seed(rng, wide_seed)
    out = draw(launch, "rand", seed)
    assert_equal(out, reference_uniform(reference_randint4x(seed, np.arange(N))[0]))


def test_randn_is_triton_box_muller(launch, rng):
    seed = random_seed(rng)
    out = draw(launch, "randn", seed)
    words = reference_randint4x(seed, np.arange(N))
    expected = reference_normal(words[0], words[1])
    # fp32 log/sqrt/cos: a few ulp of the radius (|n| < 6), not bit-exact across libraries
    assert_close(out, expected, rtol=1e-5, atol=1e-5)


def test_rand_range_and_moments(launch, rng):
    n = 1 << 16
    u = draw(launch, "rand", random_seed(rng), n=n).astype(np.float64)
    assert (u >= 0).all() and (u < 1).all()
    # 6-sigma bounds: mean of U(0,1) has sd 1/sqrt(12 n); variance sd ~ sqrt(1/180 / n)
    assert abs(u.mean() - 0.5) < 6 / np.sqrt(12 * n)
    assert abs(u.var() - 1 / 12) < 6 * np.sqrt(1 / 180 / n)
    hist = np.histogram(u, bins=16, range=(0, 1))[0]
    expected = n / 16
    assert (np.abs(hist - expected) < 6 * np.sqrt(expected)).all()


def test_randn_moments(launch, rng):
    n = 1 << 16
    z = draw(launch, "randn", random_seed(rng), n=n).astype(np.float64)
    assert np.isfinite(z).all()
    assert abs(z.mean()) < 6 / np.sqrt(n)
    assert abs(z.var() - 1) < 6 * np.sqrt(2 / n)
    assert abs(np.mean(np.abs(z) < 1) - 0.682689) < 6 * np.sqrt(0.2166 / n)


def test_randint_covers_the_full_uint32_range(launch, rng):
    r = draw(launch, "randint", random_seed(rng)).astype(np.float64)
    n = r.size  # each quarter of [0, 2^32) gets about n/4 draws
    quarters = np.histogram(r, bins=4, range=(0, 2**32))[0]
    assert (np.abs(quarters - n / 4) < 6 * np.sqrt(n / 4)).all()


def test_same_seed_and_offsets_give_the_same_numbers(launch, rng):
    seed = random_seed(rng)
    assert_equal(draw(launch, "rand", seed), draw(launch, "rand", seed))


def test_different_seeds_or_offsets_are_independent(launch, rng):
    seed = random_seed(rng)
    a = draw(launch, "rand", seed).astype(np.float64)
    b = draw(launch, "rand", seed + 1).astype(np.float64)
    c = draw(launch, "rand", seed, base=N).astype(np.float64)
    for other in (b, c):
        assert np.mean(a == other) < 0.01
        assert abs(np.corrcoef(a, other)[0, 1]) < 6 / np.sqrt(N)
