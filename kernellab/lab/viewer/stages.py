"""The source panel and one panel per stage: the stage's text beside the source, every line
marked with the source line it came from (the behaviour script links them both ways)."""

from __future__ import annotations

from kernellab.lab.viewer.markup import code_block, element, plain

_FILE_EXTENSIONS = {"source": "py", "ttir": "ttir", "ttgir": "ttgir", "llir": "ll", "ptx": "ptx", "sass": "sass"}  # fmt: skip


def pane_head(title: str, hint: str, filename: str) -> str:
    """A pane's title line; `data-kl-filename` asks the script for copy and download buttons."""
    return element(
        "div", "kl-pane-head",
        plain("span", "kl-pane-title", title) + (plain("span", "kl-hint", hint) if hint else ""),
        data_kl_filename=filename,
    )  # fmt: skip


def source_pane(data: dict, stage: dict) -> str:
    filename = data["source"].get("filename")
    title = f"Source · {filename}" if filename else "Source"
    code = code_block(stage["text"], "python", stage["lines"], numbers=stage["lines"])
    head = pane_head(title, "", f"{data['name']}.py")
    return element("div", "kl-pane kl-pane-source", head + code)


def stage_pane(data: dict, stage: dict) -> str:
    mapped = sum(1 for v in stage["lines"] if v is not None)
    hint = (
        f"{len(stage['lines'])} lines, {mapped} mapped to source lines: hover a line to see where "
        "it came from, click to pin it"
        if mapped
        else f"{len(stage['lines'])} lines; this stage carries no source line information"
    )
    filename = f"{data['name']}.{_FILE_EXTENSIONS.get(stage['name'], 'txt')}"
    code = code_block(stage["text"], stage["language"], stage["lines"], show_source_refs=bool(mapped))
    return element("div", "kl-pane kl-pane-ir", pane_head(stage["title"], hint, filename) + code)


def stage_panels(data: dict) -> list[tuple[str, str, str]]:
    """(key, title, body) per stage, the source first; the script moves the source pane beside
    the selected stage."""
    panels = []
    for stage in data["stages"]:
        if stage["name"] == "source":
            panels.append(("source", "Source", source_pane(data, stage)))
        else:
            body = element("div", "kl-split", stage_pane(data, stage))
            panels.append((stage["name"], stage["title"], body))
    return panels
