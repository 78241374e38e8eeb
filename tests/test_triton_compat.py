"""Names and behaviours Triton code relies on, checked against Triton's definitions written out
here: dtype classification tuples, `tl.str_to_ty`, `tensor.shape` compared with a list, and
indexing with None and `:`."""

import ml_dtypes
import numpy as np
import pytest
from conftest import assert_equal, poison, random_array

import kernellab as kl
import kernellab.language as tl

# triton/language/core.py, class dtype (Triton's own lists)
TRITON_SINT_TYPES = ["int8", "int16", "int32", "int64"]
TRITON_UINT_TYPES = ["int1", "uint8", "uint16", "uint32", "uint64"]
TRITON_FP_TYPES = [
    "fp8e4b15", "fp8e4nv", "fp8e4b8", "fp8e5", "fp8e5b16", "fp16", "bf16", "fp32", "fp64"
]  # fmt: skip
TRITON_STANDARD_FP_TYPES = ["fp16", "bf16", "fp32", "fp64"]
TRITON_OTHER_TYPES = ["void"]

# -- dtypes -------------------------------------------------------------------------------


def test_dtype_classification_tuples_match_triton():
    assert list(tl.dtype.SINT_TYPES) == TRITON_SINT_TYPES
    assert list(tl.dtype.UINT_TYPES) == TRITON_UINT_TYPES
    assert list(tl.dtype.STANDARD_FP_TYPES) == TRITON_STANDARD_FP_TYPES
    assert list(tl.dtype.OTHER_TYPES) == TRITON_OTHER_TYPES
    # the float formats kernellab carries, each one of Triton's, in Triton's order
    assert list(tl.dtype.FP_TYPES) == [t for t in TRITON_FP_TYPES if t in tl.dtype.FP_TYPES]
    assert {"fp8e4nv", "fp8e5", "fp8e4b8", "fp8e5b16", *TRITON_STANDARD_FP_TYPES} == set(tl.dtype.FP_TYPES)


def test_every_listed_name_is_a_dtype_and_classifies_as_triton_does():
    names = tl.dtype.SINT_TYPES + tl.dtype.UINT_TYPES + tl.dtype.FP_TYPES + tl.dtype.OTHER_TYPES
    for name in names:
        assert tl.dtype.is_dtype(name)
        ty = tl.dtype(name)
        assert ty.is_standard_floating() == (name in TRITON_STANDARD_FP_TYPES)
        assert ty.is_floating() == (name in TRITON_FP_TYPES)
        assert ty.is_int_signed() == (name in TRITON_SINT_TYPES)
        assert ty.is_int_unsigned() == (name in TRITON_UINT_TYPES)
    assert not tl.dtype.is_dtype("fp8") and not tl.dtype.is_dtype("float32")


def test_each_scalar_type_has_its_own_predicate_and_integers_their_bitwidth():
    names = tl.dtype.SINT_TYPES + tl.dtype.UINT_TYPES + tl.dtype.FP_TYPES
    for name in names:
        ty = tl.dtype(name)
        assert [other for other in names if getattr(ty, f"is_{other}")()] == [name]
        if name in TRITON_SINT_TYPES + TRITON_UINT_TYPES:
            assert ty.int_bitwidth == int(name.split("int")[-1])  # Triton's definition
        else:
            assert not hasattr(ty, "int_bitwidth")
    assert not tl.pointer_type(tl.float16).is_fp16()
    assert not tl.block_type(tl.float16, [16]).is_fp16()


# Triton's signature spellings (str_to_ty's table) → the dtype they name
SPELLINGS = {
    "i1": tl.int1, "u1": tl.int1, "B": tl.int1, "i8": tl.int8, "i16": tl.int16, "i32": tl.int32,
    "i64": tl.int64, "u8": tl.uint8, "u16": tl.uint16, "u32": tl.uint32, "u64": tl.uint64,
    "fp8e4nv": tl.float8e4nv, "fp8e5": tl.float8e5, "fp16": tl.float16, "bf16": tl.bfloat16,
    "fp32": tl.float32, "fp64": tl.float64,
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(SPELLINGS))
def test_str_to_ty_reads_triton_spellings(name):
    assert tl.str_to_ty(name, None) == SPELLINGS[name]
    assert tl.str_to_ty(name) == SPELLINGS[name]
    assert tl.str_to_ty("*" + name, None) == tl.pointer_type(SPELLINGS[name])
    assert tl.str_to_ty("*k" + name, None) == tl.pointer_type(SPELLINGS[name])  # const pointer
    assert tl.str_to_ty("**" + name) == tl.pointer_type(tl.pointer_type(SPELLINGS[name]))


def test_str_to_ty_names_the_known_spellings_on_a_typo():
    with pytest.raises(ValueError, match="unknown type 'fp17'.*fp16"):
        tl.str_to_ty("fp17")


@kl.jit
def dtype_by_name(name: tl.constexpr):
    return tl.str_to_ty(name)


@kl.jit
def convert_by_name_kernel(x_ptr, out_ptr, NAME: tl.constexpr, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, x.to(dtype_by_name(NAME)).to(tl.float32))


NUMPY_OF = {"fp16": np.float16, "bf16": ml_dtypes.bfloat16, "i8": np.int8, "i32": np.int32,
            "u8": np.uint8, "fp32": np.float32}  # fmt: skip


@pytest.mark.parametrize("name", sorted(NUMPY_OF))
def test_str_to_ty_in_a_kernel_converts_to_the_named_dtype(launch, rng, name):
    """A @jit helper returning tl.str_to_ty(name), as Triton code writes it."""
    n = 64
    low = 0.0 if name == "u8" else -100.0
    x = random_array(rng, n, np.float32, low, 100.0)
    out = poison(n, np.float32)
    launch(convert_by_name_kernel, (1,), x, out, NAME=name, N=n)
    assert_equal(out, x.astype(NUMPY_OF[name]).astype(np.float32))


# -- tensor.shape -------------------------------------------------------------------------


def test_shape_equals_lists_and_tuples_of_the_same_sizes():
    shape = tl.core.Shape((4, tl.constexpr(8)))
    assert shape == [4, 8] and [4, 8] == shape and shape == (4, 8) and (4, 8) == shape
    assert shape != [4, 16] and shape != [4] and shape != [4, 8, 1] and not shape == [8, 4]
    assert shape == [tl.constexpr(4), 8]
    assert hash(shape) == hash((4, 8))
    assert shape[1] == 8 and len(shape) == 2 and shape + (2,) == (4, 8, 2)


@kl.jit
def shape_check_kernel(x_ptr, out_ptr, BM: tl.constexpr, BN: tl.constexpr):
    offs = tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :]
    x = tl.load(x_ptr + offs)
    tl.static_assert(x.shape == [BM, BN])
    tl.static_assert(x.shape != [BN, BM])
    tl.static_assert(x.dtype.is_int32() and x.dtype.int_bitwidth == 32)
    if x.shape == [BM, BN]:
        tl.store(out_ptr + offs, x * 2)
    else:
        tl.store(out_ptr + offs, x * 3)


def test_shape_compares_equal_to_a_list_in_a_kernel(launch, rng):
    """A shape equals a list in static_assert and in `if`; dtype predicates run at compile
    time too."""
    x = random_array(rng, (8, 16), np.int32)
    out = poison((8, 16), np.int32)
    launch(shape_check_kernel, (1,), x, out, BM=8, BN=16)
    assert_equal(out, x * 2)


# -- indexing with None and `:` -----------------------------------------------------------


@kl.jit
def none_and_colon_kernel(x_ptr, m_ptr, s_ptr, o1, o2, o3, o4, o5, o6, o7,
                          N: tl.constexpr, M: tl.constexpr):  # fmt: skip
    """Every form Triton's tensor.__getitem__ takes: None (new axis), `:` (keep), a constexpr
    None, on a block and on a scalar."""
    n = tl.arange(0, N)
    m = tl.arange(0, M)
    x = tl.load(x_ptr + n)
    mat = tl.load(m_ptr + m[:, None] * N + n[None, :])
    s = tl.load(s_ptr)
    NEW_AXIS: tl.constexpr = None
    tl.store(o1 + n[None], x[None])
    tl.store(o2 + n, x[:])
    tl.store(o3 + n[None, :, None], x[None, :, None])
    tl.store(o4 + (m[:, None] * N + n[None, :])[:, :, None], mat[:, :, None])
    tl.store(o5 + (m[:, None] * N + n[None, :])[None, :, :], mat[None, :, :])
    tl.store(o6 + tl.arange(0, 1)[:, None], s[None, None])
    tl.store(o7 + m[:, NEW_AXIS] * N + n[NEW_AXIS, :], mat + x[NEW_AXIS, :])


def test_indexing_with_none_and_colon(launch, rng):
    N, M = 16, 8
    x = random_array(rng, N, np.int32)
    mat = random_array(rng, (M, N), np.int32)
    s = random_array(rng, 1, np.int32)
    shapes = [(1, N), (N,), (1, N, 1), (M, N, 1), (1, M, N), (1, 1), (M, N)]
    outs = [poison(shape, np.int32) for shape in shapes]
    launch(none_and_colon_kernel, (1,), x, mat, s, *outs, N=N, M=M)
    expected = [x[None], x[:], x[None, :, None], mat[:, :, None], mat[None, :, :], s[None],
                mat + x[None, :]]  # fmt: skip
    for out, want in zip(outs, expected, strict=True):
        assert_equal(out, want)
