"""Tensor descriptors through TMA on a Hopper GPU (`-m gpu`, compute capability 9.0: kernels
compile for sm_90a there), against the interpreter: tiles straddling every edge of the tensor
(reads outside give zero or NaN, stores are clipped), fp16/bf16/fp32, host and device-side
descriptors, descriptors whose tensor maps the kernel builds (against float64, with and
without `kl.set_allocator`), 2-D (TMA) and 3-D (the plain lowering), the persistent descriptor
matmul, an MN-major B and a block-pointer matmul against float64, 3-D tiles through TMA (host
descriptors and maps the kernel builds) against float64, and the launch-time check."""

from __future__ import annotations

import numpy as np
import pytest
from test_tma import (
    batched_matmul_kernel,
    batched_tiles_kernel,
    matmul_kn_kernel,
    moving_window_kernel,
    tma_tiles_3d_kernel,
)

import kernellab as kl
import kernellab.language as tl
from kernellab.backends import allocation
from kernellab.backends.arguments import ArgumentError
from kernellab.examples import matmul_descriptor_persistent
from kernellab.tools.tensor_descriptor import TensorDescriptor
from tests.language.test_tiles import block_pointer_matmul_kernel

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def torch(hopper_torch):
    return hopper_torch


@kl.jit
def edge_tiles_kernel(x_desc, y_desc, tiles_ptr, BM: tl.constexpr, BN: tl.constexpr):
    """Program (p, q) reads the tile at ((p - 1) * BM + 3, (q - 1) * BN + 8): the grid's first
    and last tiles straddle all four edges (a column offset of 8 keeps the box start on 16
    bytes, which TMA needs). The tile goes whole to `tiles` (padding included)
    and, as 2x + 1, through y_desc at the same place (clipped)."""
    p = tl.program_id(0)
    q = tl.program_id(1)
    i = (p - 1) * BM + 3
    j = (q - 1) * BN + 8
    tile = x_desc.load([i, j])
    flat = (p * tl.num_programs(1) + q) * BM * BN
    offs = tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :]
    tl.store(tiles_ptr + flat + offs, tile)
    y_desc.store([i, j], tile * 2 + 1)


@kl.jit
def device_edge_tiles_kernel(x_ptr, y_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr,
                             PADDING: tl.constexpr):  # fmt: skip
    """edge_tiles_kernel's y with descriptors made in the kernel over its parameters."""
    x_desc = tl.make_tensor_descriptor(x_ptr, [M, N], [N, 1], [BM, BN], padding_option=PADDING)
    y_desc = tl.make_tensor_descriptor(y_ptr, [M, N], [N, 1], [BM, BN])
    i = (tl.program_id(0) - 1) * BM + 3
    j = (tl.program_id(1) - 1) * BN + 8
    y_desc.store([i, j], x_desc.load([i, j]) * 2 + 1)


@kl.jit
def edge_tiles_3d_kernel(x_desc, y_desc, B0: tl.constexpr, B1: tl.constexpr, B2: tl.constexpr):
    i = tl.program_id(0) * B0 - 1
    j = tl.program_id(1) * B1 - 3
    k = tl.program_id(2) * B2 - 5
    y_desc.store([i, j, k], x_desc.load([i, j, k]) - 1)


def _np_dtype(name):
    if name == "bfloat16":
        return pytest.importorskip("ml_dtypes").bfloat16
    return np.dtype(name)


def _random(torch, shape, dtype):
    return torch.randn(shape, device="cuda").to(getattr(torch, dtype))


def _numpy(t, dtype):
    return t.float().cpu().numpy().astype(_np_dtype(dtype)) if dtype == "bfloat16" else t.cpu().numpy()


def _same(got, want) -> None:
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    bad = ~((got == want) | (np.isnan(got) & np.isnan(want)))
    assert not bad.any(), f"{int(bad.sum())} of {bad.size} differ; first at {tuple(np.argwhere(bad)[0])}"


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
@pytest.mark.parametrize("padding", ["zero", "nan"])
@pytest.mark.parametrize(("m", "n", "bm", "bn"), [(100, 152, 32, 64), (77, 200, 64, 32), (64, 128, 16, 128)])
def test_tma_tiles_at_every_edge_match_the_interpreter(torch, dtype, padding, m, n, bm, bn):
    """Rows a multiple of 16 bytes apart (TMA's rule); tiles of one to four swizzle panels."""
    x = _random(torch, (m, n), dtype)
    y = torch.full_like(x, float("nan"))
    grid = (kl.cdiv(m, bm) + 1, kl.cdiv(n, bn) + 1)
    tiles = torch.full((grid[0] * grid[1] * bm * bn,), -7.0, device="cuda").to(x.dtype)
    ck = edge_tiles_kernel[grid](TensorDescriptor.from_tensor(x, [bm, bn], padding),
                                 TensorDescriptor.from_tensor(y, [bm, bn]), tiles, BM=bm, BN=bn)  # fmt: skip
    torch.cuda.synchronize()
    assert "cp.async.bulk.tensor.2d" in ck.asm["ptx"]  # both descriptors went through TMA
    xh, yh, th = _numpy(x, dtype), _numpy(y, dtype), _numpy(tiles, dtype)
    y_ref, t_ref = np.full_like(yh, np.nan), np.full_like(th, -7.0)
    edge_tiles_kernel[grid](TensorDescriptor.from_tensor(xh, [bm, bn], padding),
                            TensorDescriptor.from_tensor(y_ref, [bm, bn]), t_ref, BM=bm, BN=bn)  # fmt: skip
    _same(th, t_ref)
    _same(yh, y_ref)
    assert not np.isnan(np.asarray(yh, np.float64)).any()  # every element written exactly once


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
@pytest.mark.parametrize("padding", ["zero", "nan"])
def test_device_side_descriptors_over_parameters_match_the_interpreter(torch, dtype, padding):
    m, n, bm, bn = 100, 160, 32, 64  # N divisible by 16: the specialization promises TMA's rules
    x = _random(torch, (m, n), dtype)
    y = torch.full_like(x, float("nan"))
    grid = (kl.cdiv(m, bm) + 1, kl.cdiv(n, bn) + 1)
    ck = device_edge_tiles_kernel[grid](x, y, m, n, BM=bm, BN=bn, PADDING=padding)
    torch.cuda.synchronize()
    assert "cp.async.bulk.tensor.2d" in ck.asm["ptx"]
    xh = _numpy(x, dtype)
    y_ref = np.full_like(xh, np.nan)
    device_edge_tiles_kernel[grid](xh, y_ref, m, n, BM=bm, BN=bn, PADDING=padding)
    _same(_numpy(y, dtype), y_ref)


@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_3d_descriptors_match_the_interpreter(torch, dtype):
    shape, block = (5, 37, 70), (2, 16, 32)
    x = _random(torch, shape, dtype)
    y = torch.full_like(x, float("nan"))
    grid = tuple(kl.cdiv(s, b) + 1 for s, b in zip(shape, block))
    edge_tiles_3d_kernel[grid](TensorDescriptor.from_tensor(x, block), TensorDescriptor.from_tensor(y, block),
                               B0=block[0], B1=block[1], B2=block[2])  # fmt: skip
    torch.cuda.synchronize()
    xh = _numpy(x, dtype)
    y_ref = np.full_like(xh, np.nan)
    edge_tiles_3d_kernel[grid](TensorDescriptor.from_tensor(xh, block), TensorDescriptor.from_tensor(y_ref, block),
                               B0=block[0], B1=block[1], B2=block[2])  # fmt: skip
    _same(_numpy(y, dtype), y_ref)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("config", [(128, 128, 64, 4, 3), (128, 256, 64, 8, 3), (64, 128, 32, 4, 4)],
                         ids=lambda c: "x".join(map(str, c)))  # fmt: skip
@pytest.mark.parametrize("flatten,programs", [(False, None), (True, 3), (True, None)],
                         ids=["nest", "fused-3-programs", "fused-one-per-sm"])  # fmt: skip
def test_persistent_descriptor_matmul_matches_float64(torch, dtype, config, flatten, programs):
    """FLATTEN fuses the loop nest: 3 programs walk 6 or more tiles each, the next tile's TMA
    copies in flight during this tile's epilogue."""
    bm, bn, bk, warps, stages = config
    M, N, K = 520, 392, 3 * bk + 40  # partial tiles along M, N and K
    a, b = _random(torch, (M, K), dtype), _random(torch, (N, K), dtype)  # C = A Bᵀ
    c = torch.full((M, N), float("nan"), device="cuda", dtype=torch.float16)
    sms = programs or torch.cuda.get_device_properties(0).multi_processor_count
    ck = matmul_descriptor_persistent(a, b, c, sms, bm, bn, bk, num_warps=warps, num_stages=stages,
                                      flatten=flatten)  # fmt: skip
    torch.cuda.synchronize()
    assert "wgmma.mma_async" in ck.asm["ptx"] and "ttng.wait_barrier" in ck.asm["ttgir"]
    a64, b64 = a.double().cpu().numpy(), b.double().cpu().numpy().T
    ref = a64 @ b64
    bound = (K + 1) * 2.0**-24 * (np.abs(a64) @ np.abs(b64)) + 2.0**-11 * np.abs(ref) + 1e-6
    got = c.double().cpu().numpy()
    bad = ~(np.abs(got - ref) <= bound)
    assert not bad.any(), f"{int(bad.sum())} of {bad.size} off; first at {tuple(np.argwhere(bad)[0])}"


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_mn_major_b_in_swizzle_panels_matches_float64(torch, dtype):
    M, N, K, bm, bn, bk = 200, 328, 3 * 64 + 24, 128, 128, 64  # partial tiles on every edge
    a, b = _random(torch, (M, K), dtype), _random(torch, (K, N), dtype)
    c = torch.full((M, N), float("nan"), device="cuda", dtype=torch.float16)
    matmul_kn_kernel[(kl.cdiv(M, bm), kl.cdiv(N, bn))](
        TensorDescriptor.from_tensor(a, [bm, bk]), TensorDescriptor.from_tensor(b, [bk, bn]),
        TensorDescriptor.from_tensor(c, [bm, bn]), K, BM=bm, BN=bn, BK=bk, num_warps=4, num_stages=3,
    )  # fmt: skip
    torch.cuda.synchronize()
    a64, b64 = a.double().cpu().numpy(), b.double().cpu().numpy()
    ref = a64 @ b64
    bound = (K + 1) * 2.0**-24 * (np.abs(a64) @ np.abs(b64)) + 2.0**-11 * np.abs(ref) + 1e-6
    bad = ~(np.abs(c.double().cpu().numpy() - ref) <= bound)
    assert not bad.any(), f"{int(bad.sum())} of {bad.size} off; first at {tuple(np.argwhere(bad)[0])}"


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_block_pointer_matmul_on_tma_matches_float64(torch, dtype):
    """Triton's block-pointer matmul, every dim checked: its tiles are descriptor accesses, and
    with strides the specialization promises aligned (multiples of 16) TMA copies them."""
    M, N, K = 200, 192, 160
    a, b = _random(torch, (M, K), dtype), _random(torch, (K, N), dtype)
    c = torch.full((M, N), float("nan"), device="cuda")
    ck = block_pointer_matmul_kernel[(kl.cdiv(M, 64), kl.cdiv(N, 64))](
        a, b, c, M, N, K, K, 1, N, 1, N, 1, BM=64, BN=64, BK=32, num_warps=4, num_stages=3,
    )  # fmt: skip
    torch.cuda.synchronize()
    assert "cp.async.bulk.tensor.2d" in ck.asm["ptx"] and "ttng.wait_barrier" in ck.asm["ttgir"]
    a64, b64 = a.double().cpu().numpy(), b.double().cpu().numpy()
    ref = a64 @ b64
    bound = (K + 1) * 2.0**-24 * (np.abs(a64) @ np.abs(b64)) + 1e-6
    bad = ~(np.abs(c.double().cpu().numpy() - ref) <= bound)
    assert not bad.any(), f"{int(bad.sum())} of {bad.size} off; first at {tuple(np.argwhere(bad)[0])}"


def test_a_row_pitch_tma_cannot_read_is_refused_at_launch(torch):
    x = torch.randn(64, 68, device="cuda").half()[:, :60]  # rows 136 bytes apart
    y = torch.empty(64, 64, device="cuda").half()
    with pytest.raises(ArgumentError, match="stride 0 .* is not a multiple of 16 bytes"):
        edge_tiles_kernel[(1, 1)](TensorDescriptor.from_tensor(x, [32, 32]),
                                  TensorDescriptor.from_tensor(y, [32, 32]),
                                  torch.empty(4 * 32 * 32, device="cuda").half(), BM=32, BN=32)  # fmt: skip


@kl.jit
def window_tiles_kernel(x_ptr, y_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr, PADDING: tl.constexpr):
    """Program (p, q) makes descriptors over the rows from p * BM on (a base and a dim it
    computes; the last programs' windows are empty) and reads the tile at (-5, j), j = (q - 1)
    * BN + 8 (straddling the window's top and the tensor's left and right edges), writing 2x + 1
    at (0, j) of y's window (clipped; the masked form where j < 0)."""
    r = tl.program_id(0) * BM
    j = (tl.program_id(1) - 1) * BN + 8
    x_desc = tl.make_tensor_descriptor(x_ptr + r * N, [M - r, N], [N, 1], [BM, BN], padding_option=PADDING)
    y_desc = tl.make_tensor_descriptor(y_ptr + r * N, [M - r, N], [N, 1], [BM, BN])
    y_desc.store([0, j], x_desc.load([-5, j]) * 2 + 1)


def _window_tiles_reference(x, m, n, bm, bn, grid, pad):
    """window_tiles_kernel in float64: what each program writes, the rest left poisoned."""
    y = np.full((m, n), np.nan)
    for p in range(grid[0]):
        r = p * bm
        for q in range(grid[1]):
            j = (q - 1) * bn + 8
            for a in range(bm):
                for b in range(bn):
                    row, col = r + a, j + b
                    if not (row < m and 0 <= col < n):
                        continue  # outside the window's tensor: not written
                    src = r - 5 + a
                    inside = 0 <= -5 + a < m - r and 0 <= col < n
                    y[row, col] = (x[src, col] if inside else pad) * 2 + 1
    return y


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
@pytest.mark.parametrize("padding", ["zero", "nan"])
@pytest.mark.parametrize("allocator", ["torch", "launcher"])
def test_maps_the_kernel_builds_match_float64(torch, dtype, padding, allocator):
    """Tensor maps written by the program (tensormap.replace, the proxy fences) over a base and
    dims it computes: partial tiles on every edge, empty windows, from kl.set_allocator's
    allocator or the launcher's own buffer."""
    m, n, bm, bn = 100, 160, 32, 64  # N divisible by 16: AxisInfo proves the base and stride aligned
    x = _random(torch, (m, n), dtype)
    poison = -1024.0  # exact in every dtype here; 2x + 1 of a normal sample never is
    y = torch.full_like(x, poison)
    grid = (kl.cdiv(m, bm) + 1, kl.cdiv(n, bn) + 1)
    requests = []
    saved = allocation.allocator()

    def alloc(size, alignment, stream):
        requests.append((size, alignment))
        return torch.empty(size, dtype=torch.int8, device="cuda")

    kl.set_allocator(alloc if allocator == "torch" else None)
    try:
        ck = window_tiles_kernel[grid](x, y, m, n, BM=bm, BN=bn, PADDING=padding)
        torch.cuda.synchronize()
    finally:
        kl.set_allocator(saved)
    assert "tensormap.cp_fenceproxy" in ck.asm["ptx"] and "cp.async.bulk.tensor.2d" in ck.asm["ptx"]
    per_program = ck.metadata["global_scratch_size"]
    assert requests == ([(per_program * grid[0] * grid[1], 128)] if allocator == "torch" else [])
    x64 = np.asarray(_numpy(x, dtype), np.float64)
    want = _window_tiles_reference(x64, m, n, bm, bn, grid, np.nan if padding == "nan" else 0.0)
    got = np.asarray(_numpy(y, dtype), np.float64)
    assert not (got == poison).any(), "an element was not written"
    # x * 2 is exact and + 1 rounds once, as rounding the float64 result to the dtype does
    _same(got, np.asarray(want.astype(np.float32).astype(_np_dtype(dtype)), np.float64))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_batched_matmul_through_maps_the_kernel_builds_matches_float64(torch, dtype):
    """Per-batch descriptors (bases the kernel computes) pipelined into wgmma: partial tiles
    along M, N and K."""
    Z, M, N, K = 3, 200, 144, 160
    a, b = _random(torch, (Z, M, K), dtype), _random(torch, (Z, N, K), dtype)
    c = torch.full((Z, M, N), float("nan"), device="cuda", dtype=torch.float16)
    ck = batched_matmul_kernel[(kl.cdiv(M, 128), kl.cdiv(N, 128), Z)](
        a, b, c, M, N, K, BM=128, BN=128, BK=64, num_warps=4, num_stages=3)  # fmt: skip
    torch.cuda.synchronize()
    assert "tensormap.cp_fenceproxy" in ck.asm["ptx"] and "wgmma.mma_async" in ck.asm["ptx"]
    a64, b64 = a.double().cpu().numpy(), b.double().cpu().numpy().transpose(0, 2, 1)
    ref = a64 @ b64
    bound = (K + 1) * 2.0**-24 * (np.abs(a64) @ np.abs(b64)) + 2.0**-11 * np.abs(ref) + 1e-6
    bad = ~(np.abs(c.double().cpu().numpy() - ref) <= bound)
    assert not bad.any(), f"{int(bad.sum())} of {bad.size} off; first at {tuple(np.argwhere(bad)[0])}"


def test_a_map_rebuilt_in_every_iteration_matches_float64(torch):
    M, N, bm, bn = 232, 192, 32, 64  # the last window holds 8 rows: the rest read as zero
    x = _random(torch, (M, N), "float16")
    y = torch.full((bm, N), float("nan"), device="cuda")
    ck = moving_window_kernel[(N // bn,)](x, y, M, N, BM=bm, BN=bn, num_stages=3)
    torch.cuda.synchronize()
    assert "tensormap.cp_fenceproxy" in ck.asm["ptx"]
    x64 = x.double().cpu().numpy()
    padded = np.zeros((kl.cdiv(M, bm) * bm, N))
    padded[:M] = x64
    ref = padded.reshape(-1, bm, N).sum(axis=0)
    bound = kl.cdiv(M, bm) * 2.0**-24 * np.abs(padded).reshape(-1, bm, N).sum(axis=0) + 1e-6
    bad = ~(np.abs(y.double().cpu().numpy() - ref) <= bound)
    assert not bad.any(), f"{int(bad.sum())} of {bad.size} off; first at {tuple(np.argwhere(bad)[0])}"


def _twice_plus_one(x, dtype):
    """x * 2 + 1 in float64, rounded to the dtype once (as the kernel's x * 2 exact, + 1)."""
    want = np.asarray(_numpy(x, dtype), np.float64) * 2 + 1
    return np.asarray(want.astype(np.float32).astype(_np_dtype(dtype)), np.float64)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
@pytest.mark.parametrize("block", [(1, 16, 64), (2, 16, 64), (2, 16, 128), (4, 8, 32)],
                         ids=lambda b: "x".join(map(str, b)))  # fmt: skip
def test_3d_tma_tiles_at_every_edge_match_float64(torch, dtype, block):
    """3-D host descriptors through cp.async.bulk.tensor.3d (one box per batch slice and
    panel): the tiles straddle every edge, each element is written by exactly one."""
    shape = (5, 37, 72)  # rows 144 / 288 bytes apart: TMA's 16-byte rule holds
    x = _random(torch, shape, dtype)
    poison = -1024.0  # exact in every dtype here; 2x + 1 of a normal sample never is
    y = torch.full_like(x, poison)
    grid = tuple(kl.cdiv(s, b) + 1 for s, b in zip(shape, block))
    ck = tma_tiles_3d_kernel[grid](TensorDescriptor.from_tensor(x, list(block)),
                                   TensorDescriptor.from_tensor(y, list(block)),
                                   B0=block[0], B1=block[1], B2=block[2])  # fmt: skip
    torch.cuda.synchronize()
    assert "cp.async.bulk.tensor.3d" in ck.asm["ptx"]
    got = np.asarray(_numpy(y, dtype), np.float64)
    assert not (got == poison).any(), "an element was not written"
    _same(got, _twice_plus_one(x, dtype))


@pytest.mark.parametrize("dtype", ["float16", "float32"])
@pytest.mark.parametrize("b0", [1, 2])
def test_3d_maps_the_kernel_builds_match_float64(torch, dtype, b0):
    """Batched [B, M, K] descriptors with a batch stride the kernel computes: rank-3 tensor
    maps written by the program, tiles [b0, 16, 64] straddling every edge."""
    B, M, K = 3, 40, 80
    x = _random(torch, (B, M, K), dtype)
    poison = -1024.0  # exact in every dtype here; 2x + 1 of a normal sample never is
    y = torch.full_like(x, poison)
    grid = (kl.cdiv(B, b0) + 1, kl.cdiv(M, 16) + 1, kl.cdiv(K, 64) + 1)
    ck = batched_tiles_kernel[grid](x, y, B, M, K, B0=b0, BM=16, BK=64)
    torch.cuda.synchronize()
    assert "tensormap.cp_fenceproxy" in ck.asm["ptx"] and "cp.async.bulk.tensor.3d" in ck.asm["ptx"]
    got = np.asarray(_numpy(y, dtype), np.float64)
    assert not (got == poison).any(), "an element was not written"
    _same(got, _twice_plus_one(x, dtype))
