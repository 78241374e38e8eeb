"""Errors from launching a kernel in a notebook, shown like compile errors.

An out-of-bounds access, a failed `tl.device_assert`, a bad argument or a GPU fault (a
`CudaError` such as CUDA_ERROR_ILLEGAL_ADDRESS or CUDA_ERROR_ASSERT, `OutOfResources`) raised
while a launch runs comes up through a dozen frames of kernellab's runtime, interpreter and
driver, which say nothing to the person at the notebook. `%load_ext kernellab` registers
`show_launch_error` with IPython for these errors: it shows the cell and line of the launch
with a caret under the call, the kernel's source line the error points at, the message, and
(for out-of-bounds accesses and failed asserts, on the interpreter or the GPU) the
`kl.lab.access_view(...)` call that draws every access of that launch on the interpreter.
`%xmode Verbose` brings the full traceback back.
"""

from __future__ import annotations

import ast
import linecache
import os
import re
import traceback

import kernellab

_PACKAGE = os.path.dirname(os.path.abspath(kernellab.__file__)) + os.sep
# where a plain TypeError / ValueError is the user's launch going wrong (arguments, options)
_LAUNCH_MODULES = ("runtime" + os.sep, "backends" + os.sep + "arguments.py",
                   "compiler" + os.sep + "specialization.py")  # fmt: skip
_LOCATION = re.compile(r"^(?P<file>.+?):(?P<line>\d+): (?P<rest>.*)$", re.S)


# GPU faults that an access on the interpreter reproduces (the access view finds the lane)
_ACCESS_FAULTS = {"CUDA_ERROR_ILLEGAL_ADDRESS", "CUDA_ERROR_MISALIGNED_ADDRESS", "CUDA_ERROR_ASSERT"}


def _error_classes() -> tuple[type, ...]:
    from kernellab.backends.arguments import ArgumentError
    from kernellab.backends.interpreter.errors import InterpreterError
    from kernellab.backends.nvidia.driver import CudaError
    from kernellab.backends.nvidia.launcher import OutOfResources
    from kernellab.frontend.errors import CompilationError

    return (InterpreterError, ArgumentError, CompilationError, CudaError, OutOfResources)


def _access_view_note(value: BaseException, call: str) -> str | None:
    """The line offering the access view, for the interpreter's errors and GPU memory faults."""
    from kernellab.backends.interpreter.errors import InterpreterError

    if isinstance(value, InterpreterError):
        return f"every access of this launch, drawn: {call}"
    if getattr(value, "name", None) in _ACCESS_FAULTS:
        return f"every access of this launch, drawn by the interpreter: {call}"
    return None


def exceptions() -> tuple[type, ...]:
    """The exception types `show_launch_error` is registered for."""
    return (*_error_classes(), TypeError, ValueError)


def _internal(filename: str) -> bool:
    from kernellab.runtime.jit import GENERATED_CODE

    return filename.startswith(GENERATED_CODE) or os.path.abspath(filename).startswith(_PACKAGE)


def is_launch_error(value: BaseException, frames: list[traceback.FrameSummary]) -> bool:
    """Whether `value` is a user's kernel launch going wrong inside kernellab (not a bug in
    kernellab, and not an error of the user's own Python code)."""
    if not frames or not _internal(frames[-1].filename) or _internal(frames[0].filename):
        return False
    if isinstance(value, _error_classes()):
        return True
    where = os.path.abspath(frames[-1].filename)[len(_PACKAGE):]
    return where.startswith(_LAUNCH_MODULES)


def _cell_name(shell, filename: str) -> str:
    named = shell.compile.format_code_name(filename) if hasattr(shell, "compile") else None
    return f"{named[0]} {named[1]}" if named else filename


def _caret(text: str, start: int | None, end: int | None) -> list[str]:
    code = text.rstrip()
    stripped = code.lstrip()
    shift = len(code) - len(stripped)
    if start is None or end is None or end <= start:
        start, end = shift, len(code)
    carets = "^" * max(min(end, len(code)) - start, 1)
    return ["    " + stripped, "    " + " " * max(start - shift, 0) + carets]


def access_view_call(line: str, start: int | None, end: int | None) -> str | None:
    """`kl.lab.access_view(kernel, grid, *args)` for the launch `kernel[grid](*args)` on `line`."""
    try:
        tree = ast.parse(line.strip())
    except SyntaxError:
        return None
    text = line.strip()

    def segment(part) -> str | None:
        return ast.get_source_segment(text, part)

    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Subscript):
            parts = [segment(node.func.value), segment(node.func.slice)]
            parts += [segment(a) for a in node.args]
            parts += [f"{k.arg}={segment(k.value)}" if k.arg else f"**{segment(k.value)}"
                      for k in node.keywords]
            if all(parts):
                return f"kl.lab.access_view({', '.join(parts)})"
    return None


def render(shell, value: BaseException, frames: list[traceback.FrameSummary]) -> list[str]:
    """The lines shown for a launch error: where in the cell, where in the kernel, the message."""
    from kernellab.frontend.errors import CompilationError

    user = [f for f in frames if not _internal(f.filename)]
    launch = user[-1]
    line = launch.line or linecache.getline(launch.filename, launch.lineno)
    start = getattr(launch, "colno", None)
    end = getattr(launch, "end_colno", None) if getattr(launch, "end_lineno", None) == launch.lineno else None
    name = type(value).__name__
    out = [f"{name} while launching a kernel ({_cell_name(shell, launch.filename)}, line {launch.lineno}):"]
    out += _caret(line, start, end)
    message = str(value)
    if isinstance(value, CompilationError):  # it renders its own file, line and caret
        if value.filename:
            message = message.replace(value.filename, _cell_name(shell, value.filename), 1)
        out.append(message)
    else:
        found = _LOCATION.match(message)
        if found and found["file"] != "<unknown location>":
            number = int(found["line"])
            source = linecache.getline(found["file"], number)
            out.append(f"in the kernel ({_cell_name(shell, found['file'])}, line {number}):")
            if source.strip():
                out += _caret(source, None, None)
            message = found["rest"]
        out.append(f"{name}: {message}")
    call = access_view_call(line, start, end)
    note = _access_view_note(value, call) if call else None
    if note:
        out.append(note)
    out.append("(kernellab's internal frames are hidden: %xmode Verbose shows them)")
    return out


def show_launch_error(shell, etype, value, tb, tb_offset=None):
    """IPython custom exception handler (see `register`)."""
    frames = traceback.extract_tb(tb)
    verbose = getattr(shell.InteractiveTB, "mode", "") == "Verbose"
    if verbose or not is_launch_error(value, frames):
        stb = shell.InteractiveTB.structured_traceback(etype, value, tb, tb_offset=tb_offset)
    else:
        stb = render(shell, value, frames)
    shell._showtraceback(etype, value, stb)


def register(shell) -> None:
    """Show launch errors in `shell` as `show_launch_error` does."""
    shell.set_custom_exc(exceptions(), show_launch_error)


__all__ = ["access_view_call", "is_launch_error", "register", "render", "show_launch_error"]
