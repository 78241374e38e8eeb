"""tt.atomic_rmw and tt.atomic_cas with sequential semantics.

Lanes are applied in program order, then lane order (row-major), exactly as if each lane's
atomic ran one after another; every lane gets the old value it would see in that order. Lanes
hitting distinct addresses are applied together: the k-th lane to hit each address goes in
step k. Integer add and xor have closed forms (prefix sums within each address), and when the
old values are unused numpy's unbuffered `ufunc.at` applies the updates in order.
"""

from __future__ import annotations

import numpy as np

from kernellab.backends.interpreter.compiler import builds
from kernellab.backends.interpreter.dtypes import NARROW_FLOATS, np_dtype, unsigned
from kernellab.backends.interpreter.ops import binary_fn
from kernellab.ir import tt


def _update_fn(kind: str, dt: np.dtype):
    """new = f(old, val) for an atomic_rmw kind on dtype `dt`."""
    if kind == "exch":
        return lambda old, v: v
    if kind == "fadd":
        return binary_fn("addf", dt)
    if kind in ("umax", "umin"):
        return binary_fn("maxui" if kind == "umax" else "minui", dt)
    name = {"add": "addi", "and": "andi", "or": "ori", "xor": "xori", "max": "maxsi", "min": "minsi"}[kind]
    if dt.kind == "f" or dt in NARROW_FLOATS:
        name = {"maxsi": "maximumf", "minsi": "minimumf", "addi": "addf"}[name]
    return binary_fn(name, dt)


_AT = {"add": np.add, "fadd": np.add, "and": np.bitwise_and, "or": np.bitwise_or,
       "xor": np.bitwise_xor, "max": np.maximum, "min": np.minimum,
       "umax": np.maximum, "umin": np.minimum}  # fmt: skip


def _ranks(i: np.ndarray):
    """For each lane, how many earlier lanes hit the same address; and lanes sorted by that."""
    n = i.size
    order = np.argsort(i, kind="stable")
    si = i[order]
    starts = np.ones(n, bool)
    starts[1:] = si[1:] != si[:-1]
    pos = np.arange(n)
    rank_sorted = pos - np.maximum.accumulate(np.where(starts, pos, 0))
    rank = np.empty(n, np.int64)
    rank[order] = rank_sorted
    return rank, order, starts


def _in_steps(rank, apply) -> None:
    """Call `apply(lanes)` for each step: lanes that are the k-th to hit their address."""
    by_rank = np.argsort(rank, kind="stable")
    bounds = np.searchsorted(rank[by_rank], np.arange(int(rank.max()) + 2))
    for k in range(len(bounds) - 1):
        apply(by_rank[bounds[k] : bounds[k + 1]])


def rmw(kind: str, view: np.ndarray, i: np.ndarray, v: np.ndarray, want_old: bool):
    """Apply lanes (indices `i` into `view`, values `v`) in order; return their old values."""
    dt = view.dtype
    integer = dt.kind in "iub"
    if not want_old and kind in _AT and ((integer and dt != np.bool_) or dt.kind == "f"):
        target = unsigned(view) if kind in ("umax", "umin") else view
        _AT[kind].at(target, i, unsigned(v) if kind in ("umax", "umin") else v)
        return None
    if integer and kind in ("add", "xor") and dt != np.bool_:
        rank, order, starts = _ranks(i)
        sv = v[order]
        scan = np.cumsum(sv) if kind == "add" else np.bitwise_xor.accumulate(sv)
        before = scan - sv if kind == "add" else scan ^ sv  # inclusive → exclusive
        head = np.maximum.accumulate(np.where(starts, np.arange(i.size), 0))
        within = before - before[head] if kind == "add" else before ^ before[head]
        old = np.empty(i.size, dt)
        old[order] = view[i[order]] + within if kind == "add" else view[i[order]] ^ within
        (np.add if kind == "add" else np.bitwise_xor).at(view, i, v)
        return old
    update = _update_fn(kind, dt)
    old = np.empty(i.size, dt)

    def apply(lanes):
        at = i[lanes]
        cur = view[at]
        old[lanes] = cur
        view[at] = update(cur, v[lanes])

    _in_steps(_ranks(i)[0], apply)
    return old


def cas(view: np.ndarray, i: np.ndarray, cmp: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Compare-and-swap lanes in order (bitwise comparison); return the old values."""
    old = np.empty(i.size, view.dtype)

    def apply(lanes):
        at = i[lanes]
        cur = view[at]
        old[lanes] = cur
        hit = unsigned(cur) == unsigned(cmp[lanes])
        view[at[hit]] = v[lanes][hit]

    _in_steps(_ranks(i)[0], apply)
    return old


def _flat_lanes(shape, idx, lanes, *values):
    """Row-major (program, lane) flattening of the active lanes of an access."""
    sel = None if lanes is None else np.broadcast_to(lanes, shape).ravel()
    flat = [np.broadcast_to(x, shape).ravel() for x in (idx, *values)]
    return sel, [f if sel is None else f[sel] for f in flat]


def _atomic(c, op, operands, fn):
    dt = np_dtype(op.result.type)
    slots = [c.slot(v) for v in operands]
    m = None if getattr(op, "mask", None) is None else c.slot(op.mask)
    o = c.slot(op.result)
    want_old = bool(op.result.uses)
    site = c.site("atomic", op)

    def run(fr):
        e = fr.env
        ptr, *vals = [e[s] for s in slots]
        # Every program performs its own atomic even when the operands are uniform (one row),
        # so the access is stretched to all P programs to serialize over the program axis.
        ptr = np.broadcast_to(ptr, (fr.P,) + ptr.shape[1:])
        shape, groups = fr.mem.locate(fr, site, ptr, None if m is None else e[m], dt)
        if fr.trace is not None:
            fr.trace.record(site, fr, shape, groups)
        old = np.zeros(shape, dt)
        for buf, idx, lanes in groups:
            sel, (i, *vs) = _flat_lanes(shape, idx, lanes, *vals)
            got = fn(buf.view(dt), i, *vs, want_old)
            if got is not None:
                flat = old.reshape(-1)
                if sel is None:
                    flat[:] = got
                else:
                    flat[sel] = got
        e[o] = old

    return run


@builds(tt.AtomicRMWOp)
def _atomic_rmw(c, op):
    kind = op.atomic_rmw_op.data
    return _atomic(c, op, [op.ptr, op.val], lambda view, i, v, want: rmw(kind, view, i, v, want))


@builds(tt.AtomicCASOp)
def _atomic_cas(c, op):
    return _atomic(c, op, [op.ptr, op.cmp, op.val], lambda view, i, cm, v, want: cas(view, i, cm, v))
