"""The on-disk compile cache: every stage's artifact, keyed like a build system (DESIGN decision 7).

Key = sha256 of: the kernel's source, the sources of the kernel functions it calls (found by
walking its AST, transitively), the values of the global constants it reads, the
specialization (signature, constexprs, attributes), the options, the target, the kernellab
version and a fingerprint of kernellab's own source files (so editing the compiler invalidates
old entries).

An entry is a directory `<root>/<key[:2]>/<key>/` holding one file per stage (`ttir.ttir`,
`ttgir.ttgir`, `llir.ll`, `ptx.ptx`, `cubin.cubin`, ...), `passes.json`, and `metadata.json`,
written last, which lists each file with its size and sha256. Every file is written to a
temporary name and renamed into place, so a reader never sees a half-written file; an entry
whose metadata is missing or unreadable, or whose files don't match it, is a miss (and is
rewritten by the next compile).

Root: $KERNELLAB_CACHE_DIR, else $XDG_CACHE_HOME/kernellab, else ~/.cache/kernellab.
Bypass: $KERNELLAB_ALWAYS_COMPILE=1, or `kl.compile(..., force=True)`.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import types
from dataclasses import dataclass, field

_EXT = {"ttir": "ttir", "ttgir": "ttgir", "llir": "ll", "ptx": "ptx", "cubin": "cubin", "sass": "sass"}
FORMAT = 1


def cache_dir() -> str:
    root = os.environ.get("KERNELLAB_CACHE_DIR")
    if root:
        return root
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "kernellab")


def always_compile() -> bool:
    return os.environ.get("KERNELLAB_ALWAYS_COMPILE", "").strip().lower() not in ("", "0", "false", "no")


def cache_disabled() -> bool:
    return os.environ.get("KERNELLAB_DISABLE_CACHE", "").strip().lower() not in ("", "0", "false", "no")


# -- the key --------------------------------------------------------------------------------

_fingerprint: str | None = None


def toolchain_fingerprint() -> str:
    """Hash of kernellab's own .py files (path, size, mtime): a changed compiler is a new key.

    Computed once per process (about a millisecond: one stat per file)."""
    global _fingerprint
    if _fingerprint is None:
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the kernellab folder
        parts: list[str] = []
        stack = [("", root)]
        while stack:
            rel, path = stack.pop()
            try:
                entries = sorted(os.scandir(path), key=lambda e: e.name)
            except OSError:
                continue
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    if entry.name not in ("__pycache__", "lab"):
                        stack.append((f"{rel}{entry.name}/", entry.path))
                elif entry.name.endswith(".py"):
                    try:
                        st = entry.stat()
                    except OSError:
                        continue
                    parts.append(f"{rel}{entry.name}:{st.st_size}:{st.st_mtime_ns}")
        _fingerprint = hashlib.sha256("\n".join(sorted(parts)).encode()).hexdigest()
    return _fingerprint


def _stable(value) -> str:
    """A deterministic text for a key part (dtypes, constexprs, options, nested containers)."""
    if isinstance(value, dict):
        return "{" + ",".join(f"{_stable(k)}:{_stable(v)}" for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))) + "}"
    if isinstance(value, (list, tuple)):
        return ("[" if isinstance(value, list) else "(") + ",".join(_stable(v) for v in value) + ")"
    if isinstance(value, (set, frozenset)):
        return "{" + ",".join(sorted(_stable(v) for v in value)) + "}"
    if hasattr(value, "__dataclass_fields__"):
        return type(value).__name__ + _stable({k: getattr(value, k) for k in value.__dataclass_fields__})
    if isinstance(value, (str, int, float, bool, type(None))):
        return repr(value)
    return f"{type(value).__module__}.{type(value).__qualname__}:{value!r}"


_SIMPLE = (int, float, bool, str, bytes, type(None))


def _is_constant(value) -> bool:
    from kernellab.language.core import constexpr, dtype

    if isinstance(value, (constexpr, dtype) + _SIMPLE):
        return True
    if isinstance(value, tuple):
        return all(_is_constant(v) for v in value)
    return False


def dependencies(fn) -> list[tuple[str, str]]:
    """(name, text) for everything a kernel function's code depends on besides its own source:
    called kernel functions' sources (transitively) and global/closure constants it reads."""
    from kernellab.language.core import KernelFunction, constexpr

    seen: set[int] = set()
    out: list[tuple[str, str]] = []

    def visit(kf) -> None:
        if id(kf) in seen:
            return
        seen.add(id(kf))
        scope = dict(kf.globals)
        code = getattr(kf.fn, "__code__", None)
        if code is not None and kf.fn.__closure__:
            for name, cell in zip(code.co_freevars, kf.fn.__closure__):
                try:
                    scope[name] = cell.cell_contents
                except ValueError:
                    pass
        try:
            tree = ast.parse(kf.src)
        except SyntaxError:
            return
        local = {a for a in kf.arg_names}
        for node in ast.walk(tree):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                local.add(node.id)
        for node in ast.walk(tree):
            chain = _attribute_chain(node)
            if chain is None or chain[0] in local or chain[0] not in scope:
                continue
            value, name = scope[chain[0]], chain[0]
            for attr in chain[1:]:
                if isinstance(value, types.ModuleType) or isinstance(value, KernelFunction):
                    nxt = getattr(value, attr, None)
                    if nxt is None:
                        break
                    value, name = nxt, f"{name}.{attr}"
                else:
                    break
            if isinstance(value, KernelFunction):
                if not value.__module__.startswith("kernellab."):  # kernellab's own: fingerprinted
                    out.append((f"fn {name}", value.src))
                    visit(value)
            elif isinstance(value, types.ModuleType):
                continue
            elif _is_constant(value):
                v = value.value if isinstance(value, constexpr) else value
                out.append((f"global {name}", _stable(v)))

    visit(fn)
    return sorted(set(out))


def _attribute_chain(node) -> list[str] | None:
    """`a.b.c` → ['a', 'b', 'c'] for the outermost node of a chain; None for anything else."""
    if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
        return [node.id]
    if isinstance(node, ast.Attribute):
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if isinstance(node, ast.Name):
            return [node.id] + parts[::-1]
    return None


def kernel_key(fn, signature: str, constexprs: dict, attrs, options, target: str, version: str) -> str:
    """The cache key of compiling kernel function `fn` with this specialization and options."""
    h = hashlib.sha256()
    for part in (
        f"format {FORMAT}", version, toolchain_fingerprint(), fn.src, _stable(dependencies(fn)), signature, _stable(constexprs), _stable(attrs or {}),
        _stable(options), target,
    ):
        h.update(part.encode() if isinstance(part, str) else part)
        h.update(b"\0")
    return h.hexdigest()


# -- entries --------------------------------------------------------------------------------


@dataclass
class CacheEntry:
    key: str
    path: str
    asm: dict
    metadata: dict
    _passes_file: str | None = field(default=None, repr=False)

    def load_passes(self) -> list:
        """The pass records stored with the entry (an empty list if they can't be read)."""
        if not self._passes_file:
            return []
        try:
            with open(os.path.join(self.path, self._passes_file)) as f:
                raw = json.load(f)
            from kernellab.passes.manager import PassRecord

            return [PassRecord(**r) for r in raw]
        except Exception:
            return []


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def atomic_write(path: str, data: bytes) -> None:
    """Write `data` to `path` so readers see either the old file or the whole new one."""
    import tempfile

    directory = os.path.dirname(path)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix="-" + os.path.basename(path))
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


class DiskCache:
    def __init__(self, root: str | None = None):
        self.root = root or cache_dir()

    def entry_path(self, key: str) -> str:
        return os.path.join(self.root, key[:2], key)

    def get(self, key: str) -> CacheEntry | None:
        """The entry for `key`, or None if absent, unreadable or inconsistent."""
        path = self.entry_path(key)
        try:
            with open(os.path.join(path, "metadata.json"), "rb") as f:
                record = json.loads(f.read())
            if record.get("format") != FORMAT or record.get("key") != key:
                return None
            asm = {}
            for stage, (name, kind, size, digest) in record["files"].items():
                with open(os.path.join(path, name), "rb") as f:
                    data = f.read()
                if len(data) != size or _sha(data) != digest:
                    return None
                asm[stage] = data if kind == "bytes" else data.decode()
            passes = record.get("passes_file")
            return CacheEntry(key, path, asm, record["metadata"], passes)
        except (OSError, ValueError, KeyError, TypeError, UnicodeDecodeError):
            return None

    def put(self, key: str, asm: dict, metadata: dict, passes=None) -> str | None:
        """Store an entry (metadata.json last); returns its path, or None if it can't be written."""
        path = self.entry_path(key)
        try:
            os.makedirs(path, exist_ok=True)
            files = {}
            for stage, artifact in asm.items():
                if artifact is None:
                    continue
                kind = "bytes" if isinstance(artifact, (bytes, bytearray)) else "text"
                data = bytes(artifact) if kind == "bytes" else str(artifact).encode()
                name = f"{stage}.{_EXT.get(stage, 'txt')}"
                atomic_write(os.path.join(path, name), data)
                files[stage] = [name, kind, len(data), _sha(data)]
            record = {"format": FORMAT, "key": key, "files": files, "metadata": _jsonable(metadata)}
            if passes:
                raw = [
                    {"name": p.name, "ir_after": p.ir_after, "seconds": p.seconds,
                     "changed": p.changed, "summary": getattr(p, "summary", ""),
                     "stage": getattr(p, "stage", "")}
                    for p in passes
                ]  # fmt: skip
                atomic_write(os.path.join(path, "passes.json"), json.dumps(raw).encode())
                record["passes_file"] = "passes.json"
            atomic_write(os.path.join(path, "metadata.json"), json.dumps(record).encode())
            return path
        except OSError:
            return None


def _jsonable(value):
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, (str, int, float, bool, type(None))):
        return value
    return repr(value)


_default: DiskCache | None = None


def default_cache() -> DiskCache:
    """The cache at the current $KERNELLAB_CACHE_DIR (re-read each call: tests change it)."""
    global _default
    root = cache_dir()
    if _default is None or _default.root != root:
        _default = DiskCache(root)
    return _default


__all__ = [
    "DiskCache", "CacheEntry", "kernel_key", "dependencies", "cache_dir", "always_compile",
    "default_cache", "atomic_write", "toolchain_fingerprint",
]  # fmt: skip
