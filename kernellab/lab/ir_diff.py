"""`kl.lab.diff(a, b)`: one stage of two compiled kernels side by side, in the viewer's diff.

    aligned = kernel.explain_key(x, out, n).compile("sm_90")
    shifted = kernel.explain_key(x[1:], out[1:], n).compile("sm_90")
    kl.lab.diff(aligned, shifted, "ttgir")     # sizePerThread = [4] vs [1], and why

Two specializations of one kernel differ only where a fact of the key changed what the compiler
could prove (alignment, a constant 1, a dtype); the diff shows exactly those lines. It is the
passes panel's side-by-side table (lab/viewer/passes.py), static HTML with inline styles, so a
saved notebook keeps it.
"""

from __future__ import annotations

import difflib

from kernellab.lab.viewer.markup import element, plain
from kernellab.lab.viewer.passes import diff_stats, diff_table
from kernellab.lab.viewer.stages import pane_head

_LANGUAGES = {"ttir": "mlir", "ttgir": "mlir", "llir": "llvm", "ptx": "ptx", "sass": "sass"}


class IRDiff:
    """Stage `stage` of two compiled kernels: HTML side by side, text as a unified diff."""

    def __init__(self, a, b, stage: str = "ttgir", labels: tuple[str, str] | None = None):
        for ck in (a, b):
            if stage not in ck.asm or not isinstance(ck.asm[stage], str):
                have = ", ".join(s for s in ck.asm.available() if isinstance(ck.asm.get(s), str))
                raise ValueError(f"{ck.name} (target {ck.metadata.target}) has no {stage} text; it has "
                                 f"{have}. Compile both for a GPU target (target='sm_90') to compare TTGIR")  # fmt: skip
        self.stage = stage
        self.before, self.after = a.asm[stage], b.asm[stage]
        self.labels = labels or (_label(a), _label(b))

    @property
    def changed_lines(self) -> list[tuple[str, str]]:
        """(line of a, line of b) for each changed line pair ("" where one side has none)."""
        from kernellab.lab.viewer.passes import side_by_side

        rows = side_by_side(self.before.splitlines(), self.after.splitlines())
        return [(left[1] if left else "", right[1] if right else "")
                for kind, left, right in rows if kind != "equal"]  # fmt: skip

    def __str__(self) -> str:
        lines = difflib.unified_diff(self.before.splitlines(), self.after.splitlines(), *self.labels,
                                     lineterm="", n=0)  # fmt: skip
        return "\n".join(lines) or f"the two {self.stage} texts are identical"

    __repr__ = __str__

    def _repr_html_(self) -> str:
        a, b = self.labels
        head = pane_head(f"{self.stage}: {a} → {b}", diff_stats(self.before, self.after), f"{self.stage}.diff")
        if self.before == self.after:
            body = plain("div", "kl-hint", f"the two {self.stage} texts are identical")
        else:
            body = diff_table(self.before, self.after, a, b, _LANGUAGES.get(self.stage, "text"))
        return element("div", "kl-viewer", element("div", "kl-pane", head + body))


def _label(ck) -> str:
    md = ck.metadata
    attrs = md.attrs or {}
    aligned = [name for name, a in attrs.items() if a.get("tt.divisibility")]
    consts = ", ".join(f"{k}={v}" for k, v in md.constexprs.items())
    return f"{ck.name}({md.signature}; {consts}; divisible by 16: {', '.join(aligned) or 'none'})"


def diff(a, b, stage: str = "ttgir", labels: tuple[str, str] | None = None) -> IRDiff:
    """Stage `stage` (ttir, ttgir, llir, ptx) of compiled kernels `a` and `b`, side by side."""
    return IRDiff(a, b, stage, labels)


__all__ = ["IRDiff", "diff"]
