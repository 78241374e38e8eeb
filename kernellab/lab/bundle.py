"""The compiled-kernel viewer's data: one MIME bundle per CompiledKernel.

    application/vnd.kernellab.compile+json   stages, per-line source lines, passes, metadata,
                                             timings (schema: SCHEMA.md, versioned)
    text/html                                the viewer's panels (kernellab.lab.viewer)
    text/plain                               a summary and the TTIR

`compile_data` builds the JSON payload, the one description of a compiled kernel that every
renderer reads; `build_bundle` adds the HTML and the text rendered from it.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field

from kernellab.lab.line_maps import SourceLines
from kernellab.lab.pass_reasons import why_unchanged
from kernellab.lab.kernel_resources import resources

SCHEMA_VERSION = 1
MIME = "application/vnd.kernellab.compile+json"

# Stage name → language of its text (what the lexers and the JupyterLab extension key on).
STAGE_LANGUAGES = {
    "source": "python",
    "ttir": "mlir",
    "ttgir": "mlir",
    "llir": "llvm",
    "ptx": "ptx",
    "sass": "sass",
    "asm": "asm",  # the CPU's x86-64/AArch64 assembly
    "amdgcn": "asm",  # AMD's
}
STAGE_TITLES = {
    "source": "Source", "ttir": "TTIR", "ttgir": "TTGIR", "llir": "LLIR", "ptx": "PTX",
    "sass": "SASS", "asm": "ASM", "amdgcn": "AMDGCN",
}  # fmt: skip
IR_STAGES = ("ttir", "ttgir", "llir", "ptx", "sass", "asm", "amdgcn")


@dataclass
class ViewInput:
    """What the viewer shows: the compiled kernel and what is known around it."""

    ck: object
    fn: object = None  # the KernelFunction, when known (source text, TTIR line mapping)
    notes: list[str] = field(default_factory=list)
    cache_hit: bool | None = None
    source: tuple[str, str, int] | None = None  # (text, filename, first line) override
    stages: list[str] | None = None  # stage tabs to show (None: every stage present)

    def __post_init__(self):
        if self.fn is None:  # a CompiledKernel knows the function it was compiled from
            self.fn = getattr(self.ck, "function", None)


def _jsonable(value):
    """JSON-safe copy: dict/list/str/int/float/bool/None kept; anything else by its repr."""
    if isinstance(value, (str, bool)) or value is None:
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if hasattr(value, "item") and not hasattr(value, "__len__"):  # numpy scalars
        return _jsonable(value.item())
    return repr(value)


def _source_of(view: ViewInput) -> tuple[str, str | None, int]:
    if view.source is not None:
        return view.source
    fn = view.fn
    if fn is not None:
        import inspect

        try:
            lines, first = inspect.getsourcelines(getattr(fn, "fn", fn))
            return "".join(lines), getattr(fn, "filename", None), first
        except (OSError, TypeError):
            text = getattr(fn, "src", "")
            return text, getattr(fn, "filename", None), getattr(fn, "start_line", 1)
    return "", None, 1


def _pass_stage(record, previous: str) -> str:
    """The stage that ran a pass: the record's `stage` (kl.compile sets it); for records without
    one (an older disk-cache entry), read off its IR, never going back to an earlier stage."""
    stage = getattr(record, "stage", None)
    if stage:
        return stage
    from kernellab.lab.graphs import STAGES, _stage_of_pass_text

    found = _stage_of_pass_text(record.ir_after or "")
    if found is None or previous not in STAGES:
        return found or previous
    return found if STAGES.index(found) > STAGES.index(previous) else previous


def compile_data(view: ViewInput) -> dict:
    """The `application/vnd.kernellab.compile+json` payload (see SCHEMA.md)."""
    ck = view.ck
    md = ck.metadata
    src_text, filename, first_line = _source_of(view)
    notes = list(view.notes)

    source_lines = SourceLines(ck, filename)
    # stages made on demand (SASS through nvdisasm) count too: reading one makes it (None if
    # the tool is missing, and the note below says what to install)
    names = ck.asm.available() if hasattr(ck.asm, "available") else list(ck.asm)
    available = [s for s in names if s in STAGE_LANGUAGES and isinstance(ck.asm[s], str)]
    wanted = view.stages
    stages = []
    if wanted is None or "source" in wanted:
        n = len(src_text.splitlines())
        stages.append({
            "name": "source", "title": "Source", "language": "python", "text": src_text,
            "lines": [first_line + i for i in range(n)],
        })  # fmt: skip
    missing = {}
    for stage in IR_STAGES:
        if wanted is not None and stage not in wanted:
            continue
        if stage not in available:
            if wanted is not None or (stage == "sass" and stage in names):
                if md.get("target") == "interpreter":
                    missing[stage] = "needs the NVIDIA backend (the interpreter runs TTIR)"
                elif md.get("failed_stage"):  # a partial compile (see compile_for_view)
                    missing[stage] = f"not compiled: the {md['failed_stage']} stage failed"
                elif stage == "sass":
                    missing[stage] = (
                        "needs nvdisasm (from the CUDA toolkit or its pip wheel) on PATH"
                    )
                else:
                    missing[stage] = f"not produced for {md.get('target')}"
            continue
        text = ck.asm[stage]
        lines = source_lines.of(stage)
        stages.append({
            "name": stage, "title": STAGE_TITLES[stage], "language": STAGE_LANGUAGES[stage],
            "text": text, "lines": lines,
        })  # fmt: skip
    for stage, reason in missing.items():
        notes.append(f"{STAGE_TITLES[stage]}: {reason}.")

    passes = []
    stage, before = "ttir", ""
    for record in ck.passes:
        stage = _pass_stage(record, stage)
        why = None if record.changed else why_unchanged(record.name, before, md.get("num_stages"))
        passes.append({
            "name": record.name, "stage": stage, "ir": record.ir_after or "",
            "changed": bool(record.changed), "seconds": float(record.seconds),
            "summary": record.summary, "why": why,
        })  # fmt: skip
        before = record.ir_after or before

    times = {k: float(v) for k, v in md.times.items()}
    cache_hit = view.cache_hit if view.cache_hit is not None else bool(md.cache_hit)
    metadata = {
        "name": md.name,
        "signature": str(md.signature),
        "constexprs": md.constexprs,
        "attrs": md.attrs,
        "hash": md.hash,
        "kernellab_version": md.kernellab_version,
        **resources(ck),
    }
    extra = {
        k: v for k, v in md.items()
        if k not in metadata and k not in ("times", "cache_hit") and not isinstance(v, (bytes, bytearray))
    }  # fmt: skip
    metadata["extra"] = extra
    return _jsonable({
        "version": SCHEMA_VERSION,
        "name": ck.name,
        "target": md.target,
        "source": {"text": src_text, "filename": filename, "first_line": first_line},
        "stages": stages,
        "passes": passes,
        "metadata": metadata,
        "timings": {"stages": times, "total": sum(times.values()), "cache_hit": cache_hit},
        "notes": notes,
    })  # fmt: skip


def plain_text(data: dict) -> str:
    """text/plain: a summary, then the TTIR (what a terminal can show)."""
    md = data["metadata"]
    consts = ", ".join(f"{k}={v}" for k, v in md["constexprs"].items())
    head = f"{data['name']}({md['signature']}{'; ' + consts if consts else ''})  target={data['target']}"
    lines = [head]
    stage_names = [
        f"{s['name']} ({len(s['lines'])} lines)" for s in data["stages"] if s["name"] != "source"
    ]
    lines.append("stages: " + (", ".join(stage_names) or "none"))
    res = []
    for key, label in (
        ("registers", "registers"),
        ("spills", "spills"),
        ("shared", "shared bytes"),
    ):
        if md.get(key) is not None:
            res.append(f"{label} {md[key]}")
    res.append(f"{md['threads_per_block']} threads/block")
    occ = md.get("occupancy")
    if occ:
        res.append(
            f"occupancy ≈ {occ['occupancy']:.0%} on {occ['device']} (limited by {occ['limited_by']})"
        )
    lines.append("resources: " + ", ".join(res))
    changed = sum(p["changed"] for p in data["passes"])
    lines.append(f"passes: {len(data['passes'])} ({changed} changed the IR)")
    t = data["timings"]
    lines.append(f"compile: {t['total'] * 1e3:.1f} ms" + (" (cached)" if t["cache_hit"] else ""))
    lines.extend(f"note: {n}" for n in data["notes"])
    for stage in data["stages"]:
        if stage["name"] == "ttir":
            lines.append("")
            lines.append(stage["text"].rstrip())
    return "\n".join(lines)


def build_bundle(view: ViewInput | object, **kwargs) -> dict:
    """{MIME: json payload, "text/html": viewer, "text/plain": summary} for a compiled kernel."""
    from kernellab.lab.viewer import render

    if not isinstance(view, ViewInput):
        view = ViewInput(view, **kwargs)
    data = compile_data(view)
    json.dumps(data)  # fail here, not in the frontend, if something is not JSON
    return {MIME: data, "text/html": render(data), "text/plain": plain_text(data)}


__all__ = ["IR_STAGES", "MIME", "SCHEMA_VERSION", "STAGE_LANGUAGES", "STAGE_TITLES", "ViewInput",
           "build_bundle", "compile_data", "plain_text"]  # fmt: skip
