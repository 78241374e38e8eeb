"""Statements: assignments, return/assert, and structured control flow (if, for, while).

A runtime `if` becomes `scf.if` yielding the variables either branch changed; a runtime loop
becomes `scf.for`/`scf.while` carrying the variables its body may assign, found from the AST
before the body is visited (`control_flow.assigned_names`). Conditions and bounds known at
compile time are decided here instead: the taken branch is visited, `static_range` unrolls.
"""

from __future__ import annotations

import ast
import builtins
from typing import Any

from xdsl.dialects import scf
from xdsl.dialects.builtin import IntegerAttr, UnitAttr, i32
from xdsl.ir import Block, Region

import kernellab.language as language
from kernellab.frontend.builder import name_value
from kernellab.frontend.codegen.base import RETURN, USER_ERRORS, Return, VisitorBase
from kernellab.frontend.codegen.control_flow import assigned_names
from kernellab.frontend.errors import (
    CompilationError,
    CompileTimeAssertionFailure,
    SemanticError,
    UnsupportedLanguageConstruct,
)
from kernellab.frontend.types import to_ir_type
from kernellab.frontend.values import (
    const,
    describe,
    is_number,
    is_runtime,
    leaves,
    map_leaves,
    show,
    structure,
    unwrap,
    unwrap_deep,
)
from kernellab.language import core as tl


class StatementVisitor(VisitorBase):
    """Visits statements; expressions are `ExpressionVisitor`'s."""

    # -- statements ---------------------------------------------------------------------

    def visit_statements(self, stmts: list[ast.stmt]) -> None:
        for stmt in stmts:
            self.visit(stmt)

    def visit_Expr(self, node: ast.Expr) -> None:
        self.visit(node.value)

    def visit_Pass(self, node: ast.Pass) -> None:
        pass

    def visit_Assign(self, node: ast.Assign) -> None:
        value = self.visit(node.value)
        for target in node.targets:
            self._assign(target, value)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is None:
            raise self.error(node, "a declaration needs a value: write `name: type = value`")
        annotation = self.visit(node.annotation)
        value = self.visit(node.value)
        if annotation is not tl.constexpr:
            self._assign(node.target, value)
            return
        if not isinstance(node.target, ast.Name):
            raise self.error(node.target, "only a plain name can be declared tl.constexpr")
        if is_runtime(value):
            raise self.error(
                node.value,
                f"{node.target.id!r} is declared tl.constexpr but its value is {describe(value)}, "
                "known only at run time; drop the annotation or compute it from constexprs",
            )
        self.constexpr_names.add(node.target.id)
        self._bind(node.target, const(unwrap(value)))

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        if not isinstance(node.target, ast.Name):
            raise self.error(
                node.target,
                "only plain names can be updated with `op=`; tensors are values, not memory",
            )
        lhs = self._load_name(node.target.id)
        rhs = self.visit(node.value)
        self._assign(node.target, self._binary(type(node.op), lhs, rhs))

    def _assign(self, target: ast.AST, value: Any) -> None:
        if isinstance(target, ast.Name):
            name = target.id
            if name in self.constexpr_names:
                if is_runtime(value):
                    raise self.error(
                        target,
                        f"{name!r} is a tl.constexpr and cannot be assigned {describe(value)}, "
                        "which is known only at run time; assign it to a new name",
                    )
                self._bind(target, const(unwrap(value)))
                return
            if is_number(value):  # as in Triton: a number assigned to a name is a scalar tensor
                value = self.semantic.to_tensor(value)
            self._bind(target, value)
        elif isinstance(target, (ast.Tuple, ast.List)):
            values = unwrap(value)
            if not isinstance(values, (tuple, list)):
                raise self.error(
                    target,
                    f"cannot unpack {describe(value)} into {len(target.elts)} names; unpack a "
                    "tuple",
                )
            if len(values) != len(target.elts):
                raise self.error(
                    target,
                    f"cannot unpack {len(values)} values into {len(target.elts)} names; use one "
                    "name per value",
                )
            for elt, v in zip(target.elts, values):
                self._assign(elt, const(v))
        elif isinstance(target, ast.Subscript):
            raise self.error(
                target,
                "cannot assign to an element of a tensor: tensors are values; build the new "
                "tensor with tl.where (or store through a pointer)",
            )
        else:
            raise self.error(
                target, f"cannot assign to {ast.unparse(target)}; assign to a plain name"
            )

    def _bind(self, target: ast.Name, value: Any) -> None:
        if isinstance(value, tl.tensor):
            name_value(value.handle, target.id)
        self.scope[target.id] = value
        self.assigned_at[target.id] = target
        self.dropped.pop(target.id, None)

    def visit_Return(self, node: ast.Return) -> None:
        value = self.visit(node.value) if node.value is not None else None
        if unwrap(value) is None:
            returned = Return((), False)
        elif isinstance(unwrap(value), tuple):
            returned = Return(tuple(const(v) for v in unwrap(value)), True)
        else:
            returned = Return((value,), False)
        if self.is_kernel and returned.values:
            raise self.error(
                node, "a kernel cannot return a value; store results through a pointer argument"
            )
        self.scope[RETURN] = returned
        self.return_node = node

    def visit_Assert(self, node: ast.Assert) -> None:
        cond = self.visit(node.test)
        msg = unwrap(self.visit(node.msg)) if node.msg is not None else ""
        if not isinstance(cond, tl.tensor):
            if not unwrap(cond):
                text = f"assertion `{ast.unparse(node.test)}` failed" + (f": {msg}" if msg else "")
                raise self.error(node.test, text, cls=CompileTimeAssertionFailure)
            return
        self.semantic.device_assert(
            cond, str(msg) or f"Assertion `{ast.unparse(node.test)}` failed"
        )

    # -- branches -------------------------------------------------------------------------

    def visit_If(self, node: ast.If) -> None:
        cond = self.visit(node.test)
        if not isinstance(cond, tl.tensor):
            self.visit_statements(node.body if unwrap(cond) else node.orelse)
            return
        cond = self._scalar_condition(cond, "if", node.test)
        before = self.scope
        then_block, else_block = Block(), Block()
        self.scope = dict(before)
        with self.builder.at_block(then_block):
            self.visit_statements(node.body)
        then_scope, self.scope = self.scope, dict(before)
        with self.builder.at_block(else_block):
            self.visit_statements(node.orelse)
        else_scope = self.scope
        merged, then_values, else_values = self._merge_branches(
            node, before, then_scope, else_scope, then_block, else_block
        )
        self.scope = before
        for scope in (then_scope, else_scope):
            for name in scope.keys() - before.keys() - merged.keys():
                self.dropped[name] = (
                    f"it is assigned in only one branch of the `if` at line {self._loc(node).line}"
                )
        with self.builder.at_block(then_block):
            self.builder.create(scf.YieldOp(*[v.handle for v in then_values]))
        with self.builder.at_block(else_block):
            self.builder.create(scf.YieldOp(*[v.handle for v in else_values]))
        has_else = bool(else_values) or else_block.first_op is not else_block.last_op
        if_op = scf.IfOp(
            cond.handle,
            [v.handle.type for v in then_values],
            Region(then_block),
            Region(else_block) if has_else else None,
        )
        self.builder.create(if_op)
        results = iter(if_op.results)
        for name, values in merged.items():
            values = [map_leaves(v, lambda t: tl.tensor(next(results), t.type)) for v in values]
            if name == RETURN:
                self.scope[RETURN] = Return(tuple(values), then_scope[RETURN].is_tuple)
            else:
                if isinstance(values[0], tl.tensor):
                    name_value(values[0].handle, name)
                self.scope[name] = values[0]

    def _merge_branches(self, node, before, then_scope, else_scope, then_block, else_block):
        """What a runtime `if` yields: for each name that exists after both branches and
        changed in one, its values (tensors are placeholders for the if's results), plus the
        tensors each branch yields for them, in order."""
        for scope, other in ((then_scope, else_scope), (else_scope, then_scope)):
            if RETURN in scope and RETURN not in other:
                if scope[RETURN].values:  # the other path falls off the end, returning None
                    raise self.error(
                        node,
                        "this function returns a value on one path of this `if` but not on "
                        "the other; return a value on every path",
                    )
                other[RETURN] = scope[RETURN]
        merged: dict[str, list] = {}
        then_values, else_values = [], []
        for name in then_scope:
            if name not in else_scope:
                continue
            t, e = then_scope[name], else_scope[name]
            if t is before.get(name) and e is before.get(name):
                continue
            if name == RETURN:
                if len(t.values) != len(e.values) or t.is_tuple != e.is_tuple:
                    raise self.error(
                        node,
                        f"the branches of this `if` return different numbers of values "
                        f"({len(t.values)} and {len(e.values)}); return the same on every path",
                    )
                pairs = list(zip(t.values, e.values))
            else:
                pairs = [(t, e)]
            merged[name] = []
            for tv, ev in pairs:
                yielded = self._branch_values(node, name, tv, ev, then_block, else_block)
                if yielded is None:
                    merged[name].append(tv)
                else:
                    then_values.extend(leaves(yielded[0]))
                    else_values.extend(leaves(yielded[1]))
                    merged[name].append(yielded[0])
        return merged, then_values, else_values

    def _branch_values(self, node, name, t, e, then_block, else_block):
        """The pair of values (tensors, or tuples or aggregates of them) the branches yield
        for `name`, or None for an equal constant."""
        label = "the returned value" if name == RETURN else repr(name)
        where = node if name == RETURN else self.assigned_at.get(name, node)
        if not isinstance(t, tl.tensor) and is_runtime(t) and structure(t) == structure(e):
            return t, e
        if not is_runtime(t) and not is_runtime(e):
            if type(unwrap(t)) is type(unwrap(e)) and unwrap_deep(t) == unwrap_deep(e):
                return None
            if name in self.constexpr_names or not (is_number(t) and is_number(e)):
                raise self.error(
                    where,
                    f"{label} is {describe(t)} after the `if` branch but {describe(e)} after "
                    "the `else` branch; a runtime `if` can only merge tensors",
                )
        if is_number(t):
            with self.builder.at_block(then_block):
                t = self.semantic.to_tensor(t)
        if is_number(e):
            with self.builder.at_block(else_block):
                e = self.semantic.to_tensor(e)
        if not isinstance(t, tl.tensor) or not isinstance(e, tl.tensor) or t.type != e.type:
            raise self.error(
                where,
                f"{label} is {describe(t)} after the `if` branch but {describe(e)} after the "
                "`else` branch; both branches must give it the same type (convert one with "
                ".to(...))",
            )
        return t, e

    # -- loops ----------------------------------------------------------------------------

    def visit_For(self, node: ast.For) -> None:
        if node.orelse:
            raise self.error(
                node.orelse[0],
                "`for ... else` is not supported in kernels; move the `else` body after the loop",
                cls=UnsupportedLanguageConstruct,
            )
        if not isinstance(node.target, ast.Name):
            raise self.error(node.target, "the loop variable must be a single name")
        iterable = node.iter
        kind = self.visit(iterable.func) if isinstance(iterable, ast.Call) else None
        if kind not in (builtins.range, language.range, language.static_range):
            raise self.error(
                iterable,
                "kernels can only loop over range(...), tl.range(...) or tl.static_range(...)",
            )
        args, kwargs = self._call_args(iterable)
        with self.builder.at_loc(self._loc(iterable)):
            try:
                loop = (language.range if kind is builtins.range else kind)(*args, **kwargs)
            except CompilationError:
                raise
            except (SemanticError, *USER_ERRORS) as e:
                raise self.error(iterable, getattr(e, "message", str(e))) from None
        if isinstance(loop, language.static_range):
            for i in loop:  # unrolled in the enclosing scope, as Python would run it
                self.scope[node.target.id] = tl.constexpr(i)
                self.visit_statements(node.body)
            return
        self._scf_for(node, loop)

    def _loop_carried(self, body: list[ast.stmt]) -> list[tuple[str, Any]]:
        """(name, value before the loop) of each live variable the loop body may assign; a
        tuple or aggregate of tensors is carried as its tensors."""
        carried = []
        for name, target in assigned_names(body).items():
            if name not in self.scope:
                continue
            value = self.scope[name]
            if not is_runtime(value):
                raise self.error(
                    target,
                    f"{name!r} holds {describe(value)} before the loop and is assigned inside it; "
                    "only tensors can change inside a runtime loop (initialize it with a tensor, "
                    "e.g. tl.zeros(...) or a number)",
                )
            value = self._numbers_as_tensors(value)
            self.scope[name] = value
            carried.append((name, value))
        return carried

    def _numbers_as_tensors(self, value: Any) -> Any:
        """A carried tuple with its numbers made scalar tensors (as a number assigned to a name
        is), so `(acc, 0)` can become `(acc, 1)` on the next iteration."""
        if is_number(value):
            return self.semantic.to_tensor(value)
        inner = unwrap(value)
        if isinstance(inner, (tuple, list)) and is_runtime(inner):
            items = [self._numbers_as_tensors(v) for v in inner]
            return type(inner)(*items) if hasattr(type(inner), "_fields") else type(inner)(items)
        return value

    @staticmethod
    def _carried_types(carried) -> list:
        return [t.handle.type for _, v in carried for t in leaves(v)]

    @staticmethod
    def _carried_handles(carried) -> list:
        return [t.handle for _, v in carried for t in leaves(v)]

    def _yield_carried(self, node, carried) -> list:
        """The values to yield for the carried names, checked against their initial types."""
        handles = []
        for name, initial in carried:
            value = self._numbers_as_tensors(self.scope[name])
            if structure(value) != structure(initial):
                raise self.error(
                    self.assigned_at.get(name, node),
                    f"loop-carried variable {name!r} changes type in the loop: it is "
                    f"{describe(initial)} before the loop but {describe(value)} after this "
                    f"assignment; give it the same type on every iteration (e.g. with .to(...))",
                )
            handles.extend(t.handle for t in leaves(value))
        return handles

    @staticmethod
    def _rebuilt(carried, handles) -> list[tuple[str, Any]]:
        """Each carried name's value rebuilt around the next of `handles` (block arguments or
        op results)."""
        handles = iter(handles)
        return [
            (name, map_leaves(value, lambda t: tl.tensor(next(handles), t.type)))
            for name, value in carried
        ]

    def _enter_loop(self, block: Block, carried, offset: int) -> dict:
        saved = self.scope
        self.scope = dict(saved)
        for name, value in self._rebuilt(carried, block.args[offset:]):
            self._name_leaves(name, value)
            self.scope[name] = value
        return saved

    def _exit_loop(self, node, saved: dict, carried, results) -> None:
        inner = self.scope
        self.scope = saved
        for name, value in self._rebuilt(carried, results):
            self._name_leaves(name, value)
            self.scope[name] = value
        for name in inner.keys() - saved.keys():
            self.dropped[name] = (
                f"it is only assigned inside the loop at line {self._loc(node).line}"
            )

    @staticmethod
    def _name_leaves(name: str, value: Any) -> None:
        if isinstance(value, tl.tensor):
            name_value(value.handle, name)

    def _scf_for(self, node: ast.For, loop) -> None:
        bounds = [loop.start, loop.end, loop.step]
        negative = not is_runtime(loop.step) and unwrap(loop.step) < 0
        if not is_runtime(loop.step) and unwrap(loop.step) == 0:
            raise self.error(node.iter, "the step of range() must not be 0")
        if negative:  # scf.for needs step > 0: iterate start..end mirrored, see below
            bounds = [loop.end, loop.start, -unwrap(loop.step)]
        with self.builder.at_loc(self._loc(node.iter)):
            values = [self.semantic.to_tensor(const(unwrap(b))) for b in bounds]
            for v, what in zip(values, ("start", "end", "step")):
                if v.type.is_block() or not v.dtype.is_int():
                    raise self.error(
                        node.iter,
                        f"the {what} of range() must be an integer scalar, not {show(v.type)}",
                    )
            iv_type = (
                tl.int64 if any(v.dtype.primitive_bitwidth == 64 for v in values) else tl.int32
            )
            lb, ub, step = (
                v if v.dtype == iv_type else self.semantic.cast(v, iv_type) for v in values
            )
        carried = self._loop_carried(node.body)
        body = Block(arg_types=[to_ir_type(iv_type)] + self._carried_types(carried))
        saved = self._enter_loop(body, carried, 1)
        with self.builder.at_block(body):
            iv = tl.tensor(body.args[0], iv_type)
            if negative:  # for i' in [end, start): i = start + end - i'
                with self.builder.at_loc(self._loc(node.target)):
                    iv = self.semantic.add(self.semantic.sub(ub, iv), lb)
            self._bind(node.target, iv)
            self.visit_statements(node.body)
            handles = self._yield_carried(node, carried)
            with self.builder.at_loc(self._loc(node)):
                self.builder.create(scf.YieldOp(*handles))
        for_op = scf.ForOp(lb.handle, ub.handle, step.handle, self._carried_handles(carried), body)
        for attr, value in (
            ("tt.num_stages", loop.num_stages),
            ("tt.loop_unroll_factor", loop.loop_unroll_factor),
        ):
            if value is not None:
                for_op.attributes[attr] = IntegerAttr(int(value), i32)
        if loop.flatten:  # fuse the nest under it into one loop (passes/fuse_nested_loops.py)
            for_op.attributes["tt.flatten"] = UnitAttr()
        self.builder.create(for_op)
        self._exit_loop(node, saved, carried, for_op.results)

    def visit_While(self, node: ast.While) -> None:
        if node.orelse:
            raise self.error(
                node.orelse[0],
                "`while ... else` is not supported in kernels; move the `else` body after the loop",
                cls=UnsupportedLanguageConstruct,
            )
        carried = self._loop_carried(node.body)
        arg_types = self._carried_types(carried)
        before, after = Block(arg_types=arg_types), Block(arg_types=arg_types)
        saved = self._enter_loop(before, carried, 0)
        with self.builder.at_block(before):
            cond = self.visit(node.test)
            if not isinstance(cond, tl.tensor):
                if unwrap(cond):
                    raise self.error(
                        node.test,
                        "this `while` condition is always true and kernels have no `break`; "
                        "make the condition depend on a variable the loop changes",
                    )
                self.scope = saved  # the loop never runs
                return
            cond = self._scalar_condition(cond, "while", node.test)
            with self.builder.at_loc(self._loc(node.test)):
                self.builder.create(scf.ConditionOp(cond.handle, *before.args))
        self.scope = saved
        saved = self._enter_loop(after, carried, 0)
        with self.builder.at_block(after):
            self.visit_statements(node.body)
            handles = self._yield_carried(node, carried)
            self.builder.create(scf.YieldOp(*handles))
        while_op = scf.WhileOp(
            self._carried_handles(carried), arg_types, Region(before), Region(after)
        )
        self.builder.create(while_op)
        self._exit_loop(node, saved, carried, while_op.results)
