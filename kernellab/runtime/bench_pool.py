"""Timing autotuning configs on several devices at once: one worker process per GPU.

Once the configs compile in parallel (parallel_compile.py), a tuning sweep is dominated by
timing them, one after another on one GPU. A host with N GPUs can time N configs at once, one
per GPU, without the timings disturbing each other. `DevicePool` is a
`concurrent.futures.Executor` with one worker process per GPU (each sees only its own GPU through
`CUDA_VISIBLE_DEVICES`), or per host "device" (`host_workers=`: the interpreter or the CPU
backend, which is how the multi-process path is tested without a GPU).

What a worker runs is `bench_job(BenchJob) -> BenchReport`, and everything it needs travels in
the job: the config's compiled code as a `KernelBinary` (from the compile pool: no Python
source, so kernels defined in a notebook work), the launch's arguments as host copies (sent
once per worker: a worker that lacks them answers `needs_inputs` and gets them with the next
job; their bytes wait in shared memory for workers on this host, and travel inline to others),
the grid, and the timing settings. So any Executor whose workers each own one device and
run one task at a time serves as well (dask.distributed with a GPU resource per worker, Ray
actors made an executor): the autotuner submits the same jobs to it.
"""

from __future__ import annotations

import multiprocessing
import os
import socket
import sys
import threading
import uuid
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable
from concurrent.futures import Executor, Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field, replace
from multiprocessing import shared_memory

import numpy as np

from kernellab.backends.arguments import snapshot
from kernellab.compiler.binary import KernelBinary, load_binary

# -- where a worker runs -----------------------------------------------------------------------


@dataclass(frozen=True)
class DeviceIdentity:
    """The device a worker owns: `label` names it in the tuning table, `model` groups devices
    whose timings compare (the best config is chosen per model), `arch` is the target its code
    is compiled for ("sm_90a", or None for a host worker, which runs what the tuning process
    runs)."""

    label: str
    model: str
    arch: str | None
    index: int | None = None  # the GPU's index on its host
    host: str = field(default_factory=socket.gethostname)

    @property
    def is_gpu(self) -> bool:
        return self.arch is not None

    @classmethod
    def gpu(cls, index: int) -> DeviceIdentity:
        from kernellab.backends.nvidia.driver import device_info

        info = device_info(index)
        return cls(f"GPU {index}", info.name, info.arch, index)

    @classmethod
    def host_worker(cls, number: int) -> DeviceIdentity:
        return cls(f"host worker {number}", "host", None, number)


_IDENTITY: DeviceIdentity | None = None  # this worker's device, set when the worker starts


def own_device(identity: DeviceIdentity) -> None:
    """Worker initializer: make `identity`'s GPU the only one this process sees. It runs before
    anything in the worker touches CUDA, so the GPU is cuda:0 there."""
    global _IDENTITY
    if identity.is_gpu:
        os.environ["CUDA_VISIBLE_DEVICES"] = str(identity.index)
    _IDENTITY = identity


def worker_ready() -> DeviceIdentity:
    """A new worker's first task: everything its first timing would otherwise pay for (torch,
    the CUDA context, the timing code), done while the configs compile."""
    identity = worker_identity()
    from kernellab.testing import do_bench  # noqa: F401 - imported now, used by every job

    if identity.is_gpu:
        import torch

        torch.empty(1, device="cuda")
    return identity


def worker_identity() -> DeviceIdentity:
    """This process's device: the one its pool gave it, else (a worker of another executor,
    which owns a GPU by its own CUDA_VISIBLE_DEVICES) the first visible GPU, else the host."""
    global _IDENTITY
    if _IDENTITY is None:
        from kernellab.backends.nvidia import driver

        if driver.available():
            info = driver.device_info(0)
            visible = os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",")[0]
            index = int(visible) if visible.isdigit() else 0
            _IDENTITY = DeviceIdentity(f"GPU {index}", info.name, info.arch, index)
        else:
            _IDENTITY = DeviceIdentity(f"host worker {os.getpid()}", "host", None)
    return _IDENTITY


# -- the launch's arguments, as they travel ------------------------------------------------------


@dataclass(frozen=True)
class SharedSpan:
    """Where an array's bytes lie in a shared-memory block of the tuning process's host."""

    block: str  # the block's name
    offset: int
    nbytes: int
    host: str


class SharedInputsUnavailable(RuntimeError):
    """This worker can't map the tuning process's shared memory (another host, or no shared
    /dev/shm): it asks for the bytes themselves."""


@dataclass(frozen=True, eq=False)
class HostArray:
    """An array argument's memory as bytes plus its layout. A kernel indexes from the base
    pointer with the strides it is given, so the copy keeps the layout: the bytes from the first
    element to the last (the view's footprint), re-viewed with the same shape and strides. The
    bytes travel inline (`data`) or stay in a shared-memory block that workers on the same host
    map (`shared`): a matmul's arguments are hundreds of MB, slow to pickle through a pipe."""

    kind: str  # "numpy" or "torch"
    dtype: str  # numpy's or torch's dtype name
    shape: tuple
    strides: tuple  # in elements
    data: np.ndarray | None = None  # uint8, the footprint
    shared: SharedSpan | None = None

    def materialize(self, on_gpu: bool):
        """The array in this worker: a torch tensor on its GPU, else the kind it was sent as."""
        data = self.data if self.shared is None else _read_shared(self.shared)
        if self.kind == "numpy" and not on_gpu:
            typed = data.view(np.dtype(self.dtype))
            itemsize = typed.itemsize
            return np.lib.stride_tricks.as_strided(typed, self.shape, tuple(s * itemsize for s in self.strides))
        import torch

        raw = torch.from_numpy(data).to("cuda" if on_gpu else "cpu")
        typed = raw.view(getattr(torch, self.dtype) if self.kind == "torch" else _torch_dtype(self.dtype))
        return typed.as_strided(self.shape, self.strides)


def _array_layout(value) -> tuple[str, str, tuple, tuple, object] | None:
    """(kind, dtype, shape, strides, the footprint as a flat 1-D view) of an array argument."""
    if isinstance(value, np.ndarray):
        if any(s < 0 for s in value.strides):
            raise ValueError("a bench worker gets copies of the arrays: pass arrays with "
                             "non-negative strides (np.ascontiguousarray)")  # fmt: skip
        strides = tuple(s // value.itemsize for s in value.strides)
        span = _footprint(value.shape, strides)
        flat = np.lib.stride_tricks.as_strided(value, (span,), (value.itemsize,))
        return "numpy", value.dtype.str, value.shape, strides, flat.view(np.uint8)
    if type(value).__module__ == "torch" and type(value).__name__ in ("Tensor", "Parameter"):
        import torch

        span = _footprint(tuple(value.shape), tuple(value.stride()))
        flat = value.detach().as_strided((span,), (1,)).view(torch.uint8)
        return "torch", str(value.dtype).removeprefix("torch."), tuple(value.shape), tuple(value.stride()), flat
    return None


def _footprint(shape: tuple, strides: tuple) -> int:
    """Elements from a view's first element to its last, inclusive (0 for an empty view)."""
    if any(n == 0 for n in shape):
        return 0
    return 1 + sum((n - 1) * s for n, s in zip(shape, strides))


def _torch_dtype(numpy_dtype: str):
    import torch

    return torch.from_numpy(np.zeros(1, dtype=np.dtype(numpy_dtype))).dtype


def _copy_into(destination: np.ndarray, flat) -> None:
    """Copy an array's footprint (numpy, or a torch tensor on any device) into host bytes."""
    if isinstance(flat, np.ndarray):
        destination[...] = flat
    else:
        import torch

        torch.from_numpy(destination).copy_(flat)


def _read_shared(span: SharedSpan) -> np.ndarray:
    """A private copy of the bytes of `span` (the block is the tuning process's to remove)."""
    if span.host != socket.gethostname():
        raise SharedInputsUnavailable(span.host)
    # the block is the tuning process's to remove: a worker must not track it (before Python
    # 3.13 it can't say so, but a pool's workers share their parent's resource tracker)
    untracked = {"track": False} if sys.version_info >= (3, 13) else {}
    try:
        block = shared_memory.SharedMemory(name=span.block, **untracked)
    except OSError as error:
        raise SharedInputsUnavailable(str(error)) from None
    try:
        return np.frombuffer(block.buf, np.uint8, span.nbytes, span.offset).copy()
    finally:
        block.close()


@dataclass(frozen=True)
class _Slot:
    """Where an array goes in the arguments while their block is being filled."""

    index: int


class LaunchInputs:
    """One tuning run's arguments for the bench workers, by parameter name: arrays as
    HostArrays whose bytes sit in one shared-memory block (`shared()`: what workers on this
    host map) or inline (`inline()`: for workers elsewhere, made when one asks); everything
    else as it is (it has to pickle). `close()` removes the block."""

    def __init__(self, named: dict):
        layouts = []

        def plan(value):
            if isinstance(value, (tuple, list)):
                return type(value)(plan(v) for v in value)
            layout = _array_layout(value)
            if layout is None:
                return value
            layouts.append(layout)
            return _Slot(len(layouts) - 1)

        planned = {name: plan(value) for name, value in named.items()}
        total = sum(layout[4].nbytes for layout in layouts)
        # a block larger than /dev/shm's free space would fail at the first write (SIGBUS): then
        # the bytes stay in this process and travel inline
        self._block = shared_memory.SharedMemory(create=True, size=max(total, 1)) if _shm_fits(total) else None
        self._buffer = self._block.buf if self._block is not None else np.empty(total, np.uint8)
        host, offset, arrays = socket.gethostname(), 0, []
        name = self._block.name if self._block is not None else ""
        for kind, dtype, shape, strides, flat in layouts:
            nbytes = flat.nbytes
            _copy_into(np.frombuffer(self._buffer, np.uint8, nbytes, offset), flat)
            span = SharedSpan(name, offset, nbytes, host)
            arrays.append(HostArray(kind, dtype, shape, strides, shared=span))
            offset += nbytes

        def place(value):
            if isinstance(value, _Slot):
                return arrays[value.index]
            if isinstance(value, (tuple, list)):
                return type(value)(place(v) for v in value)
            return value

        self._shared = {name: place(value) for name, value in planned.items()}
        self._inline: dict | None = None

    def shared(self) -> dict:
        return self._shared if self._block is not None else self.inline()

    def inline(self) -> dict:
        if self._inline is None:

            def copy(value):
                if isinstance(value, HostArray):
                    span = value.shared
                    data = np.frombuffer(self._buffer, np.uint8, span.nbytes, span.offset).copy()
                    return replace(value, data=data, shared=None)
                if isinstance(value, (tuple, list)):
                    return type(value)(copy(v) for v in value)
                return value

            self._inline = {name: copy(value) for name, value in self._shared.items()}
        return self._inline

    def close(self) -> None:
        if self._block is not None:
            self._buffer = None  # the block's memory view must go before the block closes
            self._block.close()
            self._block.unlink()


def _shm_fits(nbytes: int) -> bool:
    """Whether the shared-memory filesystem has room for `nbytes` (with a margin)."""
    try:
        stat = os.statvfs("/dev/shm")
    except OSError:  # not Linux, or no /dev/shm: shared_memory knows its own platform
        return True
    return nbytes <= 0.8 * stat.f_bavail * stat.f_frsize


def _materialized(value, on_gpu: bool):
    if isinstance(value, (tuple, list)):
        return type(value)(_materialized(v, on_gpu) for v in value)
    return value.materialize(on_gpu) if isinstance(value, HostArray) else value


# -- one config's timing ---------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class BenchJob:
    """Time one compiled config on the worker's device. `inputs` is None when the worker should
    already hold the arguments named `inputs_key` (it asks for them otherwise)."""

    row: int  # the tuning table's row this timing fills
    binary: KernelBinary
    inputs_key: str
    inputs: dict | None
    config_values: dict  # the config's meta-parameters by name (for pre_hook)
    grid: tuple
    reset_to_zero: tuple = ()
    restore_value: tuple = ()
    pre_hook: Callable | None = None  # called with the arguments by name before each run
    warmup: float = 25.0
    rep: float = 100.0
    do_bench: Callable | None = None  # do_bench(launch, warmup=ms, rep=ms) -> ms


@dataclass(frozen=True)
class BenchReport:
    row: int
    device: DeviceIdentity
    ms: float | None = None
    error: str | None = None
    needs_inputs: bool = False
    needs_inline: bool = False  # the arguments' bytes themselves: no shared memory with the tuner
    worker_lost: bool = False  # the device's context is gone (a GPU fault): restart the worker


_KEEP_INPUTS = 2  # argument sets a worker keeps (a sweep uses one per tuning key)
_inputs: OrderedDict = OrderedDict()  # inputs_key → the arguments materialized on this device
_kernels: OrderedDict = OrderedDict()  # binary digest → loaded CompiledKernel
_KEEP_KERNELS = 64


def bench_job(job: BenchJob) -> BenchReport:
    """Run in a worker: load the binary, launch it on this worker's device with the job's
    arguments, and time it. Failures are reported, not raised: one config that can't run
    leaves the others timing."""
    identity = worker_identity()
    if job.inputs is not None:
        try:
            _inputs[job.inputs_key] = {n: _materialized(v, identity.is_gpu) for n, v in job.inputs.items()}
        except SharedInputsUnavailable:
            return BenchReport(job.row, identity, needs_inputs=True, needs_inline=True)
        while len(_inputs) > _KEEP_INPUTS:
            _inputs.popitem(last=False)
    named = _inputs.get(job.inputs_key)
    if named is None:
        return BenchReport(job.row, identity, needs_inputs=True)
    _inputs.move_to_end(job.inputs_key)
    if job.binary.target.startswith("sm_") != identity.is_gpu:
        where = "a GPU" if identity.is_gpu else "the host"
        return BenchReport(job.row, identity, error=f"this worker runs on {where}, not {job.binary.target} code")
    try:
        return BenchReport(job.row, identity, ms=_time(job, named, identity))
    except Exception as error:  # noqa: BLE001 - reported in the tuning table
        from kernellab.backends.nvidia.launcher import OutOfResources

        if isinstance(error, OutOfResources):
            return BenchReport(job.row, identity, ms=float("inf"))
        return BenchReport(job.row, identity, error=f"{type(error).__name__}: {error}", worker_lost=_lost(identity))


def _time(job: BenchJob, named: dict, identity: DeviceIdentity) -> float:
    digest = job.binary.digest
    kernel = _kernels.get(digest)
    if kernel is None:
        kernel = _kernels[digest] = load_binary(job.binary)
        while len(_kernels) > _KEEP_KERNELS:
            _kernels.popitem(last=False)
    everything = {**named, **job.config_values}
    run = kernel.bound(job.grid, *[named[name] for name in kernel.arg_names])
    saved = {name: snapshot(named[name]) for name in job.restore_value}

    def launch():
        for name in job.reset_to_zero:
            named[name][...] = 0
        if job.pre_hook is not None:
            job.pre_hook(everything)
        run()
        for name, copy in saved.items():
            named[name][...] = copy

    if job.do_bench is not None:
        return job.do_bench(launch, warmup=job.warmup, rep=job.rep)
    from kernellab.testing import do_bench

    return do_bench(launch, warmup=job.warmup, rep=job.rep, return_mode="median",
                    device="cuda" if identity.is_gpu else "cpu")  # fmt: skip


def _lost(identity: DeviceIdentity) -> bool:
    if not identity.is_gpu:
        return False
    from kernellab.backends.nvidia.driver import context_lost

    return context_lost() is not None


def new_inputs_key() -> str:
    return uuid.uuid4().hex


def with_inputs(job: BenchJob, inputs: dict) -> BenchJob:
    """The job again, carrying the arguments (for a worker that asked for them)."""
    return replace(job, inputs=inputs)


# -- the pool --------------------------------------------------------------------------------------


class _Worker:
    """One device's process (a single-worker process pool), restarted if it dies or its GPU
    context is lost."""

    def __init__(self, identity: DeviceIdentity, context):
        self.identity, self._context = identity, context
        self.busy = False
        self.ready: Future | None = None
        self.executor = self._start()

    def _start(self) -> ProcessPoolExecutor:
        executor = ProcessPoolExecutor(1, mp_context=self._context, initializer=own_device,
                                       initargs=(self.identity,))  # fmt: skip
        self.ready = executor.submit(worker_ready)  # starts the process now, while the configs compile
        return executor

    def restart(self) -> None:
        self.executor.shutdown(wait=False, cancel_futures=True)
        self.executor = self._start()


class DevicePool(Executor):
    """An Executor with one worker process per device; each runs one task at a time.

    `DevicePool()` takes every visible GPU, `DevicePool(gpus=[0, 2])` some of them,
    `DevicePool(host_workers=2)` two host processes instead (for kernels on the interpreter or
    the CPU backend). Pass it to `kl.autotune(..., bench_executor=pool)`; keep it for the
    session (its workers start once) and `shutdown()` it at the end, or use `with`. Workers are
    started with "spawn" (a process that has touched CUDA can't fork safely): in a script,
    create the pool under `if __name__ == "__main__":`.
    """

    def __init__(self, gpus: Iterable[int] | None = None, *, host_workers: int = 0):
        if host_workers:
            if gpus is not None:
                raise ValueError("DevicePool: give gpus= or host_workers=, not both")
            identities = [DeviceIdentity.host_worker(k) for k in range(host_workers)]
        else:
            from kernellab.backends.nvidia import driver

            if not driver.available():
                raise RuntimeError("DevicePool: no GPU is visible here; use DevicePool(host_workers=N) "
                                   "to time on the interpreter or the CPU backend")  # fmt: skip
            indices = list(range(driver.device_count()) if gpus is None else gpus)
            if not indices:
                raise ValueError("DevicePool: gpus= names no GPU")
            identities = [DeviceIdentity.gpu(i) for i in indices]
        context = multiprocessing.get_context("spawn")
        self._workers = [_Worker(identity, context) for identity in identities]
        self._pending: deque = deque()  # (model or None, fn, args, kwargs, outer future)
        self._lock = threading.Lock()
        self._closed = False

    @property
    def devices(self) -> list[DeviceIdentity]:
        return [w.identity for w in self._workers]

    @property
    def models(self) -> dict[str, str | None]:
        """Device model → the target its code compiles for."""
        return {d.model: d.arch for d in self.devices}

    def wait_ready(self, timeout: float | None = None) -> None:
        """Wait until every worker has started and set up its device (they do so in the
        background from the start; a sweep need not wait, but a benchmark of it should)."""
        for worker in self._workers:
            worker.ready.result(timeout)

    def submit(self, fn, /, *args, **kwargs) -> Future:
        """Run `fn(*args, **kwargs)` on the next free worker."""
        return self.submit_on(None, fn, *args, **kwargs)

    def submit_on(self, model: str | None, fn, /, *args, **kwargs) -> Future:
        """Run `fn(*args, **kwargs)` on the next free worker whose device is a `model` (None:
        any)."""
        if model is not None and model not in self.models:
            raise ValueError(f"DevicePool has no {model!r}; it has {', '.join(self.models)}")
        future: Future = Future()
        with self._lock:
            if self._closed:
                raise RuntimeError("DevicePool: submit after shutdown")
            self._pending.append((model, fn, args, kwargs, future))
        self._dispatch()
        return future

    def _dispatch(self) -> None:
        """Hand pending tasks to idle workers of the right model."""
        started = []
        with self._lock:
            for task in list(self._pending):
                model = task[0]
                worker = next((w for w in self._workers if not w.busy and model in (None, w.identity.model)), None)
                if worker is None:
                    continue
                self._pending.remove(task)
                if not task[4].set_running_or_notify_cancel():
                    continue
                worker.busy = True
                started.append((worker, task))
        for worker, (_, fn, args, kwargs, outer) in started:
            try:
                inner = worker.executor.submit(fn, *args, **kwargs)
            except BrokenProcessPool as error:  # its process died: restart it, fail the task
                self._finished(worker, outer, None, error)
                continue
            inner.add_done_callback(lambda done, w=worker, o=outer: self._finished(w, o, done))

    def _finished(self, worker: _Worker, outer: Future, inner: Future | None, error=None) -> None:
        if inner is not None:
            error = inner.exception()
        if error is not None:
            outer.set_exception(error)
            lost = isinstance(error, BrokenProcessPool)
        else:
            outer.set_result(inner.result())
            lost = getattr(inner.result(), "worker_lost", False)
        with self._lock:
            if lost and not self._closed:
                worker.restart()
            worker.busy = False
        if not self._closed:
            self._dispatch()

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        with self._lock:
            self._closed = True
            pending, self._pending = list(self._pending), deque()
        for *_, future in pending:
            future.cancel()
        for worker in self._workers:
            worker.executor.shutdown(wait=wait, cancel_futures=cancel_futures)

    def __repr__(self) -> str:
        return f"DevicePool({', '.join(f'{d.label} ({d.model})' for d in self.devices)})"


__all__ = ["BenchJob", "BenchReport", "DeviceIdentity", "DevicePool", "HostArray", "LaunchInputs",
           "bench_job", "new_inputs_key", "own_device", "with_inputs", "worker_identity", "worker_ready"]  # fmt: skip
