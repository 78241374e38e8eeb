"""A kernel's specialization from what the user gives: constexpr values and the `Signature`.

`kl.compile`, the `%%kernel` magic and `CompiledKernel.run` all accept values either one per
parameter or one per runtime (non-constexpr) parameter, as Triton does; `match_parameters` is
that rule, written once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kernellab.language import core as tl
from kernellab.language.argument_tree import ArgumentTree, root_parameter
from kernellab.language.signature import Signature


def runtime_parameters(fn: tl.KernelFunction, constexprs: Mapping) -> list[str]:
    """The parameters that stay kernel arguments: neither tl.constexpr nor given a constant;
    a structured argument (its constexpr is an ArgumentTree) stands for its runtime leaves."""
    names = []
    for name in fn.arg_names:
        tree = constexprs.get(name)
        if isinstance(tree, ArgumentTree):
            names.extend(p for p in tree.leaf_paths(name) if p not in constexprs)
        elif name not in fn.constexpr_names and name not in constexprs:
            names.append(name)
    return names


def _is_parameter(fn: tl.KernelFunction, name: str, constexprs: Mapping) -> bool:
    """`name` is a parameter of `fn`, or a leaf ("t.0") of a structured one."""
    root = root_parameter(name)
    return name in fn.arg_names or (
        root in fn.arg_names and isinstance(constexprs.get(root), ArgumentTree)
    )


def match_parameters(params: Sequence[str], runtime: Sequence[str], values: Sequence) -> dict | None:
    """{parameter: value} for `values` given one per runtime parameter or one per parameter
    (constexprs included); None when their number fits neither."""
    if len(values) == len(runtime):
        return dict(zip(runtime, values))
    if len(values) == len(params):
        return dict(zip(params, values))
    return None


def resolve_constexprs(fn: tl.KernelFunction, constexprs: Mapping | None) -> dict:
    """Every constexpr's value: those given (tl.constexpr unwrapped), the rest from defaults."""
    values = {}
    for name, value in (constexprs or {}).items():
        if not _is_parameter(fn, name, constexprs):
            raise TypeError(
                f"{fn.__name__} has no parameter {name!r} (given in constexprs); "
                f"its parameters are {', '.join(fn.arg_names)}"
            )
        values[name] = value.value if isinstance(value, tl.constexpr) else value
    for name in fn.arg_names:
        if name in fn.constexpr_names and name not in values:
            default = fn.signature.parameters[name].default
            if default is fn.signature.parameters[name].empty:
                raise TypeError(
                    f"{fn.__name__}: {name} is a tl.constexpr parameter without a default; "
                    f"pass constexprs={{{name!r}: ...}}"
                )
            values[name] = default.value if isinstance(default, tl.constexpr) else default
    return values


def resolve_signature(fn: tl.KernelFunction, signature, constexprs: Mapping) -> Signature:
    """The Signature of `fn`'s runtime parameters, in parameter order, from text
    ("*fp32,*fp32,i32", one entry per runtime parameter, or per parameter with "constexpr" for
    the constexprs) or a mapping {param: type or "constexpr"}; every runtime parameter needs a type."""
    runtime = runtime_parameters(fn, constexprs)
    if signature is None:
        signature = {}
    if isinstance(signature, str):
        entries = [e.strip() for e in signature.split(",") if e.strip()]
        by_name = match_parameters(fn.arg_names, runtime, entries)
        if by_name is None:
            raise TypeError(
                f"{fn.__name__}: signature {signature!r} has {len(entries)} entries; give one per "
                f"non-constexpr parameter ({', '.join(runtime) or 'none'})"
            )
        signature = {n: e for n, e in by_name.items() if e != "constexpr" or n not in constexprs}
    elif not isinstance(signature, Mapping):
        raise TypeError('signature must be a string like "*fp32,*fp32,i32" or a dict {param: type}')
    given = {}
    for name, entry in signature.items():
        if not _is_parameter(fn, name, constexprs):
            raise TypeError(f"{fn.__name__} has no parameter {name!r} (given in signature)")
        if isinstance(entry, str) and entry == "constexpr":
            if name not in constexprs:
                raise TypeError(f"{fn.__name__}: {name} is marked constexpr; give its value in constexprs")
            continue
        if name in constexprs:
            raise TypeError(f"{fn.__name__}: {name} is a constexpr; remove it from signature")
        given[name] = entry
    missing = [n for n in runtime if n not in given]
    if missing:
        raise TypeError(
            f"{fn.__name__}: no type for {', '.join(missing)}; pass signature= with a type for "
            'each (e.g. "*fp32" for an array, "i32" for an int)'
        )
    try:
        return Signature((name, given[name]) for name in runtime)  # in parameter (= argument) order
    except ValueError as e:
        raise TypeError(f"{fn.__name__}: {e}") from None


__all__ = ["Signature", "match_parameters", "resolve_constexprs", "resolve_signature", "runtime_parameters"]
