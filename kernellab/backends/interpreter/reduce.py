"""tt.reduce and tt.scan.

A combine region that is a single commutative arith op on its two arguments maps to a numpy
reduction; anything else (argmax-style pairs, user functions) evaluates the compiled region
itself on whole slices, vectorised over every other element:
- reductions combine adjacent pairs in log2(n) steps (a tree, preserving operand order);
- scans use Hillis-Steele steps (element i combines with element i - d for d = 1, 2, 4, ...).
Float sums and products also use a tree (pairing element i with i + n/2, like a butterfly
across GPU lanes) instead of numpy's sequential or blocked order, and round to the storage
type after every step, so bf16 sums see the same roundings as per-op bf16 arithmetic.
Float cumulative sums/products of fp16/fp32/fp64 use numpy's sequential accumulate.
"""

from __future__ import annotations

import numpy as np

from kernellab.backends.interpreter.compiler import builds
from kernellab.backends.interpreter.dtypes import NARROW_FLOATS, np_dtype, unsigned
from kernellab.backends.interpreter.ops import BOOL_BINARY, binary_fn
from kernellab.ir import arith, tt

_ORDER_FREE = {  # exact and commutative: any order gives the same result
    "addi": np.add, "muli": np.multiply, "andi": np.bitwise_and, "ori": np.bitwise_or,
    "xori": np.bitwise_xor, "maxsi": np.maximum, "minsi": np.minimum,
    "maxui": np.maximum, "minui": np.minimum, "maximumf": np.maximum, "minimumf": np.minimum,
    "maxnumf": np.fmax, "minnumf": np.fmin,
}  # fmt: skip
_TREE = ("addf", "mulf")
_ACCUMULATE = {"addi": np.add, "muli": np.multiply, "addf": np.add, "mulf": np.multiply}


def single_op(region) -> str | None:
    """The arith op name if `region` just applies one binary op to its two arguments."""
    block = region.block
    ops = list(block.ops)
    if len(block.args) != 2 or len(ops) != 2:
        return None
    op, ret = ops
    if type(op) not in arith.BINARY_OPS.values() or list(ret.operands) != [op.results[0]]:
        return None
    if set(op.operands) != set(block.args) or op.operands[0] is op.operands[1]:
        return None
    return op.name.split(".")[1]


def _ufunc(name: str, dt: np.dtype):
    """(ufunc, reads-unsigned) for an order-free op on `dt`, or None."""
    if dt == np.bool_:
        return (BOOL_BINARY[name], False) if name in BOOL_BINARY else None
    if name not in _ORDER_FREE or (name.endswith("f") and dt in NARROW_FLOATS):
        return None
    return _ORDER_FREE[name], name.endswith("ui")


# ---------------------------------------------------------------------------- reduce


def _pairs(xs, n):
    """Split the last axis into adjacent pairs: (evens, odds, leftover or None)."""
    h = n // 2
    left = [x[..., 0 : 2 * h : 2] for x in xs]
    right = [x[..., 1 : 2 * h : 2] for x in xs]
    rest = [x[..., 2 * h :] for x in xs] if n % 2 else None
    return left, right, rest


def tree_reduce(xs, combine, halves=False):
    """Reduce the last axis of each array in `xs` with `combine(lefts, rights) -> list`."""
    n = xs[0].shape[-1]
    while n > 1:
        if halves:
            h = n // 2
            left, right = [x[..., :h] for x in xs], [x[..., h : 2 * h] for x in xs]
            rest = [x[..., 2 * h :] for x in xs] if n % 2 else None
        else:
            left, right, rest = _pairs(xs, n)
        xs = combine(left, right)
        if rest is not None:
            xs = [np.concatenate([x, r], axis=-1) for x, r in zip(xs, rest)]
        n = xs[0].shape[-1]
    return [x[..., 0] for x in xs]


@builds(tt.ReduceOp)
def _reduce(c, op):
    axis = op.axis.value.data + 1
    srcs = [c.slot(v) for v in op.srcs]
    results = [c.slot(r) for r in op.result]
    combine = c.region(op.combineOp)
    name = single_op(op.combineOp) if len(srcs) == 1 else None
    dt = np_dtype(op.srcs[0].type)
    fast = _ufunc(name, dt) if name else None
    tree = binary_fn(name, dt) if name in _TREE else None

    def run(fr):
        e = fr.env
        xs = [e[s] for s in srcs]
        if fast is not None:
            ufunc, as_unsigned = fast
            x = unsigned(xs[0]) if as_unsigned else xs[0]
            r = ufunc.reduce(x, axis=axis, dtype=x.dtype)  # numpy would widen int32 sums
            outs = [r.view(dt) if as_unsigned else r]
        elif tree is not None:
            outs = tree_reduce([np.moveaxis(xs[0], axis, -1)], lambda lhs, rhs: [tree(lhs[0], rhs[0])], True)
        else:
            outs = tree_reduce([np.moveaxis(x, axis, -1) for x in xs], _region_fn(combine, fr))
        for s, v in zip(results, outs):
            e[s] = v

    return run


# ------------------------------------------------------------------------------ scan


def hillis_steele(xs, combine):
    """Inclusive scan of the last axis: log2(n) steps, each combining i - d with i."""
    n, d = xs[0].shape[-1], 1
    while d < n:
        combined = combine([x[..., : n - d] for x in xs], [x[..., d:] for x in xs])
        xs = [np.concatenate([x[..., :d], y], axis=-1) for x, y in zip(xs, combined)]
        d *= 2
    return xs


def _accumulator(name: str | None, dt: np.dtype):
    """A ufunc whose `accumulate` computes the scan of a single-op region, or None."""
    if name is None or dt in NARROW_FLOATS:
        return None
    if dt == np.bool_:
        return BOOL_BINARY.get(name)
    if name in _ACCUMULATE:
        return _ACCUMULATE[name]
    return _ORDER_FREE[name] if name in _ORDER_FREE and not name.endswith("ui") else None


def _region_fn(combine, fr):
    """The compiled combine region as `fn(lefts, rights) -> list` on whole slices."""

    def apply(left, right):
        shape = left[0].shape
        return [np.broadcast_to(v, shape) for v in combine.run(fr, left + right)]

    return apply


@builds(tt.ScanOp)
def _scan(c, op):
    axis = op.axis.value.data + 1
    reverse = op.reverse.value.data != 0
    srcs = [c.slot(v) for v in op.srcs]
    results = [c.slot(r) for r in op.result]
    combine = c.region(op.combineOp)
    name = single_op(op.combineOp) if len(srcs) == 1 else None
    dt = np_dtype(op.srcs[0].type)
    fast = _accumulator(name, dt)

    def run(fr):
        e = fr.env
        xs = [np.moveaxis(e[s], axis, -1) for s in srcs]
        if reverse:
            xs = [x[..., ::-1] for x in xs]
        if fast is not None:
            outs = [fast.accumulate(xs[0], axis=-1, dtype=dt)]
        else:
            outs = hillis_steele(xs, _region_fn(combine, fr))
        if reverse:
            outs = [x[..., ::-1] for x in outs]
        for s, v in zip(results, outs):
            e[s] = np.moveaxis(v, -1, axis)

    return run

