"""Expressions: names, constants, containers, operators, subscripts, attributes and calls.

An expression whose operands are all known at compile time folds in Python (`BLOCK // 2` stays
a constexpr); anything involving a runtime value goes to `Semantic`. Calls dispatch on what
is called: a `tl` builtin, another @jit function, a Python builtin that runs at compile time.
"""

from __future__ import annotations

import ast
import builtins
import inspect
import numbers
import operator
import types
from dataclasses import dataclass
from typing import Any

from xdsl.dialects import scf
from xdsl.ir import Block, Region

import kernellab.language as language
from kernellab.frontend.codegen.base import VisitorBase
from kernellab.frontend.errors import (
    CompilationError,
    CompileTimeAssertionFailure,
    SemanticError,
    UnsupportedLanguageConstruct,
)
from kernellab.frontend.semantic.tiles import TensorDescriptor
from kernellab.frontend.values import (
    bind_to_builtin,
    const,
    describe,
    for_semantic,
    is_runtime,
    show,
    unwrap,
    unwrap_deep,
)
from kernellab.language import core as tl

# Globals a kernel may read: compile-time constants and things it can call or inspect.
_ALLOWED_GLOBAL_TYPES = (
    tl.dtype, tl.KernelFunction, types.ModuleType, type, types.BuiltinFunctionType,
    types.FunctionType, types.MethodType,
)  # fmt: skip

def _is_user_namespace(value: Any) -> bool:
    """A class of the user's code (kernellab's own are covered by the compile cache's
    toolchain fingerprint): its attributes are globals a kernel may read."""
    return isinstance(value, type) and not value.__module__.startswith("kernellab")


_COMPILE_TIME_BUILTINS = (len, isinstance, getattr, int, float, bool, abs, tuple)
_PYTHON_BUILTINS = {
    f.__name__: f for f in (builtins.range, builtins.min, builtins.max, builtins.print,
                            *_COMPILE_TIME_BUILTINS)
}  # fmt: skip


@dataclass
class _BoundMethod:
    """`x.sum` (or `desc.load`) before the call: a `tl` function with the tensor (or the
    descriptor) as its first argument."""

    tensor: Any
    function: Any


_BINARY = {
    ast.Add: ("add", operator.add, "+"), ast.Sub: ("sub", operator.sub, "-"),
    ast.Mult: ("mul", operator.mul, "*"), ast.Div: ("truediv", operator.truediv, "/"),
    ast.FloorDiv: ("floordiv", operator.floordiv, "//"), ast.Mod: ("mod", operator.mod, "%"),
    ast.LShift: ("lshift", operator.lshift, "<<"), ast.RShift: ("rshift", operator.rshift, ">>"),
    ast.BitAnd: ("and_", operator.and_, "&"), ast.BitOr: ("or_", operator.or_, "|"),
    ast.BitXor: ("xor_", operator.xor, "^"), ast.Pow: (None, operator.pow, "**"),
    ast.MatMult: (None, operator.matmul, "@"),
}  # fmt: skip
_UNARY = {
    ast.USub: ("minus", operator.neg), ast.UAdd: ("plus", operator.pos),
    ast.Invert: ("invert", operator.invert), ast.Not: ("not_", operator.not_),
}  # fmt: skip
_COMPARE = {
    ast.Eq: ("equal", operator.eq), ast.NotEq: ("not_equal", operator.ne),
    ast.Lt: ("less_than", operator.lt), ast.LtE: ("less_equal", operator.le),
    ast.Gt: ("greater_than", operator.gt), ast.GtE: ("greater_equal", operator.ge),
    ast.Is: (None, operator.is_), ast.IsNot: (None, operator.is_not),
    ast.In: (None, lambda a, b: a in b), ast.NotIn: (None, lambda a, b: a not in b),
}  # fmt: skip


class ExpressionVisitor(VisitorBase):
    """Visits expressions; statements are `StatementVisitor`'s."""

    # -- names, constants, containers ---------------------------------------------------

    def visit_Name(self, node: ast.Name) -> Any:
        return self._load_name(node.id)

    def _load_name(self, name: str) -> Any:
        if name in self.scope:
            return self.scope[name]
        closure = self._closure()
        if name in closure:
            return self._global_value(name, closure[name])
        if name in self.fn.globals:
            return self._global_value(name, self.fn.globals[name])
        if name in _PYTHON_BUILTINS:
            return _PYTHON_BUILTINS[name]
        notes = []
        if name in self.dropped:
            notes.append(f"{name!r} is not defined here because {self.dropped[name]}")
        import difflib  # only for the error: a compile that succeeds never loads it

        close = difflib.get_close_matches(name, [*self.scope, *self.fn.globals], n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise SemanticError(f"name {name!r} is not defined{hint}", notes)

    def _closure(self) -> dict[str, Any]:
        """Variables of the enclosing Python function (a kernel defined inside a function)."""
        code = self.fn.fn.__code__
        cells = self.fn.fn.__closure__ or ()
        found = {}
        for name, cell in zip(code.co_freevars, cells):
            try:
                found[name] = cell.cell_contents
            except ValueError:  # not assigned yet in the enclosing function
                pass
        return found

    def _global_value(self, name: str, value: Any) -> Any:
        """A global (or module attribute) as a kernel sees it; mutable state is rejected."""
        if isinstance(value, tl.constexpr):
            return value
        if isinstance(value, (numbers.Real, str, type(None))):
            return const(value)
        if isinstance(value, tuple) and not is_runtime(value):
            return value
        if isinstance(value, _ALLOWED_GLOBAL_TYPES) or hasattr(value, "__kernellab_builtin__"):
            return value
        raise SemanticError(
            f"global {name!r} is a {type(value).__name__}, which a kernel cannot read: globals "
            "must be compile-time constants (int, float, bool, dtype or tl.constexpr(...)); "
            "wrap it in tl.constexpr or pass it as an argument"
        )

    def visit_Constant(self, node: ast.Constant) -> Any:
        if node.value is Ellipsis or isinstance(node.value, (bytes, complex)):
            raise self.error(
                node,
                f"{node.value!r} is not supported in kernels; use an int, float, bool, str or None",
            )
        return const(node.value)

    def visit_Tuple(self, node: ast.Tuple) -> tuple:
        return tuple(self._elements(node.elts))

    def visit_List(self, node: ast.List) -> list:
        return list(self._elements(node.elts))

    def _elements(self, elts):
        for elt in elts:
            if isinstance(elt, ast.Starred):
                yield from self._starred(elt)
            else:
                yield self.visit(elt)

    def _starred(self, node: ast.Starred):
        value = unwrap(self.visit(node.value))
        if not isinstance(value, (tuple, list)):
            raise self.error(node, f"only tuples can be unpacked with `*`, not {describe(value)}")
        return [const(v) for v in value]

    def visit_JoinedStr(self, node: ast.JoinedStr) -> tl.constexpr:
        parts = []
        for value in node.values:
            if isinstance(value, ast.Constant):
                parts.append(str(value.value))
                continue
            v = self.visit(value.value)
            if is_runtime(v):
                raise self.error(
                    value,
                    "f-strings can only format compile-time values; use tl.device_print for "
                    "runtime values",
                )
            spec = unwrap(self.visit(value.format_spec)) if value.format_spec else ""
            conv = {-1: unwrap_deep, 115: str, 114: repr, 97: ascii}[value.conversion]
            parts.append(format(conv(unwrap_deep(v)), spec))
        return tl.constexpr("".join(parts))

    def visit_Slice(self, node: ast.Slice) -> slice:
        parts = [
            self.visit(p) if p is not None else None for p in (node.lower, node.upper, node.step)
        ]
        if any(is_runtime(p) for p in parts):
            raise self.error(
                node, "slice bounds must be compile-time constants; use literals or tl.constexpr"
            )
        return slice(*(unwrap(p) for p in parts))

    def visit_Subscript(self, node: ast.Subscript) -> Any:
        base = self.visit(node.value)
        index = self.visit(node.slice)
        if isinstance(base, tl.tensor):
            return self._index_tensor(base, index)
        if is_runtime(index):
            raise SemanticError(
                "a tuple can only be indexed with compile-time integers; use a literal, a "
                "tl.constexpr or a tl.static_range loop variable"
            )
        return const(unwrap(base)[unwrap_deep(index)])

    def _index_tensor(self, x: tl.tensor, index: Any) -> tl.tensor:
        """`x[None, :]`: None adds a size-1 dim, `:` keeps one; nothing else selects."""
        items = unwrap(index) if isinstance(unwrap(index), tuple) else (index,)
        kept = sum(1 for i in items if unwrap(i) == slice(None))
        if kept > len(x.shape):
            raise SemanticError(
                f"too many `:` for a tensor of type {show(x.type)}; use at most one per dimension"
            )
        for dim, item in enumerate(map(unwrap, items)):
            if item is None:
                x = self.semantic.expand_dims(x, tl.constexpr(dim))
            elif item != slice(None):
                raise SemanticError(
                    f"tensors can only be indexed with None (a new axis) and `:` (keep an axis), "
                    f"not {item!r}; load the element through a pointer instead"
                )
        return x

    def visit_Attribute(self, node: ast.Attribute) -> Any:
        base = self.visit(node.value)
        attr = node.attr
        if isinstance(base, tl.tensor):
            return self._tensor_attribute(base, attr)
        if isinstance(base, TensorDescriptor) and attr in TensorDescriptor.METHODS:
            return _BoundMethod(base, getattr(language, TensorDescriptor.METHODS[attr]))
        if isinstance(base, types.ModuleType):
            if not hasattr(base, attr):
                import difflib

                public = [n for n in dir(base) if not n.startswith("_")]
                close = difflib.get_close_matches(attr, public, n=1)
                hint = f"; did you mean {ast.unparse(node.value)}.{close[0]}?" if close else ""
                raise SemanticError(
                    f"{ast.unparse(node)} does not exist: {base.__name__} has no {attr!r}{hint}"
                )
            return self._global_value(ast.unparse(node), getattr(base, attr))
        if _is_user_namespace(base):  # `Cfg.SCALE`: a constant read through a class
            return self._global_value(ast.unparse(node), getattr(base, attr))
        return const(getattr(unwrap(base), attr))

    def _tensor_attribute(self, x: tl.tensor, attr: str) -> Any:
        """`x.dtype`, `x.shape`, `x.T`, ...; any other name is a `tl` function taking `x` first
        (`x.to(tl.float16)`, `x.sum(axis=0)`), as a method bound here and called later."""
        if attr == "dtype":
            return x.dtype
        if attr == "type":
            return x.type
        if attr == "shape":
            return tl.Shape(tl.constexpr(s) for s in x.shape)
        if attr == "numel":
            return tl.constexpr(x.numel)
        if attr == "T":
            return self.semantic.trans(x)
        function = getattr(language, attr, None)
        if not (
            hasattr(function, "__kernellab_builtin__") or isinstance(function, tl.KernelFunction)
        ):
            raise SemanticError(
                f"a tensor has no attribute {attr!r}; its methods are the tl functions, e.g. "
                "x.to(tl.float32) or x.sum(axis=0)"
            )
        return _BoundMethod(x, function)

    # -- operators -------------------------------------------------------------------------

    def visit_BinOp(self, node: ast.BinOp) -> Any:
        return self._binary(type(node.op), self.visit(node.left), self.visit(node.right))

    def _binary(self, op: type, lhs: Any, rhs: Any) -> Any:
        method, fold, symbol = _BINARY[op]
        if not is_runtime(lhs) and not is_runtime(rhs):
            return const(fold(unwrap(lhs), unwrap(rhs)))
        if method is None:
            raise SemanticError(
                f"`{symbol}` only works on compile-time constants, not on {describe(lhs)} and "
                f"{describe(rhs)}" + ("; use tl.dot for matrix products" if symbol == "@" else "")
            )
        return getattr(self.semantic, method)(for_semantic(lhs), for_semantic(rhs))

    def visit_UnaryOp(self, node: ast.UnaryOp) -> Any:
        operand = self.visit(node.operand)
        method, fold = _UNARY[type(node.op)]
        if not is_runtime(operand):
            return const(fold(unwrap(operand)))
        return getattr(self.semantic, method)(operand)

    def visit_Compare(self, node: ast.Compare) -> Any:
        lhs = self.visit(node.left)
        result = None
        for op, right in zip(node.ops, node.comparators):
            rhs = self.visit(right)
            method, fold = _COMPARE[type(op)]
            if method is None or (not is_runtime(lhs) and not is_runtime(rhs)):
                if method is None and isinstance(op, (ast.In, ast.NotIn)) and is_runtime(rhs):
                    raise SemanticError("`in` needs a compile-time tuple on its right")
                value = const(fold(unwrap_deep(lhs), unwrap_deep(rhs)))
            else:
                value = getattr(self.semantic, method)(for_semantic(lhs), for_semantic(rhs))
            result = value if result is None else self._logical(ast.And, result, value)
            if not is_runtime(result) and not unwrap(result):
                return result
            lhs = rhs
        return result

    def visit_BoolOp(self, node: ast.BoolOp) -> Any:
        result = self.visit(node.values[0])
        for operand in node.values[1:]:
            if not is_runtime(result):
                if bool(unwrap(result)) == isinstance(node.op, ast.Or):
                    return result  # short-circuits as in Python
                result = self.visit(operand)
            else:
                result = self._logical(type(node.op), result, self.visit(operand))
        return result

    def _logical(self, op: type, lhs: Any, rhs: Any) -> Any:
        if not is_runtime(lhs):
            return rhs if bool(unwrap(lhs)) == (op is ast.And) else lhs
        method = "logical_and" if op is ast.And else "logical_or"
        return getattr(self.semantic, method)(lhs, for_semantic(rhs))

    def visit_IfExp(self, node: ast.IfExp) -> Any:
        cond = self.visit(node.test)
        if not isinstance(cond, tl.tensor):
            return self.visit(node.body if unwrap(cond) else node.orelse)
        if cond.type.is_block():  # element-wise choice, as tl.where
            return self.semantic.where(
                cond, for_semantic(self.visit(node.body)), for_semantic(self.visit(node.orelse))
            )
        cond = self._scalar_condition(cond, "if", node.test)
        then_block, else_block = Block(), Block()
        with self.builder.at_block(then_block):
            then_value = self.visit(node.body)
        with self.builder.at_block(else_block):
            else_value = self.visit(node.orelse)
        if unwrap(then_value) is None and unwrap(else_value) is None:
            # `f(x) if c else g(x)` for calls made for their effects: an scf.if with no results
            for block in (then_block, else_block):
                with self.builder.at_block(block):
                    self.builder.create(scf.YieldOp())
            self.builder.create(scf.IfOp(cond.handle, [], Region(then_block), Region(else_block)))
            return const(None)
        with self.builder.at_block(then_block):
            then_value = self.semantic.to_tensor(for_semantic(then_value))
        with self.builder.at_block(else_block):
            else_value = self.semantic.to_tensor(for_semantic(else_value))
        if then_value.type != else_value.type:
            raise SemanticError(
                f"the two sides of this conditional expression have different types, "
                f"{show(then_value.type)} and {show(else_value.type)}; convert one "
                "with .to(...)"
            )
        with self.builder.at_block(then_block):
            self.builder.create(scf.YieldOp(then_value.handle))
        with self.builder.at_block(else_block):
            self.builder.create(scf.YieldOp(else_value.handle))
        if_op = scf.IfOp(
            cond.handle, [then_value.handle.type], Region(then_block), Region(else_block)
        )
        self.builder.create(if_op)
        return tl.tensor(if_op.results[0], then_value.type)

    # -- calls -------------------------------------------------------------------------------

    def _call_args(self, node: ast.Call) -> tuple[list, dict]:
        args = list(self._elements(node.args))
        kwargs = {}
        for kw in node.keywords:
            if kw.arg is None:
                raise self.error(
                    kw,
                    "`**` unpacking is not supported in kernel calls; pass the keyword arguments "
                    "one by one",
                    cls=UnsupportedLanguageConstruct,
                )
            kwargs[kw.arg] = self.visit(kw.value)
        return args, kwargs

    def visit_Call(self, node: ast.Call) -> Any:
        function = self.visit(node.func)
        args, kwargs = self._call_args(node)
        if isinstance(function, _BoundMethod):
            function, args = function.function, [function.tensor, *args]
        if isinstance(function, tl.KernelFunction):
            return self._call_kernel_function(function, args, kwargs)
        if hasattr(function, "__kernellab_builtin__"):
            return self._call_builtin(function, args, kwargs, node)
        if function in (builtins.range, language.range, language.static_range):
            raise SemanticError("range objects can only be used as the iterable of a `for` loop")
        if function is builtins.min or function is builtins.max:
            return self._min_max(function, args)
        if function is builtins.print:  # print(x) is tl.device_print("", x)
            if not args or not isinstance(unwrap(args[0]), str):
                args = [tl.constexpr(""), *args]
            return self._call_builtin(language.device_print, args, kwargs, node)
        if function is tl.constexpr:
            if is_runtime(args):
                raise SemanticError(
                    f"tl.constexpr(...) needs a compile-time value, not {describe(args[0])}"
                )
            return tl.constexpr(*map(unwrap, args))
        if function is language.str_to_ty:  # a dtype from its name, at compile time
            if is_runtime(args):
                raise SemanticError("tl.str_to_ty needs a compile-time name such as \"fp16\"")
            return const(language.str_to_ty(*map(unwrap, args)))
        if isinstance(function, types.FunctionType):
            raise SemanticError(
                f"{function.__name__} is a plain Python function and cannot be called from a "
                f"kernel; decorate it with @kl.jit"
            )
        if isinstance(function, type) and issubclass(function, tl.dtype):  # tl.pointer_type(...)
            if is_runtime(args) or is_runtime(list(kwargs.values())):
                raise SemanticError(f"{function.__name__}(...) needs compile-time arguments (dtypes)")
            return function(*map(unwrap_deep, args), **{k: unwrap_deep(v) for k, v in kwargs.items()})
        if function is builtins.tuple and len(args) == 1 and not kwargs and is_runtime(args):
            return builtins.tuple(unwrap(args[0]))  # tl.tuple([a, b]): a tuple of kernel values
        if function is getattr or isinstance(function, types.MethodType):
            self._refuse_hidden_read(node, function, args)
        if function is isinstance:  # inspects Python objects, runtime values included
            return const(isinstance(*map(unwrap, args)))
        if any(function is f for f in _COMPILE_TIME_BUILTINS) or isinstance(
            function, (types.BuiltinFunctionType, types.MethodType, tl.dtype)
        ):
            if is_runtime(args) or is_runtime(list(kwargs.values())):
                raise SemanticError(
                    f"{ast.unparse(node.func)}(...) runs at compile time and needs compile-time "
                    f"arguments; use the tl function that works on tensors"
                )
            return const(
                function(*map(unwrap_deep, args), **{k: unwrap_deep(v) for k, v in kwargs.items()})
            )
        raise SemanticError(
            f"{ast.unparse(node.func)} is {describe(function)}, which cannot be called in a kernel"
        )

    def _refuse_hidden_read(self, node: ast.Call, function: Any, args: list) -> None:
        """`getattr(Cfg, name)` and `Cfg.method()` read globals in a way the compile cache's key
        can't follow (it follows the attribute chains written in the source): refused."""
        owner = function.__self__ if isinstance(function, types.MethodType) else unwrap(args[0]) if args else None
        user_module = isinstance(owner, types.ModuleType) and not owner.__name__.startswith("kernellab")
        if _is_user_namespace(owner) or user_module:
            raise SemanticError(
                f"{ast.unparse(node)} reads a global at compile time in a way the compile cache "
                "can't see; write the attribute out (Cfg.SCALE), or pass the value as an argument "
                "or a tl.constexpr"
            )

    def _call_builtin(self, builtin, args: list, kwargs: dict, node: ast.Call) -> Any:
        name = builtin.__kernellab_builtin__
        implementation = getattr(self.semantic, name, None)
        if implementation is None:
            raise SemanticError(f"tl.{name} is not implemented by kernellab yet")
        arguments = bind_to_builtin(builtin, args, kwargs)
        if name == "static_assert":
            return self._static_assert(arguments, node)
        return const(implementation(*arguments.args, **arguments.kwargs))

    def _static_assert(self, arguments: inspect.BoundArguments, node: ast.Call) -> None:
        """tl.static_assert, whose failure (on a compile-time condition) has its own class."""
        runtime_condition = is_runtime(arguments.arguments["cond"])
        try:
            self.semantic.static_assert(*arguments.args, **arguments.kwargs)
        except SemanticError as e:
            cls = CompilationError if runtime_condition else CompileTimeAssertionFailure
            raise self.error(node, e.message, e.notes, cls=cls) from None

    def _min_max(self, function, args: list) -> Any:
        if not is_runtime(args):
            return const(function(*map(unwrap_deep, args)))
        if len(args) < 2:
            raise SemanticError(
                f"{function.__name__}() of one tensor: use tl.{function.__name__}(x, axis) to "
                "reduce it"
            )
        combine = self.semantic.minimum if function is builtins.min else self.semantic.maximum
        result = args[0]
        for arg in args[1:]:
            result = combine(for_semantic(result), for_semantic(arg))
        return result
