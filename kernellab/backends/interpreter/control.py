"""scf.for, scf.if and scf.while over a batch of programs.

Uniform control flow (the condition or bounds are the same in every program of the frame) runs
once for the whole batch. Divergent control flow runs each region on the subset of programs
that takes it (`Frame.subset` slices the region's live-in values to those programs) and merges
the results back by program:
- scf.if runs the then-region on the programs whose condition holds and the else-region on the
  others; side effects only happen in the programs that run the region.
- scf.for with per-program bounds computes each program's trip count and runs iteration k on
  the programs that still have one.
- scf.while evaluates the condition on the programs still looping and drops the others.
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects import scf

from kernellab.backends.interpreter.compiler import builds
from kernellab.backends.interpreter.dtypes import np_dtype
from kernellab.backends.interpreter.frame import full, rows


def _scatter(v: np.ndarray, idx: np.ndarray, part: np.ndarray, P: int) -> np.ndarray:
    """A copy of `v` (stretched to P programs) with rows `idx` replaced by `part`."""
    out = full(v, P)
    out[idx] = part
    return out


@builds(scf.ForOp)
def _for(c, op):
    lb, ub, step = c.slot(op.lb), c.slot(op.ub), c.slot(op.step)
    inits = [c.slot(v) for v in op.iter_args]
    results = [c.slot(r) for r in op.res]
    body = c.region(op.body)
    iv_dt = np_dtype(op.lb.type)

    def run(fr):
        e = fr.env
        carried = [e[s] for s in inits]
        lo, hi, st = e[lb], e[ub], e[step]
        if lo.shape[0] == hi.shape[0] == st.shape[0] == 1:
            for i in range(int(lo[0]), int(hi[0]), int(st[0])):
                carried = body.run(fr, [np.array([i], iv_dt), *carried])
        else:
            carried = _divergent_for(fr, body, lo, hi, st, carried, iv_dt)
        for s, v in zip(results, carried):
            e[s] = v

    return run


def _divergent_for(fr, body, lo, hi, st, carried, iv_dt):
    P = fr.P
    lo, hi, st = (np.broadcast_to(x, (P,)).astype(np.int64) for x in (lo, hi, st))
    if (st == 0).any():
        raise ValueError("scf.for with a step of 0 never terminates")
    trips = np.maximum(0, -((lo - hi) // st))
    for k in range(int(trips.max(initial=0))):
        live = trips > k
        iv = (lo + k * st).astype(iv_dt)
        if live.all():
            carried = body.run(fr, [iv, *carried])
            continue
        idx = np.flatnonzero(live)
        out = body.run(fr.subset(idx, body.live_ins), [iv[idx], *(rows(v, idx) for v in carried)])
        carried = [_scatter(v, idx, y, P) for v, y in zip(carried, out)]
    return carried


@builds(scf.IfOp)
def _if(c, op):
    cond = c.slot(op.cond)
    then = c.region(op.true_region)
    other = c.region(op.false_region) if op.false_region.blocks else None
    results = [c.slot(r) for r in op.output]
    dts = [np_dtype(r.type) for r in op.output]

    def branch(code, fr):
        return code.run(fr) if code is not None else []

    def run(fr):
        e = fr.env
        cv = e[cond]
        if cv.shape[0] == 1:
            out = branch(then if cv[0] else other, fr)
        elif cv.all():
            out = branch(then, fr)
        elif not cv.any():
            out = branch(other, fr)
        else:
            t_idx, f_idx = np.flatnonzero(cv), np.flatnonzero(~cv)
            yt = then.run(fr.subset(t_idx, then.live_ins))
            yf = branch(other, fr.subset(f_idx, other.live_ins)) if other is not None else []
            out = []
            for a, b, dt in zip(yt, yf, dts):
                merged = np.empty((fr.P,) + a.shape[1:], dt)
                merged[t_idx], merged[f_idx] = a, b
                out.append(merged)
        for s, v in zip(results, out):
            e[s] = v

    return run


@builds(scf.WhileOp)
def _while(c, op):
    inits = [c.slot(v) for v in op.arguments]
    before, after = c.region(op.before_region), c.region(op.after_region)
    live_ins = tuple(sorted(set(before.live_ins) | set(after.live_ins)))
    results = [c.slot(r) for r in op.res]
    dts = [np_dtype(r.type) for r in op.res]

    def run(fr):
        e = fr.env
        carried = [e[s] for s in inits]
        cur, idx, finals = fr, None, None  # idx: rows of `fr` still looping (None: all)
        while True:
            cond, *fwd = before.run(cur, carried)
            go = bool(cond[0]) if cond.shape[0] == 1 else cond
            if go is True or (go is not False and go.all()):
                carried = after.run(cur, fwd)
                continue
            if idx is None and (go is False or not go.any()):
                out = fwd  # every program left together
                break
            if finals is None:
                finals = [np.empty((fr.P,) + v.shape[1:], dt) for v, dt in zip(fwd, dts)]
            stop = np.ones(cur.P, bool) if go is False else ~go
            leaving = np.flatnonzero(stop)
            absolute = leaving if idx is None else idx[leaving]
            for f, v in zip(finals, fwd):
                f[absolute] = rows(v, leaving)
            keep = np.flatnonzero(~stop)
            if keep.size == 0:
                out = finals
                break
            idx = keep if idx is None else idx[keep]
            cur = fr.subset(idx, live_ins)
            carried = after.run(cur, [rows(v, keep) for v in fwd])
        for s, v in zip(results, out):
            e[s] = v

    return run
