"""Loads and stores: vector add, masks and `other`, 2-D tiles, bounds errors, traces."""

from __future__ import annotations

import numpy as np
import pytest
from interp_helpers import poisoned, run

from kernellab.backends.interpreter import AccessTrace, OutOfBoundsError, prepare
from kernellab.ir import parse_module

ADD = """
builtin.module {
  tt.func public @add_kernel(%x_ptr: !tt.ptr<f32>, %y_ptr: !tt.ptr<f32>, %out_ptr: !tt.ptr<f32>, %n: i32) {
    %pid = tt.get_program_id x : i32 loc("add.py":3:10)
    %block = arith.constant 128 : i32
    %start = arith.muli %pid, %block : i32
    %range = tt.make_range {start = 0 : i32, end = 128 : i32} : tensor<128xi32>
    %start_s = tt.splat %start : i32 -> tensor<128xi32>
    %offs = arith.addi %start_s, %range : tensor<128xi32>
    %n_s = tt.splat %n : i32 -> tensor<128xi32>
    %mask = arith.cmpi slt, %offs, %n_s : tensor<128xi32>
    %x_s = tt.splat %x_ptr : !tt.ptr<f32> -> tensor<128x!tt.ptr<f32>>
    %x_ptrs = tt.addptr %x_s, %offs : tensor<128x!tt.ptr<f32>>, tensor<128xi32>
    %x = tt.load %x_ptrs, %mask : tensor<128x!tt.ptr<f32>> loc("add.py":7:8)
    %y_s = tt.splat %y_ptr : !tt.ptr<f32> -> tensor<128x!tt.ptr<f32>>
    %y_ptrs = tt.addptr %y_s, %offs : tensor<128x!tt.ptr<f32>>, tensor<128xi32>
    %y = tt.load %y_ptrs, %MASK : tensor<128x!tt.ptr<f32>> loc("add.py":8:8)
    %out = arith.addf %x, %y : tensor<128xf32>
    %o_s = tt.splat %out_ptr : !tt.ptr<f32> -> tensor<128x!tt.ptr<f32>>
    %o_ptrs = tt.addptr %o_s, %offs : tensor<128x!tt.ptr<f32>>, tensor<128xi32>
    tt.store %o_ptrs, %out, %mask : tensor<128x!tt.ptr<f32>> loc("add.py":10:4)
    tt.return
  }
}
"""
MASKED_ADD = ADD.replace("%MASK", "%mask")
UNMASKED_Y_ADD = ADD.replace(", %MASK", "")


@pytest.mark.parametrize("n", [128 * 5, 1000, 1, 129])
def test_vector_add(n):
    rng = np.random.default_rng()
    x, y = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
    out = poisoned(n, np.float32)
    run(MASKED_ADD, [x, y, out, n], (-(-n // 128),))
    np.testing.assert_array_equal(out, x + y)


def test_masked_lanes_are_not_written():
    rng = np.random.default_rng()
    x, y = rng.standard_normal(256, dtype=np.float32), rng.standard_normal(256, dtype=np.float32)
    out = poisoned(256, np.float32)
    run(MASKED_ADD, [x, y, out, 200], (2,))
    np.testing.assert_array_equal(out[:200], x[:200] + y[:200])
    assert np.isnan(out[200:]).all()


def test_out_of_bounds_load_names_line_argument_and_program():
    rng = np.random.default_rng()
    n = 300  # program 2 covers 256..383: its unmasked load of y runs past the end
    x, y = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
    out = poisoned(n, np.float32)
    with pytest.raises(OutOfBoundsError) as info:
        run(UNMASKED_Y_ADD, [x, y, out, n], (3,))
    message = str(info.value)
    assert "add.py:8" in message
    assert "load" in message and "'y_ptr'" in message
    assert "program (2, 0, 0)" in message
    assert "element index 300" in message and "300 elements" in message
    assert np.isnan(out).all()  # nothing ran past the failing load


def test_out_of_bounds_store_before_the_buffer():
    text = """
builtin.module {
  tt.func public @k(%p: !tt.ptr<i32>) {
    %pid = tt.get_program_id y : i32
    %c = arith.constant 3 : i32
    %off = arith.subi %pid, %c : i32
    %q = tt.addptr %p, %off : !tt.ptr<i32>, i32
    tt.store %q, %pid : !tt.ptr<i32> loc("neg.py":5:4)
    tt.return
  }
}
"""
    buf = poisoned(8, np.int32)
    with pytest.raises(OutOfBoundsError) as info:
        run(text, [buf], (1, 6))
    message = str(info.value)
    assert "neg.py:5" in message and "store" in message and "'p'" in message
    assert "program (0, 0, 0)" in message and "and 2 other programs" in message
    assert "element index -3" in message
    assert (buf == poisoned(8, np.int32)).all()


LOAD_OTHER_2D = """
builtin.module {
  tt.func public @k(%in_ptr: !tt.ptr<f32>, %out_ptr: !tt.ptr<f32>, %rows: i32, %cols: i32, %stride: i32) {
    %pid = tt.get_program_id x : i32
    %r = tt.make_range {start = 0 : i32, end = 8 : i32} : tensor<8xi32>
    %c = tt.make_range {start = 0 : i32, end = 16 : i32} : tensor<16xi32>
    %eight = arith.constant 8 : i32
    %row0 = arith.muli %pid, %eight : i32
    %row0_s = tt.splat %row0 : i32 -> tensor<8xi32>
    %rr = arith.addi %row0_s, %r : tensor<8xi32>
    %r2 = tt.expand_dims %rr {axis = 1 : i32} : tensor<8xi32> -> tensor<8x1xi32>
    %c2 = tt.expand_dims %c {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
    %stride_s = tt.splat %stride : i32 -> tensor<8x1xi32>
    %roff = arith.muli %r2, %stride_s : tensor<8x1xi32>
    %roff_b = tt.broadcast %roff : tensor<8x1xi32> -> tensor<8x16xi32>
    %c_b = tt.broadcast %c2 : tensor<1x16xi32> -> tensor<8x16xi32>
    %off = arith.addi %roff_b, %c_b : tensor<8x16xi32>
    %rows_s = tt.splat %rows : i32 -> tensor<8x1xi32>
    %cols_s = tt.splat %cols : i32 -> tensor<1x16xi32>
    %rm = arith.cmpi slt, %r2, %rows_s : tensor<8x1xi32>
    %cm = arith.cmpi slt, %c2, %cols_s : tensor<1x16xi32>
    %rm_b = tt.broadcast %rm : tensor<8x1xi1> -> tensor<8x16xi1>
    %cm_b = tt.broadcast %cm : tensor<1x16xi1> -> tensor<8x16xi1>
    %mask = arith.andi %rm_b, %cm_b : tensor<8x16xi1>
    %ptr_s = tt.splat %in_ptr : !tt.ptr<f32> -> tensor<8x16x!tt.ptr<f32>>
    %ptrs = tt.addptr %ptr_s, %off : tensor<8x16x!tt.ptr<f32>>, tensor<8x16xi32>
    %other_s = arith.constant -2.5 : f32
    %other = tt.splat %other_s : f32 -> tensor<8x16xf32>
    %x = tt.load %ptrs, %mask, %other : tensor<8x16x!tt.ptr<f32>>
    %out_row = arith.constant 16 : i32
    %out_stride = tt.splat %out_row : i32 -> tensor<8x1xi32>
    %ooff = arith.muli %r2, %out_stride : tensor<8x1xi32>
    %ooff_b = tt.broadcast %ooff : tensor<8x1xi32> -> tensor<8x16xi32>
    %o = arith.addi %ooff_b, %c_b : tensor<8x16xi32>
    %optr_s = tt.splat %out_ptr : !tt.ptr<f32> -> tensor<8x16x!tt.ptr<f32>>
    %optrs = tt.addptr %optr_s, %o : tensor<8x16x!tt.ptr<f32>>, tensor<8x16xi32>
    tt.store %optrs, %x : tensor<8x16x!tt.ptr<f32>>
    tt.return
  }
}
"""


def test_2d_masked_load_with_other_and_broadcast():
    rng = np.random.default_rng()
    rows, cols, stride = 13, 11, 12
    src = rng.standard_normal((rows, stride), dtype=np.float32)
    out = poisoned((16, 16), np.float32)
    run(LOAD_OTHER_2D, [src, out, rows, cols, stride], (2,))
    expected = np.full((16, 16), -2.5, np.float32)
    expected[:rows, :cols] = src[:, :cols]
    np.testing.assert_array_equal(out, expected)


def test_trace_records_indices_and_masks():
    rng = np.random.default_rng()
    x, y = rng.standard_normal(200, dtype=np.float32), rng.standard_normal(200, dtype=np.float32)
    out = poisoned(200, np.float32)
    trace = AccessTrace()
    run(MASKED_ADD, [x, y, out, 200], (2,), trace)
    assert [(r.kind, r.arg) for r in trace.records] == [("load", "x_ptr"), ("load", "y_ptr"), ("store", "out_ptr")]
    rec = trace.records[2]
    assert rec.location == "add.py:10"
    np.testing.assert_array_equal(rec.programs, [[0, 0, 0], [1, 0, 0]])
    offs = np.arange(256).reshape(2, 128)
    np.testing.assert_array_equal(rec.mask, offs < 200)
    np.testing.assert_array_equal(rec.indices[rec.mask], offs[offs < 200])


def test_a_strided_view_indexed_as_contiguous_is_an_out_of_bounds_access():
    kernel = prepare(parse_module(MASKED_ADD))
    x = np.ones((4, 64), np.float32)[:, ::2]
    out = np.zeros(128, np.float32)
    where = r"add.py:7: .*'x_ptr' in program \(0, 0, 0\), lane \(1,\): element offset 1 .*strided view"
    with pytest.raises(OutOfBoundsError, match=where):
        kernel.run([x, np.ones(128, np.float32), out, 128], (1,))
    assert not out.any()


def test_pointer_bitcast_and_int_roundtrip():
    """Load float bits as int32 through a bitcast pointer; address via ptr_to_int/int_to_ptr."""
    text = """
builtin.module {
  tt.func public @k(%src: !tt.ptr<f32>, %dst: !tt.ptr<i32>) {
    %r = tt.make_range {start = 0 : i32, end = 32 : i32} : tensor<32xi32>
    %as_int = tt.ptr_to_int %src : !tt.ptr<f32> -> i64
    %four = arith.constant 4 : i64
    %moved = arith.addi %as_int, %four : i64
    %back = tt.int_to_ptr %moved : i64 -> !tt.ptr<f32>
    %ip = tt.bitcast %back : !tt.ptr<f32> -> !tt.ptr<i32>
    %ps = tt.splat %ip : !tt.ptr<i32> -> tensor<32x!tt.ptr<i32>>
    %pa = tt.addptr %ps, %r : tensor<32x!tt.ptr<i32>>, tensor<32xi32>
    %v = tt.load %pa : tensor<32x!tt.ptr<i32>>
    %ds = tt.splat %dst : !tt.ptr<i32> -> tensor<32x!tt.ptr<i32>>
    %da = tt.addptr %ds, %r : tensor<32x!tt.ptr<i32>>, tensor<32xi32>
    tt.store %da, %v : tensor<32x!tt.ptr<i32>>
    tt.return
  }
}
"""
    src = np.random.default_rng().standard_normal(33, dtype=np.float32)
    dst = poisoned(32, np.int32)
    run(text, [src, dst], (1,))
    np.testing.assert_array_equal(dst, src[1:].view(np.int32))


def test_misaligned_pointer_is_rejected():
    text = """
builtin.module {
  tt.func public @k(%p: !tt.ptr<f32>) {
    %i = tt.ptr_to_int %p : !tt.ptr<f32> -> i64
    %two = arith.constant 2 : i64
    %j = arith.addi %i, %two : i64
    %q = tt.int_to_ptr %j : i64 -> !tt.ptr<f32>
    %v = tt.load %q : !tt.ptr<f32> loc("mis.py":4:8)
    tt.return
  }
}
"""
    with pytest.raises(OutOfBoundsError, match=r"mis.py:4.*byte offset 2 is not a multiple of the 4-byte"):
        run(text, [np.ones(4, np.float32)], (1,))
