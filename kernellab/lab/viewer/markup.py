"""The viewer's markup: elements with `kl-` classes and, for pages without a stylesheet, the same
look as inline styles; highlighted code blocks with one element per line.

Every element carries its classes (the JupyterLab extension styles them from its theme-aware
stylesheet) and the inline style `STYLES` gives those classes (GitHub, VS Code and sanitized
nbconvert drop `<style>` and `<script>` but keep inline styles). `SCRIPT_STYLES` is the part of
the table the behaviour script needs for the elements and states it adds on a static page.
"""

from __future__ import annotations

import io
from html import escape

from pygments.formatters import HtmlFormatter
from pygments.token import Error, Text

from kernellab.lab.lexers import lexer_for

MONO = "ui-monospace,SFMono-Regular,Menlo,Consolas,'Liberation Mono',monospace"
SANS = "-apple-system,BlinkMacSystemFont,'Segoe UI',Helvetica,Arial,sans-serif"
FG, MUTED, BORDER, CODE_BG, ACCENT = "#1f2328", "#656d76", "#d0d7de", "#f6f8fa", "#0969da"

_CELL = f"text-align:left;padding:3px 10px 3px 0;border-bottom:1px solid {BORDER}"
_CODE_LINE = "display:block;padding:0 8px 0 0;white-space:pre"

# class → inline style on a page without the extension's stylesheet
STYLES = {
    "kl-viewer": (
        f"font-family:{SANS};font-size:13px;color:{FG};background-color:#ffffff;"
        f"border:1px solid {BORDER};border-radius:6px;padding:8px 10px;margin:4px 0;max-width:100%"
    ),
    "kl-header": "font-size:14px;display:flex;flex-wrap:wrap;align-items:baseline;gap:8px",
    "kl-name": f"font-family:{MONO};font-weight:600",
    "kl-signature": f"font-family:{MONO};color:{MUTED}",
    "kl-badge": "padding:0 6px;border-radius:8px;font-size:11px;background-color:#eaeef2",
    "kl-cache-hit": "background-color:#dafbe1",
    "kl-hint": f"color:{MUTED};font-size:12px",
    "kl-note": (
        "background-color:#fff8c5;border:1px solid #d4a72c;border-radius:4px;padding:4px 8px;"
        f"margin:6px 0;color:{FG}"
    ),
    "kl-panel": "margin:4px 0",
    "kl-panel-heading": f"font-weight:600;font-size:13px;margin:10px 0 4px 0;color:{FG}",
    "kl-split": "display:flex;gap:8px;align-items:flex-start",
    "kl-pane": f"flex:1 1 0;min-width:0;border:1px solid {BORDER};border-radius:4px",
    "kl-pane-head": (
        f"display:flex;flex-wrap:wrap;align-items:center;gap:8px;padding:2px 6px;"
        f"background-color:{CODE_BG};border-bottom:1px solid {BORDER}"
    ),
    "kl-pane-title": "font-weight:600",
    "kl-code": (
        f"font-family:{MONO};font-size:12px;line-height:1.45;background-color:{CODE_BG};"
        f"color:{FG};margin:0;padding:4px 0;max-height:32em;overflow:auto;position:relative;"
        "white-space:pre"
    ),
    "kl-line": _CODE_LINE,
    "kl-ln": (
        f"display:inline-block;width:3.2em;padding-right:0.8em;text-align:right;color:{MUTED};"
        "user-select:none"
    ),
    "kl-srcref": (
        "display:inline-block;width:3.4em;padding-right:0.6em;text-align:right;color:#9a6700;"
        "user-select:none"
    ),
    "kl-empty": f"color:{MUTED};padding:4px 8px",
    "kl-pass": "margin:2px 0",
    "kl-pass-head": "cursor:pointer;padding:2px 0",
    "kl-pass-name": f"font-family:{MONO}",
    "kl-pass-stage": f"color:{MUTED}",
    "kl-pass-time": f"color:{MUTED}",
    "kl-pass-changed": "color:#1a7f37;font-weight:600",
    "kl-pass-body": "margin:2px 0 6px 1.5em",
    "kl-pass-why": "margin:2px 0 4px;padding:3px 6px;border-left:3px solid #9a6700;white-space:normal",
    "kl-diff-scroll": "max-height:32em;overflow:auto",
    "kl-diff": (
        f"border-collapse:collapse;font-family:{MONO};font-size:12px;line-height:1.45;width:100%;"
        "table-layout:fixed"
    ),
    "kl-diff-head": f"text-align:left;padding:2px 6px;color:{MUTED};font-weight:normal;"
    f"border-bottom:1px solid {BORDER}",
    "kl-diff-ln-col": "width:3.5em",
    "kl-diff-ln": f"width:3.5em;text-align:right;padding:0 6px;color:{MUTED};user-select:none",
    "kl-diff-code": "white-space:pre;padding:0 6px;overflow:hidden;text-overflow:ellipsis",
    "kl-removed": "background-color:#ffebe9",
    "kl-added": "background-color:#dafbe1",
    "kl-table": "border-collapse:collapse;font-size:12px;margin:2px 0",
    "kl-th": _CELL + f";color:{MUTED};font-weight:normal",
    "kl-td": _CELL,
    "kl-num": _CELL + f";text-align:right;font-family:{MONO}",
    "kl-total": "font-weight:600",
    "kl-limiting": "font-weight:600",
    "kl-bar": (
        "display:inline-block;width:10em;height:0.7em;background-color:#eaeef2;border-radius:2px;"
        "vertical-align:middle;overflow:hidden"
    ),
    "kl-bar-fill": f"display:block;height:100%;background-color:{ACCENT};border-radius:2px",
    "kl-occupancy": "margin-top:8px",
    "kl-subtitle": f"font-weight:600;margin:10px 0 4px 0;color:{FG}",
    "kl-spills": "color:#cf222e;font-weight:600",
    # added by the behaviour script
    "kl-tabbar": f"display:flex;flex-wrap:wrap;gap:2px;border-bottom:1px solid {BORDER};margin:6px 0",
    "kl-tab": (
        "font:inherit;font-size:12px;padding:3px 10px;border:1px solid transparent;"
        "border-bottom:none;border-radius:4px 4px 0 0;cursor:pointer;background:transparent;"
        f"color:{FG};margin-bottom:-1px"
    ),
    "kl-active": f"background:#ffffff;border-color:{BORDER};font-weight:600",
    "kl-tools": "display:inline-flex;gap:4px;margin-left:auto",
    "kl-button": (
        f"font:inherit;font-size:11px;padding:0 8px;border:1px solid {BORDER};border-radius:3px;"
        "background:#ffffff;cursor:pointer"
    ),
    "kl-done": "background:#dafbe1",
    "kl-pass-filter": f"display:block;color:{MUTED};margin:2px 0 4px 0",
    "kl-unfold": f"font:inherit;border:none;background:transparent;color:{MUTED};cursor:pointer",
    "kl-linked": "background-color:#fff5b1",
    "kl-hover": "background-color:#ffdf5d",
    "kl-selected": "background-color:#ddf4ff;box-shadow:inset 3px 0 0 #0969da",
}  # fmt: skip

SCRIPT_STYLES = {
    k: STYLES[k]
    for k in ("kl-tabbar", "kl-tab", "kl-active", "kl-tools", "kl-button", "kl-done",
              "kl-pass-filter", "kl-unfold", "kl-linked", "kl-hover", "kl-selected")
}  # fmt: skip


def attributes(**attrs) -> str:
    """` name="value"` for each attribute that is not None (`data_x` becomes `data-x`)."""
    return "".join(
        f' {name.rstrip("_").replace("_", "-")}="{escape(str(value))}"'
        for name, value in attrs.items()
        if value is not None
    )


def element(tag: str, classes: str, body: str = "", **attrs) -> str:
    """`<tag class="..." style="...">body</tag>`: `body` is HTML (escape text first)."""
    style = ";".join(STYLES[c] for c in classes.split() if STYLES.get(c))
    return f'<{tag} class="{classes}"{attributes(style=style or None, **attrs)}>{body}</{tag}>'


def plain(tag: str, classes: str, value, **attrs) -> str:
    """An element holding `value` as text."""
    return element(tag, classes, escape(str(value)), **attrs)


def fmt_ms(seconds: float) -> str:
    ms = seconds * 1e3
    return f"{ms:.2f} ms" if ms < 100 else f"{ms:.0f} ms"


def fmt_bytes(n: int) -> str:
    n = int(n)
    return f"{n} B" if n < 1024 else f"{n} B ({n / 1024:.1f} KiB)"


def bar(fraction: float) -> str:
    """A horizontal bar filled to `fraction` (the script sets the width where styles are
    stripped, from `data-kl-fraction`)."""
    fraction = max(0.0, min(1.0, fraction))
    fill = f'<span class="kl-bar-fill" data-kl-fraction="{fraction:.4f}" style="{STYLES["kl-bar-fill"]};width:{fraction * 100:.1f}%"></span>'
    return element("span", "kl-bar", fill)


def table(header: list[str], rows: list[tuple[str, list[str]]], numeric: tuple[int, ...] = ()) -> str:
    """A table of HTML cells; each row is (row classes, cells)."""
    head = "".join(element("th", "kl-th", h) for h in header)
    body = "".join(
        element("tr", classes or "kl-row", "".join(
            element("td", "kl-num" if i in numeric else "kl-td", cell) for i, cell in enumerate(cells)
        ))
        for classes, cells in rows
    )  # fmt: skip
    return element("table", "kl-table", f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody>")


_FORMATTER = HtmlFormatter(noclasses=True, nowrap=True, style="default")


def highlight_lines(text: str, language: str) -> list[str]:
    """The text highlighted with inline styles, one HTML string per line (no newlines)."""
    lexer = lexer_for(language)
    lines: list[list] = [[]]
    for token, value in lexer.get_tokens(text):
        if token in Error:  # a lexer gap shows as plain text, never as a red box
            token = Text
        parts = value.split("\n")
        for i, part in enumerate(parts):
            if i:
                lines.append([])
            if part:
                lines[-1].append((token, part))
    n = len(text.splitlines())
    out = []
    for tokens in lines[:n]:
        buf = io.StringIO()
        _FORMATTER.format(tokens, buf)
        out.append(buf.getvalue().rstrip("\n"))
    return out + [""] * (n - len(out))


def code_block(text: str, language: str, lines: list | None = None, numbers: list | None = None,
               show_source_refs: bool = False) -> str:  # fmt: skip
    """A <pre> of highlighted lines, one `kl-line` per line: `data-ln` its 1-based row,
    `data-src-line` the source line it came from (when known)."""
    highlighted = highlight_lines(text, language)
    if not highlighted:
        return element("div", "kl-empty", "(empty)")
    rows = []
    for i, html_line in enumerate(highlighted):
        src = lines[i] if lines is not None and i < len(lines) else None
        number = numbers[i] if numbers is not None else i + 1
        ref = ""
        if show_source_refs:
            label = f"L{int(src)}" if src is not None else ""
            title = f"source line {int(src)}" if src is not None else None
            ref = element("span", "kl-srcref", label, title=title)
        rows.append(element(
            "span", "kl-line", plain("span", "kl-ln", number) + ref + element("span", "kl-text", html_line),
            data_ln=i + 1, data_src_line=None if src is None else int(src),
        ))  # fmt: skip
    return element("pre", "kl-code", "".join(rows), data_kl_language=language)
