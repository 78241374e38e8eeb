"""Static facts about a kernel's statements that structured control flow needs.

Two things are decided from the AST alone, before any IR is built:
- which variables a loop (or branch) may assign, so their values become loop-carried
  (`assigned_names`), with no throwaway visit of the body;
- where early `return`s go: `if c: ...; return` followed by more statements is rewritten into
  `if c: ... else: <the rest>` (`normalize_returns`), so every `return` ends its block and the IR
  stays structured (scf.if yields the returned values instead of jumping).
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef,
           ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)  # fmt: skip


def _walk(stmts: list[ast.stmt]) -> Iterator[ast.AST]:
    """Every node under `stmts`, not entering nested functions or comprehensions."""
    todo = list(reversed(stmts))
    while todo:
        node = todo.pop()
        yield node
        if not isinstance(node, _SCOPES):
            todo.extend(reversed(list(ast.iter_child_nodes(node))))


def _target_names(target: ast.AST) -> Iterator[ast.Name]:
    if isinstance(target, ast.Name):
        yield target
    elif isinstance(target, (ast.Tuple, ast.List)):
        for elt in target.elts:
            yield from _target_names(elt)
    elif isinstance(target, ast.Starred):
        yield from _target_names(target.value)


def assigned_names(stmts: list[ast.stmt]) -> dict[str, ast.Name]:
    """Names that `stmts` may assign, in source order, each with its first assignment.

    The variables of nested `for` loops are left out: they are never loop-carried (a runtime
    loop's variable does not outlive it; a static_range variable is a compile-time constant).
    """
    found: dict[str, ast.Name] = {}
    for node in _walk(stmts):
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.NamedExpr)):
            targets = [node.target]
        else:
            continue
        for target in targets:
            for name in _target_names(target):
                found.setdefault(name.id, name)
    return found


def _returns(stmts: list[ast.stmt]) -> Iterator[ast.Return]:
    return (node for node in _walk(stmts) if isinstance(node, ast.Return))


def normalize_returns(
    stmts: list[ast.stmt], error: Callable[[ast.AST, str], Exception]
) -> list[ast.stmt]:
    """Rewrite `stmts` so that every `return` is the last statement of its block.

    An `if` that contains a return absorbs the statements after it into both of its branches
    (a branch that returns drops them as dead code). Returns inside loops have no structured
    form and are reported through `error(node, message)`.
    """
    out: list[ast.stmt] = []
    for i, stmt in enumerate(stmts):
        if isinstance(stmt, ast.Return):
            out.append(stmt)
            return out
        if isinstance(stmt, (ast.For, ast.While)):
            for ret in _returns(stmt.body + stmt.orelse):
                raise error(
                    ret,
                    "`return` inside a loop is not supported; assign the result to a variable "
                    "and return it after the loop",
                )
        if isinstance(stmt, ast.If) and next(_returns([stmt]), None) is not None:
            rest = stmts[i + 1 :]
            branch = ast.If(
                test=stmt.test,
                body=normalize_returns(stmt.body + rest, error),
                orelse=normalize_returns(stmt.orelse + rest, error),
            )
            out.append(ast.copy_location(branch, stmt))
            return out
        out.append(stmt)
    return out
