"""Python operators on tensors, tl.where, tl.minimum/maximum (NaN options) and tl.clamp."""

import numpy as np
import pytest
from conftest import NP_DTYPES, assert_close, assert_equal, cdiv, f64, poison, random_array

import kernellab as kl
import kernellab.language as tl

N, BLOCK = 1000, 128  # 8 programs, the last one partly masked
GRID = (cdiv(N, BLOCK),)


@kl.jit
def binary_kernel(x_ptr, y_ptr, out_ptr, n, OP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    if OP == "+":
        z = x + y
    elif OP == "-":
        z = x - y
    elif OP == "*":
        z = x * y
    elif OP == "/":
        z = x / y
    elif OP == "//":
        z = x // y
    elif OP == "%":
        z = x % y
    elif OP == "&":
        z = x & y
    elif OP == "|":
        z = x | y
    elif OP == "^":
        z = x ^ y
    elif OP == "<<":
        z = x << y
    elif OP == ">>":
        z = x >> y
    elif OP == "<":
        z = x < y
    elif OP == "<=":
        z = x <= y
    elif OP == ">":
        z = x > y
    elif OP == ">=":
        z = x >= y
    elif OP == "==":
        z = x == y
    elif OP == "!=":
        z = x != y
    elif OP == "minimum":
        z = tl.minimum(x, y)
    elif OP == "maximum":
        z = tl.maximum(x, y)
    elif OP == "minimum_nan":
        z = tl.minimum(x, y, propagate_nan=tl.PropagateNan.ALL)
    elif OP == "maximum_nan":
        z = tl.maximum(x, y, propagate_nan=tl.PropagateNan.ALL)
    tl.store(out_ptr + offs, z, mask=mask)


@kl.jit
def unary_kernel(x_ptr, out_ptr, n, OP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    if OP == "-":
        z = -x
    elif OP == "+":
        z = +x
    elif OP == "~":
        z = ~x
    elif OP == "not":
        z = not (x > 0)
    tl.store(out_ptr + offs, z, mask=mask)


def run_binary(launch, op, x, y, out_dtype):
    out = poison(N, out_dtype)
    launch(binary_kernel, GRID, x, y, out, N, OP=op, BLOCK=BLOCK)
    return out


INT_DTYPES = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
FLOAT_DTYPES = ["float16", "bfloat16", "float32", "float64"]

# -- arithmetic --------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", INT_DTYPES + FLOAT_DTYPES)
@pytest.mark.parametrize("op", ["+", "-", "*"])
def test_add_sub_mul_are_exact(launch, rng, op, dtype):
    """Same-dtype + - * keep the dtype; ints wrap, floats round once (exact here: the inputs
    are small enough that the float64 result is exact before rounding)."""
    np_dtype = NP_DTYPES[dtype]
    x, y = random_array(rng, N, np_dtype), random_array(rng, N, np_dtype)
    out = run_binary(launch, op, x, y, np_dtype)
    if np.dtype(np_dtype).kind in "iu":
        expected = {"+": np.add, "-": np.subtract, "*": np.multiply}[op](x, y)
    else:
        expected = {"+": np.add, "-": np.subtract, "*": np.multiply}[op](f64(x), f64(y))
        expected = expected.astype(np_dtype)
    assert_equal(out, expected)


@pytest.mark.parametrize("dtype", ["int8", "int32", "uint32", "float16", "bfloat16", "float32"])
def test_true_division_gives_fp32(launch, rng, dtype):
    """`/` of ints, fp16 or bf16 computes in fp32 (Triton's promotion for / and %)."""
    np_dtype = NP_DTYPES[dtype]
    x, y = random_array(rng, N, np_dtype), random_array(rng, N, np_dtype)
    out = run_binary(launch, "/", x, y, np.float32)
    assert_close(out, f64(x) / f64(y), rtol=1e-6)


def test_true_division_fp64(launch, rng):
    x, y = random_array(rng, N, np.float64), random_array(rng, N, np.float64)
    out = run_binary(launch, "/", x, y, np.float64)
    assert_close(out, x / y, rtol=1e-15)


def c_division(x, y):
    """C (and Triton) integer division and remainder: the quotient rounds toward zero."""
    q = np.abs(x.astype(np.int64)) // np.abs(y.astype(np.int64))
    q = np.where((x < 0) != (y < 0), -q, q)
    return q, x.astype(np.int64) - q * y.astype(np.int64)


@pytest.mark.parametrize("dtype", INT_DTYPES)
@pytest.mark.parametrize("op", ["//", "%"])
def test_int_floordiv_and_mod_positive(launch, rng, op, dtype):
    np_dtype = NP_DTYPES[dtype]
    x = random_array(rng, N, np_dtype, 1, 100)
    y = random_array(rng, N, np_dtype, 1, 12)
    out = run_binary(launch, op, x, y, np_dtype)
    assert_equal(out, x // y if op == "//" else x % y)


@pytest.mark.parametrize("dtype", ["int8", "int32", "int64"])
@pytest.mark.parametrize("op", ["//", "%"])
def test_int_floordiv_and_mod_truncate_toward_zero(launch, rng, op, dtype):
    """Signed // and % follow C: -7 // 2 == -3 and -7 % 2 == -1 (not Python's -4 and 1)."""
    np_dtype = NP_DTYPES[dtype]
    x = random_array(rng, N, np_dtype, -100, 100)
    y = random_array(rng, N, np_dtype, -12, 12)
    out = run_binary(launch, op, x, y, np_dtype)
    q, r = c_division(x, y)
    assert_equal(out, (q if op == "//" else r).astype(np_dtype))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_float_mod_is_fmod(launch, rng, dtype):
    """Float % keeps the sign of the dividend (C fmod) and is exact, also where x / y rounds up
    to an integer (every third x is the float just below k·y): LLVM's GPU expansion of frem
    returned about -0 there instead of about y."""
    np_dtype = NP_DTYPES[dtype]
    x = random_array(rng, N, np_dtype, -20, 20)
    y = random_array(rng, N, np_dtype)
    k = rng.integers(2, 200, N).astype(np_dtype)
    below = np.nextafter((k * y).astype(np_dtype), np.zeros(N, np_dtype))
    x[::3] = below[::3]
    out = run_binary(launch, "%", x, y, np_dtype)
    assert_equal(out, np.fmod(x, y))


# -- bitwise -----------------------------------------------------------------------------


def full_range(rng, dtype, n=N):
    info = np.iinfo(dtype)
    values = rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
    values[values == 0] = 1
    return values


@pytest.mark.parametrize("dtype", ["int8", "int32", "int64", "uint8", "uint32"])
@pytest.mark.parametrize("op", ["&", "|", "^"])
def test_bitwise(launch, rng, op, dtype):
    np_dtype = NP_DTYPES[dtype]
    x, y = full_range(rng, np_dtype), full_range(rng, np_dtype)
    out = run_binary(launch, op, x, y, np_dtype)
    assert_equal(out, {"&": np.bitwise_and, "|": np.bitwise_or, "^": np.bitwise_xor}[op](x, y))


@pytest.mark.parametrize("dtype", ["int8", "int32", "int64", "uint8", "uint32", "uint64"])
@pytest.mark.parametrize("op", ["<<", ">>"])
def test_shifts(launch, rng, op, dtype):
    """>> is arithmetic for signed and logical for unsigned types; << wraps."""
    np_dtype = NP_DTYPES[dtype]
    bits = np.dtype(np_dtype).itemsize * 8
    x = full_range(rng, np_dtype)
    y = rng.integers(0, bits, N).astype(np_dtype)
    out = run_binary(launch, op, x, y, np_dtype)
    assert_equal(out, np.left_shift(x, y) if op == "<<" else np.right_shift(x, y))


# -- comparisons -------------------------------------------------------------------------

COMPARE = {"<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal,
           "==": np.equal, "!=": np.not_equal}  # fmt: skip


def compare_inputs(rng, dtype):
    np_dtype = NP_DTYPES[dtype]
    if np.dtype(np_dtype).kind in "iu":
        x, y = full_range(rng, np_dtype), full_range(rng, np_dtype)
    else:
        x, y = random_array(rng, N, np_dtype), random_array(rng, N, np_dtype)
        x[::7] = np.nan  # every ordered comparison with NaN is false, != is true
    y[::5] = x[::5]  # and some ties
    return x, y


@pytest.mark.parametrize(
    "dtype", ["int8", "int32", "uint32", "int64", "float16", "bfloat16", "float32"]
)
@pytest.mark.parametrize("op", list(COMPARE))
def test_comparisons(launch, rng, op, dtype):
    """Unsigned types compare unsigned (values above 2^31 included); NaN compares unordered."""
    x, y = compare_inputs(rng, dtype)
    out = run_binary(launch, op, x, y, np.int8)
    with np.errstate(invalid="ignore"):  # numpy warns about comparing bf16 NaNs
        expected = COMPARE[op](x, y).astype(np.int8)
    assert_equal(out, expected)


# -- unary -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "dtype", ["int8", "int32", "int64", "float16", "bfloat16", "float32", "float64"]
)
def test_negation(launch, rng, dtype):
    np_dtype = NP_DTYPES[dtype]
    x = random_array(rng, N, np_dtype)
    out = poison(N, np_dtype)
    launch(unary_kernel, GRID, x, out, N, OP="-", BLOCK=BLOCK)
    assert_equal(out, -x)


def test_unary_plus(launch, rng):
    x = random_array(rng, N, np.float32)
    out = poison(N, np.float32)
    launch(unary_kernel, GRID, x, out, N, OP="+", BLOCK=BLOCK)
    assert_equal(out, x)


@pytest.mark.parametrize("dtype", ["int8", "int32", "uint32", "int64"])
def test_invert(launch, rng, dtype):
    np_dtype = NP_DTYPES[dtype]
    x = full_range(rng, np_dtype)
    out = poison(N, np_dtype)
    launch(unary_kernel, GRID, x, out, N, OP="~", BLOCK=BLOCK)
    assert_equal(out, np.invert(x))


def test_not_of_boolean_tensor(launch, rng):
    x = random_array(rng, N, np.float32)
    out = poison(N, np.int8)
    launch(unary_kernel, GRID, x, out, N, OP="not", BLOCK=BLOCK)
    assert_equal(out, (x <= 0).astype(np.int8))


# -- where, minimum, maximum, clamp ------------------------------------------------------


@kl.jit
def where_kernel(c_ptr, x_ptr, y_ptr, out_ptr, out_scalar_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    c = tl.load(c_ptr + offs, mask=mask) != 0
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.where(c, x, y), mask=mask)
    tl.store(out_scalar_ptr + offs, tl.where(x > y, x, -0.5), mask=mask)


@pytest.mark.parametrize("dtype", ["int32", "float16", "float32"])
def test_where(launch, rng, dtype):
    np_dtype = NP_DTYPES[dtype]
    c = (rng.random(N) < 0.5).astype(np.int8)
    x, y = random_array(rng, N, np_dtype), random_array(rng, N, np_dtype)
    out, out_scalar = poison(N, np_dtype), poison(N, np.float32)
    launch(where_kernel, GRID, c, x, y, out, out_scalar, N, BLOCK=BLOCK)
    assert_equal(out, np.where(c != 0, x, y))
    assert_equal(out_scalar, np.where(x > y, f64(x), -0.5))


@kl.jit
def where_scalar_condition_kernel(x_ptr, y_ptr, out_ptr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    tl.store(out_ptr + offs, tl.where(pid % 2 == 0, x, y))  # a scalar condition selects blocks


def test_where_with_a_scalar_condition(launch, rng):
    programs, B = 5, 32
    x, y = (
        random_array(rng, (programs, B), np.float32),
        random_array(rng, (programs, B), np.float32),
    )
    out = poison((programs, B), np.float32)
    launch(where_scalar_condition_kernel, (programs,), x, y, out, BLOCK=B)
    assert_equal(out, np.where((np.arange(programs) % 2 == 0)[:, None], x, y))


@pytest.mark.parametrize(
    "dtype", ["int8", "int32", "uint32", "int64", "float16", "bfloat16", "float32", "float64"]
)
@pytest.mark.parametrize("op", ["minimum", "maximum"])
def test_minimum_maximum(launch, rng, op, dtype):
    np_dtype = NP_DTYPES[dtype]
    if np.dtype(np_dtype).kind in "iu":
        x, y = full_range(rng, np_dtype), full_range(rng, np_dtype)
    else:
        x, y = random_array(rng, N, np_dtype), random_array(rng, N, np_dtype)
    out = run_binary(launch, op, x, y, np_dtype)
    assert_equal(out, getattr(np, op)(x, y))


@pytest.mark.parametrize("op", ["minimum", "maximum"])
def test_minimum_maximum_propagate_nan_all(launch, rng, op):
    x, y = random_array(rng, N, np.float32), random_array(rng, N, np.float32)
    x[::7] = np.nan
    y[::11] = np.nan
    out = run_binary(launch, op + "_nan", x, y, np.float32)
    assert_equal(out, getattr(np, op)(x, y))  # numpy's minimum/maximum propagate NaN


@pytest.mark.parametrize("op", ["minimum", "maximum"])
def test_minimum_maximum_default_nan_handling(launch, rng, op):
    """Without propagate_nan Triton leaves the NaN result open: either operand's NaN or the
    other operand is fine; lanes without NaN must be exact."""
    x, y = random_array(rng, N, np.float32), random_array(rng, N, np.float32)
    x[::7] = np.nan
    out = run_binary(launch, op, x, y, np.float32)
    nan = np.isnan(x)
    assert_equal(out[~nan], getattr(np, op)(x, y)[~nan])
    assert np.all(np.isnan(out[nan]) | (out[nan] == y[nan]))


@kl.jit
def clamp_kernel(x_ptr, lo_ptr, hi_ptr, out_ptr, out_scalar_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    lo = tl.load(lo_ptr + offs, mask=mask)
    hi = tl.load(hi_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.clamp(x, lo, hi), mask=mask)
    tl.store(out_scalar_ptr + offs, tl.clamp(x, -1.0, 1.5), mask=mask)


def test_clamp(launch, rng):
    x = random_array(rng, N, np.float32)
    a, b = random_array(rng, N, np.float32), random_array(rng, N, np.float32)
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    out, out_scalar = poison(N, np.float32), poison(N, np.float32)
    launch(clamp_kernel, GRID, x, lo, hi, out, out_scalar, N, BLOCK=BLOCK)
    assert_equal(out, np.minimum(np.maximum(x, lo), hi))
    assert_equal(out_scalar, np.clip(x, -1.0, 1.5))
