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

Modules: `function` (the entry point, one `tt.func` per function, the module of callees),
`statements` and `expressions` (the visitor, by kind of AST node), `base` (their shared state,
locations and errors), `control_flow` (what the AST says before any IR is built).
"""

from kernellab.frontend.codegen.function import generate_ttir

__all__ = ["generate_ttir"]
