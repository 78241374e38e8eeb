"""`TensorDescriptor.from_tensor(t, block_shape)`: a tensor and the tile shape a kernel reads
and writes it in, passed to a kernel as one argument (Triton's `triton.tools.tensor_descriptor`).

In the kernel the argument is a tensor descriptor, as if made with `tl.make_tensor_descriptor`:
`desc.load([i, j])` reads a tile (zero outside the tensor), `desc.store([i, j], tile)` writes
one (clipped at the edges). The launch passes its base, shape and strides as ordinary
parameters; the block shape is a compile-time constant.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class TensorDescriptor:
    """`base` (a torch tensor or numpy array) viewed as `shape` with `strides` (elements), read
    in tiles of `block_shape`; `padding` ("zero" or "nan") is what reads outside give."""

    base: Any
    shape: tuple
    strides: tuple
    block_shape: tuple
    padding: str = "zero"

    def __post_init__(self):
        rank = len(self.shape)
        if len(self.strides) != rank or len(self.block_shape) != rank:
            raise ValueError(
                f"TensorDescriptor: shape {tuple(self.shape)}, strides {tuple(self.strides)} and "
                f"block_shape {tuple(self.block_shape)} must have one entry per dim"
            )
        for size in self.block_shape:
            if size <= 0 or size & (size - 1):
                raise ValueError(
                    f"TensorDescriptor: block_shape {tuple(self.block_shape)} must be powers of two"
                )
        if self.padding not in ("zero", "nan"):
            raise ValueError(f'TensorDescriptor: padding is "zero" or "nan", not {self.padding!r}')

    @staticmethod
    def from_tensor(tensor, block_shape, padding: str = "zero") -> TensorDescriptor:
        """The descriptor of a whole torch tensor or numpy array, with its own shape and
        strides, read in tiles of `block_shape`."""
        shape = tuple(int(s) for s in tensor.shape)
        if hasattr(tensor, "stride") and callable(tensor.stride):  # torch
            strides = tuple(int(s) for s in tensor.stride())
        else:  # numpy: byte strides
            strides = tuple(int(s) // tensor.itemsize for s in tensor.strides)
        return TensorDescriptor(tensor, shape, strides, tuple(int(b) for b in block_shape), padding)
