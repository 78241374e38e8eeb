"""The profiler's measuring core (Triton's proton calls): sessions, scopes, a launch hook that
times every kernellab launch, and the JSON profile it writes. `kernellab.profiler` is the
public module (it adds the notebook display from the lab)."""

from kernellab.runtime.profiler.sessions import (
    activate,
    deactivate,
    enter_scope,
    exit_scope,
    finalize,
    read,
    scope,
    start,
)
from kernellab.runtime.profiler.tree import SCHEMA, THROUGHPUT, walk

__all__ = [
    "start", "activate", "deactivate", "finalize", "read", "scope", "enter_scope", "exit_scope",
    "SCHEMA", "THROUGHPUT", "walk",
]  # fmt: skip
