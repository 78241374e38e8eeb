"""What a backend is (a stage dict, parsers, a launcher) and the interpreter, the default one.

`compile()` knows nothing about any particular backend: it asks `kernellab.backends.get_backend`
for the one that matches the target, runs its stages in order (or from the stage a piece of IR
text belongs to) and hands the final artifact to the backend's launcher.
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
    metadata: dict = field(default_factory=dict)  # merged into CompiledKernel.metadata


# A stage turns the previous stage's artifact (for "ttir": the frontend's module) into the next.
Stage = Callable[[Any, Any], StageOutput]


@dataclass(frozen=True)
class Backend:
    """A target: its stages in order, how to parse each stage's text, and how to launch the result.

    `stages()` returns `{name: fn(artifact, options) -> StageOutput}`; `parsers` maps a stage name
    to `fn(text) -> artifact` (stages that can be resumed from text); `launcher(artifact)` returns
    an object with `run(args, grid, trace)`.

    Optional: `make_options(target, **fields)` builds the backend's options object, a
    `CompileOptions` or a subclass of it (default: CompileOptions itself); `resolve_target(name)` canonicalizes a target name ('cuda' →
    'sm_90'); `lazy_asm` maps an asm key to (source stage, fn(artifact text)) computed on first
    access (SASS); `disk_cache` says whether compiles are stored on disk (then `restore(asm,
    metadata)` rebuilds the launchable artifact from a cache entry); `stage_markers` maps a
    stage to a regex that only its text matches (for resuming from IR text); `prepare(options)`
    runs before a compile that misses the cache (start loading a toolchain); `arguments_of(md)`
    gives the Signature of a kernel resumed from text that has no IR function type (PTX);
    `launch_stages` names the asm entries `restore` reads (what a KernelBinary ships to a process
    that launches the kernel; None: every stage); `extern_libs` names the libraries of the
    `extern_libs` option it links (their kernel functions become calls into them).
    """

    name: str
    stages: Callable[[], dict[str, Stage]]
    parsers: dict[str, Callable[[str], Any]]
    launcher: Callable[[Any], Any]
    make_options: Callable[..., Any] | None = None
    resolve_target: Callable[[str], str] | None = None
    lazy_asm: dict = field(default_factory=dict)
    disk_cache: bool = False
    stage_markers: dict = field(default_factory=dict)
    restore: Callable[[dict, Any], Any] | None = None  # (asm, KernelMetadata) → final artifact
    prepare: Callable[[Any], None] | None = None  # (options): runs before a compile that misses the cache
    arguments_of: Callable[[Any], Any] | None = None  # KernelMetadata → Signature, for text past the IR
    launch_stages: tuple[str, ...] | None = None  # the asm entries restore reads
    extern_libs: frozenset[str] = frozenset()  # libraries it links ('libdevice')


def module_stage_output(module, records) -> StageOutput:
    """The output of a stage whose pass pipeline rewrote `module` in place.

    The last pass record already holds the module's text (the pass manager printed it after
    that pass), so the stage reuses it instead of printing the module a second time.
    """
    records = list(records or [])
    if records and records[-1].ir_after:
        text = records[-1].ir_after
    else:
        from kernellab.ir import print_module

        text = print_module(module)
    return StageOutput(module, text, records)


def _ttir_stage(module, options) -> StageOutput:
    from kernellab.passes.ttir import make_ttir

    return module_stage_output(module, make_ttir(module, options))  # rewrites it in place


def _interpreter_ttir_stage(module, options) -> StageOutput:
    from kernellab.passes.ttir import make_ttir

    # the reference runs loop nests as written: no fuse_nested_loops
    return module_stage_output(module, make_ttir(module, options, fuse_loops=False))


def _parse_ir(text: str):
    from kernellab.ir import parse_module

    return parse_module(text)


def _interpreter_launcher(module):
    from kernellab.backends.interpreter import prepare

    return prepare(module)


INTERPRETER = Backend(
    name="interpreter",
    stages=lambda: {"ttir": _interpreter_ttir_stage},
    parsers={"ttir": _parse_ir},
    launcher=_interpreter_launcher,
    launch_stages=("ttir",),
)

__all__ = ["Backend", "StageOutput", "Stage", "module_stage_output", "INTERPRETER"]
