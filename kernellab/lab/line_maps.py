"""Which source line each line of each stage's text came from.

TTIR/TTGIR through op locations (the compiler's source maps, or the module printed with
locations, line for line the same as the stage text), LLVM IR through `!dbg !N` /
`!DILocation(line: ...)` (or a `loc("file":L:C)` comment), PTX through `.loc` directives and the
`.file` table, SASS through nvdisasm's `//## File "...", line N` comments. A stage without such
information maps every line to None; nothing here fails for want of it.
"""

from __future__ import annotations

import os
import re

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


_PTX_FILE = re.compile(r'^\s*\.file\s+(\d+)\s+"((?:[^"\\]|\\.)*)"(?:\s*,\s*"((?:[^"\\]|\\.)*)")?\s*$')
# x86-64/AArch64/AMDGPU assembly: `.file N "directory" "name" [md5 ...]`
_ASM_FILE = re.compile(r'^\s*\.file\s+(\d+)\s+"((?:[^"\\]|\\.)*)"\s+"((?:[^"\\]|\\.)*)"')
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
            continue
        m = _ASM_FILE.match(line)
        if m:
            directory, name = m.group(2), m.group(3)
            files[m.group(1)] = name if os.path.isabs(name) else os.path.join(directory, name)
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


class SourceLines:
    """Per line of each stage of a compiled kernel, the line of `filename` it came from (or None).

    Read from what the compiler kept (its source maps, the IR printed with locations, the
    module): the viewer never compiles again behind the user's back.
    """

    def __init__(self, ck, filename: str | None):
        self.ck, self.filename = ck, filename
        self.compiler_maps = _compiler_source_maps(ck)
        needs_located = not all(self.compiler_maps.get(s) for s in ("ttir", "ttgir") if s in ck.asm)
        self.located = _located_mlir_texts(ck) if needs_located else {}

    def of(self, stage: str) -> list[int | None]:
        text = self.ck.asm[stage]
        n = len(text.splitlines())
        try:
            if stage in ("ttir", "ttgir") and self.compiler_maps.get(stage):
                lines = _lines_from_map(self.compiler_maps[stage], self.filename, n)
            elif stage in ("ttir", "ttgir"):
                located = self.located.get(stage)
                lines = mlir_lines(located, self.filename, n) if located else [None] * n
            elif stage == "llir":
                lines = llvm_lines(text, self.filename)
            elif stage in ("ptx", "asm", "amdgcn"):  # `.file`/`.loc` directives alike
                lines = ptx_lines(text, self.filename)
            else:
                lines = sass_lines(text, self.filename)
        except Exception:  # mapping is a nicety: never let it break the viewer
            lines = [None] * n
        return (lines + [None] * n)[:n]


def _compiler_source_maps(ck) -> dict[str, dict]:
    """The compiler's own per-stage maps (line → (file, line)), where it keeps them."""
    return dict(ck.source_maps)


def _lines_from_map(mapping: dict, filename: str | None, n: int) -> list[int | None]:
    out: list[int | None] = []
    for i in range(1, n + 1):
        where = mapping.get(i)
        out.append(where[1] if where and _same_file(where[0], filename) else None)
    return out


def _located_mlir_texts(ck) -> dict[str, str]:
    """stage → IR text printed with locations, for the MLIR stages we can get it for."""
    from kernellab.ir import print_module

    out: dict[str, str] = {}
    out.update(ck.located_asm)
    module = ck.module
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
    return out


def _same_text(a: str, b: str) -> bool:
    return [line.rstrip() for line in a.strip().splitlines()] == [
        line.rstrip() for line in b.strip().splitlines()
    ]
