"""Compiling autotuning configs in other processes: the compiler is Python, so threads would
take turns on one core, while N processes compile N configs at once.

A worker compiles one config (`compile_job`) for a GPU target and returns a small picklable
`CompileReport` (time, registers, spills, shared memory, and when asked the compiled code as a
`KernelBinary`, which bench workers on other GPUs launch); the compiled stages land in the disk
cache (`KERNELLAB_CACHE_DIR`), where the tuning process finds them when it launches the config,
so it compiles nothing twice.

A job names its kernel with a `KernelRef`: a token into this process's table of kernels being
tuned (valid in the process itself and in workers forked from it, which is how the default
executor starts them, so kernels defined in a notebook work), else the kernel's module and
qualified name (what another machine's worker imports: dask.distributed or Ray workers need the
kernel in an importable module, and a shared KERNELLAB_CACHE_DIR and cache key file to hand the
compiled stages back).
"""

from __future__ import annotations

import importlib
import itertools
import multiprocessing
import os
import time
from concurrent.futures import Executor, ProcessPoolExecutor
from dataclasses import dataclass

from kernellab.compiler.binary import KernelBinary, binary_of

_KERNELS: dict[int, object] = {}  # token → kernel being tuned (inherited by forked workers)
_TOKENS = itertools.count(1)


@dataclass(frozen=True)
class KernelRef:
    token: int
    module: str
    qualname: str

    @classmethod
    def of(cls, kernel) -> KernelRef:
        token = next(_TOKENS)
        _KERNELS[token] = kernel
        return cls(token, kernel.__module__, kernel.__qualname__)

    def release(self) -> None:
        _KERNELS.pop(self.token, None)

    def resolve(self):
        """The @kl.jit kernel: from the token where this process (or its parent, forked) holds
        it, else imported by module and name, unwrapping autotune/heuristics wrappers."""
        kernel = _KERNELS.get(self.token)
        if kernel is not None:
            return kernel
        value = importlib.import_module(self.module)
        for part in self.qualname.split("."):
            value = getattr(value, part)
        while hasattr(value, "fn") and not hasattr(value, "binder"):
            value = value.fn
        return value


@dataclass(frozen=True)
class CompileJob:
    """One config's compile: what `kl.compile` needs, all picklable."""

    kernel: KernelRef
    signature: str
    constexprs: dict
    attrs: dict | None
    target: str
    options: dict
    ship: bool = False  # return the compiled code (for timing in another process)

    @classmethod
    def for_launch(cls, ref: KernelRef, kernel, args, meta: dict, target: str, ship: bool = False) -> CompileJob:
        """The job that compiles what `kernel[grid](*args, **meta)` would launch, bound as the
        JIT binds it (`JITFunction.compile_request`)."""
        signature, constexprs, attrs, options = kernel.compile_request(kernel.binder.bind(args, meta))
        return cls(ref, str(signature), constexprs, attrs or None, target, options, ship)


@dataclass(frozen=True)
class CompileReport:
    seconds: float
    target: str
    registers: int | None = None
    spills: int | None = None
    shared: int | None = None
    cache_hit: bool = False
    error: str | None = None
    binary: KernelBinary | None = None  # the job's `ship`: what a bench worker launches


def compile_job(job: CompileJob) -> CompileReport:
    """Compile one config (run in a worker). A compile error is reported, not raised, so one
    config that does not fit (too much shared memory, say) does not stop the others."""
    from kernellab.compiler import compile

    start = time.perf_counter()
    try:
        ck = compile(job.kernel.resolve(), signature=job.signature, constexprs=job.constexprs,
                     attrs=job.attrs, target=job.target, **job.options)  # fmt: skip
    except Exception as error:  # noqa: BLE001 - reported in the tuning table, one config fails
        return CompileReport(time.perf_counter() - start, job.target, error=f"{type(error).__name__}: {error}")
    md = ck.metadata
    return CompileReport(time.perf_counter() - start, job.target, md.registers, md.spills, md.shared,
                         bool(getattr(md, "cache_hit", False)), binary=binary_of(ck) if job.ship else None)  # fmt: skip


def default_executor(jobs: int) -> Executor | None:
    """A process pool for `jobs` compiles (one worker per job, at most one per core), started
    by fork where the platform has it so workers see kernels defined in a notebook; None when
    one job or one core makes a pool pointless."""
    workers = min(jobs, os.cpu_count() or 1)
    if workers < 2:
        return None
    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("fork") if "fork" in methods else None
    return ProcessPoolExecutor(max_workers=workers, mp_context=context)


__all__ = ["CompileJob", "CompileReport", "KernelRef", "compile_job", "default_executor"]
