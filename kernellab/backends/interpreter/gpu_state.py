"""tt.assume (checked: a broken promise is named, not silently relied on), tt.globaltimer (the
host's nanosecond clock), tt.smid (one multiprocessor: 0) and the grid-dependency ops (the
interpreter runs kernels one after another, so there is nothing to wait for)."""

from __future__ import annotations

import time

import numpy as np

from kernellab.backends.interpreter.compiler import builds
from kernellab.backends.interpreter.debug import condition_check
from kernellab.ir import tt


@builds(tt.AssumeOp)
def _assume(c, op):
    return condition_check(
        c, op, "tl.assume's condition is false", "; the compiled kernel would rely on it"
    )


@builds(tt.GlobalTimerOp)
def _global_timer(c, op):
    o = c.slot(op.result)

    def run(fr):
        fr.env[o] = np.array([time.time_ns()], np.int64)

    return run


@builds(tt.SmIdOp)
def _sm_id(c, op):
    c.const(op.result, np.zeros(1, np.int32))


@builds(tt.GridDependencyWaitOp, tt.LaunchDependentsOp)
def _grid_dependency(c, op):
    return None
