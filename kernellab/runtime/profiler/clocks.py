"""Time marks for the profiler: CUDA events on a stream for GPU work, wall clock for the rest.

Recording never waits for the GPU: an `Interval` holds its two marks (a host timestamp and, on
a GPU, a CUDA event recorded on the stream the work goes to) and is read only when a profile
is read (`Interval.read`), which then synchronizes on the end event once. Kernels the
interpreter runs are timed by the wall clock and labelled as interpreter time.

Events come from a pool per device and go back to it once read, so a long profile creates
only as many events as are pending at once.
"""

from __future__ import annotations

import sys
import time

CUDA = "cuda"
INTERPRETER = "interpreter"

_free_events: dict[int, list] = {}  # device → events read and ready for reuse


def _driver():
    from kernellab.backends.nvidia import driver

    return driver


def scope_stream() -> tuple[int, int] | None:
    """(device, stream) where GPU work issued now goes: torch's current stream when torch has
    initialized CUDA, else the default stream of the current device; None without a GPU."""
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        device = torch.cuda.current_device()
        return device, torch.cuda.current_stream(device).cuda_stream
    driver = _driver()
    if not driver.available():
        return None
    return driver.current_device_index(), 0


def launch_stream(where: tuple[int, bool]) -> tuple[int, int]:
    """(device, stream) of a kernellab GPU launch: the launcher's choice for `where` (torch's
    current stream when torch tensors were passed, else the default stream)."""
    device, on_torch_stream = where
    if on_torch_stream:
        torch = sys.modules["torch"]
        return device, torch.cuda.current_stream(device).cuda_stream
    return device, 0


def _record(device: int, stream: int):
    driver = _driver()
    driver.make_current(device)
    free = _free_events.setdefault(device, [])
    event = free.pop() if free else driver.call("cuEventCreate", 0)
    driver.call("cuEventRecord", event, stream)
    return event


class Interval:
    """One timed piece of work: started now, ended by `end()`, read later by `read()`."""

    __slots__ = ("device", "stream", "wall", "events", "_ns")

    def __init__(self, stream: tuple[int, int] | None):
        self.device, self.stream = stream if stream is not None else (None, None)
        self.events = [_record(self.device, self.stream)] if stream is not None else None
        self.wall = [time.perf_counter_ns()]
        self._ns = None

    @property
    def clock(self) -> str:
        return CUDA if self.events is not None else INTERPRETER

    @property
    def ended(self) -> bool:
        return len(self.wall) == 2

    def end(self) -> None:
        if self.events is not None:
            self.events.append(_record(self.device, self.stream))
        self.wall.append(time.perf_counter_ns())

    def read(self) -> tuple[int, int | None]:
        """(wall-clock ns, GPU ns or None): waits for the end event the first time only."""
        if self._ns is None:
            gpu = None
            if self.events is not None:
                driver = _driver()
                driver.make_current(self.device)
                start, stop = self.events
                driver.call("cuEventSynchronize", stop)
                gpu = round(driver.call("cuEventElapsedTime", start, stop) * 1e6)
                _free_events[self.device] += [start, stop]
                self.events = ()  # read: the clock stays CUDA, the events are reused
            self._ns = (self.wall[1] - self.wall[0], gpu)
        return self._ns


def device_name(device: int) -> str:
    return _driver().device_info(device).name


__all__ = ["CUDA", "INTERPRETER", "Interval", "scope_stream", "launch_stream", "device_name"]
