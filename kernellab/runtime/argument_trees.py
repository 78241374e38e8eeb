"""Flattening structured kernel arguments (tuples, NamedTuples, host tensor descriptors) into
leaves the binder specializes one by one; `language.argument_tree` says how they are named and
rebuilt."""

from __future__ import annotations

from typing import Any

from kernellab.language.argument_tree import ArgumentTree
from kernellab.tools.tensor_descriptor import TensorDescriptor


def is_structured(value: Any) -> bool:
    return isinstance(value, (tuple, TensorDescriptor))


def argument_leaves(value: Any) -> list:
    """The leaves of an argument: a tuple's or descriptor's in order, else the value itself."""
    return flatten_argument(value)[1] if is_structured(value) else [value]


def flatten_argument(value: Any) -> tuple[ArgumentTree, list]:
    """(tree, leaves in order) of a tuple, NamedTuple or TensorDescriptor argument."""
    if isinstance(value, TensorDescriptor):
        shape_tree, shape = flatten_argument(tuple(value.shape))
        strides_tree, strides = flatten_argument(tuple(value.strides))
        tree = ArgumentTree(
            "tensor_descriptor", (None, shape_tree, strides_tree),
            constants=(tuple(value.block_shape), value.padding),
        )  # fmt: skip
        return tree, [value.base, *shape, *strides]
    children, leaves = [], []
    for item in value:
        if is_structured(item):
            subtree, subleaves = flatten_argument(item)
            children.append(subtree)
            leaves.extend(subleaves)
        else:
            children.append(None)
            leaves.append(item)
    if hasattr(type(value), "_fields"):  # a NamedTuple
        return ArgumentTree(
            "namedtuple", tuple(children), tuple(value._fields), (type(value).__name__,)
        ), leaves
    return ArgumentTree("tuple", tuple(children)), leaves
