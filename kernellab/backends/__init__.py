"""Backends, looked up by target name in one explicit table.

A backend is a folder (its stages, its launcher) described by a `Backend` (backends/base.py).
`get_backend(target)` walks the table in order and returns the first backend whose matcher
accepts the target name; `register_backend` adds one more (a new target, or a test's fake).
Nothing is registered by importing a module: the table below lists every built-in backend.
The matchers read only the target name (targets.py), and a built-in backend's module is
imported on the first lookup that picks it, so a compile for one target loads no other
(`from kernellab.backends import NVIDIA, CPU, AMD` imports those modules then).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable

# the shared TTIR stage and IR parser are here too: a new backend (or a test's fake) reuses them
from kernellab.backends.base import INTERPRETER, Backend, StageOutput, module_stage_output
from kernellab.backends.base import _parse_ir as _parse_ir, _ttir_stage as _ttir_stage
from kernellab.backends.targets import is_amd_target, is_cpu_target, is_nvidia_target

Matcher = Callable[[str], bool]

# the module of each built-in backend, imported by the first lookup that picks it (and by
# `kernellab.backends.NVIDIA`, PEP 562)
_MODULES = {
    "INTERPRETER": "kernellab.backends.base",
    "NVIDIA": "kernellab.backends.nvidia.backend",
    "CPU": "kernellab.backends.cpu.backend",
    "AMD": "kernellab.backends.amd.backend",
}

# (accepts the target name?, the backend's name here, its targets as the error for an unknown
# one lists them). None (no target) means "interpreter". `register_backend` adds to
# _REGISTERED, tried first.
_BUILT_IN: list[tuple[Matcher, str, str]] = [
    (lambda name: name == "interpreter", "INTERPRETER", "'interpreter' (the default)"),
    (is_nvidia_target, "NVIDIA", "'sm_80', 'sm_90', 'sm_90a' or 'cuda' (the visible GPU; sm_90 without one)"),
    (is_cpu_target, "CPU", "'cpu' (native code for this machine)"),
    (is_amd_target, "AMD", "'gfx942' or 'gfx950' (AMD, compile-only)"),
]


def _built_in(name: str) -> Backend:
    return getattr(importlib.import_module(_MODULES[name]), name)


def __getattr__(name: str):
    if name not in _MODULES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return _built_in(name)


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
    for matches, backend, _ in reversed(_REGISTERED):
        if matches(name):
            return backend
    for matches, backend_name, _ in _BUILT_IN:
        if matches(name):
            return _built_in(backend_name)
    hints = [hint for _, _, hint in [*_BUILT_IN, *_REGISTERED]]
    raise ValueError(f"unknown target {name!r}; available targets: {', '.join(hints)}")


__all__ = [
    "Backend", "StageOutput", "get_backend", "register_backend", "unregister_backend",
    "module_stage_output", "INTERPRETER", "NVIDIA", "CPU", "AMD",
]  # fmt: skip
