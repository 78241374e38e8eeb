"""The types of a kernel's runtime parameters, in order: what a specialization compiles for.

A `Signature` is read from its text ("*fp32,*fp32,i32") in one place, `Signature.parse`, and
`str()` writes it back (display, cache keys, JSON). Everything between (the compiler, the
frontend, the launcher, the JIT's binder, the metadata) passes the typed object around, so no
layer splits and re-joins the text again. It reads as an ordered mapping parameter → tl.dtype.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping

from kernellab.language.core import dtype, dtype_from_signature, signature_name


class Signature(Mapping):
    """Ordered {parameter name: tl.dtype} of the runtime (non-constexpr) parameters. It equals
    another mapping with the same items in the same order, and its own text ("*fp32,i32")."""

    __slots__ = ("_types",)

    def __init__(self, types: Mapping | Iterable[tuple[str, dtype | str]] = ()):
        pairs = types.items() if isinstance(types, Mapping) else types
        self._types = {name: _as_dtype(name, ty) for name, ty in pairs}

    @classmethod
    def parse(cls, text: str, names: Iterable[str] | None = None) -> Signature:
        """`"*fp32,i32"` → Signature; `names` name the entries (default arg0, arg1, ...).

        Raises ValueError for an unknown type or when the number of entries and names differ."""
        entries = [e.strip() for e in text.split(",")] if text.strip() else []
        if any(not e for e in entries):
            raise ValueError(f"signature {text!r} has an empty entry")
        names = [f"arg{i}" for i in range(len(entries))] if names is None else list(names)
        if len(names) != len(entries):
            raise ValueError(
                f"signature {text!r} has {len(entries)} entries for {len(names)} parameters "
                f"({', '.join(names) or 'none'})"
            )
        return cls(zip(names, entries))

    def spellings(self) -> list[str]:
        """Each parameter's type as signature text (`*fp32`), in order."""
        return [signature_name(t) for t in self._types.values()]

    def __str__(self) -> str:
        return ",".join(self.spellings())

    def __repr__(self) -> str:
        return f"Signature({', '.join(f'{n}: {s}' for n, s in zip(self, self.spellings()))})"

    def __getitem__(self, name: str) -> dtype:
        return self._types[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._types)

    def __len__(self) -> int:
        return len(self._types)

    def __eq__(self, other) -> bool:
        if isinstance(other, str):
            return str(self) == other
        if isinstance(other, Mapping):
            return list(self.items()) == list(other.items())
        return NotImplemented

    def __hash__(self) -> int:
        return hash((tuple(self._types), str(self)))


def _as_dtype(name: str, ty) -> dtype:
    if isinstance(ty, dtype):
        return ty
    if not isinstance(ty, str):
        raise ValueError(f"parameter {name!r}: a signature type is a tl.dtype or text like '*fp32', not {ty!r}")
    try:
        return dtype_from_signature(ty)
    except ValueError as e:
        raise ValueError(f"parameter {name!r}: {e}") from None


__all__ = ["Signature"]
