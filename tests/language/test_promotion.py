"""Triton's type promotion (tensor-tensor, tensor-Python scalar, tensor-runtime scalar),
broadcasting, the types of scalar kernel arguments, and `.to()` conversions (with bitcast,
fp16/bf16/fp8 round trips checked against ml_dtypes)."""

import ml_dtypes
import numpy as np
import pytest
from conftest import NP_DTYPES, assert_close, assert_equal, f64, poison, random_array

import kernellab as kl
import kernellab.language as tl

B = 256

# -- tensor op tensor ------------------------------------------------------------------------


@kl.jit
def add_kernel(x_ptr, y_ptr, out_ptr, EXPECTED: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    z = tl.load(x_ptr + offs) + tl.load(y_ptr + offs)
    tl.static_assert(EXPECTED == z.dtype, "x + y has the wrong dtype")
    tl.store(out_ptr + offs, z)


# (x dtype, y dtype, Triton's result dtype)
TENSOR_CASES = [
    ("int8", "int32", "int32"),
    ("uint32", "int32", "uint32"),  # same width, different signedness: unsigned wins
    ("int8", "uint8", "uint8"),
    ("int64", "uint32", "int64"),  # a wider signed type wins
    ("int32", "float16", "float16"),
    ("float16", "bfloat16", "float16"),  # fp16 is checked before bf16
    ("bfloat16", "bfloat16", "bfloat16"),
    ("bfloat16", "int32", "float32"),  # bf16 stays bf16 only with bf16
    ("float16", "float32", "float32"),
    ("float32", "float64", "float64"),
]


def promotion_inputs(rng, dtype):
    np_dtype = NP_DTYPES[dtype]
    if dtype == "uint32":
        return rng.integers(2**31, 2**32, B, dtype=np.int64).astype(np.uint32)  # above int32 max
    if dtype == "int32":
        return random_array(rng, B, np.int32, -100, 100)  # negatives: they wrap as unsigned
    return random_array(rng, B, np_dtype)


@pytest.mark.parametrize("x_dtype,y_dtype,result", TENSOR_CASES, ids=lambda v: str(v))
def test_tensor_tensor_promotion(launch, rng, x_dtype, y_dtype, result):
    x, y = promotion_inputs(rng, x_dtype), promotion_inputs(rng, y_dtype)
    np_result = NP_DTYPES[result]
    out = poison(B, np_result)
    launch(add_kernel, (1,), x, y, out, EXPECTED=getattr(tl, result), BLOCK=B)
    if np.dtype(np_result).kind in "iu":
        expected = x.astype(np_result) + y.astype(np_result)  # wraps like the kernel
    else:  # both converted to the result type, added exactly, rounded once
        expected = (f64(x.astype(np_result)) + f64(y.astype(np_result))).astype(np_result)
    assert_equal(out, expected)


# -- tensor op Python scalar / runtime scalar ---------------------------------------------------


@kl.jit
def scalar_promotion_kernel(x_ptr, out_ptr, s, CASE: tl.constexpr, EXPECTED: tl.constexpr,
                            BLOCK: tl.constexpr):  # fmt: skip
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    if CASE == "+1.5":
        z = x + 1.5
    elif CASE == "*1.5":
        z = x * 1.5
    elif CASE == "+100":
        z = x + 100
    elif CASE == "+2**40":
        z = x + 2**40
    elif CASE == "/2":
        z = x / 2
    elif CASE == "+s":
        z = x + s
    elif CASE == "*s":
        z = x * s
    elif CASE == "s-":
        z = s - x
    tl.static_assert(EXPECTED == z.dtype, "the result has the wrong dtype")
    tl.store(out_ptr + offs, z)


# (case, x dtype, runtime scalar s, result dtype, float64 reference of the result)
SCALAR_CASES = [
    ("+1.5", "float32", 0, "float32", lambda x, s: x + 1.5),
    ("*1.5", "float16", 0, "float16", lambda x, s: x * 1.5),  # a float literal keeps fp16
    ("+1.5", "bfloat16", 0, "bfloat16", lambda x, s: x + 1.5),
    ("+1.5", "int32", 0, "float32", lambda x, s: x + 1.5),  # a float literal lifts ints
    ("+100", "int8", 0, "int8", lambda x, s: x + 100),  # an int literal keeps int8 (wraps)
    ("+2**40", "int64", 0, "int64", lambda x, s: x + 2**40),
    ("/2", "int32", 0, "float32", lambda x, s: x / 2),
    ("/2", "float16", 0, "float32", lambda x, s: x / 2),  # fp16 division happens in fp32
    ("+s", "int32", 2**40, "int64", lambda x, s: x + s),  # a runtime i64 argument
    ("+s", "int8", 1000, "int32", lambda x, s: x + s),  # a runtime i32 argument promotes int8
    ("*s", "float16", 1.25, "float32", lambda x, s: x * s),  # a runtime fp32 argument
    ("s-", "float32", 0.5, "float32", lambda x, s: s - x),
]


@pytest.mark.parametrize("case,x_dtype,s,result,reference", SCALAR_CASES,
                         ids=[f"{c[1]}{c[0]}" for c in SCALAR_CASES])  # fmt: skip
def test_tensor_scalar_promotion(launch, rng, case, x_dtype, s, result, reference):
    x = random_array(rng, B, NP_DTYPES[x_dtype])
    np_result = NP_DTYPES[result]
    out = poison(B, np_result)
    launch(
        scalar_promotion_kernel, (1,), x, out, s, CASE=case, EXPECTED=getattr(tl, result), BLOCK=B
    )
    exact = reference(x.astype(np.int64) if x.dtype.kind in "iu" else f64(x), s)
    expected = np.asarray(exact).astype(np_result)  # ints wrap, floats round once
    # the exact result rounded once; fp32 division may be a few ulp off on a GPU
    assert_close(out, expected, rtol=1e-6 if case == "/2" else 0)


@kl.jit
def scalar_args_kernel(i_ptr, u_ptr, f_ptr, b_ptr, small, big, above_i32, huge, real, flag):
    tl.static_assert(small.dtype == tl.int32, "an int that fits int32 is i32")
    tl.static_assert(big.dtype == tl.int64, "an int beyond int32 is i64")
    tl.static_assert(above_i32.dtype == tl.int64, "an int in [2^31, 2^32) is i64")
    tl.static_assert(huge.dtype == tl.uint64, "an int in [2^63, 2^64) is u64")
    tl.static_assert(real.dtype == tl.float32, "a float is fp32")
    tl.static_assert(flag.dtype == tl.int1, "a bool is i1")
    tl.store(i_ptr + 0, small)
    tl.store(i_ptr + 1, big)
    tl.store(i_ptr + 2, above_i32)
    tl.store(u_ptr, huge)
    tl.store(f_ptr, real)
    tl.store(b_ptr, flag)


def test_scalar_arguments_are_typed_like_triton(launch, rng):
    small = int(rng.integers(-(2**31), 2**31))
    big = int(rng.integers(2**40, 2**62))
    above_i32 = int(rng.integers(2**31, 2**32))
    huge = 2**63 + int(rng.integers(1, 2**40))
    real = float(np.float32(rng.uniform(-5, 5)))
    i_out, u_out, f_out, b_out = (
        poison(3, np.int64),
        poison(1, np.uint64),
        poison(1, np.float64),
        poison(1, np.int8),
    )
    launch(
        scalar_args_kernel,
        (1,),
        i_out,
        u_out,
        f_out,
        b_out,
        small,
        big,
        above_i32,
        huge,
        real,
        True,
    )
    assert_equal(i_out, np.array([small, big, above_i32], np.int64))
    assert int(u_out[0]) == huge
    assert f_out[0] == real
    assert b_out[0] == 1


# -- broadcasting -------------------------------------------------------------------------------


@kl.jit
def broadcast_kernel(
    col_ptr, row_ptr, mat_ptr, outer_ptr, sum_ptr, M: tl.constexpr, N: tl.constexpr
):
    col = tl.load(col_ptr + tl.arange(0, M))  # int32
    row = tl.load(row_ptr + tl.arange(0, N))  # fp32
    offs = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    mat = tl.load(mat_ptr + offs)  # fp32 (M, N)
    outer = col[:, None] + row[None, :]  # (M, 1) + (1, N), int32 + fp32
    tl.static_assert(outer.dtype == tl.float32)
    tl.store(outer_ptr + offs, outer)
    tl.store(sum_ptr + offs, mat + row)  # (M, N) + (N,): the lower rank gets leading dims


def test_broadcasting_with_promotion(launch, rng):
    M, N = 16, 32
    col = random_array(rng, M, np.int32)
    row, mat = random_array(rng, N, np.float32), random_array(rng, (M, N), np.float32)
    outer, total = poison((M, N), np.float32), poison((M, N), np.float32)
    launch(broadcast_kernel, (1,), col, row, mat, outer, total, M=M, N=N)
    assert_equal(outer, (col[:, None].astype(np.float64) + row[None, :]).astype(np.float32))
    assert_equal(total, mat + row[None, :])


@kl.jit
def mixed_compare_kernel(i_ptr, f_ptr, u_ptr, out_ptr, out_u_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    i = tl.load(i_ptr + offs)  # int32
    f = tl.load(f_ptr + offs)  # fp32
    u = tl.load(u_ptr + offs)  # uint32
    tl.store(out_ptr + offs, (i < f).to(tl.int8))  # compared as fp32
    tl.store(out_u_ptr + offs, (i < u).to(tl.int8))  # compared as uint32: -1 is huge


def test_comparison_promotes_like_arithmetic(launch, rng):
    i = random_array(rng, B, np.int32, -100, 100)
    f = (i + rng.choice([-0.5, 0.5], B)).astype(np.float32)
    u = random_array(rng, B, np.uint32, 1, 100)
    out, out_u = poison(B, np.int8), poison(B, np.int8)
    launch(mixed_compare_kernel, (1,), i, f, u, out, out_u, BLOCK=B)
    assert_equal(out, (i < f).astype(np.int8))
    assert_equal(out_u, (i.astype(np.uint32) < u).astype(np.int8))


# -- conversions ------------------------------------------------------------------------------------


@kl.jit
def cast_kernel(x_ptr, out_ptr, DST: tl.constexpr, BITCAST: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    y = tl.load(x_ptr + offs).to(DST, bitcast=BITCAST)
    tl.static_assert(y.dtype == DST)
    tl.store(out_ptr + offs, y)


def run_cast(launch, x, dst, out_dtype, bitcast=False):
    out = poison(x.shape, out_dtype)
    launch(cast_kernel, (1,), x, out, DST=getattr(tl, dst), BITCAST=bitcast, BLOCK=x.size)
    return out


def wide_floats(rng, n=B, low_exp=-10, high_exp=8):
    """Random magnitudes over many binades (subnormals of fp16/fp8 included), random signs."""
    values = 2.0 ** rng.uniform(low_exp, high_exp, n) * rng.choice([-1, 1], n)
    return values.astype(np.float32)


@pytest.mark.parametrize("dst", ["float16", "bfloat16", "float8e4nv", "float8e5", "float64"])
def test_float_conversions_round_to_nearest_even(launch, rng, dst):
    x = wide_floats(rng)
    expected = x.astype(NP_DTYPES[dst])  # ml_dtypes / numpy: round to nearest, ties to even
    assert_equal(run_cast(launch, x, dst, NP_DTYPES[dst]), expected)


@pytest.mark.parametrize("src", ["float16", "bfloat16", "float8e4nv", "float8e5"])
def test_narrow_floats_widen_exactly(launch, rng, src):
    x = wide_floats(rng).astype(NP_DTYPES[src])
    assert_equal(run_cast(launch, x, "float32", np.float32), f64(x).astype(np.float32))


@kl.jit
def rtz_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs).to(tl.float16, fp_downcast_rounding="rtz"))


def test_fp32_to_fp16_round_toward_zero(launch, rng):
    x = wide_floats(rng, low_exp=-12, high_exp=14)
    out = poison(B, np.float16)
    launch(rtz_kernel, (1,), x, out, BLOCK=B)
    nearest = x.astype(np.float16)
    too_big = np.abs(nearest.astype(np.float64)) > np.abs(x.astype(np.float64))
    expected = np.where(too_big, np.nextafter(nearest, np.float16(0)), nearest)
    assert_equal(out, expected)


@pytest.mark.parametrize("src,dst", [("float32", "int32"), ("float32", "int8"), ("float64", "int64"),
                                     ("float16", "int16"), ("float32", "uint8")])  # fmt: skip
def test_float_to_int_truncates_toward_zero(launch, rng, src, dst):
    info = np.iinfo(NP_DTYPES[dst])
    x = rng.uniform(max(info.min, -1000), min(info.max, 1000), B).astype(NP_DTYPES[src])
    assert_equal(run_cast(launch, x, dst, NP_DTYPES[dst]), np.trunc(f64(x)).astype(NP_DTYPES[dst]))


@pytest.mark.parametrize("src,dst,bits", [("int32", "float32", 31), ("int64", "float64", 63),
                                          ("uint32", "float32", 32), ("int8", "float16", 7),
                                          ("int32", "bfloat16", 24)])  # fmt: skip
def test_int_to_float_rounds_to_nearest(launch, rng, src, dst, bits):
    """One rounding to nearest even (the reference goes through float64, exact for the inputs;
    bf16 inputs stay below 2^24 so ml_dtypes' conversion cannot round twice)."""
    info = np.iinfo(NP_DTYPES[src])
    low, high = max(int(info.min), -(2**bits)), min(int(info.max), 2**bits - 1)
    x = rng.integers(low, high, B, dtype=np.int64).astype(NP_DTYPES[src])
    assert_equal(
        run_cast(launch, x, dst, NP_DTYPES[dst]), x.astype(np.float64).astype(NP_DTYPES[dst])
    )


@pytest.mark.parametrize("src,dst", [("int32", "int8"), ("int8", "int32"), ("uint8", "int32"),
                                     ("int32", "uint32"), ("uint32", "int64"), ("int64", "int16"),
                                     ("int16", "uint64")])  # fmt: skip
def test_int_to_int_wraps_and_extends(launch, rng, src, dst):
    """Narrowing keeps the low bits; widening sign-extends signed and zero-extends unsigned."""
    info = np.iinfo(NP_DTYPES[src])
    x = rng.integers(int(info.min), int(info.max), B, dtype=np.int64).astype(NP_DTYPES[src])
    assert_equal(run_cast(launch, x, dst, NP_DTYPES[dst]), x.astype(NP_DTYPES[dst]))


@pytest.mark.parametrize("src", ["int32", "float32", "uint8"])
def test_cast_to_int1_is_nonzero(launch, rng, src):
    x = random_array(rng, B, NP_DTYPES[src])
    x[::3] = 0
    assert_equal(run_cast(launch, x, "int1", np.int8), (x != 0).astype(np.int8))


@pytest.mark.parametrize("src,dst", [("float32", "int32"), ("int32", "float32"), ("float16", "int16"),
                                     ("uint32", "float32"), ("bfloat16", "uint16"),
                                     ("float64", "int64")])  # fmt: skip
def test_bitcast_reinterprets_the_bits(launch, rng, src, dst):
    if np.dtype(NP_DTYPES[src]).kind in "iu":  # 32-bit patterns of finite floats: no NaN payloads
        x = random_array(rng, B, np.float32).view(NP_DTYPES[src])
    else:
        x = random_array(rng, B, NP_DTYPES[src])
    assert_equal(run_cast(launch, x, dst, NP_DTYPES[dst], bitcast=True), x.view(NP_DTYPES[dst]))


@kl.jit
def cast_function_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.cast(tl.load(x_ptr + offs), tl.bfloat16))


def test_tl_cast_function(launch, rng):
    x = wide_floats(rng)
    out = poison(B, ml_dtypes.bfloat16)
    launch(cast_function_kernel, (1,), x, out, BLOCK=B)
    assert_equal(out, x.astype(ml_dtypes.bfloat16))
