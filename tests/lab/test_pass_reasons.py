"""`why_unchanged`: the viewer says why a TTGIR pass changed nothing when an IR fact is the reason,
and says nothing when the pass did change the kernel or the reason is not such a fact."""

from __future__ import annotations

import pytest

import kernellab as kl
import kernellab.language as tl
from kernellab.lab import compiling
from kernellab.lab.pass_reasons import why_unchanged


@kl.jit
def copy_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs))


@kl.jit
def chunked_sum(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in range(0, n, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.store(out_ptr + tl.arange(0, BLOCK), acc)


@kl.jit
def dot_loop(a_ptr, b_ptr, c_ptr, K, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    a_ptrs = a_ptr + offs[:, None] * BLOCK + offs[None, :]
    b_ptrs = b_ptr + offs[:, None] * BLOCK + offs[None, :]
    acc = tl.zeros((BLOCK, BLOCK), dtype=tl.float32)
    for _ in range(0, K, BLOCK):
        acc = tl.dot(tl.load(a_ptrs), tl.load(b_ptrs), acc)
        a_ptrs += BLOCK * BLOCK
        b_ptrs += BLOCK * BLOCK
    tl.store(c_ptr + offs[:, None] * BLOCK + offs[None, :], acc)


def reasons(kernel, signature, num_stages=3, attrs=None, **constexprs) -> dict:
    """pass name → (changed, why) for one sm_90 compile, as the viewer's bundle computes them."""
    ck = kl.compile(kernel, signature=signature, constexprs=constexprs, target="sm_90",
                    num_stages=num_stages, attrs=attrs)  # fmt: skip
    out, before = {}, ""
    for record in ck.passes:
        out[record.name] = (record.changed, None if record.changed else why_unchanged(record.name, before, num_stages))
        before = record.ir_after or before
    return out


@pytest.fixture(autouse=True)
def nvidia(monkeypatch, tmp_path):
    if not compiling.nvidia_available():
        pytest.skip("the NVIDIA backend is not in this build")
    monkeypatch.setenv("KERNELLAB_CACHE_DIR", str(tmp_path))


def test_a_kernel_without_dot_or_loop():
    why = reasons(copy_kernel, "*fp32,*fp32", BLOCK=256)
    assert why["accelerate_matmul"] == (False, "the kernel has no tt.dot (tl.dot): there is nothing for tensor cores to compute")
    assert why["reduce_data_duplication"][1].startswith("the kernel has no tt.dot")
    assert why["pipeline"] == (False, "the kernel has no loop: pipelining overlaps a loop's next loads with this iteration's math")
    changed, reason = why["remove_layout_conversions"]
    assert changed or reason == "the IR it saw has no ttg.convert_layout: every value is already in the layout its users read"


def test_a_loop_without_dot_is_pipelined_only_on_request():
    changed, reason = reasons(chunked_sum, "*fp32,*fp32,i32", BLOCK=256)["pipeline"]
    assert not changed and reason.startswith("no loop holds a tt.dot or asks for stages")


def test_a_dot_loop_with_one_stage_and_with_three():
    one = reasons(dot_loop, "*fp16,*fp16,*fp32,i32", num_stages=1, BLOCK=32)
    assert one["pipeline"] == (False, "num_stages=1: a loop needs 2 stages or more to have the next loads "
                                      "in flight while it computes")  # fmt: skip
    assert one["accelerate_matmul"][0] and one["accelerate_matmul"][1] is None
    # cp.async needs 4-byte accesses: unaligned fp16 pointers leave loads it cannot copy, which
    # is no single fact, so nothing is said; aligned ones are pipelined
    three = reasons(dot_loop, "*fp16,*fp16,*fp32,i32", num_stages=3, BLOCK=32)
    assert three["pipeline"] == (False, None)
    aligned = {"a_ptr": {"tt.divisibility": 16}, "b_ptr": {"tt.divisibility": 16}}
    three = reasons(dot_loop, "*fp16,*fp16,*fp32,i32", num_stages=3, attrs=aligned, BLOCK=32)
    assert three["pipeline"] == (True, None)
    assert three["reduce_data_duplication"] == (True, None)


@kl.jit
def row_blocks(x_ptr, out_ptr, rows, n, BLOCK: tl.constexpr):
    """A flatten=True nest whose inner loop's trip count changes with the row: not fused."""
    for row in tl.range(0, rows, flatten=True):
        acc = tl.zeros((BLOCK,), dtype=tl.float32)
        for start in range(0, n + row, BLOCK):
            offs = start + tl.arange(0, BLOCK)
            acc += tl.load(x_ptr + offs, mask=offs < n, other=0.0)
        tl.store(out_ptr + row * BLOCK + tl.arange(0, BLOCK), acc)


def test_fuse_nested_loops_says_which_nest_it_kept_and_why():
    assert reasons(dot_loop, "*fp16,*fp16,*fp32,i32", BLOCK=32)["fuse_nested_loops"] == (
        False, "no loop asks for it with tl.range(..., flatten=True): loop nests are pipelined one "
               "innermost loop at a time")  # fmt: skip
    changed, reason = reasons(row_blocks, "*fp32,*fp32,i32,i32", BLOCK=64)["fuse_nested_loops"]
    assert not changed
    assert reason == "the inner loop's end is computed in the outer loop: its trip count must not change"


def test_no_reason_without_an_ir_fact():
    ir = """module {
  tt.func @k(%x: tensor<4xf32, #ttg.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>>) {
    tt.return
  }
}"""
    assert why_unchanged("remove_layout_conversions", "") is None
    assert why_unchanged("cse", ir) is None  # no fact explains a clean-up with nothing to clean
