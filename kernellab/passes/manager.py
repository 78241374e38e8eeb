"""The pass manager: runs named passes in order over one artifact and records what each did.

Every pass of every stage runs through it, LLVM's included: the artifact is an xDSL module
(TTIR, TTGIR; the default printer and verifier) or anything else given with its own printer
(the NVIDIA backend's LLVM module). A pass is any object with a `NAME` and `run(artifact)`
that rewrites the artifact in place and returns what it did: a `Rewrites` (the rewrite
engine's count of what fired), a `PassOutcome`, or a bare bool (changed?). A pass whose
output is another stage's IR than the pipeline's says so with a `STAGE` (LLVM's passes run
in the ptx stage but leave LLVM IR: "llir").

Each run leaves a `PassRecord`: the IR after the pass, its time, whether it changed anything
and a one-line summary (the pass's own, e.g. "3× fold-constant, 1× add-zero"); the lab draws
these as the pass-by-pass view (`CompiledKernel.passes`). With `trace`, the IR is printed after
each pass that changed it (an unchanged pass shares the previous text): printing is the main
cost of tracing. With `verify` (debug mode), the artifact is verified after every pass, so a
broken rewrite is caught where it happened.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol


class Pass(Protocol):
    NAME: str  # optional: STAGE, the stage whose IR the pass leaves (see PassRecord.stage)

    def run(self, artifact: Any) -> Any: ...


@dataclass(frozen=True)
class PassOutcome:
    """What a pass that is not made of rewrite patterns did (an LLVM pass, a code generator)."""

    changed: bool
    summary: str = ""  # "": the manager describes the change by the printed IR's size


@dataclass
class PassRecord:
    name: str
    ir_after: str  # empty when tracing is off
    seconds: float
    changed: bool
    summary: str = ""
    stage: str = ""  # the stage whose IR the pass leaves behind ("ttir", "ttgir", "llir",
    # "ptx", "cubin"): the pass's STAGE, else kl.compile fills in the stage that ran it;
    # "" for records made outside a compile


class PassError(Exception):
    """A pass raised, or left invalid IR (in verify mode); the message names the pass."""

    def __init__(self, pass_name: str, message: str):
        super().__init__(f"pass '{pass_name}' failed: {message}")
        self.pass_name = pass_name


def _print_module(module) -> str:
    # imported here: a cached compile loads the backend (and this module) but never xDSL
    from kernellab.ir import print_module

    return print_module(module)


def _verify_module(module) -> None:
    module.verify()


class PassManager:
    """`printer(artifact) -> str` prints the IR for the records; `verifier(artifact)` raises on
    invalid IR (None: the artifact has no verifier of its own)."""

    def __init__(
        self,
        passes: Sequence[Pass],
        trace: bool = True,
        verify: bool = False,
        printer: Callable[[Any], str] = _print_module,
        verifier: Callable[[Any], None] | None = _verify_module,
    ):
        self.passes = list(passes)
        self.trace = trace
        self.verify = verify
        self.printer = printer
        self.verifier = verifier

    def run(self, artifact, text_before: str | None = None) -> list[PassRecord]:
        """Run every pass on `artifact` in place; one record per pass, in order.

        `text_before` is the artifact's text before the first pass when the caller has it in
        hand: a first pass that changes nothing shares it instead of printing the artifact.
        """
        records = []
        ir_text = text_before
        for p in self.passes:
            start = time.perf_counter()
            try:
                changed, summary = _outcome(p.run(artifact))
            except Exception as error:
                raise PassError(p.NAME, f"{type(error).__name__}: {error}") from error
            seconds = time.perf_counter() - start
            if self.verify and self.verifier is not None:
                try:
                    self.verifier(artifact)
                except Exception as error:
                    raise PassError(p.NAME, f"invalid IR after the pass: {error}") from error
            previous = ir_text
            if self.trace and (changed or ir_text is None):
                ir_text = self.printer(artifact)
            if not summary:
                summary = _describe(previous, ir_text, changed) if self.trace else _CHANGED[changed]
            records.append(
                PassRecord(
                    name=p.NAME,
                    ir_after=ir_text if self.trace else "",
                    seconds=seconds,
                    changed=changed,
                    summary=summary,
                    stage=getattr(p, "STAGE", ""),
                )
            )
        return records


_CHANGED = {True: "changed", False: "no change"}


def _outcome(result) -> tuple[bool, str]:
    """(changed, summary) of what a pass returned: Rewrites, PassOutcome or bool."""
    if result is None or isinstance(result, bool):
        return bool(result), ""
    return bool(result.changed), result.summary


def _describe(before: str | None, after: str | None, changed: bool) -> str:
    """'1204 → 830 lines' for a pass that gives no summary of its own."""
    if not changed:
        return "no change"
    if before is None or after is None:
        return "changed"
    return f"{_lines(before)} → {_lines(after)} lines"


def _lines(text: str) -> int:
    return text.count("\n") + (not text.endswith("\n"))
