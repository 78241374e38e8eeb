"""What a name in a kernel holds, as the frontend sees it, and how error messages show it.

A value is either known only when the kernel runs (a `tl.tensor` wrapping an SSA value) or at
compile time: a `tl.constexpr`, a Python or numpy number, a string, None, a dtype, a tuple of
values, a module or a function. Compile-time numbers and strings travel boxed in `tl.constexpr`
so that operators on them fold in Python; `unwrap` takes the box off.
"""

from __future__ import annotations

import abc
import functools
import inspect
import numbers
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from kernellab.language import core as tl


def const(value: Any) -> Any:
    """Python (and numpy) scalars and strings as `constexpr`; everything else unchanged."""
    if isinstance(value, (numbers.Real, str, type(None))):
        return tl.constexpr(value)
    return value


def unwrap(value: Any) -> Any:
    """The value inside a `constexpr` (anything else is returned as it is)."""
    return value.value if isinstance(value, tl.constexpr) else value


def unwrap_deep(value: Any) -> Any:
    """`unwrap`, also inside tuples and lists."""
    value = unwrap(value)
    if isinstance(value, (tuple, list)):
        return type(value)(unwrap_deep(v) for v in value)
    return value


def python_value(value: Any) -> Any:
    """A plain Python int/float/bool from a constexpr, numpy scalar or Python number."""
    value = unwrap(value)
    np = sys.modules.get("numpy")  # a numpy scalar exists only once numpy is loaded
    return value.item() if np is not None and isinstance(value, np.generic) else value


def is_number(value: Any) -> bool:
    """Whether `value` is a compile-time number (bools included), boxed or not."""
    return isinstance(unwrap(value), numbers.Real)


def is_runtime(value: Any) -> bool:
    """Whether `value` (or an element of it) is only known when the kernel runs."""
    value = unwrap(value)
    if isinstance(value, (tuple, list)):
        return any(is_runtime(v) for v in value)
    return isinstance(value, (tl.tensor, Aggregate))


class Aggregate(abc.ABC):
    """A compile-time record whose fields may be tensors (a block pointer, a tensor
    descriptor). Control flow, calls and returns carry its tensors one by one and rebuild the
    record around them, as they do for tuples."""

    @abc.abstractmethod
    def fields(self) -> tuple:
        """The record's values, tensors and constants, in a fixed order."""

    @abc.abstractmethod
    def with_fields(self, fields: tuple) -> Aggregate:
        """The same kind of record over `fields` (as `fields()` orders them)."""


def _is_tensor(value: Any) -> bool:
    return isinstance(value, tl.tensor)


def map_leaves(value: Any, fn, is_leaf=_is_tensor) -> Any:
    """`value` with every leaf (a tensor, unless `is_leaf` says otherwise) inside tuples,
    lists, NamedTuples and aggregates replaced by `fn(leaf)`, left to right."""
    if is_leaf(value):
        return fn(value)
    if isinstance(value, Aggregate):
        return value.with_fields(tuple(map_leaves(f, fn, is_leaf) for f in value.fields()))
    inner = unwrap(value)
    if isinstance(inner, (tuple, list)):
        items = [map_leaves(v, fn, is_leaf) for v in inner]
        if hasattr(type(inner), "_fields"):  # a NamedTuple
            return type(inner)(*items)
        return type(inner)(items) if isinstance(inner, (tl.Shape, list)) else tuple(items)
    return value


def leaves(value: Any, is_leaf=_is_tensor) -> list:
    """The leaves of `value` in the order `map_leaves` visits them."""
    found: list = []
    map_leaves(value, found.append, is_leaf)
    return found


def structure(value: Any) -> Any:
    """What must match for two values to share IR slots: the kind of every container and
    aggregate, the type of every tensor, and every constant."""
    if isinstance(value, tl.tensor):
        return ("tensor", value.type)
    if isinstance(value, Aggregate):
        return (type(value), tuple(structure(f) for f in value.fields()))
    inner = unwrap(value)
    if isinstance(inner, (tuple, list)):
        return (type(inner), tuple(structure(v) for v in inner))
    try:
        hash(inner)
    except TypeError:
        return ("object", id(inner))
    return ("const", type(inner), inner)


def for_semantic(value: Any) -> Any:
    """An argument as `Semantic` takes it: numbers stay constexpr, other constants are plain."""
    if isinstance(value, tl.constexpr) and not is_number(value):
        return unwrap_deep(value)
    return value


@functools.cache
def _signature(builtin) -> inspect.Signature:
    return inspect.signature(builtin)


def bind_to_builtin(builtin, args: Sequence, kwargs: Mapping) -> inspect.BoundArguments:
    """A call's arguments, as `Semantic` takes them, bound to the `tl` builtin's parameters with
    its defaults filled in: the language declares each builtin's parameters once, and the
    `Semantic` method implementing it receives every argument."""
    try:
        bound = _signature(builtin).bind(
            *map(for_semantic, args), **{k: for_semantic(v) for k, v in kwargs.items()}
        )
    except TypeError as e:
        raise TypeError(f"tl.{builtin.__kernellab_builtin__}(): {e}") from None
    bound.apply_defaults()
    return bound


def show(x: Any) -> str:
    """How messages name a value or type: `fp32[128, 64]` (a block), `int32`, `*fp16`, `3.0`."""
    if isinstance(x, tl.tensor):
        x = x.type
    if isinstance(x, tl.block_type):
        return f"{x.element_ty}[{', '.join(str(s) for s in x.shape)}]"
    if isinstance(x, tl.dtype):
        return str(x)
    return repr(unwrap(x))


def describe(value: Any) -> str:
    """`fp32[128]` for a tensor, `(fp32[128], 2)` for a tuple holding tensors, a block
    pointer's repr, `the compile-time value 3` for anything else."""
    if isinstance(value, tl.tensor):
        return show(value)
    if isinstance(value, Aggregate):
        return repr(value)
    if is_runtime(value):
        return "(" + ", ".join(describe(v) if is_runtime(v) else repr(unwrap_deep(v)) for v in unwrap(value)) + ")"
    return f"the compile-time value {unwrap(value)!r}"
