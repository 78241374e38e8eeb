"""One kernel compiled for three targets, side by side: for each line of its source, the machine
instructions it became on an NVIDIA GPU (PTX), this CPU (x86-64/AArch64 assembly) and an AMD
GPU (AMDGCN). The same `tl.load` reads as `ld.global.v4.b32`, `vmovups` and
`global_load_dwordx4`: one TTGIR, one lowering core, three back ends.

    kl.lab.compare_targets(add_kernel, signature="*fp32,*fp32,*fp32,i32",
                           constexprs={"BLOCK_SIZE": 1024}, attrs=...)

Every instruction is mapped to its source line through the `.loc` directives LLVM writes
from the lowering's debug locations (lab/line_maps.py). The result shows as static HTML in a
notebook (it needs no JavaScript) and holds the data (`.rows`) for other uses.
"""

from __future__ import annotations

import html
import inspect
from dataclasses import dataclass, field

from kernellab.lab.line_maps import ptx_lines

# target → (title, the stage holding its assembly)
TARGETS = {
    "sm_90": ("NVIDIA sm_90 (PTX)", "ptx"),
    "cpu": ("this CPU (assembly)", "asm"),
    "gfx942": ("AMD gfx942 (AMDGCN)", "amdgcn"),
}


@dataclass
class TargetComparison:
    """For each source line that produced code: the instructions per target, in order."""

    source: list[tuple[int, str]]  # (line number, text) of the kernel
    targets: list[str]
    titles: list[str]
    rows: list[tuple[int, str, list[list[str]]]] = field(default_factory=list)  # (line, text, per target)
    limit: int = 8  # instructions shown per cell

    def _cell(self, instructions: list[str]) -> str:
        shown = instructions[: self.limit]
        more = len(instructions) - len(shown)
        body = "\n".join(html.escape(i) for i in shown)
        if more > 0:
            body += f"\n… {more} more"
        return f'<td style="vertical-align:top"><pre style="margin:0;font-size:11px">{body}</pre></td>'

    def to_html(self) -> str:
        head = "".join(f"<th>{html.escape(t)}</th>" for t in ["line", "source", *self.titles])
        rows = []
        for line, text, cells in self.rows:
            src = f'<td style="vertical-align:top"><pre style="margin:0;font-size:11px">{html.escape(text.strip())}</pre></td>'
            rows.append(f"<tr><td style=\"vertical-align:top\">{line}</td>{src}{''.join(self._cell(c) for c in cells)}</tr>")
        return (
            '<table class="kl-compare-targets" style="border-collapse:collapse;text-align:left">'
            f"<thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
        )

    def _repr_html_(self) -> str:
        return self.to_html()

    def instructions(self, line: int) -> dict[str, list[str]]:
        """{target: instructions} of one source line."""
        for number, _, cells in self.rows:
            if number == line:
                return dict(zip(self.targets, cells))
        return {t: [] for t in self.targets}


def _instruction(text: str) -> bool:
    s = text.strip()
    return bool(s) and not s.startswith(("//", ".", "#", ";", "{", "}")) and not s.endswith(":")


def compare_targets(fn, signature, constexprs=None, attrs=None, targets=tuple(TARGETS), **options) -> TargetComparison:
    """Compile `fn` for each of `targets` (default sm_90, cpu, gfx942; none needs its device)
    and line its assembly up by source line."""
    import kernellab as kl

    unknown = [t for t in targets if t not in TARGETS]
    if unknown:
        raise ValueError(f"compare_targets shows {', '.join(TARGETS)}; not {', '.join(unknown)}")
    py = getattr(fn, "fn", fn)
    lines, first = inspect.getsourcelines(py)
    filename = getattr(fn, "filename", None) or inspect.getsourcefile(py)
    per_target = []
    for target in targets:
        ck = kl.compile(fn, signature=signature, constexprs=constexprs, attrs=attrs, target=target, **options)
        text = ck.asm[TARGETS[target][1]]
        by_line: dict[int, list[str]] = {}
        for asm_line, src in zip(text.splitlines(), ptx_lines(text, filename)):
            if src is not None and _instruction(asm_line):
                by_line.setdefault(src, []).append(" ".join(asm_line.split()))
        per_target.append(by_line)
    source = [(first + i, text.rstrip("\n")) for i, text in enumerate(lines)]
    result = TargetComparison(source, list(targets), [TARGETS[t][0] for t in targets])
    for number, text in source:
        cells = [m.get(number, []) for m in per_target]
        if any(cells):
            result.rows.append((number, text, cells))
    return result


__all__ = ["compare_targets", "TargetComparison", "TARGETS"]
