"""`kl.set_allocator(fn)`: where a launch gets global memory it needs at run time, as Triton's
`triton.set_allocator`.

Triton asks the allocator for scratch that a kernel needs in global memory, such as the
tensor-map descriptors that `tl.make_tensor_descriptor` writes on Hopper and newer GPUs, and
fails the launch without one. kernellab lowers device-side descriptors to ordinary masked loads
and stores, which need no global scratch, so its launches never call the allocator: programs
that set one (Triton's tutorials 06 and 09 do) run unchanged, and programs that don't run too.
A lowering that does need global scratch asks through `allocate`.

The setting is process-wide, not per context or thread: torch runs autograd backward passes on
its own threads, and their launches must see the allocator the forward pass set.
"""

from __future__ import annotations

from typing import Any, Protocol


class Allocator(Protocol):
    """`fn(size, alignment, stream) -> buffer`: `size` bytes aligned to `alignment`, for a
    launch on `stream` (None: the default stream); the buffer has `data_ptr()` (a torch uint8
    or int8 tensor does) and must stay alive until the kernel has run."""

    def __call__(self, size: int, alignment: int, stream: int | None) -> Any: ...


def _no_allocator(size: int, alignment: int, stream: int | None) -> Any:
    raise RuntimeError(
        f"this kernel needs {size} bytes of global memory at run time, but no allocator is set; "
        "call kl.set_allocator(lambda size, alignment, stream: torch.empty(size, "
        'dtype=torch.int8, device="cuda")) before launching it'
    )


_allocator: Allocator = _no_allocator


def set_allocator(allocator: Allocator) -> None:
    """Use `allocator(size, alignment, stream)` for the global memory launches need at run time
    (kernellab's current lowerings need none; see the module docstring)."""
    global _allocator
    if not callable(allocator):
        raise TypeError(
            f"set_allocator takes a function (size, alignment, stream) -> buffer, got "
            f"{type(allocator).__name__}"
        )
    _allocator = allocator


def allocate(size: int, alignment: int, stream: int | None = None) -> Any:
    """`size` bytes of global memory from the allocator set (an error naming `set_allocator`
    when none is): what a lowering that needs global scratch calls at launch time."""
    return _allocator(size, alignment, stream)


__all__ = ["Allocator", "allocate", "set_allocator"]
