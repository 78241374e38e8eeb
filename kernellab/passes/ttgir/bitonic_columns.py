"""bitonic-columns (CPU): the compare-exchange columns of tl.sort and tl.topk's bitonic networks
become `cpu.bitonic_columns` ops, consecutive columns one op.

The language writes each column (kernellab.language.sorting._compare_exchange) as a reshape to
(pairs, 2, 2**j), two size-2 sum reductions that pick each pair's low and high element, a
comparison, broadcasts and selects. On a CPU thread holding the whole tensor as one LLVM
vector, every one of those is a shuffle as wide as the tensor, and LLVM's x86 code generator
is superlinear in shuffle width: a 2048-element sort took over two minutes to compile. The op
lets the lowering run each column as a loop over vector registers instead
(backends/cpu/lowering/bitonic.py).

Matched exactly, op by op, from the reshape that ends a column back to the one that starts it
(any other computation of that shape is left alone, only slower to compile); run on TTGIR whose
warps are one thread (every tensor held whole), after the layout passes, so the op needs no
layout rule. The dead column ops are left to dce.
"""

from __future__ import annotations

from xdsl.dialects.builtin import IntegerType, ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from kernellab.ir import cpu, tt
from kernellab.passes.rewrite import Rewrites
from kernellab.passes.splats import splat_of

NAME = "bitonic-columns"

# the comparisons a column may use: floats by their own `>` (NaN never swaps), ints signed or not
_PREDICATES = {"arith.cmpf": ("ogt",), "arith.cmpi": ("sgt", "ugt")}


def run(module: ModuleOp) -> Rewrites:
    rewrites = Rewrites()
    attrs = module.attributes
    if any(
        k not in attrs or attrs[k].value.data != 1
        for k in ("ttg.num-warps", "ttg.threads-per-warp")
    ):
        return rewrites
    for op in [op for op in module.walk() if isinstance(op, tt.ReshapeOp)]:
        column = _column(op)
        if column is None:
            continue
        src, j, flip, predicate, compare_type = column
        prior = _prior_columns(src, predicate, compare_type)
        if prior is not None:
            src, columns = prior.src, [*prior.column_list(), (j, flip)]
        else:
            columns = [(j, flip)]
        new = cpu.BitonicColumnsOp(src, columns, predicate, compare_type)
        Rewriter.insert_op(new, InsertPoint.before(op))
        op.result.replace_all_uses_with(new.result)
        rewrites.note("bitonic-column")
    return rewrites


def _op(value: SSAValue, name: str) -> Operation | None:
    owner = value.owner
    return owner if isinstance(owner, Operation) and owner.name == name else None


def _shape(value: SSAValue) -> tuple[int, ...]:
    return tuple(value.type.get_shape())


def _splat(value: SSAValue, expected) -> bool:
    v = splat_of(value)
    return v is not None and not isinstance(v, float) and v == expected


def _prior_columns(src: SSAValue, predicate: str, compare_type) -> cpu.BitonicColumnsOp | None:
    """The bitonic_columns op `src` comes from (directly or through a bitcast round trip), if it
    compares the same way: the next column then joins it."""
    outer = _op(src, "tt.bitcast")
    if outer is not None:
        inner = _op(outer.src, "tt.bitcast")
        if inner is None or inner.src.type != src.type:
            return None
        src = inner.src
    prior = src.owner
    if (
        isinstance(prior, cpu.BitonicColumnsOp)
        and prior.predicate.data == predicate
        and prior.compare_type == compare_type
    ):
        return prior
    return None


def _column(end: tt.ReshapeOp):
    """(source, j, flip, predicate, compare type) when `end` ends a compare-exchange column."""
    chosen = _op(end.src, "arith.select")
    if chosen is None:
        return None
    swap_b, partner, bits = chosen.operands
    start = _op(bits, "tt.reshape")
    elem = bits.type.element_type
    if (
        start is None
        or start.src.type != end.result.type
        or not isinstance(elem, IntegerType)
        or elem.width.data < 8
    ):
        return None  # (i1 tensors, tl.sort of booleans, keep the op-by-op network)
    shape = _shape(bits)
    if len(shape) != 3 or shape[1] != 2 or shape[2] & (shape[2] - 1):
        return None
    pairs, j = shape[0], shape[2].bit_length() - 1
    is_high = _picks(partner, bits)
    if is_high is None or not _is_high(is_high):
        return None
    low, high = _partner_halves(partner)
    if not (_half(low, is_high, bits, True) and _half(high, is_high, bits, False)):
        return None
    swap_op = _op(swap_b, "tt.broadcast")
    swap = _op(swap_op.src, "arith.cmpi") if swap_op is not None else None
    if swap is None or swap.predicate_name != "ne":
        return None
    compared, flip_v = swap.operands
    cmp = compared.owner
    if not isinstance(cmp, Operation) or cmp.predicate_name not in _PREDICATES.get(cmp.name, ()):
        return None
    lhs, rhs = (_through_bitcast(v) for v in cmp.operands)
    if lhs is not low or rhs is not high:
        return None
    flip = _flip(flip_v, pairs, j)
    if flip is None:
        return None
    return start.src, j, flip, cmp.predicate_name, cmp.operands[0].type.element_type


def _through_bitcast(value: SSAValue) -> SSAValue:
    cast = _op(value, "tt.bitcast")
    return cast.src if cast is not None else value


def _picks(partner: SSAValue, bits: SSAValue) -> SSAValue | None:
    """The broadcast is_high mask of `partner = select(is_high, low, high)`."""
    sel = _op(partner, "arith.select")
    if sel is None or sel.cond.type.get_shape() != bits.type.get_shape():
        return None
    return sel.cond


def _partner_halves(partner: SSAValue) -> list[SSAValue | None]:
    """The (pairs, 1, 2**j) low and high values `partner` broadcasts."""
    sel = partner.owner
    out = []
    for v in (sel.lhs, sel.rhs):
        b = _op(v, "tt.broadcast")
        out.append(b.src if b is not None else None)
    return out


def _expanded_equals_one(value: SSAValue) -> tuple[SSAValue, int, int] | None:
    """(x, a, b) when `value` is `expand_dims(expand_dims(x, a), b) == 1`: how the network
    writes its per-column masks."""
    eq = _op(value, "arith.cmpi")
    if eq is None or eq.predicate_name != "eq" or not _splat(eq.rhs, 1):
        return None
    outer = _op(eq.lhs, "tt.expand_dims")
    inner = _op(outer.src, "tt.expand_dims") if outer is not None else None
    if inner is None:
        return None
    return inner.src, inner.axis.value.data, outer.axis.value.data


def _is_high(mask: SSAValue) -> bool:
    """`broadcast(arange(0, 2)[None, :, None] == 1)`."""
    b = _op(mask, "tt.broadcast")
    expanded = _expanded_equals_one(b.src) if b is not None else None
    if expanded is None or expanded[1:] != (0, 2):
        return False
    rng = _op(expanded[0], "tt.make_range")
    return rng is not None and rng.start.value.data == 0 and rng.end.value.data == 2


def _half(value: SSAValue | None, is_high: SSAValue, bits: SSAValue, low: bool) -> bool:
    """Whether `value` is `sum(where(is_high, 0, bits), 1, keep_dims=True)` (the pairs' low
    elements) when `low`, else `sum(where(is_high, bits, 0), ...)` (the high ones)."""
    expand = _op(value, "tt.expand_dims") if value is not None else None
    red = _op(expand.src, "tt.reduce") if expand is not None else None
    if (
        red is None
        or expand.axis.value.data != 1
        or red.axis.value.data != 1
        or len(red.operands) != 1
    ):
        return False
    body = red.combineOp.block
    ops = list(body.ops)
    if len(ops) != 2 or ops[0].name != "arith.addi" or tuple(ops[0].operands) != tuple(body.args):
        return False
    if tuple(ops[1].operands) != tuple(ops[0].results):
        return False
    sel = _op(red.operands[0], "arith.select")
    if sel is None or sel.cond is not is_high:
        return False
    kept, zeroed = (sel.rhs, sel.lhs) if low else (sel.lhs, sel.rhs)
    return kept is bits and _splat(zeroed, 0)


def _flip(value: SSAValue, pairs: int, j: int) -> int | None:
    """The column's flip: a constant, or `((arange(0, pairs) >> s) & 1)[:, None, None] == 1`,
    bit j + 1 + s of the element index."""
    v = splat_of(value)
    if v is not None:
        return cpu.FLIP_TRUE if v else cpu.FLIP_FALSE
    spread = _op(value, "tt.broadcast")  # (pairs, 1, 1) over the pairs' 2**j columns
    expanded = _expanded_equals_one(spread.src if spread is not None else value)
    if expanded is None or expanded[1:] != (1, 2):
        return None
    bit = _op(expanded[0], "arith.andi")
    if bit is None or not _splat(bit.rhs, 1):
        return None
    shifted, shift = bit.lhs, 0
    shr = _op(shifted, "arith.shrsi") or _op(shifted, "arith.shrui")
    if shr is not None:
        s = splat_of(shr.rhs)
        if s is None or isinstance(s, float) or s < 0:
            return None
        shifted, shift = shr.lhs, int(s)
    rng = _op(shifted, "tt.make_range")
    if rng is None or rng.start.value.data != 0 or rng.end.value.data != pairs:
        return None
    return j + 1 + shift


__all__ = ["NAME", "run"]
