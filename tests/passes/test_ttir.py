"""The TTIR pipeline end to end: golden output, pass records, and unchanged behaviour."""

from __future__ import annotations

import numpy as np
import pytest

from kernellab.backends.interpreter import prepare
from kernellab.ir import parse_module, print_module
from kernellab.passes import inline
from kernellab.passes.manager import PassManager
from kernellab.passes.ttir import TTIR_PASSES, make_ttir
from tests.filecheck import check, check_not

# What the frontend emits for: out[offs] = sum(x[offs] * (2.0 * 0.5) + i for i in range(k)),
# with a helper function, duplicated splats and masks, and a loop-invariant splat.
KERNEL = """builtin.module {
  tt.func public @kernel(%x_ptr: !tt.ptr<f32>, %out_ptr: !tt.ptr<f32>, %n: i32, %k: i32) {
    %pid = tt.get_program_id x : i32
    %block = arith.constant 64 : i32
    %one = arith.constant 1 : i32
    %start = arith.muli %pid, %block : i32
    %start1 = arith.muli %start, %one : i32
    %range = tt.make_range {start = 0 : i32, end = 64 : i32} : tensor<64xi32>
    %base = tt.splat %start1 : i32 -> tensor<64xi32>
    %offs = arith.addi %base, %range : tensor<64xi32>
    %ns = tt.splat %n : i32 -> tensor<64xi32>
    %mask = arith.cmpi slt, %offs, %ns : tensor<64xi32>
    %xp = tt.splat %x_ptr : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
    %xptrs = tt.addptr %xp, %offs : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
    %x = tt.load %xptrs, %mask : tensor<64x!tt.ptr<f32>>
    %zero = arith.constant 0 : i32
    %init = arith.constant dense<0.0> : tensor<64xf32>
    %acc = scf.for %i = %zero to %k step %one iter_args(%a = %init) -> (tensor<64xf32>) : i32 {
      %y = tt.call @scale_add(%x, %i) : (tensor<64xf32>, i32) -> tensor<64xf32>
      %a2 = arith.addf %a, %y : tensor<64xf32>
      scf.yield %a2 : tensor<64xf32>
    }
    %ns2 = tt.splat %n : i32 -> tensor<64xi32>
    %mask2 = arith.cmpi slt, %offs, %ns2 : tensor<64xi32>
    %op = tt.splat %out_ptr : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
    %optrs = tt.addptr %op, %offs : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
    tt.store %optrs, %acc, %mask2 : tensor<64x!tt.ptr<f32>>
    tt.return
  }
  tt.func private @scale_add(%v: tensor<64xf32>, %i: i32) -> tensor<64xf32> {
    %two = arith.constant 2.0 : f32
    %half = arith.constant 0.5 : f32
    %factor = arith.mulf %two, %half : f32
    %fs = tt.splat %factor : f32 -> tensor<64xf32>
    %w = arith.mulf %v, %fs : tensor<64xf32>
    %fi = arith.sitofp %i : i32 to f32
    %is = tt.splat %fi : f32 -> tensor<64xf32>
    %r = arith.addf %w, %is : tensor<64xf32>
    tt.return %r : tensor<64xf32>
  }
}
"""


def test_pipeline_order_and_records():
    module = parse_module(KERNEL)
    records = make_ttir(module)
    assert [r.name for r in records] == [p.NAME for p in TTIR_PASSES]
    assert [r.name for r in records] == [
        "inline",
        "canonicalize",
        "tiles_as_descriptors",
        "lower_descriptors",
        "cse",
        "licm",
        "fuse_nested_loops",
        "canonicalize",
        "dce",
    ]
    assert records[-1].ir_after == print_module(module)
    assert all(r.seconds >= 0 for r in records)
    assert records[0].changed and records[1].changed and records[-1].changed


def test_pipeline_output():
    module = parse_module(KERNEL)
    make_ttir(module, trace=False)
    ir = print_module(module)
    check(ir, [
        "%pid = tt.get_program_id x", "%start = arith.muli %pid, %block",
        "%base = tt.splat %start", "%offs = arith.addi %base, %range",
        "%mask = arith.cmpi slt, %offs, %ns", "%x = tt.load %xptrs, %mask",
        "scf.for %i", "%fi = arith.sitofp %i", "%is = tt.splat %fi", "%y = arith.addf %x, %is",
        "%a2 = arith.addf %a, %y", "scf.yield %a2",
        "tt.store %optrs, %acc, %mask",
    ])  # fmt: skip
    check_not(ir, ["tt.call", "@scale_add", "arith.mulf", "%start1", "%ns2", "%mask2", "%factor"])


def test_debug_option_verifies_each_pass():
    class Options:
        debug = True

    records = make_ttir(parse_module(KERNEL), Options())
    assert len(records) == len(TTIR_PASSES)


def _run(module, x: np.ndarray, n: int, k: int) -> np.ndarray:
    out = np.full(x.shape, np.nan, np.float32)
    prepare(module).run([x, out, n, k], (-(-x.size // 64), 1, 1))
    return out


@pytest.mark.parametrize("k", [1, 5])
def test_pipeline_preserves_behaviour(rng, k):
    size = 200
    n = int(rng.integers(130, size))
    x = rng.uniform(-4, 4, size).astype(np.float32)
    baseline = parse_module(KERNEL)
    PassManager([inline], trace=False).run(baseline)
    optimized = parse_module(KERNEL)
    make_ttir(optimized, trace=False)
    before, after = _run(baseline, x, n, k), _run(optimized, x, n, k)
    np.testing.assert_array_equal(after[:n], before[:n])
    expected = k * x[:n].astype(np.float64) + k * (k - 1) / 2
    np.testing.assert_allclose(after[:n], expected, rtol=1e-6, atol=1e-5)
    assert np.isnan(after[n:]).all()  # masked lanes untouched
