"""GPU benchmarks: kernellab next to torch and (when installed) Triton, in one run.

    python3 benchmarks/gpu.py            # on a machine with an NVIDIA GPU and torch
    python3 benchmarks/gpu.py --dry-run  # anywhere: the plan, compile checks, compile times

Measures (see benchmarks/README.md for what each figure means):
  copy       device copy ceiling: torch clone of 2^28 fp32, bytes read + written
  vector add fp32, 2^12 ... 2^27 elements, GB/s counting 3 arrays
  softmax    fused softmax fp32, 4096 x {256, 1024, 4096, 16384}, GB/s counting read + write
  layer norm forward fp16, 4096 x {1024, 4096, 8192}, GB/s counting x, y, w, b, mean, rstd
  softmax persistent  the tutorial's current softmax (a grid of programs walking rows with
             tl.range(..., num_stages=)), fp32 4096 x {1024, 4096, 12160}, GB/s
  matmul     the tutorial matmul (same kernel text for kernellab and Triton), each autotuned over
             the tutorial's CUDA configs, next to cuBLAS (torch.matmul): fp16 and bf16 at 1024,
             2048, 4096, 8192 and a skinny 16 x 8192 x 8192, tf32 at 4096, fp8 at 4096 and 8192
             (next to torch._scaled_mm), int8 at 4096 (int32 out, next to torch._int_mm);
             TFLOP/s (2MNK; TOP/s for int8); beside it tutorial 09's persistent matmul (a grid
             of one program per SM looping over tiles with tl.range(..., flatten=True)), the
             same kernel text for both compilers, autotuned over the same configs (not int8)
  matmul descriptor  tutorial 09's persistent matmul through host TensorDescriptors (C = A Bᵀ,
             B N x K; TMA loads and stores on Hopper, the same kernel text for kernellab and
             Triton), each autotuned over MATMUL_DESCRIPTOR_CONFIGS, next to cuBLAS: fp16 and
             bf16 at 4096 and 8192; TFLOP/s
  matmul sustained  the same matmuls at the card's steady state: an H200 at its 700 W limit runs
             large matmuls below its boost clock, so each contender (cuBLAS, both kernels for
             both compilers, the faster of two configs) runs back to back for 2 s, in four
             interleaved rounds, with the SM clock and board power read by nvidia-smi; tf32 at
             4096 too (the tutorial kernel, next to torch.matmul with tf32 allowed)
  matmul compile  kl.compile of the largest tutorial config (128x256x64, 8 warps, 3 stages)
  compile    first compile of vector add in a fresh process (clean cache dir, `import
             kernellab` included), cached compile in another process, and the first launch of
             each, Triton's too; each the median of five fresh processes
  launch     warm launch overhead, host side: N back-to-back launches of a tiny kernel, one
             synchronize at the end, microseconds per launch

Kernel times are CUDA-event medians of at least 20 runs after warm-up, each run preceded by
zeroing a 256 MB buffer so L2 starts cold; where two compilers' kernels meet in the persistent
softmax and attention, each is timed in ROUNDS interleaved rounds, a round's figure the mean of
its central 60% of runs (events tick in ~0.5 µs steps), and the median of its rounds kept (a
GPU's clock drifts between measurements taken apart; an even count, see in_interleaved_rounds).
Every kernellab result is checked against torch before it is timed; a wrong result is reported
as WRONG, and any failure in one measurement is printed and leaves the others running. The table comes last; results go to
benchmarks/results/<device>-<date>.json (and $OUT/ when OUT is set).
"""

import argparse
import datetime
import json
import math
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


import kernellab as kl
from kernellab.examples import (
    add_kernel,
    layer_norm_config,
    layer_norm_kernel,
    attention_fwd_kernel,
    attention_fwd_overlapped_kernel,
    attention_overlaps,
    matmul_descriptor_persistent_kernel,
    matmul_int8_kernel,
    matmul_kernel,
    matmul_persistent_kernel,
    softmax_config,
    softmax_kernel,
    softmax_persistent_kernel,
)
from kernellab.testing.gpu_state import GpuState
from kernellab.testing.timing import in_interleaved_rounds

# Triton is optional: imported here only, its kernels defined below when it imports.
try:
    import triton
    import triton.language as ttl

    TRITON_ERROR = None
except Exception as e:  # ImportError, or a broken install
    triton = ttl = None
    TRITON_ERROR = f"{type(e).__name__}: {e}"

VECTOR_SIZES = [2**p for p in range(12, 28)]
SOFTMAX_ROWS, SOFTMAX_COLS = 4096, [256, 1024, 4096, 16384]
LAYERNORM_ROWS, LAYERNORM_COLS = 4096, [1024, 4096, 8192]
PERSISTENT_ROWS, PERSISTENT_COLS = 4096, [1024, 4096, 12160]
ATTENTION_BATCH, ATTENTION_HEADS, ATTENTION_SEQS = 4, 32, [1024, 4096, 16384]
# (M, N, K, dtype): square fp16/bf16, the skinny shape, tf32 at 4096
MATMUL_CASES = [(n, n, n, dt) for dt in ("fp16", "bf16") for n in (1024, 2048, 4096, 8192)]
MATMUL_CASES += [(16, 8192, 8192, "fp16"), (16, 8192, 8192, "bf16"), (4096, 4096, 4096, "tf32")]
MATMUL_CASES += [(4096, 4096, 4096, "fp8"), (8192, 8192, 8192, "fp8"), (4096, 4096, 4096, "int8")]
# Triton's tutorial 03 CUDA configs: (BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, num_stages, num_warps)
MATMUL_CONFIGS = [
    (128, 256, 64, 8, 3, 8), (64, 256, 32, 8, 4, 4), (128, 128, 32, 8, 4, 4),
    (128, 64, 32, 8, 4, 4), (64, 128, 32, 8, 4, 4), (128, 32, 32, 8, 4, 4),
    (64, 32, 32, 8, 5, 2), (32, 64, 32, 8, 5, 2),
    # the tutorial's "good config for fp8 inputs" (where a wider dtype's ring overflows shared
    # memory, kernellab's pipeliner keeps fewer buffers; Triton refuses the config, named in the
    # result's notes)
    (128, 256, 128, 8, 3, 8), (256, 128, 128, 8, 3, 8), (256, 64, 128, 8, 4, 4),
    (64, 256, 128, 8, 4, 4), (128, 128, 128, 8, 4, 4), (128, 64, 64, 8, 4, 4),
    (64, 128, 64, 8, 4, 4), (128, 32, 64, 8, 4, 4),
]  # fmt: skip
# the persistent descriptor matmul: (BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, num_stages, num_warps)
MATMUL_DESCRIPTOR_CASES = [(n, n, n, dt) for dt in ("fp16", "bf16") for n in (4096, 8192)]
MATMUL_DESCRIPTOR_CONFIGS = [(128, 256, 64, 8, 3, 8), (128, 256, 64, 8, 4, 8), (128, 128, 64, 8, 4, 4),
                             (128, 128, 64, 8, 3, 8)]  # fmt: skip
COPY_ELEMENTS = 2**28
LAUNCH_ELEMENTS, LAUNCHES, LAUNCH_TRIALS = 256, 5000, 6  # trials: an even count of rounds
FLUSH_BYTES = 256 * 2**20
MIN_REPS, MAX_REPS, REP_MS = 20, 2000, 100.0
# interleaved rounds where two compilers' kernels are compared (Timer.interleaved); even, see
# in_interleaved_rounds
ROUNDS = 4


def use_matmul_cases(text: str) -> None:
    """--matmul-cases: 'MxNxK:dtype,...' replaces MATMUL_CASES, and the sustained section's
    cases with those of them it runs (fp16, bf16, tf32)."""
    global MATMUL_CASES, MATMUL_SUSTAINED_CASES
    cases = []
    for item in text.split(","):
        shape, _, dtype = item.strip().partition(":")
        m, n, k = (int(v) for v in shape.split("x"))
        if dtype not in MATMUL_TOLERANCE:
            raise SystemExit(f"--matmul-cases: dtype {dtype!r} is not one of {', '.join(MATMUL_TOLERANCE)}")
        cases.append((m, n, k, dtype))
    MATMUL_CASES = cases
    MATMUL_SUSTAINED_CASES = [case for case in cases if case[3] in MATMUL_SUSTAINED_CONFIGS]


def use_quick_sizes() -> None:
    """--quick: small sizes and short timings (a smoke run of every code path, not a benchmark)."""
    global VECTOR_SIZES, SOFTMAX_ROWS, SOFTMAX_COLS, LAYERNORM_ROWS, LAYERNORM_COLS, COPY_ELEMENTS
    global LAUNCHES, LAUNCH_TRIALS, FLUSH_BYTES, REP_MS
    global PERSISTENT_ROWS, PERSISTENT_COLS, MATMUL_CASES, ATTENTION_SEQS, ATTENTION_BATCH
    global MATMUL_DESCRIPTOR_CASES
    VECTOR_SIZES = [2**12, 2**16]
    SOFTMAX_ROWS, SOFTMAX_COLS = 64, [256, 1024]
    LAYERNORM_ROWS, LAYERNORM_COLS = 64, [1024]
    PERSISTENT_ROWS, PERSISTENT_COLS = 64, [1024]
    ATTENTION_SEQS, ATTENTION_BATCH = [256], 1
    MATMUL_CASES = [(256, 256, 256, "fp16"), (16, 512, 512, "bf16")]
    MATMUL_DESCRIPTOR_CASES = [(512, 512, 512, "fp16")]
    COPY_ELEMENTS, LAUNCHES, LAUNCH_TRIALS, FLUSH_BYTES, REP_MS = 2**20, 200, 2, 2**20, 5.0


# -- kernellab.examples' kernels, written for Triton -----------------------------------------

if triton is not None:

    @triton.jit
    def triton_add_kernel(x_ptr, y_ptr, output_ptr, n_elements, BLOCK_SIZE: ttl.constexpr):
        pid = ttl.program_id(axis=0)
        offsets = pid * BLOCK_SIZE + ttl.arange(0, BLOCK_SIZE)
        mask = offsets < n_elements
        x = ttl.load(x_ptr + offsets, mask=mask)
        y = ttl.load(y_ptr + offsets, mask=mask)
        ttl.store(output_ptr + offsets, x + y, mask=mask)

    @triton.jit
    def triton_softmax_kernel(output_ptr, input_ptr, input_row_stride, output_row_stride, n_cols,
                              BLOCK_SIZE: ttl.constexpr):  # fmt: skip
        row_idx = ttl.program_id(0)
        col_offsets = ttl.arange(0, BLOCK_SIZE)
        mask = col_offsets < n_cols
        row = ttl.load(
            input_ptr + row_idx * input_row_stride + col_offsets, mask=mask, other=-float("inf")
        )
        row_minus_max = row - ttl.max(row, axis=0)
        numerator = ttl.exp(row_minus_max)
        denominator = ttl.sum(numerator, axis=0)
        ttl.store(
            output_ptr + row_idx * output_row_stride + col_offsets,
            numerator / denominator,
            mask=mask,
        )

    @triton.jit
    def triton_layer_norm_kernel(X, Y, W, B, Mean, Rstd, stride, N, eps, BLOCK_SIZE: ttl.constexpr):
        row = ttl.program_id(0)
        Y += row * stride
        X += row * stride
        _mean = ttl.zeros([BLOCK_SIZE], dtype=ttl.float32)
        for off in range(0, N, BLOCK_SIZE):
            cols = off + ttl.arange(0, BLOCK_SIZE)
            a = ttl.load(X + cols, mask=cols < N, other=0.0).to(ttl.float32)
            _mean += a
        mean = ttl.sum(_mean, axis=0) / N
        _var = ttl.zeros([BLOCK_SIZE], dtype=ttl.float32)
        for off in range(0, N, BLOCK_SIZE):
            cols = off + ttl.arange(0, BLOCK_SIZE)
            x = ttl.load(X + cols, mask=cols < N, other=0.0).to(ttl.float32)
            x = ttl.where(cols < N, x - mean, 0.0)
            _var += x * x
        var = ttl.sum(_var, axis=0) / N
        rstd = 1 / ttl.sqrt(var + eps)
        ttl.store(Mean + row, mean)
        ttl.store(Rstd + row, rstd)
        for off in range(0, N, BLOCK_SIZE):
            cols = off + ttl.arange(0, BLOCK_SIZE)
            mask = cols < N
            w = ttl.load(W + cols, mask=mask)
            b = ttl.load(B + cols, mask=mask)
            x = ttl.load(X + cols, mask=mask, other=0.0).to(ttl.float32)
            ttl.store(Y + cols, (x - mean) * rstd * w + b, mask=mask)


    @triton.jit
    def triton_softmax_persistent_kernel(output_ptr, input_ptr, input_row_stride, output_row_stride,
                                         n_rows, n_cols, BLOCK_SIZE: ttl.constexpr,
                                         num_stages: ttl.constexpr):  # fmt: skip
        row_start = ttl.program_id(0)
        row_step = ttl.num_programs(0)
        for row_idx in ttl.range(row_start, n_rows, row_step, num_stages=num_stages):
            row_start_ptr = input_ptr + row_idx * input_row_stride
            col_offsets = ttl.arange(0, BLOCK_SIZE)
            input_ptrs = row_start_ptr + col_offsets
            mask = col_offsets < n_cols
            row = ttl.load(input_ptrs, mask=mask, other=-float("inf"))
            row_minus_max = row - ttl.max(row, axis=0)
            numerator = ttl.exp(row_minus_max)
            denominator = ttl.sum(numerator, axis=0)
            softmax_output = numerator / denominator
            output_row_start_ptr = output_ptr + row_idx * output_row_stride
            output_ptrs = output_row_start_ptr + col_offsets
            ttl.store(output_ptrs, softmax_output, mask=mask)

    @triton.jit
    def triton_matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk,
                             stride_bn, stride_cm, stride_cn, BLOCK_SIZE_M: ttl.constexpr,
                             BLOCK_SIZE_N: ttl.constexpr, BLOCK_SIZE_K: ttl.constexpr,
                             GROUP_SIZE_M: ttl.constexpr, ACTIVATION: ttl.constexpr):  # fmt: skip
        pid = ttl.program_id(axis=0)
        num_pid_m = ttl.cdiv(M, BLOCK_SIZE_M)
        num_pid_n = ttl.cdiv(N, BLOCK_SIZE_N)
        num_pid_in_group = GROUP_SIZE_M * num_pid_n
        group_id = pid // num_pid_in_group
        first_pid_m = group_id * GROUP_SIZE_M
        group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
        pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
        pid_n = (pid % num_pid_in_group) // group_size_m
        offs_am = (pid_m * BLOCK_SIZE_M + ttl.arange(0, BLOCK_SIZE_M)) % M
        offs_bn = (pid_n * BLOCK_SIZE_N + ttl.arange(0, BLOCK_SIZE_N)) % N
        offs_k = ttl.arange(0, BLOCK_SIZE_K)
        a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
        b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
        accumulator = ttl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=ttl.float32)
        for k in range(ttl.cdiv(K, BLOCK_SIZE_K)):
            a = ttl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_SIZE_K, other=0.0)
            b = ttl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_SIZE_K, other=0.0)
            accumulator = ttl.dot(a, b, accumulator)
            a_ptrs += BLOCK_SIZE_K * stride_ak
            b_ptrs += BLOCK_SIZE_K * stride_bk
        c = accumulator.to(ttl.float16)
        offs_cm = pid_m * BLOCK_SIZE_M + ttl.arange(0, BLOCK_SIZE_M)
        offs_cn = pid_n * BLOCK_SIZE_N + ttl.arange(0, BLOCK_SIZE_N)
        c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
        c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
        ttl.store(c_ptrs, c, mask=c_mask)

    @triton.jit
    def triton_tile_pid(tile_id, num_pid_in_group, num_pid_m, GROUP_SIZE_M):
        group_id = tile_id // num_pid_in_group
        first_pid_m = group_id * GROUP_SIZE_M
        group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
        pid_m = first_pid_m + (tile_id % group_size_m)
        pid_n = (tile_id % num_pid_in_group) // group_size_m
        return pid_m, pid_n

    @triton.jit
    def triton_matmul_persistent_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak,
                                        stride_bk, stride_bn, stride_cm, stride_cn,
                                        BLOCK_SIZE_M: ttl.constexpr, BLOCK_SIZE_N: ttl.constexpr,
                                        BLOCK_SIZE_K: ttl.constexpr, GROUP_SIZE_M: ttl.constexpr,
                                        NUM_SMS: ttl.constexpr):  # fmt: skip
        start_pid = ttl.program_id(axis=0)
        num_pid_m = ttl.cdiv(M, BLOCK_SIZE_M)
        num_pid_n = ttl.cdiv(N, BLOCK_SIZE_N)
        k_tiles = ttl.cdiv(K, BLOCK_SIZE_K)
        num_tiles = num_pid_m * num_pid_n
        tile_id_c = start_pid - NUM_SMS
        offs_k_for_mask = ttl.arange(0, BLOCK_SIZE_K)
        num_pid_in_group = GROUP_SIZE_M * num_pid_n
        for tile_id in ttl.range(start_pid, num_tiles, NUM_SMS, flatten=True):
            pid_m, pid_n = triton_tile_pid(tile_id, num_pid_in_group, num_pid_m, GROUP_SIZE_M)
            offs_am = pid_m * BLOCK_SIZE_M + ttl.arange(0, BLOCK_SIZE_M)
            offs_bn = pid_n * BLOCK_SIZE_N + ttl.arange(0, BLOCK_SIZE_N)
            offs_am = ttl.where(offs_am < M, offs_am, 0)
            offs_bn = ttl.where(offs_bn < N, offs_bn, 0)
            offs_am = ttl.max_contiguous(ttl.multiple_of(offs_am, BLOCK_SIZE_M), BLOCK_SIZE_M)
            offs_bn = ttl.max_contiguous(ttl.multiple_of(offs_bn, BLOCK_SIZE_N), BLOCK_SIZE_N)
            accumulator = ttl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=ttl.float32)
            for ki in range(k_tiles):
                offs_k = ki * BLOCK_SIZE_K + ttl.arange(0, BLOCK_SIZE_K)
                a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
                b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
                a = ttl.load(a_ptrs, mask=offs_k_for_mask[None, :] < K - ki * BLOCK_SIZE_K, other=0.0)
                b = ttl.load(b_ptrs, mask=offs_k_for_mask[:, None] < K - ki * BLOCK_SIZE_K, other=0.0)
                accumulator = ttl.dot(a, b, accumulator)
            tile_id_c += NUM_SMS
            pid_m, pid_n = triton_tile_pid(tile_id_c, num_pid_in_group, num_pid_m, GROUP_SIZE_M)
            offs_cm = pid_m * BLOCK_SIZE_M + ttl.arange(0, BLOCK_SIZE_M)
            offs_cn = pid_n * BLOCK_SIZE_N + ttl.arange(0, BLOCK_SIZE_N)
            c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
            c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
            if c_ptr.dtype.element_ty == ttl.float8e4nv:
                c = accumulator.to(ttl.float8e4nv)
            else:
                c = accumulator.to(ttl.float16)
            ttl.store(c_ptrs, c, mask=c_mask)

    @triton.jit
    def triton_matmul_descriptor_persistent_kernel(a_desc, b_desc, c_desc, M, N, K,
                                                   BLOCK_SIZE_M: ttl.constexpr, BLOCK_SIZE_N: ttl.constexpr,
                                                   BLOCK_SIZE_K: ttl.constexpr, GROUP_SIZE_M: ttl.constexpr,
                                                   NUM_SMS: ttl.constexpr):  # fmt: skip
        num_pid_m = ttl.cdiv(M, BLOCK_SIZE_M)
        num_pid_n = ttl.cdiv(N, BLOCK_SIZE_N)
        k_tiles = ttl.cdiv(K, BLOCK_SIZE_K)
        num_tiles = num_pid_m * num_pid_n
        num_pid_in_group = GROUP_SIZE_M * num_pid_n
        for tile_id in ttl.range(ttl.program_id(0), num_tiles, NUM_SMS):
            pid_m, pid_n = triton_tile_pid(tile_id, num_pid_in_group, num_pid_m, GROUP_SIZE_M)
            offs_am = pid_m * BLOCK_SIZE_M
            offs_bn = pid_n * BLOCK_SIZE_N
            accumulator = ttl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=ttl.float32)
            for ki in range(k_tiles):
                offs_k = ki * BLOCK_SIZE_K
                a = a_desc.load([offs_am, offs_k])
                b = b_desc.load([offs_bn, offs_k])
                accumulator = ttl.dot(a, b.T, accumulator)
            c_desc.store([offs_am, offs_bn], accumulator.to(c_desc.dtype))

    @triton.jit
    def triton_matmul_int8_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk,
                                  stride_bn, stride_cm, stride_cn, BLOCK_SIZE_M: ttl.constexpr,
                                  BLOCK_SIZE_N: ttl.constexpr, BLOCK_SIZE_K: ttl.constexpr,
                                  GROUP_SIZE_M: ttl.constexpr):  # fmt: skip
        pid = ttl.program_id(axis=0)
        num_pid_m = ttl.cdiv(M, BLOCK_SIZE_M)
        num_pid_n = ttl.cdiv(N, BLOCK_SIZE_N)
        num_pid_in_group = GROUP_SIZE_M * num_pid_n
        group_id = pid // num_pid_in_group
        first_pid_m = group_id * GROUP_SIZE_M
        group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
        pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
        pid_n = (pid % num_pid_in_group) // group_size_m
        offs_am = (pid_m * BLOCK_SIZE_M + ttl.arange(0, BLOCK_SIZE_M)) % M
        offs_bn = (pid_n * BLOCK_SIZE_N + ttl.arange(0, BLOCK_SIZE_N)) % N
        offs_k = ttl.arange(0, BLOCK_SIZE_K)
        a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
        b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
        accumulator = ttl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=ttl.int32)
        for k in range(ttl.cdiv(K, BLOCK_SIZE_K)):
            a = ttl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_SIZE_K, other=0)
            b = ttl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_SIZE_K, other=0)
            accumulator = ttl.dot(a, b, accumulator)
            a_ptrs += BLOCK_SIZE_K * stride_ak
            b_ptrs += BLOCK_SIZE_K * stride_bk
        offs_cm = pid_m * BLOCK_SIZE_M + ttl.arange(0, BLOCK_SIZE_M)
        offs_cn = pid_n * BLOCK_SIZE_N + ttl.arange(0, BLOCK_SIZE_N)
        c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
        c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
        ttl.store(c_ptrs, accumulator, mask=c_mask)

    @triton.jit
    def triton_attention_fwd_kernel(Q, K, V, Out, sm_scale, stride_qz, stride_qh, stride_qm,
                                    stride_qk, stride_kz, stride_kh, stride_kn, stride_kk,
                                    stride_vz, stride_vh, stride_vn, stride_vk, stride_oz,
                                    stride_oh, stride_om, stride_ok, H, N_CTX,
                                    HEAD_DIM: ttl.constexpr, BLOCK_M: ttl.constexpr,
                                    BLOCK_N: ttl.constexpr, CAUSAL: ttl.constexpr):  # fmt: skip
        start_m = ttl.program_id(0)
        off_hz = ttl.program_id(1)
        off_z = off_hz // H
        off_h = off_hz % H
        offs_m = start_m * BLOCK_M + ttl.arange(0, BLOCK_M)
        offs_n = ttl.arange(0, BLOCK_N)
        offs_d = ttl.arange(0, HEAD_DIM)
        q_ptrs = Q + off_z * stride_qz + off_h * stride_qh + offs_m[:, None] * stride_qm + offs_d[None, :] * stride_qk
        k_ptrs = K + off_z * stride_kz + off_h * stride_kh + offs_n[None, :] * stride_kn + offs_d[:, None] * stride_kk
        v_ptrs = V + off_z * stride_vz + off_h * stride_vh + offs_n[:, None] * stride_vn + offs_d[None, :] * stride_vk
        q = ttl.load(q_ptrs)
        m_i = ttl.full([BLOCK_M], float("-inf"), ttl.float32)
        l_i = ttl.zeros([BLOCK_M], ttl.float32)
        acc = ttl.zeros([BLOCK_M, HEAD_DIM], ttl.float32)
        qk_scale = sm_scale * 1.44269504
        end = (start_m + 1) * BLOCK_M if CAUSAL else N_CTX
        for start_n in range(0, end, BLOCK_N):
            k = ttl.load(k_ptrs + start_n * stride_kn)
            qk = ttl.dot(q, k)
            if CAUSAL:
                qk = ttl.where(offs_m[:, None] >= start_n + offs_n[None, :], qk, float("-inf"))
            m_ij = ttl.maximum(m_i, ttl.max(qk, 1) * qk_scale)
            p = ttl.math.exp2(qk * qk_scale - m_ij[:, None])
            alpha = ttl.math.exp2(m_i - m_ij)
            l_i = l_i * alpha + ttl.sum(p, 1)
            v = ttl.load(v_ptrs + start_n * stride_vn)
            acc = ttl.dot(p.to(v.dtype), v, acc * alpha[:, None])
            m_i = m_ij
        out = acc / l_i[:, None]
        o_ptrs = Out + off_z * stride_oz + off_h * stride_oh + offs_m[:, None] * stride_om + offs_d[None, :] * stride_ok
        ttl.store(o_ptrs, out.to(Out.dtype.element_ty))


    @triton.jit
    def triton_attention_fwd_overlapped_kernel(Q, K, V, Out, sm_scale, stride_qz, stride_qh,
                                               stride_qm, stride_qk, stride_kz, stride_kh,
                                               stride_kn, stride_kk, stride_vz, stride_vh,
                                               stride_vn, stride_vk, stride_oz, stride_oh,
                                               stride_om, stride_ok, H, N_CTX,
                                               HEAD_DIM: ttl.constexpr, BLOCK_M: ttl.constexpr,
                                               BLOCK_N: ttl.constexpr, CAUSAL: ttl.constexpr):  # fmt: skip
        start_m = ttl.program_id(0)
        off_hz = ttl.program_id(1)
        off_z = off_hz // H
        off_h = off_hz % H
        offs_m = start_m * BLOCK_M + ttl.arange(0, BLOCK_M)
        offs_n = ttl.arange(0, BLOCK_N)
        offs_d = ttl.arange(0, HEAD_DIM)
        q_ptrs = Q + off_z * stride_qz + off_h * stride_qh + offs_m[:, None] * stride_qm + offs_d[None, :] * stride_qk
        k_ptrs = K + off_z * stride_kz + off_h * stride_kh + offs_n[None, :] * stride_kn + offs_d[:, None] * stride_kk
        v_ptrs = V + off_z * stride_vz + off_h * stride_vh + offs_n[:, None] * stride_vn + offs_d[None, :] * stride_vk
        q = ttl.load(q_ptrs)
        qk_scale = sm_scale * 1.44269504
        end = (start_m + 1) * BLOCK_M if CAUSAL else N_CTX
        qk = ttl.dot(q, ttl.load(k_ptrs))
        if CAUSAL:
            qk = ttl.where(offs_m[:, None] >= offs_n[None, :], qk, float("-inf"))
        m_i = ttl.max(qk, 1) * qk_scale
        p = ttl.math.exp2(qk * qk_scale - m_i[:, None])
        l_i = ttl.sum(p, 1)
        p = p.to(V.dtype.element_ty)
        acc = ttl.zeros([BLOCK_M, HEAD_DIM], ttl.float32)
        for start_n in range(BLOCK_N, end, BLOCK_N):
            qk = ttl.dot(q, ttl.load(k_ptrs + start_n * stride_kn))
            acc = ttl.dot(p, ttl.load(v_ptrs + (start_n - BLOCK_N) * stride_vn), acc)
            if CAUSAL:
                qk = ttl.where(offs_m[:, None] >= start_n + offs_n[None, :], qk, float("-inf"))
            m_ij = ttl.maximum(m_i, ttl.max(qk, 1) * qk_scale)
            p = ttl.math.exp2(qk * qk_scale - m_ij[:, None])
            alpha = ttl.math.exp2(m_i - m_ij)
            l_i = l_i * alpha + ttl.sum(p, 1)
            p = p.to(V.dtype.element_ty)
            acc = acc * alpha[:, None]
            m_i = m_ij
        acc = ttl.dot(p, ttl.load(v_ptrs + (end - BLOCK_N) * stride_vn), acc)
        out = acc / l_i[:, None]
        o_ptrs = Out + off_z * stride_oz + off_h * stride_oh + offs_m[:, None] * stride_om + offs_d[None, :] * stride_ok
        ttl.store(o_ptrs, out.to(Out.dtype.element_ty))


# -- launch configurations (as Triton's tutorials choose them; softmax_config and
# layer_norm_config come from kernellab.examples) --------------------------------------------

ADD_BLOCK, ADD_WARPS = 1024, 4


# -- results ---------------------------------------------------------------------------------


class Results:
    """Every measurement as a row: section, case, provider, value (or None), unit, note.

    With `sink`, each row is also appended to that file as a JSON line the moment it is made, so
    a section run in a child process leaves its rows behind even if it is killed."""

    def __init__(self, sink: str | None = None):
        self.rows: list[dict] = []
        self.sink = sink

    def _emit(self, record: dict) -> None:
        if self.sink:
            with open(self.sink, "a") as f:
                f.write(json.dumps(record, default=str) + "\n")

    def add(self, section, case, provider, value, unit, note="", **extra):
        row = dict(
            section=section,
            case=str(case),
            provider=provider,
            value=value,
            unit=unit,
            note=note,
            **extra,
        )
        self.rows.append(row)
        self._emit({"row": row})
        shown = "—" if value is None else f"{value:.4g} {unit}"
        print(
            f"  {section} | {case} | {provider}: {shown}" + (f"  [{note}]" if note else ""),
            flush=True,
        )
        return row

    def info(self, **facts) -> None:
        self._emit({"info": facts})

    def error(self, section, case, provider, exc: BaseException):
        message = f"{type(exc).__name__}: {exc}".strip()
        first = message.splitlines()[0][:200] if message else type(exc).__name__
        print(f"  {section} | {case} | {provider}: ERROR {first}", flush=True)
        traceback.print_exception(type(exc), exc, exc.__traceback__, limit=6)
        return self.add(section, case, provider, None, "", note="ERROR: " + first)

    def row(self, section, case, provider) -> dict | None:
        for r in self.rows:
            if r["section"] == section and r["case"] == str(case) and r["provider"] == provider:
                return r
        return None

    def value(self, section, case, provider):
        r = self.row(section, case, provider)
        return None if r is None else r["value"]

    def cell(self, section, case, provider) -> str:
        r = self.row(section, case, provider)
        return "—" if r is None else fmt_value(r["value"], r.get("note") or "")

    def copy_ceiling(self):
        return next((r["value"] for r in self.rows if r["section"] == "copy" and r["value"]), None)


class Unavailable(RuntimeError):
    """A provider that is not installed here (Triton): recorded as n/a, no traceback."""


def need_triton() -> None:
    if triton is None:
        raise Unavailable(f"n/a: triton unavailable ({TRITON_ERROR})")


def precompile(kernel, launches, target: str) -> None:
    """Compile kernellab `kernel` for each (args, meta) of `launches` in parallel processes, as
    kl.autotune does, so the sequential timing loop finds every config in the disk cache (the
    section's wall time, not a figure: compile times are their own section). A config that
    fails to compile fails again, with its message, when the loop launches it."""
    from kernellab.runtime.parallel_compile import CompileJob, KernelRef, compile_job, default_executor

    ref = KernelRef.of(kernel)
    jobs = [CompileJob.for_launch(ref, kernel, args, meta, target) for args, meta in launches]
    executor = default_executor(len(jobs))
    try:
        if executor is None:
            for job in jobs:
                compile_job(job)
        else:
            with executor:
                list(executor.map(compile_job, jobs))
    finally:
        ref.release()


def guarded(results: Results, section, case, provider, unit, fn, **extra):
    """Run one measurement; a failure is recorded and printed, never raised."""
    try:
        value, note, *more = fn()  # (value, note) or (value, note, {extra facts for the JSON})
        if more:
            extra = {**extra, **more[0]}
    except Unavailable as e:
        return results.add(section, case, provider, None, unit, note=str(e))
    except Exception as e:
        return results.error(section, case, provider, e)
    return results.add(section, case, provider, value, unit, note, **extra)


# -- timing ----------------------------------------------------------------------------------


class Timer:
    """CUDA-event timing of one callable: median over >= MIN_REPS runs, L2 flushed before each."""

    def __init__(self, torch):
        self.torch = torch
        self.flush = torch.empty(FLUSH_BYTES, dtype=torch.int8, device="cuda")

    def median_ms(self, fn) -> tuple[float, dict]:
        torch = self.torch
        fn()  # compile / load / allocate outside the timing
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(3):
            self.flush.zero_()
            fn()
        end.record()
        torch.cuda.synchronize()
        estimate = max(start.elapsed_time(end) / 3, 1e-3)
        reps = int(min(max(REP_MS / estimate, MIN_REPS), MAX_REPS))
        for _ in range(min(reps, 10)):
            fn()
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
        for i in range(reps):
            self.flush.zero_()
            starts[i].record()
            fn()
            ends[i].record()
        torch.cuda.synchronize()
        times = sorted(s.elapsed_time(e) for s, e in zip(starts, ends))
        q = lambda p: times[min(len(times) - 1, int(p * len(times)))]
        central = times[int(0.2 * len(times)):max(int(0.8 * len(times)), int(0.2 * len(times)) + 1)]
        return statistics.median(times), {"reps": reps, "p20_ms": q(0.2), "p80_ms": q(0.8),
                                          "central_mean_ms": statistics.fmean(central)}  # fmt: skip

    def interleaved(self, fns: dict) -> dict:
        """{name: (ms, stats)} of callables timed in ROUNDS interleaved rounds (median_ms's runs
        of each per round, the order reversed every other round): a GPU's clock and temperature
        drift, and a ratio of two figures taken minutes apart carries that drift. A round's
        figure is the mean of its runs between the 20th and 80th percentiles: CUDA events tick
        in about 0.5 µs steps, so the median of a 40 µs kernel moves in 1.5% steps while the
        central mean does not. Each name's median over the rounds (of the figure and of each
        stat); its stats list every round's figure."""
        rounds = in_interleaved_rounds([lambda fn=fn: self.median_ms(fn)[1] for fn in fns.values()], ROUNDS)
        out = {}
        for name, runs in zip(fns, rounds):
            figures = [run["central_mean_ms"] for run in runs]
            stats = {key: statistics.median(run[key] for run in runs) for key in runs[0]}
            out[name] = (statistics.median(figures), {**stats, "rounds_ms": [round(ms, 6) for ms in figures]})
        return out


def compare(results: Results, timer: Timer, section, case, unit, candidates: dict, value_of) -> None:
    """Providers of one case timed against each other in interleaved rounds (Timer.interleaved).
    `candidates`: {provider: prepare}, prepare() -> (launch, note), or (None, "WRONG: ...")
    when its checked result is wrong; it may raise (recorded, the others still run).
    `value_of(ms)` is the figure reported; rows come in the candidates' order."""
    launches, outcome = {}, {}
    for provider, prepare in candidates.items():
        try:
            launch, note = prepare()
        except Unavailable as e:
            outcome[provider] = (None, str(e), {})
            continue
        except Exception as e:
            outcome[provider] = e
            continue
        outcome[provider] = (None, note, {})
        if launch is not None:
            launches[provider] = launch
    try:
        for provider, (ms, st) in timer.interleaved(launches).items():
            outcome[provider] = (value_of(ms), outcome[provider][1], {"ms": ms, **st})
    except Exception as e:
        outcome.update({provider: e for provider in launches})
    for provider, got in outcome.items():
        if isinstance(got, Exception):
            results.error(section, case, provider, got)
        else:
            value, note, extra = got
            results.add(section, case, provider, value, unit, note, **extra)


def gbps(nbytes: float, ms: float) -> float:
    return nbytes / (ms * 1e-3) / 1e9


# -- the measurements ------------------------------------------------------------------------


def bench_copy(results, torch, timer):
    x = torch.randn(COPY_ELEMENTS, device="cuda")

    def run():
        ms, st = timer.median_ms(lambda: x.clone())
        return gbps(2 * x.numel() * 4, ms), f"{ms:.3f} ms", {"median_ms": ms, **st}

    guarded(results, "copy", f"2^{int(math.log2(COPY_ELEMENTS))} fp32", "torch clone", "GB/s", run)


def bench_vector_add(results, torch, timer):
    for n in VECTOR_SIZES:
        vector_add_case(results, torch, timer, n)


def vector_add_case(results, torch, timer, n):
    case = f"2^{int(math.log2(n))}"
    x = torch.rand(n, device="cuda") + 0.5
    y = torch.rand(n, device="cuda") - 2.0
    nbytes = 3 * n * 4
    grid = (kl.cdiv(n, ADD_BLOCK),)

    def kernellab_run():
        out = torch.full_like(x, float("nan"))
        add_kernel[grid](x, y, out, n, BLOCK_SIZE=ADD_BLOCK, num_warps=ADD_WARPS)
        torch.cuda.synchronize()
        if not torch.equal(out, x + y):
            return None, "WRONG: differs from x + y"
        ms, st = timer.median_ms(
            lambda: add_kernel[grid](x, y, out, n, BLOCK_SIZE=ADD_BLOCK, num_warps=ADD_WARPS)
        )
        return gbps(nbytes, ms), "", {"median_ms": ms, **st}

    def torch_run():
        ms, st = timer.median_ms(lambda: x + y)
        return gbps(nbytes, ms), "", {"median_ms": ms, **st}

    def triton_run():
        need_triton()
        out = torch.empty_like(x)
        triton_add_kernel[grid](x, y, out, n, BLOCK_SIZE=ADD_BLOCK, num_warps=ADD_WARPS)
        ms, st = timer.median_ms(
            lambda: triton_add_kernel[grid](x, y, out, n, BLOCK_SIZE=ADD_BLOCK, num_warps=ADD_WARPS)
        )
        return gbps(nbytes, ms), "", {"median_ms": ms, **st}

    guarded(results, "vector add", case, "kernellab", "GB/s", kernellab_run)
    guarded(results, "vector add", case, "torch", "GB/s", torch_run)
    guarded(results, "vector add", case, "triton", "GB/s", triton_run)


def bench_softmax(results, torch, timer):
    for n_cols in SOFTMAX_COLS:
        softmax_case(results, torch, timer, n_cols)


def softmax_case(results, torch, timer, n_cols):
    case = f"{SOFTMAX_ROWS}x{n_cols}"
    x = torch.randn(SOFTMAX_ROWS, n_cols, device="cuda") * 3
    nbytes = 2 * x.numel() * 4
    block, warps = softmax_config(n_cols)
    grid = (SOFTMAX_ROWS,)

    def kernellab_run():
        y = torch.full_like(x, float("nan"))
        softmax_kernel[grid](
            y, x, x.stride(0), y.stride(0), n_cols, BLOCK_SIZE=block, num_warps=warps
        )
        torch.cuda.synchronize()
        ref = torch.softmax(x.double(), dim=1)
        err = float(((y.double() - ref).abs() / (ref.abs() + 1e-30)).max())
        if not err <= 1e-4:  # also catches NaN (unwritten elements)
            return None, f"WRONG: max relative error {err:.3g}"
        ms, st = timer.median_ms(lambda: softmax_kernel[grid](y, x, x.stride(0), y.stride(0), n_cols,
                                                             BLOCK_SIZE=block, num_warps=warps))  # fmt: skip
        return gbps(nbytes, ms), f"BLOCK={block} warps={warps}", {"median_ms": ms, **st}

    def torch_run():
        ms, st = timer.median_ms(lambda: torch.softmax(x, dim=1))
        return gbps(nbytes, ms), "", {"median_ms": ms, **st}

    def triton_run():
        need_triton()
        y = torch.empty_like(x)
        ms, st = timer.median_ms(lambda: triton_softmax_kernel[grid](y, x, x.stride(0), y.stride(0), n_cols,
                                                                    BLOCK_SIZE=block, num_warps=warps))  # fmt: skip
        return gbps(nbytes, ms), "", {"median_ms": ms, **st}

    guarded(results, "softmax", case, "kernellab", "GB/s", kernellab_run)
    guarded(results, "softmax", case, "torch", "GB/s", torch_run)
    guarded(results, "softmax", case, "triton", "GB/s", triton_run)


def bench_layer_norm(results, torch, timer):
    M, eps = LAYERNORM_ROWS, 1e-5
    for N in LAYERNORM_COLS:
        layer_norm_case(results, torch, timer, N, M=M, eps=eps)


def layer_norm_case(results, torch, timer, N, M, eps):
    case = f"{M}x{N} fp16"
    x = (-2.3 + 0.5 * torch.randn(M, N, device="cuda")).half()
    w = (torch.rand(N, device="cuda") + 0.5).half()
    b = (torch.rand(N, device="cuda") - 0.5).half()
    nbytes = 2 * M * N * 2 + 2 * N * 2 + 2 * M * 4  # x, y; w, b; mean, rstd
    block, warps = layer_norm_config(N, 2)
    grid = (M,)

    def launch(kernel, y, mean, rstd):
        kernel[grid](x, y, w, b, mean, rstd, x.stride(0), N, eps, BLOCK_SIZE=block, num_warps=warps)

    def buffers(fill):
        return (
            torch.full_like(x, fill),
            torch.full((M,), fill, device="cuda"),
            torch.full((M,), fill, device="cuda"),
        )

    def kernellab_run():
        y, mean, rstd = buffers(float("nan"))
        launch(layer_norm_kernel, y, mean, rstd)
        torch.cuda.synchronize()
        ref = torch.nn.functional.layer_norm(x.double(), (N,), w.double(), b.double(), eps)
        err = float((y.double() - ref).abs().max())
        if not err <= 1e-2:
            return None, f"WRONG: max error {err:.3g}"
        ms, st = timer.median_ms(lambda: launch(layer_norm_kernel, y, mean, rstd))
        return gbps(nbytes, ms), f"BLOCK={block} warps={warps}", {"median_ms": ms, **st}

    def torch_run():
        ms, st = timer.median_ms(lambda: torch.nn.functional.layer_norm(x, (N,), w, b, eps))
        return gbps(nbytes, ms), "writes no mean/rstd", {"median_ms": ms, **st}

    def triton_run():
        need_triton()
        y, mean, rstd = buffers(0.0)
        ms, st = timer.median_ms(lambda: launch(triton_layer_norm_kernel, y, mean, rstd))
        return gbps(nbytes, ms), "", {"median_ms": ms, **st}

    guarded(results, "layer norm", case, "kernellab", "GB/s", kernellab_run)
    guarded(results, "layer norm", case, "torch", "GB/s", torch_run)
    guarded(results, "layer norm", case, "triton", "GB/s", triton_run)


def bench_softmax_persistent(results, torch, timer):
    for n_cols in PERSISTENT_COLS:
        softmax_persistent_case(results, torch, timer, n_cols)


def softmax_persistent_case(results, torch, timer, n_cols):
    """The tutorial's launch: as many programs as fit the SMs at the occupancy the kernel's
    registers and shared memory allow (both compilers get the same grid: the SM count x 4)."""
    rows = PERSISTENT_ROWS
    case = f"{rows}x{n_cols}"
    x = torch.randn(rows, n_cols, device="cuda") * 3
    nbytes = 2 * x.numel() * 4
    block, warps = softmax_config(n_cols)
    props = torch.cuda.get_device_properties(0)
    stages = 4 if getattr(props, "shared_memory_per_block_optin", 0) > 200_000 else 2  # as the tutorial
    programs = min(rows, props.multi_processor_count * 4)
    grid = (programs,)

    def launch(kernel, y):
        kernel[grid](y, x, x.stride(0), y.stride(0), rows, n_cols, BLOCK_SIZE=block,
                     num_stages=stages, num_warps=warps)  # fmt: skip

    def kernellab():
        y = torch.full_like(x, float("nan"))
        launch(softmax_persistent_kernel, y)
        torch.cuda.synchronize()
        ref = torch.softmax(x.double(), dim=1)
        err = float(((y.double() - ref).abs() / (ref.abs() + 1e-30)).max())
        if not err <= 1e-4:
            return None, f"WRONG: max relative error {err:.3g}"
        return lambda: launch(softmax_persistent_kernel, y), f"BLOCK={block} warps={warps} stages={stages} programs={programs}"

    def triton_():
        need_triton()
        y = torch.empty_like(x)
        launch(triton_softmax_persistent_kernel, y)
        return lambda: launch(triton_softmax_persistent_kernel, y), ""

    compare(results, timer, "softmax persistent", case, "GB/s", {"kernellab": kernellab, "triton": triton_},
            lambda ms: gbps(nbytes, ms))  # fmt: skip


# ‖C - ref‖ / ‖ref‖, fp16 output; int8 is exact (int32 output)
MATMUL_TOLERANCE = {"fp16": 2e-3, "bf16": 1e-2, "tf32": 2e-3, "fp8": 2e-3, "int8": 0.0}


def tflops(m, n, k, ms: float) -> float:
    return 2.0 * m * n * k / (ms * 1e-3) / 1e12


def bench_matmul(results, torch, timer):
    for m, n, k, dtype in MATMUL_CASES:
        matmul_case(results, torch, timer, m, n, k, dtype)


def matmul_case(results, torch, timer, m, n, k, dtype):
    """One shape: each compiler autotuned over MATMUL_CONFIGS (the fastest correct config
    wins), cuBLAS through torch.matmul (tf32 allowed for the tf32 case)."""
    case = f"{m}x{n}x{k} {dtype}"
    int8 = dtype == "int8"
    out_dtype = torch.int32 if int8 else torch.float16
    if dtype == "fp8":  # e4m3, B column-major (both operands K-major, as fp8 tensor cores read them)
        a = torch.randn(m, k, device="cuda").to(torch.float8_e4m3fn)
        b = torch.randn(n, k, device="cuda").to(torch.float8_e4m3fn).t()
    elif int8:  # B column-major, as for fp8 (and as torch._int_mm's cuBLASLt call prefers)
        a = torch.randint(-128, 128, (m, k), device="cuda", dtype=torch.int8)
        b = torch.randint(-128, 128, (n, k), device="cuda", dtype=torch.int8).t()
    else:
        torch_dtype = {"fp16": torch.float16, "bf16": torch.bfloat16, "tf32": torch.float32}[dtype]
        a = torch.randn(m, k, device="cuda").to(torch_dtype)
        b = torch.randn(k, n, device="cuda").to(torch_dtype)
    ref = a.double() @ b.double()
    tolerance = MATMUL_TOLERANCE[dtype]
    if dtype == "fp8":  # as accurate as cuBLAS's own fast fp8 accumulation, or the fixed bound
        one = torch.ones((), device="cuda")
        fast = torch._scaled_mm(a, b, one, one, out_dtype=torch.float16, use_fast_accum=True)
        tolerance = max(tolerance, 2 * float((fast.double() - ref).norm() / ref.norm()))

    sms = torch.cuda.get_device_properties(0).multi_processor_count

    def launch_args(kernel, c, config):
        """(grid, args, meta) of one config's launch."""
        bm, bn, bk, group, stages, warps = config
        tiles = kl.cdiv(m, bm) * kl.cdiv(n, bn)
        args = (a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1))
        meta = dict(BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn, BLOCK_SIZE_K=bk, GROUP_SIZE_M=group,
                    num_stages=stages, num_warps=warps)  # fmt: skip
        if kernel in (matmul_persistent_kernel, globals().get("triton_matmul_persistent_kernel")):
            return (min(sms, tiles),), args, {**meta, "NUM_SMS": sms}  # one program per SM at most
        return (tiles,), args, {**meta, **({} if int8 else {"ACTIVATION": ""})}

    def launch(kernel, c, config):
        grid, args, meta = launch_args(kernel, c, config)
        kernel[grid](*args, **meta)

    def autotuned(kernel):
        best, notes = None, []
        if isinstance(kernel, kl.JITFunction):  # kernellab's configs compile side by side first
            from kernellab.backends.nvidia.driver import device_info

            c = torch.empty((m, n), device="cuda", dtype=out_dtype)
            launches = [launch_args(kernel, c, config)[1:] for config in MATMUL_CONFIGS]
            precompile(kernel, launches, device_info(torch.cuda.current_device()).arch)
        for config in MATMUL_CONFIGS:
            c = torch.full((m, n), -(2**31) if int8 else float("nan"), device="cuda", dtype=out_dtype)
            try:
                launch(kernel, c, config)
                torch.cuda.synchronize()
            except Exception as e:  # a config this compiler can't build: the others still run
                notes.append(f"{config}: {type(e).__name__}: {str(e).splitlines()[0][:80]}")
                continue
            err = float((c.double() - ref).norm() / ref.norm())
            if not err <= tolerance:  # NaN too: an unwritten element
                notes.append(f"{config}: WRONG (relative error {err:.3g})")
                continue
            ms, st = timer.median_ms(lambda: launch(kernel, c, config))
            if best is None or ms < best[0]:
                best = (ms, config, st, err)
        if best is None:
            return None, "WRONG: no config gave a correct result; " + "; ".join(notes)
        ms, config, st, err = best
        note = "best {}x{}x{} g{} s{} w{}".format(*config) + f", rel. error {err:.1e}"
        return tflops(m, n, k, ms), note, {"median_ms": ms, "config": config, "skipped": notes, **st}

    def torch_run():
        if int8:  # cuBLASLt int8 → int32
            ms, st = timer.median_ms(lambda: torch._int_mm(a, b))
            return tflops(m, n, k, ms), "torch._int_mm", {"median_ms": ms, **st}
        if dtype == "fp8":  # cuBLAS fp8 through torch._scaled_mm (unit scales, fp16 out)
            one = torch.ones((), device="cuda")
            ms, st = timer.median_ms(lambda: torch._scaled_mm(a, b, one, one, out_dtype=torch.float16))
            return tflops(m, n, k, ms), "torch._scaled_mm", {"median_ms": ms, **st}
        torch.backends.cuda.matmul.allow_tf32 = dtype == "tf32"
        ms, st = timer.median_ms(lambda: torch.matmul(a, b))
        return tflops(m, n, k, ms), "", {"median_ms": ms, **st}

    def triton_run(name):
        need_triton()
        return autotuned(globals()[name])

    kernel = matmul_int8_kernel if int8 else matmul_kernel
    guarded(results, "matmul", case, "kernellab", "TFLOP/s", lambda: autotuned(kernel))
    guarded(results, "matmul", case, "cuBLAS", "TFLOP/s", torch_run)
    guarded(results, "matmul", case, "triton", "TFLOP/s",
            lambda: triton_run("triton_matmul_int8_kernel" if int8 else "triton_matmul_kernel"))  # fmt: skip
    if int8:  # the persistent kernel accumulates in fp32 and stores fp16 or fp8
        return
    guarded(results, "matmul", case, "kernellab persistent", "TFLOP/s", lambda: autotuned(matmul_persistent_kernel))
    guarded(results, "matmul", case, "triton persistent", "TFLOP/s",
            lambda: triton_run("triton_matmul_persistent_kernel"))  # fmt: skip


def bench_matmul_descriptor(results, torch, timer):
    for m, n, k, dtype in MATMUL_DESCRIPTOR_CASES:
        matmul_descriptor_case(results, torch, timer, m, n, k, dtype)


def matmul_descriptor_case(results, torch, timer, m, n, k, dtype):
    """One shape: the persistent descriptor matmul (kernellab's host TensorDescriptor, Triton's
    triton.tools one), each autotuned over MATMUL_DESCRIPTOR_CONFIGS, and cuBLAS."""
    from kernellab.tools.tensor_descriptor import TensorDescriptor

    case = f"{m}x{n}x{k} {dtype}"
    torch_dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}[dtype]
    a = torch.randn(m, k, device="cuda").to(torch_dtype)
    b = torch.randn(n, k, device="cuda").to(torch_dtype)  # N x K, as tutorial 09 keeps B
    ref = a.double() @ b.double().t()
    sms = torch.cuda.get_device_properties(0).multi_processor_count

    def autotuned(kernel, descriptor):
        best, notes = None, []
        for config in MATMUL_DESCRIPTOR_CONFIGS:
            bm, bn, bk, group, stages, warps = config
            c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.float16)
            descs = (descriptor(a, [bm, bk]), descriptor(b, [bn, bk]), descriptor(c, [bm, bn]))
            grid = (min(sms, kl.cdiv(m, bm) * kl.cdiv(n, bn)),)

            def launch():
                kernel[grid](*descs, m, n, k, BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn, BLOCK_SIZE_K=bk,
                             GROUP_SIZE_M=group, NUM_SMS=sms, num_stages=stages, num_warps=warps)  # fmt: skip

            try:
                launch()
                torch.cuda.synchronize()
            except Exception as e:
                notes.append(f"{config}: {type(e).__name__}: {str(e).splitlines()[0][:80]}")
                continue
            err = float((c.double() - ref).norm() / ref.norm())
            if not err <= MATMUL_TOLERANCE[dtype]:
                notes.append(f"{config}: WRONG (relative error {err:.3g})")
                continue
            ms, st = timer.median_ms(launch)
            if best is None or ms < best[0]:
                best = (ms, config, st, err)
        if best is None:
            return None, "WRONG: no config gave a correct result; " + "; ".join(notes)
        ms, config, st, err = best
        note = "best {}x{}x{} g{} s{} w{}".format(*config) + f", rel. error {err:.1e}"
        return tflops(m, n, k, ms), note, {"median_ms": ms, "config": config, "skipped": notes, **st}

    def kernellab_run():
        return autotuned(matmul_descriptor_persistent_kernel, TensorDescriptor.from_tensor)

    def torch_run():
        bt = b.t()
        ms, st = timer.median_ms(lambda: torch.matmul(a, bt))
        return tflops(m, n, k, ms), "", {"median_ms": ms, **st}

    def triton_run():
        need_triton()
        from triton.tools.tensor_descriptor import TensorDescriptor as TritonDescriptor

        return autotuned(triton_matmul_descriptor_persistent_kernel, TritonDescriptor.from_tensor)

    guarded(results, "matmul descriptor", case, "kernellab", "TFLOP/s", kernellab_run)
    guarded(results, "matmul descriptor", case, "cuBLAS", "TFLOP/s", torch_run)
    guarded(results, "matmul descriptor", case, "triton", "TFLOP/s", triton_run)


# the sustained matmul: square fp16/bf16 cases and tf32 at 4096 (the tutorial kernel only), the
# configs each compiler chooses among
MATMUL_SUSTAINED_CASES = [(n, n, n, dt) for dt in ("fp16", "bf16") for n in (4096, 8192)]
MATMUL_SUSTAINED_CASES += [(4096, 4096, 4096, "tf32")]
MATMUL_SUSTAINED_CONFIGS = {"fp16": [(128, 256, 64, 8, 3, 8), (128, 256, 64, 8, 4, 8)],
                            "tf32": [(128, 256, 32, 8, 3, 8), (128, 128, 32, 8, 4, 4), (128, 256, 64, 8, 3, 8)]}  # fmt: skip
MATMUL_SUSTAINED_CONFIGS["bf16"] = MATMUL_SUSTAINED_CONFIGS["fp16"]
SUSTAIN_SECONDS, SUSTAIN_ROUNDS, SUSTAIN_PICK_SECONDS = 2.0, 4, 0.6


def sustained_ms(torch, fn, seconds: float) -> tuple[float, GpuState]:
    """Mean time of `fn` run back to back for `seconds` (after a warm-up of a third of that),
    and the clock and power meanwhile: the steady state a training loop sees."""
    end = time.perf_counter() + seconds / 3
    while time.perf_counter() < end:
        fn()
        torch.cuda.synchronize()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    runs = 0
    with GpuState() as monitor:
        start.record()
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            for _ in range(20):
                fn()
            runs += 20
            torch.cuda.synchronize()
        stop.record()
        torch.cuda.synchronize()
    return start.elapsed_time(stop) / runs, monitor


def bench_matmul_sustained(results, torch):
    for m, n, k, dtype in MATMUL_SUSTAINED_CASES:
        matmul_sustained_case(results, torch, m, n, k, dtype)


def matmul_sustained_case(results, torch, m, n, k, dtype):
    """One shape at the card's steady state: cuBLAS, the tutorial matmul and tutorial 09's
    descriptor matmul (the same kernel texts for kernellab and Triton), each config checked,
    the faster of MATMUL_SUSTAINED_CONFIGS kept, then every contender run for SUSTAIN_SECONDS
    in SUSTAIN_ROUNDS interleaved rounds (the order reversed each round): the median of the rounds."""
    case = f"{m}x{n}x{k} {dtype}"
    torch_dtype = {"fp16": torch.float16, "bf16": torch.bfloat16, "tf32": torch.float32}[dtype]
    torch.backends.cuda.matmul.allow_tf32 = dtype == "tf32"
    a = torch.randn(m, k, device="cuda").to(torch_dtype)
    b = torch.randn(k, n, device="cuda").to(torch_dtype)
    bt = b.t().contiguous()  # N x K, as tutorial 09 keeps B
    configs = MATMUL_SUSTAINED_CONFIGS[dtype]
    ref = a.double() @ b.double()
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    from kernellab.tools.tensor_descriptor import TensorDescriptor

    def tutorial(kernel, config):
        bm, bn, bk, group, stages, warps = config
        c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.float16)
        args = (a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1))
        grid = (kl.cdiv(m, bm) * kl.cdiv(n, bn),)
        return c, lambda: kernel[grid](*args, BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn, BLOCK_SIZE_K=bk, GROUP_SIZE_M=group,
                                       ACTIVATION="", num_stages=stages, num_warps=warps)  # fmt: skip

    def descriptor(kernel, make, config):
        bm, bn, bk, group, stages, warps = config
        c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.float16)
        descs = (make(a, [bm, bk]), make(bt, [bn, bk]), make(c, [bm, bn]))
        grid = (min(sms, kl.cdiv(m, bm) * kl.cdiv(n, bn)),)
        return c, lambda: kernel[grid](*descs, m, n, k, BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn, BLOCK_SIZE_K=bk,
                                       GROUP_SIZE_M=group, NUM_SMS=sms, num_stages=stages, num_warps=warps)  # fmt: skip

    def cublas(_config):
        c = torch.empty((m, n), device="cuda", dtype=torch_dtype)
        return c, lambda: torch.matmul(a, b, out=c)

    contenders = {"cuBLAS": (cublas, [None]), "kernellab": (lambda cfg: tutorial(matmul_kernel, cfg), configs)}
    if dtype != "tf32":
        contenders["kernellab descriptor"] = (lambda cfg: descriptor(
            matmul_descriptor_persistent_kernel, TensorDescriptor.from_tensor, cfg), configs)  # fmt: skip
    try:
        need_triton()
        from triton.tools.tensor_descriptor import TensorDescriptor as TritonDescriptor

        contenders["triton"] = (lambda cfg: tutorial(triton_matmul_kernel, cfg), configs)
        if dtype != "tf32":
            contenders["triton descriptor"] = (lambda cfg: descriptor(
                triton_matmul_descriptor_persistent_kernel, TritonDescriptor.from_tensor, cfg), configs)  # fmt: skip
    except Unavailable as e:
        for row_case in [case, case + " descriptor"][: 1 if dtype == "tf32" else 2]:
            results.add("matmul sustained", row_case, "triton", None, "TFLOP/s", note=str(e))

    chosen = {}
    for name, (make, options) in contenders.items():
        best, notes = None, []
        for config in options:
            try:
                c, launch = make(config)
                launch()
                torch.cuda.synchronize()
                err = float((c.double() - ref).norm() / ref.norm())
                if not err <= MATMUL_TOLERANCE[dtype]:
                    notes.append(f"{config}: WRONG (relative error {err:.3g})")
                    continue
                ms = sustained_ms(torch, launch, SUSTAIN_PICK_SECONDS)[0] if len(options) > 1 else 0.0
            except Exception as e:
                notes.append(f"{config}: {type(e).__name__}: {str(e).splitlines()[0][:80]}")
                continue
            if best is None or ms < best[0]:
                best = (ms, config, launch)
        if best is None:
            provider, _, kind = name.partition(" ")
            results.add("matmul sustained", case + (" " + kind if kind else ""), provider, None, "TFLOP/s",
                        note="WRONG or failed: " + "; ".join(notes))  # fmt: skip
        else:
            chosen[name] = best

    def measure(launch):
        ms, state = sustained_ms(torch, launch, SUSTAIN_SECONDS)
        return ms, state.clock_mhz, state.power_w

    measured = in_interleaved_rounds([lambda best=best: measure(best[2]) for best in chosen.values()], SUSTAIN_ROUNDS)
    rounds = dict(zip(chosen, measured))
    # a row for the tutorial kernel and one for the descriptor kernel, cuBLAS in both
    kernels = [case, case + " descriptor"][: 1 if dtype == "tf32" else 2]
    for name, runs in rounds.items():
        ms = statistics.median(t for t, _, _ in runs)
        clock = power = None
        if runs[0][1] is not None:  # nvidia-smi read
            clock, power = (statistics.median(run[i] for run in runs) for i in (1, 2))
        config = chosen[name][1]
        where = "" if config is None else "{}x{}x{} g{} s{} w{}, ".format(*config)
        facts = f"{clock:.0f} MHz, {power:.0f} W" if clock is not None else "clock and power not read"
        provider, _, kind = name.partition(" ")
        for row_case in kernels if name == "cuBLAS" else [case + (" " + kind if kind else "")]:
            results.add("matmul sustained", row_case, provider, tflops(m, n, k, ms), "TFLOP/s", note=where + facts,
                        median_ms=ms, config=config, clock_mhz=clock, power_w=power,
                        rounds=[round(tflops(m, n, k, t), 1) for t, _, _ in runs])  # fmt: skip


ATTENTION_TOLERANCE = 2e-3  # ‖O - ref‖ / ‖ref‖: P is rounded to fp16 before P·V, O to fp16


def attention_config(head_dim: int) -> tuple[int, int, int, int]:
    """(BLOCK_M, BLOCK_N, num_warps, num_stages), the same for both compilers."""
    return (128, 64, 8, 3) if head_dim <= 64 else (128, 64, 8, 2)


def bench_attention(results, torch, timer):
    for n_ctx in ATTENTION_SEQS:
        for head_dim in (64, 128):
            for causal in (False, True):
                attention_case(results, torch, timer, n_ctx, head_dim, causal)


def attention_problem(torch, n_ctx: int, head_dim: int, causal: bool):
    """One fused-attention problem, fp16, batch 4 x 32 heads as Triton's tutorial 06: its FLOPs
    (4·Z·H·N²·D, halved when causal), torch's scaled_dot_product_attention on it, and
    `run(kernel, config, **options)`, which launches a kernel text (examples' or Triton's copy)
    with a (BLOCK_M, BLOCK_N, num_warps, num_stages) config (and launch options) once on
    NaN-filled outputs and returns the launch and its relative error against torch's fp32
    result."""
    z, h = ATTENTION_BATCH, ATTENTION_HEADS
    q, k, v = (torch.randn(z, h, n_ctx, head_dim, device="cuda", dtype=torch.float16) for _ in range(3))
    sm_scale = head_dim**-0.5
    flops = 4.0 * z * h * n_ctx * n_ctx * head_dim * (0.5 if causal else 1.0)
    attend = torch.nn.functional.scaled_dot_product_attention
    ref = attend(q.float(), k.float(), v.float(), is_causal=causal)

    def run(kernel, config, **options):
        block_m, block_n, warps, stages = config
        out = torch.full_like(q, float("nan"))

        def launch():
            kernel[(n_ctx // block_m, z * h)](
                q, k, v, out, sm_scale, *q.stride(), *k.stride(), *v.stride(), *out.stride(), h,
                n_ctx, HEAD_DIM=head_dim, BLOCK_M=block_m, BLOCK_N=block_n, CAUSAL=causal,
                num_warps=warps, num_stages=stages, **options,
            )  # fmt: skip

        launch()
        torch.cuda.synchronize()
        return launch, float((out.float() - ref).norm() / ref.norm())

    return flops, lambda: attend(q, k, v, is_causal=causal), run


def attention_case(results, torch, timer, n_ctx, head_dim, causal):
    """Fused attention forward (attention_problem): kernellab and Triton run the same kernel
    texts with the same tiles (attention_config), next to torch's scaled_dot_product_attention.
    The texts: the tutorial's order (examples.attention_fwd_kernel) and the overlapped one
    (examples.attention_fwd_overlapped_kernel); "kernellab" is the order
    examples.attention_overlaps picks for the case, "kernellab other order" the other one,
    and "kernellab bar.sync ring" the chosen order compiled with ring_mbarriers=False (a
    bar.sync per iteration, as Triton's loop, instead of the rings' mbarriers)."""
    case = f"N={n_ctx} D={head_dim}{' causal' if causal else ''}"
    flops, attend, run = attention_problem(torch, n_ctx, head_dim, causal)
    config = attention_config(head_dim)

    def checked(kernel, **options):
        launch, err = run(kernel, config, **options)
        if not err <= ATTENTION_TOLERANCE:
            return None, f"WRONG: relative error {err:.3g}"
        return launch, f"rel. error {err:.1e}"

    def sdpa():
        return attend, ""

    def triton_(kernel):
        def prepare():
            need_triton()
            return checked(kernel())
        return prepare

    orders = {"overlapped order": attention_fwd_overlapped_kernel, "tutorial order": attention_fwd_kernel}
    chosen = "overlapped order" if attention_overlaps(head_dim, n_ctx, causal) else "tutorial order"
    other = next(order for order in orders if order != chosen)

    def kernellab(order, **options):
        def prepare():
            launch, note = checked(orders[order], **options)
            return launch, f"{order}; {note}"
        return prepare

    compare(results, timer, "attention", case, "TFLOP/s",
            {"kernellab": kernellab(chosen), "kernellab other order": kernellab(other),
             "kernellab bar.sync ring": kernellab(chosen, ring_mbarriers=False), "torch sdpa": sdpa,
             "triton": triton_(lambda: triton_attention_fwd_kernel),
             "triton overlapped": triton_(lambda: triton_attention_fwd_overlapped_kernel)},
            lambda ms: flops / (ms * 1e-3) / 1e12)  # fmt: skip


def bench_matmul_compile(results, target: str):
    """kl.compile of the largest tutorial config in this process, the cache bypassed, specialized
    as a launch on contiguous, aligned 4096x4096 operands would be (unit strides are constants)."""
    bm, bn, bk, group, stages, warps = MATMUL_CONFIGS[0]
    signature = "*fp16,*fp16,*fp16,i32,i32,i32,i32,i32,i32"
    constexprs = dict(BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn, BLOCK_SIZE_K=bk, GROUP_SIZE_M=group,
                      ACTIVATION="", stride_ak=1, stride_bn=1, stride_cn=1)  # fmt: skip
    a16 = {"tt.divisibility": 16}
    attrs = {name: a16 for name in ("a_ptr", "b_ptr", "c_ptr", "M", "N", "K", "stride_am",
                                    "stride_bk", "stride_cm")}  # fmt: skip

    def run():
        start = time.perf_counter()
        ck = kl.compile(matmul_kernel, signature=signature, constexprs=constexprs, attrs=attrs,
                        target=target, num_warps=warps, num_stages=stages, force=True)  # fmt: skip
        seconds = time.perf_counter() - start
        md = ck.metadata
        note = f"{md.get('registers')} registers, {md.get('spills')} B spilled, {md.get('shared_total')} B shared"
        return seconds * 1e3, note, {"times": dict(md.get("times", {}))}

    case = f"{bm}x{bn}x{bk} w{warps} s{stages} {target}"
    guarded(results, "matmul compile", case, "kernellab", "ms", run)


def bench_launch(results, torch):
    """Back-to-back launches of a small add, µs per launch (the host's work and the driver's):
    kernellab, torch's add and Triton take turns in LAUNCH_TRIALS interleaved rounds
    (in_interleaved_rounds), each keeping the median of its rounds, so that the host's clock
    and the order do not favour one of them."""
    n = LAUNCH_ELEMENTS
    x = torch.rand(n, device="cuda")
    y = torch.rand(n, device="cuda")
    out = {name: torch.full_like(x, float("nan")) for name in ("kernellab", "torch add(out=)", "triton")}

    def triton_once():
        need_triton()
        return lambda: triton_add_kernel[(1,)](x, y, out["triton"], n, BLOCK_SIZE=1024)

    contenders = {  # name → a function making its launch (Triton's first checks Triton is there)
        "kernellab": lambda: lambda: add_kernel[(1,)](x, y, out["kernellab"], n, BLOCK_SIZE=1024),
        "torch add(out=)": lambda: lambda: torch.add(x, y, out=out["torch add(out=)"]),
        "triton": triton_once,
    }
    case = f"{n} fp32 add"
    ready = {}
    for name, make in contenders.items():  # warmed up; one that fails is recorded and left out
        try:
            launch_once = make()
            for _ in range(100):
                launch_once()
            torch.cuda.synchronize()
            ready[name] = launch_once
        except Unavailable as e:
            results.add("warm launch", case, name, None, "µs", note=str(e))
        except Exception as e:
            results.error("warm launch", case, name, e)

    def trial(launch_once) -> float:
        start = time.perf_counter()
        for _ in range(LAUNCHES):
            launch_once()
        torch.cuda.synchronize()
        return (time.perf_counter() - start) / LAUNCHES * 1e6

    rounds = in_interleaved_rounds([lambda f=f: trial(f) for f in ready.values()], LAUNCH_TRIALS)
    for (name, _), trials in zip(ready.items(), rounds):

        def measured(name=name, trials=trials):
            if not torch.equal(out[name], x + y):
                return None, "WRONG: differs from x + y"
            note = f"rounds of {LAUNCHES} (in the order run): {', '.join(f'{t:.2f}' for t in trials)} µs"
            return statistics.median(trials), note

        guarded(results, "warm launch", case, name, "µs", measured)


# -- compile times in fresh processes --------------------------------------------------------

KERNELLAB_CHILD = """
import json, os, sys, time
MODE, TARGET = sys.argv[1], sys.argv[2]
if MODE == "launch":
    import torch
    torch.cuda.init()
    n = 1 << 20
    x = torch.rand(n, device="cuda")
    y = torch.rand(n, device="cuda")
    out = torch.full((n,), float("nan"), device="cuda")
    torch.cuda.synchronize()
t0 = time.perf_counter()
import kernellab as kl
import kernellab.language as tl
t_import = time.perf_counter()


@kl.jit
def add_kernel(x_ptr, y_ptr, output_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(output_ptr + offsets, x + y, mask=mask)


t_define = time.perf_counter()
if MODE == "compile":
    aligned = {"tt.divisibility": 16}
    ck = kl.compile(add_kernel, signature="*fp32,*fp32,*fp32,i32", constexprs={"BLOCK_SIZE": 1024},
                    target=TARGET, num_warps=4,
                    attrs={"x_ptr": aligned, "y_ptr": aligned, "output_ptr": aligned, "n_elements": aligned})
    correct = isinstance(ck.asm["cubin"], bytes) and len(ck.asm["cubin"]) > 0
else:
    ck = add_kernel[(n // 1024,)](x, y, out, n, BLOCK_SIZE=1024)
    torch.cuda.synchronize()
    correct = bool(torch.equal(out, x + y))
t_done = time.perf_counter()
md = ck.metadata
# modules this process compiled from source (no bytecode beside them, none written either)
from_source = sorted(name for name, m in list(sys.modules.items())
                     if getattr(getattr(m, "__spec__", None), "cached", None)
                     and not os.path.exists(m.__spec__.cached))
print("RESULT " + json.dumps({
    "import_s": t_import - t0, "call_s": t_done - t_define, "total_s": t_done - t0,
    "from_source": from_source,
    "cache_hit": bool(md.get("cache_hit")), "correct": correct,
    "stage_s": {k: float(v) for k, v in dict(md.get("times") or {}).items()},
    "registers": md.get("registers"), "target": md.get("target"),
}))
"""

TRITON_CHILD = """
import json, time
import torch
torch.cuda.init()
n = 1 << 20
x = torch.rand(n, device="cuda")
y = torch.rand(n, device="cuda")
out = torch.full((n,), float("nan"), device="cuda")
torch.cuda.synchronize()
t0 = time.perf_counter()
import triton
import triton.language as tl
t_import = time.perf_counter()


@triton.jit
def add_kernel(x_ptr, y_ptr, output_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(output_ptr + offsets, x + y, mask=mask)


t_define = time.perf_counter()
add_kernel[(n // 1024,)](x, y, out, n, BLOCK_SIZE=1024)
torch.cuda.synchronize()
t_done = time.perf_counter()
print("RESULT " + json.dumps({
    "import_s": t_import - t0, "call_s": t_done - t_define, "total_s": t_done - t0,
    "correct": bool(torch.equal(out, x + y)),
}))
"""


def run_child(code: str, args: list[str], env_extra: dict, workdir: str) -> dict:
    script = Path(workdir) / f"child_{abs(hash(code)) % 10**8}.py"
    script.write_text(textwrap.dedent(code))
    pythonpath = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    env = {**os.environ, "PYTHONPATH": pythonpath, **env_extra}
    env.pop("KERNELLAB_ALWAYS_COMPILE", None)
    proc = subprocess.run([sys.executable, str(script), *args], capture_output=True, text=True,
                          env=env, timeout=300, cwd=workdir)  # fmt: skip
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT ") :])
    tail = (proc.stdout + proc.stderr).strip().splitlines()[-12:]
    raise RuntimeError(f"child exited {proc.returncode} without a result:\n" + "\n".join(tail))


# what a compile of vector add imports: their bytecode is compiled before the fresh processes
BYTECODE_PACKAGES = ("kernellab", "xdsl", "llvmlite")


def compile_bytecode(packages=BYTECODE_PACKAGES, modules=()) -> str:
    """Compile the .pyc files of `packages` and of the single modules `modules` (names a fresh
    child reported as compiled from source: typing_extensions, say), as `pip install` does, so
    a fresh process times kernellab and not Python compiling the sources: a tree or a
    `pip install --no-compile` that never wrote bytecode (PYTHONDONTWRITEBYTECODE=1) compiles
    every module again in each process, about 250 ms for this compile on the 2-core VM and 28
    ms for typing_extensions alone on the H200 host (issue 13). What could not be compiled (a
    read-only folder) is named in the result, and each fresh process reports the modules it
    still compiled from source."""
    import compileall
    import importlib.util
    import py_compile

    failed = []
    for name in packages:
        spec = importlib.util.find_spec(name)
        folders = list(spec.submodule_search_locations or []) if spec else []
        if not folders or not all(compileall.compile_dir(f, quiet=2) for f in folders):
            failed.append(name)
    for name in modules:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            spec = None
        if spec is None or not spec.has_location or not spec.cached or not str(spec.origin).endswith(".py"):
            continue  # built in, frozen or already a package above
        try:
            py_compile.compile(spec.origin, cfile=spec.cached, doraise=True)
        except (OSError, py_compile.PyCompileError):
            failed.append(name)
    return f"bytecode compiled beforehand except {', '.join(failed)}" if failed else "bytecode compiled beforehand"


def prepare_bytecode(target: str, workdir: str) -> str:
    """compile_bytecode for a compile of vector add: the packages, then every module one
    untimed fresh child (which also warms the file cache) still compiled from source."""
    compile_bytecode()
    probe = run_child(KERNELLAB_CHILD, ["compile", target],
                      {"KERNELLAB_CACHE_DIR": tempfile.mkdtemp(prefix="kl-probe-", dir=workdir)}, workdir)  # fmt: skip
    return compile_bytecode(modules=probe["from_source"])


# fresh processes each compile figure is the median of: one process's time varies by 10-30%
COMPILE_RUNS = 5


def median_of_fresh(run_once, runs: int = COMPILE_RUNS):
    """(median value, the note of the median run + the spread) of `runs` calls of `run_once`,
    which returns (value or None, note); a failed call's note stands for the whole figure."""
    outcomes = [run_once() for _ in range(runs)]
    failed = next((o for o in outcomes if o[0] is None), None)
    if failed is not None:
        return failed
    ordered = sorted(outcomes, key=lambda o: o[0])
    value, note = ordered[len(ordered) // 2]
    return value, f"median of {runs} fresh processes ({ordered[0][0]:.0f}-{ordered[-1][0]:.0f} ms); {note}"


def bench_compile(results, target: str, on_gpu: bool):
    """First and cached compile (and, on a GPU, first launch) of vector add in fresh processes,
    after the bytecode of the modules they import is compiled (prepare_bytecode); each figure
    is the median of COMPILE_RUNS processes."""
    work = tempfile.mkdtemp(prefix="kl-bench-")
    section = "compile"
    bytecode = prepare_bytecode(target, work)

    def median_over_children(program: str, args: list[str], cache_variable: str, cache: str,
                             expect_hit: bool, judge):
        """A figure's measurement: `judge(result)` of COMPILE_RUNS fresh children running
        `program`, each with an empty cache dir, or, when `expect_hit`, all with `cache`, which
        one child fills first."""

        def once():
            where = cache if expect_hit else tempfile.mkdtemp(prefix="cache-", dir=work)
            return judge(run_child(program, args, {cache_variable: where}, work))

        def run():
            if expect_hit:
                run_child(program, args, {cache_variable: cache}, work)
            return median_of_fresh(once)

        return run

    def kernellab(mode: str, cache: str, expect_hit: bool):
        def judge(r):
            if not r["correct"]:
                return None, "WRONG result"
            if r["cache_hit"] != expect_hit:
                return None, f"cache_hit={r['cache_hit']}, expected {expect_hit}"
            stages = ", ".join(f"{k} {v * 1e3:.0f}" for k, v in r["stage_s"].items())
            source = r["from_source"]
            note = f"{bytecode}; {len(source)} modules compiled from source" + (f" ({', '.join(source[:4])}, ...)" if source else "")
            # the first compile counts `import kernellab` too (issue 13's figure); the cached
            # compile and the launches (as Triton's beside them) the call
            value = r["total_s"] if mode == "compile" and not expect_hit else r["call_s"]
            return value * 1e3, f"import {r['import_s'] * 1e3:.0f} ms; stages ms: {stages}; {note}"

        return median_over_children(KERNELLAB_CHILD, [mode, target], "KERNELLAB_CACHE_DIR", cache, expect_hit, judge)

    def triton_launch(cache: str, expect_hit: bool):
        def judge(r):
            if not r["correct"]:
                return None, "WRONG result"
            return r["call_s"] * 1e3, f"import {r['import_s'] * 1e3:.0f} ms"

        measure = median_over_children(TRITON_CHILD, [], "TRITON_CACHE_DIR", cache, expect_hit, judge)

        def run():
            need_triton()
            return measure()

        return run

    compile_cache = os.path.join(work, "kl-compile-cache")
    guarded(results, section, f"vector add {target}: first compile, import included", "kernellab", "ms",
            kernellab("compile", compile_cache, False))  # fmt: skip
    guarded(results, section, f"vector add {target}: cached compile", "kernellab", "ms",
            kernellab("compile", compile_cache, True))  # fmt: skip
    if on_gpu:
        launch_cache = os.path.join(work, "kl-launch-cache")
        triton_cache = os.path.join(work, "triton-cache")
        guarded(results, section, "vector add: first launch, fresh process", "kernellab", "ms",
                kernellab("launch", launch_cache, False))  # fmt: skip
        guarded(results, section, "vector add: first launch, fresh process", "triton", "ms",
                triton_launch(triton_cache, False))  # fmt: skip
        guarded(results, section, "vector add: first launch, cached", "kernellab", "ms",
                kernellab("launch", launch_cache, True))  # fmt: skip
        guarded(results, section, "vector add: first launch, cached", "triton", "ms",
                triton_launch(triton_cache, True))  # fmt: skip


def compile_checks(results, target: str):
    """Compile every benchmark kernel for `target` (no GPU needed): registers, spills, time."""

    def check(kernel, signature, constexprs, num_warps, attrs):
        def run():
            start = time.perf_counter()
            ck = kl.compile(kernel, signature=signature, constexprs=constexprs, target=target,
                            num_warps=num_warps, attrs=attrs, force=True)  # fmt: skip
            seconds = time.perf_counter() - start
            md = ck.metadata
            note = f"registers {md.get('registers')}, spills {md.get('spills')}, shared {md.get('shared')} B"
            return seconds * 1e3, note

        return run

    a16 = {"tt.divisibility": 16}
    add_attrs = {"x_ptr": a16, "y_ptr": a16, "output_ptr": a16, "n_elements": a16}
    guarded(results, "compile check", f"vector add BLOCK={ADD_BLOCK}", "kernellab", "ms",
            check(add_kernel, "*fp32,*fp32,*fp32,i32", {"BLOCK_SIZE": ADD_BLOCK}, ADD_WARPS, add_attrs))  # fmt: skip
    for n_cols in SOFTMAX_COLS:
        block, warps = softmax_config(n_cols)
        attrs = {
            "output_ptr": a16,
            "input_ptr": a16,
            "input_row_stride": a16,
            "output_row_stride": a16,
            "n_cols": a16,
        }
        guarded(results, "compile check", f"softmax n_cols={n_cols} BLOCK={block} warps={warps}", "kernellab", "ms",
                check(softmax_kernel, "*fp32,*fp32,i32,i32,i32", {"BLOCK_SIZE": block}, warps, attrs))  # fmt: skip
    for N in LAYERNORM_COLS:
        block, warps = layer_norm_config(N, 2)
        attrs = {name: a16 for name in ("X", "Y", "W", "B", "Mean", "Rstd", "stride", "N")}
        guarded(results, "compile check", f"layer norm N={N} BLOCK={block} warps={warps}", "kernellab", "ms",
                check(layer_norm_kernel, "*fp16,*fp16,*fp16,*fp16,*fp32,*fp32,i32,i32,fp32",
                      {"BLOCK_SIZE": block}, warps, attrs))  # fmt: skip


# -- the table -------------------------------------------------------------------------------


def fmt_value(v, note: str = "") -> str:
    if v is None:
        return "n/a" if note.startswith("n/a") else "WRONG" if note.startswith("WRONG") else "ERR"
    return f"{v:,.0f}" if abs(v) >= 100 else f"{v:.3g}"


def ratio(a, b) -> str:
    if a is None or b is None or not b:
        return "—"
    return f"{a / b:.2f}"


def render_table(results: Results, copy_gbps) -> str:
    lines = []
    sections: dict[str, list[str]] = {}
    for r in results.rows:
        cases = sections.setdefault(r["section"], [])
        if r["case"] not in cases:
            cases.append(r["case"])
    for section, cases in sections.items():
        providers = []
        for r in results.rows:
            if r["section"] == section and r["provider"] not in providers:
                providers.append(r["provider"])
        unit = next((r["unit"] for r in results.rows if r["section"] == section and r["unit"]), "")
        head = [section + (f" ({unit})" if unit else "")] + providers
        has_kl = "kernellab" in providers
        others = [p for p in providers if p != "kernellab"] if has_kl else []
        head += [f"kl/{p}" for p in others]
        if unit == "GB/s" and copy_gbps:
            head.append("kl/copy")
        rows = []
        notes = []
        for case in cases:
            row = [case] + [results.cell(section, case, p) for p in providers]
            kl_v = results.value(section, case, "kernellab") if has_kl else None
            row += [ratio(kl_v, results.value(section, case, p)) for p in others]
            if unit == "GB/s" and copy_gbps:
                row.append(ratio(kl_v, copy_gbps))
            rows.append(row)
            for r in results.rows:
                if (
                    r["section"] == section
                    and r["case"] == case
                    and r["note"]
                    and not r["note"].startswith("n/a")
                    and (r["value"] is None or section in ("compile", "compile check"))
                ):
                    notes.append(f"    {case} / {r['provider']}: {r['note']}")
        widths = [max(len(str(x)) for x in col) for col in zip(head, *rows)]
        lines.append(
            "  ".join(
                h.ljust(w) if i == 0 else h.rjust(w) for i, (h, w) in enumerate(zip(head, widths))
            )
        )
        lines.append("-" * len(lines[-1]))
        for row in rows:
            lines.append(
                "  ".join(
                    c.ljust(w) if i == 0 else c.rjust(w)
                    for i, (c, w) in enumerate(zip(row, widths))
                )
            )
        lines.extend(n[:240] for n in notes)
        lines.append("")
    return "\n".join(lines)


KEY_CASES = {
    "vector add": ["2^24", "2^27"],
    "softmax": ["4096x1024", "4096x16384"],
    "layer norm": ["4096x4096 fp16"],
    "softmax persistent": ["4096x1024", "4096x4096", "4096x12160"],
    "matmul": ["4096x4096x4096 fp16", "4096x4096x4096 bf16", "8192x8192x8192 fp16",
               "4096x4096x4096 tf32", "4096x4096x4096 int8"],
    "matmul descriptor": ["4096x4096x4096 fp16", "8192x8192x8192 fp16"],
    "matmul sustained": [f"{n}x{n}x{n} {dt}{kind}" for dt in ("fp16", "bf16") for n in (4096, 8192)
                         for kind in ("", " descriptor")] + ["4096x4096x4096 tf32"],
}  # fmt: skip


def key_lines(results: Results, copy_gbps) -> list[str]:
    """A few lines the device script greps for its summary (prefix 'KEY ')."""
    out = []
    if copy_gbps:
        out.append(f"KEY copy ceiling: {copy_gbps:,.0f} GB/s")
    for section, wanted in KEY_CASES.items():
        rows = [r for r in results.rows if r["section"] == section and r["case"] != "(section)"]
        present = [r["case"] for r in rows]
        providers = list(dict.fromkeys(r["provider"] for r in rows))
        others = [p for p in providers if p != "kernellab"]
        unit = next((r["unit"] for r in rows if r["unit"]), "")
        for case in [c for c in wanted if c in present] or present[-1:]:
            k = results.value(section, case, "kernellab")
            cells = ", ".join(f"{p} {results.cell(section, case, p)}" for p in providers)
            ratios = [f"kl/{p} {ratio(k, results.value(section, case, p))}" for p in others]
            if unit == "GB/s" and copy_gbps:
                ratios.append(f"kl/copy {ratio(k, copy_gbps)}")
            out.append(f"KEY {section} {case}: {cells} {unit} ({', '.join(ratios)})")
    for r in results.rows:
        if r["section"] in ("compile", "warm launch", "matmul compile") or r["case"] == "(section)":
            note = r.get("note") or ""
            note = (
                note.splitlines()[0][:100]
                if r["value"] is None and note and not note.startswith("n/a")
                else ""
            )
            out.append(f"KEY {r['section']} {r['case']} / {r['provider']}: "
                       f"{fmt_value(r['value'], r.get('note') or '')} {r['unit']} {note}".rstrip())  # fmt: skip
    return out


# -- main ------------------------------------------------------------------------------------


def versions() -> dict:
    found = {"python": platform.python_version(), "kernellab": getattr(kl, "__version__", "?")}
    for name in ("numpy", "torch", "triton", "llvmlite", "xdsl"):
        try:
            module = __import__(name)
            found[name] = str(getattr(module, "__version__", "?"))
        except Exception:
            found[name] = None
    try:
        from importlib.metadata import version

        for dist in ("cuda-python", "cuda-bindings", "cuda-core", "nvidia-nvjitlink"):
            try:
                found[dist] = str(version(dist))
            except Exception:
                found[dist] = None
    except Exception:
        pass
    return found


def write_json(results: Results, device: str, extra: dict) -> list[str]:
    date = datetime.date.today().isoformat()
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", device).strip("-") or "device"
    payload = {"device": device, "date": date, **extra, "rows": results.rows}
    text = json.dumps(payload, indent=1, default=str)
    written = []
    targets = [ROOT / "benchmarks" / "results" / f"{name}-{date}.json"]
    if os.environ.get("OUT"):
        targets.append(Path(os.environ["OUT"]) / f"{name}-{date}.json")
    for path in targets:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(".json.tmp")
            tmp.write_text(text)
            tmp.replace(path)
            written.append(str(path))
        except OSError as e:
            print(f"could not write {path}: {e}")
    return written


PLAN = [
    ("copy", "torch clone of 2^28 fp32 (read + write): the copy ceiling"),
    ("vector add", "fp32, 2^12..2^27 elements: kernellab / torch x+y / triton, GB/s (3 arrays)"),
    (
        "softmax",
        "fp32 4096 x {256,1024,4096,16384}: kernellab / torch.softmax / triton, GB/s (read+write)",
    ),
    ("layer norm", "fp16 4096 x {1024,4096,8192} forward: kernellab / torch / triton, GB/s"),
    (
        "softmax persistent",
        "fp32 4096 x {1024,4096,12160}, tl.range(num_stages=) row loop: kernellab / triton, GB/s",
    ),
    (
        "matmul",
        "tutorial matmul autotuned over its 8 configs, fp16/bf16 1024..8192 + 16x8192x8192, tf32 "
        "4096, fp8 4096/8192, int8 4096: kernellab / cuBLAS / triton, and tutorial 09's "
        "persistent matmul (kernellab / triton, same configs), TFLOP/s",
    ),
    (
        "matmul descriptor",
        "tutorial 09's persistent matmul through host TensorDescriptors (TMA on Hopper), fp16 "
        "4096 and 8192: kernellab / cuBLAS / triton (same kernel text), TFLOP/s",
    ),
    (
        "matmul sustained",
        "fp16/bf16 4096 and 8192 at the card's steady state (each contender back to back for "
        f"{SUSTAIN_SECONDS:.0f} s, {SUSTAIN_ROUNDS} interleaved rounds, clock and power read): "
        "cuBLAS, the tutorial matmul and tutorial 09's descriptor matmul, kernellab / triton, TFLOP/s",
    ),
    ("matmul compile", "kl.compile of the 128x256x64 8-warp 3-stage config, cache bypassed"),
    (
        "attention",
        "fused attention forward fp16, 4x32 heads, N 1024..16384, D 64/128, causal or not: "
        "kernellab / torch sdpa / triton (same kernel text), TFLOP/s",
    ),
    (
        "warm launch",
        f"{LAUNCHES} back-to-back launches of a {LAUNCH_ELEMENTS}-element add, µs per launch",
    ),
    (
        "compile",
        "vector add: first compile (fresh process, clean cache), cached compile, first launches",
    ),
]
# Each section runs in its own process, at most this many seconds (less if the budget runs out):
# a crash, a poisoned CUDA context or a hang in one section costs only that section.
SECTION_SECONDS = {
    "copy": 60,
    "vector add": 120,
    "softmax": 90,
    "layer norm": 90,
    "softmax persistent": 60,
    "matmul": 540,
    "matmul descriptor": 240,
    "matmul sustained": 480,
    "matmul compile": 60,
    "attention": 420,
    "warm launch": 60,
    "compile": 150,
}


def run_section(section: str, sink: str) -> int:
    """One section, in this process, on the GPU; rows go to `sink` as JSON lines."""
    import torch

    results = Results(sink)
    props = torch.cuda.get_device_properties(0)
    major, minor = torch.cuda.get_device_capability(0)
    target = f"sm_{major}{minor}{'a' if (major, minor) == (9, 0) else ''}"  # wgmma: sm_90a
    results.info(device=torch.cuda.get_device_name(0), capability=f"{major}.{minor}", target=target,
                 sm_count=props.multi_processor_count, memory_gib=round(props.total_memory / 2**30, 1))  # fmt: skip
    timed = ("copy", "vector add", "softmax", "layer norm", "softmax persistent", "matmul",
             "matmul descriptor", "attention")  # fmt: skip
    timer = Timer(torch) if section in timed else None
    run = {
        "copy": lambda: bench_copy(results, torch, timer),
        "vector add": lambda: bench_vector_add(results, torch, timer),
        "softmax": lambda: bench_softmax(results, torch, timer),
        "layer norm": lambda: bench_layer_norm(results, torch, timer),
        "softmax persistent": lambda: bench_softmax_persistent(results, torch, timer),
        "matmul": lambda: bench_matmul(results, torch, timer),
        "matmul descriptor": lambda: bench_matmul_descriptor(results, torch, timer),
        "matmul sustained": lambda: bench_matmul_sustained(results, torch),
        "matmul compile": lambda: bench_matmul_compile(results, target),
        "attention": lambda: bench_attention(results, torch, timer),
        "warm launch": lambda: bench_launch(results, torch),
        "compile": lambda: bench_compile(results, target, on_gpu=True),
    }[section]
    try:
        run()
    except Exception as e:
        results.error(section, "(section)", "—", e)
    return 0


def run_section_child(
    section: str, seconds: float, results: Results, info: dict, quick: bool = False,
    matmul_cases: str | None = None,
) -> None:
    """Run `section` in a child process (its output streams through); collect its rows."""
    fd, sink = tempfile.mkstemp(prefix="kl-bench-rows-", suffix=".jsonl")
    os.close(fd)
    pythonpath = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    env = {**os.environ, "PYTHONPATH": pythonpath, "PYTHONUNBUFFERED": "1"}
    cmd = [sys.executable, str(Path(__file__).resolve()), "--section", section, "--rows-out", sink]
    if quick:
        cmd.append("--quick")
    if matmul_cases:
        cmd += ["--matmul-cases", matmul_cases]
    proc = subprocess.Popen(cmd, env=env, start_new_session=True)
    status = None
    try:
        proc.wait(timeout=seconds)
        status = (
            None if proc.returncode == 0 else f"the section's process exited with {proc.returncode}"
        )
    except subprocess.TimeoutExpired:
        status = f"timed out after {seconds:.0f} s (killed)"
        try:
            os.killpg(proc.pid, 9)
        except OSError:
            proc.kill()
        proc.wait()
    got = 0
    try:
        with open(sink) as f:
            for line in f:
                try:
                    record = json.loads(line)
                except ValueError:
                    continue
                if "row" in record:
                    results.rows.append(record["row"])
                    got += 1
                elif "info" in record:
                    info.update(record["info"])
    finally:
        os.unlink(sink)
    if status is not None:
        print(f"  {section}: {status}", flush=True)
        results.add(section, "(section)", "—", None, "", note=f"ERROR: {status} after {got} rows")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dry-run", action="store_true",
                        help="no GPU: print the plan, compile the kernels, time first/cached compiles")  # fmt: skip
    parser.add_argument(
        "--target", default=None, help="compile target for --dry-run (default sm_90)"
    )
    parser.add_argument("--only", default="", help="comma list of sections to run (default: all)")
    parser.add_argument("--budget", type=float, default=225.0,
                        help="seconds for all sections together (default 225)")  # fmt: skip
    parser.add_argument(
        "--quick", action="store_true", help="small sizes: a fast smoke run of every path"
    )
    parser.add_argument("--matmul-cases", default=None,
                        help="matmul shapes instead of the default table (the sustained section runs those it "
                             "knows), e.g. 4096x4096x4096:fp16,16x8192x8192:bf16")  # fmt: skip
    parser.add_argument("--section", default=None, help=argparse.SUPPRESS)  # internal: one section
    parser.add_argument("--rows-out", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.quick:
        use_quick_sizes()
    if args.matmul_cases:
        use_matmul_cases(args.matmul_cases)
    if args.section:
        return run_section(args.section, args.rows_out)
    only = {s.strip() for s in args.only.split(",") if s.strip()}
    unknown = only - {name for name, _ in PLAN}
    if unknown:
        parser.error(
            f"unknown section(s) {', '.join(sorted(unknown))}; sections: {', '.join(n for n, _ in PLAN)}"
        )
    start = time.perf_counter()
    results = Results()
    info = versions()
    print("versions:", json.dumps(info, default=str), flush=True)
    print(
        f"triton: {'available ' + str(triton.__version__) if triton is not None else TRITON_ERROR}",
        flush=True,
    )

    if args.dry_run:
        target = args.target or "sm_90"
        device = f"dry-run ({platform.node()}, no GPU)"
        print("\nDRY RUN: on a GPU these measurements would run, each section in its own process:")
        for section, what in PLAN:
            if not only or section in only:
                print(f"  {section:12s} {what} (at most {SECTION_SECONDS[section]} s)")
        print(f"\nCompiling every benchmark kernel for {target}:", flush=True)
        compile_checks(results, target)
        if not only or "compile" in only:
            print(f"\nCompile times in fresh processes ({target}):", flush=True)
            bench_compile(results, target, on_gpu=False)
        if not only or "matmul compile" in only:
            print(f"\nCompile time of the largest matmul config ({target}):", flush=True)
            bench_matmul_compile(results, target)
        copy_gbps = None
    else:
        try:
            import torch

            if not torch.cuda.is_available():
                raise RuntimeError("torch sees no CUDA device")
        except Exception as e:
            print(
                f"no GPU run possible ({type(e).__name__}: {e}); use --dry-run on a machine without one"
            )
            return 2
        for section, _ in PLAN:
            if only and section not in only:
                continue
            left = args.budget - (time.perf_counter() - start)
            if left < 10:
                results.add(
                    section,
                    "(section)",
                    "—",
                    None,
                    "",
                    note="ERROR: not run: the time budget is spent",
                )
                continue
            seconds = min(SECTION_SECONDS[section], left)
            print(f"\n== {section} (at most {seconds:.0f} s) ==", flush=True)
            t0 = time.perf_counter()
            run_section_child(section, seconds, results, info, quick=args.quick,
                              matmul_cases=args.matmul_cases)  # fmt: skip
            print(f"   ({time.perf_counter() - t0:.1f} s)", flush=True)
        device = info.get("device", "unknown-gpu")
        copy_gbps = results.copy_ceiling()

    elapsed = time.perf_counter() - start
    written = (
        [] if args.dry_run else write_json(results, device, {"versions": info, "seconds": elapsed})
    )
    print(
        f"\nfinished in {elapsed:.1f} s" + (f"; results: {', '.join(written)}" if written else "")
    )
    print()
    for line in key_lines(results, copy_gbps):
        print(line)
    print()
    print(f"kernellab GPU benchmarks — {device} — {datetime.date.today().isoformat()}")
    if triton is None:
        print(f"(triton columns n/a: {TRITON_ERROR})")
    print(render_table(results, copy_gbps))
    return 0


if __name__ == "__main__":
    sys.exit(main())
