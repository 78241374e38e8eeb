"""Hopper's wgmma path without a GPU: which dots accelerate_matmul puts on MMA v3 for sm_90a
(and why others stay on MMA v2), the TTGIR it leaves (NVMMA shared operands, a warp-group dot
fed by the pipeliner's rings), and PTX for every tutorial config assembled for sm_90a."""

from __future__ import annotations

import re

import pytest

import kernellab as kl
import kernellab.language as tl
from kernellab.examples import matmul_kernel
from kernellab.layouts import nvmma_shared
from tests.filecheck import check

SIGNATURE = "*fp16,*fp16,*fp16,i32,i32,i32,i32,i32,i32"
ALIGNED = {"tt.divisibility": 16}
ATTRS = {n: ALIGNED for n in ("a_ptr", "b_ptr", "c_ptr", "M", "N", "K", "stride_am", "stride_bk",
                              "stride_cm")}  # fmt: skip
TUTORIAL_CONFIGS = [(128, 256, 64, 8, 3), (64, 256, 32, 4, 4), (128, 128, 32, 4, 4),
                    (128, 64, 32, 4, 4), (64, 128, 32, 4, 4), (128, 32, 32, 4, 4)]  # fmt: skip


def compile_matmul(bm, bn, bk, warps, stages, target="sm_90a", signature=SIGNATURE):
    constexprs = dict(BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn, BLOCK_SIZE_K=bk, GROUP_SIZE_M=8,
                      ACTIVATION="", stride_ak=1, stride_bn=1, stride_cn=1)  # fmt: skip
    return kl.compile(matmul_kernel, signature=signature, constexprs=constexprs, attrs=ATTRS,
                      target=target, num_warps=warps, num_stages=stages)  # fmt: skip


def test_tutorial_matmul_on_sm_90a_is_a_pipelined_warp_group_dot():
    ttgir = compile_matmul(128, 128, 64, 4, 3).asm["ttgir"]
    check(ttgir, [
        "#mma = #ttg.nvidia_mma<{versionMajor = 3, versionMinor = 0, warpsPerCTA = [4, 1], instrShape = [16, 128, 16]}>",
        "#shared = #ttg.nvmma_shared<{swizzlingByteWidth = 128, elementBitWidth = 16}>",
        # 3 stages, the dot asynchronous: 2 copies in flight, the slot this dot reads, and the
        # previous dot's, which may still be running when the loop refills the oldest slot
        "ttg.local_alloc : () -> !ttg.memdesc<4x128x64xf16, #shared, #smem, mutable>",
        "ttg.local_alloc : () -> !ttg.memdesc<4x64x128xf16, #shared, #smem, mutable>",
        "scf.for", "ttg.async_wait", "ttg.async_copy_global_to_local", "ttg.async_copy_global_to_local",
        "ttg.memdesc_index", "ttg.memdesc_index", "ttng.warp_group_dot",
    ])  # fmt: skip
    assert "ttg.local_load" not in ttgir.split("scf.for")[1].split("scf.yield")[0]


@pytest.mark.parametrize("config", TUTORIAL_CONFIGS, ids=lambda c: "x".join(map(str, c)))
def test_tutorial_configs_assemble_for_sm_90a_with_wgmma(config):
    bm, bn, bk, warps, stages = config
    ck = compile_matmul(*config)
    ptx = ck.asm["ptx"]
    assert ".target sm_90a" in ptx and "wgmma.fence.sync.aligned" in ptx
    n_instr = bn if warps == 4 or bm >= 128 else bn // 2
    shapes = set(re.findall(r"wgmma\.mma_async\.sync\.aligned\.m64n(\d+)k16\.f32\.f16\.f16", ptx))
    assert shapes == {str(min(256, n_instr))}
    assert "fence.proxy.async.shared::cta" in ptx and ck.metadata["spills"] == 0
    assert len(ck.asm["cubin"]) > 0  # ptxas (nvJitLink) accepted it


def test_the_other_targets_and_two_warps_stay_on_mma_v2():
    assert "mma.sync.aligned.m16n8k16" in compile_matmul(128, 128, 32, 4, 3, target="sm_90").asm["ptx"]
    ttgir = compile_matmul(64, 32, 32, 2, 3).asm["ttgir"]
    assert "versionMajor = 2" in ttgir
    record = next(r for r in compile_matmul(64, 32, 32, 2, 3).passes if r.name == "accelerate_matmul")
    assert "mma-v2-dot" in record.summary


def test_nvmma_layout_cuts_the_contiguous_dim_into_swizzle_wide_panels():
    """64 x 128 fp16 with a 128-byte swizzle: two panels of 64 columns, each row's 16-byte
    chunks XORed with the row (mod 8); the layout the lab draws is the one the lowering uses."""
    layout = nvmma_shared(128, 16, False, [64, 128])
    bases = dict(zip(range(13), layout.bases["offset"]))
    assert [bases[i] for i in range(6)] == [(0, 1), (0, 2), (0, 4), (0, 8), (0, 16), (0, 32)]
    assert bases[6] == (1, 8) and bases[8] == (4, 32) and bases[9] == (8, 0)
    assert bases[12] == (0, 64)  # after all 64 rows of the first panel


def test_fp8_dots_with_k_major_operands_run_on_wgmma_k32():
    signature = "*fp8e4nv,*fp8e5,*fp16,i32,i32,i32,i32,i32,i32"
    attrs = {n: ALIGNED for n in ("a_ptr", "b_ptr", "c_ptr", "M", "N", "K", "stride_am",
                                  "stride_bn", "stride_cm")}  # fmt: skip
    constexprs = dict(BLOCK_SIZE_M=128, BLOCK_SIZE_N=128, BLOCK_SIZE_K=128, GROUP_SIZE_M=8,
                      ACTIVATION="", stride_ak=1, stride_bk=1, stride_cn=1)  # fmt: skip
    ck = kl.compile(matmul_kernel, signature=signature, constexprs=constexprs, attrs=attrs,
                    target="sm_90a", num_warps=4, num_stages=3)  # fmt: skip
    assert "wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e5m2" in ck.asm["ptx"]
    assert "instrShape = [16, 128, 32]" in ck.asm["ttgir"]


def test_fp8_with_a_row_major_b_stays_on_mma_sync_and_says_why():
    ck = compile_matmul(128, 128, 64, 4, 3, signature="*fp8e4nv,*fp8e4nv,*fp16,i32,i32,i32,i32,i32,i32")
    assert "mma.sync.aligned.m16n8k32" in ck.asm["ptx"] and "wgmma" not in ck.asm["ptx"]


@kl.jit
def chained_dot(a_ptr, b_ptr, c_ptr, d_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    """D = softmax-like(A · B) · C: the second dot's A is computed from the first one's result
    (attention's shape: P = f(Q Kᵀ), then P V)."""
    rm, rn, rk = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * K + rk[None, :])
    s = tl.dot(a, b)
    p = tl.math.exp2(s - tl.max(s, 1)[:, None]).to(tl.float16)
    c = tl.load(c_ptr + rk[:, None] * N + rn[None, :])
    tl.store(d_ptr + rm[:, None] * N + rn[None, :], tl.dot(p, c))


REGISTER_A_CASES = [(64, 64, 32, 4), (128, 64, 64, 8), (64, 256, 32, 8), (128, 128, 64, 4)]


def compile_chained_dot(m, n, k, warps):
    return kl.compile(chained_dot, signature="*fp16,*fp16,*fp16,*fp32", constexprs=dict(M=m, N=n, K=k),
                      target="sm_90a", num_warps=warps)  # fmt: skip


@pytest.mark.parametrize("case", REGISTER_A_CASES, ids=lambda c: "x".join(map(str, c)))
def test_an_operand_a_computed_from_a_dot_stays_in_registers_for_wgmma(case):
    ck = compile_chained_dot(*case)
    ttgir, ptx = ck.asm["ttgir"], ck.asm["ptx"]
    first, second = [line for line in ttgir.splitlines() if "ttng.warp_group_dot" in line]
    assert "!ttg.memdesc" in first.split(":")[1].split("*")[0]  # loaded A: from shared memory
    assert "#ttg.dot_op<{opIdx = 0" in second.split(":")[1].split("*")[0]  # P: in registers
    m, _, _, warps = case
    if warps == 4 or m >= 128:  # the first dot's warps all along M: P stays where it was computed
        assert "ttg.local_load" not in ttgir
    else:  # its warps split N, so P's rows cross warps and go through shared memory once
        assert "ttg.local_load" in ttgir
    # four .b32 registers of A per instruction
    assert re.search(r"wgmma\.mma_async\.sync\.aligned\.m64n\d+k16\.f32\.f16\.f16 \{[^}]*\}, "
                     r"\{%r\d+, %r\d+, %r\d+, %r\d+\}", ptx)  # fmt: skip
    assert ck.metadata["spills"] == 0 and len(ck.asm["cubin"]) > 0


def test_attention_keeps_its_loop_in_the_mma_layouts_and_p_in_registers():
    from kernellab.examples import attention_fwd_kernel

    ones = dict(stride_qk=1, stride_kk=1, stride_vk=1, stride_ok=1)
    constexprs = dict(HEAD_DIM=64, BLOCK_M=128, BLOCK_N=64, CAUSAL=False, **ones)
    runtime = [n for n in attention_fwd_kernel.arg_names if n not in constexprs]
    signature = {n: "*fp16" if n in ("Q", "K", "V", "Out") else "fp32" if n == "sm_scale" else "i32" for n in runtime}
    attrs = {n: ALIGNED for n in runtime if n not in ("sm_scale", "H")}
    ck = kl.compile(attention_fwd_kernel, signature=signature, constexprs=constexprs, attrs=attrs,
                    target="sm_90a", num_warps=8, num_stages=3)  # fmt: skip
    ttgir = ck.asm["ttgir"]
    before, loop = ttgir.split("scf.for", 1)
    loop = loop.split("scf.yield")[0]
    assert "ttg.local_alloc %q" in before  # Q is staged once, before the loop
    # the softmax follows the dots' MMA layout: the only conversion in the loop is P's, into
    # the register operand (thread-local), none through shared memory
    converts = [line for line in loop.splitlines() if "ttg.convert_layout" in line]
    assert len(converts) == 1 and "#ttg.dot_op<{opIdx = 0" in converts[0]
    assert "ttg.local_alloc %" not in loop and "ttg.local_load" not in loop
    assert ck.metadata["spills"] == 0
