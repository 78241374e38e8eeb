"""Pygments lexers for the compiler's stages: our own for TTIR/TTGIR (MLIR syntax) and SASS,
Pygments' own for LLVM IR, PTX, Python and diffs.

`lexer_for(language)` returns a lexer instance for a stage's language name as the bundle spells
it ("python", "mlir", "llvm", "ptx", "sass", "diff", anything else → plain text).
"""

from __future__ import annotations

from pygments.lexer import RegexLexer, bygroups, words
from pygments.token import (
    Comment,
    Keyword,
    Name,
    Number,
    Operator,
    Punctuation,
    String,
    Text,
    Whitespace,
)

_ID = r"[A-Za-z_][\w$.-]*"


class MlirLexer(RegexLexer):
    """TTIR and TTGIR as kernellab (and Triton) print them: MLIR's generic syntax.

    `%ssa` values, `^bb` labels, `@symbols`, `dialect.op` names, `#alias` attributes
    (`#blocked`, `#ttg.blocked<{...}>`, `#loc3`), `!dialect.type`s (`!tt.ptr<f32>`,
    `!ttg.memdesc<...>`), builtin types (`tensor<128x64xf16, #blocked>`, `i32`, `bf16`),
    attribute keys (`sizePerThread = [...]`), `loc(...)` suffixes and `//` comments.
    """

    name = "MLIR (TTIR/TTGIR)"
    aliases = ["ttir", "ttgir", "mlir-kernellab"]
    filenames = ["*.ttir", "*.ttgir"]

    _keywords = (
        "to", "step", "iter_args", "public", "private", "nested", "attributes", "dense",
        "true", "false", "unit", "mutable", "loc", "unknown", "fused", "callsite", "at",
        "array", "strided", "offset", "affine_map", "do", "else", "then",
    )  # fmt: skip
    _types = (
        "tensor", "memref", "vector", "index", "none", "complex", "tuple",
        "bf16", "f16", "f32", "f64", "f80", "f128", "tf32",
        "f8E4M3FN", "f8E5M2", "f8E4M3FNUZ", "f8E5M2FNUZ", "f8E4M3", "f8E4M3B11FNUZ",
    )  # fmt: skip

    tokens = {
        "root": [
            (r"\s+", Whitespace),
            (r"//.*?$", Comment.Single),
            # loc(...) suffixes: nested parentheses one level deep, quoted file names
            (
                r'loc\((?:[^()"]|"(?:[^"\\]|\\.)*"|\((?:[^()"]|"(?:[^"\\]|\\.)*")*\))*\)',
                Comment.Special,
            ),
            (r'"(?:[^"\\]|\\.)*"', String.Double),
            (r"%[\w$.-]+(?:#\d+)?|%\d+:\d+", Name.Variable),
            (r"\^[\w$.-]+", Name.Label),
            (r'@(?:[\w$.-]+|"(?:[^"\\]|\\.)*")', Name.Function),
            (r"#[\w$.-]+", Name.Constant),
            (r"![\w$.-]+", Keyword.Type),
            # shapes: 128x64x in tensor<128x64xf16>, ?x in dynamic shapes
            (r"(?:\d+|\?)x(?=[\d?!A-Za-z])", Number.Integer),
            (r"0x[0-9a-fA-F]+\b", Number.Hex),
            (r"[-+]?\d+\.\d*(?:[eE][-+]?\d+)?", Number.Float),
            (r"[-+]?\d+", Number.Integer),
            (r"[su]?i\d+\b", Keyword.Type),
            (words(_types, suffix=r"\b"), Keyword.Type),
            (r"[a-z_][\w$]*(?:\.[\w$]+)+", Name.Builtin),  # dialect.op: tt.load, arith.addi
            (words(_keywords, suffix=r"\b"), Keyword),
            (_ID + r"(?=\s*=)", Name.Attribute),  # attribute keys
            (_ID, Name),
            (r"->|::|=", Operator),
            (r"[{}()\[\]<>,:*+?|]", Punctuation),
        ]
    }


class SassLexer(RegexLexer):
    """NVIDIA SASS as `nvdisasm`/`cuobjdump -sass` print it.

    `/*0040*/` addresses and `/* 0x... */` encodings, `//## File "...", line N` line info,
    `@P0`/`@!PT` predicates, `LDG.E.128`-style opcodes, `R12`/`UR4`/`P0`/`RZ` registers,
    `c[0x0][0x28]` constant banks, `.L_x_3:` labels and `.section`-style directives.
    """

    name = "NVIDIA SASS"
    aliases = ["nvsass", "sass-nvidia"]
    filenames = ["*.sass"]

    tokens = {
        "root": [
            (r"\s+", Whitespace),
            (r"//.*?$", Comment.Single),
            (r"/\*.*?\*/", Comment.Multiline),
            (r'"(?:[^"\\]|\\.)*"', String.Double),
            (r"@!?U?P(?:T|\d+)\b", Keyword.Pseudo),
            (r"[.$]?L_[\w$]+:?|`\([^)]*\)", Name.Label),
            (
                r"(c)(\[)(0x[0-9a-fA-F]+)(\])",
                bygroups(Name.Constant, Punctuation, Number.Hex, Punctuation),
            ),
            (r"\b(?:U?R\d+|U?RZ|U?P\d+|U?PT|SR_[\w.]+)\b", Name.Variable),
            (r"\b[A-Z][A-Z0-9_]*(?:\.[A-Z0-9_]+)*\b", Name.Builtin),  # opcodes and modifiers
            (r"\.[A-Za-z_][\w]*", Keyword),  # directives
            (r"[-+]?0x[0-9a-fA-F]+\b", Number.Hex),
            (r"[-+]?\d+\.\d*(?:[eE][-+]?\d+)?", Number.Float),
            (r"[-+]?\d+", Number.Integer),
            (r"[A-Za-z_][\w$]*", Text),
            (r"[;,\[\]{}()|~!+\-*:@=<>&^.`]", Punctuation),
        ]
    }


_LANGUAGE_ALIASES = {"python": "python", "llvm": "llvm", "ptx": "ptx", "diff": "diff"}


def lexer_for(language: str):
    """A lexer instance for a stage language ("mlir", "sass", "llvm", "ptx", "python", "diff")."""
    if language == "mlir":
        return MlirLexer()
    if language == "sass":
        return SassLexer()
    from pygments.lexers import get_lexer_by_name
    from pygments.util import ClassNotFound

    try:
        return get_lexer_by_name(_LANGUAGE_ALIASES.get(language, "text"))
    except ClassNotFound:  # an old Pygments without a PTX lexer: plain text
        return get_lexer_by_name("text")


__all__ = ["MlirLexer", "SassLexer", "lexer_for"]
