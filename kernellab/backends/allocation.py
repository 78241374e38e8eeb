"""`kl.set_allocator(fn)`: where a launch gets the global memory a kernel needs at run time, as
Triton's `triton.set_allocator`.

On Hopper a kernel that builds tensor maps (`tl.make_tensor_descriptor` over values it
computes) writes them into global scratch, 128 bytes per map per program: the launcher asks
the allocator set here for `size × programs` bytes (`fn(size, alignment, stream)`, Triton's
call; torch's caching allocator frees stream-ordered, so the buffer may go once the launch is
queued). Without one the launcher uses a buffer of its own (`nvidia/global_scratch.py`), so
programs that set no allocator run too.

The setting is process-wide, not per context or thread: torch runs autograd backward passes on
its own threads, and their launches must see the allocator the forward pass set.
"""

from __future__ import annotations

from typing import Any, Protocol


class Allocator(Protocol):
    """`fn(size, alignment, stream) -> buffer`: `size` bytes aligned to `alignment`, for a
    launch on `stream` (0: the default stream); the buffer has `data_ptr()` (a torch uint8
    or int8 tensor does) and must stay alive until the kernel has run."""

    def __call__(self, size: int, alignment: int, stream: int | None) -> Any: ...


_allocator: Allocator | None = None


def set_allocator(allocator: Allocator | None) -> None:
    """Use `allocator(size, alignment, stream)` for the global memory launches need at run
    time (None: the launcher's own buffers)."""
    global _allocator
    if allocator is not None and not callable(allocator):
        raise TypeError(
            f"set_allocator takes a function (size, alignment, stream) -> buffer, got "
            f"{type(allocator).__name__}"
        )
    _allocator = allocator


def allocator() -> Allocator | None:
    """The allocator set, or None."""
    return _allocator


__all__ = ["Allocator", "allocator", "set_allocator"]
