"""Tensor descriptors on Hopper without a GPU: which accesses the TTIR stage keeps for TMA (and
why the others stay masked pointer loads), the TTGIR of the TMA path (tensor-map parameters,
mbarrier rings pipelined over num_stages, the NVMMA buffers wgmma reads), PTX for sm_90a that
ptxas assembles, the metadata the launcher encodes tensor maps from, and the launch-time checks."""

from __future__ import annotations

import re

import numpy as np
import pytest

import kernellab as kl
import kernellab.language as tl
from kernellab.backends.arguments import ArgumentError
from kernellab.backends.metadata import TmaDescriptor
from kernellab.backends.nvidia.launcher import plan_parameters
from kernellab.backends.nvidia.tensor_maps import TensorMaps
from kernellab.examples import matmul_descriptor_persistent_kernel
from kernellab.ir import parse_module, print_module
from kernellab.tools.tensor_descriptor import TensorDescriptor
from tests.filecheck import check, check_not, outside_branches


@kl.jit
def scale_tiles_kernel(x_desc, y_desc, BM: tl.constexpr, BN: tl.constexpr):
    """y = 2x + 1, one BM x BN tile per program, through host descriptors."""
    i = tl.program_id(0) * BM
    j = tl.program_id(1) * BN
    y_desc.store([i, j], x_desc.load([i, j]) * 2 + 1)


@kl.jit
def device_descriptor_kernel(x_ptr, y_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    x_desc = tl.make_tensor_descriptor(x_ptr, [M, N], [N, 1], [BM, BN])
    y_desc = tl.make_tensor_descriptor(y_ptr, [M, N], [N, 1], [BM, BN])
    i = tl.program_id(0) * BM
    y_desc.store([i, 0], x_desc.load([i, 0]))


@kl.jit
def matmul_kn_kernel(a_desc, b_desc, c_desc, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """C = A @ B with B K x N: its tiles are N-contiguous (MN-major for wgmma) and, 128 columns
    of fp16 being two 128-byte swizzle panels, take two TMA copies each."""
    i = tl.program_id(0) * BM
    j = tl.program_id(1) * BN
    acc = tl.zeros((BM, BN), tl.float32)
    for k in range(0, K, BK):
        acc = tl.dot(a_desc.load([i, k]), b_desc.load([k, j]), acc)
    c_desc.store([i, j], acc.to(c_desc.dtype))


def compiled(kernel, args, meta, target="sm_90a", **options):
    bound = kernel.binder.bind(args, meta)
    signature, constexprs, attrs = kernel.binder.compile_args(bound)
    return kl.compile(kernel, signature=signature, constexprs=constexprs, attrs=attrs,
                      target=target, **options)  # fmt: skip


def descriptors(shape, block, dtype=np.float16, padding="zero"):
    a = np.zeros(shape, dtype)
    return TensorDescriptor.from_tensor(a, block, padding), TensorDescriptor.from_tensor(a, block)


def record(ck, name):
    return next(r for r in ck.passes if r.name == name)


def compile_matmul(bm=128, bn=128, bk=64, warps=4, stages=3, dtype=np.float16, flatten=False):
    a = np.zeros((512, 512), dtype)
    args = (TensorDescriptor.from_tensor(a, [bm, bk]), TensorDescriptor.from_tensor(a, [bn, bk]),
            TensorDescriptor.from_tensor(a, [bm, bn]), 512, 512, 512)  # fmt: skip
    meta = dict(BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn, BLOCK_SIZE_K=bk, GROUP_SIZE_M=8, NUM_SMS=132,
                FLATTEN=flatten)  # fmt: skip
    return compiled(matmul_descriptor_persistent_kernel, args, meta, num_warps=warps, num_stages=stages)


def test_descriptor_accesses_are_ops_in_ttir_and_pointers_elsewhere():
    args = descriptors((64, 64), [32, 64])
    hopper = compiled(scale_tiles_kernel, args, {"BM": 32, "BN": 64})
    check(hopper.asm["ttir"], [
        re.compile(r"tt.descriptor_load %\w+\[%\w+, %\w+\] strides \[%\w+, %\w+\] at \[%\w+, %\w+\] "
                   r"\{padding = \"zero\", host = \"x_desc\"\} : !tt.ptr<f16> -> tensor<32x64xf16>"),
        re.compile(r"tt.descriptor_store .*host = \"y_desc\""),
    ])  # fmt: skip
    assert "2× kept" in record(hopper, "lower_descriptors").summary
    for target in ("sm_90", "sm_80"):
        plain = compiled(scale_tiles_kernel, args, {"BM": 32, "BN": 64}, target=target)
        check_not(plain.asm["ttir"], ["tt.descriptor_", "ttng."])
        check(plain.asm["ttir"], ["tt.load", "tt.store"])
        assert "cp.async.bulk" not in plain.asm["ptx"]


def test_the_ttir_with_descriptor_ops_parses_back():
    ttir = compiled(scale_tiles_kernel, descriptors((64, 64), [32, 64]), {"BM": 32, "BN": 64}).asm["ttir"]
    assert print_module(parse_module(ttir)) == ttir


@pytest.mark.parametrize(
    ("args", "meta", "reason"),
    [
        (descriptors((64, 64), [32, 8]), {"BM": 32, "BN": 8}, "under the narrowest swizzle"),
        (descriptors((64, 64), [4, 128]), {"BM": 4, "BN": 128}, "panels of a swizzled tile start on 8-row"),
    ],
    ids=["16-byte rows", "4 rows, 2 panels"],
)
def test_accesses_tma_cannot_take_stay_plain_and_say_why(args, meta, reason):
    ck = compiled(scale_tiles_kernel, args, meta)
    assert reason in record(ck, "lower_descriptors").summary
    assert "cp.async.bulk" not in ck.asm["ptx"] and len(ck.asm["cubin"]) > 0


@pytest.mark.parametrize(("n", "reason"), [
    (64, ""),  # rows 128 bytes apart, the pointers aligned: all promised by the specialization
    (70, "a device-side descriptor's stride 0 is not known to be a multiple of 16 bytes"),
])  # fmt: skip
def test_device_side_descriptors_over_parameters_use_tma_where_the_specialization_allows(n, reason):
    a = np.zeros((64, n), np.float16)
    ck = compiled(device_descriptor_kernel, (a, a, 64, n), {"BM": 32, "BN": 64})
    summary = record(ck, "lower_descriptors").summary
    if reason:
        assert reason in summary and "ttng." not in ck.asm["ttgir"]
        assert ck.metadata.get("tma_descriptors") is None
        return
    assert summary == "2× kept, 1× guard-store" and "cp.async.bulk.tensor.2d" in ck.asm["ptx"]
    x, y = (TmaDescriptor.of(d) for d in ck.metadata["tma_descriptors"])
    assert x.param == "device-side descriptor over argument 0" and x.base == ("arg", 0)
    assert x.shape == (("arg", 2), ("arg", 3)) and x.strides == (("arg", 3), ("value", 1))
    assert y.base == ("arg", 1)


@kl.jit
def computed_descriptor_kernel(x_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    rows = tl.program_id(0) * BM  # each program's own window: a base the kernel computes
    desc = tl.make_tensor_descriptor(x_ptr + rows * N, [M - rows, N], [N, 1], [BM, BN])
    desc.store([0, 0], desc.load([0, 0]) + 1)


def test_a_descriptor_the_kernel_computes_builds_its_tensor_map_in_global_scratch():
    a = np.zeros((64, 64), np.float16)
    ck = compiled(computed_descriptor_kernel, (a, 64, 64), {"BM": 32, "BN": 64})
    # its dims are computed: clamped to >= 1 (an empty dim's offset moved past the end)
    assert record(ck, "lower_descriptors").summary == "2× kept, 2× clamp-empty-dims"
    ttgir = ck.asm["ttgir"]
    check(ttgir, [
        "ttg.global_scratch_memory_size = 128 : i32",
        re.compile(r"(%\w+) = ttg.global_scratch_alloc \{nbytes = 128 : i32, alignment = 128 : i32, "
                   r"offset = 0 : i32\} : !tt.ptr<i8>"),
        re.compile(r"ttng.tensormap_create %\w+, %\w+, \[%\w+, %\w+\], \[%\w+\] \{box = array<i32: 32, 64>, "
                   r"elem_type = 6 : i32, swizzle_mode = 3 : i32, fill_mode = 0 : i32\}"),
        "ttng.tensormap_fenceproxy_acquire", "ttng.async_tma_copy_global_to_local",
        "ttng.async_tma_copy_local_to_global",
    ])  # fmt: skip
    assert ttgir.count("ttng.tensormap_create") == 1  # one map for the load and the store
    assert record(ck, "tma").summary == "1× tma-load, 1× tma-store, 1× tensormap-create"
    assert "tt.nv_tma_desc" not in ttgir and ck.metadata.get("tma_descriptors") is None
    assert (ck.metadata["global_scratch_size"], ck.metadata["global_scratch_align"]) == (128, 128)
    ptx = ck.asm["ptx"]
    params = re.findall(r"\.param (.*) computed_descriptor_kernel_param_(\d+)", ptx)
    assert params[-1] == (".u64 .ptr .global .align 1", "3")  # the hidden scratch, last
    check(ptx, [
        "cp.async.bulk.wait_group 0;", "st.shared.b32", "bar.warp.sync -1",
        "tensormap.replace.tile.global_address.shared::cta.b1024.b64",
        re.compile(r"tensormap.replace.tile.rank.shared::cta.b1024.b32 \[%rd\d+\], 1;"),
        re.compile(r"box_dim.shared::cta.b1024.b32 \[%rd\d+\], 0, 64;"),  # innermost first
        re.compile(r"box_dim.shared::cta.b1024.b32 \[%rd\d+\], 1, 32;"),
        "global_dim.shared::cta.b1024.b32", "global_dim.shared::cta.b1024.b32",
        "global_stride.shared::cta.b1024.b64", "element_stride", "element_stride",
        re.compile(r"elemtype.shared::cta.b1024.b32 \[%rd\d+\], 6;"),
        re.compile(r"swizzle_mode.shared::cta.b1024.b32 \[%rd\d+\], 3;"),
        "tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.gpu.sync.aligned",
        "cp.async.bulk.wait_group.read 0", "fence.proxy.tensormap::generic.acquire.gpu",
        "cp.async.bulk.tensor.2d.shared::cluster.global", "cp.async.bulk.tensor.2d.global.shared::cta",
    ])  # fmt: skip
    assert len(ck.asm["cubin"]) > 0
    assert print_module(parse_module(ttgir)) == ttgir
    for stage in ("ttgir", "llir", "ptx"):  # resumed from text: LLVM IR and PTX carry it in their header
        assert kl.compile(ck.asm[stage], target="sm_90a").metadata["global_scratch_size"] == 128, stage


@kl.jit
def batched_matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """C[z] = A[z] @ B[z]ᵀ through descriptors over batch z's matrices: bases the kernel computes."""
    z = tl.program_id(2)
    a_desc = tl.make_tensor_descriptor(a_ptr + z * M * K, [M, K], [K, 1], [BM, BK])
    b_desc = tl.make_tensor_descriptor(b_ptr + z * N * K, [N, K], [K, 1], [BN, BK])
    c_desc = tl.make_tensor_descriptor(c_ptr + z * M * N, [M, N], [N, 1], [BM, BN])
    i = tl.program_id(0) * BM
    j = tl.program_id(1) * BN
    acc = tl.zeros((BM, BN), tl.float32)
    for k in range(0, K, BK):
        acc = tl.dot(a_desc.load([i, k]), b_desc.load([j, k]).T, acc)
    c_desc.store([i, j], acc.to(c_desc.dtype))


def test_maps_built_before_a_loop_are_pipelined_one_slot_each():
    a = np.zeros((4, 256, 256), np.float16)
    ck = compiled(batched_matmul_kernel, (a, a, a, 256, 256, 256), {"BM": 128, "BN": 128, "BK": 64},
                  num_warps=4, num_stages=3)  # fmt: skip
    ttgir = ck.asm["ttgir"]
    assert "ttg.global_scratch_memory_size = 384 : i32" in ttgir
    for offset in (0, 128, 256):
        assert f"offset = {offset} : i32" in ttgir
    before_loop, after_loop = ttgir.split("scf.yield")[0].split("scf.for")
    # a's and b's maps ahead of the prologue, c's where its fields are (its clamped dims: at the store)
    assert before_loop.count("ttng.tensormap_fenceproxy_acquire") == 2
    assert "ttng.tensormap_create" not in after_loop
    check(ttgir, ["scf.for", "ttng.wait_barrier", "ttng.async_tma_copy_global_to_local", "ttng.warp_group_dot",
                  "scf.yield", "ttng.async_tma_copy_local_to_global"])  # fmt: skip
    assert "wgmma.mma_async" in ck.asm["ptx"] and ck.asm["ptx"].count("tensormap.cp_fenceproxy") == 3
    assert ck.metadata["global_scratch_size"] == 384 and ck.metadata["spills"] == 0


@kl.jit
def moving_window_kernel(x_ptr, y_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    """Each iteration reads through a descriptor whose base the loop computes: its map is
    rebuilt per iteration, and that loop is not pipelined."""
    acc = tl.zeros((BM, BN), tl.float32)
    for r in range(0, M, BM):
        desc = tl.make_tensor_descriptor(x_ptr + r * N, [M - r, N], [N, 1], [BM, BN])
        acc += desc.load([0, tl.program_id(0) * BN]).to(tl.float32)
    offs = tl.arange(0, BM)[:, None] * N + tl.program_id(0) * BN + tl.arange(0, BN)[None, :]
    tl.store(y_ptr + offs, acc)


def test_a_map_built_in_a_loop_is_rebuilt_there():
    a = np.zeros((256, 128), np.float16)
    ck = compiled(moving_window_kernel, (a, np.zeros((32, 128), np.float32), 256, 128),
                  {"BM": 32, "BN": 64}, num_stages=3)  # fmt: skip
    loop = ck.asm["ttgir"].split("scf.for")[1]
    check(loop, ["ttng.tensormap_create", "ttng.tensormap_fenceproxy_acquire", "ttng.init_barrier",
                 "ttng.async_tma_copy_global_to_local", "ttng.wait_barrier"])  # fmt: skip
    assert len(ck.asm["cubin"]) > 0


@kl.jit
def odd_rows_kernel(x_ptr, N, BM: tl.constexpr, BN: tl.constexpr):
    desc = tl.make_tensor_descriptor(x_ptr, [BM, N], [N + 1, 1], [BM, BN])
    desc.store([0, 0], desc.load([0, 0]) + 1)


def test_a_computed_stride_tma_cannot_take_stays_plain_and_says_why():
    ck = compiled(odd_rows_kernel, (np.zeros(4096, np.float16), 64), {"BM": 32, "BN": 64})
    assert "stride 0 is not known to be a multiple of 16 bytes" in record(ck, "lower_descriptors").summary
    assert "ttng." not in ck.asm["ttgir"] and ck.metadata.get("global_scratch_size") is None


def test_the_launcher_gives_each_program_its_scratch_from_the_allocator(monkeypatch):
    from kernellab.backends import allocation
    from kernellab.backends.nvidia import driver
    from kernellab.backends.nvidia.backend import restore
    from kernellab.backends.nvidia.launcher import CudaLauncher

    ck = compiled(computed_descriptor_kernel, (np.zeros((64, 64), np.float16), 64, 64), {"BM": 32, "BN": 64})
    launcher = CudaLauncher(restore(ck.asm, ck.metadata))
    args = (0x10000, 64, 64)
    requests = []

    class Buffer:
        def __init__(self, address):
            self.address = address

        def data_ptr(self):
            return self.address

    monkeypatch.setattr(allocation, "_allocator", lambda *request: requests.append(request) or Buffer(0x7f00))
    assert launcher._extra_values(args, (3, 2, 1), 5, 0) == (0x7f00,)
    assert requests == [(128 * 6, 128, 5)]  # 128 bytes per program, on the launch's stream
    assert launcher._struct.pack(*args, 0x7f00)[-8:] == (0x7f00).to_bytes(8, "little")
    monkeypatch.setattr(allocation, "_allocator", lambda *request: Buffer(0x7f08))
    with pytest.raises(ValueError, match="not 128-byte aligned"):
        launcher._extra_values(args, (1, 1, 1), 0, 0)
    # without an allocator: the launcher's own buffer per stream, grown for a larger grid
    calls = []

    def fake(name, *a):
        calls.append((name, *a))
        return 0x100000 * len(calls) if name == "cuMemAlloc" else None

    monkeypatch.setattr(allocation, "_allocator", None)
    monkeypatch.setattr(driver, "call", fake)
    assert launcher._extra_values(args, (2, 1, 1), 0, 0) == (0x100000,)
    assert launcher._extra_values(args, (1, 1, 1), 0, 0) == (0x100000,)  # fits: kept
    assert launcher._extra_values(args, (4, 1, 1), 0, 0) == (0x400000,)
    assert calls == [("cuMemAlloc", 256), ("cuStreamSynchronize", 0), ("cuMemFree", 0x100000),
                     ("cuMemAlloc", 512)]  # fmt: skip


def test_a_tile_not_feeding_a_dot_is_copied_then_read_from_shared_memory():
    ck = compiled(scale_tiles_kernel, descriptors((64, 64), [32, 64], padding="nan"), {"BM": 32, "BN": 64})
    check(ck.asm["ttgir"], [
        "#shared = #ttg.nvmma_shared<{swizzlingByteWidth = 128, elementBitWidth = 16}>",
        re.compile(r"tt.func public @scale_tiles_kernel\(.*%\w+: !tt.ptr<i8> \{tt.nv_tma_desc = 1 : i32, "
                   r"tt.tma = \{.*\}\}, %\w+: !tt.ptr<i8> \{tt.nv_tma_desc = 1 : i32"),
        "ttg.local_alloc : () -> !ttg.memdesc<32x64xf16, #shared, #smem, mutable>",
        "ttg.local_alloc : () -> !ttg.memdesc<1xi64, #shared1, #smem, mutable>",
        "ttng.init_barrier", "ttng.barrier_expect", "ttng.async_tma_copy_global_to_local",
        "ttng.wait_barrier", "ttng.inval_barrier", "ttg.local_load",
        "ttg.local_alloc", "ttng.fence_async_shared", "ttng.async_tma_copy_local_to_global",
        "ttng.async_tma_store_wait {pendings = 0 : i32}",
    ])  # fmt: skip
    load, store = (TmaDescriptor.of(d) for d in ck.metadata["tma_descriptors"])
    assert (load.param, load.box, load.swizzle, load.fill) == ("x_desc", (32, 64), 128, "nan")
    assert load.base == ("arg", 0) and load.shape == (("arg", 1), ("arg", 2))
    assert load.strides == (("arg", 3), ("value", 1))  # the last stride, specialized to 1
    assert (store.param, store.base, store.fill) == ("y_desc", ("arg", 4), "zero")
    ptx = ck.asm["ptx"]
    assert len(re.findall(r"\.param \.align 64 \.b8 scale_tiles_kernel_param_\d+\[128\]", ptx)) == 2
    check(ptx, [
        "mbarrier.init.shared::cta.b64", "mbarrier.arrive.expect_tx.shared::cta.b64",
        "cvta.param.u64", "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes",
        "mbarrier.try_wait.parity.shared::cta.b64", "mbarrier.inval.shared::cta.b64",
        "fence.proxy.async.shared::cta", "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group",
        "cp.async.bulk.commit_group", "cp.async.bulk.wait_group.read 0",
    ])  # fmt: skip
    assert len(ck.asm["cubin"]) > 0


def test_persistent_descriptor_matmul_is_pipelined_tma_into_wgmma():
    ck = compile_matmul()
    check(ck.asm["ttgir"], [
        "#mma = #ttg.nvidia_mma<{versionMajor = 3",
        "#shared = #ttg.nvmma_shared<{swizzlingByteWidth = 128, elementBitWidth = 16}>",
        "#shared1 = #ttg.nvmma_shared<{swizzlingByteWidth = 128, transposed = 1, elementBitWidth = 16}>",
        # C's buffer, once for all tiles: a tile's store stays in flight into the next tile
        "ttg.local_alloc : () -> !ttg.memdesc<128x128xf16, #shared, #smem, mutable>",
        "scf.for",
        # 3 stages, refill first, the dot asynchronous: 4 slots, one barrier each
        "ttg.local_alloc : () -> !ttg.memdesc<4x128x64xf16, #shared, #smem, mutable>",
        # B's N x K tiles land K-major: Bᵀ's transposed NVMMA buffer, the same bytes
        "ttg.local_alloc : () -> !ttg.memdesc<4x64x128xf16, #shared1, #smem, mutable>",
        "ttg.local_alloc : () -> !ttg.memdesc<4x1xi64, #shared2, #smem, mutable>",
        "ttng.init_barrier", "ttng.init_barrier", "ttng.init_barrier", "ttng.init_barrier",
        "ttng.barrier_expect", "ttng.async_tma_copy_global_to_local", "ttng.async_tma_copy_global_to_local",
        "ttng.barrier_expect", "ttng.async_tma_copy_global_to_local", "ttng.async_tma_copy_global_to_local",
        re.compile(r"scf.for .* iter_args\(.*\) -> \(tensor<128x128xf32, #mma>, i32, i32, i32\)"),
        re.compile(r"ttng.wait_barrier %\w+, %\w+"),
        "ttng.barrier_expect", "ttng.async_tma_copy_global_to_local", "ttng.async_tma_copy_global_to_local",
        "ttng.warp_group_dot", "isAsync", "ttng.warp_group_dot_wait",
        "arith.xori",  # the phase flips when the read slot wraps
        "scf.yield",
        "ttng.inval_barrier", "ttng.inval_barrier", "ttng.inval_barrier", "ttng.inval_barrier",
        # the previous tile's store has read C's buffer; C straight from the accumulator
        "ttng.async_tma_store_wait {pendings = 0 : i32}",
        re.compile(r"ttg.local_store %\w+, %\w+ : tensor<128x128xf16, #mma>"),
        "ttng.fence_async_shared", "ttng.async_tma_copy_local_to_global",
        # after the tile loop: the last store has read its buffer
        "ttng.async_tma_store_wait {pendings = 0 : i32}", "ttg.local_dealloc", "tt.return",
    ])  # fmt: skip
    assert "1× tma-store-in-flight" in record(ck, "tma").summary
    loop = ck.asm["ttgir"].split("scf.for")[2].split("scf.yield")[0]
    check_not(loop, ["ttg.async_copy_global_to_local", "ttg.local_load", "tt.load", "tt.trans"])
    ptx = ck.asm["ptx"]
    assert "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16" in ptx
    # A's and B's tiles are one 128-byte panel each: two TMA copies per issue (2 + 1 sites)
    assert ptx.count("cp.async.bulk.tensor.2d.shared::cluster.global") == 2 * 3
    assert ck.metadata["spills"] == 0 and len(ck.asm["cubin"]) > 0


def test_a_store_in_flight_leaves_the_wide_tiles_triton_s_ring():
    """128x256x64 on 8 warps: four 48 KB slots and C's 64 KB buffer would pass Hopper's 227 KB,
    so the refill waits for the previous dot and reuses its slot (3 slots, still 3 stages, as
    Triton's ring); the next tile's threads write C's buffer only after thread 0 saw the last
    store read it and a barrier told them so."""
    ck = compile_matmul(bn=256, warps=8)
    assert "ring-of-stages-beside-a-store-in-flight" in record(ck, "pipeline").summary
    check(ck.asm["ttgir"], [
        "ttg.local_alloc : () -> !ttg.memdesc<128x256xf16, #shared, #smem, mutable>", "scf.for",
        "ttg.local_alloc : () -> !ttg.memdesc<3x128x64xf16, #shared, #smem, mutable>",
        "ttg.local_alloc : () -> !ttg.memdesc<3x64x256xf16, #shared1, #smem, mutable>",
        "ttng.warp_group_dot", "ttng.warp_group_dot_wait", "pendings = 1",
        "ttng.barrier_expect", "ttng.async_tma_copy_global_to_local",  # the refill behind the wait
        "scf.yield", "ttng.async_tma_store_wait {pendings = 0 : i32}", "ttg.local_store",
    ])  # fmt: skip
    ptx = ck.asm["ptx"]
    waits = [m.start() for m in re.finditer(r"cp.async.bulk.wait_group.read 0", ptx)]
    first_write = ptx.index("st.shared", waits[0])
    assert "bar.sync" in ptx[waits[0]:first_write]
    assert ck.metadata["shared"] <= 227 * 1024 and ck.metadata["spills"] == 0


def test_a_store_outside_any_loop_waits_for_its_read_at_once():
    ck = compiled(scale_tiles_kernel, descriptors((64, 64), [32, 64]), {"BM": 32, "BN": 64})
    assert "tma-store-in-flight" not in record(ck, "tma").summary
    check(ck.asm["ttgir"], [re.compile(r"ttg.local_alloc %\w+"), "ttng.async_tma_copy_local_to_global",
                            "ttng.async_tma_store_wait {pendings = 0 : i32}", "tt.return"])  # fmt: skip


def test_persistent_descriptor_matmul_is_fused_and_pipelined_tma_into_wgmma():
    """FLATTEN: one loop over tiles x K steps (guarded by both running), TMA copies of the
    next steps issued (maybe the next tile's) before this tile's epilogue stores."""
    ck = compile_matmul(flatten=True)
    assert "1× fuse-loop-nest" in record(ck, "fuse_nested_loops").summary
    check(ck.asm["ttgir"], [
        "#mma = #ttg.nvidia_mma<{versionMajor = 3",
        "#shared = #ttg.nvmma_shared<{swizzlingByteWidth = 128, elementBitWidth = 16}>",
        "#shared1 = #ttg.nvmma_shared<{swizzlingByteWidth = 128, transposed = 1, elementBitWidth = 16}>",
        "scf.if",  # the fused loop where tiles and K steps both run
        # 3 stages, the dot asynchronous and read by the epilogue: the refill waits for the
        # previous dot, 3 slots (the epilogue's buffer is live beside them), one barrier each
        "ttg.local_alloc : () -> !ttg.memdesc<3x128x64xf16, #shared, #smem, mutable>",
        # B's N x K tiles land K-major: Bᵀ's transposed NVMMA buffer, the same bytes
        "ttg.local_alloc : () -> !ttg.memdesc<3x64x128xf16, #shared1, #smem, mutable>",
        "ttg.local_alloc : () -> !ttg.memdesc<3x1xi64, #shared2, #smem, mutable>",
        "ttng.init_barrier", "ttng.init_barrier", "ttng.init_barrier",
        "ttng.barrier_expect", "ttng.async_tma_copy_global_to_local", "ttng.async_tma_copy_global_to_local",
        "ttng.barrier_expect", "ttng.async_tma_copy_global_to_local", "ttng.async_tma_copy_global_to_local",
        re.compile(r"scf.for .* iter_args\(.*\) -> \(tensor<128x128xf32, #mma>(, i32)+\)"),
        re.compile(r"ttng.wait_barrier %\w+, %\w+"),
        # this tile's offsets (the epilogue stores there): computed at its first step, carried
        re.compile(r"scf.if %\w+ -> \(i32, i32\)"), "arith.divsi", "} else {",
        re.compile(r"ttng.warp_group_dot %\w+, %\w+, %\w+ \{.*isAsync"),
        "ttng.warp_group_dot_wait", "pendings = 1",
        # the offsets of step t+2's tile, the same way, and its copies
        re.compile(r"scf.if %\w+ -> \(i32, i32\)"), "arith.divsi", "} else {",
        "ttng.barrier_expect", "ttng.async_tma_copy_global_to_local", "ttng.async_tma_copy_global_to_local",
        # the epilogue, at a tile's last K step: it waits for the dot, stores, and hands the
        # next tile a zero accumulator; the other branch the running one
        re.compile(r"scf.if %\w+ -> \(tensor<128x128xf32, #mma>\)"),
        "ttng.warp_group_dot_wait", "pendings = 0",
        re.compile(r"ttg.local_alloc %\w+ : \(tensor<128x128xf16, #mma>\)"),  # C straight from the accumulator
        "ttng.fence_async_shared", "ttng.async_tma_copy_local_to_global",
        re.compile(r"scf.yield %\w+ : tensor<128x128xf32, #mma>"), "} else {",
        re.compile(r"scf.yield %\w+ : tensor<128x128xf32, #mma>"),
        "arith.xori",  # the phase flips when the read slot wraps
        "scf.yield",
        "ttng.inval_barrier", "ttng.inval_barrier", "ttng.inval_barrier",
        "} else {",  # no tiles or K == 0: the nest as written, its K loop gone
        "scf.for",
    ])  # fmt: skip
    loop = ck.asm["ttgir"].split("scf.for")[1].split("scf.yield")[0]
    check_not(loop, ["ttg.async_copy_global_to_local", "ttg.local_load", "tt.load", "tt.trans"])
    fused = ck.asm["ttgir"].split("scf.for")[1].split("} else {\n      scf.for")[0]
    check_not(outside_branches(fused), ["arith.divui", "arith.divsi", "arith.remsi"])  # none per K step
    assert not re.search(r"arith.select .*tensor<128x128xf32", loop)  # no reset per K step
    check_not(ck.asm["ttgir"].split("} else {")[-1], ["ttng.warp_group_dot ", "ttng.async_tma_copy_global_to_local"])
    ptx = ck.asm["ptx"]
    assert "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16" in ptx
    # A's and B's tiles are one 128-byte panel each: two TMA copies per issue (2 + 1 sites)
    assert ptx.count("cp.async.bulk.tensor.2d.shared::cluster.global") == 2 * 3
    assert ck.metadata["spills"] == 0 and len(ck.asm["cubin"]) > 0


@pytest.mark.parametrize("config", [(128, 256, 64, 8, 3), (64, 128, 64, 4, 4), (128, 64, 32, 4, 4)],
                         ids=lambda c: "x".join(map(str, c)))  # fmt: skip
@pytest.mark.parametrize("dtype", [np.float16, "bfloat16"])
def test_matmul_configs_assemble_for_sm_90a(config, dtype):
    if dtype == "bfloat16":
        ml_dtypes = pytest.importorskip("ml_dtypes")
        dtype = ml_dtypes.bfloat16
    bm, bn, bk, warps, stages = config
    ck = compile_matmul(bm, bn, bk, warps, stages, dtype)
    assert "ttng.wait_barrier" in ck.asm["ttgir"] and "wgmma.mma_async" in ck.asm["ptx"]
    assert ck.metadata["spills"] == 0 and len(ck.asm["cubin"]) > 0


def test_kernel_parameters_pass_tensor_maps_as_bytes():
    fmt, offsets, total, _, extras = plan_parameters(["u64", "u32", "b8[128]"], ["*fp16", "i32"])
    assert offsets == [0, 8, 16] and total == 144 and fmt == "=Qi4x128s"
    assert extras == [bytes(128)]


def test_a_tensor_tma_cannot_read_is_refused_at_launch_with_what_to_change():
    d = TmaDescriptor("a_desc", ("arg", 0), (("arg", 1), ("arg", 2)), (("arg", 3), ("value", 1)),
                      (128, 64), 128, "zero", "load")  # fmt: skip
    maps = TensorMaps("k", [d], ["*fp16", "i32", "i32", "i32"])
    for args, problem in [
        ((0x1008, 64, 64, 64), "base address 0x1008 is not 16-byte aligned"),
        ((0x1000, 64, 60, 60), "stride 0 (60 elements, 120 bytes) is not a multiple of 16 bytes"),
    ]:
        with pytest.raises(ArgumentError, match=re.escape(problem)) as e:
            maps.encode(args, 0)
        assert 'target="sm_90"' in str(e.value)


def test_a_map_of_an_empty_tensor_points_at_a_page_of_its_fill(monkeypatch):
    """K = 0 (or no rows): reads give the fill and writes write nothing, through a one-element
    map of memory of the launcher's own: a page of zeros or of NaNs for loads (never written),
    another for stores (never read)."""
    from kernellab.backends.nvidia import driver, tensor_maps

    memory = {}
    monkeypatch.setattr(tensor_maps, "_EMPTY", tensor_maps._EmptyTensors())
    monkeypatch.setattr(driver, "call", lambda name, *a: memory.setdefault(name, []).append(a) or 0x7000)
    encoded = []
    monkeypatch.setattr(driver, "encode_tensor_map", lambda *a: encoded.append(a) or bytes(128))

    def descriptor(fill, access):
        return TmaDescriptor("d", ("arg", 0), (("arg", 1), ("arg", 2)), (("arg", 2), ("value", 1)),
                             (64, 64), 128, fill, access)  # fmt: skip

    maps = TensorMaps("k", [descriptor("zero", "load"), descriptor("nan", "load"), descriptor("zero", "store")],
                      ["*fp16", "i32", "i32"])  # fmt: skip
    maps.encode((0x1000, 128, 0), 0)
    assert [(a[1], a[2], a[3]) for a in encoded] == [
        (0x7000, (1, 1), (16, 1)), (0x7100, (1, 1), (16, 1)), (0x7200, (1, 1), (16, 1))
    ]
    assert memory["cuMemAlloc"] == [(768,)]  # once per device
    assert memory["cuMemsetD8"] == [(0x7000, 0, 256), (0x7100, 0xFF, 256)]
    encoded.clear()
    maps.encode((0x1000, 128, 64), 0)  # not empty: the tensor itself
    assert [(a[1], a[2]) for a in encoded][0] == (0x1000, (128, 64))


def test_an_mn_major_b_tile_takes_one_copy_per_swizzle_panel():
    a = np.zeros((256, 256), np.float16)
    args = (TensorDescriptor.from_tensor(a, [128, 64]), TensorDescriptor.from_tensor(a, [64, 128]),
            TensorDescriptor.from_tensor(a, [128, 128]), 256)  # fmt: skip
    ck = compiled(matmul_kn_kernel, args, {"BM": 128, "BN": 128, "BK": 64}, num_warps=4, num_stages=3)
    check(ck.asm["ttgir"], ["ttg.local_alloc : () -> !ttg.memdesc<4x64x128xf16, #shared, #smem, mutable>",
                            "ttng.wait_barrier", "ttng.warp_group_dot"])  # fmt: skip
    b = next(TmaDescriptor.of(d) for d in ck.metadata["tma_descriptors"] if d["param"] == "b_desc")
    assert b.box == (64, 64) and b.swizzle == 128  # one 128-byte panel of the 256-byte rows
    # A one copy, B two, per issue: 2 prologue issues and the refill
    assert ck.asm["ptx"].count("cp.async.bulk.tensor.2d.shared::cluster.global") == 3 * 3
    assert ck.metadata["spills"] == 0 and len(ck.asm["cubin"]) > 0


def test_the_launcher_encodes_each_tensor_map_once_and_packs_it_after_the_arguments(monkeypatch):
    from kernellab.backends.nvidia import driver
    from kernellab.backends.nvidia.backend import restore
    from kernellab.backends.nvidia.launcher import CudaLauncher

    ck = compiled(scale_tiles_kernel, descriptors((64, 64), [32, 64], padding="nan"), {"BM": 32, "BN": 64})
    calls = []

    def encode(*args):
        calls.append(args)
        return bytes([len(calls)]) * 128

    monkeypatch.setattr(driver, "encode_tensor_map", encode)
    launcher = CudaLauncher(restore(ck.asm, ck.metadata))
    args = (0x10000, 64, 96, 96, 0x20000, 64, 96, 96)  # x and y: 64 x 96 fp16, rows 96 apart
    maps = launcher._extra_values(args, (1, 1, 1), 0, 0)
    assert launcher._extra_values(args, (1, 1, 1), 0, 0) == maps and len(calls) == 2  # cached per base, shape, strides
    assert calls[0] == ("FLOAT16", 0x10000, (64, 96), (96, 1), 2, (32, 64), 128, True)
    assert calls[1] == ("FLOAT16", 0x20000, (64, 96), (96, 1), 2, (32, 64), 128, False)
    packed = launcher._struct.pack(*args, *maps)
    assert packed[-256:] == bytes([1]) * 128 + bytes([2]) * 128
    launcher._extra_values((0x30000, *args[1:]), (1, 1, 1), 0, 0)  # another tensor: encoded anew
    assert len(calls) == 3


def test_the_tma_ttgir_parses_back_and_resumes_to_the_same_tensor_maps():
    ck = compile_matmul()
    ttgir = ck.asm["ttgir"]
    assert "ttng.barrier_expect %" in ttgir and re.search(r"ttng.init_barrier %\w+, 1 : !ttg.memdesc", ttgir)
    assert print_module(parse_module(ttgir)) == ttgir
    resumed = kl.compile(ttgir, target="sm_90a")
    assert resumed.metadata["tma_descriptors"] == ck.metadata["tma_descriptors"]


def _tma_element_offset(r: int, c: int, rows: int, swizzle: int, bits: int, s: int = 0, cols: int = 0) -> int:
    """Where a TMA box copy with `swizzle` (bytes) puts tile element (r, c) of batch slice `s`
    (slices of rows x cols one after another): one box per slice and swizzle-wide panel of
    columns, boxes one after another, each rows x swizzle bytes, and the 16-byte chunk bits of
    each address XORed with its bits 7 and up (the hardware's rule, on the whole address)."""
    nbytes, width = bits // 8, swizzle * 8 // bits
    byte = s * rows * cols * nbytes + (c // width) * rows * swizzle + r * swizzle + (c % width) * nbytes
    chunk_bits = (swizzle // 16).bit_length() - 1
    byte ^= ((byte >> 7) & ((1 << chunk_bits) - 1)) << 4
    return byte // nbytes


@pytest.mark.parametrize("swizzle", [32, 64, 128])
@pytest.mark.parametrize("bits", [8, 16, 32])
@pytest.mark.parametrize("transposed", [False, True])
def test_tma_boxes_write_the_nvmma_layout_wgmma_reads(swizzle, bits, transposed):
    """The buffer the TMA fills is the one the layout core (and so wgmma's descriptors and
    ttg.local_load) reads: every element lands at the offset nvmma_shared gives it."""
    from kernellab.layouts import nvmma_shared

    rows, cols = 16, 4 * swizzle * 8 // bits  # four panels
    shape = [cols, rows] if transposed else [rows, cols]
    layout = nvmma_shared(swizzle, bits, transposed, shape)
    for r in range(rows):
        for c in range(cols):
            got = layout.apply(offset=_tma_element_offset(r, c, rows, swizzle, bits))
            assert got == ((c, r) if transposed else (r, c)), (r, c)


@pytest.mark.parametrize("swizzle", [32, 64, 128])
@pytest.mark.parametrize("bits", [8, 16, 32])
def test_3d_tma_boxes_stack_the_batch_slices_as_the_layout_does(swizzle, bits):
    """A 3-D tile takes one box per batch slice and panel; the slices follow each other whole,
    which is the 3-D nvmma_shared layout (leading dims stack 2-D tiles)."""
    from kernellab.layouts import nvmma_shared

    batch, rows, cols = 4, 8, 2 * swizzle * 8 // bits  # two panels, 8-row slices
    layout = nvmma_shared(swizzle, bits, False, [batch, rows, cols])
    for s in range(batch):
        for r in range(rows):
            for c in range(cols):
                offset = _tma_element_offset(r, c, rows, swizzle, bits, s, cols)
                assert layout.apply(offset=offset) == (s, r, c), (s, r, c)


@kl.jit
def tma_tiles_3d_kernel(x_desc, y_desc, B0: tl.constexpr, B1: tl.constexpr, B2: tl.constexpr):
    """Tiles straddling every edge of a 3-D tensor (the innermost offset a multiple of 8
    elements: a box starts on 16 bytes)."""
    i = tl.program_id(0) * B0 - 1
    j = tl.program_id(1) * B1 - 3
    k = tl.program_id(2) * B2 - 8
    y_desc.store([i, j, k], x_desc.load([i, j, k]) * 2 + 1)


@kl.jit
def batched_tiles_kernel(x_ptr, y_ptr, B, M, K, B0: tl.constexpr, BM: tl.constexpr, BK: tl.constexpr):
    """3-D device-side descriptors over [B, M, K] (a batch stride the kernel computes: its maps
    are built in the kernel), tiles straddling every edge."""
    x_desc = tl.make_tensor_descriptor(x_ptr, [B, M, K], [M * K, K, 1], [B0, BM, BK])
    y_desc = tl.make_tensor_descriptor(y_ptr, [B, M, K], [M * K, K, 1], [B0, BM, BK])
    i = tl.program_id(0) * B0 - 1
    j = tl.program_id(1) * BM - 3
    k = tl.program_id(2) * BK - 8
    y_desc.store([i, j, k], x_desc.load([i, j, k]) * 2 + 1)


@pytest.mark.parametrize(("block", "copies"), [([1, 16, 64], 1), ([2, 16, 64], 2), ([2, 16, 128], 4), ([4, 8, 32], 4)])
def test_3d_tiles_are_tma_copies_one_box_per_slice_and_panel(block, copies):
    x = np.zeros((5, 37, 72), np.float16)
    args = (TensorDescriptor.from_tensor(x, block), TensorDescriptor.from_tensor(x, block))
    ck = compiled(tma_tiles_3d_kernel, args, {"B0": block[0], "B1": block[1], "B2": block[2]})
    assert record(ck, "lower_descriptors").summary == "2× kept, 1× guard-store"
    shape = "x".join(map(str, block))
    check(ck.asm["ttgir"], [f"ttg.local_alloc : () -> !ttg.memdesc<{shape}xf16, #shared, #smem, mutable>",
                            "ttng.async_tma_copy_global_to_local", "ttg.local_load",
                            "ttng.async_tma_copy_local_to_global"])  # fmt: skip
    load = TmaDescriptor.of(ck.metadata["tma_descriptors"][0])
    assert load.box == (1, block[1], min(block[2], 64)) and load.shape == (("arg", 1), ("arg", 2), ("arg", 3))
    ptx = ck.asm["ptx"]
    assert ptx.count("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes") == copies
    assert ptx.count("cp.async.bulk.tensor.3d.global.shared::cta.bulk_group") == copies
    assert len(ck.asm["cubin"]) > 0


def test_3d_tiles_tma_cannot_take_stay_plain_and_say_why():
    x = np.zeros((5, 37, 72), np.float16)
    block = [2, 4, 64]
    args = (TensorDescriptor.from_tensor(x, block), TensorDescriptor.from_tensor(x, block))
    ck = compiled(tma_tiles_3d_kernel, args, {"B0": 2, "B1": 4, "B2": 64})
    assert "the batch slices of a 3-D tile start on 8-row boundaries" in record(ck, "lower_descriptors").summary
    assert "ttng." not in ck.asm["ttgir"]


@pytest.mark.parametrize(("dtype", "number"), [(np.float16, 6), ("bfloat16", 10), (np.float32, 7), (np.float64, 9)])
def test_a_built_map_numbers_its_element_type_as_ptx_does(dtype, number):
    """tensormap.replace's element types are PTX's table, not the driver's enum (bf16 10, f64 9)."""
    if dtype == "bfloat16":
        dtype = pytest.importorskip("ml_dtypes").bfloat16
    a = np.zeros((64, 64), dtype)
    ck = compiled(computed_descriptor_kernel, (a, 64, 64), {"BM": 32, "BN": 64})
    assert re.search(rf"elemtype.shared::cta.b1024.b32 \[%rd\d+\], {number};", ck.asm["ptx"])
    assert len(ck.asm["cubin"]) > 0


def test_a_3d_map_the_kernel_builds():
    x = np.zeros((3, 40, 64), np.float16)
    ck = compiled(batched_tiles_kernel, (x, x, 3, 40, 64), {"B0": 2, "BM": 16, "BK": 64})
    assert "ttng.tensormap_create" in ck.asm["ttgir"] and "box = array<i32: 1, 16, 64>" in ck.asm["ttgir"]
    check(ck.asm["ptx"], [
        re.compile(r"tensormap.replace.tile.rank.shared::cta.b1024.b32 \[%rd\d+\], 2;"),
        re.compile(r"box_dim.shared::cta.b1024.b32 \[%rd\d+\], 2, 1;"),  # one batch slice a box
        re.compile(r"global_stride.shared::cta.b1024.b64 \[%rd\d+\], 1, %rd\d+;"),
        "cp.async.bulk.tensor.3d.shared::cluster.global", "cp.async.bulk.tensor.3d.shared::cluster.global",
    ])  # fmt: skip
    assert len(ck.asm["cubin"]) > 0


def test_block_pointers_checked_on_every_dim_are_descriptor_accesses():
    from tests.language.test_tiles import block_pointer_matmul_kernel, copy_tiles_kernel

    a = np.zeros((256, 256), np.float16)
    c = np.zeros((256, 256), np.float32)
    args = (a, a, c, 256, 256, 256, 256, 1, 256, 1, 256, 1)
    ck = compiled(block_pointer_matmul_kernel, args, {"BM": 64, "BN": 64, "BK": 32}, num_warps=4)
    # the loop carries the block pointers; canonicalize forwards the fields it never changes
    assert "forward-unchanged-iter-arg" in record(ck, "canonicalize").summary
    assert record(ck, "lower_descriptors").summary == "3× kept, 1× guard-store"
    check(ck.asm["ttgir"], ["scf.for", "ttng.wait_barrier", "ttng.warp_group_dot", "scf.yield",
                            "ttng.async_tma_copy_local_to_global"])  # fmt: skip
    # checked on one dim only: masked pointer accesses, as before
    x = np.zeros((64, 64), np.float32)
    meta = {"BM": 16, "BN": 32, "CHECK": (0,), "PADDING": ""}
    partial = compiled(copy_tiles_kernel, (x, x, 64, 64, 64, 1), meta)
    check_not(partial.asm["ttir"], ["tt.descriptor_"])


@kl.jit
def corner_store_kernel(x_desc, y_desc, i, BM: tl.constexpr, BN: tl.constexpr):
    """A store at a row the launch gives (maybe negative) and one at a program id."""
    tile = x_desc.load([0, 0])
    y_desc.store([i, 0], tile)
    y_desc.store([tl.program_id(0), 0], tile)


def test_a_tma_store_runs_only_at_non_negative_offsets():
    """TMA faults on a negative store coordinate (Hopper: an illegal instruction, Triton's
    stores too), so a kept store whose offsets are not known to be >= 0 runs under scf.if, with
    its masked form in the other branch; a store at a program id needs no guard (nor one at a
    constant: the guard folds away)."""
    ck = compiled(corner_store_kernel, (*descriptors((64, 64), [32, 64]), -3), {"BM": 32, "BN": 64})
    assert record(ck, "lower_descriptors").summary == "3× kept, 1× guard-store"
    ttgir = ck.asm["ttgir"]
    guarded = ttgir[ttgir.index("scf.if"):]
    assert "ttng.async_tma_copy_local_to_global" in guarded and "} else {" in guarded
    assert "tt.store" in guarded[guarded.index("} else {"):]
    assert ttgir.count("ttng.async_tma_copy_local_to_global") == 2
    assert len(ck.asm["cubin"]) > 0


@kl.jit
def column_shift_kernel(x_desc, y_ptr, J: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    tile = x_desc.load([tl.program_id(0) * BM, tl.program_id(1) * BN + J])
    offs = tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :]
    tl.store(y_ptr + offs, tile)


@pytest.mark.parametrize(("shift", "kept"), [(5, False), (8, True)])
def test_a_box_must_start_on_16_bytes(shift, kept):
    """A TMA box starting off a 16-byte boundary faults (Hopper: an illegal instruction), so a
    load whose innermost offset AxisInfo cannot prove a multiple of 16 bytes (8 fp16 columns)
    stays a masked load, and the record says why."""
    x, _ = descriptors((64, 128), [32, 64])
    ck = compiled(column_shift_kernel, (x, np.zeros(32 * 64, np.float16)), {"J": shift, "BM": 32, "BN": 64})
    summary = record(ck, "lower_descriptors").summary
    if kept:
        assert summary == "1× kept" and "cp.async.bulk.tensor.2d" in ck.asm["ptx"]
    else:
        assert "innermost offset is not known to be a multiple of 16 bytes" in summary
        assert "ttng." not in ck.asm["ttgir"]
