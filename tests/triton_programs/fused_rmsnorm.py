"""A Triton program as users bring one: a fused RMSNorm (with a residual add) and a rotary
embedding, written against Triton's API only (`import triton`, `import triton.language as tl`).

kernellab's tests run it unmodified: under `kernellab.as_triton()`, through a stand-in Triton
(tests/fake_triton) read by `kernellab.triton_compat.from_triton`, and through the real Triton
where it is installed. Host code uses numpy, so it runs on the interpreter without a GPU.
"""

import numpy as np
import triton
import triton.language as tl

ACC = tl.constexpr(tl.float32)  # a global the kernels read: Triton allows constexpr globals


@triton.jit
def _rms(x, N, eps):
    return tl.rsqrt(tl.sum(x * x, axis=0) / N + eps)


@triton.autotune(
    configs=[triton.Config({}, num_warps=1), triton.Config({}, num_warps=4)],
    key=["N"],
    restore_value=["res_ptr"],  # tuning runs the kernel per config: keep the residual as given
)
@triton.heuristics({"HAS_RESIDUAL": lambda args: args["res_ptr"] is not None})
@triton.jit
def rmsnorm_kernel(x_ptr, res_ptr, w_ptr, out_ptr, stride, N, eps,
                   BLOCK: tl.constexpr, HAS_RESIDUAL: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0).to(ACC)
    if HAS_RESIDUAL:
        x += tl.load(res_ptr + row * stride + cols, mask=mask, other=0.0).to(ACC)
        tl.store(res_ptr + row * stride + cols, x.to(res_ptr.dtype.element_ty), mask=mask)
    w = tl.load(w_ptr + cols, mask=mask).to(ACC)
    y = x * _rms(x, N, eps) * w
    tl.store(out_ptr + row * stride + cols, y.to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def rotary_kernel(q_ptr, cos_ptr, sin_ptr, seq_len, HALF: tl.constexpr):
    """Rotate each (q[i], q[i + HALF]) pair of row `pid` by the angle of its position."""
    pid = tl.program_id(0)
    pos = pid % seq_len
    offs = tl.arange(0, HALF)
    q1 = tl.load(q_ptr + pid * 2 * HALF + offs)
    q2 = tl.load(q_ptr + pid * 2 * HALF + HALF + offs)
    c = tl.load(cos_ptr + pos * HALF + offs)
    s = tl.load(sin_ptr + pos * HALF + offs)
    tl.store(q_ptr + pid * 2 * HALF + offs, q1 * c - q2 * s)
    tl.store(q_ptr + pid * 2 * HALF + HALF + offs, q1 * s + q2 * c)


def rmsnorm(x, weight, residual=None, eps=1e-6, kernel=rmsnorm_kernel):
    out = np.full_like(x, np.nan)
    rows, n = x.shape
    kernel[(rows,)](x, residual, weight, out, x.strides[0] // x.itemsize, n, eps,
                    BLOCK=triton.next_power_of_2(n))
    return out


def rotary(q, cos, sin, kernel=rotary_kernel):
    batch, seq_len, dim = q.shape
    kernel[(batch * seq_len,)](q, cos, sin, seq_len, HALF=dim // 2)
    return q


def check(rmsnorm_kernel=rmsnorm_kernel, rotary_kernel=rotary_kernel, seed=None):
    """Run both kernels on fresh random data and compare with float64 numpy."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((6, 200)).astype(np.float32)
    res = rng.standard_normal((6, 200)).astype(np.float32)
    w = rng.uniform(0.5, 1.5, 200).astype(np.float32)
    s = x.astype(np.float64) + res
    want = s / np.sqrt((s * s).mean(axis=1, keepdims=True) + 1e-6) * w
    res_in = res.copy()
    got = rmsnorm(x, w, res_in, kernel=rmsnorm_kernel)
    np.testing.assert_allclose(res_in, s, rtol=2**-23)  # the residual stream gets x + res
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    plain = rmsnorm(x, w, kernel=rmsnorm_kernel)
    xs = x.astype(np.float64)
    np.testing.assert_allclose(plain, xs / np.sqrt((xs * xs).mean(axis=1, keepdims=True) + 1e-6) * w, rtol=1e-5, atol=1e-6)

    q = rng.standard_normal((2, 5, 64)).astype(np.float32)
    angles = np.arange(5)[:, None] * (10000.0 ** (-np.arange(32) / 32))[None, :]
    cos, sin = np.cos(angles).astype(np.float32), np.sin(angles).astype(np.float32)
    q1, q2 = q[..., :32].astype(np.float64), q[..., 32:].astype(np.float64)
    want_q = np.concatenate([q1 * cos - q2 * sin, q1 * sin + q2 * cos], axis=-1)
    np.testing.assert_allclose(rotary(q.copy(), cos, sin, kernel=rotary_kernel), want_q, rtol=1e-5, atol=1e-6)
    return True


if __name__ == "__main__":
    check()
    print("fused_rmsnorm: ok")
