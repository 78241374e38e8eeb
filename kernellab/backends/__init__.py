"""Backends: each one is an ordered stage dict plus a launcher, looked up by target name.

`compile()` knows nothing about any particular backend: it asks `get_backend(target)` for the
stages, runs them in order (or from the stage a piece of IR text belongs to) and hands the final
artifact to the backend's launcher. A new backend is one more `Backend` registered here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass
class StageOutput:
    """What one stage made: the artifact the next stage consumes, its text, and its pass records."""

    artifact: Any
    text: str | bytes
    passes: list = field(default_factory=list)


# A stage turns the previous stage's artifact (for "ttir": the frontend's module) into the next.
Stage = Callable[[Any, Any], StageOutput]


@dataclass(frozen=True)
class Backend:
    """A target: its stages in order, how to parse each stage's text, and how to launch the result.

    `stages()` returns `{name: fn(artifact, options) -> StageOutput}`; `parsers` maps a stage name
    to `fn(text) -> artifact` (stages that can be resumed from text); `launcher(artifact)` returns
    an object with `run(args, grid, trace)`.
    """

    name: str
    stages: Callable[[], dict[str, Stage]]
    parsers: dict[str, Callable[[str], Any]]
    launcher: Callable[[Any], Any]


def _ttir_stage(module, options) -> StageOutput:
    from kernellab.ir import print_module
    from kernellab.passes.ttir import make_ttir

    records = make_ttir(module, options)  # rewrites the module in place
    return StageOutput(module, print_module(module), records)


def _parse_ir(text: str):
    from kernellab.ir import parse_module

    return parse_module(text)


def _interpreter_launcher(module):
    from kernellab.backends.interpreter import prepare

    return prepare(module)


INTERPRETER = Backend(
    name="interpreter",
    stages=lambda: {"ttir": _ttir_stage},
    parsers={"ttir": _parse_ir},
    launcher=_interpreter_launcher,
)

_BACKENDS = {"interpreter": INTERPRETER}
# Targets other issues will add; named here so asking for one gives a useful answer today.
_PLANNED = ("sm_80", "sm_90", "sm_90a", "cuda", "nvidia")


def get_backend(target: str | None) -> Backend:
    """The backend for `target` (None means the interpreter)."""
    name = "interpreter" if target is None else str(target)
    try:
        return _BACKENDS[name]
    except KeyError:
        pass
    if name in _PLANNED:
        raise ValueError(
            f"target {name!r} is not available in this build: only the interpreter backend is; "
            "use target='interpreter' (the default)"
        )
    raise ValueError(f"unknown target {name!r}; available targets: {', '.join(_BACKENDS)}")


__all__ = ["Backend", "StageOutput", "get_backend", "INTERPRETER"]
