"""The compiled-kernel viewer as one self-contained piece of HTML.

Everything is styled inline (Pygments' `HtmlFormatter(noclasses=True)` for the code), so the
output keeps its colours where `<style>` and `<script>` are stripped: untrusted notebooks,
GitHub, VS Code without extensions, sanitized nbconvert. Without script the viewer reads as
stacked sections, each with its heading: Source, TTIR, ..., Passes, Resources, Timings. A small
inline script, where it may run, turns the sections into tabs and links lines: every code line
carries `data-src-line` (the kernel source line it came from), and hovering or clicking a line
highlights that source line and every IR line made from it, in every stage.
"""

from __future__ import annotations

import difflib
import io
import uuid
from html import escape

from pygments.formatters import HtmlFormatter
from pygments.token import Error, Text

from kernellab.lab.lexers import lexer_for

MONO = "ui-monospace,SFMono-Regular,Menlo,Consolas,'Liberation Mono',monospace"
SANS = "-apple-system,BlinkMacSystemFont,'Segoe UI',Helvetica,Arial,sans-serif"
FG, MUTED, BORDER, CODE_BG, ACCENT = "#1f2328", "#656d76", "#d0d7de", "#f6f8fa", "#0969da"

_FORMATTER = HtmlFormatter(noclasses=True, nowrap=True, style="default")

S_ROOT = (
    f"font-family:{SANS};font-size:13px;color:{FG};background-color:#ffffff;"
    f"border:1px solid {BORDER};border-radius:6px;padding:8px 10px;margin:4px 0;max-width:100%"
)
S_HEADING = f"font-weight:600;font-size:13px;margin:10px 0 4px 0;color:{FG}"
S_PRE = (
    f"font-family:{MONO};font-size:12px;line-height:1.45;background-color:{CODE_BG};color:{FG};"
    f"border:1px solid {BORDER};border-radius:4px;margin:0;padding:4px 0;max-height:32em;"
    "overflow:auto;position:relative;white-space:pre"
)
S_LINE = "display:block;padding:0 8px 0 0;white-space:pre"
S_GUTTER = (
    f"display:inline-block;width:3.2em;padding-right:0.8em;text-align:right;color:{MUTED};"
    "user-select:none"
)
S_SRCREF = "display:inline-block;width:3.4em;padding-right:0.6em;text-align:right;color:#9a6700;user-select:none"
S_TABLE = "border-collapse:collapse;font-size:12px;margin:2px 0"
S_TH = f"text-align:left;padding:3px 10px 3px 0;color:{MUTED};font-weight:normal;border-bottom:1px solid {BORDER}"
S_TD = f"text-align:left;padding:3px 10px 3px 0;border-bottom:1px solid {BORDER}"
S_TDR = (
    f"text-align:right;padding:3px 10px 3px 0;border-bottom:1px solid {BORDER};font-family:{MONO}"
)
S_NOTE = (
    "background-color:#fff8c5;border:1px solid #d4a72c;border-radius:4px;padding:4px 8px;"
    f"margin:6px 0;color:{FG}"
)
S_MUTED = f"color:{MUTED}"


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
    """A <pre> of highlighted lines; each line a block span with `data-src-line` when mapped."""
    highlighted = highlight_lines(text, language)
    rows = []
    for i, html_line in enumerate(highlighted):
        src = lines[i] if lines is not None and i < len(lines) else None
        number = numbers[i] if numbers is not None else i + 1
        attrs = f' data-ln="{i + 1}"' + (f' data-src-line="{int(src)}"' if src is not None else "")
        ref = ""
        if show_source_refs:
            label = f"L{int(src)}" if src is not None else ""
            title = f' title="source line {int(src)}"' if src is not None else ""
            ref = f'<span style="{S_SRCREF}"{title}>{label}</span>'
        rows.append(
            f'<span style="{S_LINE}"{attrs}><span style="{S_GUTTER}">{number}</span>{ref}{html_line}</span>'
        )
    return f'<pre style="{S_PRE}">' + "".join(rows) + "</pre>"


def _section(key: str, title: str, subtitle: str, body: str) -> str:
    sub = (
        f' <span style="{S_MUTED};font-weight:normal">· {escape(subtitle)}</span>'
        if subtitle
        else ""
    )
    return (
        f'<div data-kl-panel="{escape(key)}" data-kl-title="{escape(title)}" style="margin:4px 0">'
        f'<div data-kl-heading="1" style="{S_HEADING}">{escape(title)}{sub}</div>{body}</div>'
    )


def _fmt_ms(seconds: float) -> str:
    ms = seconds * 1e3
    return f"{ms:.2f} ms" if ms < 100 else f"{ms:.0f} ms"


def _fmt_bytes(n) -> str:
    if n is None:
        return "—"
    n = int(n)
    return f"{n} B" if n < 1024 else f"{n} B ({n / 1024:.1f} KiB)"


def _bar(fraction: float, color: str = ACCENT, width_em: float = 10) -> str:
    fraction = max(0.0, min(1.0, fraction))
    return (
        f'<span style="display:inline-block;width:{width_em}em;height:0.7em;background-color:#eaeef2;'
        f'border-radius:2px;vertical-align:middle"><span style="display:block;width:{fraction * 100:.1f}%;'
        f'height:100%;background-color:{color};border-radius:2px"></span></span>'
    )


def _table(header: list[str], rows: list[list[str]], right: tuple[int, ...] = ()) -> str:
    head = "".join(f'<th style="{S_TH}">{h}</th>' for h in header)
    body = "".join(
        "<tr>"
        + "".join(
            f'<td style="{S_TDR if i in right else S_TD}">{c}</td>' for i, c in enumerate(row)
        )
        + "</tr>"
        for row in rows
    )
    return f'<table style="{S_TABLE}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def _passes_panel(data: dict) -> str:
    passes = data["passes"]
    if not passes:
        return f'<div style="{S_MUTED}">No passes were recorded.</div>'
    items = []
    previous_ir, previous_name = None, None
    first_changed = next((i for i, p in enumerate(passes, start=1) if p["changed"]), 0)
    for i, p in enumerate(passes, start=1):
        ir = p["ir"]
        state = (
            '<span style="color:#1a7f37;font-weight:600">changed</span>' if p["changed"]
            else f'<span style="{S_MUTED}">no change</span>'
        )  # fmt: skip
        summary = (
            f" · {escape(p['summary'])}" if p["summary"] and p["summary"] != "no change" else ""
        )
        head = (
            f'<summary style="cursor:pointer;padding:2px 0"><span style="font-family:{MONO}">'
            f'{i:>2}. {escape(p["name"])}</span> <span style="{S_MUTED}">[{escape(p["stage"])}]</span> '
            f'{state} <span style="{S_MUTED}">· {_fmt_ms(p["seconds"])}{escape(summary)}</span></summary>'
        )
        parts = []
        if not ir:
            parts.append(f'<div style="{S_MUTED}">IR not recorded (tracing was off).</div>')
        elif previous_ir is not None and ir == previous_ir:
            parts.append(
                f'<div style="{S_MUTED};margin:2px 0 6px 1.5em">IR unchanged (same as after {escape(previous_name)}).</div>'
            )
        else:
            if previous_ir is not None:
                diff = "\n".join(difflib.unified_diff(
                    previous_ir.splitlines(), ir.splitlines(),
                    f"after {previous_name}", f"after {p['name']}", lineterm="", n=2,
                ))  # fmt: skip
                parts.append(
                    f'<div style="{S_MUTED};margin:4px 0 2px 0">Diff against the previous pass</div>'
                )
                parts.append(code_block(diff, "diff"))
            language = (
                "mlir"
                if p["stage"] in ("ttir", "ttgir")
                else {"llir": "llvm", "ptx": "ptx"}.get(p["stage"], "text")
            )
            parts.append(
                f'<details style="margin:4px 0 6px 0"><summary style="cursor:pointer;{S_MUTED}">'
                f"IR after {escape(p['name'])}</summary>{code_block(ir, language)}</details>"
            )
        if ir:
            previous_ir, previous_name = ir, p["name"]
        open_attr = " open" if i == first_changed else ""
        body = "".join(parts)
        items.append(
            f'<details{open_attr} style="margin:2px 0">{head}<div style="margin-left:1.5em">{body}</div></details>'
        )
    total = sum(p["seconds"] for p in passes)
    changed = sum(p["changed"] for p in passes)
    intro = (
        f'<div style="{S_MUTED};margin-bottom:4px">{len(passes)} passes, {changed} changed the IR, '
        f"{_fmt_ms(total)} in all. Open a pass for its diff against the pass before it and the IR after it.</div>"
    )
    return intro + "".join(items)


def _resources_panel(data: dict) -> str:
    md = data["metadata"]
    rows = []
    unknown = f'<span style="{S_MUTED}">— (known once the cubin is built)</span>'
    reg = md.get("registers")
    rows.append(["Registers per thread", escape(str(reg)) if reg is not None else unknown])
    spills = md.get("spills")
    spill_text = unknown if spills is None else (
        f'<span style="color:#cf222e;font-weight:600">{escape(str(spills))}</span>' if spills else "0"
    )  # fmt: skip
    rows.append(["Spills", spill_text])
    rows.append(
        ["Shared memory", _fmt_bytes(md.get("shared")) if md.get("shared") is not None else unknown]
    )
    rows.append(["Threads per block", f"{md['threads_per_block']} ({md['num_warps']} warps)"])
    if md.get("num_stages") is not None:
        rows.append(["Pipeline stages", str(md["num_stages"])])
    html = _table(["", ""], rows)
    occ = md.get("occupancy")
    if occ:
        bound = (
            ""
            if occ["registers_known"]
            else " (an upper bound: the register count is not known yet)"
        )
        limits = ", ".join(f"{k}: {v} blocks" for k, v in occ["limits"].items())
        html += (
            f'<div style="{S_HEADING}">Occupancy estimate on {escape(occ["device"])}</div>'
            f"<div>{_bar(occ['occupancy'])} <b>{occ['occupancy']:.0%}</b> — {occ['warps_per_sm']} of "
            f"{occ['max_warps_per_sm']} warps per SM ({occ['blocks_per_sm']} blocks), limited by "
            f"<b>{escape(occ['limited_by'])}</b>{escape(bound)}.</div>"
            f'<div style="{S_MUTED};margin-top:2px">Blocks per SM allowed by each limit: {escape(limits)}.</div>'
        )
    elif md.get("target") == "interpreter":
        html += (
            f'<div style="{S_MUTED};margin-top:4px">Registers, spills, shared memory and occupancy come '
            "from a GPU target (sm_80, sm_90); this kernel was compiled for the interpreter.</div>"
        )
    return html


def _timings_panel(data: dict) -> str:
    t = data["timings"]
    stages = t["stages"]
    if not stages:
        return f'<div style="{S_MUTED}">No stage timings were recorded.</div>'
    longest = max(stages.values()) or 1.0
    rows = [[escape(k), _fmt_ms(v), _bar(v / longest)] for k, v in stages.items()]
    rows.append(["<b>total</b>", f"<b>{_fmt_ms(t['total'])}</b>", ""])
    hit = (
        '<span style="color:#1a7f37;font-weight:600">cache hit</span>: compiled earlier, reused'
        if t["cache_hit"] else "cache miss: compiled now"
    )  # fmt: skip
    return (
        _table(["stage", "time", ""], rows, right=(1,))
        + f'<div style="margin-top:4px">{hit}.</div>'
    )


_SCRIPT = """(function(){
var root=document.getElementById("%(id)s");
if(!root||root.getAttribute("data-kl-ready"))return;
root.setAttribute("data-kl-ready","1");
var each=function(list,f){Array.prototype.forEach.call(list,f);};
var panels=Array.prototype.slice.call(root.querySelectorAll("[data-kl-panel]"));
if(!panels.length)return;
var bar=document.createElement("div");
bar.setAttribute("role","tablist");
bar.style.cssText="display:flex;flex-wrap:wrap;gap:2px;border-bottom:1px solid %(border)s;margin:6px 0 6px 0";
var buttons=panels.map(function(p,i){
  var b=document.createElement("button");
  b.type="button";b.textContent=p.getAttribute("data-kl-title");
  b.style.cssText="font:inherit;font-size:12px;padding:3px 10px;border:1px solid transparent;border-bottom:none;border-radius:4px 4px 0 0;cursor:pointer;background:transparent;color:%(fg)s;margin-bottom:-1px";
  b.onclick=function(){select(i);};
  bar.appendChild(b);
  var h=p.querySelector("[data-kl-heading]");if(h)h.style.display="none";
  return b;
});
panels[0].parentNode.insertBefore(bar,panels[0]);
var current=0;
function select(i){
  current=i;
  panels.forEach(function(p,j){p.style.display=j===i?"":"none";
    var b=buttons[j];b.style.background=j===i?"#ffffff":"transparent";
    b.style.borderColor=j===i?"%(border)s":"transparent";b.style.fontWeight=j===i?"600":"normal";});
  reveal(panels[i]);
}
var hover=null,pinned=null,painted=[];
function paint(){
  painted.forEach(function(e){e.style.backgroundColor="";});painted=[];
  [[hover,"#fff5b1"],[pinned,"#ffdf5d"]].forEach(function(pair){
    if(pair[0]===null)return;
    each(root.querySelectorAll('[data-src-line="'+pair[0]+'"]'),function(e){e.style.backgroundColor=pair[1];painted.push(e);});
  });
}
function reveal(panel){
  if(pinned===null)return;
  each(panel.querySelectorAll("pre"),function(pre){
    var e=pre.querySelector('[data-src-line="'+pinned+'"]');
    if(e&&(e.offsetTop<pre.scrollTop||e.offsetTop>pre.scrollTop+pre.clientHeight-20))
      pre.scrollTop=Math.max(0,e.offsetTop-pre.clientHeight/3);
  });
}
function lineOf(ev){var t=ev.target;while(t&&t!==root){if(t.getAttribute&&t.getAttribute("data-src-line"))return t;t=t.parentNode;}return null;}
root.addEventListener("mouseover",function(ev){var l=lineOf(ev);var v=l?l.getAttribute("data-src-line"):null;if(v!==hover){hover=v;paint();}});
root.addEventListener("mouseleave",function(){hover=null;paint();});
root.addEventListener("click",function(ev){var l=lineOf(ev);if(!l)return;var v=l.getAttribute("data-src-line");
  pinned=pinned===v?null:v;paint();panels.forEach(function(p){if(!p.contains(l))reveal(p);});});
select(0);
})();"""


def render(data: dict) -> str:
    """The text/html of the viewer for a compile+json payload (see bundle.compile_data)."""
    viewer_id = "kl-" + uuid.uuid4().hex[:12]
    md = data["metadata"]
    consts = ", ".join(f"{escape(str(k))}={escape(str(v))}" for k, v in md["constexprs"].items())
    signature = escape(str(md.get("signature") or ""))
    head = (
        f'<div style="font-size:14px"><span style="font-family:{MONO};font-weight:600">{escape(data["name"])}</span>'
        f'<span style="font-family:{MONO};{S_MUTED}">({signature}{"; " + consts if consts else ""})</span></div>'
        f'<div style="{S_MUTED};margin-top:2px">target <b>{escape(str(data["target"]))}</b> · '
        f"{md['num_warps']} warps · compiled in {_fmt_ms(data['timings']['total'])}"
        f"{' (cache hit)' if data['timings']['cache_hit'] else ''} · "
        f"hover or click a line to see where it came from and what it became</div>"
    )
    notes = "".join(f'<div style="{S_NOTE}">{escape(n)}</div>' for n in data["notes"])
    sections = []
    for stage in data["stages"]:
        n = len(stage["lines"])
        if stage["name"] == "source":
            subtitle = f"{data['source'].get('filename') or ''}"
            body = code_block(stage["text"], "python", stage["lines"], numbers=stage["lines"])
        else:
            mapped = sum(1 for v in stage["lines"] if v is not None)
            subtitle = f"{n} lines" + (
                f", {mapped} mapped to source lines" if mapped else ", no source locations"
            )
            body = code_block(
                stage["text"], stage["language"], stage["lines"], show_source_refs=bool(mapped)
            )
        sections.append(_section(stage["name"], stage["title"], subtitle, body))
    sections.append(
        _section("passes", "Passes", f"{len(data['passes'])} passes", _passes_panel(data))
    )
    sections.append(_section("resources", "Resources", "", _resources_panel(data)))
    sections.append(_section("timings", "Timings", "", _timings_panel(data)))
    script = _SCRIPT % {"id": viewer_id, "border": BORDER, "fg": FG}
    return (
        f'<div id="{viewer_id}" class="kernellab-viewer" style="{S_ROOT}">'
        f"{head}{notes}{''.join(sections)}</div><script>{script}</script>"
    )


__all__ = ["code_block", "highlight_lines", "render"]
