"""tt.print and tt.assert."""

from __future__ import annotations

import numpy as np
import pytest
from interp_helpers import run

from kernellab.backends.interpreter import DeviceAssertionError

KERNEL = """
builtin.module {
  tt.func public @k(%x_ptr: !tt.ptr<i32>, %limit: i32) {
    %pid = tt.get_program_id x : i32
    %r = tt.make_range {start = 0 : i32, end = 4 : i32} : tensor<4xi32>
    %four = arith.constant 4 : i32
    %start = arith.muli %pid, %four : i32
    %ss = tt.splat %start : i32 -> tensor<4xi32>
    %offs = arith.addi %ss, %r : tensor<4xi32>
    %ps = tt.splat %x_ptr : !tt.ptr<i32> -> tensor<4x!tt.ptr<i32>>
    %pa = tt.addptr %ps, %offs : tensor<4x!tt.ptr<i32>>, tensor<4xi32>
    %x = tt.load %pa : tensor<4x!tt.ptr<i32>>
    tt.print " x: " {hex = false} : %x : tensor<4xi32>
    %lim = tt.splat %limit : i32 -> tensor<4xi32>
    %ok = arith.cmpi slt, %x, %lim : tensor<4xi32>
    tt.assert %ok, "x < limit" : tensor<4xi1> loc("check.py":12:4)
    tt.return
  }
}
"""


def test_print_one_line_per_program_and_element(capsys):
    x = np.random.default_rng().integers(-100, 100, 8, dtype=np.int32)
    run(KERNEL, [x, 1000], (2,))
    lines = capsys.readouterr().out.splitlines()
    assert lines == [f"pid ({p}, 0, 0) idx ({i}) x: {x[4 * p + i]}" for p in range(2) for i in range(4)]


def test_assert_names_line_program_and_index(capsys):
    x = np.arange(12, dtype=np.int32)
    with pytest.raises(DeviceAssertionError) as info:
        run(KERNEL, [x, 6], (3,))
    message = str(info.value)
    assert "check.py:12" in message and "x < limit" in message
    assert "program (1, 0, 0)" in message and "index (2,)" in message
