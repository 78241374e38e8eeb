"""The rewrite engine every pass uses: named patterns applied through xDSL's PatternRewriter,
and a `Rewrites` record of what fired, so each pass's record in the viewer says what it did
("canonicalize: 3× fold-constant, 1× add-zero").

A `Pattern` is a name, a function `apply(op, rewriter) -> bool | None` and the op names it
matches (None: every op). It has fired when it used the rewriter or returned True (rewrites
that move whole slices edit the IR directly and say so). Two drivers:

    rewrite_greedily(module, patterns)  xDSL's PatternRewriteWalker: every op, again and again
                                        until nothing fires; on each op the first pattern (in
                                        list order) that fires wins.
    apply_to_each(ops, patterns)        one sweep over `ops` in order, skipping ops an earlier
                                        rewrite erased: for passes whose rewrites need an order
                                        of their own (remove_layout_conversions' rounds).

Passes whose rewrites are not per-op patterns (cse's scoped table, dce's sweep, the inliner,
hoisting) `note` what they did on a `Rewrites` all the same.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, RewritePattern


class Rewrites:
    """What one pass rewrote: pattern name → times it fired. Truthy when anything fired;
    `changed` and `summary` are what the pass manager records."""

    def __init__(self):
        self.counts: Counter[str] = Counter()

    def note(self, name: str, times: int = 1) -> None:
        if times:
            self.counts[name] += times

    def merge(self, other: Rewrites) -> None:
        self.counts.update(other.counts)

    @property
    def changed(self) -> bool:
        return bool(self.counts)

    def __bool__(self) -> bool:
        return self.changed

    @property
    def summary(self) -> str:
        """'3× fold-constant, 1× add-zero' (most frequent first), or 'no change'."""
        if not self.counts:
            return "no change"
        return ", ".join(f"{n}× {name}" for name, n in self.counts.most_common())

    def __repr__(self) -> str:
        return f"Rewrites({self.summary})"


@dataclass(frozen=True)
class Pattern:
    name: str
    apply: Callable[[Operation, PatternRewriter], bool | None]
    ops: frozenset[str] | None = None  # op names it matches; None: every op

    def matches(self, op_name: str) -> bool:
        return self.ops is None or op_name in self.ops


def pattern(name: str, apply, ops: Iterable[str] | None = None) -> Pattern:
    return Pattern(name, apply, None if ops is None else frozenset(ops))


def _fire(pattern: Pattern, op: Operation, rewriter: PatternRewriter) -> bool:
    if pattern.apply(op, rewriter):
        rewriter.has_done_action = True  # the walker must look at the IR again
    return rewriter.has_done_action


class _Applier(RewritePattern):
    """xDSL pattern that tries the matching named patterns in order and counts the one that fires."""

    def __init__(self, patterns: Sequence[Pattern], rewrites: Rewrites):
        self.patterns = list(patterns)
        self.rewrites = rewrites
        self.by_op: dict[str, tuple[Pattern, ...]] = {}

    def _matching(self, op_name: str) -> tuple[Pattern, ...]:
        found = self.by_op.get(op_name)
        if found is None:
            found = self.by_op[op_name] = tuple(p for p in self.patterns if p.matches(op_name))
        return found

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        for p in self._matching(op.name):
            if _fire(p, op, rewriter):
                self.rewrites.note(p.name)
                return


def rewrite_greedily(module: ModuleOp, patterns: Sequence[Pattern]) -> Rewrites:
    """Apply `patterns` everywhere in `module` until none fires (xDSL's walker)."""
    rewrites = Rewrites()
    PatternRewriteWalker(_Applier(patterns, rewrites)).rewrite_module(module)
    return rewrites


def apply_to_each(
    ops: Iterable[Operation], patterns: Sequence[Pattern], rewrites: Rewrites
) -> bool:
    """Try `patterns` once on each op still in the IR, in order (first that fires wins);
    note what fired on `rewrites`. True if anything fired."""
    fired = False
    for op in ops:
        if op.parent is None:  # erased by an earlier rewrite of this sweep
            continue
        for p in patterns:
            if p.matches(op.name) and _fire(p, op, PatternRewriter(op)):
                rewrites.note(p.name)
                fired = True
                break
    return fired
