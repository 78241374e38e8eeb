"""The on-disk compile cache: every stage's artifact, keyed like a build system (DESIGN decision 7).

Key = sha256 of: the kernel's source, the sources of the kernel functions it calls (found by
walking its AST, transitively), the values of the global constants it reads, the
specialization (signature, constexprs, attributes), the options, the target, the kernellab
version and a fingerprint of kernellab's own source files (so editing the compiler invalidates
old entries).

An entry is a directory `<root>/<key[:2]>/<key>/` holding one file per stage (`ttir.ttir`,
`ttgir.ttgir`, `llir.ll`, `ptx.ptx`, `cubin.cubin`, ...), `passes.json`, and `metadata.json`,
written last: a record listing each file with its size and sha256 plus the kernel's metadata,
signed with an HMAC under a per-user secret. An entry is assembled in a private temporary
directory and renamed into place whole, so a reader never sees a half-written entry and
processes writing one key at once never mix their files.

Trust (a cached cubin is loaded onto the GPU, so whoever can write the cache could run code in
the user's process): directories are created 0700; a root or entry directory owned by another
user or writable by others is refused with a CacheWarning; the secret lives 0600 outside the
cache ($KERNELLAB_CACHE_KEY_FILE, else $XDG_CONFIG_HOME/kernellab/cache-key, else
~/.config/kernellab/cache-key), so a planted or rewritten entry fails its MAC; only the file
names the cache writes are read; and the whole record is validated. Anything that fails is a
miss, rewritten by the next compile.

Root: $KERNELLAB_CACHE_DIR, else $XDG_CACHE_HOME/kernellab, else ~/.cache/kernellab.
Bypass: $KERNELLAB_ALWAYS_COMPILE=1, or `kl.compile(..., force=True)`.
"""

from __future__ import annotations

import ast
import hashlib
import hmac
import json
import os
import re
import shutil
import stat
import tempfile
import types
import warnings
from dataclasses import dataclass, field

_EXT = {"ttir": "ttir", "ttgir": "ttgir", "llir": "ll", "ptx": "ptx", "cubin": "cubin", "sass": "sass",
        "asm": "s", "obj": "o", "amdgcn": "s"}  # fmt: skip
FORMAT = 2  # 2: metadata.json is signed (an HMAC under the per-user secret)


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
GONE = object()  # what GlobalRead.current returns for a name that no longer exists


def _is_constant(value) -> bool:
    from kernellab.language.core import constexpr, dtype

    if isinstance(value, (constexpr, dtype) + _SIMPLE):
        return True
    if isinstance(value, tuple):
        return all(_is_constant(v) for v in value)
    return False


def _is_kernellab_module(value) -> bool:
    return isinstance(value, types.ModuleType) and value.__name__.split(".")[0] == "kernellab"


@dataclass(frozen=True, eq=False)
class GlobalRead:
    """One value a kernel reads from outside its arguments: a global or closure variable, maybe
    through attributes (`Cfg.SCALE`), holding a constant or a kernel function. It is part of the
    cache key, and a launch checks it still holds what the kernel was compiled with: the
    compiled code has the value baked in."""

    name: str  # as the kernel spells it: "SCALE", "Cfg.SCALE"
    holder: object  # the function's globals dict, or the closure cell of the root name
    chain: tuple[str, ...]
    value: object

    def current(self):
        """The value the kernel's source would read now (GONE when the name has gone)."""
        if isinstance(self.holder, dict):
            value = self.holder.get(self.chain[0], GONE)
        else:
            try:
                value = self.holder.cell_contents
            except ValueError:  # the enclosing function deleted the variable
                return GONE
        for attr in self.chain[1:]:
            if value is GONE:
                break
            value = getattr(value, attr, GONE)
        return value

    def changed(self) -> bool:
        now = self.current()
        if now is self.value:
            return False
        try:
            return not (type(now) is type(self.value) and bool(now == self.value))
        except Exception:  # a comparison that raises: treat as changed
            return True

    def key_part(self) -> tuple[str, str]:
        from kernellab.language.core import KernelFunction, constexpr

        if isinstance(self.value, KernelFunction):
            return (f"fn {self.name}", self.value.src)
        v = self.value.value if isinstance(self.value, constexpr) else self.value
        return (f"global {self.name}", _stable(v))


def global_reads(fn) -> list[GlobalRead]:
    """Every global or closure value that kernel function `fn`'s code reads, through attribute
    chains (`Cfg.SCALE`, `mod.FACTOR`) and the kernel functions it calls, transitively.

    kernellab's own modules and functions are left out: the toolchain fingerprint covers them.
    Modules, classes and other namespaces are walked through, not recorded: what matters is the
    constant or kernel function at the end of the chain."""
    from kernellab.language.core import KernelFunction

    seen: set[int] = set()
    out: list[GlobalRead] = []

    def visit(kf) -> None:
        if id(kf) in seen:
            return
        seen.add(id(kf))
        holders: dict = {}
        code = getattr(kf.fn, "__code__", None)
        if code is not None and kf.fn.__closure__:
            holders = dict(zip(code.co_freevars, kf.fn.__closure__))
        try:
            tree = ast.parse(kf.src)
        except SyntaxError:
            return
        local = set(kf.arg_names)
        for node in ast.walk(tree):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                local.add(node.id)
        for node in ast.walk(tree):
            chain = _attribute_chain(node)
            if chain is None or chain[0] in local:
                continue
            holder = holders.get(chain[0], kf.globals)
            read = GlobalRead(chain[0], holder, (chain[0],), None)
            value = read.current()
            if value is GONE or _is_kernellab_module(value):
                continue
            used = 1
            for attr in chain[1:]:
                if _is_constant(value) or isinstance(value, KernelFunction):
                    break
                nxt = getattr(value, attr, GONE)
                if nxt is GONE or _is_kernellab_module(nxt):
                    break
                value, used = nxt, used + 1
            if isinstance(value, KernelFunction):
                if value.__module__.startswith("kernellab."):  # the toolchain fingerprint has it
                    continue
                visit(value)
            elif not _is_constant(value):
                continue
            out.append(GlobalRead(".".join(chain[:used]), holder, tuple(chain[:used]), value))

    visit(fn)
    unique = {}
    for read in out:
        unique.setdefault((id(read.holder), read.chain), read)
    return list(unique.values())


def dependencies(fn) -> list[tuple[str, str]]:
    """(name, text) for everything a kernel function's code depends on besides its own source:
    called kernel functions' sources (transitively) and global/closure constants it reads."""
    return sorted({read.key_part() for read in global_reads(fn)})


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
    """The cache key of compiling kernel function `fn` with this specialization and options
    (the extern_libs' files by their contents: a rebuilt library at the same path recompiles)."""
    from kernellab.backends.extern_libs import fingerprint

    h = hashlib.sha256()
    for part in (
        f"format {FORMAT}", version, toolchain_fingerprint(), fn.src, _stable(dependencies(fn)), signature, _stable(constexprs), _stable(attrs or {}),
        _stable(options), _stable(fingerprint(getattr(options, "extern_libs", None))), target,
    ):
        h.update(part.encode() if isinstance(part, str) else part)
        h.update(b"\0")
    return h.hexdigest()


# -- trust: a per-user secret and private directories ----------------------------------------


class CacheWarning(RuntimeWarning):
    """The disk cache is not used (or an entry is skipped) because it can't be trusted."""


def key_file() -> str:
    """Where the per-user secret that signs entries lives: outside the cache, so that whoever can
    write the cache (a shared /tmp, a JupyterHub volume) still can't forge an entry."""
    path = os.environ.get("KERNELLAB_CACHE_KEY_FILE")
    if path:
        return path
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return os.path.join(base, "kernellab", "cache-key")


_warned: set[str] = set()


def _warn(subject: str, message: str) -> None:
    """One warning per subject and process: a refused cache is said once, not at every launch."""
    if subject not in _warned:
        _warned.add(subject)
        warnings.warn(message, CacheWarning, stacklevel=4)


def _foreign(st: os.stat_result) -> str | None:
    """Why a file or directory with this stat can't be trusted (None: it can)."""
    uid = os.getuid() if hasattr(os, "getuid") else None  # no owners to check on Windows
    if uid is not None and st.st_uid != uid:
        return f"owned by uid {st.st_uid}, not by you (uid {uid})"
    if uid is not None and st.st_mode & 0o022:
        return "writable by others"
    return None


def _secret() -> bytes | None:
    """The per-user HMAC key (created 0600 on first use), or None with a warning if it is
    unusable: then nothing is read from or written to the cache. Checked at every read (a few
    system calls): a key made readable by others stops being used at once."""
    path = key_file()
    secret = None
    try:
        if not os.path.exists(path):
            _create_secret(path)
        fd = os.open(path, os.O_RDONLY)
        try:
            st = os.fstat(fd)
            why = _foreign(st) or ("readable by others" if hasattr(os, "getuid") and st.st_mode & 0o077 else None)
            data = os.read(fd, 4096)
        finally:
            os.close(fd)
        if why:
            _warn(path, f"kernellab: not using the compile cache: its key {path} is {why}; "
                        f"run `chmod 600 {path}` if it is yours, or delete it to make a new one")  # fmt: skip
        elif len(data) < 32:
            _warn(path, f"kernellab: not using the compile cache: its key {path} is too short; delete it to make a new one")
        else:
            secret = data
    except OSError as error:
        _warn(path, f"kernellab: not using the compile cache: its key {path} can't be made or read ({error}); "
                    "set KERNELLAB_CACHE_KEY_FILE to a path in a private directory")  # fmt: skip
    return secret


def _create_secret(path: str) -> None:
    """Write 32 random bytes 0600, atomically: a racing process either wins or reads ours."""
    import secrets
    import tempfile

    directory = os.path.dirname(path)
    os.makedirs(directory, mode=0o700, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-key-")  # mkstemp files are 0600
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(secrets.token_bytes(32))
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass
    finally:
        os.unlink(tmp)


def _make_private_dir(path: str) -> None:
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass


# -- the record: what metadata.json holds, checked field by field -------------------------

_DIGEST = re.compile(r"[0-9a-f]{64}")
_STAGE = re.compile(r"[a-z][a-z0-9_]*")
PASSES_FILE = "passes.json"


def file_name(stage: str) -> str:
    """The name the cache gives a stage's artifact; the only name it will read for that stage."""
    return f"{stage}.{_EXT.get(stage, 'txt')}"


def _file_problem(spec, expected_name: str) -> str | None:
    """What is wrong with a file entry [name, kind, size, sha256] (None: nothing)."""
    if not (isinstance(spec, list) and len(spec) == 4):
        return f"{expected_name}: not a file entry"
    name, kind, size, digest = spec
    if name != expected_name:
        return f"file name {name!r} is not the cache's ({expected_name!r})"
    if kind not in ("bytes", "text") or not (type(size) is int and size >= 0):
        return f"{name}: kind or size"
    if not (isinstance(digest, str) and _DIGEST.fullmatch(digest)):
        return f"{name}: digest"
    return None


_metadata_types: dict | None = None


def _expected_types() -> dict:
    """The type each stored metadata field must have, read off KernelMetadata and the options."""
    global _metadata_types
    if _metadata_types is None:
        from typing import get_type_hints

        from kernellab.backends.metadata import KernelMetadata
        from kernellab.backends.options import CompileOptions

        types_ = {k: v for k, v in get_type_hints(KernelMetadata).items()
                  if k not in ("options", "signature", "constexprs", "attrs", "extra")}  # fmt: skip
        types_.update(get_type_hints(CompileOptions), signature=str, target=str)
        _metadata_types = types_
    return _metadata_types


def _metadata_problem(md) -> str | None:
    """What is wrong with a stored KernelMetadata mapping (None: what a hit reads is sound)."""
    from kernellab.backends.options import OPTION_NAMES

    if not isinstance(md, dict):
        return "metadata is not an object"
    for name in ("name", "target", *OPTION_NAMES):
        if name not in md:
            return f"metadata has no {name!r}"
    expected = _expected_types()
    for name, value in md.items():
        kind = expected.get(name)
        if kind is not None and not isinstance(value, kind):
            return f"metadata {name!r} is a {type(value).__name__}"
    for name in ("times", "compile_times"):
        if not all(isinstance(v, (int, float)) for v in (md.get(name) or {}).values()):
            return f"metadata {name!r} holds a non-number"
    maps = md.get("source_maps", {})
    if not isinstance(maps, dict):
        return "source_maps is not an object"
    for pairs in maps.values():
        if not isinstance(pairs, list) or not all(_is_location(pair) for pair in pairs):
            return "source_maps holds a malformed location"
    return None


def _is_location(pair) -> bool:
    """[line, [file, line]]: one source-map entry as the compiler stores it."""
    return (isinstance(pair, list) and len(pair) == 2 and type(pair[0]) is int and isinstance(pair[1], list)
            and len(pair[1]) == 2 and isinstance(pair[1][0], str) and type(pair[1][1]) is int)  # fmt: skip


def record_problem(record, key: str) -> str | None:
    """What makes a record (the parsed metadata.json) unusable for `key` (None: nothing)."""
    if not isinstance(record, dict):
        return "the record is not an object"
    if record.get("format") != FORMAT or record.get("key") != key:
        return "another format or key"
    files = record.get("files")
    if not isinstance(files, dict):
        return "files is not an object"
    for stage, spec in files.items():
        if not _STAGE.fullmatch(stage):
            return f"stage name {stage!r}"
        problem = _file_problem(spec, file_name(stage))
        if problem:
            return problem
    if record.get("passes") is not None:
        problem = _file_problem(record["passes"], PASSES_FILE)
        if problem:
            return problem
    if set(record) - {"format", "key", "files", "passes", "metadata"}:
        return "unknown fields"
    return _metadata_problem(record.get("metadata"))


_PASS_FIELDS = {"name": str, "ir_after": str, "seconds": (int, float), "changed": bool, "summary": str, "stage": str}


def _pass_records(data: bytes) -> list[dict] | None:
    """The stored pass records, or None if passes.json is not a list of well-formed records."""
    try:
        raw = json.loads(data)
    except ValueError:
        return None
    if not isinstance(raw, list) or not all(
        isinstance(r, dict) and r.keys() == _PASS_FIELDS.keys()
        and all(isinstance(r[k], t) for k, t in _PASS_FIELDS.items())
        for r in raw
    ):  # fmt: skip
        return None
    return raw


# -- entries --------------------------------------------------------------------------------


@dataclass
class CacheEntry:
    key: str
    path: str
    asm: dict
    metadata: dict
    _passes: bytes | None = field(default=None, repr=False)  # passes.json, digest checked

    def load_passes(self) -> list:
        """The pass records stored with the entry. Parsed only when asked for (they hold the IR
        after every pass: parsing them would double the cost of a hit); their bytes were checked
        against the signed record, so a record of the wrong shape is a bug in the writer."""
        if self._passes is None:
            return []
        raw = _pass_records(self._passes)
        if raw is None:
            raise ValueError(f"{self.path}/{PASSES_FILE} holds malformed pass records; delete the entry")
        from kernellab.passes.manager import PassRecord

        return [PassRecord(**r) for r in raw]


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
    """Entries signed with the user's secret, in directories only the user can write.

    Trust rules: the root, and each entry directory, must be owned by the current user and not
    writable by others (else a warning and a miss); metadata.json carries an HMAC of the record
    under the per-user secret (`key_file()`), and the record carries each file's sha256, so a
    planted or rewritten file is a miss; only the names the cache writes (`file_name`,
    `PASSES_FILE`) are read; a record of the wrong shape is a miss, rewritten by the next compile.
    """

    def __init__(self, root: str | None = None):
        self.root = root or cache_dir()

    def entry_path(self, key: str) -> str:
        return os.path.join(self.root, key[:2], key)

    def _trusted(self, path: str) -> bool:
        """Whether a directory of the cache can be trusted (a warning says why not)."""
        st = os.lstat(path)
        why = "not a directory" if not stat.S_ISDIR(st.st_mode) else _foreign(st)
        if why is None:
            return True
        what = "compile cache" if path == self.root else "compile-cache entry"
        _warn(path, f"kernellab: not using the {what} at {path}: it is {why}, so anyone who can write it "
                    f"could run code in your process. Use a directory only you can write (chmod 700 {path}, "
                    "if it is yours) or set KERNELLAB_CACHE_DIR to one")  # fmt: skip
        return False

    def _root_trusted(self) -> bool:
        try:
            return self._trusted(self.root)
        except OSError:  # not made yet (put() makes it) or unreadable
            return False

    def read_record(self, key: str):
        """The parsed record of `key`'s entry if its signature holds (any JSON value), else None."""
        secret = _secret()
        path = self.entry_path(key)
        if secret is None or not self._root_trusted() or not self._trusted(path):
            return None
        with open(os.path.join(path, "metadata.json"), "rb") as f:
            sealed = json.loads(f.read())
        if not (isinstance(sealed, dict) and isinstance(sealed.get("record"), str) and isinstance(sealed.get("mac"), str)):
            return None
        text = sealed["record"].encode()
        if not hmac.compare_digest(hmac.new(secret, text, "sha256").hexdigest(), sealed["mac"]):
            return None
        return json.loads(text)

    def write_record(self, key: str, record, directory: str | None = None) -> None:
        """Sign `record` with the user's secret and store it as the metadata.json of the entry
        (or of `directory`, an entry being assembled)."""
        secret = _secret()
        if secret is None:
            raise OSError("no cache key")
        text = json.dumps(record)
        mac = hmac.new(secret, text.encode(), "sha256").hexdigest()
        target = os.path.join(directory or self.entry_path(key), "metadata.json")
        atomic_write(target, json.dumps({"mac": mac, "record": text}).encode())

    def get(self, key: str) -> CacheEntry | None:
        """The entry for `key`, or None if absent, untrusted, malformed or inconsistent."""
        path = self.entry_path(key)
        try:
            record = self.read_record(key)
            if record is None or record_problem(record, key) is not None:
                return None
            asm = {}
            for stage, (name, kind, size, digest) in record["files"].items():
                data = _read_checked(path, name, size, digest)
                if data is None:
                    return None
                asm[stage] = data if kind == "bytes" else data.decode()
            passes = None
            if record.get("passes") is not None:
                name, _, size, digest = record["passes"]
                passes = _read_checked(path, name, size, digest)
                if passes is None:
                    return None
            return CacheEntry(key, path, asm, record["metadata"], passes)
        except (OSError, ValueError, UnicodeDecodeError):
            return None

    def put(self, key: str, asm: dict, metadata: dict, passes=None) -> str | None:
        """Store an entry (metadata.json last); returns its path, or None if it can't be written
        (or the cache can't be trusted)."""
        path = self.entry_path(key)
        staging = None
        try:
            if _secret() is None:
                return None
            os.makedirs(os.path.dirname(self.root) or ".", exist_ok=True)
            for directory in (self.root, os.path.dirname(path)):
                _make_private_dir(directory)
            if not self._root_trusted() or not self._trusted(os.path.dirname(path)):
                return None
            staging = tempfile.mkdtemp(dir=os.path.dirname(path), prefix=".tmp-")  # 0700
            self._assemble(staging, key, asm, metadata, passes)
            self._publish(staging, path, key)
            return path
        except OSError:
            return None
        finally:
            if staging is not None:
                shutil.rmtree(staging, ignore_errors=True)

    def _publish(self, staging: str, path: str, key: str) -> None:
        """Move a complete entry into place with one rename, so that writers racing on one key
        never mix their files: the first rename wins, and a later writer replaces only an
        entry that is not valid (an old format, a damaged or foreign one)."""
        try:
            os.rename(staging, path)  # atomic; refused when `path` holds an entry
            return
        except OSError:
            if self.get(key) is not None:
                return
        retired = staging + "-retired"
        os.rename(path, retired)
        try:
            os.rename(staging, path)
        finally:
            shutil.rmtree(retired, ignore_errors=True)

    def _assemble(self, directory: str, key: str, asm: dict, metadata: dict, passes) -> None:
        """Write an entry's files into `directory`, metadata.json last."""
        files = {}
        for stage, artifact in asm.items():
            if artifact is None:
                continue
            kind = "bytes" if isinstance(artifact, (bytes, bytearray)) else "text"
            data = bytes(artifact) if kind == "bytes" else str(artifact).encode()
            name = file_name(stage)
            atomic_write(os.path.join(directory, name), data)
            files[stage] = [name, kind, len(data), _sha(data)]
        record = {"format": FORMAT, "key": key, "files": files, "metadata": _jsonable(metadata)}
        if passes:
            raw = [
                {"name": p.name, "ir_after": p.ir_after, "seconds": p.seconds,
                 "changed": p.changed, "summary": getattr(p, "summary", ""),
                 "stage": getattr(p, "stage", "")}
                for p in passes
            ]  # fmt: skip
            data = json.dumps(raw).encode()
            atomic_write(os.path.join(directory, PASSES_FILE), data)
            record["passes"] = [PASSES_FILE, "text", len(data), _sha(data)]
        self.write_record(key, record, directory)


def _read_checked(directory: str, name: str, size: int, digest: str) -> bytes | None:
    """A file of an entry if it still has the size and sha256 its signed record names."""
    with open(os.path.join(directory, name), "rb") as f:
        data = f.read()
    return data if len(data) == size and _sha(data) == digest else None


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
    "default_cache", "atomic_write", "toolchain_fingerprint", "CacheWarning", "key_file", "file_name",
    "record_problem", "PASSES_FILE",
]  # fmt: skip
