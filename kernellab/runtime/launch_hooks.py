"""Launch hooks: a function called before every kernel launch, with the launch's metadata.

A hook may return a function of no arguments: it is called right after the launch was issued
(so a profiler can record events on the stream around it, or time an interpreter launch).

Profilers name kernel launches and count their work through this. A kernel describes its own
launches with `@kl.jit(launch_metadata=fn)` as in Triton: `fn(grid, kernel, args)` (the grid,
the CompiledKernel, every parameter's value by name) returns a dict such as
`{"name": "matmul 4096x4096", "flops": 2 * M * N * K, "bytes": ...}`. It runs only while a hook
is installed, so launches pay nothing for it otherwise (the warm launch path checks one list).

    with kl.runtime.launch_hooks.on_launch(lambda launch: print(launch.name, launch.metadata)):
        kernel[grid](...)
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Launch:
    """One launch as a hook sees it: `name` is the metadata's "name" or the kernel's name."""

    name: str
    grid: tuple[int, int, int]
    kernel: object  # the CompiledKernel
    args: dict
    metadata: dict = field(default_factory=dict)
    where: tuple[int, bool] | None = None  # (GPU, on torch's stream?) as the JIT has it; None: CPU


# The installed hooks; the JIT's warm path tests this list's truth on every launch.
ENTER_HOOKS: list[Callable[[Launch], None]] = []


@contextlib.contextmanager
def on_launch(hook: Callable[[Launch], None]) -> Iterator[Callable[[Launch], None]]:
    """Call `hook(Launch)` before every kernel launch inside the `with` block."""
    if not callable(hook):
        raise TypeError(f"on_launch takes a function of one Launch, not {type(hook).__name__}")
    ENTER_HOOKS.append(hook)
    try:
        yield hook
    finally:
        ENTER_HOOKS.remove(hook)


def describe(launch_metadata, grid: tuple, kernel, args: dict, where=None) -> Launch:
    """The Launch the hooks receive; `launch_metadata` is the kernel's `launch_metadata=` (or None)."""
    metadata = {}
    if launch_metadata is not None:
        metadata = launch_metadata(grid, kernel, args)
        if not isinstance(metadata, dict):
            raise TypeError(
                f"launch_metadata of {kernel.name} returned {type(metadata).__name__}; it must return "
                'a dict such as {"name": ..., "flops": ..., "bytes": ...}'
            )
    return Launch(str(metadata.get("name", kernel.name)), grid, kernel, args, metadata, where)


def notify(launch: Launch) -> list[Callable[[], None]]:
    """Call every hook; returns what they asked to have called once the launch is issued."""
    after = []
    for hook in list(ENTER_HOOKS):
        done = hook(launch)
        if done is not None:
            after.append(done)
    return after


__all__ = ["Launch", "ENTER_HOOKS", "on_launch", "describe", "notify"]
