"""The TTGIR → LLVM IR lowering, on the CPU: every test kernel lowers, its PTX assembles through
nvJitLink for sm_80 and sm_90, and the PTX has the features the lowering promises (vector
accesses, shuffles, barriers only where needed, source lines). Correctness on the GPU is
test_lowering_gpu.py's job."""

from __future__ import annotations

import re

import numpy as np
import pytest
from test_lowering_cases import (
    BY_NAME,
    CASES,
    CONVERT_PAIRS,
    build,
    compare,
    compile_case,
    convert_ttgir,
    interpreter_reference,
    xchg16_ttir,
)
from xdsl.dialects.builtin import f32

import kernellab as kl
import kernellab.language as tl
from kernellab.backends.llvm.axis_facts import equal_registers
from kernellab.backends.llvm.convert import emission_for
from kernellab.backends.llvm.layout import Lay, layout_of_type
from kernellab.backends.llvm.memory import layout_vector
from kernellab.backends.llvm.smem import BarrierTracker, Interval
from kernellab.backends.nvidia.header import LaunchHeader, read_header
from kernellab.backends.nvidia.lowering import make_llir
from kernellab.ir import parse_module, ttg
from kernellab.layouts import LinearLayout, blocked, conversion_plan


def blocked_lay(shape, size_per_thread, threads_per_warp, warps_per_cta, order) -> Lay:
    """The lowering's view of a #ttg.blocked layout, through the layout core."""
    return Lay(blocked(size_per_thread, threads_per_warp, warps_per_cta, order, shape))

TARGETS = ("sm_80", "sm_90")


@pytest.fixture(scope="module")
def compiled():
    """Each case compiled once per target (fresh inputs decide the specialization)."""
    rng = np.random.default_rng()
    out = {}
    for case in CASES:
        args, consts, _ = build(case, rng)
        for target in TARGETS:
            out[case.name, target] = compile_case(case, args, consts, target)
    return out


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_kernel_assembles(compiled, case, target):
    ck = compiled[case.name, target]
    assert isinstance(ck.asm["cubin"], bytes) and len(ck.asm["cubin"]) > 1000
    assert f".target {target}" in ck.asm["ptx"]
    md = ck.metadata
    assert md["threads_per_block"] == case.num_warps * 32
    assert f".maxntid {case.num_warps * 32}" in ck.asm["ptx"]
    assert md["registers"] > 0 and md["spills"] == 0, f"{md['registers']} registers, {md['spills']} spilled"
    assert read_header(ck.asm["ptx"]) == LaunchHeader(md["name"], md["shared"], case.num_warps)
    if target == "sm_90":
        for pattern in case.ptx:
            assert re.search(pattern, ck.asm["ptx"]), pattern
        for pattern in case.no_ptx:
            assert not re.search(pattern, ck.asm["ptx"]), pattern


def _ptx_lines(ptx: str, pattern: str) -> list[str]:
    return [line.strip() for line in ptx.splitlines() if re.search(pattern, line)]


def test_vector_add_uses_16_byte_accesses_and_no_shared_memory(compiled):
    ptx = compiled["vadd_v4", "sm_90"].asm["ptx"]
    loads = _ptx_lines(ptx, r"ld\.global")
    stores = _ptx_lines(ptx, r"st\.global")
    assert loads and all(".v4.b32" in line for line in loads), loads
    assert stores and all(".v4.b32" in line for line in stores), stores
    assert all(line.startswith("@%p") for line in loads + stores)  # predicated by the mask
    assert compiled["vadd_v4", "sm_90"].metadata["shared"] == 0
    assert "bar.sync" not in ptx


def test_unaligned_vector_add_stays_scalar_but_masked(compiled):
    # n = 100003 is not a multiple of 16: the mask may change inside a vector, so one element each
    ptx = compiled["vadd", "sm_90"].asm["ptx"]
    loads = _ptx_lines(ptx, r"ld\.global")
    assert loads and all(".v" not in line.split()[1] for line in loads)


def test_softmax_reduces_with_butterflies_and_one_barrier_per_exchange(compiled):
    ck = compiled["softmax", "sm_90"]
    ptx = ck.asm["ptx"]
    # 4 warps: each reduction is 5 butterfly steps in a warp, then 4 partials through shared memory
    assert len(_ptx_lines(ptx, r"shfl\.sync\.bfly")) == 10
    assert len(_ptx_lines(ptx, r"bar\.sync")) == 3  # write→read, read→rewrite, write→read
    assert ck.metadata["shared"] == 16
    assert "ex2.approx.f32" in ptx


def test_exp2_flushes_subnormal_results_as_triton_and_exp_does_not():
    # tl.exp2 is Triton's libdevice exp2f with flush-to-zero: one MUFU.EX2, no rescaling around it
    @kl.jit
    def exps(x_ptr, out_ptr):
        offs = tl.arange(0, 128)
        x = tl.load(x_ptr + offs)
        tl.store(out_ptr + offs, tl.exp2(x) + tl.exp(x))

    ptx = kl.compile(exps, signature="*fp32,*fp32", target="sm_90a", force=True).asm["ptx"]
    assert len(_ptx_lines(ptx, r"ex2\.approx\.ftz\.f32")) == 1
    assert len(_ptx_lines(ptx, r"ex2\.approx\.f32")) == 1


@pytest.mark.parametrize("fusion", [True, False])
def test_enable_fp_fusion_contracts_multiply_add_into_fma_unless_turned_off(fusion):
    @kl.jit
    def axpy(x_ptr, y_ptr, out_ptr):
        offs = tl.arange(0, 128)
        tl.store(out_ptr + offs, tl.load(x_ptr + offs) * 3.0 + tl.load(y_ptr + offs))

    ck = kl.compile(axpy, signature="*fp32,*fp32,*fp32", target="sm_90", enable_fp_fusion=fusion, force=True)
    ptx = ck.asm["ptx"]
    assert bool(_ptx_lines(ptx, r"fma\.rn\.f32")) == fusion
    assert bool(_ptx_lines(ptx, r"mul\.rn\.f32")) != fusion  # rounded on its own when not fused
    assert ck.metadata["enable_fp_fusion"] is fusion


def test_reduction_inside_one_warp_needs_no_shared_memory():
    @kl.jit
    def rowsum(x_ptr, out_ptr, N: tl.constexpr):
        offs = tl.arange(0, N)
        tl.store(out_ptr, tl.sum(tl.load(x_ptr + offs), axis=0))

    ck = kl.compile(rowsum, signature="*fp32,*fp32", constexprs={"N": 32}, target="sm_90", num_warps=1)
    assert ck.metadata["shared"] == 0
    assert "bar.sync" not in ck.asm["ptx"]
    assert len(_ptx_lines(ck.asm["ptx"], r"shfl\.sync\.bfly")) == 5
    # the scalar store happens once (thread 0), not in every thread
    assert _ptx_lines(ck.asm["ptx"], r"st\.global")[0].startswith("@%p")


def test_ptx_lines_map_back_to_the_source(compiled):
    ck = compiled["softmax", "sm_90"]
    ptx = ck.asm["ptx"]
    files = re.findall(r'\.file\s+(\d+)\s+"([^"]+)"', ptx)
    assert files and files[0][1].endswith("test_lowering_cases.py")
    lines = {int(m) for m in re.findall(r"\.loc\s+\d+\s+(\d+)\s+\d+", ptx)}
    import inspect

    from test_lowering_cases import softmax_k

    src, start = inspect.getsourcelines(softmax_k.fn)
    body = set(range(start, start + len(src)))
    assert lines and lines <= body
    exp_line = start + next(i for i, t in enumerate(src) if "tl.exp(" in t)
    # the ex2.approx instructions sit under the `.loc` of the tl.exp line
    current, seen = None, False
    for line in ptx.splitlines():
        m = re.match(r"\s*\.loc\s+\d+\s+(\d+)", line)
        if m:
            current = int(m.group(1))
        if "ex2.approx" in line:
            seen = True
            assert current == exp_line
    assert seen
    assert "!dbg" in ck.asm["llir"] and "DISubprogram" in ck.asm["llir"]


def test_dot_operands_are_read_from_shared_memory_inside_the_k_loop(compiled):
    ptx = compiled["dot_f16", "sm_90"].asm["ptx"]
    assert _ptx_lines(ptx, r"ldmatrix\.sync") and _ptx_lines(ptx, r"st\.shared")
    assert _ptx_lines(ptx, r"mma\.sync\.aligned\.m16n8k16")
    ptx_i8 = compiled["dot_i8", "sm_90"].asm["ptx"]
    assert _ptx_lines(ptx_i8, r"ld\.shared") and _ptx_lines(ptx_i8, r"mma\.sync\.aligned\.m16n8k32")
    # batched dots too (fp32 with the default input_precision: tf32)
    ptx_3d = compiled["dot3d_f32", "sm_90"].asm["ptx"]
    assert _ptx_lines(ptx_3d, r"mma\.sync\.aligned\.m16n8k8\.row\.col\.f32\.tf32\.tf32\.f32")


def test_atomics_are_predicated_and_typed(compiled):
    ptx = compiled["atomics", "sm_90"].asm["ptx"]
    for op in ("add.f32", "add.u32", "max.s32", "min.u32", "xor.b32", "add.noftz.f16", "add.noftz.bf16"):
        hits = _ptx_lines(ptx, r"atom\.acq_rel\.gpu\.global\." + re.escape(op) + r"\b")
        assert hits and all(h.startswith("@%p") for h in hits), op
    # sm_80 has no bf16 atomic add: a compare-and-swap loop instead
    ptx80 = compiled["atomics", "sm_80"].asm["ptx"]
    assert "add.noftz.bf16" not in ptx80 and _ptx_lines(ptx80, r"atom\.acq_rel\.gpu\.global\.cas\.b16")


def test_fp8_conversions_use_cvt_on_sm90_and_bit_arithmetic_on_sm80(compiled):
    assert "cvt.rn.satfinite.e4m3x2.f32" in compiled["fp8", "sm_90"].asm["ptx"]
    assert "cvt.rn.satfinite.e5m2x2.f32" in compiled["fp8", "sm_90"].asm["ptx"]
    assert "satfinite" not in compiled["fp8", "sm_80"].asm["ptx"]


def test_printf_and_assert_reach_the_device_runtime():
    @kl.jit
    def chk(x_ptr, BLOCK: tl.constexpr):
        x = tl.load(x_ptr + tl.arange(0, BLOCK))
        tl.device_print("x", x)
        tl.device_assert(x > 0, "x must be positive")

    for target in TARGETS:
        ck = kl.compile(chk, signature="*fp32", constexprs={"BLOCK": 64}, target=target)
        ptx = ck.asm["ptx"]
        assert "vprintf" in ptx and "__assertfail" in ptx
        assert "pid (%d, %d, %d) idx (%d) x: %f" in ck.asm["llir"]
        assert "x must be positive" in ck.asm["llir"]


# --------------------------------------------------------------- TTGIR written by hand

_CONVERT = """
#blocked = #ttg.blocked<{{sizePerThread = [1, 4], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}}>
#blocked1 = #ttg.blocked<{{{dst}}}>
builtin.module attributes {{"ttg.num-ctas" = 1 : i32, "ttg.num-warps" = 4 : i32, ttg.target = "cuda:90", "ttg.threads-per-warp" = 32 : i32}} {{
  tt.func public @conv(%x: !tt.ptr<f32>, %y: !tt.ptr<f32>) {{
    %a = arith.constant dense<1.0> : tensor<32x16xf32, #blocked>
    %b = ttg.convert_layout %a : tensor<32x16xf32, #blocked> -> tensor<32x16xf32, #blocked1>
    %p = tt.splat %y : !tt.ptr<f32> -> tensor<32x16x!tt.ptr<f32>, #blocked1>
    tt.store %p, %b : tensor<32x16x!tt.ptr<f32>, #blocked1>
    tt.return
  }}
}}
"""
_SAME = "sizePerThread = [1, 4], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]"
# the same placement with registers 0/1 swapped... and one that moves data between threads
_TRANSPOSED = "sizePerThread = [4, 1], threadsPerWarp = [4, 8], warpsPerCTA = [1, 4], order = [0, 1]"


def _barriers(llir: str) -> int:
    return len(re.findall(r"call void @\"?llvm\.nvvm\.barrier0\"?\(\)", llir))


def test_convert_between_equal_layouts_is_free_and_otherwise_goes_through_shared_memory():
    text, md = make_llir(parse_module(_CONVERT.format(dst=_SAME)), None)
    assert md["shared"] == 0 and _barriers(text) == 0
    text, md = make_llir(parse_module(_CONVERT.format(dst=_TRANSPOSED)), None)
    assert md["shared"] >= 32 * 16 * 4
    assert _barriers(text) == 1  # between the writes and the reads, none before the first write
    assert "addrspace(3)" in text


def test_emission_follows_the_layout_cores_plan():
    a = blocked_lay((32, 16), [1, 4], [8, 4], [4, 1], [1, 0])
    assert emission_for(a, a, f32).kind == "noop"
    bases = a.linear.bases
    regs = bases["register"]
    swapped = Lay(LinearLayout({**bases, "register": (regs[1], regs[0]) + regs[2:]}, a.shape))
    em = emission_for(a, swapped, f32)
    assert em.kind == "registers" and em.reg_const[1] == 2 and em.reg_const[2] == 1
    assert em.candidates == [0] and not em.lane_varies
    b = blocked_lay((32, 16), [4, 1], [4, 8], [1, 4], [0, 1])
    assert emission_for(a, b, f32).kind == "shared"


def _simulate(src: Lay, dst: Lay, em) -> None:
    """Run the emission's choices for every thread as the generated code would: destination
    register r of (lane, warp) reads source register reg_const[r] ^ (reg part of the thread)
    from lane lane ^ lane_const[r] ^ (lane part of the thread), same warp."""

    def xor_bits(bases, x):
        out = 0
        for i, v in enumerate(bases):
            if x >> i & 1:
                out ^= v
        return out

    def element(lay, r, lane, warp):
        return lay.reg_flat[r] ^ xor_bits(lay.lane, lane) ^ xor_bits(lay.warp, warp)

    assert em.kind in ("noop", "registers", "shuffle")
    for warp in range(1 << len(dst.warp)):
        for lane in range(32):
            reg_var = xor_bits(em.reg_by_lane, lane) ^ xor_bits(em.reg_by_warp, warp)
            lane_var = xor_bits(em.lane_by_lane, lane) ^ xor_bits(em.lane_by_warp, warp)
            assert reg_var in em.candidates
            for r in range(dst.nregs):
                if em.kind == "noop":
                    got = element(src, r, lane, warp)
                else:
                    sr, sl = em.reg_const[r] ^ reg_var, lane ^ lane_var ^ em.lane_const[r]
                    assert em.kind == "shuffle" or sl == lane
                    got = element(src, sr, sl, warp)
                assert got == element(dst, r, lane, warp), (r, lane, warp)


@pytest.mark.parametrize("kind", list(CONVERT_PAIRS))
def test_convert_layout_emits_what_conversion_plan_says(kind):
    text = convert_ttgir(kind)
    module = parse_module(text)
    cv = next(op for op in module.walk() if isinstance(op, ttg.ConvertLayoutOp))
    src, dst = layout_of_type(cv.src.type), layout_of_type(cv.result.type)
    em = emission_for(src, dst, f32)
    # the lowering's choice is the layout core's
    plan = conversion_plan(src.linear, dst.linear)
    assert em.kind == plan.kind == kind.split("_")[0]
    if kind == "registers":
        assert plan.register_map == em.reg_const
    if kind == "shuffle_select":
        assert len(em.candidates) == 2  # the source register depends on the lane
    if em.kind != "shared":
        _simulate(src, dst, em)
    ck = kl.compile(text, target="sm_90")
    ptx = ck.asm["ptx"]
    shfl = re.findall(r"shfl\.sync\.idx", ptx)
    bars = re.findall(r"\bbar\.sync\b", ptx)
    if em.kind in ("noop", "registers"):
        assert not shfl and not bars and "shared" not in re.sub(r"^// kernellab: .*$", "", ptx, flags=re.M)
        assert ck.metadata["shared"] == 0
    elif em.kind == "shuffle":
        # one shfl per destination register and candidate source register
        assert len(shfl) == dst.nregs * len(em.candidates) and not bars
        assert ck.metadata["shared"] == 0
    else:
        assert not shfl and len(bars) == 1
        assert re.search(r"st\.shared", ptx) and re.search(r"ld\.shared", ptx)
        assert ck.metadata["shared"] >= 16 * 64 * 4
    assert ck.metadata["spills"] == 0


def test_split_plans_both_halves_with_one_conversion():
    # join then split in one layout: each is a single conversion, planned once
    from kernellab.backends.llvm import convert as convert_mod

    text = """
#blocked = #ttg.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
#blocked1 = #ttg.blocked<{sizePerThread = [1, 2], threadsPerWarp = [32, 1], warpsPerCTA = [4, 1], order = [1, 0]}>
builtin.module attributes {"ttg.num-ctas" = 1 : i32, "ttg.num-warps" = 4 : i32, ttg.target = "cuda:90", "ttg.threads-per-warp" = 32 : i32} {
  tt.func public @js(%x: !tt.ptr<f32>) {
    %a = tt.make_range {end = 128 : i32, start = 0 : i32} : tensor<128xi32, #blocked>
    %b = arith.constant dense<7> : tensor<128xi32, #blocked>
    %j = tt.join %a, %b : tensor<128xi32, #blocked> -> tensor<128x2xi32, #blocked1>
    %l, %r = tt.split %j : tensor<128x2xi32, #blocked1> -> tensor<128xi32, #blocked>
    %s = arith.addi %l, %r : tensor<128xi32, #blocked>
    %f = arith.sitofp %s : tensor<128xi32, #blocked> to tensor<128xf32, #blocked>
    %p = tt.splat %x : !tt.ptr<f32> -> tensor<128x!tt.ptr<f32>, #blocked>
    %q = tt.addptr %p, %a : tensor<128x!tt.ptr<f32>, #blocked>, tensor<128xi32, #blocked>
    tt.store %q, %f : tensor<128x!tt.ptr<f32>, #blocked>
    tt.return
  }
}
"""
    calls = []
    real = convert_mod.convert

    def spy(ctx, src, dst, op=None):
        calls.append(op.name)
        return real(ctx, src, dst, op)

    import kernellab.backends.llvm.shape as shape_mod

    saved = shape_mod.convert
    shape_mod.convert = spy
    try:
        llir, md = make_llir(parse_module(text), None)
    finally:
        shape_mod.convert = saved
    assert calls.count("tt.split") == 1 and calls.count("tt.join") == 1
    assert md["shared"] == 0 and "shfl" not in llir


def test_layout_vector_width_follows_the_contiguous_registers():
    assert layout_vector(blocked_lay((1024,), [4], [32], [4], [0])) == (0, 4)
    assert layout_vector(blocked_lay((64, 64), [1, 8], [8, 4], [4, 1], [1, 0])) == (1, 8)
    assert layout_vector(blocked_lay((64, 64), [4, 1], [4, 8], [1, 4], [0, 1])) == (0, 4)
    assert layout_vector(blocked_lay((1024,), [1], [32], [4], [0]))[1] == 1


def test_registers_equal_within_constancy_runs_share_one_value():
    """A 4-vector per thread: constancy 16 makes each vector one value (a mask `cols < n`, n a
    multiple of 16); constancy 2 pairs; along rows only the row basis folds; 1 folds nothing."""
    row = blocked_lay((16384,), [4], [32], [16], [0])  # registers: cols +1, +2, +2048, ...
    assert equal_registers(row, (16,)) == tuple(r & ~3 for r in range(32))
    assert equal_registers(row, (2,)) == tuple(r & ~1 for r in range(32))
    assert equal_registers(row, (1,)) is None and equal_registers(row, None) is None
    tile = blocked_lay((64, 64), [1, 8], [8, 4], [4, 1], [1, 0])  # cols +1, +2, +4, +32, rows +32
    assert equal_registers(tile, (1, 4)) == tuple(r & ~3 for r in range(32))
    assert equal_registers(tile, (64, 1)) == tuple(r & ~16 for r in range(32))
    assert equal_registers(tile, (32, 64)) == tuple(r & ~15 for r in range(32))


def test_barrier_tracker_orders_only_conflicting_accesses():
    emitted = []
    t = BarrierTracker(lambda: emitted.append(1))
    t.access(Interval(0, 64), write=True)
    t.access(Interval(64, 128), write=True)  # disjoint writes: no barrier
    t.access(Interval(128, 256), write=False)
    assert emitted == []
    t.access(Interval(0, 16), write=False)  # read after write
    assert emitted == [1]
    t.access(Interval(32, 48), write=False)  # read after read
    assert emitted == [1]
    t.access(Interval(0, 8), write=True)  # write after read
    assert emitted == [1, 1]


def test_barrier_tracker_hoists_a_loops_barrier_and_lets_mbarriers_order_a_ring():
    emitted = []
    t = BarrierTracker(lambda: emitted.append(1))
    q, ring = Interval(0, 64), Interval(64, 256)
    t.access(q, write=True)  # staged before the loop
    body = [(q, False), (ring, True)]  # the loop reads q (immutable) and fills and reads the ring
    t.before_loop(body)  # q's write conflicts with the body's read: one barrier, before the loop
    assert emitted == [1] and t.pending == []
    t.assume_all(body)  # the back edge: q is only read, so reading it again needs no barrier
    t.access(q, write=False)
    assert emitted == [1]
    t.ordered(ring)  # an mbarrier wait hands the ring's slots over: no bar.sync for them
    t.access(ring, write=False)
    t.ordered(ring)
    t.before_async_write(ring)
    assert emitted == [1]
    t.before_loop([(Interval(512, 576), True)])  # nothing pending there: no barrier
    assert emitted == [1]


def test_scratch_of_consecutive_reductions_is_reused():
    @kl.jit
    def two(x_ptr, out_ptr, N: tl.constexpr):
        x = tl.load(x_ptr + tl.arange(0, N))
        tl.store(out_ptr, tl.sum(x, axis=0) + tl.max(x, axis=0) + tl.min(x, axis=0))

    ck = kl.compile(two, signature="*fp32,*fp32", constexprs={"N": 4096}, target="sm_90", num_warps=8)
    assert ck.metadata["shared"] == 32  # one 8-warp scratch, reused by all three


# ------------------------------------------------------------- float atomics, batched dot


@pytest.mark.parametrize("name", ["dot3d_f32", "dot3d_f16_w8", "dot3d_i8_w1", "float_atomics",
                                  "min_max_neg"])
def test_numpy_references_of_the_new_cases_agree_with_the_interpreter(name):
    # the GPU test compares against these references: check them here, where no GPU is needed
    case = BY_NAME[name]
    args, consts, grid = build(case, np.random.default_rng())
    problems = compare(case, interpreter_reference(case, args, consts, grid), case.reference(args))
    assert not problems, "\n".join(problems)


def test_float_exchange_moves_the_bits_with_integer_atomics(compiled):
    for target in TARGETS:
        ptx = compiled["float_atomics", target].asm["ptx"]
        for op in ("exch.b32", "exch.b64"):
            hits = _ptx_lines(ptx, r"atom\.acq_rel\.gpu\.global\." + re.escape(op) + r"\b")
            assert hits and all(h.startswith("@%p") for h in hits), (target, op)
        assert "exch.f" not in ptx


@pytest.mark.parametrize("elem", ["f16", "bf16"])
@pytest.mark.parametrize("target", TARGETS)
def test_16_bit_exchange_is_a_compare_and_swap_loop(elem, target):
    ck = kl.compile(xchg16_ttir(elem), target=target)
    ptx = ck.asm["ptx"]
    assert isinstance(ck.asm["cubin"], bytes) and len(ck.asm["cubin"]) > 1000
    assert "exch" not in ptx  # PTX has no 16-bit atom.exch
    cas = _ptx_lines(ptx, r"atom\.acq_rel\.gpu\.global\.cas\.b16")
    assert cas and len(cas) == len(_ptx_lines(ptx, r"@done bra LOOP_"))
    assert ck.metadata["spills"] == 0


def test_16_bit_exchange_ttir_runs_on_the_interpreter():
    # the same TTIR text is the GPU test's kernel: its meaning, checked where it can be
    import ml_dtypes

    rng = np.random.default_rng()
    for elem, dt in (("f16", np.float16), ("bf16", ml_dtypes.bfloat16)):
        p = rng.standard_normal(256).astype(dt)
        v = rng.standard_normal(256).astype(dt)
        old = np.full(256, np.nan, dt)
        want_p = np.concatenate([v[:250], p[250:]])
        want_old = np.concatenate([p[:250], np.full(6, np.nan, dt)])
        kl.compile(xchg16_ttir(elem)).run((1,), p, v, old)
        np.testing.assert_array_equal(p.view(np.uint16), want_p.view(np.uint16))
        np.testing.assert_array_equal(old.astype(np.float64), want_old.astype(np.float64))


def test_float_max_min_atomics_that_bypass_the_frontend_are_rejected():
    text = xchg16_ttir("f32").replace("tt.atomic_rmw exch", "tt.atomic_rmw max")
    with pytest.raises(Exception, match="atomic max on f32 is not supported"):
        kl.compile(text, target="sm_90")


_RANK3_PARENTS = [
    # (sizePerThread, threadsPerWarp, warpsPerCTA, order, (B, M, N), K)
    ((1, 1, 1), (1, 1, 32), (1, 4, 1), (2, 1, 0), (2, 16, 32), 16),
    ((1, 2, 1), (2, 2, 8), (2, 1, 2), (2, 1, 0), (4, 16, 16), 32),
    ((2, 1, 2), (1, 4, 8), (4, 1, 1), (0, 2, 1), (8, 8, 16), 16),
]


@pytest.mark.parametrize("spt,tpw,wpc,order,shape,k", _RANK3_PARENTS)
def test_rank3_fma_operands_hold_every_k_of_each_threads_batch_rows_and_columns(spt, tpw, wpc, order, shape, k):
    from kernellab.layouts import blocked, dot_operand

    bsz, m, n = shape
    parent = blocked(spt, tpw, wpc, order, shape)
    a = dot_operand(0, parent, 0, (bsz, m, k))
    b = dot_operand(1, parent, 0, (bsz, k, n))
    nwarps = 1
    for w in wpc:
        nwarps *= w
    for warp in range(nwarps):
        for lane in range(32):
            owned = {tuple(c) for c in parent.coords_of_thread(lane, warp)}
            a_has = {tuple(c) for c in a.coords_of_thread(lane, warp)}
            b_has = {tuple(c) for c in b.coords_of_thread(lane, warp)}
            need_a = {(bb, mm, kk) for bb, mm, _ in owned for kk in range(k)}
            need_b = {(bb, kk, nn) for bb, _, nn in owned for kk in range(k)}
            assert need_a <= a_has and need_b <= b_has, (lane, warp)


@pytest.mark.parametrize("spt,tpw,wpc,order,shape,k", _RANK3_PARENTS)
def test_rank3_fma_loop_reads_the_same_batch_element_as_it_accumulates(spt, tpw, wpc, order, shape, k):
    # the lowering's FMA loop: accumulator register r, step kk reads the A and B registers
    # operand_flats names in the operands' dot-operand layouts (from the TTGIR types); those
    # must hold a[b, m, kk] and b[b, kk, n] for c[b, m, n] in every thread
    from kernellab.backends.llvm.dot import operand_flats
    from kernellab.layouts import dot_operand

    bsz, m, n = shape
    parent = blocked(spt, tpw, wpc, order, shape)
    c = Lay(parent)
    a_need = Lay(dot_operand(0, parent, 0, (bsz, m, k)))
    b_need = Lay(dot_operand(1, parent, 0, (bsz, k, n)))
    operands = operand_flats(c, a_need.shape, b_need.shape)

    def thread_part(lay, lane, warp):
        f = 0
        for i, base in enumerate(lay.lane):
            f ^= base if lane >> i & 1 else 0
        for i, base in enumerate(lay.warp):
            f ^= base if warp >> i & 1 else 0
        return f

    for warp in range(1 << len(c.warp)):
        for lane in range(32):
            tc, ta, tb = (thread_part(x, lane, warp) for x in (c, a_need, b_need))
            for r in range(c.nregs):
                cb, cm, cn = c.coords(c.reg_flat[r] ^ tc)
                for kk in range(k):
                    fa, fb = operands(c.reg_of_flat[c.reg_flat[r]], kk)
                    ar, br = a_need.reg_of_flat[fa], b_need.reg_of_flat[fb]
                    assert a_need.coords(a_need.reg_flat[ar] ^ ta) == (cb, cm, kk)
                    assert b_need.coords(b_need.reg_flat[br] ^ tb) == (cb, kk, cn)


def test_batched_dot_ptx_has_one_mma_per_instruction_tile_of_its_batch_element(compiled):
    ptx = compiled["dot3d_f32", "sm_90"].asm["ptx"]
    m, n, k = 16, 32, 16  # 2 batch elements on 4 warps: each warp computes one of them
    mmas = len(_ptx_lines(ptx, r"mma\.sync\.aligned\.m16n8k8"))
    assert mmas == (m // 16) * (n // 8) * (k // 8)


@kl.jit
def _dot_precision_kernel(a_ptr, b_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
                          PRECISION: tl.constexpr):  # fmt: skip
    rm, rn, rk = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    tl.store(out_ptr + rm[:, None] * N + rn[None, :], tl.dot(a, b, input_precision=PRECISION))


def _dot_ptx(precision, target="sm_90", dtype="fp32"):
    ck = kl.compile(_dot_precision_kernel, signature=f"*{dtype},*{dtype},*fp32", target=target,
                    constexprs={"M": 16, "N": 16, "K": 16, "PRECISION": precision})  # fmt: skip
    assert isinstance(ck.asm["cubin"], bytes)
    return ck.asm["ptx"]


@pytest.mark.parametrize("target", TARGETS)
def test_tf32_dot_rounds_both_operands_with_cvt_rna_and_ieee_does_not(target):
    m = n = k = 16
    # tf32 runs on mma.sync m16n8k8: warps [2, 2] (the two along M hold the same 16 rows), so
    # each warp does a 16x8 tile in 2 K steps and each thread rounds its 8 A and 4 B fragment
    # elements once each
    tf32 = _dot_ptx("tf32", target)
    assert len(_ptx_lines(tf32, r"mma\.sync\.aligned\.m16n8k8\.row\.col\.f32\.tf32\.tf32\.f32")) == 2
    assert len(_ptx_lines(tf32, r"cvt\.rna\.tf32\.f32")) == 8 + 4
    assert not _ptx_lines(tf32, r"fma\.rn\.f32")
    assert _ptx_lines(_dot_ptx(None, target), r"cvt\.rna\.tf32\.f32"), "tf32 is tl.dot's default for fp32"
    ieee = _dot_ptx("ieee", target)  # no tensor-core form: the FMA path
    assert not _ptx_lines(ieee, r"cvt\.rna\.tf32") and not _ptx_lines(ieee, r"mma\.sync")
    assert len(_ptx_lines(ieee, r"fma\.rn\.f32")) == m * n * k // 128


def test_tf32x3_dot_splits_each_operand_and_does_three_mmas_per_step():
    ptx = _dot_ptx("tf32x3")
    assert len(_ptx_lines(ptx, r"mma\.sync\.aligned\.m16n8k8")) == 3 * 2
    assert len(_ptx_lines(ptx, r"cvt\.rna\.tf32\.f32")) == 2 * (8 + 4)  # big and small parts
    assert _ptx_lines(ptx, r"sub(\.rn)?\.f32"), "small = tf32(x - tf32(x))"


def test_fp16_dot_ignores_input_precision():
    assert not _ptx_lines(_dot_ptx("tf32", dtype="fp16"), r"cvt\.rna\.tf32")


@kl.jit
def _fdiv_kernel(x_ptr, y_ptr, out_ptr, IEEE: tl.constexpr):
    offs = tl.arange(0, 128)
    x, y = tl.load(x_ptr + offs), tl.load(y_ptr + offs)
    tl.store(out_ptr + offs, tl.fdiv(x, y, ieee_rounding=IEEE))


@pytest.mark.parametrize("target", TARGETS)
def test_fdiv_with_ieee_rounding_divides_correctly_rounded(target):
    def ck(ieee):
        return kl.compile(_fdiv_kernel, signature="*fp32,*fp32,*fp32", target=target,
                          constexprs={"IEEE": ieee})  # fmt: skip

    precise, fast = ck(True), ck(False)
    assert "tt.precise_divf" in precise.asm["ttir"] and "arith.divf" not in precise.asm["ttir"]
    assert "arith.divf" in fast.asm["ttir"] and "tt.precise_divf" not in fast.asm["ttir"]
    assert _ptx_lines(precise.asm["ptx"], r"div\.rn\.f32")
    assert not _ptx_lines(precise.asm["ptx"], r"div\.(full|approx)")
    assert _ptx_lines(fast.asm["ptx"], r"div\.full\.f32")
