"""The compiled-kernel viewer's data: one MIME bundle per CompiledKernel.

    application/vnd.kernellab.compile+json   stages, per-line source lines, passes, metadata,
                                             timings (schema: SCHEMA.md, versioned)
    text/html                                self-contained viewer (kernellab.lab.html)
    text/plain                               a summary and the TTIR

Line mapping: every line of every stage's text is mapped back to the line of the kernel's
source file it came from, where the stage carries that information: TTIR/TTGIR through op
locations (the module printed with locations, line for line the same as the stage text), LLVM
IR through `!dbg !N` / `!DILocation(line: ...)` (or a `loc("file":L:C)` comment), PTX through
`.loc` directives and the `.file` table, SASS through nvdisasm's `//## File "...", line N`
comments. A stage without such information maps every line to None; nothing here fails for
want of it.

Compiling for the viewer (`compile_for_view`) tries the NVIDIA stages first (no GPU needed) and
falls back to TTIR alone, with a note saying why, when the backend is missing or a later stage
fails; a CompilationError in the user's kernel is never swallowed.
"""

from __future__ import annotations

import json
import math
import os
import re
from dataclasses import dataclass, field

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
}
STAGE_TITLES = {
    "source": "Source", "ttir": "TTIR", "ttgir": "TTGIR", "llir": "LLIR", "ptx": "PTX",
    "sass": "SASS",
}  # fmt: skip
IR_STAGES = ("ttir", "ttgir", "llir", "ptx", "sass")
GPU_TARGETS = ("sm_90", "sm_80")


# -- compiling for the viewer ----------------------------------------------------------------


@dataclass
class ViewInput:
    """What the viewer shows: the compiled kernel and what is known around it."""

    ck: object
    fn: object = None  # the KernelFunction, when known (source text, TTIR line mapping)
    notes: list[str] = field(default_factory=list)
    cache_hit: bool | None = None
    source: tuple[str, str, int] | None = None  # (text, filename, first line) override
    stages: list[str] | None = None  # stage tabs to show (None: every stage present)


def nvidia_available() -> bool:
    """Whether this build has the NVIDIA backend (compiling needs no GPU)."""
    from kernellab.backends import get_backend

    try:
        get_backend("sm_90")
    except Exception:
        return False
    return True


def compile_for_view(fn, signature=None, constexprs=None, attrs=None, target=None, **options):
    """Compile `fn` for the viewer: returns (CompiledKernel, notes).

    `target=None` means sm_90 where the NVIDIA backend exists, else the interpreter (TTIR only).
    A GPU target that is missing or whose later stages fail falls back to TTIR with a note.
    """
    import kernellab as kl
    from kernellab.frontend.errors import CompilationError

    notes: list[str] = []
    if target in (None, "auto"):
        if nvidia_available():
            target = "sm_90"
        else:
            target = "interpreter"
            notes.append(
                "The NVIDIA backend is not in this build, so only TTIR is shown "
                "(TTGIR, LLIR, PTX and SASS come with it; no GPU is needed to compile them)."
            )
    elif target != "interpreter" and not nvidia_available():
        notes.append(
            f"target {target}: the NVIDIA backend is not in this build, so only TTIR is shown."
        )
        target = "interpreter"
    if not options.get("force") or not _accepts(kl.compile, "force"):
        options.pop("force", None)
    kwargs = dict(signature=signature, constexprs=constexprs, attrs=attrs, **options)
    if target != "interpreter":
        try:
            return kl.compile(fn, target=target, **kwargs), notes
        except CompilationError:
            raise
        except Exception as e:  # a later stage failed: show the stages that did compile
            partial = getattr(e, "partial", None)
            done = [s for s in getattr(partial, "asm", {}) if s in IR_STAGES]
            if done:
                failed = partial.metadata.get("failed_stage") or "a later stage"
                titles = ", ".join(STAGE_TITLES.get(s, s) for s in done)
                notes.append(
                    f"Compiling for {target} failed in the {STAGE_TITLES.get(failed, failed)} stage "
                    f"({type(e).__name__}: {_one_line(e)}); shown: the stages that compiled ({titles})."
                )
                return partial, notes
            notes.append(
                f"Compiling for {target} failed after TTIR ({type(e).__name__}: {_one_line(e)}); "
                "only TTIR is shown."
            )
    return kl.compile(fn, target="interpreter", **kwargs), notes


def _accepts(fn, name: str) -> bool:
    import inspect

    try:
        return name in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


def _one_line(e: BaseException) -> str:
    text = " ".join(str(e).split())
    return text if len(text) <= 300 else text[:297] + "..."


# -- line mapping ------------------------------------------------------------------------------

_LOC_SUFFIX = re.compile(r'loc\("((?:[^"\\]|\\.)*)":(\d+):(\d+)\)')
_LOC_ANY = re.compile(
    r"\s*loc\((?:[^()\"]|\"(?:[^\"\\]|\\.)*\"|\((?:[^()\"]|\"(?:[^\"\\]|\\.)*\")*\))*\)"
)


def _same_file(a: str | None, b: str | None) -> bool:
    if a is None or b is None:
        return False
    if a == b:
        return True
    if a.startswith("<") or b.startswith("<"):
        return False
    return os.path.basename(a) == os.path.basename(b)


def strip_locations(located: str) -> str:
    """IR printed with locations, without them (then it reads like the stage's text)."""
    return "\n".join(_LOC_ANY.sub("", line).rstrip() for line in located.splitlines())


def mlir_lines(located: str, filename: str, n_lines: int | None = None) -> list[int | None]:
    """Per line of the (location-free) IR: the line of `filename` it came from, or None."""
    from kernellab.compiler import source_map_of

    mapping = source_map_of(located)
    total = len(located.splitlines()) if n_lines is None else n_lines
    return [
        m[1] if (m := mapping.get(i)) and _same_file(m[0], filename) else None
        for i in range(1, total + 1)
    ]


_DBG_USE = re.compile(r"!dbg\s+!(\d+)")
_DI_LOCATION = re.compile(r"^!(\d+)\s*=\s*(?:distinct\s+)?!DILocation\(([^)]*)\)")
_DI_FIELD = re.compile(r"(\w+):\s*(!?\d+|\"(?:[^\"\\]|\\.)*\")")
_DI_SCOPE = re.compile(
    r"^!(\d+)\s*=\s*(?:distinct\s+)?!(DISubprogram|DILexicalBlock\w*|DIFile)\((.*)\)\s*$"
)


def llvm_lines(text: str, filename: str) -> list[int | None]:
    """LLVM IR: `!dbg !N` on an instruction → `!N = !DILocation(line: L, scope: ...)`.

    The scope chain is followed to the DIFile when present, so lines from other files are None.
    Instructions carrying a `loc("file":L:C)` comment are mapped too.
    """
    lines = text.splitlines()
    locations: dict[str, tuple[int, str | None]] = {}
    scopes: dict[str, dict[str, str]] = {}
    for line in lines:
        m = _DI_LOCATION.match(line)
        if m:
            fields = dict(_DI_FIELD.findall(m.group(2)))
            if "line" in fields:
                locations[m.group(1)] = (int(fields["line"]), fields.get("scope"))
            continue
        m = _DI_SCOPE.match(line)
        if m:
            fields = dict(_DI_FIELD.findall(m.group(3)))
            fields["kind"] = m.group(2)
            scopes[m.group(1)] = fields

    def file_of(scope: str | None) -> str | None:
        seen = set()
        while scope and scope.startswith("!") and scope not in seen:
            seen.add(scope)
            info = scopes.get(scope[1:])
            if info is None:
                return None
            if info["kind"] == "DIFile":
                name = info.get("filename", "").strip('"')
                directory = info.get("directory", "").strip('"')
                return (
                    name if os.path.isabs(name) or not directory else os.path.join(directory, name)
                )
            if "file" in info:
                return file_of(info["file"])
            scope = info.get("scope")
        return None

    result: list[int | None] = []
    for line in lines:
        value = None
        m = _DBG_USE.search(line)
        if m and not line.lstrip().startswith("!") and m.group(1) in locations:
            number, scope = locations[m.group(1)]
            where = file_of(scope)
            if where is None or _same_file(where, filename):
                value = number
        else:
            loc = _LOC_SUFFIX.search(line)
            if loc and _same_file(loc.group(1), filename):
                value = int(loc.group(2))
        result.append(value)
    return result


_PTX_FILE = re.compile(r'^\s*\.file\s+(\d+)\s+"((?:[^"\\]|\\.)*)"(?:\s*,\s*"((?:[^"\\]|\\.)*)")?')
_PTX_LOC = re.compile(r"^\s*\.loc\s+(\d+)\s+(\d+)")


def ptx_lines(text: str, filename: str) -> list[int | None]:
    """PTX: each instruction after a `.loc FILE LINE COL` (until the next) maps to LINE."""
    lines = text.splitlines()
    files: dict[str, str] = {}
    for line in lines:
        m = _PTX_FILE.match(line)
        if m:
            name, directory = m.group(2), m.group(3)
            files[m.group(1)] = (
                os.path.join(directory, name) if directory and not os.path.isabs(name) else name
            )
    only_file = len(files) == 1
    current: int | None = None
    result: list[int | None] = []
    for line in lines:
        stripped = line.strip()
        m = _PTX_LOC.match(line)
        if m:
            name = files.get(m.group(1))
            ours = _same_file(name, filename) or (only_file and name is not None and not filename)
            current = int(m.group(2)) if ours and int(m.group(2)) > 0 else None
            result.append(current)
            continue
        if stripped == "}" or stripped.startswith(
            (".visible", ".entry", ".func", ".file", "$L__func")
        ):
            current = None
        instruction = (
            stripped
            and not stripped.startswith(("//", ".", "{", "}"))
            and not stripped.endswith(":")
        )
        result.append(current if instruction else None)
    return result


_SASS_FILE = re.compile(r'//##\s*File\s+"((?:[^"\\]|\\.)*)"\s*,\s*line\s+(\d+)')


def sass_lines(text: str, filename: str) -> list[int | None]:
    """SASS from `nvdisasm -g`: instructions after `//## File "f", line N` map to N."""
    current: int | None = None
    result: list[int | None] = []
    for line in text.splitlines():
        m = _SASS_FILE.search(line)
        if m:
            current = int(m.group(2)) if _same_file(m.group(1), filename) else None
            result.append(None)
            continue
        stripped = line.strip()
        if stripped.startswith(("Function :", ".text.", ".section")):
            current = None
        result.append(current if stripped.startswith("/*") else None)
    return result


def _compiler_source_maps(ck) -> dict[str, dict]:
    """The compiler's own per-stage maps (line → (file, line)), where it keeps them."""
    try:
        maps = getattr(ck, "source_maps", None) or {}
        return {k: v for k, v in maps.items() if isinstance(v, dict)}
    except Exception:
        return {}


def _lines_from_map(mapping: dict, filename: str | None, n: int) -> list[int | None]:
    out: list[int | None] = []
    for i in range(1, n + 1):
        where = mapping.get(i)
        out.append(where[1] if where and _same_file(where[0], filename) else None)
    return out


def _located_mlir_texts(view: ViewInput) -> dict[str, str]:
    """stage → IR text printed with locations, for the MLIR stages we can get it for."""
    from kernellab.ir import print_module

    ck = view.ck
    out: dict[str, str] = {}
    for stage, text in (getattr(ck, "located_asm", None) or {}).items():
        out[stage] = text
    module = getattr(ck, "module", None)
    if module is not None:
        try:
            located = print_module(module, locations=True)
        except Exception:
            located = None
        if located is not None:
            plain = strip_locations(located)
            for stage in ("ttgir", "ttir"):
                text = ck.asm.get(stage)
                if stage not in out and isinstance(text, str) and _same_text(plain, text):
                    out[stage] = located
                    break
    if "ttir" not in out and isinstance(ck.asm.get("ttir"), str) and view.fn is not None:
        # the module is a later stage's: recompile the TTIR (cheap) to get its locations
        try:
            again = _ttir_again(view)
            located = print_module(again.module, locations=True)
            if _same_text(strip_locations(located), ck.asm["ttir"]):
                out["ttir"] = located
        except Exception:
            pass
    return out


def _ttir_again(view: ViewInput):
    import kernellab as kl

    md = view.ck.metadata
    sig = md.get("signature", "")
    return kl.compile(
        view.fn, signature=sig or None, constexprs=dict(md.get("constexprs") or {}),
        attrs=md.get("attrs") or None, target="interpreter",
    )  # fmt: skip


def _same_text(a: str, b: str) -> bool:
    return [line.rstrip() for line in a.strip().splitlines()] == [
        line.rstrip() for line in b.strip().splitlines()
    ]


# -- resources -------------------------------------------------------------------------------

# Per-SM limits of the targets (CUDA occupancy calculator's numbers for A100 and H100).
DEVICE_LIMITS = {
    "sm_80": {
        "device": "A100 (sm_80)", "registers_per_sm": 65536, "register_alloc_unit": 256,
        "max_registers_per_thread": 255, "max_warps_per_sm": 64, "max_blocks_per_sm": 32,
        "shared_per_sm": 167936, "max_shared_per_block": 166912, "shared_reserved_per_block": 1024,
    },
    "sm_90": {
        "device": "H100 (sm_90)", "registers_per_sm": 65536, "register_alloc_unit": 256,
        "max_registers_per_thread": 255, "max_warps_per_sm": 64, "max_blocks_per_sm": 32,
        "shared_per_sm": 233472, "max_shared_per_block": 232448, "shared_reserved_per_block": 1024,
    },
}  # fmt: skip
DEVICE_LIMITS["sm_90a"] = DEVICE_LIMITS["sm_90"]


def occupancy(target: str, num_warps: int, registers: int | None = None, shared: int | None = None):
    """Blocks and warps per SM for one kernel on `target`, and what limits them.

    Registers are allocated per warp in units of 256 from each of the SM's four partitions;
    shared memory per block includes the 1 KiB the driver reserves. Without a register count
    (no cubin yet), the estimate is an upper bound and says so.
    """
    limits = DEVICE_LIMITS.get(target)
    if limits is None or not num_warps:
        return None
    max_warps = limits["max_warps_per_sm"]
    bounds = {"warps": max_warps // num_warps, "blocks": limits["max_blocks_per_sm"]}
    if registers:
        unit = limits["register_alloc_unit"]
        per_warp = math.ceil(registers * 32 / unit) * unit
        per_partition = limits["registers_per_sm"] // 4
        warps_by_registers = (
            4 * (per_partition // per_warp)
            if registers <= limits["max_registers_per_thread"]
            else 0
        )
        bounds["registers"] = warps_by_registers // num_warps
    if shared:
        if shared > limits["max_shared_per_block"]:
            bounds["shared memory"] = 0
        else:
            bounds["shared memory"] = limits["shared_per_sm"] // (
                shared + limits["shared_reserved_per_block"]
            )
    blocks = min(bounds.values())
    limited_by = min(bounds, key=lambda k: (bounds[k], k != "warps"))
    return {
        "device": limits["device"],
        "blocks_per_sm": blocks,
        "warps_per_sm": blocks * num_warps,
        "max_warps_per_sm": max_warps,
        "occupancy": blocks * num_warps / max_warps,
        "limited_by": limited_by,
        "limits": bounds,
        "registers_known": bool(registers),
        "device_limits": {k: v for k, v in limits.items() if k != "device"},
    }


def _first(md, *names):
    for name in names:
        value = md.get(name)
        if value is not None:
            return value
    return None


def resources(ck) -> dict:
    """Registers, spills, shared memory, threads and (for GPU targets) an occupancy estimate."""
    md = ck.metadata
    num_warps = int(md.get("num_warps") or 4)
    target = str(md.get("target", ""))
    registers = _first(md, "registers", "num_regs", "n_regs", "regs")
    spills = _first(md, "spills", "n_spills", "spill_bytes", "spill_stores")
    shared = _first(md, "shared", "shared_memory", "shared_bytes", "smem")
    threads = _first(md, "threads_per_block", "num_threads") or num_warps * 32
    out = {
        "target": target,
        "registers": registers,
        "spills": spills,
        "shared": shared,
        "threads_per_block": threads,
        "num_warps": num_warps,
        "num_stages": md.get("num_stages"),
        "num_ctas": md.get("num_ctas"),
    }
    occ = occupancy(target, num_warps, registers, shared)
    if occ is not None:
        out["occupancy"] = occ
    return out


# -- the bundle --------------------------------------------------------------------------------


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

    compiler_maps = _compiler_source_maps(ck)
    located = (
        {}
        if all(compiler_maps.get(s) for s in ("ttir", "ttgir") if s in ck.asm)
        else _located_mlir_texts(view)
    )
    available = [s for s in ck.asm if s in STAGE_LANGUAGES and isinstance(ck.asm[s], str)]
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
            if wanted is not None:
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
        n = len(text.splitlines())
        lines: list[int | None]
        try:
            if STAGE_LANGUAGES[stage] == "mlir" and compiler_maps.get(stage):
                lines = _lines_from_map(compiler_maps[stage], filename, n)
            elif STAGE_LANGUAGES[stage] == "mlir":
                lines = mlir_lines(located[stage], filename, n) if stage in located else [None] * n
            elif stage == "llir":
                lines = llvm_lines(text, filename)
            elif stage == "ptx":
                lines = ptx_lines(text, filename)
            else:
                lines = sass_lines(text, filename)
        except Exception:  # mapping is a nicety: never let it break the viewer
            lines = [None] * n
        lines = (lines + [None] * n)[:n]
        stages.append({
            "name": stage, "title": STAGE_TITLES[stage], "language": STAGE_LANGUAGES[stage],
            "text": text, "lines": lines,
        })  # fmt: skip
    for stage, reason in missing.items():
        notes.append(f"{STAGE_TITLES[stage]}: {reason}.")

    passes = []
    stage = "ttir"
    for record in ck.passes:
        stage = _pass_stage(record, stage)
        passes.append({
            "name": record.name, "stage": stage, "ir": record.ir_after or "",
            "changed": bool(record.changed), "seconds": float(record.seconds),
            "summary": getattr(record, "summary", "") or "",
        })  # fmt: skip

    times = {k: float(v) for k, v in (md.get("times") or {}).items()}
    cache_hit = view.cache_hit if view.cache_hit is not None else bool(md.get("cache_hit", False))
    metadata = {
        "name": md.get("name", ck.name),
        "signature": md.get("signature"),
        "constexprs": md.get("constexprs") or {},
        "attrs": md.get("attrs") or {},
        "hash": md.get("hash"),
        "kernellab_version": md.get("kernellab_version"),
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
        "target": md.get("target"),
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
    from kernellab.lab.html import render

    if not isinstance(view, ViewInput):
        view = ViewInput(view, **kwargs)
    data = compile_data(view)
    json.dumps(data)  # fail here, not in the frontend, if something is not JSON
    return {MIME: data, "text/html": render(data), "text/plain": plain_text(data)}


class KernelView:
    """A displayable compiled kernel: `display(KernelView(ck))` shows the viewer.

    `.data` is the JSON payload, `.bundle` the whole MIME bundle.
    """

    def __init__(self, ck, **kwargs):
        self.input = kwargs.pop("view", None) or ViewInput(ck, **kwargs)
        self._bundle = None

    @property
    def bundle(self) -> dict:
        if self._bundle is None:
            self._bundle = build_bundle(self.input)
        return self._bundle

    @property
    def data(self) -> dict:
        return self.bundle[MIME]

    def _repr_mimebundle_(self, include=None, exclude=None):
        return self.bundle

    def __repr__(self) -> str:
        return self.bundle["text/plain"]


__all__ = [
    "MIME",
    "SCHEMA_VERSION",
    "KernelView",
    "ViewInput",
    "build_bundle",
    "compile_data",
    "compile_for_view",
    "llvm_lines",
    "mlir_lines",
    "nvidia_available",
    "occupancy",
    "plain_text",
    "ptx_lines",
    "resources",
    "sass_lines",
    "show",
    "strip_locations",
    "view",
]  # fmt: skip


# -- kl.lab.show / kl.lab.view -----------------------------------------------------------------


def view(kernel, stages=None, **compile_kwargs) -> KernelView:
    """A KernelView of `kernel`: a CompiledKernel as is; a @kl.jit kernel compiled with
    `compile_kwargs` (signature=, constexprs=, target=, num_warps=, ...) or, without them, its
    last compiled specialization. `stages` picks the stage tabs ("ttir", "ptx", ...)."""
    from kernellab.compiler import CompiledKernel
    from kernellab.language.core import KernelFunction

    if isinstance(kernel, CompiledKernel):
        if compile_kwargs:
            raise TypeError("a CompiledKernel is already compiled: pass no compile options")
        return KernelView(kernel, stages=_stage_list(stages))
    fn = kernel
    while not isinstance(fn, KernelFunction) and getattr(fn, "fn", None) is not None:
        fn = fn.fn  # autotune / heuristics wrappers
    if not isinstance(fn, KernelFunction):
        raise TypeError(
            f"kl.lab.show takes a CompiledKernel or a @kl.jit kernel, not {type(kernel).__name__}"
        )
    if compile_kwargs:
        ck, notes = compile_for_view(fn, **compile_kwargs)
        return KernelView(ck, fn=fn, notes=notes, stages=_stage_list(stages))
    ck = getattr(fn, "_kl_lab_last", None)
    cache = getattr(fn, "cache", None) or {}
    if cache:
        ck = list(cache.values())[-1] if ck is None else ck
    if ck is None:
        raise TypeError(
            f"{fn.__name__} has not been compiled yet: launch it once, or pass "
            'signature="..." and constexprs={...} to kl.lab.show'
        )
    return KernelView(ck, fn=fn, cache_hit=True, stages=_stage_list(stages))


def _stage_list(stages):
    if stages is None:
        return None
    names = [s.strip() for s in (stages.split(",") if isinstance(stages, str) else stages)]
    return ["source"] + [s for s in names if s != "source"]


def show(kernel, stages=None, **compile_kwargs) -> None:
    """Display the compiled-kernel viewer for `kernel` (see `view`) in the notebook.

    Outside IPython, prints the text/plain summary instead.
    """
    v = view(kernel, stages=stages, **compile_kwargs)
    try:
        from IPython import get_ipython
        from IPython.display import display
    except ImportError:
        print(v.bundle["text/plain"])
        return
    if get_ipython() is None:
        print(v.bundle["text/plain"])
        return
    display(v)
