"""Triton's tutorial 09 (persistent matmul) as the tutorial writes it, only the imports changed.

Every matmul the tutorial has: the naive autotuned kernel, the persistent one (a grid of
`NUM_SMS` programs looping over tiles with `tl.range(..., flatten=True)`), the tensor-descriptor
kernels fed with host `TensorDescriptor`s (plain and persistent, with `warp_specialize` and the
split epilogue), and the persistent kernel that makes its descriptors on the device
(`tl.make_tensor_descriptor` after `triton.set_allocator`, configs pruned by `FLATTEN`). Each is
validated as the tutorial does (against the naive kernel) and against float64. Then the
tutorial's profiling run: `proton.start(name, hook="triton")`, scopes with `bytes` and `flops16`
metrics, activate/deactivate around the repetitions, `finalize`, and the profile file read back
with `triton.profiler.viewer`'s `parse` and `print_tree`.

The device is the one `driver.active` gives. Without a GPU, `torch.cuda` cannot answer, so the
tutorial's capability checks read the interpreter's target (sm_90) and its SM count
`driver.active.utils.get_device_properties`; the sizes shrink and the configs are small ones
(the tutorial's 128x256 tiles would take minutes on the interpreter); on the GPU they are the
tutorial's tiles with one stage count. Triton's cuBLAS binding
(`triton._C.libtriton.nvidia.cublas`) is part of Triton's C++ extension, which kernellab does not
have: the cuBLAS line calls torch's matmul, which runs cuBLAS on the GPU.
"""

import itertools
import json
from contextlib import contextmanager
from typing import Optional

import numpy as np
import pytest

import kernellab as triton
import kernellab.language as tl
import kernellab.profiler as proton
from kernellab.tools.tensor_descriptor import TensorDescriptor

torch = pytest.importorskip("torch")

DEVICE = triton.runtime.driver.active.get_active_torch_device()
GPU = [pytest.mark.gpu] if DEVICE.type == "cuda" else []
ON_CPU = DEVICE.type == "cpu"


def _capability() -> tuple[int, int]:
    if DEVICE.type == "cuda":
        return torch.cuda.get_device_capability()
    arch = triton.runtime.driver.active.get_current_target().arch
    return arch // 10, arch % 10


def _num_sms() -> int:
    if DEVICE.type == "cuda":
        return torch.cuda.get_device_properties("cuda").multi_processor_count
    return triton.runtime.driver.active.utils.get_device_properties(0)["multiprocessor_count"]


def is_cuda():
    return triton.runtime.driver.active.get_current_target().backend == "cuda"


def is_hip():
    return triton.runtime.driver.active.get_current_target().backend == "hip"


class _TorchBlas:
    """The tutorial's `device_blas.matmul(a, b, c)`: c = a @ b.T, here through torch (cuBLAS;
    fp8 operands, which torch.matmul refuses, are widened to fp16 first: exact)."""

    def matmul(self, a, b, c):
        if a.element_size() == 1:
            a, b = a.to(torch.float16), b.to(torch.float16)
        c.copy_(torch.matmul(a, b.T))


device_blas = _TorchBlas() if DEVICE.type == "cuda" else None


def device_blas_name():
    return "cuBLAS" if is_cuda() else "hipBLAS"


def supports_tma():
    return is_cuda() and _capability()[0] >= 9


def is_hopper():
    return _capability()[0] == 9


def supports_ws():
    return is_cuda() and _capability()[0] >= 9


def _matmul_launch_metadata(grid, kernel, args):
    ret = {}
    M, N, K, WS = args["M"], args["N"], args["K"], args.get("WARP_SPECIALIZE", False)
    ws_str = "_ws" if WS else ""
    ret["name"] = f"{kernel.name}{ws_str} [M={M}, N={N}, K={K}]"
    if "c_ptr" in args:
        bytes_per_elem = args["c_ptr"].element_size()
    else:
        bytes_per_elem = 1 if args["FP8_OUTPUT"] else 2
    ret[f"flops{bytes_per_elem * 8}"] = 2.0 * M * N * K
    ret["bytes"] = bytes_per_elem * (M * K + N * K + M * N)
    return ret


HAS_TENSOR_DESC = supports_tma() and hasattr(tl, "make_tensor_descriptor")
HAS_HOST_TENSOR_DESC = supports_tma() and hasattr(triton.tools.tensor_descriptor, "TensorDescriptor")
HAS_WARP_SPECIALIZE = supports_ws() and HAS_TENSOR_DESC

# The tutorial's tile shapes and warp counts on the GPU, with one stage count of its 2, 3, 4
# (every config compiles before it is timed: 48 configs per descriptor kernel and key would cost
# minutes); small tiles on the interpreter, two of each kind.
BMS, BNS, BKS, STAGES, WARPS = ([32], [32], [16, 32], [2], [4]) if ON_CPU else ([128], [128, 256], [64, 128], [3], [4, 8])


def matmul_get_configs(pre_hook=None):
    return [
        triton.Config({"BLOCK_SIZE_M": BM, "BLOCK_SIZE_N": BN, "BLOCK_SIZE_K": BK, "GROUP_SIZE_M": 8}, num_stages=s,
                      num_warps=w, pre_hook=pre_hook)
        for BM in BMS
        for BN in BNS
        for BK in BKS
        for s in STAGES
        for w in WARPS
    ]  # fmt: skip


@triton.autotune(
    configs=matmul_get_configs(),
    key=["M", "N", "K"],
)
@triton.jit(launch_metadata=_matmul_launch_metadata)
def matmul_kernel(a_ptr, b_ptr, c_ptr,
                  M, N, K,
                  stride_am, stride_ak,
                  stride_bk, stride_bn,
                  stride_cm, stride_cn,
                  BLOCK_SIZE_M: tl.constexpr,
                  BLOCK_SIZE_N: tl.constexpr,
                  BLOCK_SIZE_K: tl.constexpr,
                  GROUP_SIZE_M: tl.constexpr,
                  ):  # fmt: skip
    pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_SIZE_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
    pid_m = first_pid_m + (pid % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m

    start_m = pid_m * BLOCK_SIZE_M
    start_n = pid_n * BLOCK_SIZE_N

    offs_am = start_m + tl.arange(0, BLOCK_SIZE_M)
    offs_bn = start_n + tl.arange(0, BLOCK_SIZE_N)
    offs_am = tl.where(offs_am < M, offs_am, 0)
    offs_bn = tl.where(offs_bn < N, offs_bn, 0)

    offs_am = tl.max_contiguous(tl.multiple_of(offs_am, BLOCK_SIZE_M), BLOCK_SIZE_M)
    offs_bn = tl.max_contiguous(tl.multiple_of(offs_bn, BLOCK_SIZE_N), BLOCK_SIZE_N)
    offs_k = tl.arange(0, BLOCK_SIZE_K)
    a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)

    accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)

    for k in range(0, tl.cdiv(K, BLOCK_SIZE_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_SIZE_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_SIZE_K, other=0.0)
        accumulator = tl.dot(a, b, accumulator)
        a_ptrs += BLOCK_SIZE_K * stride_ak
        b_ptrs += BLOCK_SIZE_K * stride_bk

    if (c_ptr.dtype.element_ty == tl.float8e4nv):
        c = accumulator.to(tl.float8e4nv)
    else:
        c = accumulator.to(tl.float16)

    offs_cm = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    offs_cn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
    tl.store(c_ptrs, c, mask=c_mask)


def matmul(a, b):
    assert a.shape[1] == b.shape[0], "Incompatible dimensions"
    assert a.dtype == b.dtype, "Incompatible dtypes"
    M, K = a.shape
    K, N = b.shape
    dtype = a.dtype

    c = torch.empty((M, N), device=a.device, dtype=dtype)
    # one program per output tile
    grid = lambda META: (triton.cdiv(M, META["BLOCK_SIZE_M"]) * triton.cdiv(N, META["BLOCK_SIZE_N"]), )  # noqa: E731
    matmul_kernel[grid](
        a, b, c,
        M, N, K,
        a.stride(0), a.stride(1),
        b.stride(0), b.stride(1),
        c.stride(0), c.stride(1),
    )  # fmt: skip
    return c


def matmul_tma_set_block_size_hook(nargs):
    EPILOGUE_SUBTILE = nargs.get("EPILOGUE_SUBTILE", False)
    BLOCK_M = nargs["BLOCK_SIZE_M"]
    BLOCK_N = nargs["BLOCK_SIZE_N"]
    BLOCK_K = nargs["BLOCK_SIZE_K"]
    nargs["a_desc"].block_shape = [BLOCK_M, BLOCK_K]
    nargs["b_desc"].block_shape = [BLOCK_N, BLOCK_K]
    if EPILOGUE_SUBTILE:
        nargs["c_desc"].block_shape = [BLOCK_M, BLOCK_N // 2]
    else:
        nargs["c_desc"].block_shape = [BLOCK_M, BLOCK_N]


@triton.autotune(
    configs=matmul_get_configs(pre_hook=matmul_tma_set_block_size_hook),
    key=["M", "N", "K", "WARP_SPECIALIZE"],
)
@triton.jit(launch_metadata=_matmul_launch_metadata)
def matmul_kernel_tma(a_desc, b_desc, c_desc,
                      M, N, K,
                      BLOCK_SIZE_M: tl.constexpr,
                      BLOCK_SIZE_N: tl.constexpr,
                      BLOCK_SIZE_K: tl.constexpr,
                      GROUP_SIZE_M: tl.constexpr,
                      FP8_OUTPUT: tl.constexpr,
                      WARP_SPECIALIZE: tl.constexpr,
                      ):  # fmt: skip
    dtype = tl.float8e4nv if FP8_OUTPUT else tl.float16

    pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_SIZE_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
    pid_m = first_pid_m + (pid % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m

    k_tiles = tl.cdiv(K, BLOCK_SIZE_K)

    offs_am = pid_m * BLOCK_SIZE_M
    offs_bn = pid_n * BLOCK_SIZE_N

    accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)

    for k in tl.range(k_tiles, warp_specialize=WARP_SPECIALIZE):
        offs_k = k * BLOCK_SIZE_K
        a = a_desc.load([offs_am, offs_k])
        b = b_desc.load([offs_bn, offs_k])
        accumulator = tl.dot(a, b.T, accumulator)

    c = accumulator.to(dtype)

    offs_cm = pid_m * BLOCK_SIZE_M
    offs_cn = pid_n * BLOCK_SIZE_N
    c_desc.store([offs_cm, offs_cn], c)


def matmul_tma(a, b, warp_specialize: bool):
    assert a.shape[1] == b.shape[1], "Incompatible dimensions"  # b is transposed
    assert a.dtype == b.dtype, "Incompatible dtypes"

    M, K = a.shape
    N, K = b.shape
    dtype = a.dtype

    c = torch.empty((M, N), device=a.device, dtype=dtype)

    # a placeholder block, replaced by the config's in the pre_hook
    dummy_block = [1, 1]
    a_desc = TensorDescriptor.from_tensor(a, dummy_block)
    b_desc = TensorDescriptor.from_tensor(b, dummy_block)
    c_desc = TensorDescriptor.from_tensor(c, dummy_block)

    def grid(META):
        BLOCK_M = META["BLOCK_SIZE_M"]
        BLOCK_N = META["BLOCK_SIZE_N"]
        return (triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N), )

    matmul_kernel_tma[grid](
        a_desc, b_desc, c_desc,
        M, N, K,
        FP8_OUTPUT=dtype == torch.float8_e4m3fn,
        WARP_SPECIALIZE=warp_specialize,
    )  # fmt: skip
    return c


@triton.jit
def _compute_pid(tile_id, num_pid_in_group, num_pid_m, GROUP_SIZE_M, NUM_SMS):
    group_id = tile_id // num_pid_in_group
    first_pid_m = group_id * GROUP_SIZE_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
    pid_m = first_pid_m + (tile_id % group_size_m)
    pid_n = (tile_id % num_pid_in_group) // group_size_m
    return pid_m, pid_n


@triton.autotune(
    configs=matmul_get_configs(),
    key=["M", "N", "K"],
)
@triton.jit(launch_metadata=_matmul_launch_metadata)
def matmul_kernel_persistent(a_ptr, b_ptr, c_ptr,
                             M, N, K,
                             stride_am, stride_ak,
                             stride_bk, stride_bn,
                             stride_cm, stride_cn,
                             BLOCK_SIZE_M: tl.constexpr,
                             BLOCK_SIZE_N: tl.constexpr,
                             BLOCK_SIZE_K: tl.constexpr,
                             GROUP_SIZE_M: tl.constexpr,
                             NUM_SMS: tl.constexpr,
                             ):  # fmt: skip
    start_pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    k_tiles = tl.cdiv(K, BLOCK_SIZE_K)
    num_tiles = num_pid_m * num_pid_n

    # the epilogue's tile counter, kept apart from the loop's as the tutorial does
    tile_id_c = start_pid - NUM_SMS

    offs_k_for_mask = tl.arange(0, BLOCK_SIZE_K)
    num_pid_in_group = GROUP_SIZE_M * num_pid_n

    for tile_id in tl.range(start_pid, num_tiles, NUM_SMS, flatten=True):
        pid_m, pid_n = _compute_pid(tile_id, num_pid_in_group, num_pid_m, GROUP_SIZE_M, NUM_SMS)
        start_m = pid_m * BLOCK_SIZE_M
        start_n = pid_n * BLOCK_SIZE_N
        offs_am = start_m + tl.arange(0, BLOCK_SIZE_M)
        offs_bn = start_n + tl.arange(0, BLOCK_SIZE_N)
        offs_am = tl.where(offs_am < M, offs_am, 0)
        offs_bn = tl.where(offs_bn < N, offs_bn, 0)
        offs_am = tl.max_contiguous(tl.multiple_of(offs_am, BLOCK_SIZE_M), BLOCK_SIZE_M)
        offs_bn = tl.max_contiguous(tl.multiple_of(offs_bn, BLOCK_SIZE_N), BLOCK_SIZE_N)

        accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
        for ki in range(k_tiles):
            offs_k = ki * BLOCK_SIZE_K + tl.arange(0, BLOCK_SIZE_K)
            a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
            b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)

            a = tl.load(a_ptrs, mask=offs_k_for_mask[None, :] < K - ki * BLOCK_SIZE_K, other=0.0)
            b = tl.load(b_ptrs, mask=offs_k_for_mask[:, None] < K - ki * BLOCK_SIZE_K, other=0.0)
            accumulator = tl.dot(a, b, accumulator)

        tile_id_c += NUM_SMS
        pid_m, pid_n = _compute_pid(tile_id_c, num_pid_in_group, num_pid_m, GROUP_SIZE_M, NUM_SMS)
        offs_cm = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
        offs_cn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
        c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
        c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
        if (c_ptr.dtype.element_ty == tl.float8e4nv):
            c = accumulator.to(tl.float8e4nv)
        else:
            c = accumulator.to(tl.float16)
        tl.store(c_ptrs, c, mask=c_mask)


def matmul_persistent(a, b):
    assert a.shape[1] == b.shape[0], "Incompatible dimensions"
    assert a.dtype == b.dtype, "Incompatible dtypes"
    NUM_SMS = _num_sms()
    M, K = a.shape
    K, N = b.shape
    dtype = a.dtype
    c = torch.empty((M, N), device=a.device, dtype=dtype)
    # at most one program per SM, each looping over its tiles
    grid = lambda META: (min(NUM_SMS, triton.cdiv(M, META["BLOCK_SIZE_M"]) * triton.cdiv(N, META["BLOCK_SIZE_N"])), )  # noqa: E731
    matmul_kernel_persistent[grid](
        a, b, c,
        M, N, K,
        a.stride(0), a.stride(1),
        b.stride(0), b.stride(1),
        c.stride(0), c.stride(1),
        NUM_SMS=NUM_SMS,
    )  # fmt: skip
    return c


def matmul_tma_persistent_get_configs(pre_hook=None):
    return [
        triton.Config(
            {"BLOCK_SIZE_M": BM, "BLOCK_SIZE_N": BN, "BLOCK_SIZE_K": BK, "GROUP_SIZE_M": 8, "EPILOGUE_SUBTILE": SUBTILE},
            num_stages=s, num_warps=w, pre_hook=pre_hook)
        for BM in BMS
        for BN in BNS
        for BK in BKS
        for s in STAGES
        for w in WARPS
        for SUBTILE in [True, False]
    ]  # fmt: skip


@triton.autotune(
    configs=matmul_tma_persistent_get_configs(pre_hook=matmul_tma_set_block_size_hook),
    key=["M", "N", "K", "WARP_SPECIALIZE"],
)
@triton.jit(launch_metadata=_matmul_launch_metadata)
def matmul_kernel_tma_persistent(a_desc, b_desc, c_desc,
                                 M, N, K,
                                 BLOCK_SIZE_M: tl.constexpr,
                                 BLOCK_SIZE_N: tl.constexpr,
                                 BLOCK_SIZE_K: tl.constexpr,
                                 GROUP_SIZE_M: tl.constexpr,
                                 FP8_OUTPUT: tl.constexpr,
                                 EPILOGUE_SUBTILE: tl.constexpr,
                                 NUM_SMS: tl.constexpr,
                                 WARP_SPECIALIZE: tl.constexpr,
                                 ):  # fmt: skip
    dtype = tl.float8e4nv if FP8_OUTPUT else tl.float16
    start_pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    k_tiles = tl.cdiv(K, BLOCK_SIZE_K)
    num_tiles = num_pid_m * num_pid_n

    tile_id_c = start_pid - NUM_SMS
    num_pid_in_group = GROUP_SIZE_M * num_pid_n

    for tile_id in tl.range(start_pid, num_tiles, NUM_SMS, flatten=True, warp_specialize=WARP_SPECIALIZE):
        pid_m, pid_n = _compute_pid(tile_id, num_pid_in_group, num_pid_m, GROUP_SIZE_M, NUM_SMS)
        offs_am = pid_m * BLOCK_SIZE_M
        offs_bn = pid_n * BLOCK_SIZE_N

        accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
        for ki in range(k_tiles):
            offs_k = ki * BLOCK_SIZE_K
            a = a_desc.load([offs_am, offs_k])
            b = b_desc.load([offs_bn, offs_k])
            accumulator = tl.dot(a, b.T, accumulator)

        tile_id_c += NUM_SMS
        pid_m, pid_n = _compute_pid(tile_id_c, num_pid_in_group, num_pid_m, GROUP_SIZE_M, NUM_SMS)
        offs_am_c = pid_m * BLOCK_SIZE_M
        offs_bn_c = pid_n * BLOCK_SIZE_N

        # the split epilogue: two stores of half the tile's width
        if EPILOGUE_SUBTILE:
            acc = tl.reshape(accumulator, (BLOCK_SIZE_M, 2, BLOCK_SIZE_N // 2))
            acc = tl.permute(acc, (0, 2, 1))
            acc0, acc1 = tl.split(acc)
            c0 = acc0.to(dtype)
            c_desc.store([offs_am_c, offs_bn_c], c0)
            c1 = acc1.to(dtype)
            c_desc.store([offs_am_c, offs_bn_c + BLOCK_SIZE_N // 2], c1)
        else:
            accumulator = accumulator.to(dtype)
            c_desc.store([offs_am_c, offs_bn_c], accumulator)


def matmul_tma_persistent(a, b, warp_specialize: bool):
    assert a.shape[1] == b.shape[1], "Incompatible dimensions"  # b is transposed
    assert a.dtype == b.dtype, "Incompatible dtypes"

    M, K = a.shape
    N, K = b.shape
    dtype = a.dtype

    c = torch.empty((M, N), device=a.device, dtype=dtype)

    NUM_SMS = _num_sms()

    dummy_block = [1, 1]
    a_desc = TensorDescriptor.from_tensor(a, dummy_block)
    b_desc = TensorDescriptor.from_tensor(b, dummy_block)
    c_desc = TensorDescriptor.from_tensor(c, dummy_block)

    def grid(META):
        BLOCK_M = META["BLOCK_SIZE_M"]
        BLOCK_N = META["BLOCK_SIZE_N"]
        return (min(
            NUM_SMS,
            triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N),
        ), )

    matmul_kernel_tma_persistent[grid](
        a_desc, b_desc, c_desc,
        M, N, K,
        FP8_OUTPUT=dtype == torch.float8_e4m3fn,
        NUM_SMS=NUM_SMS,
        WARP_SPECIALIZE=warp_specialize,
    )  # fmt: skip
    return c


def prune_invalid_configs(configs, named_args, **kwargs):
    FLATTEN = kwargs["FLATTEN"]
    # the split epilogue only with a flattened loop
    return [conf for conf in configs if not (conf.kwargs.get("EPILOGUE_SUBTILE", True) and FLATTEN is False)]


@triton.autotune(configs=matmul_tma_persistent_get_configs(), key=["M", "N", "K", "WARP_SPECIALIZE", "FLATTEN"],
                 prune_configs_by={"early_config_prune": prune_invalid_configs})
@triton.jit(launch_metadata=_matmul_launch_metadata)
def matmul_kernel_descriptor_persistent(
    a_ptr,
    b_ptr,
    c_ptr,
    M,
    N,
    K,
    BLOCK_SIZE_M: tl.constexpr,
    BLOCK_SIZE_N: tl.constexpr,
    BLOCK_SIZE_K: tl.constexpr,
    GROUP_SIZE_M: tl.constexpr,
    EPILOGUE_SUBTILE: tl.constexpr,
    NUM_SMS: tl.constexpr,
    WARP_SPECIALIZE: tl.constexpr,
    FLATTEN: tl.constexpr,
):
    # descriptors made on the device from plain pointers
    dtype = c_ptr.dtype.element_ty
    start_pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    k_tiles = tl.cdiv(K, BLOCK_SIZE_K)
    num_tiles = num_pid_m * num_pid_n

    a_desc = tl.make_tensor_descriptor(
        a_ptr,
        shape=[M, K],
        strides=[K, 1],
        block_shape=[BLOCK_SIZE_M, BLOCK_SIZE_K],
    )
    b_desc = tl.make_tensor_descriptor(
        b_ptr,
        shape=[N, K],
        strides=[K, 1],
        block_shape=[BLOCK_SIZE_N, BLOCK_SIZE_K],
    )
    c_desc = tl.make_tensor_descriptor(
        c_ptr,
        shape=[M, N],
        strides=[N, 1],
        block_shape=[BLOCK_SIZE_M, BLOCK_SIZE_N if not EPILOGUE_SUBTILE else BLOCK_SIZE_N // 2],
    )

    tile_id_c = start_pid - NUM_SMS
    num_pid_in_group = GROUP_SIZE_M * num_pid_n

    for tile_id in tl.range(start_pid, num_tiles, NUM_SMS, flatten=FLATTEN, warp_specialize=WARP_SPECIALIZE):
        pid_m, pid_n = _compute_pid(tile_id, num_pid_in_group, num_pid_m, GROUP_SIZE_M, NUM_SMS)
        offs_am = pid_m * BLOCK_SIZE_M
        offs_bn = pid_n * BLOCK_SIZE_N

        accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
        for ki in range(k_tiles):
            offs_k = ki * BLOCK_SIZE_K
            a = a_desc.load([offs_am, offs_k])
            b = b_desc.load([offs_bn, offs_k])
            accumulator = tl.dot(a, b.T, accumulator)

        tile_id_c += NUM_SMS
        pid_m, pid_n = _compute_pid(tile_id_c, num_pid_in_group, num_pid_m, GROUP_SIZE_M, NUM_SMS)
        offs_cm = pid_m * BLOCK_SIZE_M
        offs_cn = pid_n * BLOCK_SIZE_N

        if EPILOGUE_SUBTILE:
            acc = tl.reshape(accumulator, (BLOCK_SIZE_M, 2, BLOCK_SIZE_N // 2))
            acc = tl.permute(acc, (0, 2, 1))
            acc0, acc1 = tl.split(acc)
            c0 = acc0.to(dtype)
            c_desc.store([offs_cm, offs_cn], c0)
            c1 = acc1.to(dtype)
            c_desc.store([offs_cm, offs_cn + BLOCK_SIZE_N // 2], c1)
        else:
            c = accumulator.to(dtype)
            c_desc.store([offs_cm, offs_cn], c)


def matmul_descriptor_persistent(a, b, warp_specialize: bool):
    assert a.shape[1] == b.shape[1], "Incompatible dimensions"  # b is transposed
    assert a.dtype == b.dtype, "Incompatible dtypes"

    M, K = a.shape
    N, K = b.shape
    dtype = a.dtype

    c = torch.empty((M, N), device=a.device, dtype=dtype)
    NUM_SMS = _num_sms()

    # descriptors made on the device may ask for global memory
    def alloc_fn(size: int, alignment: int, stream: Optional[int]):
        return torch.empty(size, device=DEVICE, dtype=torch.int8)

    triton.set_allocator(alloc_fn)

    # Hopper's warp specialization runs without flattening
    flatten = False if (warp_specialize and is_hopper()) else True
    grid = lambda META: (min(NUM_SMS, triton.cdiv(M, META["BLOCK_SIZE_M"]) * triton.cdiv(N, META["BLOCK_SIZE_N"])), )  # noqa: E731
    matmul_kernel_descriptor_persistent[grid](
        a,
        b,
        c,
        M,
        N,
        K,
        NUM_SMS=NUM_SMS,
        WARP_SPECIALIZE=warp_specialize,
        FLATTEN=flatten,
    )
    return c


def device_blas_matmul(a, b):
    assert a.shape[1] == b.shape[1], "Incompatible dimensions"  # b is transposed
    M, K = a.shape
    N, K = b.shape
    dtype = a.dtype
    c = torch.empty((M, N), device=a.device, dtype=dtype)
    bytes_per_elem = a.element_size()
    flops_str = f"flops{bytes_per_elem * 8}"
    blas_name = device_blas_name()
    with proton.scope(f"{blas_name} [M={M}, N={N}, K={K}]",
                      {"bytes": bytes_per_elem * (M * K + N * K + M * N), flops_str: 2. * M * N * K}):  # fmt: skip
        device_blas.matmul(a, b, c)
    return c


def torch_matmul(a, b):
    M, K = a.shape
    N, K = b.shape
    bytes_per_elem = a.element_size()
    flops_str = f"flops{bytes_per_elem * 8}"
    with proton.scope(f"torch [M={M}, N={N}, K={K}]",
                      {"bytes": bytes_per_elem * (M * K + N * K + M * N), flops_str: 2. * M * N * K}):  # fmt: skip
        c = torch.matmul(a, b.T)
    return c


@contextmanager
def proton_context():
    proton.activate(0)
    try:
        yield
    finally:
        proton.deactivate(0)


def bench_fn(label, reps, warmup_reps, fn, *args):
    print(f"Benchmarking {label}: ...", end="")
    for _ in range(warmup_reps):
        fn(*args)
    with proton_context():
        for _ in range(reps):
            fn(*args)
    print(f"\rBenchmarking {label}: done")


def bench(K, dtype, reps=10000, warmup_reps=10000, M=8192, N=8192):
    a = torch.randn((M, K), device=DEVICE, dtype=torch.float16).to(dtype)
    b = torch.randn((K, N), device=DEVICE, dtype=torch.float16).to(dtype)

    b = b.T.contiguous()

    if device_blas is not None:
        blas_name = device_blas_name()
        bench_fn(blas_name, reps, warmup_reps, device_blas_matmul, a, b)
    if dtype == torch.float16:
        bench_fn("torch", reps, warmup_reps, torch_matmul, a, b)
    bench_fn("naive", reps, warmup_reps, matmul, a, b.T)
    bench_fn("persistent", reps, warmup_reps, matmul_persistent, a, b.T)
    warp_specialize = [False, True] if HAS_WARP_SPECIALIZE else [False]
    for ws in warp_specialize:
        ws_str = "_ws" if ws else ""
        # no warp specialization with host descriptors on Hopper
        if HAS_HOST_TENSOR_DESC and not (is_hopper() and ws):
            bench_fn(f"tma_persistent{ws_str}", reps, warmup_reps, lambda a, b: matmul_tma_persistent(a, b, ws), a, b)
            bench_fn(f"tma{ws_str}", reps, warmup_reps, lambda a, b: matmul_tma(a, b, ws), a, b)
        if HAS_TENSOR_DESC:
            bench_fn(f"descriptor_persistent{ws_str}", reps, warmup_reps,
                     lambda a, b: matmul_descriptor_persistent(a, b, ws), a, b)  # fmt: skip


def run_test(expect, fn, a, b, label, enabled=True):
    print(f"  {label}: ...", end="")
    if enabled:
        actual = fn(a, b)
        passed = torch.allclose(expect, actual.to(expect.dtype), atol=1.0)
        icon = "✅" if passed else "❌"
    else:
        icon = "⭕"
    print(f"\r  {label}: {icon}  ")


def validate(M, N, K, dtype):
    print(f"{M=}, {N=}, {K=}, verification naive vs: ")
    a = torch.randn((M, K), device=DEVICE, dtype=torch.float16).to(dtype)
    b = torch.randn((K, N), device=DEVICE, dtype=torch.float16).to(dtype)
    b = b.T.contiguous()

    naive_result = matmul(a, b.T).to(torch.float16)
    run_test(naive_result, torch_matmul, a, b, "Torch", enabled=dtype == torch.float16)
    run_test(naive_result, device_blas_matmul, a, b, device_blas_name(), enabled=device_blas is not None)
    run_test(naive_result, matmul_persistent, a, b.T, "Persistent")

    kernels = [
        (matmul_tma, "TMA", HAS_HOST_TENSOR_DESC),
        (matmul_tma_persistent, "TMA Persistent", HAS_HOST_TENSOR_DESC),
        (matmul_descriptor_persistent, "Tensor Descriptor Persistent", HAS_TENSOR_DESC),
    ]
    warp_specialize = [False, True] if HAS_WARP_SPECIALIZE else [False]

    for (kernel, label, enabled), warp_specialize in itertools.product(kernels, warp_specialize):
        label = f"{label} (warp_specialize={warp_specialize})"
        # Hopper's warp specialization only with device-side descriptors
        skipped = is_hopper() and warp_specialize and kernel != matmul_descriptor_persistent
        enabled = enabled and (not warp_specialize or HAS_TENSOR_DESC) and (not skipped)
        run_test(naive_result, lambda a, b: kernel(a, b, warp_specialize), a, b, label, enabled)
    print()
    return a, b, naive_result


def show_profile(precision, profile_name):
    import kernellab.profiler.viewer as proton_viewer
    metric_names = ["time/ms"]
    if precision == "fp8":
        metric_names = ["tflop8/s"] + metric_names
    elif precision == "fp16":
        metric_names = ["tflop16/s"] + metric_names
    file_name = f"{profile_name}.hatchet"
    tree, metrics = proton_viewer.parse(metric_names, file_name)
    proton_viewer.print_tree(tree, metrics)


# -- the tests: every variant validated, then the profiling run ----------------------------

# (M, N, K): partial tiles at every edge on the interpreter; the tutorial's sizes on the GPU
SHAPES = [(100, 80, 72)] if ON_CPU else [(32, 32, 32), (8192, 8192, 512)]
DTYPES = ["fp16", "fp8"]


def _expected(a, b_t):
    """a @ b_t.T in float64 (fp16 and fp8 products are exact in float64)."""
    return a.double() @ b_t.double().T


def _check(got, want, dtype, magnitude=None):
    """`magnitude`: |a| @ |b|.T, which bounds an fp8 sum's accumulation error."""
    if dtype == torch.float16:  # fp32 accumulation, one fp16 rounding
        torch.testing.assert_close(got.double(), want, rtol=2**-10, atol=1e-3 * want.abs().max().item() ** 0.5)
    else:  # one rounding to e4m3 (3 mantissa bits; subnormal steps of 2^-9) of a sum whose order
        # varies with the tiles, accumulated on Hopper's fp8 tensor cores with about 13 bits
        # kept (max_num_imprecise_acc=0, the tutorial's default; in an H200 run at K=512 the
        # worst element was 0.058 off, terms of magnitude ~300): within one e4m3 ulp of the
        # float64 sum plus 2^-10 of the magnitude of its terms
        bound = 2**-3 * want.abs() + 2**-9 + (0 if magnitude is None else 2**-10 * magnitude)
        excess = (got.double() - want).abs() - bound
        assert excess.max().item() <= 0, f"{int((excess > 0).sum())} elements off by up to {excess.max().item():.3g} over the bound"


@pytest.mark.parametrize("M, N, K", [pytest.param(*s, marks=GPU) for s in SHAPES])
@pytest.mark.parametrize("prec", DTYPES)
def test_validate_every_variant(M, N, K, prec, capsys):
    if prec == "fp8" and DEVICE.type == "cuda" and _capability()[0] < 9:
        pytest.skip("the tutorial's fp8 path needs sm_90")
    dtype = torch.float8_e4m3fn if prec == "fp8" else torch.float16
    torch.manual_seed(int(np.random.default_rng().integers(2**31)))
    a, b, naive_result = validate(M, N, K, dtype)
    out = capsys.readouterr().out
    if prec == "fp16":
        # the tutorial's own check: every variant within 1 of the naive kernel (for fp8 the
        # variants' sums, in other orders, may round to neighbouring e4m3 values, 2 or 4 apart at
        # these magnitudes; the float64 check below bounds them)
        assert "❌" not in out, out
    # every variant the target allows ran (⭕ marks one skipped), and warp specialization on Hopper
    # ran only with device-side descriptors, as the tutorial arranges
    expected_runs = {"Persistent", "TMA (warp_specialize=False)", "TMA Persistent (warp_specialize=False)",
                     "Tensor Descriptor Persistent (warp_specialize=False)",
                     "Tensor Descriptor Persistent (warp_specialize=True)"}  # fmt: skip
    ran = {line.split(":")[0].strip() for line in out.splitlines() if "✅" in line}
    assert expected_runs <= ran, out
    want = _expected(a, b)
    magnitude = _expected(a.double().abs(), b.double().abs()) if prec == "fp8" else None
    _check(naive_result.to(dtype), want, dtype, magnitude)
    for fn in (lambda: matmul_persistent(a, b.T), lambda: matmul_tma(a, b, False),
               lambda: matmul_tma_persistent(a, b, False), lambda: matmul_descriptor_persistent(a, b, False),
               lambda: matmul_descriptor_persistent(a, b, True)):  # fmt: skip
        _check(fn(), want, dtype, magnitude)
    # the split epilogue and the flattening prune: descriptor kernels saw both epilogues tuned
    subtiles = {c.kwargs["EPILOGUE_SUBTILE"] for c in matmul_kernel_descriptor_persistent.configs_timings}
    assert subtiles == {False}  # the last launch (Hopper, warp-specialized) pruned the split epilogue
    subtiles = {c.kwargs["EPILOGUE_SUBTILE"] for c in matmul_kernel_tma_persistent.configs_timings}
    assert subtiles == {False, True}


@pytest.mark.parametrize("device", [pytest.param(DEVICE, id=DEVICE.type, marks=GPU)])
def test_profiled_benchmark_and_its_file(device, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    prec, K = "fp16", 64 if ON_CPU else 512
    M = N = 64 if ON_CPU else 8192
    reps, warmup_reps = (2, 1) if ON_CPU else (20, 10)
    torch.manual_seed(0)
    proton.start("matmul", hook="triton")
    proton.deactivate()
    bench(K, torch.float16, reps=reps, warmup_reps=warmup_reps, M=M, N=N)
    proton.finalize()
    show_profile(prec, "matmul")
    out = capsys.readouterr().out
    assert "Benchmarking persistent: done" in out and "Benchmarking descriptor_persistent: done" in out

    record = json.loads((tmp_path / "matmul.json").read_text())
    nodes = {}
    stack = [record["tree"]]
    while stack:
        node = stack.pop()
        nodes[node["name"]] = node
        stack.extend(node["children"])
    shape = f"[M={M}, N={N}, K={K}]"
    kernels = ["matmul_kernel", "matmul_kernel_persistent", "matmul_kernel_tma_persistent",
               "matmul_kernel_tma", "matmul_kernel_descriptor_persistent", "matmul_kernel_descriptor_persistent_ws"]  # fmt: skip
    scopes = ["torch"] + (["cuBLAS"] if device_blas is not None else [])
    flops = 2.0 * M * N * K
    for name in [f"{k} {shape}" for k in kernels] + [f"{s} {shape}" for s in scopes]:
        node = nodes.get(name)
        assert node is not None, (name, sorted(nodes))
        # only the activated repetitions were recorded, each with its metrics
        assert node["count"] == reps, (name, node["count"])
        assert node["metrics"]["flops16"] == pytest.approx(flops * reps), name
        assert node["metrics"]["bytes"] == 2 * (M * K + N * K + M * N) * reps, name
        assert node["time_ns"] > 0 and node["derived"]["tflop16/s"] > 0, name
    # the viewer's table: a line per kernel with its tflop16/s and time/ms
    for k in kernels:
        line = next(line for line in out.splitlines() if line.endswith(f"{k} {shape}"))
        assert len([float(x) for x in line.split()[:2]]) == 2, line


@pytest.mark.parametrize("M, N, K", [pytest.param(*SHAPES[0], marks=GPU)])
def test_every_config_of_the_persistent_descriptor_kernels(M, N, K):
    """Tuning keeps the fastest config, so the variants the tutorial's configs select (the split
    epilogue, each tile shape, flattened or not) are run here one by one."""
    torch.manual_seed(int(np.random.default_rng().integers(2**31)))
    a = torch.randn((M, K), device=DEVICE, dtype=torch.float16)
    b = torch.randn((N, K), device=DEVICE, dtype=torch.float16)
    want = _expected(a, b)
    NUM_SMS = _num_sms()
    triton.set_allocator(lambda size, alignment, stream: torch.empty(size, device=DEVICE, dtype=torch.int8))
    ran = 0
    for config in matmul_kernel_tma_persistent.configs:
        c = torch.full((M, N), float("nan"), device=DEVICE, dtype=torch.float16)
        a_desc, b_desc, c_desc = (TensorDescriptor.from_tensor(t, [1, 1]) for t in (a, b, c))
        config.pre_hook({"a_desc": a_desc, "b_desc": b_desc, "c_desc": c_desc, **config.all_kwargs()})
        tiles = triton.cdiv(M, config.kwargs["BLOCK_SIZE_M"]) * triton.cdiv(N, config.kwargs["BLOCK_SIZE_N"])
        if _run_fitting(lambda: matmul_kernel_tma_persistent.fn[(min(NUM_SMS, tiles),)](
                a_desc, b_desc, c_desc, M, N, K, FP8_OUTPUT=False, NUM_SMS=NUM_SMS, WARP_SPECIALIZE=False,
                **config.all_kwargs())):  # fmt: skip
            ran += 1
            _check(c, want, torch.float16)
    for config, flatten in itertools.product(matmul_kernel_descriptor_persistent.configs, [True, False]):
        if not prune_invalid_configs([config], {}, FLATTEN=flatten):
            continue
        c = torch.full((M, N), float("nan"), device=DEVICE, dtype=torch.float16)
        tiles = triton.cdiv(M, config.kwargs["BLOCK_SIZE_M"]) * triton.cdiv(N, config.kwargs["BLOCK_SIZE_N"])
        if _run_fitting(lambda: matmul_kernel_descriptor_persistent.fn[(min(NUM_SMS, tiles),)](
                a, b, c, M, N, K, NUM_SMS=NUM_SMS, WARP_SPECIALIZE=not flatten, FLATTEN=flatten,
                **config.all_kwargs())):  # fmt: skip
            ran += 1
            _check(c, want, torch.float16)
    assert ran >= len(matmul_kernel_tma_persistent.configs) // 2, ran  # most configs fit


def _run_fitting(launch) -> bool:
    """Launch; False (nothing ran) where the config needs more shared memory than the GPU has,
    which the autotuner skips the same way."""
    from kernellab.backends.nvidia.launcher import OutOfResources

    try:
        launch()
    except OutOfResources:
        return False
    return True
