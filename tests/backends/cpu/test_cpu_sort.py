"""tl.sort on the CPU: the bitonic network's columns become one cpu.bitonic_columns op, lowered
as loops over vector registers (near columns shuffle inside a register, far ones pair two
registers), checked against numpy for every register width the lowering may pick."""

import numpy as np
import pytest
from conftest import poison

import kernellab as kl
import kernellab.language as tl
from kernellab.backends.cpu.lowering import bitonic


@kl.jit
def sort_rows(x_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr, DESCENDING: tl.constexpr):
    offs = tl.program_id(0) * M * N + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    tl.store(out_ptr + offs, tl.sort(tl.load(x_ptr + offs), descending=DESCENDING))


def _sorted(x, descending):
    out = np.sort(x, axis=-1)
    return np.flip(out, -1) if descending else out


def _compile(sig, M, N, descending):
    return kl.compile(sort_rows, signature=sig, constexprs={"M": M, "N": N, "DESCENDING": descending},
                      target="cpu", force=True)  # fmt: skip


def test_a_2048_element_sort_is_one_op_whose_columns_are_loops(rng, tmp_path, monkeypatch):
    """All 11·12/2 = 66 columns in one op (none of the network's size-2 reductions left), each
    an LLVM loop; 4 programs of fresh data, every element checked."""
    monkeypatch.setenv("KERNELLAB_CACHE_DIR", str(tmp_path))
    ck = _compile("*fp32,*fp32", 1, 2048, True)
    ttgir = ck.asm["ttgir"]
    assert ttgir.count("cpu.bitonic_columns") == 1 and "tt.reduce" not in ttgir
    assert ttgir.count("i64]") == 66  # one [j, flip] pair per column
    assert "bitonic.j" in ck.asm["llir"]
    x = rng.standard_normal((4, 1, 2048), dtype=np.float32)
    out = poison(x.shape, x.dtype)
    ck[(4,)](x, out)
    np.testing.assert_array_equal(out, _sorted(x, True))


@pytest.mark.parametrize("registers", [(16, 16), (16, 32), (32, 64)], ids=["sse", "avx2", "avx512"])
@pytest.mark.parametrize(
    ("sig", "dtype", "descending"),
    [("*fp64,*fp64", np.float64, False), ("*i8,*i8", np.int8, True), ("*u16,*u16", np.uint16, False)],
    ids=["f64", "i8-desc", "u16"],
)  # fmt: skip
def test_the_loops_sort_for_every_register_width(
    rng, tmp_path, monkeypatch, registers, sig, dtype, descending
):
    """The split between in-register and two-register columns moves with the register width
    (2 f64 lanes on SSE, 64 i8 on AVX-512): each choice sorts 8 rows of 256 exactly, ties and
    signed ints included."""
    monkeypatch.setenv("KERNELLAB_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(bitonic, "vector_registers", lambda: registers)
    if np.issubdtype(dtype, np.floating):
        x = rng.standard_normal((2, 8, 256)).astype(dtype)
    else:
        info = np.iinfo(dtype)
        x = rng.integers(info.min, info.max, (2, 8, 256), endpoint=True).astype(dtype)
    x.flat[::9] = x.flat[4]  # ties
    out = poison(x.shape, x.dtype)
    _compile(sig, 8, 256, descending)[(2,)](x, out)
    np.testing.assert_array_equal(out, _sorted(x, descending))


@kl.jit
def flip_rows(x_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr):
    offs = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    tl.store(out_ptr + offs, tl.flip(tl.load(x_ptr + offs)))


def test_pair_swaps_without_a_comparison_keep_the_op_by_op_lowering(rng, tmp_path, monkeypatch):
    """tl.flip pairs elements as the sort's columns do but never compares them: the pass must
    not take it for a column (it would sort instead of reversing)."""
    monkeypatch.setenv("KERNELLAB_CACHE_DIR", str(tmp_path))
    ck = kl.compile(
        flip_rows, signature="*i32,*i32", constexprs={"M": 4, "N": 32}, target="cpu", force=True
    )
    assert "cpu.bitonic_columns" not in ck.asm["ttgir"]
    x = rng.integers(-1000, 1000, (4, 32)).astype(np.int32)
    out = poison(x.shape, x.dtype)
    ck[(1,)](x, out)
    np.testing.assert_array_equal(out, np.flip(x, 1))


@kl.jit
def sort_columns(x_ptr, out_ptr, m, M: tl.constexpr, N: tl.constexpr, OTHER: tl.constexpr):
    rows = tl.arange(0, M)[:, None]
    offs = rows * N + tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + offs, mask=rows < m, other=OTHER)
    tl.store(out_ptr + offs, tl.sort(x, dim=0), mask=rows < m)


@pytest.mark.parametrize(("sig", "dtype", "other"), [("*fp32,*fp32", np.float32, float("inf")),
                                                     ("*i16,*i16", np.int16, 32767)], ids=["f32", "i16"])  # fmt: skip
def test_a_sort_along_dim_0_of_short_rows_loads_and_stores_its_runs_in_loops(rng, tmp_path, monkeypatch, sig,
                                                                            dtype, other):  # fmt: skip
    """1024 rows of two are 1024 runs of consecutive addresses: each access is an LLVM loop over
    them (as straight-line code, LLVM's code generator took seconds on them). The masked rows
    load the largest value, so they sort last, and are not stored."""
    monkeypatch.setenv("KERNELLAB_CACHE_DIR", str(tmp_path))
    ck = kl.compile(sort_columns, signature=f"{sig},i32", constexprs={"M": 1024, "N": 2, "OTHER": other},
                    target="cpu")  # fmt: skip
    assert "load.runs" in ck.asm["llir"] and "store.runs" in ck.asm["llir"]
    m = 1000
    if dtype == np.float32:
        x = rng.standard_normal((1024, 2)).astype(dtype)
    else:
        x = rng.integers(-30000, 30000, (1024, 2)).astype(dtype)
    x[m:] = np.iinfo(dtype).min if dtype != np.float32 else -np.inf  # would sort first if loaded
    out = poison((1024, 2), dtype)
    ck[(1,)](x, out, m)
    np.testing.assert_array_equal(out[:m], np.sort(x[:m], axis=0))
    np.testing.assert_array_equal(out[m:], poison((1024 - m, 2), dtype))
