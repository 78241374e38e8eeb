"""Backends, looked up by target name in one explicit table.

A backend is a folder (its stages, its launcher) described by a `Backend` (backends/base.py).
`get_backend(target)` walks `_BACKENDS` in order and returns the first whose `matches` accepts
the target name; `register_backend` adds one more (a new target, or a test's fake). Nothing is
registered by importing a module: the table below lists every built-in backend. The CPU and AMD
backends are named there by module and load when a target of theirs is first asked for, so an
NVIDIA or interpreter compile never imports them (issue 13: the first compile in a fresh process).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable

from kernellab.backends.amd import is_amd_target
# the shared TTIR stage and IR parser are here too: a new backend (or a test's fake) reuses them
from kernellab.backends.base import INTERPRETER, Backend, StageOutput, module_stage_output
from kernellab.backends.base import _parse_ir as _parse_ir, _ttir_stage as _ttir_stage
from kernellab.backends.cpu import is_cpu_target
from kernellab.backends.nvidia.backend import NVIDIA, is_nvidia_target

Matcher = Callable[[str], bool]

# (accepts the target name?, backend or "module:NAME" of one, its targets as the error for an
# unknown one lists them). None (no target) means "interpreter". `register_backend` adds to
# _REGISTERED, tried first.
_BUILT_IN: list[tuple[Matcher, Backend | str, str]] = [
    (lambda name: name == "interpreter", INTERPRETER, "'interpreter' (the default)"),
    (is_nvidia_target, NVIDIA, "'sm_80', 'sm_90', 'sm_90a' or 'cuda' (the visible GPU; sm_90 without one)"),
    (is_cpu_target, "kernellab.backends.cpu.backend:CPU", "'cpu' (native code for this machine)"),
    (is_amd_target, "kernellab.backends.amd.backend:AMD", "'gfx942' or 'gfx950' (AMD, compile-only)"),
]

_REGISTERED: list[tuple[Matcher, Backend, str]] = []


def register_backend(backend: Backend, matches: str | Iterable[str] | Matcher | None = None, hint: str | None = None) -> None:
    """Make `backend` compile the targets `matches` accepts: a target name, several names, or
    a predicate on the name (default: the backend's own name). Registered backends are tried
    before the built-in ones, the latest first, so a registration can take over a target.
    `hint` describes its targets in the error for an unknown target."""
    if not isinstance(backend, Backend):
        raise TypeError(f"register_backend takes a Backend, not {type(backend).__name__}")
    if matches is None:
        matches = backend.name
    if isinstance(matches, str):
        names = {matches}
        matcher = names.__contains__
    elif callable(matches):
        matcher = matches
    else:
        names = set(matches)
        if not names or not all(isinstance(n, str) for n in names):
            raise TypeError("matches must be a target name, an iterable of names, or a predicate")
        matcher = names.__contains__
    _REGISTERED.append((matcher, backend, hint or repr(backend.name)))


def unregister_backend(backend: Backend) -> None:
    """Remove every registration of `backend` (a test's fake, once the test is done)."""
    _REGISTERED[:] = [entry for entry in _REGISTERED if entry[1] is not backend]


def get_backend(target: str | None) -> Backend:
    """The backend for `target` (None means the interpreter; 'sm_XY'/'cuda' the NVIDIA one)."""
    name = "interpreter" if target is None else str(target)
    for matches, backend, _ in [*reversed(_REGISTERED), *_BUILT_IN]:
        if matches(name):
            return _loaded(backend)
    hints = [hint for _, _, hint in [*_BUILT_IN, *_REGISTERED]]
    raise ValueError(f"unknown target {name!r}; available targets: {', '.join(hints)}")


def _loaded(backend: Backend | str) -> Backend:
    """The backend a table entry names ("module:NAME" imports the module)."""
    if isinstance(backend, str):
        module, name = backend.split(":")
        return getattr(importlib.import_module(module), name)
    return backend


def __getattr__(name: str):
    """`CPU` and `AMD`, loaded on first access like their table entries."""
    if name in ("CPU", "AMD"):
        return _loaded(f"kernellab.backends.{name.lower()}.backend:{name}")
    raise AttributeError(f"module 'kernellab.backends' has no attribute {name!r}")


__all__ = [
    "Backend", "StageOutput", "get_backend", "register_backend", "unregister_backend",
    "module_stage_output", "INTERPRETER", "NVIDIA", "CPU", "AMD",
]  # fmt: skip
