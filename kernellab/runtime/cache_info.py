"""The JIT cache, explained: which facts about a launch's arguments choose the compiled kernel,
what is cached in memory, and what the disk cache holds.

    kernel.explain_key(x, y, out, n, BLOCK=1024)   # the key of this launch, part by part
    kernel.cache_info()                            # every specialization compiled so far
    disk_entries()                                 # what KERNELLAB_CACHE_DIR holds

A launch is reduced to a key (runtime/jit.py: `Binder.bind`): per parameter, its type and the
facts the compiler may use — a pointer's 16-byte alignment, an integer's divisibility by 16 or
its being 1 — and every constexpr's value, plus the launch options. Equal keys reuse one
compiled kernel; a key not seen before compiles. `CacheKey` reads a key back in words, says
what each fact tells the compiler, and compiles the same specialization for a GPU target
(no GPU needed) so two specializations' IR can be compared.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from kernellab.compiler import cache as disk
from kernellab.compiler import compile as compile_kernel


@dataclass(frozen=True)
class KeyPart:
    """One parameter's part of the key, in words."""

    name: str
    type: str  # "*fp32", "i32", "constexpr", ...
    fact: str  # what the launch's value showed: "16-byte aligned", "== 1", "= 1024", ...
    effect: str  # what the compiler is told because of it

    def __str__(self) -> str:
        return f"{self.name:<12} {self.type:<10} {self.fact:<24} {self.effect}"


def _part(name: str, key: tuple, is_constexpr: bool) -> KeyPart:
    if is_constexpr:
        _, value = key
        return KeyPart(name, "constexpr", f"= {value!r}", "its value is compiled in")
    if key[0] == "constexpr":
        if key[1] is None:
            return KeyPart(name, "None", "is None", "compiled in as None")
        return KeyPart(name, "constant", f"== {key[1]!r}", "compiled in as a constant (x * n folds to x)")
    kind, fact = key[0], bool(key[1])
    where = f" on cuda:{key[2]}" if len(key) == 4 else ""
    if kind.startswith("*"):
        if fact:
            return KeyPart(name, kind, f"16-byte aligned{where}", "tt.divisibility = 16: accesses may be vectorized")
        return KeyPart(name, kind, f"not 16-byte aligned{where}", "no alignment fact: one element per access")
    if kind in ("i32", "i64", "u64"):
        if fact:
            return KeyPart(name, kind, "divisible by 16", "tt.divisibility = 16: offsets stay aligned")
        return KeyPart(name, kind, "not divisible by 16", "no divisibility fact")
    return KeyPart(name, kind, "any value", "a runtime argument")


@dataclass(frozen=True)
class CacheKey:
    """A launch's specialization key, explained."""

    kernel: object  # the JITFunction
    key: tuple
    parts: tuple[KeyPart, ...]
    options: dict
    cached: bool  # a launch with this key finds a compiled kernel in memory

    def __str__(self) -> str:
        head = f"{self.kernel.__name__}: {'cached (a launch reuses it)' if self.cached else 'not compiled yet'}"
        rows = [f"  {p}" for p in self.parts]
        if self.options:
            rows.append("  options      " + ", ".join(f"{k}={v}" for k, v in self.options.items()))
        return "\n".join([head, f"  {'parameter':<12} {'type':<10} {'fact':<24} what the compiler is told", *rows])

    __repr__ = __str__

    def differences(self, other: CacheKey) -> list[str]:
        """The parts in which `other` differs from this key, each with why it recompiles."""
        changed = []
        for mine, theirs in zip(self.parts, other.parts):
            if (mine.type, mine.fact) != (theirs.type, theirs.fact):
                changed.append(f"{mine.name}: {mine.type} {mine.fact} -> {theirs.type} {theirs.fact} "
                               f"({theirs.effect})")  # fmt: skip
        for name in sorted(set(self.options) | set(other.options)):
            if self.options.get(name) != other.options.get(name):
                changed.append(f"option {name}: {self.options.get(name)} -> {other.options.get(name)}")
        return changed

    def compile(self, target: str = "sm_90", **kwargs):
        """This specialization compiled for `target` (a GPU target compiles without a GPU):
        the same signature, constexprs and divisibility facts a launch would compile with."""
        from kernellab.runtime.jit import Bound

        bound = Bound(self.key, [], [_value(p, k) for p, k in zip(self.parts, self.key)], dict(self.options))
        signature, constexprs, attrs = self.kernel.binder.compile_args(bound)
        options = {**self.options, **kwargs}
        return compile_kernel(self.kernel, signature=signature, constexprs=constexprs, attrs=attrs or None,
                              target=target, **options)  # fmt: skip


def _value(part: KeyPart, key: tuple):
    """A parameter's value as `compile_args` reads it: constexprs carry theirs in the key."""
    return key[1] if part.type == "constexpr" else None


def describe_key(kernel, key: tuple) -> CacheKey:
    """A key of `kernel.cache` (or from `Binder.bind`) in words."""
    binder = kernel.binder
    n = len(binder.names)
    parts = tuple(_part(name, k, const) for name, k, const in zip(binder.names, key[:n], binder.is_constexpr))
    options = dict(key[n]) if len(key) > n else {}
    return CacheKey(kernel, key, parts, options, key in kernel.cache)


def explain_key(kernel, *args, **kwargs) -> CacheKey:
    """The key a launch with these arguments would use (nothing is compiled or launched)."""
    return describe_key(kernel, kernel.binder.bind(args, kwargs).key)


@dataclass(frozen=True)
class CacheInfo:
    """Every specialization of one kernel compiled in this process."""

    kernel: object
    entries: tuple  # (CacheKey, CompiledKernel)

    def __len__(self) -> int:
        return len(self.entries)

    def __str__(self) -> str:
        lines = [f"{self.kernel.__name__}: {len(self.entries)} compiled specialization(s)"]
        for i, (key, ck) in enumerate(self.entries, 1):
            md = ck.metadata
            compiled = "from the disk cache" if md.get("cache_hit") else f"compiled in {sum(md.times.values()) * 1e3:.0f} ms"
            lines.append(f"[{i}] target {md.target}, {compiled}")
            lines += [f"    {p}" for p in key.parts]
        return "\n".join(lines)

    __repr__ = __str__


def cache_info(kernel) -> CacheInfo:
    return CacheInfo(kernel, tuple((describe_key(kernel, k), ck) for k, ck in kernel.cache.items()))


@dataclass(frozen=True)
class DiskEntry:
    key: str
    path: str
    name: str  # the kernel's name
    target: str
    files: dict  # file name → bytes


def disk_entries(root: str | None = None) -> list[DiskEntry]:
    """The entries of the disk cache ($KERNELLAB_CACHE_DIR) whose signed record checks out."""
    cache = disk.DiskCache(root) if root else disk.default_cache()
    out = []
    if not os.path.isdir(cache.root):
        return out
    for shard in sorted(os.listdir(cache.root)):
        folder = os.path.join(cache.root, shard)
        if len(shard) != 2 or not os.path.isdir(folder):
            continue
        for key in sorted(os.listdir(folder)):
            try:
                record = cache.read_record(key)
            except (OSError, ValueError):
                continue
            if not isinstance(record, dict) or disk.record_problem(record, key) is not None:
                continue
            path = cache.entry_path(key)
            files = {name: os.path.getsize(os.path.join(path, name)) for name in sorted(os.listdir(path))
                     if not name.startswith(".")}  # fmt: skip
            md = record["metadata"]
            out.append(DiskEntry(key, path, md.get("name", "?"), md.get("target", "?"), files))
    return out


__all__ = ["CacheInfo", "CacheKey", "DiskEntry", "KeyPart", "cache_info", "describe_key", "disk_entries", "explain_key"]
