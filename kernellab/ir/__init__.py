"""IR for kernellab: the `tt` and `ttg` dialects on xDSL, plus parsing and printing helpers.

`context()` knows every dialect a kernellab module may contain, so IR text printed at any stage
parses back (the pipeline can resume from edited IR).

TTGIR prints like Triton's: each distinct blocked / mma / shared encoding and the shared memory
space once at the top as an alias (`#blocked = #ttg.blocked<{...}>`, `#blocked1`, `#mma`,
`#shared`, `#smem`), referenced by name below; slice and dot-operand encodings stay inline
(`#ttg.slice<{dim = 0, parent = #blocked}>`). The parser reads alias definitions natively.
"""

from __future__ import annotations

import io

from xdsl.context import Context
from xdsl.dialects import builtin, scf
from xdsl.dialects.builtin import AnyFloat, ModuleOp, TensorType
from xdsl.ir import Attribute
from xdsl.parser import Parser
from xdsl.printer import Printer

from kernellab.ir import ttg
from kernellab.ir.cpu import CPU
from kernellab.ir.ttng import TTNG
from kernellab.ir.arith import ARITH
from kernellab.ir.math import Math
from kernellab.ir.tt import TT

# encoding class -> alias stem, in the order the alias definitions are printed
_ALIAS_STEMS = {
    ttg.BlockedEncodingAttr: "blocked",
    ttg.NvidiaMmaEncodingAttr: "mma",
    ttg.SwizzledSharedEncodingAttr: "shared",
    ttg.NVMMASharedEncodingAttr: "shared",
    ttg.SharedMemorySpaceAttr: "smem",
}


def context() -> Context:
    """A fresh xDSL context with builtin, arith and math (ours), scf, tt, ttg, ttng and cpu loaded."""
    ctx = Context(allow_unregistered=False)
    for dialect in (builtin.Builtin, ARITH, Math, scf.Scf, TT, ttg.TTG, TTNG, CPU):
        ctx.load_dialect(dialect)
    return ctx


class _HexFloat(Parser._TensorLiteralElement):
    """A `0x7F800000`-style element: the bit pattern of a float (how inf and NaN print)."""

    def to_float(self, parser) -> float:
        raise AssertionError("unreachable: to_type handles floats")

    def to_type(self, parser, type):
        if isinstance(type, AnyFloat):
            raw = int(self.value).to_bytes(type.compile_time_size, "little")
            return type.unpack(raw, 1)[0]
        return super().to_type(parser, type)


class _Parser(Parser):
    """xDSL's parser, reading hex float elements of `dense<...>` as bit patterns, as printed
    (stock xDSL 0.74 reads `dense<0xff800000> : tensor<4xf32>` as the integer 4286578688)."""

    def _parse_tensor_literal_element(self):
        hexadecimal = self._current_token.text[:2] in ("0x", "0X")
        element = super()._parse_tensor_literal_element()
        if hexadecimal:
            return _HexFloat(element.is_negative, element.value, element.span)
        return element


def parse_module(text: str) -> ModuleOp:
    """Parse IR text (as printed by `print_module`, alias definitions included) into a module."""
    return _Parser(context(), text).parse_module()


class _AliasPrinter(Printer):
    """Prints aliased encodings by their alias name."""

    aliases: dict[Attribute, str]

    def print_attribute(self, attribute: Attribute) -> None:
        if type(attribute) in _ALIAS_STEMS and attribute in self.aliases:
            self.print_string(self.aliases[attribute])
            return
        super().print_attribute(attribute)


def _collect(attr: Attribute, seen: dict[Attribute, None]) -> None:
    """Aliasable encodings inside `attr`, parents before the encodings that name them."""
    if isinstance(attr, TensorType):
        _collect(attr.encoding, seen)
    elif isinstance(attr, ttg.MemDescType):
        _collect(attr.encoding, seen)
        _collect(attr.memory_space, seen)
    elif isinstance(attr, (ttg.SliceEncodingAttr, ttg.DotOperandEncodingAttr)):
        _collect(attr.parent, seen)
    elif type(attr) in _ALIAS_STEMS:
        seen.setdefault(attr)


def aliases_of(module: ModuleOp) -> dict[Attribute, str]:
    """Alias name (`#blocked1`) of each aliasable encoding, numbered in order of first use."""
    seen: dict[Attribute, None] = {}
    for op in module.walk():
        for region in op.regions:
            for block in region.blocks:
                for arg in block.args:
                    _collect(arg.type, seen)
        for value in (*op.operands, *op.results):
            _collect(value.type, seen)
    counts: dict[str, int] = {}
    names = {}
    for attr in seen:
        stem = _ALIAS_STEMS[type(attr)]
        n = counts.get(stem, 0)
        counts[stem] = n + 1
        names[attr] = f"#{stem}{n or ''}"
    order = list(_ALIAS_STEMS.values())
    return dict(sorted(names.items(), key=lambda kv: order.index(_ALIAS_STEMS[type(kv[0])])))


def print_module(module: ModuleOp, locations: bool = False) -> str:
    """IR text of `module`; with `locations`, each op carries its `loc(...)`."""
    out = io.StringIO()
    aliases = aliases_of(module)
    printer = _AliasPrinter(stream=out, print_debuginfo=locations)
    printer.aliases = {}
    for attr, name in aliases.items():
        printer.print_string(f"{name} = ")
        printer.print_attribute(attr)
        printer.print_string("\n")
    printer.aliases = aliases
    printer.print_op(module)
    return out.getvalue() + "\n"
