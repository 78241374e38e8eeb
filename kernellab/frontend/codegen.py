"""The AST visitor: a kernel's Python source → a TTIR module.

The visitor walks the function's AST and evaluates it at compile time: names hold either
compile-time values (`tl.constexpr`, dtypes, tuples, modules) or runtime values (`tl.tensor`
wrapping an SSA value). Expressions whose operands are all compile-time fold in Python;
everything else goes through `Semantic`, which owns Triton's typing rules. Statements become
structured control flow (`scf.for`, `scf.while`, `scf.if`) whose loop-carried and yielded
values are found statically (see `control_flow`). Calls to other kernel functions become a
private `tt.func` per specialization plus a `tt.call` that the inline pass removes.

Every op is stamped with the file/line/column of the innermost AST node being visited, and
every error raised below a node is re-raised as a `CompilationError` pointing at it.
"""

from __future__ import annotations

import ast
import builtins
import difflib
import numbers
import operator
import re
import types
from dataclasses import dataclass
from typing import Any

from xdsl.dialects import scf
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    IntegerAttr,
    ModuleOp,
    SymbolRefAttr,
    i32,
)
from xdsl.ir import Block, Region

from kernellab import language
from kernellab.frontend.builder import IRBuilder, SourceLocation, name_value
from kernellab.frontend.control_flow import assigned_names, normalize_returns
from kernellab.frontend.errors import (
    CompilationError,
    CompileTimeAssertionFailure,
    SemanticError,
    UnsupportedLanguageConstruct,
)
from kernellab.frontend.semantic import Semantic
from kernellab.frontend.types import to_ir_type
from kernellab.ir import tt
from kernellab.language import core as tl


def generate_ttir(
    fn: tl.KernelFunction,
    signature: dict[str, tl.dtype | str],
    constexprs: dict[str, Any],
    attrs: dict[str, dict[str, int]] | None = None,
) -> ModuleOp:
    """Compile `fn` specialized on `signature` (runtime parameter → dtype or "*fp32"-style
    text) and `constexprs` (parameter → value) into a module: one public `tt.func` named
    after the kernel, with `attrs` (parameter → {"tt.divisibility": 16, ...}) on its
    arguments, plus a private `tt.func` per called kernel function."""
    unit = _CompilationUnit()
    generator = _FunctionGenerator(unit, fn, is_kernel=True)
    params = generator.kernel_params(signature, constexprs, attrs or {})
    func, _ = generator.build(fn.__name__, params, visibility="public")
    block = unit.module.body.block
    if block.first_op is None:
        block.add_op(func)
    else:  # the kernel first, then the functions it calls
        block.insert_op_before(func, block.first_op)
    return unit.module


# --------------------------------------------------------------------- compile-time values


def _const(value: Any) -> Any:
    """Python (and numpy) scalars and strings as `constexpr`; everything else unchanged."""
    if isinstance(value, (numbers.Real, str, type(None))):
        return tl.constexpr(value)
    return value


def _unwrap(value: Any) -> Any:
    return value.value if isinstance(value, tl.constexpr) else value


def _unwrap_deep(value: Any) -> Any:
    value = _unwrap(value)
    if isinstance(value, (tuple, list)):
        return type(value)(_unwrap_deep(v) for v in value)
    return value


def _is_runtime(value: Any) -> bool:
    """Whether `value` (or an element of it) is only known when the kernel runs."""
    value = _unwrap(value)
    if isinstance(value, (tuple, list)):
        return any(_is_runtime(v) for v in value)
    return isinstance(value, tl.tensor)


def _is_number(value: Any) -> bool:
    return isinstance(_unwrap(value), numbers.Real)


def _for_semantic(value: Any) -> Any:
    """Arguments as Semantic expects them: numbers stay constexpr, other constants are plain."""
    if isinstance(value, tl.constexpr) and not _is_number(value):
        return _unwrap_deep(value)
    return value


def type_str(ty: tl.dtype) -> str:
    """`fp32`, `*fp16`, `fp32[128, 64]`: how error messages name a language type."""
    if isinstance(ty, tl.block_type):
        return f"{type_str(ty.element_ty)}[{', '.join(str(s) for s in ty.shape)}]"
    return str(ty)


def _describe(value: Any) -> str:
    if isinstance(value, tl.tensor):
        return type_str(value.type)
    value = _unwrap(value)
    return f"the compile-time value {value!r}"


# Globals a kernel may read: compile-time constants and things it can call or inspect.
_ALLOWED_GLOBAL_TYPES = (
    tl.dtype, tl.KernelFunction, types.ModuleType, type, types.BuiltinFunctionType,
    types.FunctionType, types.MethodType,
)  # fmt: skip

_COMPILE_TIME_BUILTINS = (len, isinstance, getattr, int, float, bool, abs, tuple)
_PYTHON_BUILTINS = {
    f.__name__: f for f in (builtins.range, builtins.min, builtins.max, builtins.print,
                            *_COMPILE_TIME_BUILTINS)
}  # fmt: skip


@dataclass
class _BoundMethod:
    """`x.sum` before the call: a `tl` function with the tensor as its first argument."""

    tensor: tl.tensor
    function: Any


@dataclass(frozen=True)
class _Arg:
    """A runtime parameter or result of a `tt.func`, of this language type."""

    type: tl.dtype


@dataclass
class _Return:
    """What a `return` statement produced; `is_tuple` tells `return a,` from `return a`."""

    values: tuple
    is_tuple: bool


_RETURN = "$return"  # scope key for the returned values (not a valid Python name)

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

_UNSUPPORTED = {
    ast.With: "`with` blocks are not supported in kernels",
    ast.AsyncWith: "`async with` is not supported in kernels",
    ast.Try: "try/except is not supported in kernels: nothing raises at run time; check "
    "conditions with tl.device_assert or tl.static_assert instead",
    ast.Raise: "`raise` is not supported in kernels; use tl.static_assert (compile time) or "
    "tl.device_assert (run time)",
    ast.Lambda: "lambda is not supported in kernels; define a @kl.jit function and call it",
    ast.FunctionDef: "nested function definitions are not supported; define a @kl.jit function "
    "at module level and call it",
    ast.AsyncFunctionDef: "async functions are not supported in kernels",
    ast.ClassDef: "class definitions are not supported in kernels",
    ast.ListComp: "list comprehensions are not supported in kernels; unroll with "
    "`for i in tl.static_range(n)` instead",
    ast.SetComp: "set comprehensions are not supported in kernels",
    ast.DictComp: "dict comprehensions are not supported in kernels",
    ast.GeneratorExp: "generator expressions are not supported in kernels; unroll with "
    "`for i in tl.static_range(n)` instead",
    ast.Dict: "dicts are not supported in kernels; use separate variables or a tuple",
    ast.Set: "sets are not supported in kernels; use a tuple",
    ast.Break: "`break` is not supported in kernels; make the loop condition (a `while` "
    "loop) or a mask stop the work instead",
    ast.Continue: "`continue` is not supported in kernels; wrap the rest of the loop body in "
    "an `if` instead",
    ast.Global: "`global` is not supported in kernels; kernels cannot change globals",
    ast.Nonlocal: "`nonlocal` is not supported in kernels",
    ast.Delete: "`del` is not supported in kernels",
    ast.Import: "imports are not supported inside kernels; import at module level",
    ast.ImportFrom: "imports are not supported inside kernels; import at module level",
    ast.Yield: "`yield` is not supported in kernels",
    ast.YieldFrom: "`yield from` is not supported in kernels",
    ast.Await: "`await` is not supported in kernels",
    ast.NamedExpr: "the walrus operator `:=` is not supported in kernels; assign on its own line",
    ast.Starred: "`*` unpacking is only supported for tuples in call arguments",
    ast.AsyncFor: "`async for` is not supported in kernels",
    ast.Match: "`match` is not supported in kernels; use if/elif",
}  # fmt: skip
if hasattr(ast, "TryStar"):
    _UNSUPPORTED[ast.TryStar] = _UNSUPPORTED[ast.Try]

# Python errors raised while evaluating the kernel at compile time that describe the user's
# code (a tuple index out of range, a bad static_range bound); shown without a type prefix.
_USER_ERRORS = (TypeError, ValueError, ZeroDivisionError, OverflowError, IndexError)


# ------------------------------------------------------------------------- module state


@dataclass
class _Callee:
    """A generated private function: its symbol and how to rebuild its return value.

    `results` has one entry per returned value: an `_Arg` (a `tt.func` result) or a
    compile-time value (returned without IR).
    """

    name: str
    results: list
    is_tuple: bool
    has_body: bool


class _CompilationUnit:
    """The module being built and the kernel functions specialized into it so far."""

    def __init__(self):
        self.module = ModuleOp([])
        self.callees: dict[tuple, _Callee] = {}
        self.in_progress: list[tl.KernelFunction] = []
        self.symbols: set[str] = set()

    def callee(self, fn: tl.KernelFunction, params: list[tuple[str, Any]]) -> _Callee:
        """The private function for `fn` specialized on `params` (name → type or constexpr)."""
        key = (fn, tuple((n, _spec_key(v)) for n, v in params))
        if key in self.callees:
            return self.callees[key]
        if fn in self.in_progress:
            chain = " → ".join(f.__name__ for f in [*self.in_progress, fn])
            raise SemanticError(f"recursive kernel functions are not supported ({chain})")
        name = self._symbol(fn, params)
        self.in_progress.append(fn)
        try:
            generator = _FunctionGenerator(self, fn, is_kernel=False)
            func, callee = generator.build(name, params, visibility="private")
        finally:
            self.in_progress.pop()
        if callee.has_body:  # a function that only computes constants needs no symbol
            self.module.body.block.add_op(func)
        self.callees[key] = callee
        return callee

    def _symbol(self, fn: tl.KernelFunction, params: list[tuple[str, Any]]) -> str:
        parts = [
            type_str(v.type) if isinstance(v, _Arg) else f"c{_unwrap_deep(v)!r}" for _, v in params
        ]
        base = "__".join(re.sub(r"[^A-Za-z0-9]+", "_", p).strip("_") for p in [fn.__name__, *parts])
        name, n = base, 1
        while name in self.symbols:
            name, n = f"{base}_{n}", n + 1
        self.symbols.add(name)
        return name


def _spec_key(value: Any) -> tuple:
    if isinstance(value, _Arg):
        return ("arg", value.type)
    value = _unwrap_deep(value)
    try:
        hash(value)
    except TypeError:
        value = repr(value)
    return ("const", type(value), value)


# ---------------------------------------------------------------------------- the visitor


class _FunctionGenerator(ast.NodeVisitor):
    """Builds one `tt.func` from one kernel function's AST."""

    def __init__(self, unit: _CompilationUnit, fn: tl.KernelFunction, is_kernel: bool):
        self.unit = unit
        self.fn = fn
        self.is_kernel = is_kernel
        self.lines = fn.src.splitlines()
        module = ast.parse(fn.src)
        if not module.body or not isinstance(module.body[0], ast.FunctionDef):
            raise CompilationError(f"{fn.__name__} is not a function defined with `def`")
        self.tree: ast.FunctionDef = module.body[0]
        self.builder = IRBuilder(loc=self._loc(self.tree))
        self.semantic = Semantic(self.builder, call_function=self._call_kernel_function)
        self.scope: dict[str, Any] = {}
        self.attrs: dict[str, dict[str, int]] = {}  # kernel argument attributes
        self.constexpr_names: set[str] = set()
        self.assigned_at: dict[str, ast.AST] = {}  # last assignment of each name (for errors)
        self.dropped: dict[str, str] = {}  # names that went out of scope, and why
        self.return_node: ast.AST = self.tree

    # -- locations and errors ---------------------------------------------------------------

    def _col(self, lineno: int, col_offset: int) -> int:
        """AST columns count UTF-8 bytes; errors and locations count characters."""
        line = self.lines[lineno - 1] if 0 < lineno <= len(self.lines) else ""
        return len(line.encode()[:col_offset].decode(errors="ignore")) + self.fn.indent

    def _loc(self, node: ast.AST) -> SourceLocation:
        return SourceLocation(
            self.fn.filename,
            self.fn.start_line + node.lineno - 1,
            self._col(node.lineno, node.col_offset),
        )

    def error(
        self, node: ast.AST, message: str, notes=(), cls: type = CompilationError
    ) -> CompilationError:
        """A `cls` error pointing at `node` (the caret spans the node on its first line)."""
        lineno = getattr(node, "lineno", self.tree.lineno)
        col_offset = getattr(node, "col_offset", self.tree.col_offset)
        end_col = None
        if getattr(node, "end_lineno", None) == lineno:
            end_col = self._col(lineno, node.end_col_offset)
        source = self.lines[lineno - 1] if 0 < lineno <= len(self.lines) else ""
        return cls(
            message,
            filename=self.fn.filename,
            line=self.fn.start_line + lineno - 1,
            col=self._col(lineno, col_offset),
            source_line=" " * self.fn.indent + source,
            notes=list(notes),
            end_col=end_col,
        )

    def visit(self, node: ast.AST) -> Any:
        if not hasattr(node, "lineno"):  # operators, contexts: nothing to locate
            return super().visit(node)
        with self.builder.at_loc(self._loc(node)):
            try:
                return super().visit(node)
            except CompilationError:
                raise
            except SemanticError as e:
                raise self.error(node, e.message, e.notes) from None
            except _USER_ERRORS as e:
                raise self.error(node, str(e)) from e
            except Exception as e:  # a compiler bug: still say where, keep the cause
                raise self.error(node, f"internal error: {type(e).__name__}: {e}") from e

    def generic_visit(self, node: ast.AST) -> Any:
        message = _UNSUPPORTED.get(type(node), f"{type(node).__name__} is not supported in kernels")
        raise self.error(node, message, cls=UnsupportedLanguageConstruct)

    # -- the function ---------------------------------------------------------------------

    def kernel_params(self, signature, constexprs, attrs) -> list[tuple[str, Any]]:
        """(name, `_Arg` or compile-time value) for each parameter of the kernel, checked."""
        args = self.tree.args
        for extra in (args.vararg, args.kwarg, *args.kwonlyargs):
            if extra is not None:
                raise self.error(
                    extra,
                    f"kernel parameter {extra.arg!r} must be a plain positional parameter "
                    "(no *args, **kwargs or keyword-only parameters)",
                )
        nodes = {a.arg: a for a in args.posonlyargs + args.args}
        for what, names in (("signature", signature), ("constexprs", constexprs), ("attrs", attrs)):
            unknown = [n for n in names if n not in nodes]
            if unknown:
                raise self.error(
                    self.tree,
                    f"{what} names {', '.join(map(repr, unknown))}, which "
                    f"{'is not a parameter' if len(unknown) == 1 else 'are not parameters'} of "
                    f"{self.fn.__name__}({', '.join(nodes)})",
                )
        self.attrs = attrs
        params: list[tuple[str, Any]] = []
        for name, node in nodes.items():
            default = self.fn.signature.parameters[name].default
            if name in constexprs:
                params.append((name, tl.constexpr(constexprs[name])))
            elif name in signature:
                params.append((name, _Arg(self._arg_type(node, signature[name]))))
            elif default is not self.fn.signature.empty:
                params.append((name, tl.constexpr(default)))
            elif name in self.fn.constexpr_names:
                raise self.error(
                    node, f"no value for the tl.constexpr parameter {name!r}; pass it in constexprs"
                )
            else:
                raise self.error(
                    node,
                    f"no type for the parameter {name!r}; give it in the signature "
                    '(e.g. "*fp32" or "i32")',
                )
        return params

    def _arg_type(self, node: ast.arg, ty: Any) -> tl.dtype:
        if isinstance(ty, str):
            try:
                ty = tl.dtype_from_signature(ty)
            except ValueError as e:
                raise self.error(node, str(e)) from None
        if not isinstance(ty, tl.dtype) or isinstance(ty, tl.block_type) or ty.is_void():
            raise self.error(
                node,
                f"unsupported argument type {ty!r} for {node.arg!r}: kernel arguments are "
                'pointers (e.g. "*fp32") or scalars (e.g. "i32", "fp32")',
            )
        return ty

    def build(self, name: str, params: list[tuple[str, Any]], visibility: str):
        """Generate the function body; return the `tt.func` and how callers read its results."""
        runtime = [(n, v.type) for n, v in params if isinstance(v, _Arg)]
        arg_types = [to_ir_type(t) for _, t in runtime]
        block = Block(arg_types=arg_types)
        for (pname, ty), arg in zip(runtime, block.args):
            name_value(arg, pname)
            self.scope[pname] = tl.tensor(arg, ty)
        for pname, value in params:
            if not isinstance(value, _Arg):
                self.scope[pname] = _const(_unwrap(value))
        self.constexpr_names = set(self.fn.constexpr_names)
        body = normalize_returns(self.tree.body, lambda node, msg: self.error(node, msg))
        self.builder.block = block
        with self.builder.at_loc(self._loc(self.tree)):
            self.visit_statements(body)
        returned = self.scope.get(_RETURN, _Return((), False))
        with self.builder.at_loc(self._loc(self.return_node)):
            handles = [v.handle for v in returned.values if isinstance(v, tl.tensor)]
            has_body = block.first_op is not None
            self.builder.create(tt.ReturnOp(*handles))
        results = [_Arg(v.type) if isinstance(v, tl.tensor) else v for v in returned.values]
        func = tt.FuncOp(
            name,
            (arg_types, [h.type for h in handles]),
            Region(block),
            visibility,
            arg_attrs=self._arg_attrs(runtime) if self.is_kernel else None,
        )
        func.location = self._loc(self.tree).to_attr()
        return func, _Callee(name, results, returned.is_tuple, has_body)

    def _arg_attrs(self, runtime) -> ArrayAttr | None:
        if not any(self.attrs.get(n) for n, _ in runtime):
            return None
        return ArrayAttr(
            [
                DictionaryAttr(
                    {k: IntegerAttr(int(v), i32) for k, v in self.attrs.get(n, {}).items()}
                )
                for n, _ in runtime
            ]
        )

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
        if _is_runtime(value):
            raise self.error(
                node.value,
                f"{node.target.id!r} is declared tl.constexpr but its value is {_describe(value)}, "
                "known only at run time; drop the annotation or compute it from constexprs",
            )
        self.constexpr_names.add(node.target.id)
        self._bind(node.target, _const(_unwrap(value)))

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
                if _is_runtime(value):
                    raise self.error(
                        target,
                        f"{name!r} is a tl.constexpr and cannot be assigned {_describe(value)}, "
                        "which is known only at run time; assign it to a new name",
                    )
                self._bind(target, _const(_unwrap(value)))
                return
            if _is_number(value):  # as in Triton: a number assigned to a name is a scalar tensor
                value = self.semantic.to_tensor(value)
            self._bind(target, value)
        elif isinstance(target, (ast.Tuple, ast.List)):
            values = _unwrap(value)
            if not isinstance(values, (tuple, list)):
                raise self.error(
                    target, f"cannot unpack {_describe(value)} into {len(target.elts)} names"
                )
            if len(values) != len(target.elts):
                raise self.error(
                    target, f"cannot unpack {len(values)} values into {len(target.elts)} names"
                )
            for elt, v in zip(target.elts, values):
                self._assign(elt, _const(v))
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
        if _unwrap(value) is None:
            returned = _Return((), False)
        elif isinstance(_unwrap(value), tuple):
            returned = _Return(tuple(_const(v) for v in _unwrap(value)), True)
        else:
            returned = _Return((value,), False)
        if self.is_kernel and returned.values:
            raise self.error(
                node, "a kernel cannot return a value; store results through a pointer argument"
            )
        for v in returned.values:
            if _is_runtime(v) and not isinstance(v, tl.tensor):
                raise self.error(node, "returning nested tuples of tensors is not supported")
        self.scope[_RETURN] = returned
        self.return_node = node

    def visit_Assert(self, node: ast.Assert) -> None:
        cond = self.visit(node.test)
        msg = _unwrap(self.visit(node.msg)) if node.msg is not None else ""
        if not isinstance(cond, tl.tensor):
            if not _unwrap(cond):
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
            self.visit_statements(node.body if _unwrap(cond) else node.orelse)
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
            values = [
                tl.tensor(next(results), v.type) if isinstance(v, tl.tensor) else v for v in values
            ]
            if name == _RETURN:
                self.scope[_RETURN] = _Return(tuple(values), then_scope[_RETURN].is_tuple)
            else:
                if isinstance(values[0], tl.tensor):
                    name_value(values[0].handle, name)
                self.scope[name] = values[0]

    def _merge_branches(self, node, before, then_scope, else_scope, then_block, else_block):
        """What a runtime `if` yields: for each name that exists after both branches and
        changed in one, its values (tensors are placeholders for the if's results), plus the
        tensors each branch yields for them, in order."""
        for scope, other in ((then_scope, else_scope), (else_scope, then_scope)):
            if _RETURN in scope and _RETURN not in other:
                if scope[_RETURN].values:  # the other path falls off the end, returning None
                    raise self.error(
                        node,
                        "this function returns a value on one path of this `if` but not on "
                        "the other; return a value on every path",
                    )
                other[_RETURN] = scope[_RETURN]
        merged: dict[str, list] = {}
        then_values, else_values = [], []
        for name in then_scope:
            if name not in else_scope:
                continue
            t, e = then_scope[name], else_scope[name]
            if t is before.get(name) and e is before.get(name):
                continue
            if name == _RETURN:
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
                    then_values.append(yielded[0])
                    else_values.append(yielded[1])
                    merged[name].append(yielded[0])
        return merged, then_values, else_values

    def _branch_values(self, node, name, t, e, then_block, else_block):
        """The pair of tensors the branches yield for `name`, or None for an equal constant."""
        label = "the returned value" if name == _RETURN else repr(name)
        where = node if name == _RETURN else self.assigned_at.get(name, node)
        if not _is_runtime(t) and not _is_runtime(e):
            if type(_unwrap(t)) is type(_unwrap(e)) and _unwrap_deep(t) == _unwrap_deep(e):
                return None
            if name in self.constexpr_names or not (_is_number(t) and _is_number(e)):
                raise self.error(
                    where,
                    f"{label} is {_describe(t)} after the `if` branch but {_describe(e)} after "
                    "the `else` branch; a runtime `if` can only merge tensors",
                )
        if _is_number(t):
            with self.builder.at_block(then_block):
                t = self.semantic.to_tensor(t)
        if _is_number(e):
            with self.builder.at_block(else_block):
                e = self.semantic.to_tensor(e)
        if not isinstance(t, tl.tensor) or not isinstance(e, tl.tensor) or t.type != e.type:
            raise self.error(
                where,
                f"{label} is {_describe(t)} after the `if` branch but {_describe(e)} after the "
                "`else` branch; both branches must give it the same type (convert one with "
                ".to(...))",
            )
        return t, e

    def _scalar_condition(self, cond: tl.tensor, what: str, node: ast.AST) -> tl.tensor:
        if cond.type.is_block():
            raise self.error(
                node,
                f"the condition of `{what}` must be a scalar, but it is a tensor of type "
                f"{type_str(cond.type)}; use tl.where to choose per element, or reduce it first",
            )
        if not cond.dtype.is_bool():
            cond = self.semantic.not_equal(cond, tl.constexpr(0))
        return cond

    # -- loops ----------------------------------------------------------------------------

    def visit_For(self, node: ast.For) -> None:
        if node.orelse:
            raise self.error(
                node.orelse[0],
                "`for ... else` is not supported in kernels",
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
            except (SemanticError, *_USER_ERRORS) as e:
                raise self.error(iterable, getattr(e, "message", str(e))) from None
        if isinstance(loop, language.static_range):
            for i in loop:  # unrolled in the enclosing scope, as Python would run it
                self.scope[node.target.id] = tl.constexpr(i)
                self.visit_statements(node.body)
            return
        self._scf_for(node, loop)

    def _loop_carried(self, node, body) -> list[tuple[str, tl.tensor]]:
        """(name, value before the loop) of each live variable the loop body may assign."""
        carried = []
        for name, target in assigned_names(body).items():
            if name not in self.scope:
                continue
            value = self.scope[name]
            if not isinstance(value, tl.tensor):
                raise self.error(
                    target,
                    f"{name!r} holds {_describe(value)} before the loop and is assigned inside it; "
                    "only tensors can change inside a runtime loop (initialize it with a tensor, "
                    "e.g. tl.zeros(...) or a number)",
                )
            carried.append((name, value))
        return carried

    def _yield_carried(self, node, carried) -> list:
        """The values to yield for the carried names, checked against their initial types."""
        handles = []
        for name, initial in carried:
            value = self.scope[name]
            if _is_number(value):
                value = self.semantic.to_tensor(value)
            if not isinstance(value, tl.tensor) or value.type != initial.type:
                raise self.error(
                    self.assigned_at.get(name, node),
                    f"loop-carried variable {name!r} changes type in the loop: it is "
                    f"{type_str(initial.type)} before the loop but {_describe(value)} after this "
                    f"assignment; give it the same type on every iteration (e.g. with .to(...))",
                )
            handles.append(value.handle)
        return handles

    def _enter_loop(self, block: Block, carried, offset: int) -> dict:
        saved = self.scope
        self.scope = dict(saved)
        for (name, value), arg in zip(carried, block.args[offset:]):
            name_value(arg, name)
            self.scope[name] = tl.tensor(arg, value.type)
        return saved

    def _exit_loop(self, node, saved: dict, carried, results) -> None:
        inner = self.scope
        self.scope = saved
        for (name, value), result in zip(carried, results):
            name_value(result, name)
            self.scope[name] = tl.tensor(result, value.type)
        for name in inner.keys() - saved.keys():
            self.dropped[name] = (
                f"it is only assigned inside the loop at line {self._loc(node).line}"
            )

    def _scf_for(self, node: ast.For, loop) -> None:
        bounds = [loop.start, loop.end, loop.step]
        negative = not _is_runtime(loop.step) and _unwrap(loop.step) < 0
        if not _is_runtime(loop.step) and _unwrap(loop.step) == 0:
            raise self.error(node.iter, "the step of range() must not be 0")
        if negative:  # scf.for needs step > 0: iterate start..end mirrored, see below
            bounds = [loop.end, loop.start, -_unwrap(loop.step)]
        with self.builder.at_loc(self._loc(node.iter)):
            values = [self.semantic.to_tensor(_const(_unwrap(b))) for b in bounds]
            for v, what in zip(values, ("start", "end", "step")):
                if v.type.is_block() or not v.dtype.is_int():
                    raise self.error(
                        node.iter,
                        f"the {what} of range() must be an integer scalar, not {type_str(v.type)}",
                    )
            iv_type = (
                tl.int64 if any(v.dtype.primitive_bitwidth == 64 for v in values) else tl.int32
            )
            lb, ub, step = (
                v if v.dtype == iv_type else self.semantic.cast(v, iv_type) for v in values
            )
        carried = self._loop_carried(node, node.body)
        body = Block(arg_types=[to_ir_type(iv_type)] + [v.handle.type for _, v in carried])
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
        for_op = scf.ForOp(lb.handle, ub.handle, step.handle, [v.handle for _, v in carried], body)
        for attr, value in (
            ("tt.num_stages", loop.num_stages),
            ("tt.loop_unroll_factor", loop.loop_unroll_factor),
        ):
            if value is not None:
                for_op.attributes[attr] = IntegerAttr(int(value), i32)
        self.builder.create(for_op)
        self._exit_loop(node, saved, carried, for_op.results)

    def visit_While(self, node: ast.While) -> None:
        if node.orelse:
            raise self.error(
                node.orelse[0],
                "`while ... else` is not supported in kernels",
                cls=UnsupportedLanguageConstruct,
            )
        carried = self._loop_carried(node, node.body)
        arg_types = [v.handle.type for _, v in carried]
        before, after = Block(arg_types=arg_types), Block(arg_types=arg_types)
        saved = self._enter_loop(before, carried, 0)
        with self.builder.at_block(before):
            cond = self.visit(node.test)
            if not isinstance(cond, tl.tensor):
                if _unwrap(cond):
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
            [v.handle for _, v in carried], arg_types, Region(before), Region(after)
        )
        self.builder.create(while_op)
        self._exit_loop(node, saved, carried, while_op.results)

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
            return _const(value)
        if isinstance(value, tuple) and not _is_runtime(value):
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
            raise self.error(node, f"{node.value!r} is not supported in kernels")
        return _const(node.value)

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
        value = _unwrap(self.visit(node.value))
        if not isinstance(value, (tuple, list)):
            raise self.error(node, f"only tuples can be unpacked with `*`, not {_describe(value)}")
        return [_const(v) for v in value]

    def visit_JoinedStr(self, node: ast.JoinedStr) -> tl.constexpr:
        parts = []
        for value in node.values:
            if isinstance(value, ast.Constant):
                parts.append(str(value.value))
                continue
            v = self.visit(value.value)
            if _is_runtime(v):
                raise self.error(
                    value,
                    "f-strings can only format compile-time values; use tl.device_print for "
                    "runtime values",
                )
            spec = _unwrap(self.visit(value.format_spec)) if value.format_spec else ""
            conv = {-1: _unwrap_deep, 115: str, 114: repr, 97: ascii}[value.conversion]
            parts.append(format(conv(_unwrap_deep(v)), spec))
        return tl.constexpr("".join(parts))

    def visit_Slice(self, node: ast.Slice) -> slice:
        parts = [
            self.visit(p) if p is not None else None for p in (node.lower, node.upper, node.step)
        ]
        if any(_is_runtime(p) for p in parts):
            raise self.error(node, "slice bounds must be compile-time constants")
        return slice(*(_unwrap(p) for p in parts))

    def visit_Subscript(self, node: ast.Subscript) -> Any:
        base = self.visit(node.value)
        index = self.visit(node.slice)
        if isinstance(base, tl.tensor):
            return self._index_tensor(base, index)
        if _is_runtime(index):
            raise SemanticError("a tuple can only be indexed with compile-time integers")
        return _const(_unwrap(base)[_unwrap_deep(index)])

    def _index_tensor(self, x: tl.tensor, index: Any) -> tl.tensor:
        """`x[None, :]`: None adds a size-1 dim, `:` keeps one; nothing else selects."""
        items = _unwrap(index) if isinstance(_unwrap(index), tuple) else (index,)
        kept = sum(1 for i in items if _unwrap(i) == slice(None))
        if kept > len(x.shape):
            raise SemanticError(f"too many `:` for a tensor of type {type_str(x.type)}")
        for dim, item in enumerate(map(_unwrap, items)):
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
        if isinstance(base, types.ModuleType):
            if not hasattr(base, attr):
                public = [n for n in dir(base) if not n.startswith("_")]
                close = difflib.get_close_matches(attr, public, n=1)
                hint = f"; did you mean {ast.unparse(node.value)}.{close[0]}?" if close else ""
                raise SemanticError(
                    f"{ast.unparse(node)} does not exist: {base.__name__} has no {attr!r}{hint}"
                )
            return self._global_value(ast.unparse(node), getattr(base, attr))
        return _const(getattr(_unwrap(base), attr))

    def _tensor_attribute(self, x: tl.tensor, attr: str) -> Any:
        if attr == "dtype":
            return x.dtype
        if attr == "type":
            return x.type
        if attr == "shape":
            return tuple(tl.constexpr(s) for s in x.shape)
        if attr == "numel":
            return tl.constexpr(x.numel)
        if attr == "T":
            return self.semantic.trans(x)
        function = getattr(language, attr, None)
        if not (
            hasattr(function, "__kernellab_builtin__") or isinstance(function, tl.KernelFunction)
        ):
            raise SemanticError(f"a tensor has no attribute {attr!r}")
        return _BoundMethod(x, function)

    # -- operators -------------------------------------------------------------------------

    def visit_BinOp(self, node: ast.BinOp) -> Any:
        return self._binary(type(node.op), self.visit(node.left), self.visit(node.right))

    def _binary(self, op: type, lhs: Any, rhs: Any) -> Any:
        method, fold, symbol = _BINARY[op]
        if not _is_runtime(lhs) and not _is_runtime(rhs):
            return _const(fold(_unwrap(lhs), _unwrap(rhs)))
        if method is None:
            raise SemanticError(
                f"`{symbol}` only works on compile-time constants, not on {_describe(lhs)} and "
                f"{_describe(rhs)}" + ("; use tl.dot for matrix products" if symbol == "@" else "")
            )
        return getattr(self.semantic, method)(_for_semantic(lhs), _for_semantic(rhs))

    def visit_UnaryOp(self, node: ast.UnaryOp) -> Any:
        operand = self.visit(node.operand)
        method, fold = _UNARY[type(node.op)]
        if not _is_runtime(operand):
            return _const(fold(_unwrap(operand)))
        return getattr(self.semantic, method)(operand)

    def visit_Compare(self, node: ast.Compare) -> Any:
        lhs = self.visit(node.left)
        result = None
        for op, right in zip(node.ops, node.comparators):
            rhs = self.visit(right)
            method, fold = _COMPARE[type(op)]
            if method is None or (not _is_runtime(lhs) and not _is_runtime(rhs)):
                if method is None and isinstance(op, (ast.In, ast.NotIn)) and _is_runtime(rhs):
                    raise SemanticError("`in` needs a compile-time tuple on its right")
                value = _const(fold(_unwrap_deep(lhs), _unwrap_deep(rhs)))
            else:
                value = getattr(self.semantic, method)(_for_semantic(lhs), _for_semantic(rhs))
            result = value if result is None else self._logical(ast.And, result, value)
            if not _is_runtime(result) and not _unwrap(result):
                return result
            lhs = rhs
        return result

    def visit_BoolOp(self, node: ast.BoolOp) -> Any:
        result = self.visit(node.values[0])
        for operand in node.values[1:]:
            if not _is_runtime(result):
                if bool(_unwrap(result)) == isinstance(node.op, ast.Or):
                    return result  # short-circuits as in Python
                result = self.visit(operand)
            else:
                result = self._logical(type(node.op), result, self.visit(operand))
        return result

    def _logical(self, op: type, lhs: Any, rhs: Any) -> Any:
        if not _is_runtime(lhs):
            return rhs if bool(_unwrap(lhs)) == (op is ast.And) else lhs
        method = "logical_and" if op is ast.And else "logical_or"
        return getattr(self.semantic, method)(lhs, _for_semantic(rhs))

    def visit_IfExp(self, node: ast.IfExp) -> Any:
        cond = self.visit(node.test)
        if not isinstance(cond, tl.tensor):
            return self.visit(node.body if _unwrap(cond) else node.orelse)
        if cond.type.is_block():  # element-wise choice, as tl.where
            return self.semantic.where(
                cond, _for_semantic(self.visit(node.body)), _for_semantic(self.visit(node.orelse))
            )
        cond = self._scalar_condition(cond, "if", node.test)
        then_block, else_block = Block(), Block()
        with self.builder.at_block(then_block):
            then_value = self.semantic.to_tensor(_for_semantic(self.visit(node.body)))
        with self.builder.at_block(else_block):
            else_value = self.semantic.to_tensor(_for_semantic(self.visit(node.orelse)))
        if then_value.type != else_value.type:
            raise SemanticError(
                f"the two sides of this conditional expression have different types, "
                f"{type_str(then_value.type)} and {type_str(else_value.type)}; convert one "
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
                    "`**` unpacking is not supported in kernel calls",
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
            return self._call_builtin(function.__kernellab_builtin__, args, kwargs, node)
        if function in (builtins.range, language.range, language.static_range):
            raise SemanticError("range objects can only be used as the iterable of a `for` loop")
        if function is builtins.min or function is builtins.max:
            return self._min_max(function, args)
        if function is builtins.print:  # print(x) is tl.device_print("", x)
            if not args or not isinstance(_unwrap(args[0]), str):
                args = [tl.constexpr(""), *args]
            return self._call_builtin("device_print", args, kwargs, node)
        if function is tl.constexpr:
            if _is_runtime(args):
                raise SemanticError(
                    f"tl.constexpr(...) needs a compile-time value, not {_describe(args[0])}"
                )
            return tl.constexpr(*map(_unwrap, args))
        if isinstance(function, types.FunctionType):
            raise SemanticError(
                f"{function.__name__} is a plain Python function and cannot be called from a "
                f"kernel; decorate it with @kl.jit"
            )
        if function is isinstance:  # inspects Python objects, runtime values included
            return _const(isinstance(*map(_unwrap, args)))
        if any(function is f for f in _COMPILE_TIME_BUILTINS) or isinstance(
            function, (types.BuiltinFunctionType, types.MethodType, tl.dtype)
        ):
            if _is_runtime(args) or _is_runtime(list(kwargs.values())):
                raise SemanticError(
                    f"{ast.unparse(node.func)}(...) runs at compile time and needs compile-time "
                    f"arguments; use the tl function that works on tensors"
                )
            return _const(
                function(
                    *map(_unwrap_deep, args), **{k: _unwrap_deep(v) for k, v in kwargs.items()}
                )
            )
        raise SemanticError(
            f"{ast.unparse(node.func)} is {_describe(function)}, which cannot be called in a kernel"
        )

    def _call_builtin(self, name: str, args: list, kwargs: dict, node: ast.Call) -> Any:
        implementation = getattr(self.semantic, name, None)
        if implementation is None:
            raise SemanticError(f"tl.{name} is not implemented by kernellab yet")
        if name == "static_assert":
            return self._static_assert(args, kwargs, node)
        result = implementation(
            *map(_for_semantic, args), **{k: _for_semantic(v) for k, v in kwargs.items()}
        )
        return _const(result)

    def _static_assert(self, args: list, kwargs: dict, node: ast.Call) -> None:
        """tl.static_assert, whose failure (on a compile-time condition) has its own class."""
        cond = args[0] if args else kwargs.get("cond")
        try:
            self.semantic.static_assert(
                *map(_for_semantic, args), **{k: _for_semantic(v) for k, v in kwargs.items()}
            )
        except SemanticError as e:
            cls = CompilationError if _is_runtime(cond) else CompileTimeAssertionFailure
            raise self.error(node, e.message, e.notes, cls=cls) from None

    def _min_max(self, function, args: list) -> Any:
        if not _is_runtime(args):
            return _const(function(*map(_unwrap_deep, args)))
        if len(args) < 2:
            raise SemanticError(
                f"{function.__name__}() of one tensor: use tl.{function.__name__}(x, axis) to "
                "reduce it"
            )
        combine = self.semantic.minimum if function is builtins.min else self.semantic.maximum
        result = args[0]
        for arg in args[1:]:
            result = combine(_for_semantic(result), _for_semantic(arg))
        return result

    def _call_kernel_function(self, fn: tl.KernelFunction, args: list, kwargs: dict) -> Any:
        """Emit a call of `fn` (specialized on the compile-time arguments) at the builder's
        insertion point; Semantic uses this for combine functions too."""
        try:
            bound = fn.signature.bind(*args, **kwargs)
        except TypeError as e:
            raise SemanticError(
                f"wrong arguments for {fn.__name__}({', '.join(fn.arg_names)}): {e}"
            ) from None
        bound.apply_defaults()
        params: list[tuple[str, Any]] = []
        operands = []
        for name, value in bound.arguments.items():
            value = _const(value)
            if isinstance(value, tl.tensor):
                if name in fn.constexpr_names:
                    raise SemanticError(
                        f"parameter {name!r} of {fn.__name__} is tl.constexpr, but the argument "
                        f"is {_describe(value)}, known only at run time"
                    )
                params.append((name, _Arg(value.type)))
                operands.append(value.handle)
            elif _is_runtime(value):
                raise SemanticError(f"passing tuples of tensors to {fn.__name__} is not supported")
            else:
                params.append((name, value))
        site = self.builder.loc
        try:
            callee = self.unit.callee(fn, params)
        except CompilationError as e:
            e.add_note_line(
                f"in {fn.__name__}, called from {site.filename}:{site.line}:{site.col + 1}"
            )
            raise
        results = iter(())
        if callee.has_body:
            call = tt.CallOp.create(
                operands=operands,
                result_types=[to_ir_type(r.type) for r in callee.results if isinstance(r, _Arg)],
                properties={"callee": SymbolRefAttr(callee.name)},
            )
            self.builder.create(call)
            results = iter(call.results)
        values = tuple(
            tl.tensor(next(results), r.type) if isinstance(r, _Arg) else r for r in callee.results
        )
        if callee.is_tuple:
            return values
        return values[0] if values else None
