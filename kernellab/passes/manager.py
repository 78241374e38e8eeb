"""The pass manager: runs named passes in order and records what each one did.

A pass is any object (usually a module) with a `NAME` and `run(module) -> bool` (changed?); a
pass with something to explain returns a `PassOutcome` (changed + note) instead, and the note
ends its summary. Each run leaves a `PassRecord`: the IR after the pass, its time and a one-line
summary of the op counts; the lab draws these as the pass-by-pass view
(`CompiledKernel.passes`). With `trace`, the IR is printed once per pass, the main cost of tracing. With `verify` (debug mode), the
module is verified after every pass, so a broken rewrite is caught where it happened.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from xdsl.dialects.builtin import ModuleOp

from kernellab.ir import print_module


class Pass(Protocol):
    NAME: str

    def run(self, module: ModuleOp) -> bool: ...


@dataclass
class PassRecord:
    name: str
    ir_after: str  # empty when tracing is off
    seconds: float
    changed: bool
    summary: str = ""
    stage: str = ""  # the compile stage whose pipeline ran it ("ttir", "ttgir", "llir", "ptx",
    # "cubin"); kl.compile fills it in, "" for records made outside a compile


@dataclass(frozen=True)
class PassOutcome:
    """What a pass returns when it has a note for the pass record (e.g. why it left an op)."""

    changed: bool
    note: str = ""

    def __bool__(self) -> bool:
        return self.changed


class PassError(Exception):
    """A pass raised, or left invalid IR (in verify mode); the message names the pass."""

    def __init__(self, pass_name: str, message: str):
        super().__init__(f"pass '{pass_name}' failed: {message}")
        self.pass_name = pass_name


class PassManager:
    def __init__(self, passes: Sequence[Pass], trace: bool = True, verify: bool = False):
        self.passes = list(passes)
        self.trace = trace
        self.verify = verify

    def run(self, module: ModuleOp) -> list[PassRecord]:
        """Run every pass on `module` in place; one record per pass, in order.

        A pass that reports no change shares the previous record's IR text and op counts:
        printing is the manager's main cost, and an unchanged module prints the same.
        """
        records = []
        ir_text = None
        counts = _op_counts(module)
        for p in self.passes:
            start = time.perf_counter()
            try:
                outcome = p.run(module)
            except Exception as error:
                raise PassError(p.NAME, f"{type(error).__name__}: {error}") from error
            seconds = time.perf_counter() - start
            changed = bool(outcome)
            note = getattr(outcome, "note", "")
            if self.verify:
                try:
                    module.verify()
                except Exception as error:
                    raise PassError(p.NAME, f"invalid IR after the pass: {error}") from error
            before = counts
            if changed:
                counts = _op_counts(module)
            if self.trace and (changed or ir_text is None):
                ir_text = print_module(module)
            records.append(
                PassRecord(
                    name=p.NAME,
                    ir_after=ir_text if self.trace else "",
                    seconds=seconds,
                    changed=changed,
                    summary="; ".join(filter(None, [summarize(before, counts, changed), note])),
                )
            )
        return records


def _op_counts(module: ModuleOp) -> Counter:
    return Counter(op.name for op in module.walk())


def summarize(before: Counter, after: Counter, changed: bool) -> str:
    """'3 ops removed', '5 ops added, 2 removed', 'no change', ... from op counts."""
    if not changed:
        return "no change"
    added = sum((after - before).values())
    removed = sum((before - after).values())
    if added and removed:
        return f"{_ops(added)} added, {removed} removed"
    if added or removed:
        return f"{_ops(added or removed)} {'added' if added else 'removed'}"
    return "ops moved or rewritten"


def _ops(n: int) -> str:
    return f"{n} op" if n == 1 else f"{n} ops"
