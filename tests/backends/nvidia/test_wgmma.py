"""Hopper's wgmma path without a GPU: which dots accelerate_matmul puts on MMA v3 for sm_90a
(and why others stay on MMA v2), the TTGIR it leaves (NVMMA shared operands, a warp-group dot
fed by the pipeliner's rings), and PTX for every tutorial config assembled for sm_90a."""

from __future__ import annotations

import re

import pytest

import kernellab as kl
import kernellab.language as tl
from kernellab.backends.nvidia.sass import find_nvdisasm
from kernellab.examples import matmul_kernel
from kernellab.layouts import nvmma_shared
from tests.filecheck import check

SIGNATURE = "*fp16,*fp16,*fp16,i32,i32,i32,i32,i32,i32"
ALIGNED = {"tt.divisibility": 16}
ATTRS = {n: ALIGNED for n in ("a_ptr", "b_ptr", "c_ptr", "M", "N", "K", "stride_am", "stride_bk",
                              "stride_cm")}  # fmt: skip
TUTORIAL_CONFIGS = [(128, 256, 64, 8, 3), (64, 256, 32, 4, 4), (128, 128, 32, 4, 4),
                    (128, 64, 32, 4, 4), (64, 128, 32, 4, 4), (128, 32, 32, 4, 4)]  # fmt: skip




@kl.jit
def unbounded_matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                            stride_cm, stride_cn, BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr,
                            BLOCK_SIZE_K: tl.constexpr, GROUP_SIZE_M: tl.constexpr,
                            ACTIVATION: tl.constexpr):  # fmt: skip
    """The tutorial's matmul for M, N and K multiples of the tile: loads without wraps or masks,
    which bound no dim of a descriptor (tiles_as_descriptors keeps them: cp.async copies them)."""
    pid_m = tl.program_id(axis=0) % tl.cdiv(M, BLOCK_SIZE_M)
    pid_n = tl.program_id(axis=0) // tl.cdiv(M, BLOCK_SIZE_M)
    offs_am = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    offs_bn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    offs_k = tl.arange(0, BLOCK_SIZE_K)
    a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
    accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for k in range(tl.cdiv(K, BLOCK_SIZE_K)):
        accumulator = tl.dot(tl.load(a_ptrs), tl.load(b_ptrs), accumulator)
        a_ptrs += BLOCK_SIZE_K * stride_ak
        b_ptrs += BLOCK_SIZE_K * stride_bk
    c_ptrs = c_ptr + stride_cm * offs_am[:, None] + stride_cn * offs_bn[None, :]
    tl.store(c_ptrs, accumulator.to(tl.float16))


def compile_matmul(bm, bn, bk, warps, stages, target="sm_90a", signature=SIGNATURE, kernel=matmul_kernel):
    constexprs = dict(BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn, BLOCK_SIZE_K=bk, GROUP_SIZE_M=8,
                      ACTIVATION="", stride_ak=1, stride_bn=1, stride_cn=1)  # fmt: skip
    return kl.compile(kernel, signature=signature, constexprs=constexprs, attrs=ATTRS,
                      target=target, num_warps=warps, num_stages=stages)  # fmt: skip


def test_tutorial_matmul_on_sm_90a_is_a_warp_group_dot_fed_by_pipelined_tma_copies():
    """The operands' pointer tiles are read as descriptor tiles (tiles_as_descriptors): each
    stage one TMA copy per operand, completed on the slot's mbarrier."""
    ck = compile_matmul(128, 128, 64, 4, 3)
    ttgir = ck.asm["ttgir"]
    check(ttgir, [
        "#mma = #ttg.nvidia_mma<{versionMajor = 3, versionMinor = 0, warpsPerCTA = [4, 1], instrShape = [16, 128, 16]}>",
        "#shared = #ttg.nvmma_shared<{swizzlingByteWidth = 128, elementBitWidth = 16}>",
        "ttg.local_alloc : () -> !ttg.memdesc<4x128x64xf16, #shared, #smem, mutable>",
        "ttg.local_alloc : () -> !ttg.memdesc<4x64x128xf16, #shared, #smem, mutable>",
        "ttg.local_alloc : () -> !ttg.memdesc<4x1xi64,",
        "scf.for", "ttng.wait_barrier", "ttng.barrier_expect", "ttng.async_tma_copy_global_to_local",
        "ttng.async_tma_copy_global_to_local", "ttng.warp_group_dot",
    ])  # fmt: skip
    loop = ttgir.split("scf.for")[1].split("scf.yield")[0]
    assert "ttg.local_load" not in loop and "tt.load" not in loop and "async_copy_global_to_local" not in loop
    record = next(r for r in ck.passes if r.name == "tiles_as_descriptors")
    assert record.summary == "2× tile-as-descriptor, 2× drop-carried-pointers"


def test_a_matmul_whose_loads_bound_no_dim_is_fed_by_cp_async_copies():
    ck = compile_matmul(128, 128, 64, 4, 3, kernel=unbounded_matmul_kernel)
    ttgir = ck.asm["ttgir"]
    assert "a dim has no bound" in next(r for r in ck.passes if r.name == "tiles_as_descriptors").summary
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
    # operands arrive by TMA, each stage's on its own mbarrier
    assert "cp.async.bulk.tensor.2d.shared::cluster.global" in ptx and "mbarrier.try_wait" in ptx
    assert "cp.async.cg" not in ptx and ck.metadata["spills"] == 0
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
    assert "mma.sync.aligned.m16n8k32" in ck.asm["ptx"] and "wgmma.mma_async" not in ck.asm["ptx"]
    record = next(r for r in ck.passes if r.name == "accelerate_matmul")
    assert "on mma.sync: 8-bit wgmma reads both operands K-major" in record.summary


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


def compile_attention(head_dim=64, causal=False, stages=3, overlapped=False, block_n=64, num_warps=8, **options):
    from kernellab.examples import attention_fwd_kernel, attention_fwd_overlapped_kernel

    kernel = attention_fwd_overlapped_kernel if overlapped else attention_fwd_kernel
    ones = dict(stride_qk=1, stride_kk=1, stride_vk=1, stride_ok=1)
    constexprs = dict(HEAD_DIM=head_dim, BLOCK_M=128, BLOCK_N=block_n, CAUSAL=causal, **ones)
    runtime = [n for n in kernel.arg_names if n not in constexprs]
    signature = {n: "*fp16" if n in ("Q", "K", "V", "Out") else "fp32" if n == "sm_scale" else "i32" for n in runtime}
    attrs = {n: ALIGNED for n in runtime if n not in ("sm_scale", "H")}
    return kl.compile(kernel, signature=signature, constexprs=constexprs, attrs=attrs,
                      target="sm_90a", num_warps=num_warps, num_stages=stages, **options)  # fmt: skip


def test_maxnreg_is_a_ptx_directive_that_caps_a_warp_group_kernel():
    # ptxas' -maxrregcount alone leaves wgmma kernels at their own count; `.maxnreg` binds
    ck = compile_attention(maxnreg=120)
    assert ".maxnreg 120" in ck.asm["ptx"]
    assert ck.metadata["registers"] <= 120


def test_attention_keeps_its_loop_in_the_mma_layouts_and_p_in_registers():
    ck = compile_attention()
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


@pytest.mark.parametrize("head_dim,causal", [(64, False), (64, True), (128, False)])
def test_attentions_p_v_dot_stays_in_flight_into_the_next_iteration(head_dim, causal):
    ck = compile_attention(head_dim, causal)
    ttgir, ptx = ck.asm["ttgir"], ck.asm["ptx"]
    loop = ttgir.split("scf.for", 1)[1].split("scf.yield")[0]
    qk, pv = [line for line in loop.splitlines() if "ttng.warp_group_dot " in line]
    assert "isAsync" in pv and "isAsync" not in qk
    # the carried accumulator is waited for right after Q·Kᵀ (whose own wait drains P·V too)
    after_qk = loop.split(qk, 1)[1].strip().splitlines()[0]
    assert "ttng.warp_group_dot_wait" in after_qk and "pendings = 0" in after_qk
    # ...and that wait is no instruction of its own: Q·Kᵀ's `wait_group 0` has drained P·V
    loop_ptx = _loop_body(ptx)
    assert loop_ptx.count("wgmma.wait_group") == 1
    # rings of S slots, as Triton's: the refill takes the slot the previous iteration read,
    # whose P·V Q·Kᵀ's wait has drained, never the one the running P·V reads (a slot more at
    # head dim 128, whose program is alone on its SM: the rings pass by mbarriers)
    handed = head_dim == 128
    slots = 3 + handed
    assert re.search(rf"ttg\.local_alloc : \(\) -> !ttg\.memdesc<{slots}x64x{head_dim}", ttgir)
    body = loop_ptx.split("wgmma.commit_group")[2]  # P·V's commit to the loop's end
    assert "wgmma.wait_group" not in body and "bra" in body
    # the refill's copies overlap the running P·V, not Q·Kᵀ's issue, once every warp has
    # drained its previous P·V: behind a barrier, or the slots' mbarriers
    assert "cp.async.cg.shared.global" in body
    released = body.split("cp.async.cg.shared.global")[0]
    if handed:
        assert "mbarrier.arrive.shared" in released and "mbarrier.try_wait.parity" in released
    else:
        assert "bar.sync" in released
    assert "cp.async.cg" not in loop_ptx.split("wgmma.mma_async")[0]
    # P·V's A registers are packed before its wgmma.fence: none is written between its
    # instructions (ptxas would wait for the earlier ones first, its warning C7519)
    pv_ptx = ptx.split("wgmma.commit_group")[1].split("wgmma.commit_group")[0]
    pv_ptx = pv_ptx.split("wgmma.fence.sync.aligned")[-1]
    assert "cvt.rn.f16x2.f32" not in pv_ptx
    # Q·Kᵀ starts from zero: its first instruction does not read an accumulator (scale-d false)
    first = re.search(r"setp\.eq\.u32 p, 1, (\d); wgmma\.mma_async", ptx.split("$L__BB0_2")[1])
    assert first.group(1) == "0"
    assert ck.metadata["spills"] == 0


def _loop_body(ptx: str) -> str:
    """The PTX from a loop's label to the branch back to it (the first such loop)."""
    for branch in re.finditer(r"bra(?:\.uni)?\s+(\$L__BB\d+_\d+);", ptx):
        start = ptx.find(branch.group(1) + ":")
        if 0 <= start < branch.start():
            return ptx[start : branch.end()]
    raise AssertionError("no loop in the PTX")


@pytest.mark.parametrize("head_dim,causal,stages", [(64, False, 3), (64, True, 3), (128, False, 2)])
def test_overlapped_attentions_p_v_runs_beside_the_next_softmax(head_dim, causal, stages):
    """The overlapped order issues the next Q·Kᵀ, then this tile's P·V, then the softmax, then
    rescales: P·V stays in flight until the rescale, its wait keeping P's registers live."""
    ck = compile_attention(head_dim, causal, stages, overlapped=True)
    ttgir, ptx = ck.asm["ttgir"], ck.asm["ptx"]
    loop = ttgir.split("scf.for", 1)[1].split("scf.yield")[0]
    qk, pv = [line for line in loop.splitlines() if "ttng.warp_group_dot " in line]
    assert "isAsync" in pv and "isAsync" not in qk
    # P comes from the previous iteration, still in registers: no shared memory in the loop
    assert "ttg.local_alloc %" not in loop and "ttg.local_load" not in loop
    pv_result = re.match(r"\s*(%\w+) = ", pv).group(1)
    waits = [line for line in loop.splitlines() if "ttng.warp_group_dot_wait " + pv_result in line]
    assert len(waits) == 1 and "pendings = 0" in waits[0]
    assert re.search(r"warp_group_dot_wait %\w+, %\w+ .*#ttg.dot_op<\{opIdx = 0", waits[0])  # keeps P live
    between = loop.split(pv, 1)[1].split(waits[0])[0]
    assert "math.exp2" in between and "tt.reduce" in between  # the next tile's softmax
    assert "arith.mulf " + pv_result not in between
    # rings of S slots (P·V is done before its iteration ends), one more for the mbarriers' skew
    # at head dim 128; nothing is waited for after the loop but the copies
    slots = stages + (head_dim == 128)
    assert re.search(rf"ttg\.local_alloc : \(\) -> !ttg\.memdesc<{slots}x64x{head_dim}", ttgir)
    body = _loop_body(ptx)
    pv_ptx = body.split("wgmma.commit_group")[2]  # from P·V's commit to the loop's end
    assert pv_ptx.count("wgmma.wait_group") == 1
    assert "ex2.approx" in pv_ptx.split("wgmma.wait_group")[0]
    # P is carried in pairs: narrowed two at a time, and the pairs are P·V's registers as they are
    assert "cvt.rn.f16x2.f32" in body and "cvt.rn.f16.f32" not in body
    assert not re.search(r"mov\.b32\s+%r\d+, \{", body)
    assert ck.metadata["spills"] == 0


@pytest.mark.parametrize("overlapped", [False, True])
@pytest.mark.parametrize("head_dim,stages", [(128, 2), (128, 3)])
def test_attentions_rings_pass_between_copies_and_dots_by_mbarriers(overlapped, head_dim, stages):
    """No bar.sync in attention's loop at head dim 128 (a program alone on its SM): each K/V
    slot has a `full` mbarrier (every thread's copies landed) and an `empty` one (every thread
    done reading it), so the two warp groups may drift up to an iteration apart; a slot more
    per ring pays for that."""
    ck = compile_attention(head_dim, False, stages, overlapped=overlapped)
    ttgir, ptx = ck.asm["ttgir"], ck.asm["ptx"]
    loop = ttgir.split("scf.for", 1)[1].split("scf.yield")[0]
    kinds = ("ttng.wait_barrier", "ttng.arrive_barrier", "ttg.async_copy_global_to_local",
             "ttng.async_copy_mbarrier_arrive", "ttng.warp_group_dot ")  # fmt: skip
    events = [kind.split(".")[1].strip() for line in loop.splitlines() for kind in kinds if kind in line]
    # the iteration's slot is waited for first; the slot done with is released, and the refill
    # waits for its slot's readers, copies, and arrives on that slot's full barrier
    assert events[0] == "wait_barrier"
    refill = ["arrive_barrier", "wait_barrier", "async_copy_global_to_local",
              "async_copy_global_to_local", "async_copy_mbarrier_arrive"]  # fmt: skip
    start = events.index("arrive_barrier")
    assert events[start : start + 5] == refill and events.count("warp_group_dot") == 2
    assert "ttg.async_wait" not in loop and "ttg.async_commit_group" not in loop
    assert all(" deps " in line for line in loop.splitlines() if "ttng.wait_barrier" in line)
    slots = stages + 1
    assert re.search(rf"ttg\.local_alloc : \(\) -> !ttg\.memdesc<{slots}x64x{head_dim}", ttgir)
    assert len(re.findall(r"ttng\.init_barrier %\w+, 256 ", ttgir)) == 2 * slots  # 8 warps' threads
    body = _loop_body(ptx)
    assert "bar.sync" not in body
    assert body.count("mbarrier.try_wait.parity") == 2 and body.count("cp.async.mbarrier.arrive.noinc") == 1
    assert body.count("mbarrier.arrive.shared::cta.b64") == 1
    # after the loop every thread waits for the copies past the trip count before the barriers
    # are invalidated (nothing arrives on them any more)
    after = ptx.split(body, 1)[1]
    assert after.count("mbarrier.try_wait.parity") == stages - 1
    assert after.index("mbarrier.try_wait") < after.index("mbarrier.inval")
    assert ck.metadata["spills"] == 0


def test_the_gpu_tests_few_tile_configs_pass_their_rings_by_mbarriers():
    from tests.backends.nvidia.test_attention_gpu import FEW_TILE_CONFIGS

    for overlapped, num_warps, stages in FEW_TILE_CONFIGS:
        ck = compile_attention(64, True, stages, overlapped, block_n=128, num_warps=num_warps)
        assert "ttng.init_barrier" in ck.asm["ttgir"], (overlapped, num_warps, stages)


def test_ring_mbarriers_false_keeps_tritons_loop():
    ck = compile_attention(128, stages=2, ring_mbarriers=False)
    ttgir = ck.asm["ttgir"]
    assert "ttng.init_barrier" not in ttgir and "ttg.async_wait" in ttgir.split("scf.for", 1)[1]
    assert re.search(r"ttg\.local_alloc : \(\) -> !ttg\.memdesc<2x64x128", ttgir)
    body = _loop_body(ck.asm["ptx"])
    assert "cp.async.wait_group" in body and "bar.sync" in body and "mbarrier" not in body
    assert "mbarrier" in compile_attention(128, stages=2).asm["ptx"]  # part of the cache key


def test_sm_budget_counts_programs_by_shared_memory_and_registers():
    from kernellab.passes.ttgir.pipeline_loops import SmBudget

    h100 = SmBudget(shared=233472, shared_reserved=1024, registers=65536)
    assert h100.programs(80 * 1024, 256, 121) == 2  # attention at head dim 64: registers decide
    assert h100.programs(64 * 1024, 256, 96) == 2 and h100.programs(64 * 1024, 128, 96) == 3
    assert h100.programs(128 * 1024, 256, 100) == 1  # shared memory decides
    assert h100.programs(1024, 256, 129) == 1  # 129 registers take 136: 34816 a program


@pytest.mark.parametrize("overlapped", [False, True])
def test_a_ring_keeps_its_bar_sync_beside_other_programs_on_its_sm(overlapped):
    # head dim 64: about 120 registers and 64-72 KB, two programs per SM, whose warp groups
    # already fill each other's gaps
    ck = compile_attention(64, overlapped=overlapped)
    assert "bar-sync-ring-beside-other-programs" in _record(ck, "pipeline").summary
    assert "ttng.init_barrier" not in ck.asm["ttgir"] and "bar.sync" in _loop_body(ck.asm["ptx"])
    assert ck.metadata["registers"] <= 128 and ck.metadata["shared"] + 1024 <= 233472 // 2


@pytest.mark.parametrize("head_dim", [64, 128])
def test_attentions_epilogue_narrows_in_the_mma_layout_and_stores_matrices(head_dim):
    """acc / l_i then .to(fp16): the halves leave the wgmma accumulator with stmatrix.x4 (8
    halves a lane each) and come back as 16-byte vectors for 16-byte global stores; nothing
    crosses shared memory as fp32 or one element at a time."""
    ck = compile_attention(head_dim)
    epilogue = ck.asm["ttgir"].rsplit("scf.yield", 1)[1]
    assert re.search(r"arith.truncf %\w+ : tensor<128x\d+xf32, (#mma\d*)> to tensor<128x\d+xf16, \1>", epilogue)
    assert re.search(r"ttg.convert_layout %\w+ : tensor<128x\d+xf16, #mma\d*>", epilogue)
    ptx = ck.asm["ptx"].rsplit("wgmma.wait_group", 1)[1]
    per_thread = 128 * head_dim // 256
    assert len(re.findall(r"stmatrix\.sync\.aligned\.m8n8\.x4\.shared\.b16", ptx)) == per_thread // 8
    assert len(re.findall(r"ld\.shared\.v4\.b32", ptx)) == per_thread // 8
    assert not re.search(r"\bst\.shared\.(b16|b32|f32|v2)", ptx)


def test_ordinary_writes_of_a_dots_buffer_are_fenced_once_and_copies_are_not():
    # attention: Q is written by the threads once, before the loop; K and V arrive by cp.async
    ttgir = compile_attention().asm["ttgir"]
    before, loop = ttgir.split("scf.for", 1)
    assert before.count("ttng.fence_async_shared") == 1
    q_alloc = next(line for line in before.splitlines() if "ttg.local_alloc %q" in line)
    assert "ttng.fence_async_shared" in before.split(q_alloc, 1)[1].splitlines()[1]
    assert "ttng.fence_async_shared" not in loop
    # a dot whose operands are loaded and staged with local_alloc: both writes fenced
    chained = compile_chained_dot(64, 64, 32, 4)
    assert chained.asm["ttgir"].count("ttng.fence_async_shared") == 3  # A, B, C
    assert len(re.findall(r"fence\.proxy\.async", chained.asm["ptx"])) == 3


def hgmma_loop(ck) -> list[str]:
    """The SASS instructions (nvdisasm's) of the kernel's loop that issues HGMMA: from a label to
    the branch back to it."""
    lines = ck.asm["sass"].splitlines()
    for i, line in enumerate(lines):
        label = re.match(r"\s*(\.L_x_\d+):", line)
        if not label:
            continue
        body = []
        for later in lines[i + 1:]:
            m = re.match(r"^\s+/\*[0-9a-f]{4}\*/\s+([^;]*);", later)
            if m:
                body.append(m.group(1).strip())
                if "BRA" in m.group(1) and f"({label.group(1)})" in m.group(1):
                    if any(x.startswith("HGMMA") for x in body):
                        return body
                    break
    raise AssertionError("no loop issues HGMMA")


@pytest.mark.skipif(find_nvdisasm() is None, reason="nvdisasm is not installed")
def test_two_warp_groups_keep_their_descriptors_on_the_uniform_datapath():
    # the warp group's rows in A's descriptors come from a warp index ptxas knows is uniform
    # (shfl.sync.idx from lane 0): no R2UR moves a descriptor before each HGMMA
    ck = compile_attention(64)
    assert ck.asm["ptx"].count("shfl.sync.idx") == 1
    loop = hgmma_loop(ck)
    assert sum(x.startswith("HGMMA") for x in loop) == 8  # Q·Kᵀ and P·V, 4 K steps each
    assert not [x for x in loop if x.startswith("R2UR")]


def test_a_loops_k_and_v_copies_are_one_address_plus_constants():
    # the copies' offsets, read from the buffers' layouts, are the thread's part (the same for
    # K and V, copied alike) plus constants: every copy's address is the first one's plus a
    # constant, an immediate in SASS
    ptx = compile_attention(64).asm["ptx"]
    loop = ptx.split("$L__BB0_2")[1].split("$L__BB0_3")[0]
    first, *others = re.findall(r"cp\.async\.cg\.shared\.global \[(%r\d+)\]", loop)
    assert len(others) == 3
    for dest in others:
        assert re.search(rf"add\.s32\s+{dest}, {first}, \d+;", loop)


def _record(ck, name):
    return next(r for r in ck.passes if r.name == name)


def test_occupancy_caps_a_kernel_just_short_of_one_more_program_per_sm():
    # a matmul fed by cp.async, 128x128x32 tiles, 4 warps, 2 stages: its shared memory leaves
    # room for three programs, which need at most 168 registers; ptxas alone takes more (176-190
    # as the lowering changes: the kernels here are chosen to stay on their side of a step)
    ck = compile_matmul(128, 128, 32, 4, 2, kernel=unbounded_matmul_kernel)
    record = _record(ck, "occupancy")
    assert record.changed and "→ 3 programs per SM" in record.summary
    assert ".maxnreg 168" in ck.asm["ptx"]
    assert ck.metadata["registers"] <= 168 and ck.metadata["spills"] == 0


def test_occupancy_leaves_kernels_far_from_a_step_and_the_users_cap_alone():
    wide = compile_attention(128, causal=True, stages=1)  # 180-200 registers: capping at 128 would cost more
    assert not _record(wide, "occupancy").changed and ".maxnreg" not in wide.asm["ptx"]
    assert "too far" in _record(wide, "occupancy").summary
    mine = compile_attention(64, maxnreg=168)
    assert ".maxnreg 168" in mine.asm["ptx"] and not _record(mine, "occupancy").changed
    # ~95 registers, 80 for one more program: ptxas refuses to assemble a wgmma of N=256 in them
    tight = compile_chained_dot(64, 256, 16, 8)
    assert "can't fit .maxnreg 80" in _record(tight, "occupancy").summary and tight.metadata["spills"] == 0
    big = compile_matmul(128, 256, 64, 8, 3)  # ~250 registers, but its rings fill the SM anyway
    assert _record(big, "occupancy").summary.endswith("1 program per SM, limited by shared memory")
    matmul = compile_matmul(128, 128, 32, 4, 4, target="sm_80")  # no warp-group dot: ptxas decides
    assert _record(matmul, "occupancy").summary == "left to ptxas"


def test_with_maxnreg_adds_the_directive_to_the_named_entry_only():
    from kernellab.backends.nvidia.occupancy import with_maxnreg

    ptx = ".visible .entry a(\n\t.param .u64 a_0\n)\n.maxntid 256\n{\n}\n" \
          ".visible .entry b(\n\t.param .u64 b_0\n)\n.maxntid 128\n{\n}\n"
    out = with_maxnreg(ptx, "b", 96)
    assert out.count(".maxnreg") == 1 and ".maxntid 128\n.maxnreg 96\n{" in out


TF32_SIGNATURE = "*fp32,*fp32,*fp16,i32,i32,i32,i32,i32,i32"


def test_tf32_tutorial_matmul_is_wgmma_k8_with_b_transposed_into_a_k_major_ring():
    """wgmma reads tf32 operands K-major only: the row-major B (N contiguous) gets a K-major
    NVMMA ring (transposed = 1), filled by 4-byte copies from a load layout of 2 (K) x 16 (N)
    lanes; A stays K-major with 16-byte copies. wgmma takes the fp32 bits as tf32 itself (it
    ignores the low 13 mantissa bits): no cvt.rna as on mma.sync."""
    ck = compile_matmul(128, 128, 32, 4, 3, signature=TF32_SIGNATURE)
    ttgir, ptx = ck.asm["ttgir"], ck.asm["ptx"]
    check(ttgir, [
        "#blocked1 = #ttg.blocked<{sizePerThread = [1, 1], threadsPerWarp = [2, 16], warpsPerCTA = [4, 1], order = [1, 0]}>",
        "#mma = #ttg.nvidia_mma<{versionMajor = 3, versionMinor = 0, warpsPerCTA = [4, 1], instrShape = [16, 128, 8]}>",
        "#shared = #ttg.nvmma_shared<{swizzlingByteWidth = 128, elementBitWidth = 32}>",
        "#shared1 = #ttg.nvmma_shared<{swizzlingByteWidth = 128, transposed = 1, elementBitWidth = 32}>",
        "ttg.local_alloc : () -> !ttg.memdesc<4x128x32xf32, #shared, #smem, mutable>",
        "ttg.local_alloc : () -> !ttg.memdesc<4x32x128xf32, #shared1, #smem, mutable>",
        "scf.for", "ttg.async_wait", "ttg.async_copy_global_to_local",
        "tensor<32x128x!tt.ptr<f32>, #blocked1>", "ttng.warp_group_dot",
    ])  # fmt: skip
    assert set(re.findall(r"wgmma\.mma_async\.sync\.aligned\.\S+", ptx)) == {
        "wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32"
    }
    assert re.search(r"cp\.async\.ca\.shared\.global \[%r\d+\], \[%rd\d+\], 4", ptx)
    assert re.search(r"cp\.async\.cg\.shared\.global \[%r\d+\], \[%rd\d+\], 16", ptx)
    assert "cvt.rna.tf32" not in ptx and ck.metadata["spills"] == 0 and len(ck.asm["cubin"]) > 0


@pytest.mark.parametrize("config", TUTORIAL_CONFIGS, ids=lambda c: "x".join(map(str, c)))
def test_tf32_tutorial_configs_assemble_for_sm_90a_with_wgmma(config):
    bm, bn, bk, warps, stages = config
    ck = compile_matmul(*config, signature=TF32_SIGNATURE)
    ptx = ck.asm["ptx"]
    n_instr = bn if warps == 4 or bm >= 128 else bn // 2
    shapes = set(re.findall(r"wgmma\.mma_async\.sync\.aligned\.m64n(\d+)k8\.f32\.tf32\.tf32", ptx))
    assert shapes == {str(min(256, n_instr))}
    # the transposing copies keep one pointer per contiguous run and one shared address per
    # thread live across the loop; only 4 warps holding 128 accumulators and a 32 x 256 B
    # tile (64 elements per thread) still spill a few registers
    if warps == 8 or bn <= 128:
        assert ck.metadata["spills"] == 0


@pytest.mark.parametrize("k_swizzle", [(32, 128), (16, 64), (8, 32)], ids=str)
@pytest.mark.parametrize("warps", [4, 8])
def test_the_transposing_load_layout_reads_two_lines_and_writes_two_ways_per_access(k_swizzle, warps):
    """Each 4-byte copy of a warp into the K-major NVMMA buffer (every swizzle width) reads 2
    rows of 64 contiguous bytes and writes 16 banks twice: the layout the pass gives the load,
    checked with the lab's bank model."""
    from kernellab.layouts import from_encoding
    from kernellab.layouts.banks import analyze
    from kernellab.passes.ttgir.encodings import transposing_blocked

    k, swizzle = k_swizzle
    shape = [k, 128]  # B: K x N, N contiguous in global memory
    encoding = transposing_blocked(shape, 0, warps)
    assert list(encoding.threads_per_warp) == [2, 16]  # a warp: 2 rows of 16 consecutive N
    reg = from_encoding(encoding, shape)
    access = analyze(reg, nvmma_shared(swizzle, 32, True, shape), 4)
    assert access.vec == 1 and access.max_ways == 2
    shape_a = [128, k]  # A stored M-major (K x M viewed as M x K): the same, K on dim 1
    reg_a = from_encoding(transposing_blocked(shape_a, 1, warps), shape_a)
    assert analyze(reg_a, nvmma_shared(swizzle, 32, False, shape_a), 4).max_ways == 2


def test_a_thread_copying_more_than_32_elements_keeps_the_conflict_free_4_by_8():
    """Its runs span half the rows: fewer pointers beside 128 accumulators (no spill)."""
    from kernellab.layouts import from_encoding
    from kernellab.layouts.banks import analyze
    from kernellab.passes.ttgir.encodings import transposing_blocked

    shape = [64, 256]  # B of 128x256x64 on 8 warps: 64 elements per thread
    encoding = transposing_blocked(shape, 0, 8)
    assert list(encoding.threads_per_warp) == [4, 8]
    assert analyze(from_encoding(encoding, shape), nvmma_shared(128, 32, True, shape), 4).max_ways == 1


def test_tf32x3_and_ieee_dots_stay_off_wgmma_and_say_why():
    from tests.backends.nvidia.test_dot_sweep import dot_tile_kernel

    for precision, where in (("tf32x3", "mma.sync.aligned.m16n8k8"), ("ieee", "fma.rn.f32")):
        ck = kl.compile(dot_tile_kernel, signature="*fp32,*fp32,*fp32", target="sm_90a", num_warps=4,
                        constexprs=dict(B=0, M=64, N=64, K=32, OUT=tl.float32, PRECISION=precision))  # fmt: skip
        assert where in ck.asm["ptx"] and "wgmma.mma_async" not in ck.asm["ptx"]
        record = next(r for r in ck.passes if r.name == "accelerate_matmul")
        if precision == "tf32x3":
            assert "on mma.sync: fp32 with input_precision='tf32x3'" in record.summary


def compile_int8_matmul(bm, bn, bk, warps, stages, b_major):
    from kernellab.examples import matmul_int8_kernel

    ones = dict(stride_ak=1, stride_cn=1, **({"stride_bk": 1} if b_major == "k" else {"stride_bn": 1}))
    runtime = [n for n in matmul_int8_kernel.arg_names[:12] if n not in ones]
    signature = {n: "*i8" if n in ("a_ptr", "b_ptr") else "*i32" if n == "c_ptr" else "i32" for n in runtime}
    return kl.compile(matmul_int8_kernel, signature=signature, attrs={n: ALIGNED for n in runtime},
                      constexprs=dict(BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn, BLOCK_SIZE_K=bk, GROUP_SIZE_M=8, **ones),
                      target="sm_90a", num_warps=warps, num_stages=stages)  # fmt: skip


@pytest.mark.parametrize("config", [(128, 128, 64, 4, 3), (128, 256, 128, 8, 3), (64, 64, 32, 4, 3)],
                         ids=lambda c: "x".join(map(str, c)))  # fmt: skip
def test_int8_dots_with_k_major_operands_run_on_wgmma_k32_into_s32(config):
    ck = compile_int8_matmul(*config, b_major="k")
    bm, bn, bk, warps, stages = config
    n_instr = bn if warps == 4 or bm >= 128 else bn // 2
    assert set(re.findall(r"wgmma\.mma_async\.sync\.aligned\.\S+", ck.asm["ptx"])) == {
        f"wgmma.mma_async.sync.aligned.m64n{min(256, n_instr)}k32.s32.s8.s8"
    }
    assert "nvmma_shared<{swizzlingByteWidth" in ck.asm["ttgir"] and len(ck.asm["cubin"]) > 0


def test_int8_with_a_row_major_b_stays_on_mma_sync_and_says_why():
    ck = compile_int8_matmul(128, 128, 64, 4, 3, b_major="mn")
    assert "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32" in ck.asm["ptx"]
    assert "wgmma.mma_async" not in ck.asm["ptx"]
    record = next(r for r in ck.passes if r.name == "accelerate_matmul")
    assert "on mma.sync: 8-bit wgmma reads both operands K-major" in record.summary


@kl.jit
def fp8_matmul(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bn, BLOCK_M: tl.constexpr,
               BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, IMPRECISE: tl.constexpr):  # fmt: skip
    """The tutorial's loop over K (A row-major, B column-major) with tl.dot's
    max_num_imprecise_acc; fp32 out."""
    offs_m = (tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    offs_n = (tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :]
    b_ptrs = b_ptr + offs_k[:, None] + offs_n[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_K, other=0.0)
        acc = tl.dot(a, b, acc, max_num_imprecise_acc=IMPRECISE)
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


def compile_fp8_matmul(block_m, block_n, block_k, warps, imprecise):
    attrs = {n: ALIGNED for n in ("a_ptr", "b_ptr", "c_ptr", "M", "N", "K", "stride_am", "stride_bn")}
    return kl.compile(fp8_matmul, signature="*fp8e4nv,*fp8e4nv,*fp32,i32,i32,i32,i32,i32", attrs=attrs,
                      constexprs=dict(BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k, IMPRECISE=imprecise),
                      target="sm_90a", num_warps=warps, num_stages=3)  # fmt: skip


@pytest.mark.parametrize("imprecise, sums", [(0, 0), (32, 4), (64, 2), (128, 1)])
def test_fp8_max_num_imprecise_acc_adds_each_partial_sum_into_fp32(imprecise, sums):
    """Every `imprecise` K elements (one k32 instruction per 32) go into a fresh accumulator
    that is waited for and added into the fp32 one; 0 (the default) sums all K in place."""
    ck = compile_fp8_matmul(128, 128, 128, 8, imprecise)
    ttgir, ptx = ck.asm["ttgir"], ck.asm["ptx"]
    (dot,) = [line for line in ttgir.splitlines() if "ttng.warp_group_dot " in line]
    assert (f"maxNumImpreciseAcc = {imprecise} : i32" in dot) == bool(imprecise)
    # 4 K steps (two warp groups, 64 rows each); one fence per partial sum
    assert len(re.findall(r"wgmma\.mma_async\.sync\.aligned\.m64n128k32\.f32\.e4m3\.e4m3", ptx)) == 4
    assert ptx.count("wgmma.fence.sync.aligned") == max(sums, 1)
    # each partial sum waited for (plus the wait after the loop), then added: 64 accumulator
    # registers per thread (a partial sum needs as many again: 4 warps would spill)
    waits = len(re.findall(r"wgmma\.wait_group\.sync\.aligned 0;", ptx))
    adds = len(re.findall(r"^\s*add\.(rn\.)?f32", ptx, re.MULTILINE))
    assert waits == sums + 1 and adds >= sums * 64 and (adds == 0) == (sums == 0)
    assert ck.metadata["spills"] == 0 and len(ck.asm["cubin"]) > 0
