"""Long native steps (LLVM's O3 and code generation, ptxas) that Ctrl-C stops at once.

Python runs a signal handler only between bytecodes of the main thread, so a SIGINT that
arrives while the main thread is inside a C call (LLVM through llvmlite, ptxas through
nvJitLink, both seconds long for big blocks) waits for the call to return. Here the call runs
in a worker thread and the main thread waits on it, which Python interrupts: KeyboardInterrupt
comes within a poll interval, in a script or a Jupyter kernel. The worker can't be stopped
inside C; it finishes in the background (still holding the lock it took, so the next compile
waits for it) and its result is dropped, so nothing it made reaches the cache.

A process that exits while such an abandoned step still runs would tear LLVM and nvJitLink
down under it (a segmentation fault at exit), or, waiting for it, hang for minutes after the
Ctrl-C. So it exits at once instead (`os._exit` after flushing its output), with the status the
exit would have had: 130 after an uncaught KeyboardInterrupt, 1 after another error, else 0.
"""

from __future__ import annotations

import atexit
import contextvars
import os
import signal
import sys
import threading

POLL_SECONDS = 0.05
_SIGNALS = {signal.SIGINT, signal.SIGTERM}
# interrupted native steps, set when they finish. (Not Thread.is_alive: a Ctrl-C that lands in
# Thread.join marks the thread stopped while it still runs in C.)
_abandoned: list[threading.Event] = []


def _exit_without_waiting() -> None:
    if all(finished.is_set() for finished in _abandoned):
        return
    last = getattr(sys, "last_value", None) or getattr(sys, "last_exc", None)
    status = 0 if last is None else 130 if isinstance(last, KeyboardInterrupt) else 1
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001 - a closed stream: nothing left to flush
            pass
    os._exit(status)


def run_interruptibly(fn, *args):
    """`fn(*args)`, run so that the main thread stays responsive to Ctrl-C while it works."""
    if threading.current_thread() is not threading.main_thread():
        return fn(*args)  # signals reach only the main thread: nothing to gain
    outcome: dict = {}
    context = contextvars.copy_context()  # the worker sees the caller's tracing settings

    finished = threading.Event()

    def work():
        # signals go to the main thread, whose wait they interrupt, never into LLVM or ptxas
        signal.pthread_sigmask(signal.SIG_BLOCK, _SIGNALS)
        try:
            outcome["value"] = context.run(fn, *args)
        except BaseException as error:  # handed to the caller, re-raised there
            outcome["error"] = error
        finally:
            finished.set()

    threading.Thread(target=work, name="kernellab-native-compile", daemon=True).start()
    try:
        while not finished.wait(POLL_SECONDS):
            pass
    except BaseException:  # Ctrl-C: the step goes on in C, abandoned
        if not _abandoned:
            atexit.register(_exit_without_waiting)
        _abandoned[:] = [f for f in _abandoned if not f.is_set()] + [finished]
        raise
    if "error" in outcome:
        raise outcome.pop("error")
    return outcome["value"]
