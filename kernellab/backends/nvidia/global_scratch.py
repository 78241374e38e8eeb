"""The global scratch of one launch: `per_program` bytes for each program of the grid (the
tensor maps a kernel builds; `KernelMetadata.global_scratch_size`), passed as the kernel's
hidden last parameter.

From the allocator `kl.set_allocator` set (Triton's call: `fn(size, alignment, stream)`), the
buffer held until the next launch on that stream replaces it; without one, a buffer of the
launcher's own per (device, stream), grown when a larger grid needs more (the old one freed
after the stream has finished with it) and freed with the launcher. Launches on one stream
run in order, so they may share it; launches on two streams never do.
"""

from __future__ import annotations

import contextlib
import weakref

from kernellab.backends import allocation
from kernellab.backends.nvidia import driver


class GlobalScratch:
    """One kernel's scratch: `pointer(grid, stream, device)` per launch."""

    def __init__(self, kernel: str, per_program: int, alignment: int):
        self.kernel, self.per_program, self.alignment = kernel, per_program, alignment
        self._held: dict[tuple[int, int], object] = {}  # (device, stream) -> allocator's buffer
        self._owned: dict[tuple[int, int], tuple[int, int]] = {}  # (device, stream) -> (pointer, size)
        self._finalizer = weakref.finalize(self, _free_all, self._owned)

    def pointer(self, grid, stream: int, device: int) -> int:
        """The device address of this launch's scratch (`grid`'s programs × per_program)."""
        size = self.per_program * grid[0] * grid[1] * grid[2]
        fn = allocation.allocator()
        if fn is None:
            return self._own(size, stream, device)
        buffer = fn(size, self.alignment, stream)
        pointer = buffer.data_ptr()
        if pointer % self.alignment:
            raise ValueError(
                f"{self.kernel}: the allocator set with kl.set_allocator returned {pointer:#x} for "
                f"{size} bytes, not {self.alignment}-byte aligned; return a buffer aligned to "
                "`alignment` (torch.empty(size, dtype=torch.int8, device='cuda') is)"
            )
        self._held[(device, stream)] = buffer
        return pointer

    def _own(self, size: int, stream: int, device: int) -> int:
        key = (device, stream)
        found = self._owned.get(key)
        if found is not None and found[1] >= size:
            return found[0]
        if found is not None:  # an earlier launch on this stream may still use it
            driver.call("cuStreamSynchronize", stream)
            driver.call("cuMemFree", found[0])
        pointer = int(driver.call("cuMemAlloc", size))  # 256-byte aligned
        self._owned[key] = (pointer, size)
        return pointer


def _free_all(owned: dict) -> None:
    for pointer, _ in owned.values():
        with contextlib.suppress(driver.CudaError):  # the context is gone (exit): so is the memory
            driver.call("cuMemFree", pointer)
    owned.clear()
