"""The software pipeliner through PTX (no GPU needed): which loops and loads it takes, the
cp.async forms, waits and commit groups it leaves in PTX, its shared memory, and the compile
error when the rings don't fit."""

from __future__ import annotations

import re

import pytest

import kernellab as kl
import kernellab.language as tl
from kernellab.backends.nvidia.launcher import OutOfResources
from kernellab.examples import matmul_kernel, matmul_persistent_kernel, softmax_persistent_kernel
from kernellab.passes.ttgir.pipeline_loops import ring_slots
from tests.filecheck import check, check_not, outside_branches

MATMUL_SIGNATURE = "*fp16,*fp16,*fp16,i32,i32,i32,i32,i32,i32"
ALIGNED = {"tt.divisibility": 16}
MATMUL_ATTRS = {n: ALIGNED for n in ("a_ptr", "b_ptr", "c_ptr", "M", "N", "K", "stride_am",
                                     "stride_bk", "stride_cm")}  # fmt: skip


def compile_matmul(bm=64, bn=64, bk=32, target="sm_90", **options):
    constexprs = dict(BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn, BLOCK_SIZE_K=bk, GROUP_SIZE_M=8,
                      ACTIVATION="", stride_ak=1, stride_bn=1, stride_cn=1)  # fmt: skip
    return kl.compile(matmul_kernel, signature=MATMUL_SIGNATURE, constexprs=constexprs,
                      attrs=MATMUL_ATTRS, target=target, **options)  # fmt: skip


def ptx_forms(ptx: str) -> dict[str, int]:
    forms: dict[str, int] = {}
    for form in re.findall(r"\b(cp\.async[\w.]*(?: \d+)?|ld\.global[\w.]*|bar\.sync)", ptx):
        forms[form] = forms.get(form, 0) + 1
    return forms


@pytest.mark.parametrize("target, copy", [
    ("sm_80", r"cp\.async\.cg\.shared\.global \[%r\d+\]"),
    ("sm_90a", r"cp\.async\.bulk\.tensor\.2d\.shared::cluster\.global\S* \[%r\d+\]"),  # TMA
])  # fmt: skip
def test_shared_addresses_are_32_bit_values(target, copy):
    # nvptx-short-ptr: the shared array's address is a .b32 and copies' destinations are sums
    # of 32-bit values, never 64-bit sums truncated (cvt.u32.u64) for the 32-bit operand
    ptx = compile_matmul(128, 128, 64, target=target, num_stages=3, num_warps=8).asm["ptx"]
    assert re.search(r"mov\.b32\s+%r\d+, global_smem;", ptx)
    assert not re.search(r"mov\.b64\s+%rd\d+, global_smem;", ptx)
    assert "cvt.u32.u64" not in ptx and re.search(copy, ptx)


@pytest.mark.parametrize("target", ["sm_80", "sm_90"])
@pytest.mark.parametrize("stages", [2, 3, 4])
def test_matmul_copies_operands_with_cp_async(target, stages):
    ck = compile_matmul(target=target, num_stages=stages)
    ptx = ck.asm["ptx"]
    forms = ptx_forms(ptx)
    # 64x32 and 32x64 fp16 tiles (4 KB each), 128 threads, 16 bytes a copy: 2 copies a tile
    assert len(re.findall(r"cp\.async\.cg\.shared\.global \[%r\d+\], \[%rd\d+\], 16, %r\d+;", ptx)) == 4 * stages
    assert forms["cp.async.commit_group"] == stages  # stages-1 in the prologue, one in the loop
    assert f"cp.async.wait_group {stages - 2};" in ptx and "cp.async.wait_group 0;" in ptx
    assert not any(f.startswith("ld.global") for f in forms)  # every operand load is a copy
    assert "ldmatrix.sync.aligned.m8n8.x4" in ptx and "mma.sync.aligned.m16n8k16" in ptx
    # the loop's wait (the refill right after it needs no barrier of its own), the drain, the
    # epilogue's conversion
    assert forms["bar.sync"] <= 3
    loop = ptx.split("$L__BB0_2:")[1].split("bra")[0]
    assert loop.count("bar.sync") == 1


def test_rings_of_a_dot_loop_take_num_stages_tiles_of_shared_memory():
    """num_stages-1 tiles in flight and the one the dot reads: the refill at the top of an
    iteration writes the slot the previous iteration read."""
    ck = compile_matmul(num_stages=3)
    assert sorted(ring_slots(ck.module)) == [(3, 64 * 32 * 2), (3, 32 * 64 * 2)]
    assert ck.metadata["shared"] >= 3 * (64 * 32 + 32 * 64) * 2


def test_one_stage_keeps_plain_loads():
    ck = compile_matmul(num_stages=1)
    assert "cp.async" not in ck.asm["ptx"] and "async" not in ck.asm["ttgir"]
    assert "ld.global.v4.b32" in ck.asm["ptx"]


def test_rings_that_would_not_fit_get_fewer_stages():
    """128x256x64 fp16 operands take 48 KB a slot: six or five stages (as many slots) would
    pass sm_90's 227 KB, four stages (four slots) fit."""
    ck = compile_matmul(128, 256, 64, num_warps=8, num_stages=6)
    assert sorted(ring_slots(ck.module)) == [(4, 128 * 64 * 2), (4, 64 * 256 * 2)]
    record = next(r for r in ck.passes if r.name == "pipeline")
    assert "fewer-stages-to-fit-shared-memory" in record.summary


@kl.jit
def transpose_tile(x_ptr, y_ptr, M: tl.constexpr, N: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    x = tl.load(x_ptr + rm[:, None] * N + rn[None, :])
    tl.store(y_ptr + rn[:, None] * M + rm[None, :], tl.trans(x))


def test_a_kernel_needing_more_shared_memory_than_the_target_has_fails_at_compile_time():
    aligned = {"x_ptr": ALIGNED, "y_ptr": ALIGNED}
    with pytest.raises(OutOfResources) as info:  # a 512 KB transpose through shared memory
        kl.compile(transpose_tile, signature="*fp32,*fp32", constexprs={"M": 512, "N": 256},
                   attrs=aligned, target="sm_90")  # fmt: skip
    assert info.value.limit == 232448 and info.value.required >= 512 * 256 * 4  # the whole tile
    assert "shared memory on sm_90" in str(info.value) and "Reduce the BLOCK sizes" in str(info.value)


def test_unaligned_operands_are_not_pipelined():
    """Strides of unknown alignment: 2-byte accesses, too narrow for cp.async."""
    constexprs = dict(BLOCK_SIZE_M=64, BLOCK_SIZE_N=64, BLOCK_SIZE_K=32, GROUP_SIZE_M=8,
                      ACTIVATION="", stride_ak=1, stride_bn=1, stride_cn=1)  # fmt: skip
    ck = kl.compile(matmul_kernel, signature=MATMUL_SIGNATURE, constexprs=constexprs,
                    target="sm_90", num_stages=3)  # fmt: skip
    assert "cp.async" not in ck.asm["ptx"]


def test_softmax_row_loop_pipelines_with_its_num_stages():
    """tl.range(..., num_stages=4) over rows, no dot: the row load becomes a copy into a ring of
    three rows (a row is read first, then its slot refilled), read back and given the load's
    `other` (-inf) where masked."""
    attrs = {n: ALIGNED for n in ("output_ptr", "input_ptr", "input_row_stride", "output_row_stride", "n_cols")}
    ck = kl.compile(softmax_persistent_kernel, signature="*fp32,*fp32,i32,i32,i32,i32",
                    constexprs=dict(BLOCK_SIZE=1024, num_stages=4), attrs=attrs, target="sm_90",
                    num_warps=8)  # fmt: skip
    ttgir = ck.asm["ttgir"]
    assert "!ttg.memdesc<3x1024xf32" in ttgir and "ttg.async_wait {num = 2 : i32}" in ttgir
    assert re.search(r"%row = arith.select %mask, %\d+, %\d+", ttgir)
    assert "cp.async.cg.shared.global" in ck.asm["ptx"]
    # ld.shared reads the copies in the generic proxy: no wgmma, so no proxy fence per row
    assert "fence.proxy.async" not in ck.asm["ptx"]


def loop_body(ptx: str) -> str:
    """The PTX of a kernel's one loop: from the label a backward branch jumps to, to that branch."""
    lines = ptx.splitlines()
    labels: dict[str, int] = {}
    for i, line in enumerate(lines):
        label = re.match(r"(\$L__BB\d+_\d+):", line)
        if label:
            labels[label.group(1)] = i
        branch = re.search(r"\bbra(?:\.uni)?\s+(\$L__BB\d+_\d+);", line)
        if branch and branch.group(1) in labels:
            return "\n".join(lines[labels[branch.group(1)] : i + 1])
    raise AssertionError("no loop in the PTX")


@pytest.mark.parametrize("block, warps", [(1024, 4), (4096, 8), (16384, 16)])
def test_softmax_row_loop_reads_each_staged_vector_once_and_hoists_the_mask(block, warps):
    """The benchmark's kernel and configs (4096 x 1024 / 4096 / 12160 rows, every argument
    specialized as divisible by 16) on sm_90a. Per row, each thread reads each of its staged
    4-vectors from shared memory once and keeps it in registers for the max and the exp; the
    mask `cols < n_cols` is constant over each vector, so its compares are made once, before
    the loop (left inside are the slot wrap, the prefetched row's bound and the loop's own);
    the barriers are the wait's, one per reduction's partials and one before the second
    reduction reuses the first one's scratch (Triton 3.6's loop has 6)."""
    attrs = {n: ALIGNED for n in ("output_ptr", "input_ptr", "input_row_stride",
                                  "output_row_stride", "n_rows", "n_cols")}  # fmt: skip
    ck = kl.compile(softmax_persistent_kernel, signature="*fp32,*fp32,i32,i32,i32,i32",
                    constexprs={"BLOCK_SIZE": block, "num_stages": 4}, attrs=attrs,
                    target="sm_90a", num_warps=warps)  # fmt: skip
    loop = loop_body(ck.asm["ptx"])
    row_reads = re.findall(r"ld\.shared\.v4\.b32\s+\{[^}]*\},\s*\[%r", loop)
    partial_reads = re.findall(r"ld\.shared\.v4\.b32\s+\{[^}]*\},\s*\[global_smem\+", loop)
    assert len(row_reads) == block // (4 * 32 * warps)
    assert len(partial_reads) == 2 * warps // 4  # every thread reads each reduction's partials
    assert len(re.findall(r"\bld\.shared", loop)) == len(row_reads) + len(partial_reads)
    assert len(re.findall(r"\bsetp\.", loop)) == 3
    assert len(re.findall(r"\bbar\.sync\b", loop)) == 4


@kl.jit
def running_sum(x_ptr, out_ptr, n_rows, BLOCK: tl.constexpr):
    """A plain loop without num_stages: not pipelined (Triton pipelines such loops on request)."""
    acc = tl.zeros((BLOCK,), tl.float32)
    for i in range(n_rows):
        acc += tl.load(x_ptr + i * BLOCK + tl.arange(0, BLOCK))
    tl.store(out_ptr + tl.arange(0, BLOCK), acc)


def test_loops_without_dot_or_request_are_left_alone():
    ck = kl.compile(running_sum, signature="*fp32,*fp32,i32", constexprs={"BLOCK": 256},
                    attrs={"x_ptr": ALIGNED, "out_ptr": ALIGNED}, target="sm_90", num_stages=3)  # fmt: skip
    assert "cp.async" not in ck.asm["ptx"]


@kl.jit
def pointer_walk(x_ptr, out_ptr, n, BLOCK: tl.constexpr, STORE_THROUGH: tl.constexpr):
    """Two loads through one walking pointer; with STORE_THROUGH the loop also stores through
    it, so the pointer must stay this iteration's and can't run ahead."""
    ptrs = x_ptr + tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), tl.float32)
    for i in tl.range(0, n, num_stages=3):
        acc += tl.load(ptrs) * tl.load(ptrs + BLOCK)
        if STORE_THROUGH:
            tl.store(ptrs, acc)
        ptrs += 2 * BLOCK
    tl.store(out_ptr + tl.arange(0, BLOCK), acc)


@pytest.mark.parametrize("store_through, copies", [(False, 6), (True, 0)])
def test_a_pointer_used_outside_address_computations_is_not_run_ahead(store_through, copies):
    ck = kl.compile(pointer_walk, signature="*fp32,*fp32,i32",
                    constexprs={"BLOCK": 256, "STORE_THROUGH": store_through},
                    attrs={"x_ptr": ALIGNED, "out_ptr": ALIGNED}, target="sm_90")  # fmt: skip
    assert ck.asm["ttgir"].count("ttg.async_copy_global_to_local") == copies  # 2 loads x 3


@kl.jit
def scaled_offset_walk(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """out = sum over i < n of x[i * BLOCK:][:BLOCK] * ((i + 1) * BLOCK): one scalar offset
    both addresses the loads and scales what they read."""
    acc = tl.zeros((BLOCK,), tl.float32)
    off = 0
    for i in tl.range(0, n, num_stages=3):
        acc += tl.load(x_ptr + off + tl.arange(0, BLOCK)) * (off + BLOCK).to(tl.float32)
        off += BLOCK
    tl.store(out_ptr + tl.arange(0, BLOCK), acc)


def test_a_scalar_the_loop_also_reads_is_shadowed_for_the_copies():
    """The copies read a shadow of the offset, advanced two iterations ahead; the math reads
    this iteration's."""
    ck = kl.compile(scaled_offset_walk, signature="*fp32,*fp32,i32", constexprs={"BLOCK": 256},
                    attrs={"x_ptr": ALIGNED, "out_ptr": ALIGNED}, target="sm_90")  # fmt: skip
    loop = ck.asm["ttgir"].split("scf.for")[1].split("} {tt.num_stages")[0]
    check(loop, [
        re.compile(r"iter_args\(.*\) -> \(tensor<256xf32, #\w+>, i32, i32, i32\)"),
        "ttg.async_wait", "arith.sitofp",
        re.compile(r"tt.addptr %x_ptr, %\w+ : !tt.ptr<f32>, i32"), "ttg.async_copy_global_to_local",
        re.compile(r"scf.yield %\w+, %off_\w+, %\w+, %off_\w+"),
    ])  # fmt: skip
    head = re.search(r"iter_args\(%\w+ = %\w+, %(\w+) = %\w+, %\w+ = %\w+, %(\w+) = %\w+\)", loop)
    current, ahead = head.groups()
    assert re.search(rf"arith.addi %{current}, ", loop) and re.search(rf"tt.addptr %x_ptr, %{ahead} ", loop)


PERSISTENT_SIGNATURE = "*fp16,*fp16,*fp16,i32,i32,i32,i32,i32,i32"


def compile_persistent_matmul(target: str, bm: int, bn: int, bk: int = 64, warps: int = 8, stages: int = 3):
    """Tutorial 09's persistent matmul (tl.range(..., flatten=True) over its tiles), K-major A,
    N-major B and C, as the benchmark launches it."""
    constexprs = dict(BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn, BLOCK_SIZE_K=bk, GROUP_SIZE_M=8, NUM_SMS=132,
                      stride_ak=1, stride_bn=1, stride_cn=1)  # fmt: skip
    return kl.compile(matmul_persistent_kernel, signature=PERSISTENT_SIGNATURE, constexprs=constexprs,
                      attrs=MATMUL_ATTRS, target=target, num_warps=warps, num_stages=stages)  # fmt: skip


@pytest.mark.parametrize("target,bn", [("sm_90a", 256), ("sm_80", 128)])
def test_the_persistent_matmul_pipelines_across_tiles(target, bn):
    """The fused loop's copies of steps t+1, t+2 (maybe the next tile's) are issued before this
    step's epilogue branch stores the tile and resets the accumulator (once per tile)."""
    ck = compile_persistent_matmul(target, 128, bn)
    assert next(r for r in ck.passes if r.name == "fuse_nested_loops").summary == "1× fuse-loop-nest"
    ttgir = ck.asm["ttgir"]
    fused = ttgir.split("scf.for")[1].split("} else {\n      scf.for")[0]
    dot = r"ttng.warp_group_dot %\w+, %\w+, %\w+ \{.*isAsync" if target == "sm_90a" else r"tt.dot %\w+, %\w+, %\w+ "
    refill = ["ttg.async_copy_global_to_local", "ttg.async_copy_global_to_local", "ttg.async_commit_group"]
    # the copies of step t+2 start with that step's tile: its index math (and the offsets
    # vectors built from it) in a branch at a tile's first step, carried to the other steps
    tile = [re.compile(r"scf.if %\w+ -> \(i32, i32, tensor<128xi32, [^)]*\)"), "arith.divsi", "arith.remsi",
            re.compile(r"%offs_am_\w+ = arith.select"), "} else {"]
    check(fused, [
        "ttg.async_wait {num = 1 : i32}",
        # mma.sync refills first; the asynchronous wgmma once the previous one is done (the
        # epilogue's conversion buffer is live beside the rings: no slot more for it)
        *([*tile, *refill] if target == "sm_80" else []),
        re.compile(dot),
        *(["ttng.warp_group_dot_wait", "pendings = 1", *tile, *refill] if target == "sm_90a" else []),
        # the epilogue, at the tile's last K step, hands the next tile a zero accumulator
        re.compile(r"scf.if %\w+ -> \(i32, tensor<128x\d+xf32, #mma>\)"),
        *(["ttng.warp_group_dot_wait", "pendings = 0"] if target == "sm_90a" else []),
        "arith.truncf", "tt.store", re.compile(r"scf.yield %\w+, %\w+ : i32, tensor<128x\d+xf32, #mma>"),
        "} else {",
        re.compile(r"scf.yield %\w+, %\w+, %\w+, %\w+, .* : i32, tensor<128x\d+xf32, #mma>, i32, i32, "),
    ])  # fmt: skip
    check_not(outside_branches(fused), ["arith.divui", "arith.divsi", "arith.remsi"])  # none per K step
    assert "ttg.convert_layout" not in fused.split("arith.truncf")[0]  # the accumulator stays in #mma
    assert not re.search(r"arith.select .*tensor<128x\d+xf32", fused)  # no reset per K step
    assert sorted(ring_slots(ck.module)) == sorted([(3, 128 * 64 * 2), (3, 64 * bn * 2)])
    ptx = ck.asm["ptx"]
    if target == "sm_90a":
        assert ptx.count("wgmma.wait_group.sync.aligned 0;") >= 1
    else:
        assert "mma.sync.aligned.m16n8k16" in ptx
    assert "selp.f32" not in ptx  # no select per accumulator register and K step
    assert ck.metadata["spills"] == 0 and len(ck.asm["cubin"]) > 0


@kl.jit
def store_then_walk(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """Loads y, stores through out_ptr, loads x, then a pipelined loop over x: its first copies
    may be issued ahead of the loads, never ahead of the store (x may alias out)."""
    offs = tl.arange(0, BLOCK)
    y = tl.load(y_ptr + offs)
    tl.store(out_ptr + offs, y * 2.0)
    first = tl.load(x_ptr + offs)
    acc = first * 0.5
    for i in tl.range(0, n, num_stages=3):
        acc += tl.load(x_ptr + i * BLOCK + offs)
    tl.store(out_ptr + offs, acc + y)


def test_the_prologue_copies_go_ahead_of_loads_but_not_of_a_store():
    """The first copies are issued as early as allowed: ahead of the load after the store (and
    the math on it), behind the store, which they may not pass (x may alias out)."""
    ck = kl.compile(store_then_walk, signature="*fp32,*fp32,*fp32,i32", constexprs={"BLOCK": 256},
                    attrs={n: ALIGNED for n in ("x_ptr", "y_ptr", "out_ptr")}, target="sm_90")  # fmt: skip
    before = ck.asm["ttgir"].split("tt.func", 1)[1].split("scf.for", 1)[0]
    store, copy = before.index("tt.store"), before.index("ttg.async_copy_global_to_local")
    assert before.index("tt.load") < store < copy < before.index("tt.load", store)


def test_attentions_first_copies_are_in_flight_while_q_loads():
    from tests.backends.nvidia.test_wgmma import compile_attention

    for overlapped in (False, True):
        before = compile_attention(overlapped=overlapped).asm["ttgir"].split("scf.for", 1)[0]
        assert before.index("ttg.async_copy_global_to_local") < before.index("tt.load %q_ptrs")
