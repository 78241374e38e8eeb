"""FileCheck-style assertions for golden IR tests.

`check(ir, ["tt.splat", re.compile(r"arith.addi %\\w+, %offs")])` asserts each pattern occurs
after the previous one (a str is a substring, a compiled regex is searched); `check_not(ir, [...])`
asserts none occurs. A failure shows the whole IR, which is what one needs to fix a golden test.
`outside_branches(ir)` drops the then-regions of scf.if ops (what a fused loop runs at every step).
"""

from __future__ import annotations

import re

Pattern = str | re.Pattern


def _find(text: str, pattern: Pattern, start: int) -> tuple[int, int] | None:
    if isinstance(pattern, re.Pattern):
        match = pattern.search(text, start)
        return match.span() if match else None
    index = text.find(pattern, start)
    return (index, index + len(pattern)) if index >= 0 else None


def _show(pattern: Pattern) -> str:
    return f"/{pattern.pattern}/" if isinstance(pattern, re.Pattern) else repr(pattern)


def check(text: str, patterns: list[Pattern]) -> None:
    """Each pattern appears in `text`, in this order (each one after the end of the last)."""
    position = 0
    for i, pattern in enumerate(patterns):
        span = _find(text, pattern, position)
        if span is None:
            after = f" after {_show(patterns[i - 1])}" if i else ""
            raise AssertionError(f"expected {_show(pattern)}{after} in:\n{text}")
        position = span[1]


def check_not(text: str, patterns: list[Pattern]) -> None:
    """No pattern appears anywhere in `text`."""
    for pattern in patterns:
        if _find(text, pattern, 0) is not None:
            raise AssertionError(f"did not expect {_show(pattern)} in:\n{text}")


def outside_branches(ir: str) -> str:
    """`ir` without the then-regions of its scf.if ops (a fused loop's per-tile branches)."""
    kept, closing = [], None
    for line in ir.splitlines():
        if closing is None:
            kept.append(line)
            if re.search(r"= scf.if .*\{$", line):
                closing = " " * (len(line) - len(line.lstrip())) + "} else {"
        elif line == closing:
            kept.append(line)
            closing = None
    return "\n".join(kept)
