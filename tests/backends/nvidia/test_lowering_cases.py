"""Kernels and inputs shared by the NVIDIA lowering tests (test_lowering.py compiles each to
PTX and cubin on the CPU; test_lowering_gpu.py runs each on the GPU and compares it with the
interpreter). Each Case builds fresh random inputs; outputs start poisoned."""

from __future__ import annotations

from dataclasses import dataclass, field

import ml_dtypes
import numpy as np

import kernellab as kl
import kernellab.language as tl

# ------------------------------------------------------------------------------ kernels


@kl.jit
def vadd_k(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(axis=0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)


@kl.jit
def softmax_k(out_ptr, in_ptr, in_stride, out_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    x = tl.load(in_ptr + row * in_stride + offs, mask=offs < n_cols, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    den = tl.sum(num, axis=0)
    tl.store(out_ptr + row * out_stride + offs, num / den, mask=offs < n_cols)


@kl.jit
def reduce2d_k(x_ptr, sum_ptr, max_ptr, arg_ptr, min_ptr, M: tl.constexpr, N: tl.constexpr,
               AXIS: tl.constexpr):  # fmt: skip
    rm = tl.arange(0, M)[:, None]
    rn = tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + rm * N + rn)
    s = tl.sum(x, axis=AXIS)
    mx = tl.max(x, axis=AXIS)
    am = tl.argmax(x, axis=AXIS)
    mn = tl.reduce(x, AXIS, _min_combine)
    if AXIS == 0:
        o = tl.arange(0, N)
    else:
        o = tl.arange(0, M)
    tl.store(sum_ptr + o, s)
    tl.store(max_ptr + o, mx)
    tl.store(arg_ptr + o, am)
    tl.store(min_ptr + o, mn)


@kl.jit
def _min_combine(a, b):
    return tl.minimum(a, b)


@kl.jit
def reduce_all_k(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0)
    tl.store(out_ptr, tl.sum(x, axis=0))
    tl.store(out_ptr + 1, tl.xor_sum(x, axis=0))
    tl.store(out_ptr + 2, tl.argmin(x, axis=0))


@kl.jit
def scan_k(x_ptr, out_ptr, rev_ptr, M: tl.constexpr, N: tl.constexpr, AXIS: tl.constexpr):
    rm = tl.arange(0, M)[:, None]
    rn = tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + rm * N + rn)
    tl.store(out_ptr + rm * N + rn, tl.cumsum(x, axis=AXIS))
    tl.store(rev_ptr + rm * N + rn, tl.cumsum(x, axis=AXIS, reverse=True))


@kl.jit
def _affine_combine(a1, b1, a2, b2):
    return a1 * a2, b1 * a2 + b2


@kl.jit
def scan_affine_k(a_ptr, b_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    a = tl.load(a_ptr + offs)
    b = tl.load(b_ptr + offs)
    _, y = tl.associative_scan((a, b), 0, _affine_combine)
    tl.store(out_ptr + offs, y)


@kl.jit
def dot_k(a_ptr, b_ptr, c_ptr, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
          OUT_INT: tl.constexpr):  # fmt: skip
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    if OUT_INT:
        acc = tl.zeros((BM, BN), tl.int32)
    else:
        acc = tl.zeros((BM, BN), tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * BN + rn[None, :])
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + rm[:, None] * BN + rn[None, :], acc)


@kl.jit
def atomics_k(x_ptr, fsum_ptr, isum_ptr, imax_ptr, fmax_ptr, fmin_ptr, old_ptr, hsum_ptr, bsum_ptr,
              n, BLOCK: tl.constexpr):  # fmt: skip
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    xi = x.to(tl.int32)
    tl.atomic_add(fsum_ptr + offs % 7, x, mask=m)
    tl.atomic_add(isum_ptr + offs % 5, xi, mask=m)
    # unique addresses: the old values are the initial contents, whatever the order
    old = tl.atomic_xor(old_ptr + offs, xi, mask=m)
    tl.store(old_ptr + offs, old * 3, mask=m & (old > 0))
    tl.atomic_max(imax_ptr + offs % 3, xi, mask=m)
    tl.atomic_max(fmax_ptr + offs % 4, x, mask=m)
    tl.atomic_min(fmin_ptr + offs % 4, x, mask=m)
    # small integers: fp16/bf16 sums are exact in any order
    tl.atomic_add(hsum_ptr + offs % 3, (xi % 3).to(tl.float16), mask=m)
    tl.atomic_add(bsum_ptr + offs % 2, (xi % 2).to(tl.bfloat16), mask=m)


@kl.jit
def cas_k(lock_ptr, count_ptr):
    # every program takes a ticket with CAS and xchg; the counter ends at the number of programs
    done = 0
    while done == 0:
        cur = tl.load(count_ptr, volatile=True)
        prev = tl.atomic_cas(count_ptr, cur, cur + 1)
        if prev == cur:
            done = 1
    tl.atomic_xchg(lock_ptr + tl.program_id(0), 1)


@kl.jit
def layout_k(x_ptr, t_ptr, j_ptr, s_ptr, b_ptr, M: tl.constexpr, N: tl.constexpr):
    rm = tl.arange(0, M)[:, None]
    rn = tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + rm * N + rn)
    # transpose
    tl.store(t_ptr + tl.arange(0, N)[:, None] * M + tl.arange(0, M)[None, :], tl.trans(x))
    # join + split
    y = tl.join(x, x * 2)
    tl.store(j_ptr + rm * (2 * N) + rn * 2 + 0, tl.split(y)[1] - x)
    lo, hi = tl.split(tl.reshape(x, (M, N // 2, 2)))
    tl.store(s_ptr + tl.arange(0, M)[:, None] * (N // 2) + tl.arange(0, N // 2)[None, :], lo + hi)
    # broadcast of a row reduction
    r = tl.sum(x, axis=1)[:, None] + tl.zeros((M, N), x.dtype)
    tl.store(b_ptr + rm * N + rn, r)


@kl.jit
def control_k(x_ptr, out_ptr, n, flag, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), tl.float32)
    for i in range(0, n):
        x = tl.load(x_ptr + i * BLOCK + offs)
        if i % 2 == 0:
            acc += x
        else:
            acc -= x * 0.5
    if flag > 0:
        acc = acc * 2.0
    k = 0
    while k < flag:
        acc = acc + 1.0
        k += 1
    tl.store(out_ptr + offs, acc)


@kl.jit
def math_k(x_ptr, out_ptr, n, FN: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=1.0)
    if FN == "exp":
        y = tl.exp(x)
    elif FN == "exp2":
        y = tl.exp2(x)
    elif FN == "log":
        y = tl.log(x)
    elif FN == "log2":
        y = tl.log2(x)
    elif FN == "sin":
        y = tl.sin(x)
    elif FN == "cos":
        y = tl.cos(x)
    elif FN == "erf":
        y = tl.erf(x)
    elif FN == "sqrt":
        y = tl.sqrt(x)
    elif FN == "sqrt_rn":
        y = tl.sqrt_rn(x)
    elif FN == "rsqrt":
        y = tl.rsqrt(x)
    elif FN == "div_rn":
        y = tl.div_rn(x, x + 3.0)
    elif FN == "fdiv":
        y = x / (x + 3.0)
    else:
        y = tl.floor(x) + tl.ceil(x * 0.5) + tl.abs(x)
    tl.store(out_ptr + offs, y, mask=m)


@kl.jit
def cast_k(x_ptr, bf_ptr, h_ptr, e4_ptr, e5_ptr, i8_ptr, u32_ptr, back_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    tl.store(bf_ptr + offs, x.to(tl.bfloat16), mask=m)
    tl.store(h_ptr + offs, x.to(tl.float16), mask=m)
    e4 = x.to(tl.float8e4nv)
    tl.store(e4_ptr + offs, e4, mask=m)
    tl.store(e5_ptr + offs, x.to(tl.float8e5), mask=m)
    tl.store(i8_ptr + offs, x.to(tl.int8), mask=m)
    tl.store(u32_ptr + offs, (x * 1000.0).to(tl.uint32), mask=m)
    tl.store(back_ptr + offs, e4.to(tl.float32) + x.to(tl.bfloat16).to(tl.float32), mask=m)


@kl.jit
def int_ops_k(a_ptr, b_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    a = tl.load(a_ptr + offs)
    b = tl.load(b_ptr + offs)
    tl.store(out_ptr + offs * 8 + 0, a // b)
    tl.store(out_ptr + offs * 8 + 1, a % b)
    tl.store(out_ptr + offs * 8 + 2, (a << 3) ^ (b >> 1))
    tl.store(out_ptr + offs * 8 + 3, tl.maximum(a, b) - tl.minimum(a, b))
    tl.store(out_ptr + offs * 8 + 4, tl.umulhi(a.to(tl.uint32), b.to(tl.uint32)).to(tl.int32))
    tl.store(out_ptr + offs * 8 + 5, tl.where(a > b, a, -b))
    tl.store(out_ptr + offs * 8 + 6, (a.to(tl.int64) * b).to(tl.int32))
    tl.store(out_ptr + offs * 8 + 7, tl.abs(a) & 0xFF)


@kl.jit
def min_max_neg_k(a_ptr, b_ptr, c_ptr, out_ptr, BLOCK: tl.constexpr):
    # chains of integer min/max that read a negation: ptxas fuses a chain into one VIMNMX3 and
    # dropped the negation (backends/nvidia/ptxas_workarounds.py); the fuzzer found the first one on the GPU
    offs = tl.arange(0, BLOCK)
    a = tl.load(a_ptr + offs)
    b = tl.load(b_ptr + offs)
    c = tl.load(c_ptr + offs)
    tl.store(out_ptr + offs * 6 + 0, tl.minimum(a, tl.minimum(b, -a)))
    tl.store(out_ptr + offs * 6 + 1, tl.maximum(c, tl.maximum(b, -a)))
    tl.store(out_ptr + offs * 6 + 2, tl.minimum(tl.minimum(b, -a), c))
    tl.store(out_ptr + offs * 6 + 3, tl.minimum(c, tl.minimum(-b, -a)))
    a16, b16, c16 = a.to(tl.int16), b.to(tl.int16), c.to(tl.int16)
    tl.store(out_ptr + offs * 6 + 4, tl.maximum(c16, tl.maximum(b16, -a16)).to(tl.int32))
    tl.store(out_ptr + offs * 6 + 5, tl.minimum(tl.minimum(b16, -a16), c16).to(tl.int32))


@kl.jit
def print_k(x_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    tl.device_print("val", x)


@kl.jit
def rand_k(out_ptr, seed, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.rand(seed, offs))


@kl.jit
def dup_store_k(x_ptr, out_ptr, cnt_ptr, BLOCK: tl.constexpr):
    # 64 elements over 128 threads: half the threads hold duplicates; each element once
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, x + 1)
    tl.atomic_add(cnt_ptr + offs, 1)
    tl.atomic_add(cnt_ptr + BLOCK, 1)


@kl.jit
def math64_k(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=1.0)
    tl.store(out_ptr + offs * 8 + 0, tl.exp(x), mask=m)
    tl.store(out_ptr + offs * 8 + 1, tl.log(tl.abs(x) + 1e-3), mask=m)
    tl.store(out_ptr + offs * 8 + 2, tl.sin(x * 10.0), mask=m)
    tl.store(out_ptr + offs * 8 + 3, tl.cos(x * 10.0), mask=m)
    tl.store(out_ptr + offs * 8 + 4, tl.erf(x), mask=m)
    tl.store(out_ptr + offs * 8 + 5, tl.exp2(x * 3.0), mask=m)
    tl.store(out_ptr + offs * 8 + 6, tl.log2(tl.abs(x) * 100.0 + 1e-3), mask=m)
    tl.store(out_ptr + offs * 8 + 7, tl.sqrt(tl.abs(x)), mask=m)


@kl.jit
def fp8_k(h_ptr, b_ptr, e5_ptr, e4_ptr, h2_ptr, b2_ptr, e4b_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    h = tl.load(h_ptr + offs)
    b = tl.load(b_ptr + offs)
    e5 = h.to(tl.float8e5)
    tl.store(e5_ptr + offs, e5)
    tl.store(e4_ptr + offs, b.to(tl.float8e4nv))
    tl.store(h2_ptr + offs, e5.to(tl.float16))
    tl.store(b2_ptr + offs, b.to(tl.float8e4nv).to(tl.bfloat16))
    tl.store(e4b_ptr + offs, e5.to(tl.float8e4nv))


@kl.jit
def scalar_k(x_ptr, count_ptr, out_ptr, n):
    pid = tl.program_id(0)
    ticket = tl.atomic_add(count_ptr, 1)
    v = tl.load(x_ptr + pid, mask=pid < n, other=-1.0)
    tl.store(out_ptr + 2 * pid, v * 2.0 + (ticket >= 0).to(tl.float32))
    tl.store(out_ptr + 2 * pid + 1, tl.num_programs(0).to(tl.float32))


@kl.jit
def loop_reduce_k(x_ptr, out_ptr, n_iter, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), tl.float32)
    total = 0.0
    for i in range(n_iter):
        x = tl.load(x_ptr + i * BLOCK + offs)
        m = tl.max(x, axis=0)
        if m > 0:
            acc = acc + x / m
        else:
            acc = acc - x
        total += tl.sum(x, axis=0)
    tl.store(out_ptr + offs, acc + total)


@kl.jit
def loop_carry_halves_k(h_ptr, g_ptr, h_out, g_out, n_iter, BLOCK: tl.constexpr):
    """fp16 and bf16 tensors carried through a loop, computed in fp32 and narrowed each
    iteration: the lowering carries them in pairs, one i32 phi each (control._packed)."""
    offs = tl.arange(0, BLOCK)
    h = tl.load(h_ptr + offs)
    g = tl.load(g_ptr + offs)
    for i in range(n_iter):
        h = (h.to(tl.float32) * 0.75 + 0.5).to(tl.float16)
        g = (g.to(tl.float32) * 0.5 - 0.25).to(tl.bfloat16)
    tl.store(h_out + offs, h)
    tl.store(g_out + offs, g)


@kl.jit
def shapes_k(x_ptr, y_ptr, cat_ptr, perm_ptr, view_ptr, M: tl.constexpr, N: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    x = tl.load(x_ptr + rm[:, None] * N + rn[None, :])
    y = tl.load(y_ptr + rm[:, None] * N + rn[None, :])
    c = tl.cat(tl.sum(x, axis=1), tl.sum(y, axis=1), can_reorder=True)
    tl.store(cat_ptr + tl.arange(0, 2 * M), c)
    x3 = tl.reshape(x, (M, 2, N // 2))
    p = tl.permute(x3, (2, 0, 1))
    r0 = tl.arange(0, N // 2)[:, None, None]
    r1 = tl.arange(0, M)[None, :, None]
    r2 = tl.arange(0, 2)[None, None, :]
    tl.store(perm_ptr + r0 * (M * 2) + r1 * 2 + r2, p)
    tl.store(view_ptr + tl.arange(0, M * N), tl.reshape(x * 3.0, (M * N,)))


@kl.jit
def dot3d_k(a_ptr, b_ptr, c_ptr, B: tl.constexpr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
            OUT_INT: tl.constexpr):  # fmt: skip
    # batched (rank-3) dot with an accumulator: c[b] = a[b] @ b[b] + 1
    rb = tl.arange(0, B)[:, None, None]
    rm = tl.arange(0, M)[None, :, None]
    rn = tl.arange(0, N)[None, None, :]
    rk_col = tl.arange(0, K)[None, None, :]
    rk_row = tl.arange(0, K)[None, :, None]
    a = tl.load(a_ptr + rb * (M * K) + rm * K + rk_col)
    b = tl.load(b_ptr + rb * (K * N) + rk_row * N + rn)
    if OUT_INT:
        acc = tl.full((B, M, N), 1, tl.int32)
    else:
        acc = tl.full((B, M, N), 1.0, tl.float32)
    tl.store(c_ptr + rb * (M * N) + rm * N + rn, tl.dot(a, b, acc))


@kl.jit
def float_atomics_k(p32_ptr, v32_ptr, old32_ptr, p64_ptr, v64_ptr, old64_ptr, sum64_ptr, max64_ptr,
                    min64_ptr, n, BLOCK: tl.constexpr):  # fmt: skip
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    # distinct addresses: the old values are the initial contents whatever the order
    old32 = tl.atomic_xchg(p32_ptr + offs, tl.load(v32_ptr + offs, mask=m), mask=m)
    tl.store(old32_ptr + offs, old32, mask=m)
    v64 = tl.load(v64_ptr + offs, mask=m)
    old64 = tl.atomic_xchg(p64_ptr + offs, v64, mask=m)
    tl.store(old64_ptr + offs, old64, mask=m)
    # colliding addresses, values of both signs: max/min go through integer atomics on the bits
    tl.atomic_add(sum64_ptr + offs % 3, v64, mask=m)
    tl.atomic_max(max64_ptr + offs % 4, v64, mask=m)
    tl.atomic_min(min64_ptr + offs % 4, v64, mask=m)


def xchg16_ttir(elem: str, block: int = 256, live: int = 250) -> str:
    """A 16-bit float atomic exchange (the frontend only emits 32/64-bit ones; PTX has no 16-bit
    atom.exch, so the lowering loops on a 16-bit CAS): p[i] <-> v[i] for i < live, the old
    values stored to old[i]. Arguments (p, v, old), one program of `block` elements."""
    p = f"!tt.ptr<{elem}>"
    t = f"tensor<{block}x!tt.ptr<{elem}>>"
    ti = f"tensor<{block}xi32>"
    return f"""builtin.module {{
  tt.func public @xchg16(%p: {p}, %v: {p}, %old: {p}) {{
    %offs = tt.make_range {{end = {block} : i32, start = 0 : i32}} : {ti}
    %ps = tt.splat %p : {p} -> {t}
    %pp = tt.addptr %ps, %offs : {t}, {ti}
    %vs = tt.splat %v : {p} -> {t}
    %vp = tt.addptr %vs, %offs : {t}, {ti}
    %val = tt.load %vp : {t}
    %lim = arith.constant dense<{live}> : {ti}
    %m = arith.cmpi slt, %offs, %lim : {ti}
    %o = tt.atomic_rmw exch, acq_rel, gpu, %pp, %val, %m : {t}
    %os = tt.splat %old : {p} -> {t}
    %op = tt.addptr %os, %offs : {t}, {ti}
    tt.store %op, %o, %m : {t}
    tt.return
  }}
}}
"""


# a 16x64 f32 tile loaded in one blocked layout and stored from another, 4 warps: the pairs
# below make conversion_plan answer each of its kinds (checked in test_lowering.py)
_ROWS4 = "threadsPerWarp = [4, 8], warpsPerCTA = [4, 1]"
CONVERT_PAIRS = {
    "noop": (f"sizePerThread = [1, 4], {_ROWS4}, order = [1, 0]",
             f"sizePerThread = [1, 4], {_ROWS4}, order = [1, 0]"),
    # same lanes and warps, registers in another order
    "registers": ("sizePerThread = [2, 2], threadsPerWarp = [1, 32], warpsPerCTA = [4, 1], order = [1, 0]",
                  "sizePerThread = [2, 2], threadsPerWarp = [1, 32], warpsPerCTA = [4, 1], order = [0, 1]"),
    # lanes permuted within each warp, registers kept
    "shuffle": (f"sizePerThread = [1, 4], {_ROWS4}, order = [1, 0]",
                f"sizePerThread = [1, 4], {_ROWS4}, order = [0, 1]"),
    # a register bit becomes a lane bit: the source register depends on the lane (select chain)
    "shuffle_select": (f"sizePerThread = [1, 4], {_ROWS4}, order = [1, 0]",
                       f"sizePerThread = [1, 2], {_ROWS4}, order = [1, 0]"),
    # warps split rows in one and columns in the other: only shared memory can do it
    "shared": (f"sizePerThread = [1, 4], {_ROWS4}, order = [1, 0]",
               "sizePerThread = [1, 4], threadsPerWarp = [16, 2], warpsPerCTA = [1, 4], order = [1, 0]"),
}  # fmt: skip


def _offsets_ttgir(lay: str, tag: str, m: int, n: int) -> str:
    """Lines computing %o{tag} = row * n + col as tensor<m x n x i32, lay>."""
    rs = f"#ttg.slice<{{dim = 1, parent = {lay}}}>"
    cs = f"#ttg.slice<{{dim = 0, parent = {lay}}}>"
    t = f"tensor<{m}x{n}xi32, {lay}>"
    return f"""    %r{tag} = tt.make_range {{end = {m} : i32, start = 0 : i32}} : tensor<{m}xi32, {rs}>
    %re{tag} = tt.expand_dims %r{tag} {{axis = 1 : i32}} : tensor<{m}xi32, {rs}> -> tensor<{m}x1xi32, {lay}>
    %s{tag} = arith.constant dense<{n}> : tensor<{m}x1xi32, {lay}>
    %rs{tag} = arith.muli %re{tag}, %s{tag} : tensor<{m}x1xi32, {lay}>
    %rb{tag} = tt.broadcast %rs{tag} : tensor<{m}x1xi32, {lay}> -> {t}
    %c{tag} = tt.make_range {{end = {n} : i32, start = 0 : i32}} : tensor<{n}xi32, {cs}>
    %ce{tag} = tt.expand_dims %c{tag} {{axis = 0 : i32}} : tensor<{n}xi32, {cs}> -> tensor<1x{n}xi32, {lay}>
    %cb{tag} = tt.broadcast %ce{tag} : tensor<1x{n}xi32, {lay}> -> {t}
    %o{tag} = arith.addi %rb{tag}, %cb{tag} : {t}
"""


def convert_ttgir(kind: str, m: int = 16, n: int = 64, elem: str = "f32") -> str:
    """TTGIR: y[i, j] = x[i, j] for an m x n tile, loaded in CONVERT_PAIRS[kind][0] and stored
    in [1] after a ttg.convert_layout. Arguments (x, y), one program, 4 warps."""
    src, dst = CONVERT_PAIRS[kind]
    p = f"!tt.ptr<{elem}>"
    ts, td = f"tensor<{m}x{n}x{p}, #blocked>", f"tensor<{m}x{n}x{p}, #blocked1>"
    return f"""#blocked = #ttg.blocked<{{{src}}}>
#blocked1 = #ttg.blocked<{{{dst}}}>
builtin.module attributes {{"ttg.num-ctas" = 1 : i32, "ttg.num-warps" = 4 : i32, ttg.target = "cuda:90", "ttg.threads-per-warp" = 32 : i32}} {{
  tt.func public @conv(%x: {p}, %y: {p}) {{
{_offsets_ttgir("#blocked", "a", m, n)}    %xs = tt.splat %x : {p} -> {ts}
    %xp = tt.addptr %xs, %oa : {ts}, tensor<{m}x{n}xi32, #blocked>
    %v = tt.load %xp : {ts}
    %w = ttg.convert_layout %v : tensor<{m}x{n}x{elem}, #blocked> -> tensor<{m}x{n}x{elem}, #blocked1>
{_offsets_ttgir("#blocked1", "b", m, n)}    %ys = tt.splat %y : {p} -> {td}
    %yp = tt.addptr %ys, %ob : {td}, tensor<{m}x{n}xi32, #blocked1>
    tt.store %yp, %w : {td}
    tt.return
  }}
}}
"""


# -------------------------------------------------------------------------------- cases


def _f32(rng, n, lo=-4.0, hi=4.0):
    return rng.uniform(lo, hi, n).astype(np.float32)


def _nan(shape, dtype=np.float32):
    return np.full(shape, np.nan, dtype=dtype)


def _sentinel(shape, dtype):
    out = np.empty(shape, dtype=dtype)
    out.view(np.uint8)[...] = 0xA5
    return out


@dataclass
class Case:
    """A kernel launch: `make(rng)` → (args in parameter order incl. constexprs as kwargs,
    grid); `outputs`: indices of the args to compare; tolerances per output."""

    name: str
    kernel: object
    make: object
    outputs: tuple
    num_warps: int = 4
    rtol: float = 0.0
    atol: float = 0.0
    ptx: tuple = ()  # regexes the sm_90 PTX must contain
    no_ptx: tuple = ()  # regexes it must not contain
    exact_outputs: tuple = ()  # outputs compared bit-exactly even when rtol/atol are set
    reference: object = None  # fn(args) -> {index: expected}; default: the interpreter
    extra: dict = field(default_factory=dict)


def _vadd(rng):
    n = 100_003
    x, y = _f32(rng, n), _f32(rng, n)
    return [x, y, _nan(n), n], {"BLOCK": 1024}, (-(-n // 1024),)


def _vadd_div(rng):
    n = 1 << 16
    x, y = _f32(rng, n), _f32(rng, n)
    return [x, y, _nan(n), n], {"BLOCK": 1024}, (n // 1024,)


def _softmax(rows, cols, block):
    def make(rng):
        x = rng.standard_normal((rows, cols)).astype(np.float32) * 3
        return [_nan((rows, cols)), x, cols, cols, cols], {"BLOCK": block}, (rows,)

    return make


def _reduce2d(axis, m=64, n=32):
    def make(rng):
        x = rng.permutation(m * n).astype(np.float32).reshape(m, n) - 100.0  # distinct: argmax unique
        k = n if axis == 0 else m
        return ([x, _nan(k), _nan(k), _sentinel(k, np.int32), _nan(k)],
                {"M": m, "N": n, "AXIS": axis}, (1,))  # fmt: skip

    return make


def _reduce_all(rng):
    n = 1000
    x = rng.integers(-1000, 1000, n).astype(np.int32)
    x[rng.integers(0, n)] = -5000  # unique minimum
    return [x, _sentinel(3, np.int32), n], {"BLOCK": 1024}, (1,)


def _scan(axis, m, n, dtype=np.int32):
    def make(rng):
        x = rng.integers(-50, 50, (m, n)).astype(dtype)
        return [x, _sentinel((m, n), dtype), _sentinel((m, n), dtype)], {"M": m, "N": n, "AXIS": axis}, (1,)

    return make


def _scan_affine(rng):
    n = 512
    a = rng.uniform(0.5, 1.0, n).astype(np.float32)
    b = rng.uniform(-1, 1, n).astype(np.float32)
    return [a, b, _nan(n)], {"BLOCK": n}, (1,)


def _dot(dtype, bm, bn, bk, k, out_int=False):
    def make(rng):
        if np.dtype(dtype).kind == "i":
            a = rng.integers(-8, 8, (bm, k)).astype(dtype)
            b = rng.integers(-8, 8, (k, bn)).astype(dtype)
        else:
            a = rng.integers(-4, 5, (bm, k)).astype(np.float32).astype(dtype) * np.asarray(0.5, dtype)
            b = rng.integers(-4, 5, (k, bn)).astype(np.float32).astype(dtype) * np.asarray(0.25, dtype)
        out = _sentinel((bm, bn), np.int32) if out_int else _nan((bm, bn))
        return [a, b, out, k], {"BM": bm, "BN": bn, "BK": bk, "OUT_INT": out_int}, (1,)

    return make


def _atomics(rng):
    n = 3000
    x = rng.integers(-100, 100, n).astype(np.float32)
    x[x == 0] = 1
    fmax = np.full(4, -np.inf, np.float32)
    fmin = np.full(4, np.inf, np.float32)
    old = rng.integers(-1000, 1000, n).astype(np.int32)
    return ([x, np.zeros(7, np.float32), np.zeros(5, np.int32), np.full(3, -1000, np.int32), fmax,
             fmin, old, np.zeros(3, np.float16), np.zeros(2, ml_dtypes.bfloat16), n],
            {"BLOCK": 256}, (-(-n // 256),))  # fmt: skip


def _cas(rng):
    p = 200
    return [np.zeros(p, np.int32), np.zeros(1, np.int32)], {}, (p,)


def _layout(rng):
    m, n = 32, 64
    x = rng.integers(-100, 100, (m, n)).astype(np.float32)
    return ([x, _nan((n, m)), _nan((m, 2 * n)), _nan((m, n // 2)), _nan((m, n))],
            {"M": m, "N": n}, (1,))  # fmt: skip


def _layout_ref(args):
    x = args[0]
    m, n = x.shape
    j = np.full((m, 2 * n), np.nan, np.float32)
    j[:, 0::2] = x
    return {1: x.T, 2: j, 3: x[:, 0::2] + x[:, 1::2], 4: np.repeat(x.sum(1, keepdims=True), n, 1)}


def _control(rng):
    block, n = 256, 5
    x = rng.integers(-10, 10, n * block).astype(np.float32)
    return [x, _nan(block), n, 3], {"BLOCK": block}, (1,)


def _math(fn, lo, hi, n=20_000):
    def make(rng):
        x = rng.uniform(lo, hi, n).astype(np.float32)
        return [x, _nan(n), n], {"FN": fn, "BLOCK": 512}, (-(-n // 512),)

    return make


_MATH_REF = {
    "exp": np.exp, "exp2": np.exp2, "log": np.log, "log2": np.log2, "sin": np.sin,
    "cos": np.cos, "sqrt": np.sqrt, "sqrt_rn": np.sqrt, "rsqrt": lambda x: 1 / np.sqrt(x),
    "div_rn": lambda x: x / (x + 3.0), "fdiv": lambda x: x / (x + 3.0),
}  # fmt: skip


def _f32_ops(fn, x32):
    """References for kernels whose intermediate results are fp32 (rounded as the kernel does)."""
    f = np.float32
    if fn in ("div_rn", "fdiv"):
        q = x32.astype(np.float64) / (x32 + f(3.0)).astype(np.float64)
        return q.astype(np.float32) if fn == "div_rn" else q
    return (np.floor(x32) + np.ceil(x32 * f(0.5))) + np.abs(x32)


def _math_ref(fn):
    def ref(args):
        x = args[0].astype(np.float64)
        if fn in ("div_rn", "fdiv", "misc"):
            return {1: _f32_ops(fn, args[0])}
        if fn == "erf":
            import math

            return {1: np.vectorize(math.erf)(x)}
        return {1: _MATH_REF[fn](x)}

    return ref


def _cast(rng):
    n = 5000
    x = rng.uniform(-300, 300, n).astype(np.float32)
    x[:10] = [0.0, -0.0, 1e-9, -1e-9, 448.0, 500.0, -1e6, 0.0625, 2.0**-9, 3.0 * 2.0**-10]
    return ([x, _nan(n, ml_dtypes.bfloat16), _nan(n, np.float16), _nan(n, ml_dtypes.float8_e4m3fn),
             _nan(n, ml_dtypes.float8_e5m2), _sentinel(n, np.int8), _sentinel(n, np.uint32), _nan(n), n],
            {"BLOCK": 256}, (-(-n // 256),))  # fmt: skip


def _int_ops(rng):
    n = 256
    a = rng.integers(-1000, 1000, n).astype(np.int32)
    b = rng.integers(1, 50, n).astype(np.int32) * rng.choice([-1, 1], n).astype(np.int32)
    return [a, b, _sentinel(8 * n, np.int32)], {"BLOCK": n}, (1,)


def _min_max_neg(rng):
    """Small values (as the fuzzer draws them), the whole int32 range, and its edges."""
    n = 1024
    edges = np.array([0, 1, -1, 6, -6, 2**15 - 1, -(2**15), 2**31 - 1, -(2**31), -(2**31) + 1], np.int64)
    abc = []
    for _ in range(3):
        x = np.where(rng.random(n) < 0.5, rng.integers(-8, 9, n), rng.integers(-(2**31), 2**31, n))
        x[rng.choice(n, 3 * edges.size, replace=False)] = np.repeat(edges, 3)
        abc.append(x.astype(np.int32))
    return [*abc, _sentinel(6 * n, np.int32)], {"BLOCK": n}, (1,)


def _min_max_neg_ref(args):
    a, b, c = args[:3]  # numpy's int32/int16 negation wraps like the GPU's (-INT_MIN == INT_MIN)
    a16, b16, c16 = a.astype(np.int16), b.astype(np.int16), c.astype(np.int16)
    columns = [np.minimum(a, np.minimum(b, -a)), np.maximum(c, np.maximum(b, -a)), np.minimum(np.minimum(b, -a), c),
               np.minimum(c, np.minimum(-b, -a)), np.maximum(c16, np.maximum(b16, -a16)).astype(np.int32),
               np.minimum(np.minimum(b16, -a16), c16).astype(np.int32)]  # fmt: skip
    return {3: np.stack(columns, axis=1).reshape(-1)}


def _rand(rng):
    n = 4096
    return [_nan(n), int(rng.integers(0, 2**31))], {"BLOCK": 1024}, (4,)


def _dup(rng):
    x = _f32(rng, 64)
    return [x, _nan(64), np.zeros(65, np.int32)], {"BLOCK": 64}, (1,)


def _math64(rng):
    n = 3000
    x = rng.uniform(-6, 6, n)
    return [x, np.full(8 * n, np.nan), n], {"BLOCK": 256}, (-(-n // 256),)


def _math64_ref(args):
    import math

    x = args[0]
    erf = np.vectorize(math.erf)
    out = np.stack([np.exp(x), np.log(np.abs(x) + 1e-3), np.sin(x * 10.0), np.cos(x * 10.0), erf(x),
                    np.exp2(x * 3.0), np.log2(np.abs(x) * 100.0 + 1e-3), np.sqrt(np.abs(x))], axis=1)
    return {1: out.reshape(-1)}


def _fp8(rng):
    n = 1024
    h = (rng.standard_normal(n) * rng.choice([1e-6, 1e-3, 1, 100, 1e4], n)).astype(np.float16)
    b = (rng.standard_normal(n) * rng.choice([1e-3, 1, 100, 1e3], n)).astype(ml_dtypes.bfloat16)
    return ([h, b, _nan(n, ml_dtypes.float8_e5m2), _nan(n, ml_dtypes.float8_e4m3fn), _nan(n, np.float16),
             _nan(n, ml_dtypes.bfloat16), _nan(n, ml_dtypes.float8_e4m3fn)], {"BLOCK": n}, (1,))  # fmt: skip


def _scalar(rng):
    p = 300
    x = _f32(rng, p)
    return [x, np.zeros(1, np.int32), _nan(2 * p), p - 7], {}, (p,)


def _loop_reduce(rng):
    block, n = 512, 6
    x = rng.integers(-10, 10, n * block).astype(np.float32)
    return [x, _nan(block), n], {"BLOCK": block}, (1,)


def _loop_carry_halves(rng):
    block = 512
    h = rng.uniform(-8, 8, block).astype(np.float16)
    g = rng.uniform(-8, 8, block).astype(ml_dtypes.bfloat16)
    return [h, g, _nan(block, np.float16), _nan(block, ml_dtypes.bfloat16), 5], {"BLOCK": block}, (1,)


def _shapes(rng):
    m, n = 16, 32
    x = rng.integers(-50, 50, (m, n)).astype(np.float32)
    y = rng.integers(-50, 50, (m, n)).astype(np.float32)
    return [x, y, _nan(2 * m), _nan((n // 2, m, 2)), _nan(m * n)], {"M": m, "N": n}, (1,)


def _shapes_ref(args):
    x, y = args[0], args[1]
    m, n = x.shape
    col = np.concatenate([x.sum(1), y.sum(1)])
    perm = x.reshape(m, 2, n // 2).transpose(2, 0, 1)
    return {2: col, 3: perm, 4: (x * 3).reshape(-1)}


def _dot3d(dtype, bsz, m, n, k, out_int=False):
    def make(rng):
        if np.dtype(dtype).kind == "i":
            a = rng.integers(-8, 8, (bsz, m, k)).astype(dtype)
            b = rng.integers(-8, 8, (bsz, k, n)).astype(dtype)
        else:  # small multiples of 1/8: every product and sum exact, any order
            a = rng.integers(-4, 5, (bsz, m, k)).astype(np.float32).astype(dtype) * np.asarray(0.5, dtype)
            b = rng.integers(-4, 5, (bsz, k, n)).astype(np.float32).astype(dtype) * np.asarray(0.25, dtype)
        out = _sentinel((bsz, m, n), np.int32) if out_int else _nan((bsz, m, n))
        return [a, b, out], {"B": bsz, "M": m, "N": n, "K": k, "OUT_INT": out_int}, (1,)

    return make


def _dot3d_ref(args):
    a, b = args[0].astype(np.float64), args[1].astype(np.float64)
    want = a @ b + 1
    return {2: want.astype(args[2].dtype) if args[2].dtype.kind == "i" else want}


def _float_atomics(rng):
    n = 3000
    v32 = rng.standard_normal(n).astype(np.float32) * 100
    v64 = rng.integers(-1000, 1000, n).astype(np.float64) * 0.5  # exact sums in any order
    v64[v64 == 0] = 1.5
    return ([rng.standard_normal(n).astype(np.float32), v32, _nan(n), rng.standard_normal(n), v64,
             np.full(n, np.nan), np.zeros(3), np.full(4, -np.inf), np.full(4, np.inf), n],
            {"BLOCK": 256}, (-(-n // 256),))  # fmt: skip


def _float_atomics_ref(args):
    p32, v32, _, p64, v64 = args[:5]
    n = args[9]
    idx = np.arange(n)
    return {
        0: v32, 2: p32, 3: v64, 5: p64,
        6: np.array([v64[idx % 3 == j].sum() for j in range(3)]),
        7: np.array([v64[idx % 4 == j].max() for j in range(4)]),
        8: np.array([v64[idx % 4 == j].min() for j in range(4)]),
    }  # fmt: skip


CASES = [
    Case("vadd", vadd_k, _vadd, (2,)),
    Case("vadd_v4", vadd_k, _vadd_div, (2,), ptx=(r"ld\.global\.v4\.b32", r"st\.global\.v4\.b32"), no_ptx=(r"bar\.sync",)),
    Case("softmax", softmax_k, _softmax(37, 1000, 1024), (0,), rtol=1e-5, atol=1e-7, ptx=(r"shfl\.sync\.bfly",)),
    Case("softmax_w8", softmax_k, _softmax(5, 3000, 4096), (0,), num_warps=8, rtol=1e-5, atol=1e-7),
    Case("reduce_axis0", reduce2d_k, _reduce2d(0), (1, 2, 3, 4)),
    Case("reduce_axis1", reduce2d_k, _reduce2d(1), (1, 2, 3, 4)),
    Case("reduce_axis1_w1", reduce2d_k, _reduce2d(1, 16, 128), (1, 2, 3, 4), num_warps=1),
    Case("reduce_all", reduce_all_k, _reduce_all, (1,)),
    Case("scan_axis0", scan_k, _scan(0, 64, 32), (1, 2)),
    Case("scan_axis1", scan_k, _scan(1, 16, 128), (1, 2)),
    Case("scan_1d_w8", scan_k, _scan(1, 1, 2048), (1, 2), num_warps=8),
    Case("scan_affine", scan_affine_k, _scan_affine, (2,), rtol=1e-5, atol=1e-5),
    Case("dot_f32", dot_k, _dot(np.float32, 32, 32, 16, 64), (2,)),
    Case("dot_f16", dot_k, _dot(np.float16, 64, 32, 32, 64), (2,)),
    Case("dot_bf16", dot_k, _dot(ml_dtypes.bfloat16, 32, 64, 16, 32), (2,)),
    Case("dot_i8", dot_k, _dot(np.int8, 32, 32, 32, 64, out_int=True), (2,)),
    Case("dot3d_f32", dot3d_k, _dot3d(np.float32, 2, 16, 32, 16), (2,), reference=_dot3d_ref),
    Case("dot3d_f16_w8", dot3d_k, _dot3d(np.float16, 4, 32, 16, 32), (2,), num_warps=8, reference=_dot3d_ref),
    Case("dot3d_i8_w1", dot3d_k, _dot3d(np.int8, 2, 16, 16, 32, out_int=True), (2,), num_warps=1,
         reference=_dot3d_ref),
    Case("atomics", atomics_k, _atomics, (1, 2, 3, 4, 5, 6, 7, 8)),
    Case("float_atomics", float_atomics_k, _float_atomics, (0, 2, 3, 5, 6, 7, 8), reference=_float_atomics_ref,
         ptx=(r"atom\.acq_rel\.gpu\.global\.exch\.b32", r"atom\.acq_rel\.gpu\.global\.exch\.b64",
              r"atom\.acq_rel\.gpu\.global\.add\.f64", r"atom\.acq_rel\.gpu\.global\.max\.s64",
              r"atom\.acq_rel\.gpu\.global\.min\.u64")),
    Case("cas_while", cas_k, _cas, (0, 1), num_warps=1),
    Case("layouts", layout_k, _layout, (1, 2, 3, 4), reference=_layout_ref),
    Case("control", control_k, _control, (1,)),
    *[
        Case(f"math_{fn}", math_k, _math(fn, lo, hi), (1,), rtol=rtol, atol=atol, reference=_math_ref(fn))
        for fn, lo, hi, rtol, atol in [
            ("exp", -20, 20, 2e-6, 0), ("exp2", -30, 30, 2e-6, 0), ("log", 1e-6, 1e6, 2.5e-7, 0),
            ("log2", 1e-6, 1e6, 2.5e-7, 0), ("sin", -100, 100, 0, 2e-7), ("cos", -100, 100, 0, 2e-7),
            ("erf", -5, 5, 2.5e-7, 0), ("sqrt", 0, 1e4, 2.5e-7, 0), ("sqrt_rn", 0, 1e4, 6e-8, 0),
            ("rsqrt", 1e-3, 1e4, 5e-7, 0), ("div_rn", 0, 100, 0, 0), ("fdiv", 0, 100, 2.5e-7, 0),
            ("misc", -50, 50, 0, 0),
        ]
    ],  # fmt: skip
    Case("casts", cast_k, _cast, (1, 2, 3, 4, 5, 6, 7)),
    Case("int_ops", int_ops_k, _int_ops, (2,)),
    Case("min_max_neg", min_max_neg_k, _min_max_neg, (3,), reference=_min_max_neg_ref,
         no_ptx=(r"\bneg\.s(16|32)\b",)),
    Case("rand", rand_k, _rand, (0,)),
    Case("dup_store", dup_store_k, _dup, (1, 2)),
    Case("math64", math64_k, _math64, (1,), rtol=4e-15, atol=4e-16, reference=_math64_ref),
    Case("fp8", fp8_k, _fp8, (2, 3, 4, 5, 6)),
    Case("scalar", scalar_k, _scalar, (1, 2)),
    Case("loop_reduce", loop_reduce_k, _loop_reduce, (1,), rtol=1e-6, atol=1e-5),
    Case("loop_reduce_w8", loop_reduce_k, _loop_reduce, (1,), num_warps=8, rtol=1e-6, atol=1e-5),
    # exact: each step's product is exact in fp32, so a fused multiply-add rounds as two ops do
    Case("loop_carry_halves", loop_carry_halves_k, _loop_carry_halves, (2, 3)),
    Case("shapes", shapes_k, _shapes, (2, 3, 4), reference=_shapes_ref),
    Case("print", print_k, lambda rng: ([np.arange(8, dtype=np.float32) * 0.5], {"BLOCK": 8}, (2,)), ()),
]

BY_NAME = {c.name: c for c in CASES}


def build(case: Case, rng):
    """(positional args, constexpr kwargs, grid) with fresh inputs."""
    args, consts, grid = case.make(rng)
    return args, consts, grid


def compile_case(case: Case, args, consts, target: str):
    """Compile as the JIT would for these arguments (same specialization attributes)."""
    bound = case.kernel.binder.bind(tuple(args), dict(consts))
    signature, constexprs, attrs = case.kernel.binder.compile_args(bound)
    return kl.compile(case.kernel, signature=signature, constexprs=constexprs, attrs=attrs or None,
                      target=target, num_warps=case.num_warps)  # fmt: skip


def interpreter_reference(case: Case, args, consts, grid) -> dict:
    host = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    case.kernel[grid](*host, **consts)
    return {i: host[i] for i in case.outputs}


def expected(case: Case, args, consts, grid) -> dict:
    if case.reference is not None:
        return case.reference(args)
    return interpreter_reference(case, args, consts, grid)


def compare(case: Case, got: dict, want: dict) -> list[str]:
    """Problems found (empty when every output matches)."""
    problems = []
    for i in case.outputs:
        g, w = np.asarray(got[i]), np.asarray(want[i])
        if g.dtype != w.dtype or g.dtype in (np.dtype(ml_dtypes.bfloat16), np.dtype(ml_dtypes.float8_e4m3fn),
                                              np.dtype(ml_dtypes.float8_e5m2), np.float16):  # fmt: skip
            g64, w64 = g.astype(np.float64), w.astype(np.float64)
        else:
            g64, w64 = g, w
        if g.dtype.kind in "iub" and w.dtype.kind in "iub":
            bad = g64 != w64
        else:
            g64, w64 = np.asarray(g64, np.float64), np.asarray(w64, np.float64)
            with np.errstate(invalid="ignore"):
                tol = case.atol + case.rtol * np.abs(w64)
            with np.errstate(invalid="ignore"):
                close = (g64 == w64) | (np.abs(g64 - w64) <= tol)
            bad = np.where(np.isnan(w64), ~np.isnan(g64), ~close)
        if bad.any():
            idx = np.argwhere(bad)[:4]
            samples = ", ".join(f"{tuple(int(v) for v in ix)}: got {g64[tuple(ix)]!r} want {w64[tuple(ix)]!r}"
                                for ix in idx)  # fmt: skip
            problems.append(f"{case.name} output {i}: {int(bad.sum())} of {bad.size} differ ({samples})")
    return problems


def test_case_names_are_unique():
    assert len(BY_NAME) == len(CASES)
