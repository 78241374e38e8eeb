"""inline: replace every tt.call to a private tt.func by a copy of the callee's body.

The frontend emits each called @jit function (one per constexpr specialization) as a private
tt.func with one block ending in tt.return. Callees are flattened first (their own calls
inlined), so each body is copied already flat. The copies keep the callee ops' source locations:
that is how the lab maps inlined code back to the helper function's lines. Callees left without
callers are erased. Counted on a `Rewrites`: inline-call, erase-dead-function.
"""

from __future__ import annotations

from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import SSAValue
from xdsl.rewriter import Rewriter

from kernellab.ir import tt
from kernellab.passes.dce import remove_dead_functions
from kernellab.passes.rewrite import Rewrites

NAME = "inline"


class InlineError(Exception):
    """A call the inliner cannot expand (recursion, or a callee it cannot see)."""


def run(module: ModuleOp) -> Rewrites:
    functions = {f.sym_name.data: f for f in module.ops if isinstance(f, tt.FuncOp)}
    flat: set[str] = set()
    rewrites = Rewrites()
    for name in functions:
        rewrites.note("inline-call", _flatten(name, functions, flat, ()))
    rewrites.note("erase-dead-function", remove_dead_functions(module))
    return rewrites


def _flatten(name: str, functions: dict, flat: set[str], stack: tuple[str, ...]) -> int:
    """Inline every call to a private function inside `name` (callees flattened first); how
    many calls were inlined there."""
    if name in flat:
        return 0
    if name in stack:
        raise InlineError(f"recursive call: {' -> '.join((*stack, name))}; kernels cannot recurse")
    inlined = 0
    for call in [op for op in functions[name].walk() if isinstance(op, tt.CallOp)]:
        callee_name = call.callee.root_reference.data
        callee = functions.get(callee_name)
        if callee is None:
            raise InlineError(f"call to @{callee_name}, which is not defined in this module")
        if not callee.is_private:
            continue
        inlined += _flatten(callee_name, functions, flat, (*stack, name))
        _inline_call(call, callee)
        inlined += 1
    flat.add(name)
    return inlined


def _inline_call(call: tt.CallOp, callee: tt.FuncOp) -> None:
    if len(callee.body.blocks) != 1 or not isinstance(callee.body.block.last_op, tt.ReturnOp):
        raise InlineError(f"@{callee.sym_name.data} must have one block ending in tt.return")
    block = callee.body.block
    mapping: dict[SSAValue, SSAValue] = dict(zip(block.args, call.arguments))
    copies = [op.clone(mapping) for op in block.ops if op is not block.last_op]
    results = [mapping.get(v, v) for v in block.last_op.operands]
    created = {r for op in copies for r in op.results}
    for old, new in zip(call.results, results):
        if new in created and old.name_hint is not None:
            new.name_hint = old.name_hint  # the caller's variable name reads best at the call site
    call.parent.insert_ops_before(copies, call)
    Rewriter.replace_op(call, [], results)
