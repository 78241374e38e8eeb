"""Triton's tutorial kernels written for kernellab, used by the tour, the benchmarks and the tests.

Each kernel is the tutorial's with only the imports changed. The host helpers take numpy arrays
or torch tensors. `import kernellab` does not import this module.
"""

from __future__ import annotations

import math

import numpy as np

import kernellab as kl
import kernellab.language as tl

# -- 01 vector add ---------------------------------------------------------------------------


@kl.jit
def add_kernel(x_ptr, y_ptr, output_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    block_start = pid * BLOCK_SIZE
    offsets = block_start + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    output = x + y
    tl.store(output_ptr + offsets, output, mask=mask)


def add(x, y, output, BLOCK_SIZE: int = 1024):
    """Writes x + y into `output` (all contiguous, same size) and returns it."""
    n_elements = math.prod(output.shape)
    grid = lambda meta: (kl.cdiv(n_elements, meta["BLOCK_SIZE"]),)
    add_kernel[grid](x, y, output, n_elements, BLOCK_SIZE=BLOCK_SIZE)
    return output


# -- 02 fused softmax ------------------------------------------------------------------------


@kl.jit
def softmax_kernel(output_ptr, input_ptr, input_row_stride, output_row_stride, n_cols,
                   BLOCK_SIZE: tl.constexpr):  # fmt: skip
    """One program per row."""
    row_idx = tl.program_id(0)
    row_start_ptr = input_ptr + row_idx * input_row_stride
    col_offsets = tl.arange(0, BLOCK_SIZE)
    input_ptrs = row_start_ptr + col_offsets
    mask = col_offsets < n_cols
    row = tl.load(input_ptrs, mask=mask, other=-float("inf"))
    row_minus_max = row - tl.max(row, axis=0)
    numerator = tl.exp(row_minus_max)
    denominator = tl.sum(numerator, axis=0)
    softmax_output = numerator / denominator
    output_row_start_ptr = output_ptr + row_idx * output_row_stride
    output_ptrs = output_row_start_ptr + col_offsets
    tl.store(output_ptrs, softmax_output, mask=mask)


@kl.jit
def softmax_persistent_kernel(output_ptr, input_ptr, input_row_stride, output_row_stride, n_rows,
                              n_cols, BLOCK_SIZE: tl.constexpr, num_stages: tl.constexpr):  # fmt: skip
    """The tutorial's current version: each program loops over rows, a grid's width apart."""
    row_start = tl.program_id(0)
    row_step = tl.num_programs(0)
    for row_idx in tl.range(row_start, n_rows, row_step, num_stages=num_stages):
        row_start_ptr = input_ptr + row_idx * input_row_stride
        col_offsets = tl.arange(0, BLOCK_SIZE)
        input_ptrs = row_start_ptr + col_offsets
        mask = col_offsets < n_cols
        row = tl.load(input_ptrs, mask=mask, other=-float("inf"))
        row_minus_max = row - tl.max(row, axis=0)
        numerator = tl.exp(row_minus_max)
        denominator = tl.sum(numerator, axis=0)
        softmax_output = numerator / denominator
        output_row_start_ptr = output_ptr + row_idx * output_row_stride
        output_ptrs = output_row_start_ptr + col_offsets
        tl.store(output_ptrs, softmax_output, mask=mask)


def softmax_config(n_cols: int) -> tuple[int, int]:
    """(BLOCK_SIZE, num_warps) for a row of `n_cols`, as the tutorial chooses them."""
    block = kl.next_power_of_2(n_cols)
    return block, (4 if block <= 2048 else 8 if block <= 4096 else 16)


def softmax_reference(x: np.ndarray) -> np.ndarray:
    """Row softmax of a 2-D array in float64."""
    z = np.asarray(x, dtype=np.float64)
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


# -- 03 matrix multiplication (grouped ordering, optional leaky-ReLU epilogue) ---------------


@kl.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                  stride_cm, stride_cn, BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr,
                  BLOCK_SIZE_K: tl.constexpr, GROUP_SIZE_M: tl.constexpr,
                  ACTIVATION: tl.constexpr):  # fmt: skip
    """C = A @ B in fp32, stored as fp16; ACTIVATION "leaky_relu" or ""."""
    pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_SIZE_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    offs_am = (pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)) % M
    offs_bn = (pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)) % N
    offs_k = tl.arange(0, BLOCK_SIZE_K)
    a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
    accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for k in range(tl.cdiv(K, BLOCK_SIZE_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_SIZE_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_SIZE_K, other=0.0)
        accumulator = tl.dot(a, b, accumulator)
        a_ptrs += BLOCK_SIZE_K * stride_ak
        b_ptrs += BLOCK_SIZE_K * stride_bk
    if ACTIVATION == "leaky_relu":
        accumulator = leaky_relu(accumulator)
    c = accumulator.to(tl.float16)
    offs_cm = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    offs_cn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
    tl.store(c_ptrs, c, mask=c_mask)


# -- 09 persistent matmul: one program per SM, each looping over its output tiles ------------


@kl.jit
def _tile_pid(tile_id, num_pid_in_group, num_pid_m, GROUP_SIZE_M):
    """(pid_m, pid_n) of output tile `tile_id` in the grouped order of tutorial 03."""
    group_id = tile_id // num_pid_in_group
    first_pid_m = group_id * GROUP_SIZE_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
    pid_m = first_pid_m + (tile_id % group_size_m)
    pid_n = (tile_id % num_pid_in_group) // group_size_m
    return pid_m, pid_n


@kl.jit
def matmul_persistent_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk,
                             stride_bn, stride_cm, stride_cn, BLOCK_SIZE_M: tl.constexpr,
                             BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
                             GROUP_SIZE_M: tl.constexpr, NUM_SMS: tl.constexpr):  # fmt: skip
    """C = A @ B in fp32, stored as C's dtype (fp16 or fp8 e4m3), by a grid of at most NUM_SMS
    programs: program p computes tiles p, p + NUM_SMS, ... (tutorial 09's persistent kernel)."""
    start_pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    k_tiles = tl.cdiv(K, BLOCK_SIZE_K)
    num_tiles = num_pid_m * num_pid_n
    tile_id_c = start_pid - NUM_SMS  # the epilogue's own tile counter, as in the tutorial
    offs_k_for_mask = tl.arange(0, BLOCK_SIZE_K)
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    for tile_id in tl.range(start_pid, num_tiles, NUM_SMS, flatten=True):
        pid_m, pid_n = _tile_pid(tile_id, num_pid_in_group, num_pid_m, GROUP_SIZE_M)
        offs_am = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
        offs_bn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
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
        pid_m, pid_n = _tile_pid(tile_id_c, num_pid_in_group, num_pid_m, GROUP_SIZE_M)
        offs_cm = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
        offs_cn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
        c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
        c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
        if c_ptr.dtype.element_ty == tl.float8e4nv:
            c = accumulator.to(tl.float8e4nv)
        else:
            c = accumulator.to(tl.float16)
        tl.store(c_ptrs, c, mask=c_mask)


@kl.jit
def matmul_descriptor_persistent_kernel(a_desc, b_desc, c_desc, M, N, K,
                                        BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr,
                                        BLOCK_SIZE_K: tl.constexpr, GROUP_SIZE_M: tl.constexpr,
                                        NUM_SMS: tl.constexpr, FLATTEN: tl.constexpr = False):  # fmt: skip
    """C = A @ Bᵀ (fp32 accumulation, C in c_desc's type) over host TensorDescriptors of A (M x
    K), B (N x K, as tutorial 09 and torch's weights keep it) and C (M x N): a grid of NUM_SMS
    programs, each walking the output tiles NUM_SMS apart. Tiles past an edge read zeros and
    store nothing outside; on Hopper every load and store is a TMA copy (B's tiles land in the
    K-major buffer wgmma reads Bᵀ from). FLATTEN fuses the tile and K loops into one (as
    tutorial 09's flag): the next tile's copies run during this tile's epilogue."""
    num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    k_tiles = tl.cdiv(K, BLOCK_SIZE_K)
    num_tiles = num_pid_m * num_pid_n
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    for tile_id in tl.range(tl.program_id(0), num_tiles, NUM_SMS, flatten=FLATTEN):
        pid_m, pid_n = _tile_pid(tile_id, num_pid_in_group, num_pid_m, GROUP_SIZE_M)
        offs_am = pid_m * BLOCK_SIZE_M
        offs_bn = pid_n * BLOCK_SIZE_N
        accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
        for ki in range(k_tiles):
            offs_k = ki * BLOCK_SIZE_K
            a = a_desc.load([offs_am, offs_k])
            b = b_desc.load([offs_bn, offs_k])
            accumulator = tl.dot(a, b.T, accumulator)
        c_desc.store([offs_am, offs_bn], accumulator.to(c_desc.dtype))


def matmul_descriptor_persistent(a, b, c, num_sms: int, block_m: int = 128, block_n: int = 128,
                                 block_k: int = 64, group_m: int = 8, num_warps: int = 4,
                                 num_stages: int = 3, flatten: bool = False):  # fmt: skip
    """c = a @ bᵀ (torch tensors or numpy arrays, row-major; b is N x K) with the persistent
    descriptor kernel on min(num_sms, tiles) programs; returns what the launch returns."""
    from kernellab.tools.tensor_descriptor import TensorDescriptor

    m, k = a.shape
    n = b.shape[0]
    tiles = math.ceil(m / block_m) * math.ceil(n / block_n)
    return matmul_descriptor_persistent_kernel[(min(num_sms, tiles),)](
        TensorDescriptor.from_tensor(a, [block_m, block_k]),
        TensorDescriptor.from_tensor(b, [block_n, block_k]),
        TensorDescriptor.from_tensor(c, [block_m, block_n]), m, n, k,
        BLOCK_SIZE_M=block_m, BLOCK_SIZE_N=block_n, BLOCK_SIZE_K=block_k, GROUP_SIZE_M=group_m,
        NUM_SMS=num_sms, FLATTEN=flatten, num_warps=num_warps, num_stages=num_stages,
    )  # fmt: skip


@kl.jit
def matmul_int8_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                       stride_cm, stride_cn, BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr,
                       BLOCK_SIZE_K: tl.constexpr, GROUP_SIZE_M: tl.constexpr):  # fmt: skip
    """C = A @ B for int8 A and B, exact in int32 (the tutorial's matmul, int32 accumulator)."""
    pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_SIZE_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    offs_am = (pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)) % M
    offs_bn = (pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)) % N
    offs_k = tl.arange(0, BLOCK_SIZE_K)
    a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
    accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.int32)
    for k in range(tl.cdiv(K, BLOCK_SIZE_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_SIZE_K, other=0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_SIZE_K, other=0)
        accumulator = tl.dot(a, b, accumulator)
        a_ptrs += BLOCK_SIZE_K * stride_ak
        b_ptrs += BLOCK_SIZE_K * stride_bk
    offs_cm = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    offs_cn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
    tl.store(c_ptrs, accumulator, mask=c_mask)


@kl.jit
def leaky_relu(x):
    return tl.where(x >= 0, x, 0.01 * x)


# -- 05 layer norm (forward) -----------------------------------------------------------------


@kl.jit
def layer_norm_kernel(X, Y, W, B, Mean, Rstd, stride, N, eps, BLOCK_SIZE: tl.constexpr):
    """One program per row: Y = (X - mean) * rstd * W + B; writes Mean and Rstd."""
    row = tl.program_id(0)
    Y += row * stride
    X += row * stride
    _mean = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        a = tl.load(X + cols, mask=cols < N, other=0.0).to(tl.float32)
        _mean += a
    mean = tl.sum(_mean, axis=0) / N
    _var = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        x = tl.load(X + cols, mask=cols < N, other=0.0).to(tl.float32)
        x = tl.where(cols < N, x - mean, 0.0)
        _var += x * x
    var = tl.sum(_var, axis=0) / N
    rstd = 1 / tl.sqrt(var + eps)
    tl.store(Mean + row, mean)
    tl.store(Rstd + row, rstd)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        mask = cols < N
        w = tl.load(W + cols, mask=mask)
        b = tl.load(B + cols, mask=mask)
        x = tl.load(X + cols, mask=mask, other=0.0).to(tl.float32)
        x_hat = (x - mean) * rstd
        y = x_hat * w + b
        tl.store(Y + cols, y, mask=mask)


def layer_norm_config(n_cols: int, itemsize: int) -> tuple[int, int]:
    """(BLOCK_SIZE, num_warps) for rows of `n_cols` elements of `itemsize` bytes, as the
    tutorial chooses them (a row must fit in 64 KB)."""
    block = min(65536 // itemsize, kl.next_power_of_2(n_cols))
    return block, min(max(block // 256, 1), 8)


def layer_norm_reference(x, w, b, eps: float):
    """(y, mean, rstd) of layer norm over the rows of a 2-D array, in float64."""
    x64 = np.asarray(x, dtype=np.float64)
    mean = x64.mean(axis=1)
    rstd = 1 / np.sqrt(x64.var(axis=1) + eps)
    w64, b64 = np.asarray(w, np.float64), np.asarray(b, np.float64)
    y = (x64 - mean[:, None]) * rstd[:, None] * w64 + b64
    return y, mean, rstd


# -- 06 fused attention (forward) ----------------------------------------------------------


@kl.jit
def attention_fwd_kernel(Q, K, V, Out, sm_scale, stride_qz, stride_qh, stride_qm, stride_qk,
                         stride_kz, stride_kh, stride_kn, stride_kk, stride_vz, stride_vh,
                         stride_vn, stride_vk, stride_oz, stride_oh, stride_om, stride_ok, H,
                         N_CTX, HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr,
                         BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr):  # fmt: skip
    """softmax(Q Kᵀ · sm_scale) V for one BLOCK_M-row tile of one (batch, head), walking K and V
    in BLOCK_N-row tiles with the online softmax (running max and sum, rescaled as it goes);
    N_CTX a multiple of BLOCK_M and BLOCK_N. CAUSAL: a row sees only the keys at or before it,
    so the walk stops at the tile's diagonal and masks inside the diagonal tiles. As in Triton's
    tutorial, the scale multiplies the row max of the raw scores (sm_scale > 0) and goes into
    exp2's argument as one FMA per score rather than a multiply before the max."""
    start_m = tl.program_id(0)
    off_hz = tl.program_id(1)
    off_z = off_hz // H
    off_h = off_hz % H
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    q_ptrs = Q + off_z * stride_qz + off_h * stride_qh + offs_m[:, None] * stride_qm + offs_d[None, :] * stride_qk
    k_ptrs = K + off_z * stride_kz + off_h * stride_kh + offs_n[None, :] * stride_kn + offs_d[:, None] * stride_kk
    v_ptrs = V + off_z * stride_vz + off_h * stride_vh + offs_n[:, None] * stride_vn + offs_d[None, :] * stride_vk
    q = tl.load(q_ptrs)
    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)
    qk_scale = sm_scale * 1.44269504  # exp(x) = exp2(x * log2(e))
    end = (start_m + 1) * BLOCK_M if CAUSAL else N_CTX
    for start_n in range(0, end, BLOCK_N):
        k = tl.load(k_ptrs + start_n * stride_kn)
        qk = tl.dot(q, k)
        if CAUSAL:
            qk = tl.where(offs_m[:, None] >= start_n + offs_n[None, :], qk, float("-inf"))
        m_ij = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)
        p = tl.math.exp2(qk * qk_scale - m_ij[:, None])
        alpha = tl.math.exp2(m_i - m_ij)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(v_ptrs + start_n * stride_vn)
        acc = tl.dot(p.to(v.dtype), v, acc * alpha[:, None])
        m_i = m_ij
    out = acc / l_i[:, None]
    o_ptrs = Out + off_z * stride_oz + off_h * stride_oh + offs_m[:, None] * stride_om + offs_d[None, :] * stride_ok
    tl.store(o_ptrs, out.to(Out.dtype.element_ty))


@kl.jit
def attention_fwd_overlapped_kernel(Q, K, V, Out, sm_scale, stride_qz, stride_qh, stride_qm,
                                    stride_qk, stride_kz, stride_kh, stride_kn, stride_kk,
                                    stride_vz, stride_vh, stride_vn, stride_vk, stride_oz,
                                    stride_oh, stride_om, stride_ok, H, N_CTX,
                                    HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr,
                                    BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr):  # fmt: skip
    """attention_fwd_kernel's math in another order (FlashAttention-3's intra-warpgroup
    pipelining): each iteration issues the next key tile's Q·Kᵀ before this tile's P·V, so the
    tensor cores run P·V while the warps compute the next tile's softmax; the accumulator is
    rescaled after P·V instead of before. The first tile's scores come before the loop and the
    last P·V after it, so N_CTX (and, when CAUSAL, BLOCK_M) must be at least BLOCK_N. On Hopper
    the compiler keeps P·V in flight up to the rescale that reads it (passes/ttgir/pipeline_loops.py)."""
    start_m = tl.program_id(0)
    off_hz = tl.program_id(1)
    off_z = off_hz // H
    off_h = off_hz % H
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    q_ptrs = Q + off_z * stride_qz + off_h * stride_qh + offs_m[:, None] * stride_qm + offs_d[None, :] * stride_qk
    k_ptrs = K + off_z * stride_kz + off_h * stride_kh + offs_n[None, :] * stride_kn + offs_d[:, None] * stride_kk
    v_ptrs = V + off_z * stride_vz + off_h * stride_vh + offs_n[:, None] * stride_vn + offs_d[None, :] * stride_vk
    q = tl.load(q_ptrs)
    qk_scale = sm_scale * 1.44269504  # exp(x) = exp2(x * log2(e))
    end = (start_m + 1) * BLOCK_M if CAUSAL else N_CTX
    qk = tl.dot(q, tl.load(k_ptrs))
    if CAUSAL:
        qk = tl.where(offs_m[:, None] >= offs_n[None, :], qk, float("-inf"))
    m_i = tl.max(qk, 1) * qk_scale
    p = tl.math.exp2(qk * qk_scale - m_i[:, None])
    l_i = tl.sum(p, 1)
    p = p.to(V.dtype.element_ty)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)
    for start_n in range(BLOCK_N, end, BLOCK_N):
        qk = tl.dot(q, tl.load(k_ptrs + start_n * stride_kn))  # the next tile's scores
        acc = tl.dot(p, tl.load(v_ptrs + (start_n - BLOCK_N) * stride_vn), acc)  # this tile's P·V
        if CAUSAL:
            qk = tl.where(offs_m[:, None] >= start_n + offs_n[None, :], qk, float("-inf"))
        m_ij = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)
        p = tl.math.exp2(qk * qk_scale - m_ij[:, None])
        alpha = tl.math.exp2(m_i - m_ij)
        l_i = l_i * alpha + tl.sum(p, 1)
        p = p.to(V.dtype.element_ty)
        acc = acc * alpha[:, None]  # P·V is waited for here
        m_i = m_ij
    acc = tl.dot(p, tl.load(v_ptrs + (end - BLOCK_N) * stride_vn), acc)
    out = acc / l_i[:, None]
    o_ptrs = Out + off_z * stride_oz + off_h * stride_oh + offs_m[:, None] * stride_om + offs_d[None, :] * stride_ok
    tl.store(o_ptrs, out.to(Out.dtype.element_ty))


def attention_overlaps(head_dim: int, n_ctx: int = 0, causal: bool = False) -> bool:
    """Whether attention_fwd_overlapped_kernel is the order to run. Measured on an H200
    (benchmarks/gpu.py, 128x64 tiles on 8 warps): at head dim 64, where the softmax is the
    larger share of a tile's time, running P·V beside it was 1-3% faster without a causal mask
    and within 2% with one. At 128 it needs more registers (186 a thread against 159): 2-3%
    slower at N 2048, within ±2.5% either way without a mask from N 4096 up, but 1.6-3.5%
    faster with a causal mask from N 4096 up (four interleaved rounds at N 2048-16384, since
    the rings pass by mbarriers; the diagonal tiles' masking is more softmax to overlap)."""
    return head_dim <= 64 or (causal and n_ctx >= 4096)


def attention(q, k, v, causal: bool, sm_scale: float, out, block_m: int = 128, block_n: int = 64,
              num_warps: int = 8, num_stages: int = 3, overlapped: bool | None = None):  # fmt: skip
    """Launch attention_fwd_kernel, or attention_fwd_overlapped_kernel when `overlapped` (by
    default where `attention_overlaps` for the head dim, length and mask), on (batch, heads,
    n_ctx, head_dim) arrays; returns `out`."""
    z, h, n_ctx, head_dim = q.shape
    grid = (n_ctx // block_m, z * h)
    strides = [_strides(a) for a in (q, k, v, out)]
    if overlapped is None:
        overlapped = attention_overlaps(head_dim, n_ctx, causal)
    kernel = attention_fwd_overlapped_kernel if overlapped else attention_fwd_kernel
    kernel[grid](
        q, k, v, out, sm_scale, *strides[0], *strides[1], *strides[2], *strides[3], h, n_ctx,
        HEAD_DIM=head_dim, BLOCK_M=block_m, BLOCK_N=block_n, CAUSAL=causal,
        num_warps=num_warps, num_stages=num_stages,
    )  # fmt: skip
    return out


def _strides(array) -> tuple[int, ...]:
    """Strides in elements of a torch tensor or a numpy array."""
    if hasattr(array, "stride"):
        return tuple(array.stride())
    return tuple(s // array.itemsize for s in array.strides)


def attention_reference(q, k, v, causal: bool, sm_scale: float) -> np.ndarray:
    """softmax(Q Kᵀ · sm_scale) V in float64 over (batch, heads, n_ctx, head_dim) arrays."""
    q64, k64, v64 = (np.asarray(a, dtype=np.float64) for a in (q, k, v))
    s = q64 @ np.swapaxes(k64, -1, -2) * sm_scale
    if causal:
        n = s.shape[-1]
        s = np.where(np.tril(np.ones((n, n), bool)), s, -np.inf)
    s = s - s.max(axis=-1, keepdims=True)
    p = np.exp(s)
    return (p / p.sum(axis=-1, keepdims=True)) @ v64
