"""A sweep's measurements as a plain-text table."""

from __future__ import annotations

import itertools


def format_table(header: list[str], rows: list[list]) -> str:
    """A plain-text table: text columns left-aligned, number columns right-aligned."""
    cells = [[str(h) for h in header]] + [
        [f"{v:.6g}" if isinstance(v, float) else str(v) for v in row] for row in rows
    ]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    text = [bool(rows) and isinstance(rows[0][i], str) for i in range(len(header))]
    lines = [
        "  ".join(c.ljust(w) if t else c.rjust(w) for c, w, t in zip(row, widths, text)).rstrip()
        for row in cells
    ]
    return "\n".join(itertools.chain([lines[0], "-" * max(map(len, lines))], lines[1:]))
