"""loop-pointer-offsets: a pointer tile advanced uniformly by a loop is carried as one scalar
offset; anything else is left as it is. The golden tests read the IR; the CPU tests run
kernels whose pointer tiles the pass rewrites, against numpy."""

from __future__ import annotations

import re

import numpy as np
import pytest

import kernellab as kl
import kernellab.language as tl
from kernellab.passes.ttgir import loop_pointer_offsets
from tests.filecheck import check, check_not

from ..ir import run_on_body

ARGS = "%p: !tt.ptr<f32>, %n: i32, %s: i32"
PROLOGUE = """
    %lb = arith.constant 0 : i32
    %step = arith.constant 1 : i32
    %r = tt.make_range {end = 4 : i32, start = 0 : i32} : tensor<4xi32>
    %base = tt.splat %p : !tt.ptr<f32> -> tensor<4x!tt.ptr<f32>>
    %ptrs = tt.addptr %base, %r : tensor<4x!tt.ptr<f32>>, tensor<4xi32>"""


def test_a_tile_advanced_by_a_splat_and_a_constant_is_carried_as_an_i64_offset():
    ir = run_on_body(
        loop_pointer_offsets,
        PROLOGUE + """
    %four = arith.constant dense<4> : tensor<4xi32>
    %by = tt.splat %s : i32 -> tensor<4xi32>
    %out = scf.for %i = %lb to %n step %step iter_args(%q = %ptrs) -> (tensor<4x!tt.ptr<f32>>) : i32 {
      %v = tt.load %q : tensor<4x!tt.ptr<f32>>
      %q1 = tt.addptr %q, %four : tensor<4x!tt.ptr<f32>>, tensor<4xi32>
      %q2 = tt.addptr %q1, %by : tensor<4x!tt.ptr<f32>>, tensor<4xi32>
      scf.yield %q2 : tensor<4x!tt.ptr<f32>>
    }
    %w = arith.constant dense<1.0> : tensor<4xf32>
    tt.store %out, %w : tensor<4x!tt.ptr<f32>>
    tt.return""",
        ARGS,
    )
    check(ir, [
        "%0 = arith.constant 0 : i64",
        "%out_offset = scf.for %i = %lb to %n step %step iter_args(%q_offset = %0) -> (i64)",
        "%1 = tt.splat %q_offset : i64 -> tensor<4xi64>",
        "%q = tt.addptr %ptrs, %1 : tensor<4x!tt.ptr<f32>>, tensor<4xi64>",  # rebuilt for its uses
        "tt.load %q",
        "arith.constant 4 : i64",
        re.compile(r"(%\w+) = arith.addi %q_offset, %\w+ : i64"),
        "arith.extsi %s : i32 to i64",
        "arith.addi",
        "scf.yield",
        "tt.splat %out_offset : i64 -> tensor<4xi64>",  # the pointers after the loop, rebuilt
        "%out = tt.addptr %ptrs",
        "tt.store %out",
    ])  # fmt: skip


@pytest.mark.parametrize("advance", [
    "%q1 = tt.addptr %q, %r : tensor<4x!tt.ptr<f32>>, tensor<4xi32>",  # by a different amount per element
    "%q1 = tt.addptr %ptrs, %four : tensor<4x!tt.ptr<f32>>, tensor<4xi32>",  # not from the loop's own tile
], ids=["not-uniform", "not-from-itself"])  # fmt: skip
def test_a_tile_not_advanced_uniformly_from_itself_stays_a_tile(advance):
    ir = run_on_body(
        loop_pointer_offsets,
        PROLOGUE + f"""
    %four = arith.constant dense<4> : tensor<4xi32>
    %out = scf.for %i = %lb to %n step %step iter_args(%q = %ptrs) -> (tensor<4x!tt.ptr<f32>>) : i32 {{
      {advance}
      scf.yield %q1 : tensor<4x!tt.ptr<f32>>
    }}
    tt.return""",
        ARGS,
        changed=False,
    )
    check_not(ir, ["i64"])


@kl.jit
def _row_panel_sums(x_ptr, out_ptr, last_ptr, K, stride, BM: tl.constexpr, BK: tl.constexpr):
    """Sums BM rows of x over K in BK steps with pointer tiles advanced by += (a constant for
    x, a runtime stride for the row markers), then writes through the advanced pointers."""
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rk = tl.arange(0, BK)
    x_ptrs = x_ptr + rm[:, None] * stride + rk[None, :]
    marks = last_ptr + rm * 0
    acc = tl.zeros((BM, BK), dtype=tl.float32)
    for _ in range(0, K, BK):
        acc += tl.load(x_ptrs)
        x_ptrs += BK
        marks += 1
    tl.store(out_ptr + rm, tl.sum(acc, axis=1))
    tl.store(marks, rm.to(tl.float32), mask=rm == tl.program_id(0) * BM)


@pytest.mark.parametrize("target", ["cpu", None], ids=["cpu", "interpreter"])
def test_advanced_tiles_read_and_write_what_the_loop_points_at(target):
    rng = np.random.default_rng()
    BM, BK, K, rows = 8, 16, 96, 32
    x = rng.standard_normal((rows, K)).astype(np.float32)
    out = np.full(rows, np.nan, np.float32)
    last = rng.standard_normal(K // BK + 8).astype(np.float32)
    expected_last = last.copy()
    expected_last[K // BK] = rows - BM  # the last program's first row; every program writes there
    kwargs = {"target": target} if target else {}
    _row_panel_sums[(rows // BM,)](x, out, last, K, K, BM=BM, BK=BK, **kwargs)
    np.testing.assert_allclose(out, x.astype(np.float64).sum(axis=1), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(last[K // BK + 1:], expected_last[K // BK + 1:])
    np.testing.assert_array_equal(last[:K // BK], expected_last[:K // BK])
    assert last[K // BK] in {float(p * BM) for p in range(rows // BM)}


def test_the_cpu_pipeline_carries_the_matmul_pointer_tiles_as_offsets():
    ck = kl.compile(_row_panel_sums, signature="*fp32,*fp32,*fp32,i32,i32", constexprs={"BM": 8, "BK": 16},
                    target="cpu")  # fmt: skip
    ttgir = ck.asm["ttgir"]
    check(ttgir, [re.compile(r"scf.for .* -> \(tensor<8x16xf32, #\w+>, i64, i64\)")])
    assert any(r.name == "loop-pointer-offsets" and r.changed for r in ck.passes)
