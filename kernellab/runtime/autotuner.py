"""`@kl.autotune` and `@kl.heuristics`: choose meta-parameters per problem, as Triton does.

The autotuner times every config the first time it sees a tuning key (the values of the `key`
arguments plus the dtypes of array arguments) and reuses the fastest afterwards. Timing runs
write to the real outputs, so `reset_to_zero` arguments are zeroed before each run and
`restore_value` arguments are restored after each, leaving the user's data as if only the final
launch had happened.

Tuning runs in two phases. First every config compiles for the GPU target, in parallel across
processes (runtime/parallel_compile.py; `compile_executor=` takes any
concurrent.futures.Executor); on the interpreter that compile is for sm_90 and only reports the
resources a GPU would use. Then the configs are timed one after another (two kernels timed at
once on one GPU would disturb each other; `bench_executor=` runs the timing calls elsewhere,
one at a time). Each config's row (`ConfigTiming`) is reported as it fills: a live table in a
notebook, progress lines in a script (kernellab/testing/tuning.py).
"""

from __future__ import annotations

import difflib
import inspect
import os
import time
import warnings
from concurrent.futures import Executor, as_completed
from dataclasses import dataclass

from kernellab.backends.arguments import launch_device, snapshot, specialize, writable_array
from kernellab.runtime.jit import JITFunction, KernelInterface
from kernellab.runtime.parallel_compile import CompileJob, KernelRef, compile_job, default_executor

# Without a GPU the configs are compiled for this target to report their resources.
RESOURCES_TARGET = "sm_90"


class Config:
    """One candidate: meta-parameter values (`kwargs`) plus launch options."""

    def __init__(self, kwargs, num_warps=4, num_stages=3, num_ctas=1, maxnreg=None, pre_hook=None):
        self.kwargs = dict(kwargs)
        self.num_warps = num_warps
        self.num_stages = num_stages
        self.num_ctas = num_ctas
        self.maxnreg = maxnreg
        self.pre_hook = pre_hook

    def all_kwargs(self) -> dict:
        """Meta-parameters and launch options, as passed to the kernel."""
        options = {"num_warps": self.num_warps, "num_stages": self.num_stages, "num_ctas": self.num_ctas}
        if self.maxnreg is not None:
            options["maxnreg"] = self.maxnreg
        return {**self.kwargs, **options}

    def __repr__(self) -> str:
        parts = [f"{k}: {v}" for k, v in self.kwargs.items()]
        parts += [f"num_warps: {self.num_warps}", f"num_ctas: {self.num_ctas}", f"num_stages: {self.num_stages}"]
        if self.maxnreg is not None:
            parts.append(f"maxnreg: {self.maxnreg}")
        return ", ".join(parts)


@dataclass(eq=False)
class ConfigTiming:
    """One config of a tuning run: how long it took to compile and to run, and the resources of
    its compiled kernel (on the interpreter: of its sm_90 compile). `status` says where it is:
    waiting, compiling, compiled, timing, timed, or "failed: <why>"."""

    config: Config
    status: str = "waiting"
    compile_seconds: float | None = None
    kernel_ms: float | None = None
    target: str | None = None
    registers: int | None = None
    spills: int | None = None
    shared: int | None = None
    occupancy: dict | None = None  # backends.nvidia.limits.occupancy's estimate

    @property
    def failed(self) -> bool:
        return self.status.startswith("failed")


class TuningTable:
    """A finished tuning run: shows as the table in a notebook and as text elsewhere."""

    def __init__(self, name: str, rows: list[ConfigTiming], where: str, resources_from: str | None):
        self.name, self.rows, self.where, self.resources_from = name, rows, where, resources_from

    def _repr_html_(self) -> str:
        from kernellab.testing.tuning import table_html

        return table_html(self.name, self.rows, self.where, self.resources_from, done=True)

    def __str__(self) -> str:
        from kernellab.testing.tuning import table_text

        return table_text(self.name, self.rows, self.where, self.resources_from)

    __repr__ = __str__


def _showing_tables() -> bool:
    from kernellab.testing.progress import in_notebook

    return in_notebook()


def _nvidia_available() -> bool:
    from kernellab.backends import get_backend

    try:
        get_backend(RESOURCES_TARGET)
    except Exception:  # noqa: BLE001 - a build without the NVIDIA backend
        return False
    return True


def _base_jit(fn) -> JITFunction:
    while not isinstance(fn, JITFunction):
        fn = fn.fn
    return fn


def _named_args(fn: JITFunction, args: tuple, kwargs: dict) -> dict:
    """Parameter name → value for the arguments given (defaults filled in)."""
    binder = fn.binder
    named = dict(zip(binder.names, args))
    named.update(kwargs)
    for name, default in zip(binder.names, binder.defaults):
        if name not in named and default is not inspect.Parameter.empty:
            named[name] = default
    return named


class Autotuner(KernelInterface):
    """Wraps a kernel; on each new tuning key, benchmarks every config and keeps the fastest."""

    def __init__(self, fn, configs, key, prune_configs_by=None, reset_to_zero=None,
                 restore_value=None, warmup=5, rep=20, do_bench=None, compile_executor=None,
                 bench_executor=None, progress=None):  # fmt: skip
        self.fn = fn
        self.base = _base_jit(fn)
        self.configs = list(configs) or [Config({})]
        self.key = self._known_key(list(key))
        self.reset_to_zero = list(reset_to_zero or [])
        self.restore_value = list(restore_value or [])
        prune = prune_configs_by or {}
        self.perf_model = prune.get("perf_model")
        self.top_k = prune.get("top_k")
        self.early_config_prune = prune.get("early_config_prune")
        self.warmup, self.rep = warmup, rep
        # how a config is timed: do_bench(launch, warmup=ms, rep=ms) -> milliseconds
        self.do_bench = do_bench or _median_wall_clock
        self.compile_executor = compile_executor  # None: a process pool; False: this process
        self.bench_executor: Executor | None = bench_executor
        self.progress = progress
        self.cache: dict[tuple, Config] = {}
        self.best_config: Config | None = None
        self.configs_timings: dict[Config, float] | None = None
        self.tuning: TuningTable | None = None  # the last tuning run, row by row
        for name in self.reset_to_zero + self.restore_value:
            if name not in self.base.binder.index:
                raise ValueError(f"autotune: {self.base.__name__} has no parameter {name!r}")

    def _known_key(self, key: list[str]) -> list[str]:
        """The key names that are parameters. Triton ignores the others (its tutorial 08 has
        such a typo), so they warn and are left out of the tuning key instead of failing."""
        params = self.base.binder.names
        for name in key:
            if name not in self.base.binder.index:
                close = difflib.get_close_matches(name, params, n=1)
                warnings.warn(
                    f"autotune: key names {name!r}, which is not a parameter of "
                    f"{self.base.__name__}({', '.join(params)}); it is ignored, as Triton does"
                    + (f" (did you mean {close[0]!r}?)" if close else ""),
                    stacklevel=4,
                )
        return [name for name in key if name in self.base.binder.index]

    @property
    def arg_names(self) -> list[str]:
        return self.base.binder.names

    def _tuning_key(self, named: dict) -> tuple:
        key = [named.get(name) for name in self.key]
        for value in named.values():
            array = writable_array(value)
            if array is not None:
                key.append(str(array.dtype))
        return tuple(key)

    def _prune(self, named: dict) -> list[Config]:
        configs = self.configs
        if self.early_config_prune:
            configs = list(self.early_config_prune(configs, named))
        if self.perf_model and self.top_k:
            top_k = self.top_k if self.top_k >= 1 else int(len(configs) * self.top_k)
            est = {c: self.perf_model(**named, **c.all_kwargs()) for c in configs}
            configs = sorted(configs, key=est.__getitem__)[: max(1, top_k)]
        return configs

    def _bench(self, config: Config, args, kwargs, grid, named: dict) -> float:
        """The time `self.do_bench` gives launching with `config`, leaving the arrays as they were."""
        # Both kinds are put back after every timing run, so the launch that follows tuning
        # sees the caller's data, not the leftovers of the timing runs.
        arrays = {n: writable_array(named.get(n)) for n in self.restore_value + self.reset_to_zero}
        saved = {n: snapshot(a) for n, a in arrays.items() if a is not None}

        def launch():
            for name in self.reset_to_zero:
                if arrays[name] is not None:
                    arrays[name][...] = 0
            if config.pre_hook:
                config.pre_hook({**named, **config.all_kwargs()})
            self.fn.run(*args, grid=grid, **kwargs, **config.all_kwargs())
            for name, copy in saved.items():
                arrays[name][...] = copy

        try:
            return self.do_bench(launch, warmup=self.warmup, rep=self.rep)
        except RuntimeError as error:
            from kernellab.backends.nvidia.launcher import OutOfResources  # the GPU path only

            if isinstance(error, OutOfResources):  # doesn't fit the GPU: never the best, as in Triton
                return float("inf")
            raise

    def run(self, *args, grid=None, warmup: bool = False, **kwargs):
        named = _named_args(self.base, args, kwargs)
        configs = self.configs
        if len(configs) > 1:
            key = self._tuning_key(named)
            if key not in self.cache:
                start = time.perf_counter()
                pruned = self._prune(named)
                if warmup:
                    return [self.fn.run(*args, grid=grid, warmup=True, **kwargs, **c.all_kwargs()) for c in pruned]
                self.cache[key] = self._tune(pruned, args, kwargs, grid, named)
                if os.environ.get("KERNELLAB_PRINT_AUTOTUNING") == "1":
                    print(
                        f"Autotuning kernel {self.base.__name__} with config {self.cache[key]} "
                        f"finished after {time.perf_counter() - start:.2f}s; key {key}"
                    )
            config = self.cache[key]
        else:
            config = configs[0]
        self.best_config = config
        if config.pre_hook:
            config.pre_hook({**named, **config.all_kwargs()})
        return self.fn.run(*args, grid=grid, warmup=warmup, **kwargs, **config.all_kwargs())

    # -- tuning ----------------------------------------------------------------------------------

    def _tune(self, configs: list[Config], args, kwargs, grid, named: dict) -> Config:
        """Compile every config (in parallel), time them one by one, keep the fastest."""
        from kernellab.testing.tuning import tuning_reporter

        conflicts = {name for c in configs for name in c.kwargs} & set(kwargs)
        if conflicts:
            raise ValueError(
                f"conflicting meta-parameters {', '.join(sorted(conflicts))}: they are tuned by "
                "autotune, so don't pass them to the launch"
            )
        rows = [ConfigTiming(c) for c in configs]
        where, target = self._where(named)
        # On the interpreter the sm_90 compile only informs the table: made when one shows.
        informative = where != "interpreter" or self.progress is not False and (
            self.progress is not None or _showing_tables()
        )
        jobs = self._compile_jobs(configs, args, kwargs, target) if informative else []
        resources_from = None
        if jobs and where == "interpreter":
            resources_from = RESOURCES_TARGET
        report = tuning_reporter(self.progress, self.base.__name__, where, resources_from)
        self.tuning = TuningTable(self.base.__name__, rows, where, resources_from)

        def show(done: bool = False) -> None:
            if report is not None:
                report.update(rows, done)

        if jobs:
            self._compile_all(rows, jobs, where, show)
        errors = []
        for row in rows:
            if row.failed:
                continue
            row.status = "timing"
            show()
            try:
                if row.compile_seconds is None:  # not compiled ahead: compile here, timed
                    start = time.perf_counter()
                    self.fn.run(*args, grid=grid, warmup=True, **kwargs, **row.config.all_kwargs())
                    row.compile_seconds = time.perf_counter() - start
                ms = self._timed(row.config, args, kwargs, grid, named)
                if ms == float("inf"):  # _bench's answer for a config that does not fit the GPU
                    row.status = "failed: out of resources on this GPU"
                    continue
                row.kernel_ms, row.status = ms, "timed"
            except Exception as error:  # noqa: BLE001 - a config that can't run is skipped
                errors.append(error)
                row.status = f"failed: {type(error).__name__}: {error}"
        show(done=True)
        timed = [r for r in rows if r.kernel_ms is not None]
        self.configs_timings = {r.config: (r.kernel_ms if r.kernel_ms is not None else float("inf")) for r in rows}
        if not timed:
            raise errors[0] if errors else RuntimeError(
                f"autotune: no config of {self.base.__name__} ran: "
                + "; ".join(f"{r.config}: {r.status}" for r in rows)
            )
        return min(timed, key=lambda r: r.kernel_ms).config

    def _where(self, named: dict) -> tuple[str, str]:
        """Where the launch runs ("interpreter" or the GPU) and the target compiled for."""
        binder = self.base.binder
        runtime = [n for n, const in zip(binder.names, binder.is_constexpr) if not const and n in named]
        keys = [specialize(named[n])[0] for n in runtime]
        device = launch_device(keys, runtime)
        if device is None:
            return "interpreter", RESOURCES_TARGET
        from kernellab.backends.nvidia.driver import device_info

        return f"GPU (cuda:{device[0]})", device_info(device[0]).arch

    def _compile_jobs(self, configs: list[Config], args, kwargs, target: str) -> list[CompileJob]:
        """The compile of each config for `target`. None where the kernel is wrapped in
        heuristics (their values are known only at launch) or the build can't compile for it."""
        base = self.base
        if self.fn is not base or not _nvidia_available():
            return []
        ref = KernelRef.of(base)
        jobs = []
        for config in configs:
            bound = base.binder.bind(args, {**kwargs, **config.all_kwargs()})
            signature, constexprs, attrs = base.binder.compile_args(bound)
            options = dict(bound.options)
            if base.debug is not None:
                options.setdefault("debug", base.debug)
            jobs.append(CompileJob(ref, str(signature), constexprs, attrs or None, target, options))
        return jobs

    def _compile_all(self, rows: list[ConfigTiming], jobs: list[CompileJob], where: str, show) -> None:
        """Run the compile jobs on the compile executor, filling the rows as they finish. A
        config whose GPU compile fails is dropped when the launch runs on that GPU (the launch
        then finds each compile in the disk cache); on the interpreter it is still timed (only
        its resources are missing)."""
        from kernellab.backends.nvidia.limits import occupancy

        executor = self.compile_executor
        own = executor is None and default_executor(len(jobs))
        if own:
            executor = own
        for row in rows:
            row.status = "compiling"
        show()
        try:
            if executor:
                futures = {executor.submit(compile_job, job): row for job, row in zip(jobs, rows)}
                done = ((futures[f], f.result()) for f in as_completed(futures))
            else:
                done = ((row, compile_job(job)) for job, row in zip(jobs, rows))
            for row, result in done:
                row.target = result.target
                if result.error is not None:
                    row.status = f"failed: {result.error}" if where != "interpreter" else "compiled (no GPU resources)"
                else:
                    row.registers, row.spills, row.shared = result.registers, result.spills, result.shared
                    row.occupancy = occupancy(result.target, row.config.num_warps, result.registers, result.shared)
                    row.status = "compiled (cached)" if result.cache_hit else "compiled"
                row.compile_seconds = result.seconds
                show()
        finally:
            jobs[0].kernel.release()
            if own:
                own.shutdown()

    def _timed(self, config: Config, args, kwargs, grid, named: dict) -> float:
        """The config's time, measured here or on the bench executor (one call at a time)."""
        if self.bench_executor is None:
            return self._bench(config, args, kwargs, grid, named)
        return self.bench_executor.submit(self._bench, config, args, kwargs, grid, named).result()

    def plot(self):
        """A bar per config of the last tuning run (the best in green); a matplotlib Figure."""
        if self.tuning is None:
            raise ValueError(f"{self.base.__name__} has not been tuned yet: launch it once")
        from kernellab.testing.tuning import plot_tuning

        return plot_tuning(self.tuning.rows, self.base.__name__, self.tuning.where)

    def warmup(self, *args, grid=None, **kwargs):
        return self.run(*args, grid=grid, warmup=True, **kwargs)


def _median_wall_clock(launch, warmup: float, rep: float) -> float:
    from kernellab.testing import do_bench

    return do_bench(launch, warmup=warmup, rep=rep, return_mode="median")


def autotune(configs, key, prune_configs_by=None, reset_to_zero=None, restore_value=None,
             warmup=5, rep=20, do_bench=None, compile_executor=None, bench_executor=None,
             progress=None):  # fmt: skip
    """Decorator: tune `configs` per distinct value of the `key` arguments (and array dtypes).

    `warmup` and `rep` are the milliseconds spent per config (small: the interpreter is slow,
    and the timing only has to rank configs). `prune_configs_by` accepts Triton's
    `perf_model`, `top_k` and `early_config_prune`. `do_bench(launch, warmup=, rep=)` times one
    config in milliseconds (default: the median wall-clock time, kernellab.testing.do_bench).

    `compile_executor`: where the configs compile, any concurrent.futures.Executor (a
    dask.distributed Client's `get_executor()`, Ray's `ray.util.multiprocessing` pool made an
    executor, ...); None starts a process pool, one worker per config up to the core count;
    False compiles in this process. `bench_executor`: where each timing call runs, one at a
    time (None: here). `progress`: None shows a live table in a notebook and progress lines on
    a terminal, True also in a non-interactive script, False nothing.
    Afterwards: `kernel.best_config`, `kernel.configs_timings`, `kernel.tuning` (the table),
    `kernel.plot()`.
    """

    def decorator(fn):
        return Autotuner(fn, configs, key, prune_configs_by, reset_to_zero, restore_value, warmup, rep,
                         do_bench, compile_executor, bench_executor, progress)  # fmt: skip

    return decorator


class Heuristics(KernelInterface):
    """Wraps a kernel; computes meta-parameters from the other arguments before each launch."""

    def __init__(self, fn, values: dict):
        self.fn = fn
        self.base = _base_jit(fn)
        self.values = dict(values)

    def run(self, *args, grid=None, warmup: bool = False, **kwargs):
        named = _named_args(self.base, args, kwargs)
        for name, rule in self.values.items():
            kwargs[name] = named[name] = rule(named)
        return self.fn.run(*args, grid=grid, warmup=warmup, **kwargs)

    def warmup(self, *args, grid=None, **kwargs):
        return self.run(*args, grid=grid, warmup=True, **kwargs)


def heuristics(values: dict):
    """Decorator: `values` maps a meta-parameter name to `fn(args_by_name) -> value`."""

    def decorator(fn):
        return Heuristics(fn, values)

    return decorator


__all__ = ["Config", "ConfigTiming", "TuningTable", "autotune", "Autotuner", "heuristics", "Heuristics"]
