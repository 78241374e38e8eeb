"""The import graph of kernellab points down the layers and has no cycle.

Every module under kernellab/ is parsed (never imported). An import of a higher layer fails the
test wherever it is written, at module level or inside a function; a cycle fails it when it is
made of module-level imports (those run on import; a function-level import, or one under
`if TYPE_CHECKING:`, runs later or never, so it may point back within its own layer). Relative
imports are resolved; `from pkg import name` counts as an import of the module `pkg.name` when
that is a module, else of `pkg`.
"""

from __future__ import annotations

import ast
import os

import pytest

import kernellab

ROOT = os.path.dirname(os.path.abspath(kernellab.__file__))

# Lowest first. A module may import its own layer and those below.
LAYERS = [
    ("language", ["kernellab.language"]),
    ("ir", ["kernellab.ir"]),
    ("frontend", ["kernellab.frontend"]),
    ("layouts", ["kernellab.layouts"]),
    ("passes", ["kernellab.passes"]),
    ("backends", ["kernellab.backends"]),
    ("compiler", ["kernellab.compiler"]),
    ("testing", ["kernellab.testing"]),
    ("runtime", ["kernellab.runtime", "kernellab.tools"]),
    # The root package is the public facade (kl.jit, kl.compile, ...): it sits with the lab,
    # the other user-facing layer, which writes kernels through it (`import kernellab as kl`).
    # It loads the lab only inside functions (`%load_ext kernellab`) or lazily (kl.lab).
    ("lab", ["kernellab.lab", "kernellab"]),
    # Programs on top of the facade: the tutorial kernels, the tour, the command line.
    ("programs", ["kernellab.examples", "kernellab.tour", "kernellab.cli", "kernellab.__main__"]),
]
RANK = {prefix: rank for rank, (_, prefixes) in enumerate(LAYERS) for prefix in prefixes}


def module_name(path: str) -> str:
    rel = os.path.relpath(path, os.path.dirname(ROOT))[: -len(".py")].replace(os.sep, ".")
    return rel[: -len(".__init__")] if rel.endswith(".__init__") else rel


def all_modules() -> dict[str, str]:
    found = {}
    for folder, dirs, files in os.walk(ROOT):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        for f in files:
            if f.endswith(".py"):
                path = os.path.join(folder, f)
                found[module_name(path)] = path
    return found


MODULES = all_modules()


def layer_of(module: str) -> int:
    parts = module.split(".")
    for n in range(len(parts), 0, -1):
        prefix = ".".join(parts[:n])
        if prefix in RANK:
            return RANK[prefix]
    raise AssertionError(f"{module} is in no layer: add it to LAYERS in tests/test_layers.py")


def known(name: str) -> str | None:
    """The kernellab module an import of `name` loads (its longest existing prefix)."""
    parts = name.split(".")
    for n in range(len(parts), 0, -1):
        prefix = ".".join(parts[:n])
        if prefix in MODULES:
            return prefix
    return None


def _runs_later(node) -> bool:
    """A function body runs after the import; an `if TYPE_CHECKING:` block never runs."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        return True
    return isinstance(node, ast.If) and ast.unparse(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING")


def imports(module: str, path: str):
    """(line, imported kernellab module, at module level?) for each import in the file."""
    tree = ast.parse(open(path).read(), path)
    package = module if path.endswith("__init__.py") else module.rsplit(".", 1)[0]
    found = []

    def visit(node, top: bool) -> None:
        for child in ast.iter_child_nodes(node):
            inner = top and not _runs_later(child)
            if isinstance(child, ast.Import):
                for alias in child.names:
                    found.append((child.lineno, alias.name, inner))
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    anchor = package.split(".")
                    anchor = anchor[: len(anchor) - (child.level - 1)]
                    base = ".".join(anchor + ([base] if base else []))
                for alias in child.names:
                    full = f"{base}.{alias.name}"
                    found.append((child.lineno, full if full in MODULES else base, inner))
            visit(child, inner)

    visit(tree, True)
    return [(line, known(name), top) for line, name, top in found if known(name)]


GRAPH = {module: imports(module, path) for module, path in MODULES.items()}


def upward_imports(graph=GRAPH) -> list[str]:
    bad = []
    for module, edges in sorted(graph.items()):
        for line, target, _ in edges:
            if layer_of(target) > layer_of(module):
                where = os.path.relpath(MODULES[module], os.path.dirname(ROOT))
                bad.append(
                    f"{where}:{line}: {module} ({LAYERS[layer_of(module)][0]}) imports {target} "
                    f"({LAYERS[layer_of(target)][0]})"
                )
    return bad


def cycles(graph=GRAPH) -> list[list[str]]:
    """Every strongly connected group of modules (more than one, or one importing itself) in
    the graph of module-level imports (Tarjan's algorithm)."""
    edges = {m: sorted({t for _, t, top in e if top}) for m, e in graph.items()}
    index, low, stack, on_stack, groups = {}, {}, [], set(), []

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges.get(v, []):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1 or v in edges.get(v, []):
                groups.append(sorted(group))

    for v in sorted(edges):
        if v not in index:
            connect(v)
    return groups


def test_every_module_is_in_a_layer():
    for module in MODULES:
        layer_of(module)


def test_no_module_imports_a_higher_layer():
    bad = upward_imports()
    assert not bad, "imports that point up the layers:\n" + "\n".join(bad)


def test_module_level_imports_have_no_cycle():
    found = cycles()
    assert not found, "import cycles:\n" + "\n".join(" <-> ".join(group) for group in found)


# -- the check itself can fail ----------------------------------------------------------------


def test_an_upward_import_is_named_by_file_and_line():
    graph = dict(GRAPH)
    graph["kernellab.language.core"] = [(7, "kernellab.runtime.jit", False)]  # inside a function
    [message] = upward_imports({"kernellab.language.core": graph["kernellab.language.core"]})
    assert message.startswith(os.path.join("kernellab", "language", "core.py") + ":7: ")
    assert "(language) imports kernellab.runtime.jit (runtime)" in message


def test_a_cycle_of_module_level_imports_is_found_and_a_function_level_one_is_not():
    graph = {"a": [(1, "b", True)], "b": [(1, "c", True)], "c": [(1, "a", True)], "d": [(1, "a", True)]}
    assert cycles(graph) == [["a", "b", "c"]]
    graph["c"] = [(1, "a", False)]
    assert cycles(graph) == []


@pytest.mark.parametrize(
    "source, module, expected",
    [
        ("from . import core", "kernellab.language.semantic", "kernellab.language.core"),
        ("from ..backends import arguments", "kernellab.runtime.jit", "kernellab.backends.arguments"),
        ("from kernellab.backends import get_backend", "kernellab.compiler", "kernellab.backends"),
        ("import kernellab.language.core as c", "kernellab.lab.magic", "kernellab.language.core"),
        ("import kernellab as kl", "kernellab.lab.magic", "kernellab"),
    ],
)
def test_imports_are_resolved(tmp_path, source, module, expected):
    name = "__init__.py" if module == "kernellab.compiler" else "x.py"
    path = tmp_path / name
    path.write_text(source + "\n")
    assert [(line, target) for line, target, _ in imports(module, str(path))] == [(1, expected)]
