"""fp8 on the CPU (and AMD, which compiles the same core conversions, backends/llvm/fp8.py;
rounding toward zero on the interpreter too):
every code of the four formats widened, narrowing from fp32 and fp64 rounded to nearest even
or toward zero and saturated, fnuz's lone NaN and missing -0, fp8 → fp8, checked bit for bit
against ml_dtypes (NaN against NaN)."""

import ml_dtypes
import numpy as np
import pytest
from conftest import poison, toward_zero_reference

import kernellab as kl
import kernellab.language as tl

FORMATS = [("float8e4nv", ml_dtypes.float8_e4m3fn), ("float8e5", ml_dtypes.float8_e5m2),
           ("float8e4b8", ml_dtypes.float8_e4m3fnuz), ("float8e5b16", ml_dtypes.float8_e5m2fnuz)]  # fmt: skip


@kl.jit
def _cast(x_ptr, out_ptr, n, DST: tl.constexpr, RTZ: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = x.to(DST, fp_downcast_rounding="rtz") if RTZ else x.to(DST)
    tl.store(out_ptr + offs, y, mask=mask)


def cast(x: np.ndarray, dst: str, out_dtype, rtz: bool = False, target: str = "cpu") -> np.ndarray:
    out = poison(x.shape, out_dtype)
    _cast[(kl.cdiv(x.size, 256),)](x, out, x.size, DST=getattr(tl, dst), RTZ=rtz, BLOCK=256, target=target)
    return out


def same(got: np.ndarray, want: np.ndarray) -> None:
    """Equal values, NaN where NaN (an fp8 NaN has several codes)."""
    np.testing.assert_array_equal(got.astype(np.float64), want.astype(np.float64))


def saturating(x: np.ndarray, dtype) -> np.ndarray:
    """Round to nearest even, finite values beyond the format's largest clipped to it."""
    limit = float(ml_dtypes.finfo(dtype).max)
    return np.clip(x, -limit, limit).astype(dtype)


def narrowing_cases(dtype, rng, n=6000):
    """Random magnitudes over the format's range and beyond, its exact ties, and specials."""
    finite = np.arange(256, dtype=np.uint8).view(dtype).astype(np.float64)
    table = np.unique(finite[np.isfinite(finite)])
    ties = (table[1:] + table[:-1]) / 2  # exactly representable in fp32
    wide = 2.0 ** rng.uniform(-26, np.log2(float(ml_dtypes.finfo(dtype).max)) + 2, n) * rng.choice([-1, 1], n)
    specials = [np.inf, -np.inf, np.nan, 0.0, -0.0, -1e-30, 1e-30, 3.4e38, -3.4e38]
    return np.concatenate([wide, ties, specials]).astype(np.float32)


@pytest.mark.parametrize("name,dtype", FORMATS)
def test_every_fp8_code_widens_exactly(name, dtype):
    codes = np.arange(256, dtype=np.uint8).view(dtype)
    same(cast(codes, "float32", np.float32), codes.astype(np.float32))
    same(cast(codes, "float64", np.float64), codes.astype(np.float64))


@pytest.mark.parametrize("name,dtype", FORMATS)
def test_fp32_narrows_to_nearest_even_and_saturates(rng, name, dtype):
    x = narrowing_cases(dtype, rng)
    got = cast(x, name, dtype)
    same(got, saturating(x, dtype))
    if "fnuz" in dtype.__name__:  # 0x80 is NaN: only NaN inputs may give it, and zero is +0
        assert np.array_equal(got.view(np.uint8) == 0x80, np.isnan(x))


@pytest.mark.parametrize("target", ["cpu", "interpreter"])
@pytest.mark.parametrize("name,dtype", FORMATS)
def test_fp32_narrows_toward_zero(rng, name, dtype, target):
    x = narrowing_cases(dtype, rng)
    finite = ~np.isnan(x)
    got = cast(x, name, dtype, rtz=True, target=target)
    same(got[finite], toward_zero_reference(x[finite], dtype))
    assert np.isnan(got[~finite].astype(np.float32)).all()


@pytest.mark.parametrize("name,dtype", FORMATS)
def test_fp64_narrows_with_one_rounding(rng, name, dtype):
    """Just above or below a tie between two fp8 values, an fp64 must not round to fp32 first
    (that would land on the tie and round to even): the core rounds to odd on the way."""
    finite = np.arange(256, dtype=np.uint8).view(dtype).astype(np.float64)
    table = np.unique(finite[np.isfinite(finite) & (finite > 0)])
    ties = (table[1:] + table[:-1]) / 2
    x = np.concatenate([ties * (1 + 2.0**-40), ties * (1 - 2.0**-40), -ties * (1 + 2.0**-40)])
    x = rng.permutation(x)
    want = np.array([_nearest(v, table) for v in x]).astype(dtype)
    same(cast(x, name, dtype), want)


def _nearest(v: float, table: np.ndarray) -> float:
    """The fp8 value nearest to v (no ties among these inputs), by search."""
    i = np.searchsorted(table, abs(v))
    below, above = table[max(i - 1, 0)], table[min(i, table.size - 1)]
    mag = below if abs(v) - below < above - abs(v) else above
    return float(np.copysign(mag, v))


@pytest.mark.parametrize("src", [name for name, _ in FORMATS])
@pytest.mark.parametrize("name,dtype", FORMATS)
def test_fp8_converts_to_another_fp8_through_an_exact_fp32(src, name, dtype):
    src_dtype = dict(FORMATS)[src]
    codes = np.arange(256, dtype=np.uint8).view(src_dtype)
    want = codes if src_dtype is dtype else saturating(codes.astype(np.float32), dtype)  # .to(own type): no-op
    same(cast(codes, name, dtype), want)


@pytest.mark.parametrize("name,dtype", FORMATS)
def test_the_amd_target_assembles_fp8_conversions(name, dtype):
    ck = kl.compile(_cast, signature=f"*fp32,*{name.replace('float', 'fp')},i32",
                    constexprs={"DST": getattr(tl, name), "RTZ": False, "BLOCK": 256}, target="gfx942")
    assert "s_endpgm" in ck.asm["amdgcn"]
