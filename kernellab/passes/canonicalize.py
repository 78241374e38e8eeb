"""canonicalize: constant folding, exact algebraic identities, and trivial control flow.

Every rewrite must preserve the value bit for bit. For integers that allows the usual
identities; for floats only the exact ones: `x + -0.0`, `x - 0.0`, `x * 1.0`, `x / 1.0` are x,
but `x + 0.0` is not (-0.0 + 0.0 is +0.0) and `x * 0.0` is not 0 (NaN, inf, -0.0).
Folded constants take the location of the op they replace, so the lab still maps them to source.
Ops left without users are not removed here: that is `dce`'s job. Each rule is a named pattern
of the rewrite engine, so the pass's record counts what fired.
"""

from __future__ import annotations

import math

from xdsl.dialects import scf
from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter
from xdsl.rewriter import InsertPoint

from kernellab.ir import arith, tt
from kernellab.passes.rewrite import Rewrites, pattern, rewrite_greedily
from kernellab.passes.splats import splat_of

# kernellab.passes.folding (numpy) is imported where a constant is made or all operands are
# constants: a kernel with nothing to fold compiles without numpy.

NAME = "canonicalize"

_SHAPE_OPS = (tt.BroadcastOp, tt.ExpandDimsOp, tt.ReshapeOp, tt.TransOp)


def run(module) -> Rewrites:
    return rewrite_greedily(module, PATTERNS)


def _simplifying(rule):
    """The pattern of an identity rule: it returns a new op, an existing value or a number."""

    def apply(op: Operation, rewriter: PatternRewriter) -> None:
        result = rule(op)
        if isinstance(result, Operation):
            result.location = op.location
            rewriter.replace(op, result)
        elif isinstance(result, SSAValue):
            rewriter.replace(op, [], [result])
        elif result is not None:
            import numpy as np

            _replace_with_constant(op, np.asarray(result), rewriter)

    return apply


def _replace_with_constant(op: Operation, value, rewriter: PatternRewriter) -> None:
    """Replace `op` by a constant holding `value` (a numpy array)."""
    from kernellab.passes.folding import materialize

    constant = materialize(value, op.results[0].type)
    constant.location = op.location
    rewriter.replace(op, constant)


def _fold_constants(op: Operation, rewriter: PatternRewriter) -> None:
    if not op.operands or isinstance(op, arith.ConstantOp):
        return
    if not all(isinstance(v.owner, arith.ConstantOp) for v in op.operands):
        return
    from kernellab.passes.folding import constant_of, fold

    args = [constant_of(v) for v in op.operands]
    if any(a is None for a in args):
        return
    value = fold(op, args)
    if value is not None:
        _replace_with_constant(op, value, rewriter)


# ----------------------------------------------------------------------------- identities


def _is(value: SSAValue, number: float) -> bool:
    """`value` is a constant whose every element equals `number` (-0.0 distinct from 0.0)."""
    v = splat_of(value)
    return v is not None and v == number and math.copysign(1.0, v) == math.copysign(1.0, number)


def _either(op, number: float) -> SSAValue | None:
    """The other operand of a commutative op whose lhs or rhs is the constant `number`."""
    if _is(op.rhs, number):
        return op.lhs
    if _is(op.lhs, number):
        return op.rhs
    return None


def _same(op) -> bool:
    return op.lhs is op.rhs


def _addi(op):
    return _either(op, 0)


def _subi(op):
    if _same(op):
        return 0
    return op.lhs if _is(op.rhs, 0) else None


def _muli(op):
    if _is(op.lhs, 0) or _is(op.rhs, 0):
        return 0
    return _either(op, 1)


def _div_by_one(op):
    return op.lhs if _is(op.rhs, 1) else None


def _rem_by_one(op):
    return 0 if _is(op.rhs, 1) else None


def _andi(op):
    if _same(op):
        return op.lhs
    if _is(op.lhs, 0) or _is(op.rhs, 0):
        return 0
    return _either(op, -1)


def _ori(op):
    if _same(op):
        return op.lhs
    if _is(op.lhs, -1) or _is(op.rhs, -1):
        return -1
    return _either(op, 0)


def _xori(op):
    if _same(op):
        return 0
    return _either(op, 0)


def _shift(op):
    return op.lhs if _is(op.rhs, 0) else None


def _idempotent(op):
    """max(x, x), min(x, x): x (also for floats: NaN stays NaN)."""
    return op.lhs if _same(op) else None


def _addf(op):
    return _either(op, -0.0)


def _subf(op):
    return op.lhs if _is(op.rhs, 0.0) else None


def _mulf(op):
    return _either(op, 1.0)


def _divf(op):
    return op.lhs if _is(op.rhs, 1.0) else None


def _negf(op):
    inner = op.operand.owner
    return inner.operand if isinstance(inner, arith.NegfOp) else None


_CMPI_REFLEXIVE = {"eq": True, "sle": True, "sge": True, "ule": True, "uge": True}


def _cmpi(op):
    if not _same(op):
        return None
    return -1 if _CMPI_REFLEXIVE.get(op.predicate_name, False) else 0


def _select(op):
    if op.lhs is op.rhs:
        return op.lhs
    cond = splat_of(op.cond)
    if cond is None:
        return None
    return op.lhs if cond else op.rhs


# ---------------------------------------------------------------------------------- casts


def _widen_twice(op):
    """extsi(extsi x) → extsi x (likewise extui, extf): one exact widening."""
    inner = op.input.owner
    if type(inner) is type(op):
        return type(op)(inner.input, op.result.type)
    return None


def _narrow(op):
    """trunci(ext x) → x when back at x's type; trunci(trunci x) → trunci x."""
    inner = op.input.owner
    if isinstance(inner, arith.ExtsiOp | arith.ExtuiOp) and inner.input.type == op.result.type:
        return inner.input
    if isinstance(inner, arith.TrunciOp):
        return arith.TrunciOp(inner.input, op.result.type)
    return None


def _truncf(op):
    """truncf(extf x) → x when back at x's type (the widening was exact)."""
    inner = op.input.owner
    if isinstance(inner, arith.ExtfOp) and inner.input.type == op.result.type:
        return inner.input
    return None


# ------------------------------------------------------------------------------- tt ops


def _shape_op(op):
    """A shape change that changes nothing is its input; one of a splat is a splat."""
    if op.src.type == op.result.type and not _reorders(op):
        return op.src
    inner = op.src.owner
    if isinstance(inner, tt.SplatOp):
        return tt.SplatOp(inner.src, op.result.type)
    return None


def _reorders(op) -> bool:
    """A transpose moves elements even when the type stays (a square tile)."""
    if not isinstance(op, tt.TransOp):
        return False
    order = tuple(op.order.get_values())
    return order != tuple(range(len(order)))


def _addptr(op):
    return op.ptr if _is(op.offset, 0) else None


# ------------------------------------------------------------------------ control flow


def _constant_if(op: scf.IfOp, rewriter: PatternRewriter) -> None:
    """scf.if on a constant: the taken branch's ops replace the if."""
    cond = splat_of(op.cond)
    if cond is None:
        return
    region = op.true_region if cond else op.false_region
    if not region.blocks:
        rewriter.erase(op)
        return
    block = region.block
    results: list[SSAValue] = []
    if isinstance(block.last_op, scf.YieldOp):
        results = list(block.last_op.operands)
        rewriter.erase(block.last_op)
    rewriter.inline_block(block, InsertPoint.before(op))
    rewriter.replace(op, [], results)


def _empty_for(op: scf.ForOp, rewriter: PatternRewriter) -> None:
    """scf.for whose constant bounds give no iteration: its results are its initial values."""
    lb, ub = splat_of(op.lb), splat_of(op.ub)
    if lb is not None and ub is not None and int(lb) >= int(ub):
        rewriter.replace(op, [], list(op.iter_args))


def _forward_unchanged(op: scf.ForOp, rewriter: PatternRewriter) -> bool:
    """A value the loop carries but never changes (a block pointer's base, shape and strides,
    carried with its advancing offsets) is its initial value everywhere: inside the body and
    after the loop (the carried slot itself stays, unused)."""
    body = op.body.block
    yielded = body.last_op
    fired = False
    for i, init in enumerate(op.iter_args):
        arg = body.args[i + 1]
        if yielded.operands[i] is not arg:
            continue
        if any(use.operation is not yielded for use in arg.uses) or op.results[i].uses:
            arg.replace_uses_with_if(init, lambda use: use.operation is not yielded)
            op.results[i].replace_all_uses_with(init)
            fired = True
    return fired


_SIMPLIFICATIONS = [
    ("add-zero", _addi, ["arith.addi"]),
    ("sub-self-or-zero", _subi, ["arith.subi"]),
    ("mul-zero-or-one", _muli, ["arith.muli"]),
    ("div-by-one", _div_by_one, ["arith.divsi", "arith.divui"]),
    ("rem-by-one", _rem_by_one, ["arith.remsi", "arith.remui"]),
    ("and-identity", _andi, ["arith.andi"]),
    ("or-identity", _ori, ["arith.ori"]),
    ("xor-identity", _xori, ["arith.xori"]),
    ("shift-by-zero", _shift, ["arith.shli", "arith.shrsi", "arith.shrui"]),
    ("min-max-self", _idempotent,
     [f"arith.{n}" for n in ["maxsi", "minsi", "maxui", "minui", "maximumf", "minimumf",
                             "maxnumf", "minnumf"]]),
    ("addf-minus-zero", _addf, ["arith.addf"]),
    ("subf-zero", _subf, ["arith.subf"]),
    ("mulf-one", _mulf, ["arith.mulf"]),
    ("divf-one", _divf, ["arith.divf"]),
    ("double-negation", _negf, ["arith.negf"]),
    ("cmpi-self", _cmpi, ["arith.cmpi"]),
    ("select-known", _select, ["arith.select"]),
    ("widen-twice", _widen_twice, ["arith.extsi", "arith.extui", "arith.extf"]),
    ("narrow-widened", _narrow, ["arith.trunci"]),
    ("truncf-extf", _truncf, ["arith.truncf"]),
    ("shape-noop-or-splat", _shape_op, [cls.name for cls in _SHAPE_OPS]),
    ("addptr-zero", _addptr, ["tt.addptr"]),
]  # fmt: skip

# Control flow first, then folding, then the op's identity rule (the first that fires wins).
PATTERNS = [
    pattern("inline-constant-if", _constant_if, ["scf.if"]),
    pattern("erase-empty-for", _empty_for, ["scf.for"]),
    pattern("forward-unchanged-iter-arg", _forward_unchanged, ["scf.for"]),
    pattern("fold-constant", _fold_constants),
    *(pattern(name, _simplifying(rule), ops) for name, rule, ops in _SIMPLIFICATIONS),
]
