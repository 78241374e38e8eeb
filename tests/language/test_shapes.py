"""Creation (program_id, num_programs, arange, zeros, zeros_like, full) and shape builtins
(reshape, view, trans, permute, expand_dims, broadcast_to, broadcast, indexing with None,
join, split, ravel, cat)."""

import numpy as np
import pytest
from conftest import assert_equal, poison, random_array

import kernellab as kl
import kernellab.language as tl

M, N = 8, 16  # tile sizes (powers of two, as Triton requires)

# -- creation ----------------------------------------------------------------------------


@kl.jit
def program_id_kernel(out_ptr):
    pid0 = tl.program_id(0)
    pid1 = tl.program_id(axis=1)
    pid2 = tl.program_id(2)
    n0 = tl.num_programs(0)
    n1 = tl.num_programs(axis=1)
    n2 = tl.num_programs(2)
    base = out_ptr + ((pid2 * n1 + pid1) * n0 + pid0) * 6
    tl.store(base + 0, pid0)
    tl.store(base + 1, pid1)
    tl.store(base + 2, pid2)
    tl.store(base + 3, n0)
    tl.store(base + 4, n1)
    tl.store(base + 5, n2)


def test_program_id_and_num_programs_on_a_3d_grid(launch):
    grid = (3, 4, 2)
    out = poison((2, 4, 3, 6), np.int32)
    launch(program_id_kernel, grid, out)
    k, j, i = np.meshgrid(range(2), range(4), range(3), indexing="ij")
    expected = np.stack([i, j, k, np.full_like(i, 3), np.full_like(i, 4), np.full_like(i, 2)], -1)
    assert_equal(out, expected)


@kl.jit
def arange_kernel(out_ptr, START: tl.constexpr, END: tl.constexpr):
    tl.store(out_ptr + tl.arange(0, END - START), tl.arange(START, END))


@pytest.mark.parametrize("start,end", [(0, 1), (0, 64), (16, 48), (5, 13)])
def test_arange(launch, start, end):
    out = poison(end - start, np.int32)
    launch(arange_kernel, (1,), out, START=start, END=end)
    assert_equal(out, np.arange(start, end, dtype=np.int32))


@kl.jit
def fill_kernel(x_ptr, zeros_ptr, zeros_like_ptr, full_ptr, full_rt_ptr, fill,
                DTYPE: tl.constexpr, VALUE: tl.constexpr, BLOCK: tl.constexpr):  # fmt: skip
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    z = tl.zeros((BLOCK,), DTYPE)
    zl = tl.zeros_like(x)
    f = tl.full((BLOCK,), VALUE, DTYPE)
    f_rt = tl.full([BLOCK], fill, DTYPE)
    tl.static_assert(zl.dtype == x.dtype)
    tl.store(zeros_ptr + offs, z + x)  # zeros plus x must be exactly x
    tl.store(zeros_like_ptr + offs, zl + x)
    tl.store(full_ptr + offs, f)
    tl.store(full_rt_ptr + offs, f_rt)


FILL_DTYPES = [
    ("int8", np.int8),
    ("int32", np.int32),
    ("float16", np.float16),
    ("float32", np.float32),
]


@pytest.mark.parametrize("name,np_dtype", FILL_DTYPES)
def test_zeros_zeros_like_full(launch, rng, name, np_dtype):
    B = 64
    x = random_array(rng, B, np_dtype)
    outs = [poison(B, np_dtype) for _ in range(4)]
    value, fill = 3, int(rng.integers(1, 100))
    launch(fill_kernel, (1,), x, *outs, fill, DTYPE=getattr(tl, name), VALUE=value, BLOCK=B)
    assert_equal(outs[0], x)
    assert_equal(outs[1], x)
    assert_equal(outs[2], np.full(B, value, np_dtype))
    assert_equal(outs[3], np.full(B, fill, np_dtype))


@kl.jit
def full_2d_kernel(out_ptr, M: tl.constexpr, N: tl.constexpr):
    offs = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    tl.store(out_ptr + offs, tl.full((M, N), 2.5, tl.float32) + tl.zeros((M, N), tl.float32))


def test_full_2d(launch):
    out = poison((M, N), np.float32)
    launch(full_2d_kernel, (1,), out, M=M, N=N)
    assert_equal(out, np.full((M, N), 2.5, np.float32))


# -- reshaping -----------------------------------------------------------------------------


@kl.jit
def reshape_kernel(x_ptr, out_ptr, out_variadic_ptr, M: tl.constexpr, N: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, M * N))
    offs = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    tl.store(out_ptr + offs, tl.reshape(x, (M, N)))
    tl.store(out_variadic_ptr + offs, x.reshape(M, N))


def test_reshape_is_row_major(launch, rng):
    x = random_array(rng, M * N, np.float32)
    out, out2 = poison((M, N), np.float32), poison((M, N), np.float32)
    launch(reshape_kernel, (1,), x, out, out2, M=M, N=N)
    assert_equal(out, x.reshape(M, N))
    assert_equal(out2, x.reshape(M, N))


@kl.jit
def ravel_kernel(x_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :])
    tl.store(out_ptr + tl.arange(0, M * N), tl.ravel(x))


def test_ravel_is_row_major(launch, rng):
    x = random_array(rng, (M, N), np.int32)
    out = poison(M * N, np.int32)
    launch(ravel_kernel, (1,), x, out, M=M, N=N)
    assert_equal(out, x.ravel())


@kl.jit
def view_kernel(x_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, M * N))
    offs = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    tl.store(out_ptr + offs, tl.view(x, (M, N)))


def test_view_keeps_the_elements(launch, rng):
    """tl.view may reorder elements (Triton documents no order): only the multiset is fixed."""
    x = random_array(rng, M * N, np.float32)
    out = poison((M, N), np.float32)
    launch(view_kernel, (1,), x, out, M=M, N=N)
    assert_equal(np.sort(out.ravel()), np.sort(x))


@kl.jit
def trans_kernel(x_ptr, out_ptr, out_method_ptr, M: tl.constexpr, N: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :])
    offs_t = tl.arange(0, N)[:, None] * M + tl.arange(0, M)[None, :]
    tl.store(out_ptr + offs_t, tl.trans(x))
    tl.store(out_method_ptr + offs_t, x.trans())


def test_trans(launch, rng):
    x = random_array(rng, (M, N), np.float32)
    out, out2 = poison((N, M), np.float32), poison((N, M), np.float32)
    launch(trans_kernel, (1,), x, out, out2, M=M, N=N)
    assert_equal(out, x.T)
    assert_equal(out2, x.T)


@kl.jit
def permute_kernel(x_ptr, out_ptr, A: tl.constexpr, B: tl.constexpr, C: tl.constexpr):
    a = tl.arange(0, A)[:, None, None]
    b = tl.arange(0, B)[None, :, None]
    c = tl.arange(0, C)[None, None, :]
    x = tl.load(x_ptr + a * (B * C) + b * C + c)
    y = tl.permute(x, (2, 0, 1))  # shape (C, A, B)
    oc = tl.arange(0, C)[:, None, None]
    oa = tl.arange(0, A)[None, :, None]
    ob = tl.arange(0, B)[None, None, :]
    tl.store(out_ptr + oc * (A * B) + oa * B + ob, y)


def test_permute_3d(launch, rng):
    A, B, C = 2, 4, 8
    x = random_array(rng, (A, B, C), np.int32)
    out = poison((C, A, B), np.int32)
    launch(permute_kernel, (1,), x, out, A=A, B=B, C=C)
    assert_equal(out, np.transpose(x, (2, 0, 1)))


# -- adding and broadcasting dimensions ----------------------------------------------------


@kl.jit
def expand_broadcast_kernel(
    x_ptr, rows_ptr, cols_ptr, three_d_ptr, M: tl.constexpr, N: tl.constexpr
):
    x = tl.load(x_ptr + tl.arange(0, N))
    offs = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    tl.store(rows_ptr + offs, tl.broadcast_to(tl.expand_dims(x, 0), (M, N)))
    offs_t = tl.arange(0, N)[:, None] * M + tl.arange(0, M)[None, :]
    tl.store(cols_ptr + offs_t, tl.broadcast_to(tl.expand_dims(x, 1), (N, M)))
    y = tl.broadcast_to(tl.expand_dims(x, (0, 2)), (2, N, 2))  # (1, N, 1) -> (2, N, 2)
    i = tl.arange(0, 2)[:, None, None]
    j = tl.arange(0, N)[None, :, None]
    k = tl.arange(0, 2)[None, None, :]
    tl.store(three_d_ptr + i * (N * 2) + j * 2 + k, y)


def test_expand_dims_and_broadcast_to(launch, rng):
    x = random_array(rng, N, np.float32)
    rows, cols, three_d = (
        poison((M, N), np.float32),
        poison((N, M), np.float32),
        poison((2, N, 2), np.float32),
    )
    launch(expand_broadcast_kernel, (1,), x, rows, cols, three_d, M=M, N=N)
    assert_equal(rows, np.broadcast_to(x[None, :], (M, N)))
    assert_equal(cols, np.broadcast_to(x[:, None], (N, M)))
    assert_equal(three_d, np.broadcast_to(x[None, :, None], (2, N, 2)))


@kl.jit
def none_indexing_kernel(x_ptr, y_ptr, sum_ptr, a_ptr, b_ptr, M: tl.constexpr, N: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, M))
    y = tl.load(y_ptr + tl.arange(0, N))
    offs = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    tl.store(sum_ptr + offs, x[:, None] * 10 + y[None, :])
    a, b = tl.broadcast(x[:, None], y[None, :])
    tl.store(a_ptr + offs, a)
    tl.store(b_ptr + offs, b)


def test_none_indexing_and_broadcast(launch, rng):
    x, y = random_array(rng, M, np.int32), random_array(rng, N, np.int32)
    outs = [poison((M, N), np.int32) for _ in range(3)]
    launch(none_indexing_kernel, (1,), x, y, *outs, M=M, N=N)
    assert_equal(outs[0], x[:, None] * 10 + y[None, :])
    assert_equal(outs[1], np.broadcast_to(x[:, None], (M, N)))
    assert_equal(outs[2], np.broadcast_to(y[None, :], (M, N)))


# -- join, split, cat ----------------------------------------------------------------------


@kl.jit
def join_split_kernel(a_ptr, b_ptr, joined_ptr, pairs_ptr, first_ptr, second_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    a = tl.load(a_ptr + offs)
    b = tl.load(b_ptr + offs)
    pair_offs = offs[:, None] * 2 + tl.arange(0, 2)[None, :]
    tl.store(joined_ptr + pair_offs, tl.join(a, b))
    first, second = tl.split(tl.load(pairs_ptr + pair_offs))
    tl.store(first_ptr + offs, first)
    tl.store(second_ptr + offs, second)


def test_join_and_split(launch, rng):
    a, b = random_array(rng, N, np.float32), random_array(rng, N, np.float32)
    pairs = random_array(rng, (N, 2), np.float32)
    joined, first, second = poison((N, 2), np.float32), poison(N, np.float32), poison(N, np.float32)
    launch(join_split_kernel, (1,), a, b, joined, pairs, first, second, N=N)
    assert_equal(joined, np.stack([a, b], axis=-1))
    assert_equal(first, pairs[:, 0])
    assert_equal(second, pairs[:, 1])


@kl.jit
def cat_kernel(a_ptr, b_ptr, out_ptr, N: tl.constexpr):
    a = tl.load(a_ptr + tl.arange(0, N))
    b = tl.load(b_ptr + tl.arange(0, N))
    tl.store(out_ptr + tl.arange(0, 2 * N), tl.cat(a, b, can_reorder=True))


def test_cat_keeps_all_elements(launch, rng):
    """Triton's cat may reorder (can_reorder=True is required): check the multiset."""
    a, b = random_array(rng, N, np.float32), random_array(rng, N, np.float32)
    out = poison(2 * N, np.float32)
    launch(cat_kernel, (1,), a, b, out, N=N)
    assert_equal(np.sort(out), np.sort(np.concatenate([a, b])))
