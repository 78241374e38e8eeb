"""How a kernel argument that holds several values (a tuple, a NamedTuple, a host tensor
descriptor) becomes kernel parameters, and back.

The binder flattens such an argument into one leaf per scalar or array, each specialized like
any argument and named `param.i.j` (its path) in the `Signature` or the constexprs; the
argument's own constexpr entry is its `ArgumentTree`, which tells the frontend how to rebuild
the value from those leaves. So the cache key, the launcher and the metadata see ordinary flat
parameters, and the kernel sees the tuple (or descriptor) it was given.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ArgumentTree:
    """The shape of a structured argument. `kind` is "tuple", "namedtuple" (`names` are its
    fields, `constants` its class name) or "tensor_descriptor" (children: base, shape, strides;
    `constants`: block shape and padding). A child is None for a leaf, else a subtree."""

    kind: str
    children: tuple
    names: tuple = ()
    constants: tuple = ()

    def leaf_paths(self, prefix: str) -> list[str]:
        """The names of this tree's leaves under parameter `prefix`, in order."""
        paths = []
        for i, child in enumerate(self.children):
            path = f"{prefix}.{i}"
            paths.extend([path] if child is None else child.leaf_paths(path))
        return paths


def root_parameter(name: str) -> str:
    """The parameter a (possibly dotted) leaf name belongs to: "t.1.0" → "t"."""
    return name.split(".", 1)[0]
