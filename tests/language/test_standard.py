"""Standard-library index helpers: swizzle2d against Triton's documented definition."""

import numpy as np
import pytest
from conftest import assert_equal, poison

import kernellab as kl
import kernellab.language as tl


def triton_swizzle2d(i, j, size_i, size_j, size_g):
    """Triton's definition, written out: tiles go column-major inside groups of size_g rows,
    and the last group has only the rows that are left (size_g = min(size_i - off_i, size_g))."""
    ij = i * size_j + j
    size_gj = size_g * size_j
    off_i = (ij // size_gj) * size_g
    size_g = np.minimum(size_i - off_i, size_g)
    ij = ij % size_gj
    return off_i + ij % size_g, ij // size_g


@kl.jit
def swizzle_tile_kernel(new_i_ptr, new_j_ptr, size_i, size_j, size_g,
                        BI: tl.constexpr, BJ: tl.constexpr):  # fmt: skip
    i = tl.arange(0, BI)[:, None]
    j = tl.arange(0, BJ)[None, :]
    new_i, new_j = tl.swizzle2d(i, j, size_i, size_j, size_g)
    mask = (i < size_i) & (j < size_j)
    tl.store(new_i_ptr + i * size_j + j, new_i, mask=mask)
    tl.store(new_j_ptr + i * size_j + j, new_j, mask=mask)


@kl.jit
def swizzle_program_kernel(new_i_ptr, new_j_ptr, size_g):
    """The way matmul kernels call it: on scalar program ids."""
    i, j = tl.program_id(0), tl.program_id(1)
    size_i, size_j = tl.num_programs(0), tl.num_programs(1)
    new_i, new_j = tl.swizzle2d(i, j, size_i, size_j, size_g)
    tl.store(new_i_ptr + i * size_j + j, new_i)
    tl.store(new_j_ptr + i * size_j + j, new_j)


GRIDS = [(5, 7, 3), (4, 4, 2), (8, 3, 3), (7, 5, 1), (6, 9, 4), (3, 8, 8), (1, 6, 2), (9, 2, 5)]


@pytest.mark.parametrize("size_i,size_j,size_g", GRIDS)
def test_swizzle2d_on_tiles_matches_triton(launch, size_i, size_j, size_g):
    new_i, new_j = poison((size_i, size_j), np.int32), poison((size_i, size_j), np.int32)
    launch(swizzle_tile_kernel, (1,), new_i, new_j, size_i, size_j, size_g, BI=16, BJ=16)
    i, j = np.meshgrid(np.arange(size_i), np.arange(size_j), indexing="ij")
    want_i, want_j = triton_swizzle2d(i, j, size_i, size_j, size_g)
    assert_equal(new_i, want_i)
    assert_equal(new_j, want_j)


@pytest.mark.parametrize("size_i,size_j,size_g", [(5, 7, 3), (6, 9, 4)])
def test_swizzle2d_on_program_ids_matches_triton(launch, size_i, size_j, size_g):
    new_i, new_j = poison((size_i, size_j), np.int32), poison((size_i, size_j), np.int32)
    launch(swizzle_program_kernel, (size_i, size_j), new_i, new_j, size_g)
    i, j = np.meshgrid(np.arange(size_i), np.arange(size_j), indexing="ij")
    want_i, want_j = triton_swizzle2d(i, j, size_i, size_j, size_g)
    assert_equal(new_i, want_i)
    assert_equal(new_j, want_j)


def test_swizzle2d_is_a_permutation_of_the_grid():
    """Every tile is visited once (the reference itself, on the grid the bug was found on)."""
    i, j = np.meshgrid(np.arange(5), np.arange(7), indexing="ij")
    new_i, new_j = triton_swizzle2d(i, j, 5, 7, 3)
    assert sorted(zip(new_i.ravel(), new_j.ravel())) == sorted(zip(i.ravel(), j.ravel()))
