"""Grids a GPU launch refuses (x ≥ 2**31, y or z ≥ 65536) are refused on every backend, before
any program runs, with a message that names the limit (issue 14, item 8)."""

import numpy as np
import pytest

import kernellab as kl
import kernellab.language as tl
from kernellab.backends.arguments import ArgumentError, normalize_grid


@kl.jit
def count_programs(out_ptr):
    tl.atomic_add(out_ptr, 1)


@pytest.mark.parametrize(
    "grid, limit",
    [((2**31,), "2**31 - 1"), ((2**31, 0), "2**31 - 1"), ((0, 65536), "65535"), ((0, 1, 65536), "65535"),
     ((2**40, 1, 0), "2**31 - 1")],
)
def test_the_interpreter_refuses_grids_a_gpu_refuses(grid, limit):
    out = np.zeros(1, np.int32)
    with pytest.raises(ArgumentError, match=limit.replace("*", r"\*")) as error:
        count_programs[grid](out)
    assert "grid" in str(error.value)
    assert out[0] == 0  # refused before any program ran


def test_the_largest_allowed_grid_passes_the_check():
    assert normalize_grid((2**31 - 1, 65535, 65535)) == (2**31 - 1, 65535, 65535)
    assert normalize_grid((2**31 - 1,)) == (2**31 - 1, 1, 1)


def test_a_compiled_kernel_checks_its_grid_too():
    ck = kl.compile(count_programs, signature="*i32")
    with pytest.raises(ArgumentError, match="65535"):
        ck[(0, 65536)](np.zeros(1, np.int32))
