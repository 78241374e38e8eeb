"""Counter-based random numbers (Philox 4x32-10), written in the block language.

Same stream as Triton's `tl.rand(seed, offsets)`: the 64-bit seed is the key (low word k0,
high word k1), the offsets' low 32 bits are the first counter word and, for int64 offsets,
their high 32 bits the second (the other words are 0), ten rounds, and the first output
word becomes a float in [0, 1). Each (seed, offset) pair gives the same numbers on every
backend, which is what makes dropout masks reproducible.
"""

from __future__ import annotations

from kernellab.language import core
from kernellab.language.builtins import (
    cos,
    full,
    log,
    maximum,
    sin,
    sqrt,
    static_assert,
    static_range,
    to_tensor,
    umulhi,
    where,
)
from kernellab.language.core import constexpr, kernel_function

N_ROUNDS_DEFAULT = constexpr(10)

# Philox round multipliers and Weyl key increments (golden ratio, sqrt(3) - 1), per word size.
ROUND_A_32 = constexpr(0xD2511F53)
ROUND_B_32 = constexpr(0xCD9E8D57)
KEY_A_32 = constexpr(0x9E3779B9)
KEY_B_32 = constexpr(0xBB67AE85)
ROUND_A_64 = constexpr(0xD2E7470EE14C6C93)
ROUND_B_64 = constexpr(0xCA5A826395121157)
KEY_A_64 = constexpr(0x9E3779B97F4A7C15)
KEY_B_64 = constexpr(0xBB67AE8584CAA73B)


@kernel_function
def philox_impl(c0, c1, c2, c3, k0, k1, n_rounds: constexpr = N_ROUNDS_DEFAULT):
    """`n_rounds` Philox rounds on counter (c0, c1, c2, c3) with key (k0, k1); all uint32 or
    all uint64. Returns the four output words."""
    if c0.dtype == core.uint32:
        mul_a = ROUND_A_32
        mul_b = ROUND_B_32
        key_a = KEY_A_32
        key_b = KEY_B_32
    else:
        static_assert(c0.dtype == core.uint64, "philox_impl needs uint32 or uint64 words")
        mul_a = ROUND_A_64
        mul_b = ROUND_B_64
        key_a = KEY_A_64
        key_b = KEY_B_64
    for _ in static_range(n_rounds):
        prev_c0 = c0
        prev_c2 = c2
        c0 = umulhi(mul_b, prev_c2) ^ c1 ^ k0
        c2 = umulhi(mul_a, prev_c0) ^ c3 ^ k1
        c1 = mul_b * prev_c2
        c3 = mul_a * prev_c0
        k0 = k0 + key_a
        k1 = k1 + key_b
    return c0, c1, c2, c3


@kernel_function
def philox(seed, c0, c1, c2, c3, n_rounds: constexpr = N_ROUNDS_DEFAULT):
    """Philox on counters of 32-bit (or 64-bit) ints keyed by the 64-bit `seed`; returns four
    blocks of uint32 (or uint64)."""
    seed = to_tensor(seed).to(core.uint64)
    c0 = to_tensor(c0)
    c1 = to_tensor(c1)
    c2 = to_tensor(c2)
    c3 = to_tensor(c3)
    if c0.dtype.primitive_bitwidth == 32:
        word = core.uint32
        key_hi = ((seed >> 32) & 0xFFFFFFFF).to(core.uint32)
        key_lo = (seed & 0xFFFFFFFF).to(core.uint32)
    else:
        static_assert(
            c0.dtype.primitive_bitwidth == 64, "philox counters must be 32- or 64-bit ints"
        )
        word = core.uint64
        key_hi = full((), 0, core.uint64)
        key_lo = seed
    c0 = c0.to(word, bitcast=True)
    c1 = c1.to(word, bitcast=True)
    c2 = c2.to(word, bitcast=True)
    c3 = c3.to(word, bitcast=True)
    return philox_impl(c0, c1, c2, c3, key_lo, key_hi, n_rounds)


@kernel_function
def randint4x(seed, offset, n_rounds: constexpr = N_ROUNDS_DEFAULT):
    """Four blocks of random uint32 for a scalar `seed` and a block of int32 or int64 `offset`s.

    r0, r1, r2, r3 = tl.randint4x(seed, offs)

    As in Triton, the counter is always 32-bit words: the offset's low 32 bits are c0 and, for
    64-bit offsets, its high 32 bits are c1 (0 otherwise), so int64 offsets give Triton's stream.
    """
    offset = to_tensor(offset)
    lo = offset.to(core.uint32)
    zero = lo * 0
    if offset.dtype.primitive_bitwidth > 32:
        hi = (offset >> 32).to(core.uint32)
    else:
        hi = zero
    return philox(seed, lo, hi, zero, zero, n_rounds)


@kernel_function
def randint(seed, offset, n_rounds: constexpr = N_ROUNDS_DEFAULT):
    """One block of random uint32 for a scalar `seed` and a block of `offset`s."""
    ret, _, _, _ = randint4x(seed, offset, n_rounds)
    return ret


@kernel_function
def uint_to_uniform_float(x):
    """Random 32- or 64-bit ints → fp32 uniform in [0, 1): |x| (folded so both signs map to
    the same range) times the largest scale that keeps the result below 1."""
    if x.dtype.primitive_bitwidth == 32:
        x = x.to(core.int32, bitcast=True)
        scale = 4.6566127342e-10
    else:
        static_assert(
            x.dtype.primitive_bitwidth == 64, "uint_to_uniform_float needs 32- or 64-bit ints"
        )
        x = x.to(core.int64, bitcast=True)
        scale = 1.0842020432385337e-19
    x = where(x < 0, -x - 1, x)
    return x * scale


@kernel_function
def rand(seed, offset, n_rounds: constexpr = N_ROUNDS_DEFAULT):
    """fp32 uniform in [0, 1) for a scalar `seed` and a block of `offset`s.

    keep = tl.rand(seed, offs) > p    # dropout mask
    """
    source = randint(seed, offset, n_rounds)
    return uint_to_uniform_float(source)


@kernel_function
def rand4x(seed, offsets, n_rounds: constexpr = N_ROUNDS_DEFAULT):
    """Four blocks of fp32 uniform in [0, 1) from one Philox evaluation."""
    i1, i2, i3, i4 = randint4x(seed, offsets, n_rounds)
    return (
        uint_to_uniform_float(i1),
        uint_to_uniform_float(i2),
        uint_to_uniform_float(i3),
        uint_to_uniform_float(i4),
    )


@kernel_function
def pair_uniform_to_normal(u1, u2):
    """Box–Muller: two uniforms in [0, 1) → two independent standard normals."""
    u1 = maximum(1.0e-7, u1)
    th = 6.283185307179586 * u2
    r = sqrt(-2.0 * log(u1))
    return r * cos(th), r * sin(th)


@kernel_function
def randn(seed, offset, n_rounds: constexpr = N_ROUNDS_DEFAULT):
    """fp32 standard normal N(0, 1) for a scalar `seed` and a block of `offset`s."""
    i1, i2, _, _ = randint4x(seed, offset, n_rounds)
    u1 = uint_to_uniform_float(i1)
    u2 = uint_to_uniform_float(i2)
    n1, _ = pair_uniform_to_normal(u1, u2)
    return n1


@kernel_function
def randn4x(seed, offset, n_rounds: constexpr = N_ROUNDS_DEFAULT):
    """Four blocks of fp32 standard normals from one Philox evaluation."""
    u1, u2, u3, u4 = rand4x(seed, offset, n_rounds)
    n1, n2 = pair_uniform_to_normal(u1, u2)
    n3, n4 = pair_uniform_to_normal(u3, u4)
    return n1, n2, n3, n4
