"""tl.gather as the tt.gather op: every backend against numpy's take_along_axis.

The `launch` fixture runs each kernel on the interpreter (and assembles it for sm_80, sm_90 and
gfx942), on the CPU backend and, marked gpu, on a GPU, comparing every array with the
interpreter. Inputs are fresh random values, outputs start poisoned, and every element is
compared exactly (a gather moves values, it computes none). The rest checks what only one
place can: the interpreter's error for an index out of range, the frontend's errors, and the
shape of the code (one shared-memory round trip, one load per result element; or, where each
warp holds whole rows of the source, warp shuffles and no shared memory).
"""

import re

import numpy as np
import pytest
from conftest import NP_DTYPES, assert_equal, poison, random_array

import kernellab as kl
import kernellab.language as tl
from kernellab.backends.interpreter import GatherIndexError


@kl.jit
def gather_1d(src_ptr, idx_ptr, out_ptr, N: tl.constexpr, I: tl.constexpr):
    """Each program gathers from its own row of `src` with its own row of indices."""
    pid = tl.program_id(0)
    src = tl.load(src_ptr + pid * N + tl.arange(0, N))
    offs = pid * I + tl.arange(0, I)
    tl.store(out_ptr + offs, tl.gather(src, tl.load(idx_ptr + offs), 0))


@kl.jit
def gather_2d(
    src_ptr, idx_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr, I: tl.constexpr,
    AXIS: tl.constexpr,
):  # fmt: skip
    src = tl.load(src_ptr + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :])
    if AXIS == 0:  # an I x N index into the M rows
        where = tl.arange(0, I)[:, None] * N + tl.arange(0, N)[None, :]
    else:  # an M x I index into the N columns
        where = tl.arange(0, M)[:, None] * I + tl.arange(0, I)[None, :]
    tl.store(out_ptr + where, tl.gather(src, tl.load(idx_ptr + where), AXIS))


@kl.jit
def gather_twice(src_ptr, perm_ptr, idx_ptr, out_ptr, N: tl.constexpr, I: tl.constexpr):
    """out[i] = src[perm[idx[i]]]: two gathers in a row, the second reusing the scratch."""
    src = tl.load(src_ptr + tl.arange(0, N))
    perm = tl.load(perm_ptr + tl.arange(0, N))
    offs = tl.arange(0, I)
    tl.store(out_ptr + offs, tl.gather(src, tl.gather(perm, tl.load(idx_ptr + offs), 0), 0))


def _indices(rng, n, shape, dtype=np.int32):
    return rng.integers(0, n, shape).astype(dtype)


@pytest.mark.parametrize(
    ("dtype", "n", "i", "num_warps"),
    [("float32", 128, 512, 4), ("int8", 256, 64, 1), ("int64", 32, 32, 8),
     ("float16", 1024, 16, 4), ("int32", 8, 256, 2)],
)  # fmt: skip
def test_gather_1d(launch, rng, dtype, n, i, num_warps):
    programs = 3
    src = random_array(rng, (programs, n), NP_DTYPES[dtype])
    index = _indices(rng, n, (programs, i))
    out = poison((programs, i), src.dtype)
    launch(gather_1d, (programs,), src, index, out, N=n, I=i, num_warps=num_warps)
    assert_equal(out, np.take_along_axis(src, index, 1))


@pytest.mark.parametrize(
    ("dtype", "axis", "m", "n", "i", "num_warps"),
    [("float32", 0, 16, 32, 8, 4), ("float32", 1, 16, 32, 64, 4),
     ("float16", 1, 8, 64, 16, 1), ("float16", 0, 64, 4, 32, 4),
     ("int32", 0, 32, 16, 64, 8), ("int32", 1, 1, 64, 128, 2),
     ("int8", 1, 16, 16, 4, 2), ("int8", 0, 4, 64, 128, 4),
     ("int64", 0, 4, 128, 4, 8), ("int64", 1, 32, 8, 32, 1),
     # source and index of one shape: gathered within warps (warp shuffles)
     ("float32", 1, 16, 32, 32, 4), ("float16", 1, 8, 64, 64, 2), ("int64", 1, 4, 32, 32, 1),
     ("int8", 1, 64, 16, 16, 4), ("float32", 0, 32, 16, 32, 1)],
)  # fmt: skip
def test_gather_2d(launch, rng, dtype, axis, m, n, i, num_warps):
    src = random_array(rng, (m, n), NP_DTYPES[dtype])
    shape = (i, n) if axis == 0 else (m, i)
    index = _indices(rng, (m, n)[axis], shape)
    out = poison(shape, src.dtype)
    launch(gather_2d, (1,), src, index, out, M=m, N=n, I=i, AXIS=axis, num_warps=num_warps)
    assert_equal(out, np.take_along_axis(src, index, axis))


@pytest.mark.parametrize("index_dtype", ["int64", "int16", "uint8", "uint32"])
def test_gather_index_dtypes(launch, rng, index_dtype):
    """uint8 indices up to 255 must not read as negative: the frontend widens them first."""
    n, i = 256, 128
    src = random_array(rng, (1, n), np.float32)
    index = _indices(rng, n, (1, i), NP_DTYPES[index_dtype])
    index[0, :2] = (n - 1, 128)
    out = poison((1, i), src.dtype)
    launch(gather_1d, (1,), src, index, out, N=n, I=i)
    assert_equal(out, np.take_along_axis(src, index.astype(np.int64), 1))


@pytest.mark.parametrize("num_warps", [1, 4])
def test_two_gathers_share_the_scratch(launch, rng, num_warps):
    n, i = 512, 256
    src = random_array(rng, n, np.int32)
    perm = rng.permutation(n).astype(np.int32)
    index = _indices(rng, n, i)
    out = poison(i, src.dtype)
    launch(gather_twice, (1,), src, perm, index, out, N=n, I=i, num_warps=num_warps)
    assert_equal(out, src[perm[index]])


def test_interpreter_names_the_index_out_of_range(rng):
    src = random_array(rng, (2, 16), np.float32)
    index = _indices(rng, 16, (2, 8))
    index[1, 5] = 16
    with pytest.raises(GatherIndexError) as error:
        gather_1d[(2,)](src, index, poison((2, 8), np.float32), N=16, I=8)
    message = str(error.value)
    assert re.search(r"test_gather\.py:\d+: tl\.gather index 16 is outside \[0, 16\) on axis 0", message)
    assert "program (1, 0, 0)" in message and "index element (5,)" in message


@pytest.mark.parametrize(("axis", "m", "n", "i"), [(0, 8, 16, 32), (1, 16, 32, 8)])
def test_core_rule_runs_on_the_cpu(monkeypatch, tmp_path, rng, axis, m, n, i):
    """The GPU's rule (backends/llvm/gather.py), run natively: the CPU lowers with it in place
    of its own loop, so its offsets and its shared-memory round trip are checked on one
    thread's registers without a GPU."""
    from kernellab.backends.cpu import lowering
    from kernellab.backends.llvm import gather as core_gather
    from kernellab.ir import tt

    monkeypatch.setitem(lowering.RULES, tt.GatherOp, core_gather.RULES[tt.GatherOp])
    monkeypatch.setitem(lowering.SCRATCH, tt.GatherOp, core_gather.SCRATCH[tt.GatherOp])
    monkeypatch.setenv("KERNELLAB_CACHE_DIR", str(tmp_path))  # nothing compiled by the CPU rule
    kernel = kl.jit(gather_2d.fn)
    src = random_array(rng, (m, n), np.float16)
    shape = (i, n) if axis == 0 else (m, i)
    index = _indices(rng, (m, n)[axis], shape)
    out = poison(shape, src.dtype)
    ck = kernel[(1,)](src, index, out, M=m, N=n, I=i, AXIS=axis, target="cpu")
    assert "gather.exit:" not in ck.asm["llir"]  # the core's rule, not the CPU's loop
    assert_equal(out, np.take_along_axis(src, index, axis))


@kl.jit
def gather_rank_kernel(src_ptr, idx_ptr, out_ptr):
    src = tl.load(src_ptr + tl.arange(0, 8)[:, None] * 4 + tl.arange(0, 4)[None, :])
    index = tl.load(idx_ptr + tl.arange(0, 4))
    tl.store(out_ptr + tl.arange(0, 4), tl.gather(src, index, 0))


@kl.jit
def gather_float_index_kernel(src_ptr, idx_ptr, out_ptr):
    offs = tl.arange(0, 8)
    tl.store(out_ptr + offs, tl.gather(tl.load(src_ptr + offs), tl.load(idx_ptr + offs), 0))


def test_gather_explains_rank_and_index_dtype():
    src, out = np.zeros(32, np.float32), np.zeros(8, np.float32)
    with pytest.raises(kl.CompilationError, match="`index` must have the rank of `src`"):
        gather_rank_kernel[(1,)](src, np.zeros(4, np.int32), out)
    with pytest.raises(kl.CompilationError, match="`index` must be integers"):
        gather_float_index_kernel[(1,)](src, np.zeros(8, np.float32), out)


def _compile(target, **constexprs):
    from kernellab.backends.nvidia.cubin import ToolchainUnavailableError

    try:
        return kl.compile(
            gather_2d, signature="*fp32,*i32,*fp32", constexprs=constexprs, target=target
        )
    except ToolchainUnavailableError as e:
        pytest.skip(f"no PTX assembler: {e}")


@pytest.mark.parametrize(
    ("target", "m", "n", "i", "axis"),
    [("sm_80", 16, 32, 64, 1), ("sm_90", 16, 32, 64, 1), ("sm_90", 1024, 32, 1024, 0)],
)  # fmt: skip
def test_gather_is_one_trip_through_shared_memory(target, m, n, i, axis):
    """The source goes to shared memory once (its bytes are the kernel's shared memory), and
    each thread loads exactly its result elements (16x64 over 128 threads: 8 loads, where the
    one-hot select compared every index with all 32 positions; 1024x32: 256 loads), so code
    and compile time grow with the result alone."""
    ck = _compile(target, M=m, N=n, I=i, AXIS=axis)
    assert ck.metadata["shared"] == m * n * 4
    ptx = ck.asm["ptx"]
    results = (i * n if axis == 0 else m * i) // 128
    assert len(re.findall(r"\bld\.shared\.(?:b32|f32|u32)\b", ptx)) == results
    assert "bar.sync" in ptx
    assert isinstance(ck.asm["cubin"], bytes) and ck.asm["cubin"]


def test_cpu_gather_is_one_loop():
    """One LLVM loop over the result elements whatever the tile (a vector gather of the whole
    tile is scalarized by the x86 code generator in superlinear time)."""
    ck = kl.compile(
        gather_2d, signature="*fp32,*i32,*fp32", constexprs=dict(M=16, N=32, I=64, AXIS=0),
        target="cpu",
    )  # fmt: skip
    llir = ck.asm["llir"]
    assert llir.count("gather.exit:") == 1 and "masked.gather" not in llir


@kl.jit
def gather_rows(src_ptr, idx_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr):
    """Each row permuted by its own indices: source, index and result of one shape."""
    offs = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    tl.store(out_ptr + offs, tl.gather(tl.load(src_ptr + offs), tl.load(idx_ptr + offs), 1))


def test_row_gathers_stay_within_warps(launch, rng):
    m, n = 16, 32
    src = random_array(rng, (m, n), np.float32)
    index = _indices(rng, n, (m, n))
    out = poison((m, n), src.dtype)
    launch(gather_rows, (1,), src, index, out, M=m, N=n)
    assert_equal(out, np.take_along_axis(src, index, 1))


@pytest.mark.parametrize("target", ["sm_80", "sm_90", "gfx942"])
def test_row_gathers_use_warp_shuffles_and_no_shared_memory(target):
    """The loads' coalesced layout (4 elements of a row per thread, a row in 8 lanes) keeps
    every row in one warp, so the gather follows it (no conversion) and fetches each element
    from its lane: four candidate registers, four shuffles per element."""
    from kernellab.backends.nvidia.cubin import ToolchainUnavailableError

    aligned = {name: {"tt.divisibility": 16} for name in ("src_ptr", "idx_ptr", "out_ptr")}
    try:
        ck = kl.compile(
            gather_rows, signature="*fp32,*i32,*fp32", constexprs=dict(M=16, N=32), target=target,
            attrs=aligned,
        )  # fmt: skip
    except ToolchainUnavailableError as e:
        pytest.skip(f"no PTX assembler: {e}")
    assert "ttg.convert_layout" not in ck.asm["ttgir"]
    assert ck.metadata["shared"] == 0
    if target.startswith("sm_"):
        ptx = ck.asm["ptx"]
        assert len(re.findall(r"shfl\.sync\.idx", ptx)) == 16  # 4 elements x 4 candidates
        assert "ld.shared" not in ptx and "bar.sync" not in ptx
    else:
        assert "ds_bpermute" in ck.asm["amdgcn"]
