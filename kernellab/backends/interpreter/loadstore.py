"""tt.load and tt.store: gathers and scatters through the argument buffers' flat views."""

from __future__ import annotations

import numpy as np

from kernellab.backends.interpreter.compiler import builds
from kernellab.backends.interpreter.dtypes import np_dtype
from kernellab.ir import tt


def _opt_slot(c, value):
    return None if value is None else c.slot(value)


@builds(tt.LoadOp)
def _load(c, op):
    """Masked-off lanes read `other` (0 without one) and never touch memory."""
    dt = np_dtype(op.result.type)
    p, m, oth, o = c.slot(op.ptr), _opt_slot(c, op.mask), _opt_slot(c, op.other), c.slot(op.result)
    site = c.site("load", op)

    def run(fr):
        e = fr.env
        shape, groups = fr.mem.locate(fr, site, e[p], None if m is None else e[m], dt)
        if fr.trace is not None:
            fr.trace.record(site, fr, shape, groups)
        if len(groups) == 1 and groups[0][2] is None:
            buf, idx, _ = groups[0]
            e[o] = buf.view(dt)[idx]
            return
        out = np.zeros((1,) * len(shape), dt) if oth is None else e[oth]
        for buf, idx, lanes in groups:
            out = np.where(lanes, np.take(buf.view(dt), idx, mode="clip"), out)
        e[o] = np.broadcast_to(out, np.broadcast_shapes(shape, out.shape))
    return run


@builds(tt.StoreOp)
def _store(c, op):
    """Masked-off lanes write nothing; lanes writing one address land in program, lane order."""
    dt = np_dtype(op.value.type)
    p, v, m = c.slot(op.ptr), c.slot(op.value), _opt_slot(c, op.mask)
    site = c.site("store", op)

    def run(fr):
        e = fr.env
        addr, val = e[p], e[v]
        if addr.shape[0] < val.shape[0]:
            addr = np.broadcast_to(addr, val.shape[:1] + addr.shape[1:])
        shape, groups = fr.mem.locate(fr, site, addr, None if m is None else e[m], dt)
        if fr.trace is not None:
            fr.trace.record(site, fr, shape, groups)
        val = np.broadcast_to(val, shape)
        for buf, idx, lanes in groups:
            if lanes is None:
                buf.view(dt)[idx] = val
            else:
                buf.view(dt)[idx[lanes]] = val[lanes]

    return run
