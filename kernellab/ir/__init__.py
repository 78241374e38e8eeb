"""IR for kernellab: the `tt` dialect on xDSL, plus parsing and printing helpers.

`context()` knows every dialect a kernellab module may contain, so IR text printed at any stage
parses back (the pipeline can resume from edited IR).
"""

from __future__ import annotations

import io

from xdsl.context import Context
from xdsl.dialects import builtin, math, scf
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser
from xdsl.printer import Printer

from kernellab.ir.arith import ARITH
from kernellab.ir.tt import TT


def context() -> Context:
    """A fresh xDSL context with builtin, arith (ours), math, scf and tt loaded."""
    ctx = Context(allow_unregistered=False)
    for dialect in (builtin.Builtin, ARITH, math.Math, scf.Scf, TT):
        ctx.load_dialect(dialect)
    return ctx


def parse_module(text: str) -> ModuleOp:
    """Parse IR text (as printed by `print_module`) into a module."""
    return Parser(context(), text).parse_module()


def print_module(module: ModuleOp, locations: bool = False) -> str:
    """IR text of `module`; with `locations`, each op carries its `loc(...)`."""
    out = io.StringIO()
    Printer(stream=out, print_debuginfo=locations).print_op(module)
    return out.getvalue() + "\n"
