"""tl.dot on the tensor cores (mma.sync, operands through ldmatrix or shared loads), and on the
FMA path where no instruction applies, in one kernel: shapes, warps, dtypes (batched 3-D too),
input_precision, transposed operands, masks on K, accumulation in a loop and acc=. On the
CPU the interpreter runs them (checking the tests' bounds) and every kernel is assembled for
sm_80 and sm_90; on the GPU (`-m gpu`) each result is also compared with the interpreter's
(tf32 aside: wgmma truncates its operands where the interpreter rounds them)."""

import numpy as np
import pytest
from conftest import NP_DTYPES, assert_close, assert_equal, f64, poison, random_array

import kernellab as kl
import kernellab.language as tl


@kl.jit
def mma_dot_kernel(a_ptr, b_ptr, c_ptr, out_ptr, K, M: tl.constexpr, N: tl.constexpr,
                   BK: tl.constexpr, TRANS_A: tl.constexpr, TRANS_B: tl.constexpr,
                   PRECISION: tl.constexpr, OUT_DTYPE: tl.constexpr, ACC: tl.constexpr):  # fmt: skip
    """out = a @ b (+ c), A M x K and B K x N row-major, K walked in BK chunks with a mask.
    TRANS_A / TRANS_B load the other way round and tl.trans the tile; ACC is "acc=" (tl.dot's
    accumulator argument) or "+=" (a separate dot added in)."""
    rm, rn, rk = tl.arange(0, M), tl.arange(0, N), tl.arange(0, BK)
    if ACC == "acc=":
        acc = tl.load(c_ptr + rm[:, None] * N + rn[None, :])
    else:
        acc = tl.zeros((M, N), dtype=OUT_DTYPE)
    for k0 in range(0, K, BK):
        kk = k0 + rk
        if TRANS_A:
            a = tl.trans(tl.load(a_ptr + kk[:, None] * M + rm[None, :], mask=kk[:, None] < K, other=0))
        else:
            a = tl.load(a_ptr + rm[:, None] * K + kk[None, :], mask=kk[None, :] < K, other=0)
        if TRANS_B:
            b = tl.trans(tl.load(b_ptr + rn[:, None] * K + kk[None, :], mask=kk[None, :] < K, other=0))
        else:
            b = tl.load(b_ptr + kk[:, None] * N + rn[None, :], mask=kk[:, None] < K, other=0)
        if ACC == "acc=":
            acc = tl.dot(a, b, acc, input_precision=PRECISION, out_dtype=OUT_DTYPE)
        else:
            acc += tl.dot(a, b, input_precision=PRECISION, out_dtype=OUT_DTYPE)
    tl.store(out_ptr + rm[:, None] * N + rn[None, :], acc)


def error_bound(a, b, c, unit):
    return unit * (np.abs(f64(a)) @ np.abs(f64(b)) + np.abs(f64(c)))


# input dtype, input_precision, out_dtype, numpy out dtype, unit roundoff of a dot over k
DTYPES = {
    "fp16": ("float16", None, tl.float32, np.float32, lambda k: k * 2**-24),
    "bf16": ("bfloat16", None, tl.float32, np.float32, lambda k: k * 2**-24),
    "fp16-acc-fp16": ("float16", None, tl.float16, np.float16, lambda k: k * 2**-11),
    # each operand within 2^-10 of itself: mma.sync rounds it to nearest (cvt.rna, as the
    # interpreter does), wgmma (sm_90a: an M of 64 on 4 warps) reads it truncated
    "tf32": ("float32", "tf32", tl.float32, np.float32, lambda k: 2**-9 + k * 2**-24),
    "tf32x3": ("float32", "tf32x3", tl.float32, np.float32, lambda k: 2**-20 + k * 2**-24),
    "fp8e4nv": ("float8e4nv", None, tl.float32, np.float32, lambda k: k * 2**-24),
    "fp8e5": ("float8e5", None, tl.float32, np.float32, lambda k: k * 2**-24),
}


# forms that stay on the FMA path whatever the tile
FMA_DTYPES = {
    "fp32-ieee": ("float32", "ieee", tl.float32, np.float32, lambda k: k * 2**-24),
    "fp64": ("float64", None, tl.float64, np.float64, lambda k: k * 2**-53),
}


def run(launch, rng, dtype_case, M, N, BK, K, num_warps=4, trans_a=False, trans_b=False,
        acc="acc="):  # fmt: skip
    dtype, precision, out_dtype, out_np, unit = {**DTYPES, **FMA_DTYPES}[dtype_case]
    a = random_array(rng, (M, K), NP_DTYPES[dtype])
    b = random_array(rng, (K, N), NP_DTYPES[dtype])
    c = random_array(rng, (M, N), out_np) if acc == "acc=" else np.zeros((M, N), out_np)
    out = poison((M, N), out_np)
    a_arg = np.ascontiguousarray(a.T) if trans_a else a  # TRANS_A reads A stored K x M
    b_arg = np.ascontiguousarray(b.T) if trans_b else b
    # wgmma truncates tf32 operands where the interpreter rounds them: up to 2^-10 per operand
    # apart, more than the differential tolerance, so tf32 is held to the float64 bound alone
    run_on = launch.own_bound if precision == "tf32" else launch
    run_on(mma_dot_kernel, (1,), a_arg, b_arg, c, out, K, M=M, N=N, BK=BK, TRANS_A=trans_a,
           TRANS_B=trans_b, PRECISION=precision, OUT_DTYPE=out_dtype, ACC=acc,
           num_warps=num_warps)  # fmt: skip
    expected = f64(a) @ f64(b) + f64(c)
    assert_close(out, expected, atol=error_bound(a, b, c, unit(K)))


SHAPES = [  # M, N, BK, K (K not a multiple of BK: the last chunk is masked), num_warps
    (16, 16, 16, 40, 1),
    (16, 16, 16, 16, 4),
    (64, 32, 64, 64, 2),
    (64, 128, 32, 100, 8),
    (128, 16, 16, 48, 4),
    (16, 128, 64, 96, 4),
    (128, 128, 32, 64, 8),
]


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_fp16_dot_over_shapes_and_warps(launch, rng, shape):
    M, N, BK, K, warps = shape
    run(launch, rng, "fp16", M, N, BK, K, num_warps=warps)


@pytest.mark.parametrize("dtype_case", list(DTYPES))
def test_each_tensor_core_dtype(launch, rng, dtype_case):
    run(launch, rng, dtype_case, 32, 64, 32, 72, num_warps=4)


@pytest.mark.parametrize(
    "dtype_case, trans_a, trans_b",
    [("fp16", False, True), ("fp16", True, False), ("fp16", True, True), ("tf32", True, True)],
)
def test_transposed_operands(launch, rng, dtype_case, trans_a, trans_b):
    run(launch, rng, dtype_case, 64, 32, 32, 80, trans_a=trans_a, trans_b=trans_b)


@pytest.mark.parametrize("dtype_case", ["fp16", "tf32"])
def test_accumulating_a_separate_dot_in_the_loop(launch, rng, dtype_case):
    run(launch, rng, dtype_case, 64, 64, 32, 96, acc="+=")


@pytest.mark.parametrize(
    "dtype_case, shape, trans_a, trans_b, acc",
    [("fp32-ieee", (64, 128, 32, 100, 8), True, False, "acc="),  # a K loop in the lowering
     ("fp64", (32, 32, 16, 40, 4), False, True, "acc="),
     ("fp32-ieee", (8, 64, 32, 70, 2), False, False, "+="),
     ("fp16", (8, 32, 16, 50, 1), False, True, "acc="),  # M below the instruction's 16
     ("fp16-acc-fp16", (4, 64, 32, 100, 2), True, True, "+="),
     ("tf32x3", (16, 8, 64, 130, 1), False, False, "acc=")],  # N below the instruction's 8
    ids=str,
)  # fmt: skip
def test_fma_dots_in_the_same_kernel(launch, rng, dtype_case, shape, trans_a, trans_b, acc):
    M, N, BK, K, warps = shape
    run(launch, rng, dtype_case, M, N, BK, K, num_warps=warps, trans_a=trans_a, trans_b=trans_b,
        acc=acc)  # fmt: skip


def test_int8_dot_is_exact_in_int32(launch, rng):
    M, N, BK, K, warps = 64, 128, 32, 150, 8
    a = random_array(rng, (M, K), np.int8, -128, 128)
    b = random_array(rng, (K, N), np.int8, -128, 128)
    c = random_array(rng, (M, N), np.int32)
    out = poison((M, N), np.int32)
    launch(mma_dot_kernel, (1,), a, b, c, out, K, M=M, N=N, BK=BK, TRANS_A=False, TRANS_B=False,
           PRECISION=None, OUT_DTYPE=tl.int32, ACC="acc=", num_warps=warps)  # fmt: skip
    assert_equal(out, a.astype(np.int64) @ b.astype(np.int64) + c)


@kl.jit
def chained_dot_kernel(q_ptr, k_ptr, v_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr,
                       D: tl.constexpr):  # fmt: skip
    """out = fp16(q @ k) @ v: the second dot's A operand comes from the first's accumulator."""
    rm, rn, rd = tl.arange(0, M), tl.arange(0, N), tl.arange(0, D)
    q = tl.load(q_ptr + rm[:, None] * D + rd[None, :])
    k = tl.load(k_ptr + rd[:, None] * N + rn[None, :])
    v = tl.load(v_ptr + rn[:, None] * D + rd[None, :])
    p = tl.dot(q, k).to(tl.float16)
    tl.store(out_ptr + rm[:, None] * D + rd[None, :], tl.dot(p, v))


def test_chained_dots(launch, rng):
    M, N, D = 64, 32, 64
    q = random_array(rng, (M, D), np.float16, -1, 1)
    k = random_array(rng, (D, N), np.float16, -1, 1)
    v = random_array(rng, (N, D), np.float16, -1, 1)
    out = poison((M, D), np.float32)
    # p is rounded to fp16 between the dots: the GPU's and the interpreter's p may differ by
    # an ulp where their sums ran in other orders, so the bound below is the check
    launch.own_bound(chained_dot_kernel, (1,), q, k, v, out, M=M, N=N, D=D, num_warps=4)
    s = f64(q) @ f64(k)
    # p is s rounded to fp16 (relative error 2^-11, plus the fp32 sum's D * 2^-24)
    p_bound = (2**-11 + D * 2**-24) * (np.abs(f64(q)) @ np.abs(f64(k)))
    expected = f64(s.astype(np.float16)) @ f64(v)
    atol = (p_bound + np.abs(s)) @ np.abs(f64(v)) * 2**-11 + p_bound @ np.abs(f64(v))
    assert_close(out, expected, atol=atol)


@kl.jit
def batched_mma_kernel(a_ptr, b_ptr, c_ptr, out_ptr, B: tl.constexpr, M: tl.constexpr,
                       N: tl.constexpr, K: tl.constexpr, TRANS_B: tl.constexpr,
                       PRECISION: tl.constexpr, OUT_DTYPE: tl.constexpr):  # fmt: skip
    """out[i] = a[i] @ b[i] + c[i] for each of B batch elements: one 3-D tl.dot."""
    rb = tl.arange(0, B)[:, None, None]
    rm = tl.arange(0, M)[None, :, None]
    rn = tl.arange(0, N)[None, None, :]
    rk_col = tl.arange(0, K)[None, None, :]
    rk_row = tl.arange(0, K)[None, :, None]
    a = tl.load(a_ptr + rb * (M * K) + rm * K + rk_col)
    if TRANS_B:  # B stored N x K per batch element
        b = tl.trans(tl.load(b_ptr + rb * (K * N) + tl.arange(0, N)[None, :, None] * K
                             + rk_col), (0, 2, 1))  # fmt: skip
    else:
        b = tl.load(b_ptr + rb * (K * N) + rk_row * N + rn)
    c = tl.load(c_ptr + rb * (M * N) + rm * N + rn)
    d = tl.dot(a, b, c, input_precision=PRECISION, out_dtype=OUT_DTYPE)
    tl.store(out_ptr + rb * (M * N) + rm * N + rn, d)


@pytest.mark.parametrize(
    "dtype_case, shape, num_warps, trans_b",
    [("fp16", (2, 16, 32, 16), 4, False), ("fp16", (4, 64, 32, 32), 4, True),
     ("bf16", (8, 32, 16, 32), 2, False), ("fp16-acc-fp16", (4, 32, 32, 64), 8, False),
     ("tf32x3", (2, 32, 32, 16), 2, False), ("fp8e4nv", (2, 16, 16, 32), 1, False),
     ("fp16", (1, 64, 64, 32), 4, True)],
    ids=str,
)  # fmt: skip
def test_batched_dot_on_the_tensor_cores(launch, rng, dtype_case, shape, num_warps, trans_b):
    dtype, precision, out_dtype, out_np, unit = DTYPES[dtype_case]
    B, M, N, K = shape
    a = random_array(rng, (B, M, K), NP_DTYPES[dtype])
    b = random_array(rng, (B, K, N), NP_DTYPES[dtype])
    c = random_array(rng, (B, M, N), out_np)
    out = poison((B, M, N), out_np)
    b_arg = np.ascontiguousarray(b.transpose(0, 2, 1)) if trans_b else b
    launch(batched_mma_kernel, (1,), a, b_arg, c, out, B=B, M=M, N=N, K=K, TRANS_B=trans_b,
           PRECISION=precision, OUT_DTYPE=out_dtype, num_warps=num_warps)  # fmt: skip
    assert_close(out, f64(a) @ f64(b) + f64(c), atol=error_bound(a, b, c, unit(K)))


def test_batched_int8_dot_is_exact(launch, rng):
    B, M, N, K = 4, 32, 32, 64
    a = random_array(rng, (B, M, K), np.int8, -128, 128)
    b = random_array(rng, (B, K, N), np.int8, -128, 128)
    c = random_array(rng, (B, M, N), np.int32)
    out = poison((B, M, N), np.int32)
    launch(batched_mma_kernel, (1,), a, b, c, out, B=B, M=M, N=N, K=K, TRANS_B=False,
           PRECISION=None, OUT_DTYPE=tl.int32, num_warps=4)  # fmt: skip
    assert_equal(out, a.astype(np.int64) @ b.astype(np.int64) + c)
