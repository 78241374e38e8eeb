"""Block pointers (tl.make_block_ptr, tl.advance, boundary_check, padding_option) and tensor
descriptors (tl.make_tensor_descriptor, desc.load/store) against numpy."""

import numpy as np
import pytest
from conftest import assert_close, assert_equal, f64, poison, random_array

import kernellab as kl
import kernellab.language as tl
from kernellab.backends.interpreter import OutOfBoundsError


@kl.jit
def copy_tiles_kernel(
    x_ptr, out_ptr, M, N, stride_xm, stride_xn, BM: tl.constexpr, BN: tl.constexpr,
    CHECK: tl.constexpr, PADDING: tl.constexpr,
):  # fmt: skip
    """Each program walks one row of tiles left to right with tl.advance, writing 2*x + 1
    (padding included) into a contiguous M x N output."""
    src = tl.make_block_ptr(
        x_ptr, (M, N), (stride_xm, stride_xn), (tl.program_id(0) * BM, 0), (BM, BN), (1, 0)
    )
    dst = tl.make_block_ptr(out_ptr, (M, N), (N, 1), (tl.program_id(0) * BM, 0), (BM, BN), (1, 0))
    for _ in range(0, N, BN):
        tile = tl.load(src, boundary_check=CHECK, padding_option=PADDING)
        tl.store(dst, tile * 2 + 1, boundary_check=CHECK)
        src = tl.advance(src, (0, BN))
        dst = tl.advance(dst, (0, BN))


@pytest.mark.parametrize(
    ("m", "n", "check", "padding"),
    [(48, 70, (0, 1), "zero"), (50, 96, (0,), ""), (64, 70, (1,), "nan"), (64, 96, (), "")],
)
def test_block_pointer_copy(launch, rng, m, n, check, padding):
    x = random_array(rng, (m, n), np.float32)
    out = poison((m, n), np.float32)
    launch(
        copy_tiles_kernel, (-(-m // 16),), x, out, m, n, n, 1, BM=16, BN=32, CHECK=check,
        PADDING=padding,
    )  # fmt: skip
    assert_equal(out, x * 2 + 1)


def test_block_pointer_reads_padding(launch, rng):
    """Out-of-bounds elements of a checked dim read the padding: a 40 x 40 tensor seen
    through 64 x 64 tiles, written into a 64 x 64 output (NaN padding, and zero)."""
    x = random_array(rng, (40, 40), np.float32)
    for padding, fill in (("nan", np.nan), ("zero", 0.0)):
        out = poison((64, 64), np.float32)
        launch(pad_kernel, (1,), x, out, 40, PADDING=padding)
        expected = np.full((64, 64), fill, np.float32)
        expected[:40, :40] = x
        assert_equal(out, expected)


@kl.jit
def pad_kernel(x_ptr, out_ptr, n, PADDING: tl.constexpr):
    src = tl.make_block_ptr(x_ptr, (n, n), (n, 1), (0, 0), (64, 64), (1, 0))
    dst = tl.make_block_ptr(out_ptr, (64, 64), (64, 1), (0, 0), (64, 64), (1, 0))
    tl.store(dst, tl.load(src, boundary_check=(0, 1), padding_option=PADDING))


def test_block_pointer_transposed_view(launch, rng):
    """A column-major view: the block pointer's strides (1, M) read x.T without a copy."""
    x = random_array(rng, (70, 48), np.float32)  # read as its 48 x 70 transpose
    out = poison((48, 70), np.float32)
    launch(copy_tiles_kernel, (3,), x, out, 48, 70, 1, 48, BM=16, BN=32, CHECK=(0, 1), PADDING="")
    assert_equal(out, x.T * 2 + 1)


@kl.jit
def block_pointer_matmul_kernel(
    a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm,
    stride_cn, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
):  # fmt: skip
    """The matmul of Triton's block-pointer tutorials: tiles of A and B advance along K."""
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)
    a_tiles = tl.make_block_ptr(
        a_ptr, (M, K), (stride_am, stride_ak), (pid_m * BM, 0), (BM, BK), order=(1, 0)
    )
    b_tiles = tl.make_block_ptr(
        b_ptr, (K, N), (stride_bk, stride_bn), (0, pid_n * BN), (BK, BN), order=(1, 0)
    )
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for _ in range(0, tl.cdiv(K, BK)):
        a = tl.load(a_tiles, boundary_check=(0, 1), padding_option="zero")
        b = tl.load(b_tiles, boundary_check=(0, 1), padding_option="zero")
        acc += tl.dot(a, b)
        a_tiles = tl.advance(a_tiles, (0, BK))
        b_tiles = tl.advance(b_tiles, (BK, 0))
    c_tiles = tl.make_block_ptr(
        c_ptr, (M, N), (stride_cm, stride_cn), (pid_m * BM, pid_n * BN), (BM, BN), order=(1, 0)
    )
    tl.store(c_tiles, acc, boundary_check=(0, 1))


def test_block_pointer_matmul(launch, rng):
    m, n, k = 80, 72, 100
    a = random_array(rng, (m, k), np.float16)
    b = random_array(rng, (k, n), np.float16)
    c = poison((m, n), np.float32)
    launch(
        block_pointer_matmul_kernel, (3, 3), a, b, c, m, n, k, k, 1, n, 1, n, 1, BM=32, BN=32,
        BK=16,
    )  # fmt: skip
    products = np.abs(f64(a))[:, :, None] * np.abs(f64(b))[None, :, :]
    bound = 2 * k * 2.0**-24 * products.sum(axis=1)  # fp32 accumulation of exact products
    assert_close(c, f64(a) @ f64(b), atol=bound)


@kl.jit
def descriptor_kernel(x_ptr, out_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    src = tl.make_tensor_descriptor(x_ptr, [M, N], [N, 1], [BM, BN])
    dst = tl.make_tensor_descriptor(out_ptr, [M, N], [N, 1], [BM, BN])
    i = tl.program_id(0) * BM
    j = tl.program_id(1) * BN
    tile = src.load([i, j])
    dst.store([i, j], tile * 2 + 1)  # exact or rounded once, fused into an FMA or not


@pytest.mark.parametrize("dtype", [np.float32, np.int16])
def test_tensor_descriptor_load_store(launch, rng, dtype):
    """Tiles overhang the bottom and right edges: reads there are zero, writes are dropped."""
    m, n = 50, 70
    x = random_array(rng, (m, n), dtype)
    out = poison((m, n), dtype)
    launch(descriptor_kernel, (4, 3), x, out, m, n, BM=16, BN=32)
    assert_equal(out, (x * 2 + 1).astype(dtype))


@kl.jit
def descriptor_sum_kernel(x_ptr, out_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    """Sums a whole overhanging tile: only zeros may come from outside the tensor."""
    desc = tl.make_tensor_descriptor(x_ptr, [M, N], [N, 1], [BM, BN])
    tl.store(out_ptr + tl.program_id(0), tl.sum(tl.sum(desc.load([tl.program_id(0) * BM, 0]), 1)))


def test_tensor_descriptor_reads_zero_outside(launch, rng):
    x = random_array(rng, (20, 24), np.float32)
    out = poison((2,), np.float32)
    launch(descriptor_sum_kernel, (2,), x, out, 20, 24, BM=16, BN=32)
    expected = [f64(x[:16]).sum(), f64(x[16:]).sum()]
    assert_close(out, expected, atol=1e-4 * np.abs(f64(x)).sum())


def test_a_descriptor_larger_than_its_tensor_is_caught_at_its_line():
    """The interpreter checks a descriptor's reads like any pointer's: a shape that claims more
    rows than the array has is an out-of-bounds load, reported at the descriptor's load."""
    x = np.ones((20, 24), np.float32)
    out = poison((2,), np.float32)
    with pytest.raises(OutOfBoundsError, match=r"test_tiles.py:\d+: out-of-bounds load") as e:
        descriptor_sum_kernel[(2,)](x, out, 32, 24, BM=16, BN=32)
    line = next(i for i, text in enumerate(open(__file__), 1) if "desc.load([tl.program_id(0) * BM, 0])" in text)
    assert f"test_tiles.py:{line}:" in str(e.value)


@kl.jit
def misuse_kernel(x_ptr, CASE: tl.constexpr):
    bp = tl.make_block_ptr(x_ptr, (16,), (1,), (0,), (16,), (0,))
    if CASE == "advance":
        tl.advance(x_ptr, (1,))
    elif CASE == "mask":
        tl.load(bp, mask=tl.arange(0, 16) < 3)
    elif CASE == "check":
        tl.load(bp, boundary_check=(1,))
    else:
        tl.load(x_ptr + tl.arange(0, 16), boundary_check=(0,))


@pytest.mark.parametrize(
    ("case", "message"),
    [
        ("advance", "tl.advance moves a block pointer"),
        ("mask", "takes boundary_check and padding_option, not mask"),
        ("check", "names dim 1, but the block has 1 dims"),
        ("plain", "boundary_check and padding_option belong to block pointers"),
    ],
)
def test_tile_misuse_is_explained(case, message):
    x = np.zeros(16, np.float32)
    with pytest.raises(kl.CompilationError, match=message):
        misuse_kernel[(1,)](x, CASE=case)
