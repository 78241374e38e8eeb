"""LLVM itself (llvmlite.binding), shared by every target that compiles LLVM IR (kept outside
backends/llvm, whose package loads xDSL, so a cache hit loads no compiler): the one lock
around LLVM's global context, lazy initialization, parsing with the offending lines quoted,
and the standard O3 pipeline for a target machine.

LLVM's global context is not thread-safe: every target's LLVM passes run under `llvm_lock`.
"""

from __future__ import annotations

import os
import re
import threading


def held_across_fork(lock):
    """`lock`, taken while the process forks and released on both sides. A process forked while
    a thread holds it (a compile pool started during a native step, or during nvJitLink's warm-up)
    would otherwise inherit it locked, by a thread that does not exist there, and hang on its
    first compile; the fork waits for the step instead, and the child gets the state whole."""
    if not hasattr(os, "register_at_fork"):
        return lock
    taken = []  # whether the fork hook holds it (a Ctrl-C can end the wait, and the fork goes on)

    def before():
        lock.acquire()
        taken.append(True)

    def after():
        if taken:
            taken.clear()
            lock.release()

    os.register_at_fork(before=before, after_in_parent=after, after_in_child=after)
    return lock


llvm_lock = held_across_fork(threading.Lock())
_llvm = None


def binding():
    """llvmlite.binding with every target and assembly printer registered (once per process)."""
    global _llvm
    if _llvm is None:
        import llvmlite.binding as llvm

        llvm.initialize_all_targets()
        llvm.initialize_all_asmprinters()
        _llvm = llvm
    return _llvm


def error_context(text: str, message: str, around: int = 2) -> str:
    """The IR lines LLVM's message points at (`<string>:LINE:COL: error`), with a marker."""
    m = re.search(r":(\d+):(\d+):", message)
    if not m:
        return ""
    line = int(m.group(1))
    lines = text.splitlines()
    lo, hi = max(1, line - around), min(len(lines), line + around)
    return "\n".join(
        f"{'>' if n == line else ' '} {n:5d} | {lines[n - 1]}" for n in range(lo, hi + 1)
    )


def parse_verified(text: str, error: type[Exception]):
    """The parsed, verified llvmlite module of LLVM IR `text`; LLVM's complaint becomes
    `error` quoting the offending IR lines."""
    llvm = binding()
    try:
        module = llvm.parse_assembly(text)
        module.verify()
    except RuntimeError as e:
        context = error_context(text, str(e))
        raise error(
            f"LLVM rejected the kernel's LLVM IR: {str(e).strip()}" + (f"\n{context}" if context else "")
        ) from None
    return module


def optimize(module, tm, speed_level: int = 3) -> None:
    """Run LLVM's standard O<speed_level> module pipeline on `module` in place."""
    llvm = binding()
    pto = llvm.create_pipeline_tuning_options(speed_level=speed_level)
    pb = llvm.create_pass_builder(tm, pto)
    pb.getModulePassManager().run(module, pb)


class LlvmVerify:
    """Pass: parse and verify `m.text` into `m.module` (nothing changes: the record shares the
    text it was given); LLVM's complaint becomes `error`."""

    NAME = "llvm-verify"
    STAGE = "llir"

    def __init__(self, error: type[Exception]):
        self.error = error

    def run(self, m):
        from kernellab.passes.manager import PassOutcome

        m.module = parse_verified(m.text, self.error)
        return PassOutcome(False, "valid LLVM IR")


class LlvmOptimize:
    """Pass: give `m.module` the triple and data layout of `machine(m)` and run LLVM's O3."""

    NAME = "llvm-O3"
    STAGE = "llir"

    def __init__(self, machine):
        self.machine = machine

    def run(self, m):
        from kernellab.passes.manager import PassOutcome

        tm = self.machine(m)
        m.module.triple = tm.triple
        m.module.data_layout = str(tm.target_data)
        optimize(m.module, tm)
        return PassOutcome(True)  # the manager describes it by the IR's size


__all__ = ["held_across_fork", "llvm_lock", "binding", "error_context", "parse_verified", "optimize", "LlvmVerify", "LlvmOptimize"]
