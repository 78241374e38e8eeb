"""The rewrite engine: named patterns, the first that fires wins, every firing counted."""

from __future__ import annotations

from xdsl.rewriter import Rewriter

from kernellab.ir import arith, parse_module, print_module
from kernellab.passes import canonicalize
from kernellab.passes.manager import PassManager
from kernellab.passes.rewrite import Rewrites, apply_to_each, pattern, rewrite_greedily

from .ir import module_text

BODY = """
    %zero = arith.constant 0 : i32
    %one = arith.constant 1 : i32
    %two = arith.constant 2 : i32
    %a = arith.addi %x, %zero : i32
    %b = arith.muli %a, %one : i32
    %c = arith.addi %two, %two : i32
    %d = arith.addi %b, %c : i32
    tt.return %d : i32"""


def _module():
    return parse_module(module_text(BODY, args="%x: i32", results="i32"))


def test_canonicalize_counts_each_pattern_that_fired():
    rewrites = canonicalize.run(_module())
    assert rewrites.counts == {"add-zero": 1, "mul-zero-or-one": 1, "fold-constant": 1}
    assert rewrites.changed and bool(rewrites)
    assert canonicalize.run(parse_module(module_text("    tt.return", ""))).summary == "no change"


def test_the_pass_record_says_what_was_rewritten():
    (record,) = PassManager([canonicalize]).run(_module())
    assert record.changed
    assert record.summary == "1× add-zero, 1× mul-zero-or-one, 1× fold-constant"


def test_summary_lists_the_most_frequent_first():
    rewrites = Rewrites()
    rewrites.note("b")
    rewrites.note("a", 3)
    rewrites.note("c", 0)  # nothing happened: not listed
    assert rewrites.summary == "3× a, 1× b"


def _erase(op, rewriter):
    rewriter.erase(op, safe_erase=False)


def test_greedy_rewriting_tries_patterns_in_order_and_repeats_until_none_fires():
    seen = []

    def never(op, rewriter):
        seen.append(op.name)

    def swap_operands(op, rewriter):  # fires once per addi: then its operands are ordered
        if op.lhs.name_hint < op.rhs.name_hint:
            rewriter.replace(op, arith.AddiOp(op.rhs, op.lhs))

    module = _module()
    rewrites = rewrite_greedily(
        module,
        [pattern("look", never, ["arith.addi"]), pattern("swap", swap_operands, ["arith.addi"])],
    )
    assert set(seen) == {"arith.addi"}  # matched by op name only
    assert rewrites.counts == {"swap": 2}  # %x + %zero and %b + %c; %two + %two stays
    assert "arith.addi %zero, %x" in print_module(module)


def test_a_sweep_visits_each_op_once_and_skips_ops_already_erased():
    module = _module()
    adds = [op for op in module.walk() if isinstance(op, arith.AddiOp)]
    visited = []

    def erase_next_add(op, rewriter) -> bool:
        visited.append(op.result.name_hint)
        later = adds[adds.index(op) + 1 :]
        if later:
            Rewriter.erase_op(later[0], safe_erase=False)  # a direct edit: the pattern says so
            return True
        return False

    rewrites = Rewrites()
    assert apply_to_each(adds, [pattern("erase-next", erase_next_add)], rewrites)
    assert visited == ["a", "d"]  # %c was erased while visiting %a
    assert rewrites.counts == {"erase-next": 1}
