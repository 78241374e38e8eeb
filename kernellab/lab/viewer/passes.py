"""The passes panel: one collapsible entry per pass, with the IR before and after it side by
side (unchanged stretches folded by the behaviour script; all shown where no script runs)."""

from __future__ import annotations

import difflib
from html import escape

from kernellab.lab.viewer.markup import code_block, element, fmt_ms, plain
from kernellab.lab.viewer.stages import pane_head

_PASS_LANGUAGES = {"ttir": "mlir", "ttgir": "mlir", "llir": "llvm", "ptx": "ptx"}
_FILE_EXTENSIONS = {"ttir": "ttir", "ttgir": "ttgir", "llir": "ll", "ptx": "ptx"}

# (kind, left, right): kind is equal, change, delete or insert; a side is (0-based index, text)
Row = tuple[str, "tuple[int, str] | None", "tuple[int, str] | None"]


def side_by_side(before: list[str], after: list[str]) -> list[Row]:
    """The two texts in two columns: equal lines side by side; within a changed stretch the k-th
    removed line beside the k-th added line, the rest beside an empty side."""
    rows: list[Row] = []
    matcher = difflib.SequenceMatcher(None, before, after)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            rows += [("equal", (i, before[i]), (j, after[j])) for i, j in zip(range(i1, i2), range(j1, j2))]
            continue
        for k in range(max(i2 - i1, j2 - j1)):
            left = (i1 + k, before[i1 + k]) if i1 + k < i2 else None
            right = (j1 + k, after[j1 + k]) if j1 + k < j2 else None
            rows.append(("change" if left and right else "delete" if left else "insert", left, right))
    return rows


def fold_unchanged(rows: list[Row], context: int = 3, min_fold: int = 4) -> list[tuple[bool, list[Row]]]:
    """(folded, rows) stretches: runs of equal rows longer than `context` rows on each side of a
    change plus `min_fold` are folded, keeping the context next to the changes."""
    out: list[tuple[bool, list[Row]]] = []

    def push(folded: bool, stretch: list[Row]) -> None:
        if not stretch:
            return
        if out and out[-1][0] == folded:
            out[-1][1].extend(stretch)
        else:
            out.append((folded, list(stretch)))

    i = 0
    while i < len(rows):
        if rows[i][0] != "equal":
            push(False, [rows[i]])
            i += 1
            continue
        j = i
        while j < len(rows) and rows[j][0] == "equal":
            j += 1
        run = rows[i:j]
        keep_before = 0 if i == 0 else context
        keep_after = 0 if j == len(rows) else context
        if len(run) - keep_before - keep_after > min_fold:
            push(False, run[:keep_before])
            push(True, run[keep_before : len(run) - keep_after])
            push(False, run[len(run) - keep_after :])
        else:
            push(False, run)
        i = j
    return out


def _side(side, column: str, changed_class: str, changed: bool) -> str:
    if side is None:
        return element("td", "kl-diff-ln", "") + element("td", f"kl-diff-code {column} kl-diff-blank", "")
    index, line = side
    classes = f"kl-diff-code {column}" + (f" {changed_class}" if changed else "")
    return element("td", "kl-diff-ln", str(index + 1)) + element("td", classes, escape(line), data_ln=index + 1)


def _row(row: Row) -> str:
    kind, left, right = row
    cells = _side(left, "kl-left", "kl-removed", kind != "equal") + _side(
        right, "kl-right", "kl-added", kind != "equal"
    )
    return element("tr", f"kl-diff-row kl-diff-{kind}", cells)


def diff_table(before: str, after: str, before_name: str, after_name: str, language: str) -> str:
    rows = side_by_side(before.splitlines(), after.splitlines())
    head = (
        element("th", "kl-diff-head", escape(f"before (after {before_name})"), colspan=2)
        + element("th", "kl-diff-head", escape(f"after {after_name}"), colspan=2)
    )
    bodies = "".join(
        element("tbody", "kl-diff-fold" if folded else "kl-diff-rows", "".join(map(_row, stretch)),
                data_kl_fold=len(stretch) if folded else None)
        for folded, stretch in fold_unchanged(rows)
    )  # fmt: skip
    columns = "<colgroup>" + 2 * (element("col", "kl-diff-ln-col") + "<col>") + "</colgroup>"
    table = element(
        "table", "kl-diff", f"{columns}<thead><tr>{head}</tr></thead>{bodies}", data_kl_language=language
    )
    return element("div", "kl-diff-scroll", table)


def diff_stats(before: str, after: str) -> str:
    ops = difflib.SequenceMatcher(None, before.splitlines(), after.splitlines()).get_opcodes()
    added = sum(j2 - j1 for tag, _, _, j1, j2 in ops if tag != "equal")
    removed = sum(i2 - i1 for tag, i1, i2, _, _ in ops if tag != "equal")
    return f"+{added} −{removed}"


def _pass_body(data: dict, i: int, p: dict, previous: tuple[str, str] | None) -> str:
    ir, language = p["ir"], _PASS_LANGUAGES.get(p["stage"], "text")
    filename = f"{data['name']}.{i}-{p['name']}.{_FILE_EXTENSIONS.get(p['stage'], 'txt')}"
    if not ir:
        return plain("div", "kl-hint", "IR not recorded (tracing was off).")
    if previous is None:
        head = pane_head(f"IR after {p['name']}", "first pass: the IR before it is not recorded", filename)
        return head + code_block(ir, language)
    previous_name, previous_ir = previous
    if ir == previous_ir:
        return plain("div", "kl-hint", f"IR unchanged (same as after {previous_name}).")
    head = pane_head(f"{previous_name} → {p['name']}", diff_stats(previous_ir, ir), filename)
    return head + diff_table(previous_ir, ir, previous_name, p["name"], language)


def passes_panel(data: dict) -> str:
    passes = data["passes"]
    if not passes:
        return plain("div", "kl-hint", "No passes were recorded.")
    total = sum(p["seconds"] for p in passes)
    changed = sum(p["changed"] for p in passes)
    intro = plain(
        "div", "kl-hint",
        f"{len(passes)} passes, {changed} changed the IR, {fmt_ms(total)} in all. Open a pass for "
        "the IR before and after it, side by side.",
    )  # fmt: skip
    first_changed = next((i for i, p in enumerate(passes) if p["changed"]), 0)
    items, previous = [], None
    for i, p in enumerate(passes):
        state = (
            plain("span", "kl-pass-changed", "changed") if p["changed"] else plain("span", "kl-hint", "no change")
        )
        summary = f" · {p['summary']}" if p["summary"] and p["summary"] != "no change" else ""
        if p.get("why"):
            summary += " · why: the analysis facts below"
        head = element(
            "summary", "kl-pass-head",
            plain("span", "kl-pass-mark", "●" if p["changed"] else "○") + " "
            + plain("span", "kl-pass-name", f"{i + 1:>2}. {p['name']}") + " "
            + plain("span", "kl-pass-stage", f"[{p['stage']}]") + f" {state} "
            + plain("span", "kl-pass-time", f"· {fmt_ms(p['seconds'])}{summary}"),
            title=p["summary"] or None,
        )  # fmt: skip
        why = plain("div", "kl-pass-why", f"Why no change: {p['why']}.") if p.get("why") else ""
        body = element("div", "kl-pass-body", why + _pass_body(data, i, p, previous))
        kind = "kl-changed" if p["changed"] else "kl-unchanged"
        items.append(element("details", f"kl-pass {kind}", head + body, data_index=i,
                             open="" if i == first_changed else None))  # fmt: skip
        if p["ir"]:
            previous = (p["name"], p["ir"])
    return intro + element("div", "kl-passes", "".join(items))
