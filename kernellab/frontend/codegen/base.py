"""What every part of the visitor shares: its state, source locations, and error reporting.

`VisitorBase.visit` stamps each op built below an AST node with that node's location and turns
any error raised there into a `CompilationError` pointing at the node. The statement and
expression visitors build on it; `function.FunctionGenerator` puts them together.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Any

from kernellab.frontend.builder import IRBuilder, SourceLocation
from kernellab.frontend.errors import CompilationError, SemanticError, UnsupportedLanguageConstruct
from kernellab.frontend.semantic import Semantic
from kernellab.frontend.values import show
from kernellab.language import core as tl


@dataclass(frozen=True)
class Arg:
    """A runtime parameter or result of a `tt.func`, of this language type."""

    type: tl.dtype


@dataclass
class Return:
    """What a `return` statement produced; `is_tuple` tells `return a,` from `return a`."""

    values: tuple
    is_tuple: bool


RETURN = "$return"  # scope key for the returned values (not a valid Python name)


_UNSUPPORTED = {
    ast.With: "`with` blocks are not supported in kernels; move the body out of the `with`",
    ast.AsyncWith: "`async with` is not supported in kernels",
    ast.Try: "try/except is not supported in kernels: nothing raises at run time; check "
    "conditions with tl.device_assert or tl.static_assert instead",
    ast.Raise: "`raise` is not supported in kernels; use tl.static_assert (compile time) or "
    "tl.device_assert (run time)",
    ast.Lambda: "lambda is not supported in kernels; define a @kl.jit function and call it",
    ast.FunctionDef: "nested function definitions are not supported; define a @kl.jit function "
    "at module level and call it",
    ast.AsyncFunctionDef: "async functions are not supported in kernels",
    ast.ClassDef: "class definitions are not supported in kernels; define classes at module "
    "level",
    ast.ListComp: "list comprehensions are not supported in kernels; unroll with "
    "`for i in tl.static_range(n)` instead",
    ast.SetComp: "set comprehensions are not supported in kernels; use a tuple",
    ast.DictComp: "dict comprehensions are not supported in kernels; use separate variables",
    ast.GeneratorExp: "generator expressions are not supported in kernels; unroll with "
    "`for i in tl.static_range(n)` instead",
    ast.Dict: "dicts are not supported in kernels; use separate variables or a tuple",
    ast.Set: "sets are not supported in kernels; use a tuple",
    ast.Break: "`break` is not supported in kernels; make the loop condition (a `while` "
    "loop) or a mask stop the work instead",
    ast.Continue: "`continue` is not supported in kernels; wrap the rest of the loop body in "
    "an `if` instead",
    ast.Global: "`global` is not supported in kernels; kernels cannot change globals",
    ast.Nonlocal: "`nonlocal` is not supported in kernels; return the value instead",
    ast.Delete: "`del` is not supported in kernels; just stop using the name",
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
USER_ERRORS = (TypeError, ValueError, ZeroDivisionError, OverflowError, IndexError)


class VisitorBase(ast.NodeVisitor):
    """The state of one function being compiled, and the location/error machinery."""

    unit: Any  # the function._CompilationUnit being built
    fn: tl.KernelFunction
    is_kernel: bool
    lines: list[str]  # the function's dedented source lines
    tree: ast.FunctionDef
    builder: IRBuilder
    semantic: Semantic
    scope: dict[str, Any]  # name → value; RETURN → the returned values
    attrs: dict[str, dict[str, int]]  # kernel argument attributes
    constexpr_names: set[str]
    assigned_at: dict[str, ast.AST]  # last assignment of each name (for errors)
    dropped: dict[str, str]  # names that went out of scope, and why
    return_node: ast.AST

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
            except USER_ERRORS as e:
                raise self.error(node, str(e)) from e
            except Exception as e:  # a compiler bug: still say where, keep the cause
                raise self.error(node, f"internal error: {type(e).__name__}: {e}") from e

    def generic_visit(self, node: ast.AST) -> Any:
        message = _UNSUPPORTED.get(type(node), f"{type(node).__name__} is not supported in kernels")
        raise self.error(node, message, cls=UnsupportedLanguageConstruct)

    # -- conditions ----------------------------------------------------------------------------

    def _scalar_condition(self, cond: tl.tensor, what: str, node: ast.AST) -> tl.tensor:
        """The i1 scalar a runtime `if`, `while` or conditional expression branches on."""
        if cond.type.is_block():
            raise self.error(
                node,
                f"the condition of `{what}` must be a scalar, but it is a tensor of type "
                f"{show(cond.type)}; use tl.where to choose per element, or reduce it first",
            )
        if not cond.dtype.is_bool():
            cond = self.semantic.not_equal(cond, tl.constexpr(0))
        return cond
