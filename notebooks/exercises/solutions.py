"""Solutions to the puzzles of notebooks/exercises/puzzles.ipynb: try each one first.

One kernel per puzzle, named after it; `SOLUTIONS` maps the puzzle name to its kernel. CI checks
that every solution passes its puzzle's `kl.lab.check` (tests/lab/test_check.py).
"""

import kernellab as kl
import kernellab.language as tl


@kl.jit
def load_block(x_ptr, z_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(z_ptr + offs, 2 * x + 1)


@kl.jit
def masks(x_ptr, y_ptr, z_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    inside = offs < n
    x = tl.load(x_ptr + offs, mask=inside)
    y = tl.load(y_ptr + offs, mask=inside)
    tl.store(z_ptr + offs, x * y, mask=inside)


@kl.jit
def pointers_2d(x_ptr, z_ptr, M, N, stride_x, stride_z, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    inside = (rows[:, None] < M) & (cols[None, :] < N)
    x = tl.load(x_ptr + rows[:, None] * stride_x + cols[None, :], mask=inside)
    # z is x transposed: element (r, c) of x lands at (c, r) of z
    tl.store(z_ptr + cols[None, :] * stride_z + rows[:, None], x, mask=inside)


@kl.jit
def row_max(x_ptr, z_ptr, N, stride_x, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    x = tl.load(x_ptr + row * stride_x + cols, mask=cols < N, other=-float("inf"))
    tl.store(z_ptr + row, tl.max(x, axis=0))


@kl.jit
def softmax(x_ptr, z_ptr, N, stride_x, stride_z, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    x = tl.load(x_ptr + row * stride_x + cols, mask=cols < N, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    e = tl.exp(x)
    tl.store(z_ptr + row * stride_z + cols, e / tl.sum(e, axis=0), mask=cols < N)


@kl.jit
def grouped_matmul(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm,
                   BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                   GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    per_group = GROUP_M * tiles_n
    first_m = (pid // per_group) * GROUP_M
    group_rows = min(tiles_m - first_m, GROUP_M)
    pid_m = first_m + (pid % per_group) % group_rows
    pid_n = (pid % per_group) // group_rows
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(a_ptr + rm[:, None] * stride_am + (k + rk)[None, :],
                    mask=(rm[:, None] < M) & ((k + rk)[None, :] < K), other=0.0)
        b = tl.load(b_ptr + (k + rk)[:, None] * stride_bk + rn[None, :],
                    mask=((k + rk)[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


@kl.jit
def flash_attention(q_ptr, k_ptr, v_ptr, o_ptr, seq, scale, stride,
                    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, HEAD: tl.constexpr):
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rd = tl.arange(0, HEAD)
    q = tl.load(q_ptr + rm[:, None] * stride + rd[None, :], mask=rm[:, None] < seq, other=0.0)
    running_max = tl.full((BLOCK_M,), -float("inf"), tl.float32)
    running_sum = tl.zeros((BLOCK_M,), dtype=tl.float32)
    acc = tl.zeros((BLOCK_M, HEAD), dtype=tl.float32)
    for start in range(0, seq, BLOCK_N):
        rn = start + tl.arange(0, BLOCK_N)
        k = tl.load(k_ptr + rn[:, None] * stride + rd[None, :], mask=rn[:, None] < seq, other=0.0)
        v = tl.load(v_ptr + rn[:, None] * stride + rd[None, :], mask=rn[:, None] < seq, other=0.0)
        s = tl.dot(q, tl.trans(k)) * scale
        s = tl.where(rn[None, :] < seq, s, -float("inf"))
        new_max = tl.maximum(running_max, tl.max(s, axis=1))
        p = tl.exp(s - new_max[:, None])
        correction = tl.exp(running_max - new_max)
        running_sum = running_sum * correction + tl.sum(p, axis=1)
        acc = acc * correction[:, None] + tl.dot(p.to(v.dtype), v)
        running_max = new_max
    tl.store(o_ptr + rm[:, None] * stride + rd[None, :], acc / running_sum[:, None], mask=rm[:, None] < seq)


@kl.jit
def quantized_matmul(a_ptr, w_ptr, scale_ptr, c_ptr, M, N, K, stride_am, stride_wk, stride_sg, stride_cm,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP_K: tl.constexpr):
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, GROUP_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for g in range(0, K // GROUP_K):
        k = g * GROUP_K + rk
        a = tl.load(a_ptr + rm[:, None] * stride_am + k[None, :], mask=rm[:, None] < M, other=0.0)
        w = tl.load(w_ptr + k[:, None] * stride_wk + rn[None, :], mask=rn[None, :] < N, other=0)
        s = tl.load(scale_ptr + g * stride_sg + rn, mask=rn < N, other=0.0)
        # int8 values are exact in fp16: multiply first, then scale the group's partial product
        acc += tl.dot(a, w.to(tl.float16)) * s[None, :]
    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


SOLUTIONS = {
    "load_block": load_block,
    "masks": masks,
    "pointers_2d": pointers_2d,
    "row_max": row_max,
    "softmax": softmax,
    "grouped_matmul": grouped_matmul,
    "flash_attention": flash_attention,
    "quantized_matmul": quantized_matmul,
}
