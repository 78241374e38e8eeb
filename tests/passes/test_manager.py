"""The pass manager: one record per pass with the IR after it, time, changed flag, summary."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from xdsl.dialects.builtin import i32

from kernellab.ir import arith, parse_module, print_module, tt
from kernellab.passes import cse, dce
from kernellab.passes.manager import PassError, PassManager

TEXT = """builtin.module {
  tt.func public @k(%x: i32) -> i32 {
    %a = arith.addi %x, %x : i32
    %b = arith.addi %x, %x : i32
    %c = arith.muli %a, %b : i32
    %dead = arith.subi %c, %x : i32
    tt.return %c : i32
  }
}
"""


def _func(module) -> tt.FuncOp:
    return next(op for op in module.ops if isinstance(op, tt.FuncOp))


def _insert_constant(module) -> bool:
    block = _func(module).body.block
    block.insert_op_before(arith.ConstantOp.of(7, i32), block.first_op)
    return True


ADD_CONSTANT = SimpleNamespace(NAME="add-constant", run=_insert_constant)


def test_records_name_ir_time_and_changes_of_each_pass():
    module = parse_module(TEXT)
    records = PassManager([cse, ADD_CONSTANT, cse, dce]).run(module)
    assert [r.name for r in records] == ["cse", "add-constant", "cse", "dce"]
    assert [r.changed for r in records] == [True, True, False, True]
    assert all(r.seconds >= 0 for r in records)
    assert "%b" not in records[0].ir_after and "%dead" in records[0].ir_after
    assert "arith.constant 7 : i32" in records[1].ir_after
    assert records[2].ir_after == records[1].ir_after
    assert "%dead" not in records[3].ir_after
    assert records[3].ir_after == print_module(module)  # the passes ran in place
    assert [r.summary for r in records] == [
        "1 op removed",
        "1 op added",
        "no change",
        "2 ops removed",
    ]


def test_an_unchanged_first_pass_still_records_the_ir():
    module = parse_module(TEXT)
    unchanged = SimpleNamespace(NAME="nothing", run=lambda m: False)
    records = PassManager([unchanged, unchanged, dce]).run(module)
    assert records[0].ir_after == print_module(parse_module(TEXT))
    assert records[1].ir_after is records[0].ir_after  # shared, not printed again
    assert records[2].changed and "%dead" not in records[2].ir_after


def test_without_trace_nothing_is_printed():
    records = PassManager([cse, dce], trace=False).run(parse_module(TEXT))
    assert [r.ir_after for r in records] == ["", ""]
    assert [r.changed for r in records] == [True, True]


def test_a_failing_pass_is_named():
    def explode(module):
        raise ValueError("no luck")

    broken = SimpleNamespace(NAME="explode", run=explode)
    with pytest.raises(PassError, match="pass 'explode' failed: ValueError: no luck") as info:
        PassManager([cse, broken]).run(parse_module(TEXT))
    assert isinstance(info.value.__cause__, ValueError)


def _drop_terminator(module) -> bool:
    _func(module).body.block.last_op.detach()
    return True


def test_verify_mode_catches_invalid_ir_after_the_pass_that_made_it():
    breaker = SimpleNamespace(NAME="drop-terminator", run=_drop_terminator)
    PassManager([breaker], trace=False).run(parse_module(TEXT))  # not verified by default
    with pytest.raises(PassError, match="pass 'drop-terminator' failed: invalid IR"):
        PassManager([cse, breaker, dce], verify=True).run(parse_module(TEXT))
