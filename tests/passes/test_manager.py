"""The pass manager: one record per pass with the IR after it, time, changed flag, summary."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from xdsl.dialects.builtin import i32

from kernellab.ir import arith, parse_module, print_module, tt
from kernellab.passes import cse, dce
from kernellab.passes.manager import PassError, PassManager, PassOutcome

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
    # each pass says what it rewrote (the rewrite engine's counts); a pass that returns a bare
    # bool is described by the size of the IR it left
    assert [r.summary for r in records] == [
        "1× merge-duplicate",
        "8 → 9 lines",
        "no change",
        "2× erase-dead-op",
    ]


class _Text:
    """A non-xDSL artifact: a list of lines, printed joined."""

    def __init__(self, lines):
        self.lines = list(lines)


def _append(name, line, stage=""):
    def run(text: _Text) -> PassOutcome:
        text.lines.append(line)
        return PassOutcome(True, f"appended {line!r}")

    return SimpleNamespace(NAME=name, STAGE=stage, run=run)


def test_any_artifact_runs_through_the_manager_with_its_printer():
    text = _Text(["a"])
    keep = SimpleNamespace(NAME="keep", run=lambda t: PassOutcome(False, "kept"))
    passes = [keep, _append("add-b", "b", stage="llir"), _append("add-c", "c")]
    records = PassManager(passes, printer=lambda t: "\n".join(t.lines), verifier=None).run(
        text, text_before="a"
    )
    assert [r.ir_after for r in records] == ["a", "a\nb", "a\nb\nc"]
    assert records[0].ir_after == "a" and not records[0].changed  # shared, not printed
    assert [r.summary for r in records] == ["kept", "appended 'b'", "appended 'c'"]
    assert [r.stage for r in records] == ["", "llir", ""]  # a pass's STAGE, else the stage's


def test_a_pass_without_a_summary_is_described_by_the_ir_size():
    grow = SimpleNamespace(NAME="grow", run=lambda t: t.lines.extend("xyz") or PassOutcome(True))
    records = PassManager([grow], printer=lambda t: "\n".join(t.lines), verifier=None).run(
        _Text(["a"]), text_before="a"
    )
    assert records[0].summary == "1 → 4 lines"
    untraced = PassManager([grow], trace=False, printer=str, verifier=None).run(_Text(["a"]))
    assert untraced[0].summary == "changed" and untraced[0].ir_after == ""


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
