"""One kernel function → one `tt.func`, and the module of all functions a kernel calls.

`generate_ttir` compiles the kernel with a `FunctionGenerator`; every call of another kernel
function specializes it on its compile-time arguments through the compilation unit, which
builds each specialization once as a private `tt.func`.
"""

from __future__ import annotations

import ast
import collections
import re
from dataclasses import dataclass
from typing import Any

from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    IntegerAttr,
    ModuleOp,
    SymbolRefAttr,
    i32,
)
from xdsl.ir import Block, Region

from kernellab.frontend.builder import IRBuilder, name_value
from kernellab.frontend.codegen.base import RETURN, Arg, Return
from kernellab.frontend.codegen.control_flow import normalize_returns
from kernellab.frontend.codegen.expressions import ExpressionVisitor
from kernellab.frontend.codegen.statements import StatementVisitor
from kernellab.frontend.errors import CompilationError, SemanticError
from kernellab.frontend.semantic import Semantic
from kernellab.frontend.semantic.tiles import TensorDescriptor, padding_value
from kernellab.frontend.types import to_ir_type
from kernellab.frontend.values import (
    Aggregate,
    const,
    is_runtime,
    leaves,
    map_leaves,
    show,
    unwrap,
    unwrap_deep,
)
from kernellab.ir import tt
from kernellab.language import core as tl
from kernellab.language.argument_tree import ArgumentTree, root_parameter


def generate_ttir(
    fn: tl.KernelFunction,
    signature: dict[str, tl.dtype | str],
    constexprs: dict[str, Any],
    attrs: dict[str, dict[str, int]] | None = None,
    extern_libs=(),
) -> ModuleOp:
    """Compile `fn` specialized on `signature` (runtime parameter → dtype or "*fp32"-style
    text) and `constexprs` (parameter → value) into a module: one public `tt.func` named
    after the kernel, with `attrs` (parameter → {"tt.divisibility": 16, ...}) on its
    arguments, plus a private `tt.func` per called kernel function. Calls of kernel functions
    with an `extern` in one of the `extern_libs` the backend links become
    `tt.extern_elementwise` ops where the arguments' dtype has a library function."""
    unit = _CompilationUnit(frozenset(extern_libs))
    generator = FunctionGenerator(unit, fn, is_kernel=True)
    params = generator.kernel_params(signature, constexprs, attrs or {})
    func, _ = generator.build(fn.__name__, params, visibility="public")
    block = unit.module.body.block
    if block.first_op is None:
        block.add_op(func)
    else:  # the kernel first, then the functions it calls
        block.insert_op_before(func, block.first_op)
    return unit.module


# ------------------------------------------------------------------------- the module


@dataclass
class _Callee:
    """A generated private function: its symbol and how to rebuild its return value.

    `results` has one entry per returned value: an `Arg` (a `tt.func` result) or a
    compile-time value (returned without IR).
    """

    name: str
    results: list
    is_tuple: bool
    has_body: bool


class _CompilationUnit:
    """The module being built and the kernel functions specialized into it so far."""

    def __init__(self, extern_libs: frozenset[str] = frozenset()):
        self.extern_libs = extern_libs  # the libraries the backend links (names)
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
            raise SemanticError(
                f"recursive kernel functions are not supported ({chain}); rewrite the recursion "
                "as a loop"
            )
        name = self._symbol(fn, params)
        self.in_progress.append(fn)
        try:
            generator = FunctionGenerator(self, fn, is_kernel=False)
            func, callee = generator.build(name, params, visibility="private")
        finally:
            self.in_progress.pop()
        if callee.has_body:
            self.module.body.block.add_op(func)
        self.callees[key] = callee
        return callee

    def _symbol(self, fn: tl.KernelFunction, params: list[tuple[str, Any]]) -> str:
        parts = [_symbol_part(v) for _, v in params]
        base = "__".join(re.sub(r"[^A-Za-z0-9]+", "_", p).strip("_") for p in [fn.__name__, *parts])
        name, n = base, 1
        while name in self.symbols:
            name, n = f"{base}_{n}", n + 1
        self.symbols.add(name)
        return name


def _symbol_part(value: Any) -> str:
    """A parameter's part of a specialized function's name: its type, its constant, or, for a
    tuple or aggregate with runtime parts (a descriptor, a list of scalars), its kind and its
    runtime leaves' types (the symbol table keeps names unique)."""
    if isinstance(value, Arg):
        return show(value.type)
    runtime = leaves(value, _is_arg)
    if runtime:
        return "_".join([type(unwrap(value)).__name__, *(show(a.type) for a in runtime)])
    return f"c{unwrap_deep(value)!r}"


def _is_arg(value: Any) -> bool:
    return isinstance(value, Arg)


def _spec_key(value: Any) -> tuple:
    if isinstance(value, Arg):
        return ("arg", value.type)
    if leaves(value, _is_arg):  # a tuple or aggregate with runtime parts
        if isinstance(value, Aggregate):
            return ("aggregate", type(value), tuple(_spec_key(f) for f in value.fields()))
        inner = unwrap(value)
        return ("tuple", type(inner), tuple(_spec_key(v) for v in inner))
    value = unwrap_deep(value)
    try:
        hash(value)
    except TypeError:
        value = repr(value)
    return ("const", type(value), value)


# ---------------------------------------------------------------------------- the visitor


class FunctionGenerator(StatementVisitor, ExpressionVisitor):
    """Builds one `tt.func` from one kernel function's AST."""

    def __init__(self, unit: _CompilationUnit, fn: tl.KernelFunction, is_kernel: bool):
        self.unit = unit
        self.fn = fn
        self.is_kernel = is_kernel
        self.lines = fn.src.splitlines()
        module = ast.parse(fn.src)
        if not module.body or not isinstance(module.body[0], ast.FunctionDef):
            raise CompilationError(f"{fn.__name__} is not a function defined with `def`")
        self.tree = module.body[0]
        self.builder = IRBuilder(loc=self._loc(self.tree))
        self.semantic = Semantic(self.builder, call_function=self._call_kernel_function)
        self.scope = {}
        self.attrs = {}
        self.constexpr_names = set()
        self.assigned_at = {}
        self.dropped = {}
        self.return_node = self.tree
        self.leaf_names: dict[str, list[str]] = {}  # structured parameter → its leaves' names

    # -- the function ---------------------------------------------------------------------

    def kernel_params(self, signature, constexprs, attrs) -> list[tuple[str, Any]]:
        """(name, `Arg` or compile-time value) for each parameter of the kernel, checked."""
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
            unknown = [n for n in names if root_parameter(n) not in nodes]
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
            if isinstance(constexprs.get(name), ArgumentTree):
                tree = constexprs[name]
                self.leaf_names[name] = [p for p in tree.leaf_paths(name) if p in signature]
                params.append((name, self._structured(node, tree, name, signature, constexprs)))
            elif name in constexprs:
                params.append((name, tl.constexpr(constexprs[name])))
            elif name in signature:
                params.append((name, Arg(self._arg_type(node, signature[name]))))
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

    def _structured(self, node, tree: ArgumentTree, path: str, signature, constexprs) -> Any:
        """A tuple, NamedTuple or tensor descriptor argument rebuilt from its leaves (`Arg`s
        for those in the signature, constants for the rest)."""
        values = []
        for i, child in enumerate(tree.children):
            leaf = f"{path}.{i}"
            if child is not None:
                values.append(self._structured(node, child, leaf, signature, constexprs))
            elif leaf in signature:
                values.append(Arg(self._arg_type(node, signature[leaf])))
            else:
                values.append(tl.constexpr(constexprs[leaf]))
        if tree.kind == "namedtuple":
            return collections.namedtuple(tree.constants[0], tree.names)(*values)
        if tree.kind == "tensor_descriptor":
            block, padding = tree.constants
            base, shape, strides = values
            return TensorDescriptor(base, shape, strides, block, padding_value(padding), path)
        return tuple(values)

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
        runtime = [
            (leaf_name, a.type)
            for n, v in params
            for leaf_name, a in zip(self.leaf_names.get(n, [n] * len(leaves(v, _is_arg))), leaves(v, _is_arg))
        ]
        arg_types = [to_ir_type(t) for _, t in runtime]
        block = Block(arg_types=arg_types)
        block_args = iter(block.args)
        for pname, value in params:
            if not leaves(value, _is_arg):
                self.scope[pname] = const(unwrap(value))
                continue
            self.scope[pname] = map_leaves(
                value, lambda a: tl.tensor(next(block_args), a.type), _is_arg
            )
            if isinstance(value, Arg):
                name_value(self.scope[pname].handle, pname)
        # a tl.constexpr parameter given a tensor is a runtime value here (see the call)
        self.constexpr_names = {n for n, v in params if n in self.fn.constexpr_names and not leaves(v, _is_arg)}
        body = normalize_returns(self.tree.body, lambda node, msg: self.error(node, msg))
        self.builder.block = block
        with self.builder.at_loc(self._loc(self.tree)):
            self.visit_statements(body)
        returned = self.scope.get(RETURN, Return((), False))
        with self.builder.at_loc(self._loc(self.return_node)):
            handles = [t.handle for v in returned.values for t in leaves(v)]
            # A function that returns a runtime value (even an argument, `return a`) is
            # called; one that only computes constants needs no symbol.
            has_body = block.first_op is not None or bool(handles)
            self.builder.create(tt.ReturnOp(*handles))
        results = [map_leaves(v, lambda t: Arg(t.type)) for v in returned.values]
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

    # -- calls of other kernel functions --------------------------------------------------

    def _call_kernel_function(self, fn: tl.KernelFunction, args: list, kwargs: dict) -> Any:
        """Emit a call of `fn` (specialized on the compile-time arguments) at the builder's
        insertion point; Semantic uses this for combine functions too."""
        try:
            bound = fn.signature.bind(*args, **kwargs)
        except TypeError as e:
            raise SemanticError(
                f"wrong arguments for {fn.__name__}({', '.join(fn.arg_names)}): {e}; pass one "
                "value per parameter"
            ) from None
        bound.apply_defaults()
        extern = fn.extern
        if extern is not None and extern.library in self.unit.extern_libs:
            result = self.semantic.extern_elementwise(list(bound.arguments.values()), extern)
            if result is not None:
                return result
        params: list[tuple[str, Any]] = []
        operands = []
        for name, value in bound.arguments.items():
            value = const(value)
            # A called function specializes on its arguments, whatever its annotations say: a
            # tensor passed to a tl.constexpr parameter is a runtime parameter, as in Triton
            # (tutorial 06 passes its offsets so).
            if is_runtime(value):  # a tensor, or a tuple or aggregate passed as its tensors
                params.append((name, map_leaves(value, lambda t: Arg(t.type))))
                operands.extend(t.handle for t in leaves(value))
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
                result_types=[
                    to_ir_type(a.type) for r in callee.results for a in leaves(r, _is_arg)
                ],
                properties={"callee": SymbolRefAttr(callee.name)},
            )
            self.builder.create(call)
            results = iter(call.results)
        values = tuple(
            map_leaves(r, lambda a: tl.tensor(next(results), a.type), _is_arg)
            for r in callee.results
        )
        if callee.is_tuple:
            return values
        return values[0] if values else None
