"""The native CPU backend: stages, native runs against numpy, the status record (device_assert,
bounds checks under debug=True), the disk cache, threads, KERNELLAB_TARGET."""

import re

import numpy as np
import pytest
from conftest import poison

import kernellab as kl
import kernellab.language as tl
from kernellab.backends.cpu import launcher
from kernellab.backends.cpu.errors import CpuAssertionError, CpuOutOfBoundsError
from kernellab.examples import add_kernel, softmax_kernel, softmax_reference

ADD = dict(signature="*fp32,*fp32,*fp32,i32", constexprs={"BLOCK_SIZE": 1024})


def test_a_cpu_compile_has_the_stages_and_host_assembly_mapped_to_source_lines():
    ck = kl.compile(add_kernel, **ADD, target="cpu", force=True)
    assert ck.asm.available() == ["ttir", "ttgir", "llir", "obj", "asm"]
    assert '"ttg.threads-per-warp" = 1' in ck.asm["ttgir"] and '"ttg.num-warps" = 16' in ck.asm["ttgir"]
    assert "define void @\"add_kernel_grid\"" in ck.asm["llir"]
    assert isinstance(ck.asm["obj"], bytes) and ck.asm["obj"]
    assert re.search(r"^\s*\.loc\s+\d+\s+\d+", ck.asm["asm"], re.M), "no source lines in the assembly"
    names = [p.name for p in ck.passes if p.stage in ("llir", "obj")]
    assert names[-3:] == ["llvm-verify", "llvm-O3", "host-object"]


def test_vector_add_runs_natively_with_a_masked_tail(rng):
    n = 5000  # 5 programs, the last one masked
    x, y = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    out = poison((n,), np.float32)
    add_kernel[(kl.cdiv(n, 1024),)](x, y, out, n, BLOCK_SIZE=1024, target="cpu")
    np.testing.assert_array_equal(out, x + y)


def test_an_elementwise_kernel_runs_its_warps_as_a_loop_each_over_a_contiguous_chunk(rng):
    """Vector add's ops never exchange data between threads: its 1024-element block is split
    over 16 warps of 64 consecutive elements (four AVX-512 registers), run one after another,
    instead of one thread holding all 1024 (which spilled, at a third of numpy's speed)."""
    ck = kl.compile(add_kernel, **ADD, target="cpu", force=True)
    assert "sizePerThread = [64], threadsPerWarp = [1], warpsPerCTA = [16]" in ck.asm["ttgir"]
    n = 3 * 1024 + 77  # the last program's warps: one partly masked, the rest wholly masked off
    x, y = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
    out = poison((n + 64,), np.float32)  # written only below n
    add_kernel[(kl.cdiv(n, 1024),)](x, y, out, n, BLOCK_SIZE=1024, target="cpu")
    np.testing.assert_array_equal(out[:n], x + y)
    assert np.isnan(out[n:]).all()


@kl.jit
def _scaled_add_2d(x_ptr, y_ptr, out_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    cols = tl.program_id(1) * BN + tl.arange(0, BN)
    offsets = rows[:, None] * N + cols[None, :]
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x * 2 + tl.load(y_ptr + offsets, mask=mask), mask=mask)


@pytest.mark.parametrize("BM,BN,layout", [
    (64, 64, "sizePerThread = [1, 64], threadsPerWarp = [1, 1], warpsPerCTA = [64, 1]"),
    (16, 256, "sizePerThread = [1, 64], threadsPerWarp = [1, 1], warpsPerCTA = [16, 4]"),
    (128, 16, "sizePerThread = [1, 16], threadsPerWarp = [1, 1], warpsPerCTA = [32, 1]"),
])  # fmt: skip
def test_a_2d_elementwise_kernel_splits_its_tile_over_warps_by_rows(rng, BM, BN, layout):
    """A 2-D tile whose ops never exchange data is split over warps of about 64 elements (the
    row and column index vectors broadcast inside each warp), not held whole by one thread:
    a 64x64 tile in one warp is 256 AVX-512 registers' worth and spills. Masked edges on both
    axes, every element checked."""
    ck = kl.compile(_scaled_add_2d, signature="*fp32,*fp32,*fp32,i32,i32", constexprs={"BM": BM, "BN": BN},
                    target="cpu", force=True)  # fmt: skip
    assert layout in ck.asm["ttgir"]
    m, n = 3 * BM + 5, 2 * BN + 3
    x, y = rng.standard_normal((m, n), dtype=np.float32), rng.standard_normal((m, n), dtype=np.float32)
    out = poison((m + 1, n), np.float32)  # one more row: written by no program
    _scaled_add_2d[(kl.cdiv(m, BM), kl.cdiv(n, BN))](x, y, out, m, n, BM=BM, BN=BN, target="cpu")
    np.testing.assert_array_equal(out[:m], x * 2 + y)
    assert np.isnan(out[m:]).all()


@kl.jit
def _add_row(x_ptr, row_ptr, out_ptr, BM: tl.constexpr, BN: tl.constexpr):
    offsets = tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :]
    row = tl.load(row_ptr + tl.arange(0, BN))  # loaded once, needed by every row of the tile
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets) + row[None, :])


def test_a_tile_that_broadcasts_a_loaded_row_keeps_one_warp(rng):
    """Split by rows, every warp would need the whole loaded row: an exchange between warps
    that run in turn. The tile stays whole in one thread (index vectors from tl.arange don't
    count: each warp recomputes its part)."""
    ck = kl.compile(_add_row, signature="*fp32,*fp32,*fp32", constexprs={"BM": 64, "BN": 64}, target="cpu",
                    force=True)  # fmt: skip
    assert '"ttg.num-warps" = 1 ' in ck.asm["ttgir"]
    x, row = rng.standard_normal((64, 64), dtype=np.float32), rng.standard_normal(64, dtype=np.float32)
    out = poison((64, 64), np.float32)
    _add_row[(1,)](x, row, out, BM=64, BN=64, target="cpu")
    np.testing.assert_array_equal(out, x + row[None, :])


@kl.jit
def transpose_kernel(x_ptr, out_ptr, B: tl.constexpr):
    offsets = tl.arange(0, B)[:, None] * B + tl.arange(0, B)[None, :]
    tl.store(out_ptr + offsets, tl.trans(tl.load(x_ptr + offsets)))


def test_a_kernel_whose_threads_exchange_data_keeps_one_warp(rng):
    """A transpose moves elements between the rows warps would split: it stays one thread per
    program (reductions and scans at the kernel's top level split among warps, in phases:
    test_cpu_reduce_warps)."""
    ck = kl.compile(transpose_kernel, signature="*fp32,*fp32", constexprs={"B": 32}, target="cpu", force=True)
    assert '"ttg.num-warps" = 1 ' in ck.asm["ttgir"]
    x = rng.standard_normal((32, 32)).astype(np.float32)
    out = poison((32, 32), np.float32)
    transpose_kernel[(1,)](x, out, B=32, target="cpu")
    np.testing.assert_array_equal(out, x.T)


def test_softmax_on_one_thread_and_on_every_core_agree_with_float64(rng):
    x = rng.standard_normal((64, 1000)).astype(np.float32)
    outs = []
    for threads in (1, None):
        launcher.set_num_threads(threads)
        try:
            out = poison(x.shape, np.float32)
            softmax_kernel[(64,)](out, x, 1000, 1000, 1000, BLOCK_SIZE=1024, target="cpu")
            outs.append(out)
        finally:
            launcher.set_num_threads(None)
    ref = softmax_reference(x)
    for out in outs:
        np.testing.assert_allclose(out, ref, rtol=2e-6, atol=1e-9)


@kl.jit
def assert_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.device_assert(x >= 0, "x must be non-negative")


def test_a_failed_device_assert_names_the_line_and_the_program(rng):
    x = rng.random(256, dtype=np.float32)
    assert_kernel[(4,)](x, 256, BLOCK=64, target="cpu")  # passes
    x[200] = -1.0
    with pytest.raises(CpuAssertionError, match=r"test_cpu_backend\.py:\d+: device assertion failed: x must be non-negative in program \(3, 0, 0\)"):
        assert_kernel[(4,)](x, 256, BLOCK=64, target="cpu")
    with pytest.raises(AssertionError):  # what `except AssertionError` code expects
        assert_kernel[(4,)](x, 256, BLOCK=64, target="cpu")


@kl.jit
def shifted_copy(x_ptr, out_ptr, shift, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs + shift))


def test_debug_bounds_checks_name_the_line_of_an_access_outside_every_buffer(rng):
    x = rng.random(64, dtype=np.float32)
    out = poison((64,), np.float32)
    shifted_copy[(1,)](x, out, 0, BLOCK=64, target="cpu", debug=True)
    np.testing.assert_array_equal(out, x)
    line = shifted_copy.fn.__code__.co_firstlineno + 3
    with pytest.raises(CpuOutOfBoundsError, match=rf"test_cpu_backend\.py:{line}: out-of-bounds load at address 0x[0-9a-f]+, outside every argument's buffer, in program \(0, 0, 0\)"):
        shifted_copy[(1,)](x, out, 1 << 20, BLOCK=64, target="cpu", debug=True)


def test_a_disk_cache_hit_loads_the_object_code_and_runs(rng, tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELLAB_CACHE_DIR", str(tmp_path))
    first = kl.compile(add_kernel, **ADD, target="cpu")
    again = kl.compile(add_kernel, **ADD, target="cpu")
    assert again.metadata.cache_hit and again.asm["obj"] == first.asm["obj"]
    x, y = rng.random(2048, dtype=np.float32), rng.random(2048, dtype=np.float32)
    out = poison((2048,), np.float32)
    again[(2,)](x, y, out, 2048)
    np.testing.assert_array_equal(out, x + y)


def test_kernellab_target_cpu_runs_numpy_launches_natively(rng, monkeypatch):
    @kl.jit
    def double(x_ptr, out_ptr, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(out_ptr + offs, tl.load(x_ptr + offs) * 2)

    monkeypatch.setenv("KERNELLAB_TARGET", "cpu")
    x = rng.random(128, dtype=np.float32)
    out = poison((128,), np.float32)
    ck = double[(1,)](x, out, BLOCK=128)
    assert ck.metadata.target == "cpu"
    np.testing.assert_array_equal(out, 2 * x)


def test_cpu_launch_options_are_checked():
    with pytest.raises(ValueError, match="positive int"):
        launcher.set_num_threads(0)
    with pytest.raises(TypeError, match="takes 4 arguments"):
        kl.compile(add_kernel, **ADD, target="cpu")[(1,)](np.zeros(4, np.float32))


@kl.jit
def _larger(a, b):
    return tl.maximum(a, b)


@kl.jit
def _plus(a, b):
    return a + b


@kl.jit
def combined_kernel(x_ptr, max_ptr, sum_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    tl.store(max_ptr, tl.reduce(x, 0, _larger))
    tl.store(sum_ptr, tl.reduce(x.to(tl.float32), 0, _plus))


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.int16])
def test_reductions_with_a_combine_function_of_every_width(rng, dtype):
    """fp16 used to reach the vector rules, which know only f32/f64 intrinsics (a KeyError):
    it goes through the core's rules, which compute as the GPU does."""
    x = (rng.standard_normal(128) * 100).astype(dtype)
    largest, total = poison(1, dtype), poison(1, np.float32)
    combined_kernel[(1,)](x, largest, total, BLOCK=128, target="cpu")
    assert largest[0] == x.max()
    np.testing.assert_allclose(total[0], x.astype(np.float64).sum(), rtol=1e-5, atol=1e-3)


@kl.jit
def _transcendentals(x_ptr, exp2_ptr, exp_ptr, log2_ptr, log_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(exp2_ptr + offsets, tl.exp2(x), mask=mask)
    tl.store(exp_ptr + offsets, tl.exp(x), mask=mask)
    tl.store(log2_ptr + offsets, tl.log2(x), mask=mask)
    tl.store(log_ptr + offsets, tl.log(x), mask=mask)


def transcendentals(x: np.ndarray) -> tuple[np.ndarray, ...]:
    """exp2, exp, log2 and log of fp32 `x` on the CPU backend."""
    outs = [poison(x.shape, np.float32) for _ in range(4)]
    _transcendentals[(kl.cdiv(x.size, 1024),)](x, *outs, x.size, BLOCK=1024, target="cpu")
    return tuple(outs)


def test_fp32_exp2_written_on_vectors_is_within_one_ulp_with_ieee_special_cases(rng):
    """The CPU computes fp32 exp2 on whole vectors (vector_math.py) instead of a libm call per
    lane; over the whole range, into subnormal results and overflow, it stays within one ulp
    of float64's, and inf, -inf and NaN come out as IEEE says."""
    specials = [np.inf, -np.inf, np.nan, 0.0, -0.0, 127.99, 128.0, -126.0, -149.0, -149.5, -150.0, -151.0, 1e-30]
    x = np.concatenate([rng.uniform(-160, 140, 40_000), rng.uniform(-1, 1, 20_000), specials,
                        np.arange(-152, 130, 0.125)]).astype(np.float32)  # fmt: skip
    exp2, exp, _, _ = transcendentals(x)
    with np.errstate(over="ignore", invalid="ignore"):
        want = np.exp2(x.astype(np.float64))
        ulp = np.spacing(want.astype(np.float32)).astype(np.float64)
        finite = np.isfinite(want.astype(np.float32))
    assert np.all(np.abs(exp2[finite] - want[finite]) <= ulp[finite]), "exp2 beyond one ulp"
    assert np.all(exp2[~finite & ~np.isnan(x)] == np.inf) and np.isnan(exp2[np.isnan(x)]).all()
    assert exp2[x == -np.inf][0] == 0.0 and exp2[x == -151.0][0] == 0.0
    # exp is exp2(x·log2 e) as on the GPU: the product's rounding costs up to |x|·2^-24 relative
    moderate = np.abs(x) < 80
    with np.errstate(over="ignore"):
        want_exp = np.exp(x[moderate].astype(np.float64))
    bound = np.abs(want_exp) * (np.abs(x[moderate]) * 2.0**-23 + 2.0**-22) + 2.0**-149
    assert np.all(np.abs(exp[moderate] - want_exp) <= bound)


def test_fp32_log2_written_on_vectors_stays_within_a_few_ulps_with_ieee_special_cases(rng):
    """fp32 log2 on whole vectors (vector_math.py): within 2.5 ulps of float64's over every
    binade, subnormals included, and near 1, where the result is tiny and only a careful
    (m-1)/(m+1) keeps its relative accuracy; log is log2·ln 2, one more rounding: 3 ulps. (The
    worst seen in 15 M random points: 2.11 and 2.46.) 0 and -0 give -inf, negative numbers,
    -inf and NaN give NaN, inf gives inf."""
    specials = np.array([0.0, -0.0, -1.0, -np.inf, np.nan, np.inf, 1.0, 2.0, 0.5, 2.0**-149, 2.0**-126], np.float32)
    x = np.concatenate([2.0 ** rng.uniform(-149, 128, 40_000), rng.uniform(0.5, 2, 20_000),
                        1 + rng.uniform(-2e-3, 2e-3, 20_000), specials]).astype(np.float32)  # fmt: skip
    _, _, log2, log = transcendentals(x)
    with np.errstate(divide="ignore", invalid="ignore"):
        want2, want = np.log2(x.astype(np.float64)), np.log(x.astype(np.float64))
    regular = np.isfinite(want2) & (want2 != 0)
    for got, ref, ulps in ((log2, want2, 2.5), (log, want, 3.0)):
        spacing = np.spacing(np.abs(ref[regular]).astype(np.float32)).astype(np.float64)
        assert np.all(np.abs(got[regular] - ref[regular]) <= ulps * spacing)
        np.testing.assert_array_equal(got[~regular], ref[~regular].astype(np.float32))  # specials, log(1) = 0
