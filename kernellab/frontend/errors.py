"""Errors the frontend reports about a kernel's source.

The semantic layer knows *what* is wrong (shapes, dtypes) but not *where*: it raises
`SemanticError`. The AST visitor knows where: it turns the error into a `CompilationError` that
carries the file, line and column of the expression, and renders the source line with a caret
under it, so the person at the notebook sees their code, not a compiler traceback.
"""

from __future__ import annotations


class SemanticError(Exception):
    """A user error found while building IR, located later by the visitor.

    `message` is one sentence that says what to change; `notes` add the shapes/dtypes involved.
    """

    def __init__(self, message: str, notes: list[str] | tuple[str, ...] = ()):
        super().__init__(message)
        self.message = message
        self.notes = list(notes)

    def __reduce__(self):
        return type(self), (self.message, self.notes)


class CompilationError(Exception):
    """A kernel that cannot be compiled, pointing at the offending expression.

    `line` is 1-based and `col` 0-based, both in the user's file (or notebook cell);
    `end_col` (exclusive, on the same line) underlines the rest of the expression when known.
    The rendered text shows `file:line:col` with a 1-based column, as compilers and editors do.
    """

    def __init__(
        self,
        message: str,
        filename: str | None = None,
        line: int | None = None,
        col: int | None = None,
        source_line: str | None = None,
        notes: list[str] | tuple[str, ...] = (),
        end_col: int | None = None,
    ):
        self.message = message
        self.filename = filename
        self.line = line
        self.col = col
        self.source_line = source_line
        self.notes = list(notes)
        self.end_col = end_col
        super().__init__(self._render())

    def __reduce__(self):
        return type(self), (
            self.message, self.filename, self.line, self.col,
            self.source_line, self.notes, self.end_col,
        )  # fmt: skip

    def add_note_line(self, note: str) -> None:
        """Append a note (e.g. the call site of the function the error is in) and re-render."""
        self.notes.append(note)
        self.args = (self._render(),)

    def _render(self) -> str:
        lines = []
        if self.filename is not None and self.line is not None:
            lines.append(f"{self.filename}:{self.line}:{(self.col or 0) + 1}:")
        if self.source_line is not None and self.col is not None:
            code = self.source_line.rstrip()
            text = code.lstrip()
            shift = len(code) - len(text)
            start = max(self.col - shift, 0)
            end = len(text) if self.end_col is None else max(self.end_col - shift, start + 1)
            end = min(end, max(len(text), start + 1))
            lines.append("    " + text)
            lines.append("    " + " " * start + "^" + "~" * (end - start - 1))
        lines.append(f"{type(self).__name__}: {self.message}")
        lines.extend(f"  note: {note}" for note in self.notes)
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.args[0]

    def _render_traceback_(self) -> list[str]:
        """IPython shows these lines instead of a Python traceback (the cell still fails)."""
        return str(self).splitlines()


class UnsupportedLanguageConstruct(CompilationError):
    """Python syntax that has no meaning in a kernel (`with`, `try`, `lambda`, ...)."""


class CompileTimeAssertionFailure(CompilationError):
    """A `tl.static_assert` (or an `assert` on a compile-time condition) that is false."""
