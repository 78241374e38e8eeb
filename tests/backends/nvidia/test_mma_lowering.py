"""The MMA lowering on the CPU: the PTX of tensor-core dots (mma.sync, ldmatrix) for sm_80 and
sm_90, assembled."""

from __future__ import annotations

import re

import pytest

import kernellab as kl
import kernellab.language as tl


@kl.jit
def dot_kernel(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
               TRANS_B: tl.constexpr):  # fmt: skip
    m, n, k = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    a = tl.load(a_ptr + m[:, None] * K + k[None, :])
    if TRANS_B:
        b = tl.trans(tl.load(b_ptr + n[:, None] * K + k[None, :]))
    else:
        b = tl.load(b_ptr + k[:, None] * N + n[None, :])
    c = tl.dot(a, b)
    tl.store(c_ptr + m[:, None] * N + n[None, :], c)


def _ptx(elem, target, trans_b=False, out="*fp32", num_warps=4, shape=(64, 64, 32), b_elem=None):
    M, N, K = shape
    ck = kl.compile(dot_kernel, signature=f"*{elem},*{b_elem or elem},{out}",
                    constexprs=dict(M=M, N=N, K=K, TRANS_B=trans_b), target=target,
                    num_warps=num_warps)  # fmt: skip
    assert ck.asm["cubin"][:4] == b"\x7fELF"  # the PTX assembled
    return ck


@pytest.mark.parametrize("target", ["sm_80", "sm_90"])
@pytest.mark.parametrize("trans_b", [False, True])
def test_fp16_dot_runs_on_ldmatrix_and_mma_sync(target, trans_b):
    ptx = _ptx("fp16", target, trans_b).asm["ptx"]
    assert "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32" in ptx
    assert re.search(r"ldmatrix\.sync\.aligned\.m8n8\.x4\.shared\.b16", ptx)
    # B row-major (N contiguous) is read transposed; tl.trans of an N x K tile is K-contiguous
    assert ("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16" in ptx) == (not trans_b)
    # both operands come from ldmatrix: their buffers' swizzle keeps ldmatrix's 16-byte rows
    assert not re.search(r"ld\.shared(\.v\d)?\.[bu]16", ptx)


@pytest.mark.parametrize(
    "elem, target, instruction",
    [
        ("bf16", "sm_80", "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"),
        ("fp32", "sm_80", "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"),
        ("i8", "sm_90", "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32"),
        ("fp8e4nv", "sm_90", "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32"),
        ("fp8e5", "sm_90", "mma.sync.aligned.m16n8k32.row.col.f32.e5m2.e5m2.f32"),
    ],
)
def test_other_dtypes_take_their_mma_sync_form(elem, target, instruction):
    out = "*i32" if elem == "i8" else "*fp32"
    assert instruction in _ptx(elem, target, out=out).asm["ptx"]


@pytest.mark.parametrize("elem, out", [("i8", "*i32"), ("fp8e4nv", "*fp32")])
@pytest.mark.parametrize("trans_b", [False, True])
def test_8_bit_operands_are_read_a_32_bit_fragment_register_at_a_time(elem, out, trans_b):
    ptx = _ptx(elem, "sm_90", trans_b, out=out).asm["ptx"]
    # kWidth 4: a register's four K elements are contiguous in the K-contiguous buffer that
    # reduce_data_duplication picks for them, so one ld.shared.b32 each, no byte loads
    assert re.search(r"ld\.shared\.b32", ptx)
    assert not re.search(r"ld\.shared(\.v\d)?\.[bu]8", ptx)


def test_mixed_fp8_operands_share_one_mma():
    ptx = _ptx("fp8e4nv", "sm_90", b_elem="fp8e5").asm["ptx"]
    assert "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e5m2.f32" in ptx


def test_fp8_on_sm80_stays_on_fma():
    ck = _ptx("fp8e4nv", "sm_80")
    assert "mma.sync" not in ck.asm["ptx"]
    (record,) = [r for r in ck.passes if r.name == "accelerate_matmul"]
    assert "stays on FMA: f8E4M3FN mma.sync needs sm_89+, the target is sm_80" in record.summary


@kl.jit
def batched_dot_kernel(a_ptr, b_ptr, c_ptr, B: tl.constexpr, M: tl.constexpr, N: tl.constexpr,
                       K: tl.constexpr):  # fmt: skip
    rb = tl.arange(0, B)[:, None, None]
    rm, rn = tl.arange(0, M)[None, :, None], tl.arange(0, N)[None, None, :]
    a = tl.load(a_ptr + rb * (M * K) + rm * K + tl.arange(0, K)[None, None, :])
    b = tl.load(b_ptr + rb * (K * N) + tl.arange(0, K)[None, :, None] * N + rn)
    tl.store(c_ptr + rb * (M * N) + rm * N + rn, tl.dot(a, b))


@pytest.mark.parametrize("target", ["sm_80", "sm_90"])
def test_batched_dot_runs_each_batch_element_on_mma_sync(target):
    B, M, N, K, warps = 4, 32, 32, 32, 4
    ck = kl.compile(batched_dot_kernel, signature="*fp16,*fp16,*fp32", target=target,
                    constexprs=dict(B=B, M=M, N=N, K=K), num_warps=warps)  # fmt: skip
    ptx = ck.asm["ptx"]
    # warps along the batch: each warp issues every instruction tile of its batch element
    mmas = len(re.findall(r"mma\.sync\.aligned\.m16n8k16\.row\.col\.f32\.f16\.f16\.f32", ptx))
    assert mmas == (B // warps) * (M // 16) * (N // 8) * (K // 16)
    assert "ldmatrix.sync.aligned.m8n8.x4.shared.b16" in ptx  # A, K-contiguous
    assert "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16" in ptx  # B, N-contiguous
