"""Strided views (issue 14, item 2): a kernel gets a view's base pointer, as in Triton; indexed
with its strides it reads and writes exactly the view's elements, and an access to an element
the view does not contain is reported like an out-of-bounds access (line, program, offset, and
that the array is a strided view), with nothing read or written."""

import numpy as np
import pytest

import kernellab as kl
import kernellab.language as tl
from kernellab.backends.interpreter import OutOfBoundsError


@kl.jit
def double_strided(x_ptr, stride, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(x_ptr + offs * stride, tl.load(x_ptr + offs * stride, mask=mask) * 2, mask=mask)


@kl.jit
def double_contiguous(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2, mask=mask)


def _parent(n):
    return np.random.default_rng().standard_normal(n).astype(np.float32)


def test_a_view_indexed_with_its_stride_touches_exactly_its_elements():
    parent = _parent(100)
    before = parent.astype(np.float64)
    view = parent[::3]
    double_strided[(2,)](view, view.strides[0] // view.itemsize, view.size, BLOCK=32)
    expected = before.copy()
    expected[::3] *= 2
    np.testing.assert_array_equal(parent, expected.astype(np.float32))


def test_a_view_indexed_as_contiguous_is_reported_with_line_program_and_offset():
    parent = _parent(64)
    before = parent.copy()
    with pytest.raises(OutOfBoundsError) as error:
        double_contiguous[(1,)](parent[::2], 32, BLOCK=32)
    message = str(error.value)
    assert "test_strided_views.py:" in message and "program (0, 0, 0)" in message
    assert "element offset 1 " in message and "strided view (shape (32,), strides (2,) elements)" in message
    assert "x.stride(0)" in message
    np.testing.assert_array_equal(parent, before)  # nothing was written


def test_a_matrix_column_is_a_strided_view_too():
    matrix = _parent(8 * 16).reshape(8, 16)
    before = matrix.copy()
    column = matrix[:, 3]
    with pytest.raises(OutOfBoundsError, match=r"program \(0, 0, 0\).*strides \(16,\) elements"):
        double_contiguous[(1,)](column, 8, BLOCK=8)
    double_strided[(1,)](column, 16, 8, BLOCK=8)
    expected = before.copy()
    expected[:, 3] *= 2
    np.testing.assert_array_equal(matrix, expected)


def test_the_program_that_strays_is_named():
    parent = _parent(8)
    before = parent.copy()
    with pytest.raises(OutOfBoundsError, match=r"program \(1, 0, 0\), lane \(0,\): element offset 1 .*strided view"):
        double_contiguous[(2,)](parent[::2], 2, BLOCK=1)  # program 0 reads offset 0, program 1 offset 1
    np.testing.assert_array_equal(parent, before)


def test_torch_views_are_checked_the_same_way():
    torch = pytest.importorskip("torch")
    parent = torch.randn(64)
    before = parent.clone()
    with pytest.raises(OutOfBoundsError, match="strided view"):
        double_contiguous[(1,)](parent[::2], 32, BLOCK=32)
    assert torch.equal(parent, before)
