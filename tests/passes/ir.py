"""Helpers for pass tests: wrap a function body in a module, run a pass, print the result."""

from __future__ import annotations

from kernellab.ir import parse_module, print_module


def module_text(body: str, args: str = "", results: str = "") -> str:
    """A module with one public `@k(args) -> results` around `body` (which ends in tt.return)."""
    arrow = f" -> {results}" if results else ""
    return f"builtin.module {{\n  tt.func public @k({args}){arrow} {{\n{body}\n  }}\n}}\n"


def apply(pass_module, text: str, expect_changed: bool | None = True) -> str:
    """Run `pass_module` on the parsed `text`; check its changed flag; return the printed IR."""
    module = parse_module(text)
    changed = pass_module.run(module).changed
    module.verify()
    if expect_changed is not None:
        assert changed is expect_changed, f"changed={changed}, expected {expect_changed}"
    return print_module(module)


def run_on_body(
    pass_module, body: str, args: str = "", results: str = "", changed: bool | None = True
) -> str:
    """`apply` to the one-function module around `body` (see `module_text`)."""
    return apply(pass_module, module_text(body, args, results), expect_changed=changed)
