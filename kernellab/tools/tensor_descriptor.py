"""`TensorDescriptor.from_tensor(t, block_shape)`: a tensor and the tile shape a kernel reads
and writes it in, passed to a kernel as one argument (Triton's `triton.tools.tensor_descriptor`).

In the kernel the argument is a tensor descriptor, as if made with `tl.make_tensor_descriptor`:
`desc.load([i, j])` reads a tile (zero outside the tensor), `desc.store([i, j], tile)` writes
one (clipped at the edges). The launch passes its base, shape and strides as ordinary
parameters; the block shape is a compile-time constant.

As in Triton, the fields can be assigned after construction: an autotuned kernel's configs set
the block shape they tile with in a `pre_hook` (`nargs["desc"].block_shape = [BM, BK]`), on a
descriptor made with a placeholder block such as `[1, 1]`. Every assignment is checked.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass
class TensorDescriptor:
    """`base` (a torch tensor or numpy array) viewed as `shape` with `strides` (elements), read
    in tiles of `block_shape`; `padding` ("zero" or "nan") is what reads outside give."""

    base: Any
    shape: tuple
    strides: tuple
    block_shape: tuple
    padding: str = "zero"

    def __setattr__(self, name: str, value: Any) -> None:
        if name in ("shape", "strides", "block_shape"):
            value = tuple(int(v) for v in value)
        if name == "block_shape":
            for size in value:
                if size <= 0 or size & (size - 1):
                    raise ValueError(f"TensorDescriptor: block_shape {value} must be powers of two")
        if name == "padding" and value not in ("zero", "nan"):
            raise ValueError(f'TensorDescriptor: padding is "zero" or "nan", not {value!r}')
        super().__setattr__(name, value)
        if name in ("shape", "strides", "block_shape") and "padding" in self.__dict__:
            self._check_rank()  # a later assignment: the rank must still agree

    def __post_init__(self):
        self._check_rank()

    def _check_rank(self) -> None:
        rank = len(self.shape)
        if len(self.strides) != rank or len(self.block_shape) != rank:
            raise ValueError(
                f"TensorDescriptor: shape {self.shape}, strides {self.strides} and block_shape "
                f"{self.block_shape} must have one entry per dim"
            )

    @staticmethod
    def from_tensor(tensor, block_shape, padding: str = "zero") -> TensorDescriptor:
        """The descriptor of a whole torch tensor or numpy array, with its own shape and
        strides, read in tiles of `block_shape`."""
        shape = tuple(int(s) for s in tensor.shape)
        if hasattr(tensor, "stride") and callable(tensor.stride):  # torch
            strides = tuple(int(s) for s in tensor.stride())
        else:  # numpy: byte strides
            strides = tuple(int(s) // tensor.itemsize for s in tensor.strides)
        return TensorDescriptor(tensor, shape, strides, block_shape, padding)
