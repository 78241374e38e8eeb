"""The whole viewer: header, notes, one section per panel, and the behaviour script.

Without script the sections read top to bottom, each under its heading. Where script runs (a
trusted notebook, nbconvert's HTML, or the JupyterLab extension, which imports the same script),
`behaviour.js` turns the sections into tabs, puts the source beside the selected stage, links
lines, folds unchanged diff stretches and adds copy and download buttons.
"""

from __future__ import annotations

import json
import uuid
from importlib.resources import files

from kernellab.lab.viewer.markup import SCRIPT_STYLES, element, fmt_ms, plain
from kernellab.lab.viewer.passes import passes_panel
from kernellab.lab.viewer.resources import resources_panel
from kernellab.lab.viewer.stages import stage_panels
from kernellab.lab.viewer.timings import timings_panel

MARKUP_VERSION = 1  # `data-kl-viewer`: what the behaviour script and the extension expect


def _header(data: dict) -> str:
    md, t = data["metadata"], data["timings"]
    consts = ", ".join(f"{k}={v}" for k, v in md["constexprs"].items())
    signature = f"({md.get('signature') or ''}{'; ' + consts if consts else ''})"
    cache = (
        plain("span", "kl-badge kl-cache-hit", "cache hit")
        if t["cache_hit"]
        else plain("span", "kl-badge", f"compiled in {fmt_ms(t['total'])}")
    )
    return element(
        "div", "kl-header",
        plain("span", "kl-name", data["name"]) + plain("span", "kl-signature", signature)
        + plain("span", "kl-badge kl-target", data["target"]) + plain("span", "kl-badge", f"{md['num_warps']} warps")
        + cache + plain("span", "kl-hint", "hover or click a line to see where it came from and what it became"),
    )  # fmt: skip


def _section(key: str, title: str, body: str) -> str:
    heading = plain("div", "kl-panel-heading", title, data_kl_heading="1")
    return element("section", "kl-panel", heading + body, data_kl_panel=key, data_kl_title=title)


def panels(data: dict) -> str:
    """The viewer's markup without the script: what the JupyterLab extension displays."""
    sections = [_section(key, title, body) for key, title, body in stage_panels(data)]
    sections.append(_section("passes", f"Passes ({len(data['passes'])})", passes_panel(data)))
    sections.append(_section("resources", "Resources", resources_panel(data)))
    sections.append(_section("timings", "Timings", timings_panel(data)))
    notes = "".join(plain("div", "kl-note", n) for n in data["notes"])
    return _header(data) + notes + "".join(sections)


def behaviour_script() -> str:
    """behaviour.js as a classic script: its exported functions become local ones."""
    source = files("kernellab.lab.viewer").joinpath("behaviour.js").read_text(encoding="utf-8")
    script = source.replace("\nexport function ", "\nfunction ")
    assert "export " not in script, "behaviour.js exports functions only"
    return script


def render(data: dict) -> str:
    """The text/html of the viewer for a compile+json payload (see bundle.compile_data)."""
    viewer_id = "kl-" + uuid.uuid4().hex[:12]
    root = element("div", "kl-viewer", panels(data), id=viewer_id, data_kl_viewer=MARKUP_VERSION)
    options = json.dumps({"styles": SCRIPT_STYLES})
    script = (
        f"(function(){{\n{behaviour_script()}\n"
        f"attachViewer(document.getElementById({json.dumps(viewer_id)}), {options});\n}})();"
    )
    return root + "<script>" + script.replace("</", "<\\/") + "</script>"


__all__ = ["MARKUP_VERSION", "behaviour_script", "panels", "render"]
