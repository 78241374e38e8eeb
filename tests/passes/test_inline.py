"""Golden tests for inline: bodies replace calls (recursively), locations survive, callees go."""

from __future__ import annotations

import pytest

from kernellab.ir import parse_module, print_module
from kernellab.passes import inline
from kernellab.passes.inline import InlineError
from tests.filecheck import check, check_not

from .ir import apply

NESTED = """builtin.module {
  tt.func public @kernel(%x_ptr: !tt.ptr<f32>, %n: i32) {
    %v = tt.load %x_ptr : !tt.ptr<f32>
    %y = tt.call @square_plus(%v, %n) : (f32, i32) -> f32
    %z = tt.call @square_plus(%y, %n) : (f32, i32) -> f32
    tt.store %x_ptr, %z : !tt.ptr<f32>
    tt.return
  }
  tt.func private @square_plus(%a: f32, %k: i32) -> f32 {
    %sq = arith.mulf %a, %a : f32 loc("helpers.py":7:11)
    %kf = tt.call @to_float(%k) : (i32) -> f32 loc("helpers.py":8:9)
    %r = arith.addf %sq, %kf : f32 loc("helpers.py":9:11)
    tt.return %r : f32 loc("helpers.py":10:4)
  }
  tt.func private @to_float(%i: i32) -> f32 {
    %f = arith.sitofp %i : i32 to f32 loc("helpers.py":3:11)
    tt.return %f : f32
  }
}
"""


def test_calls_are_inlined_recursively_and_callees_erased():
    ir = apply(inline, NESTED)
    check(ir, [
        "%v = tt.load %x_ptr",
        # results take the caller's names (%kf, not the callee's %f)
        "%sq = arith.mulf %v, %v", "%kf = arith.sitofp %n", "%y = arith.addf %sq, %kf",
        "arith.mulf %y, %y", "arith.sitofp %n", "%z = arith.addf",
        "tt.store %x_ptr, %z",
    ])  # fmt: skip
    check_not(ir, ["tt.call", "@square_plus", "@to_float"])


def test_inlined_ops_keep_the_helpers_source_locations():
    module = parse_module(NESTED)
    inline.run(module)
    ir = print_module(module, locations=True)
    check(ir, ['arith.mulf %v, %v : f32 loc("helpers.py":7:11)',
               'arith.sitofp %n : i32 to f32 loc("helpers.py":3:11)',
               'arith.addf %sq, %kf : f32 loc("helpers.py":9:11)'])  # fmt: skip


def test_calls_to_public_functions_stay():
    text = """builtin.module {
  tt.func public @kernel(%x: i32) -> i32 {
    %y = tt.call @other(%x) : (i32) -> i32
    tt.return %y : i32
  }
  tt.func public @other(%a: i32) -> i32 {
    tt.return %a : i32
  }
}
"""
    ir = apply(inline, text, expect_changed=False)
    check(ir, ["tt.call @other(%x)", "tt.func public @other"])


def test_recursion_is_an_error():
    text = """builtin.module {
  tt.func public @kernel(%x: i32) -> i32 {
    %y = tt.call @f(%x) : (i32) -> i32
    tt.return %y : i32
  }
  tt.func private @f(%a: i32) -> i32 {
    %b = tt.call @f(%a) : (i32) -> i32
    tt.return %b : i32
  }
}
"""
    with pytest.raises(InlineError, match="recursive call: kernel -> f -> f"):
        inline.run(parse_module(text))
