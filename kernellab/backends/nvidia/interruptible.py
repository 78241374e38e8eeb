"""Long native steps (LLVM's O3 and code generation, ptxas) that Ctrl-C stops at once.

Python runs a signal handler only between bytecodes of the main thread, so a SIGINT that
arrives while the main thread is inside a C call (LLVM through llvmlite, ptxas through
nvJitLink, both seconds long for big blocks) waits for the call to return. Here the call runs
in a worker thread and the main thread waits on it, which Python interrupts: KeyboardInterrupt
comes within a poll interval, in a script or a Jupyter kernel. The worker can't be stopped
inside C; it finishes in the background (still holding the lock it took, so the next compile
waits for it) and its result is dropped, so nothing it made reaches the cache.
"""

from __future__ import annotations

import contextvars
import threading

POLL_SECONDS = 0.05


def run_interruptibly(fn, *args):
    """`fn(*args)`, run so that the main thread stays responsive to Ctrl-C while it works."""
    if threading.current_thread() is not threading.main_thread():
        return fn(*args)  # signals reach only the main thread: nothing to gain
    outcome: dict = {}
    context = contextvars.copy_context()  # the worker sees the caller's tracing settings

    def work():
        try:
            outcome["value"] = context.run(fn, *args)
        except BaseException as error:  # handed to the caller, re-raised there
            outcome["error"] = error

    worker = threading.Thread(target=work, name="kernellab-native-compile", daemon=True)
    worker.start()
    while worker.is_alive():
        worker.join(POLL_SECONDS)
    if "error" in outcome:
        raise outcome.pop("error")
    return outcome["value"]
