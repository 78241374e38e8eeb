"""The frontend: Python AST → TTIR (the visitor, the semantic rules, and the errors they raise)."""

from kernellab.frontend.codegen import generate_ttir
from kernellab.frontend.errors import CompilationError, SemanticError

__all__ = ["generate_ttir", "CompilationError", "SemanticError"]
