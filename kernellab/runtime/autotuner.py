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
once on one GPU would disturb each other). With several GPUs, `bench_executor=` times them in
parallel, one config per GPU: a `DevicePool` (runtime/bench_pool.py: a worker process per GPU)
or any Executor whose workers each own a device; the compiled code travels to the workers from
the compile pool, and when the devices differ in model each config is timed on each model and
the best is chosen per model. Each config's row (`ConfigTiming`) is reported as it fills: a live
table in a notebook, progress lines in a script (kernellab/testing/tuning.py).

The pools (runtime/bench_pool.py, runtime/parallel_compile.py: multiprocessing, numpy) load when
a kernel is first tuned, not when `@autotune` decorates it, so `import kernellab` stays quick.
"""

from __future__ import annotations

import inspect
import os
import time
import warnings
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kernellab.backends.arguments import launch_device, normalize_grid, snapshot, specialize, writable_array
from kernellab.runtime.argument_trees import argument_leaves
from kernellab.runtime.jit import JITFunction, KernelInterface

if TYPE_CHECKING:
    from concurrent.futures import Executor

    from kernellab.runtime.bench_pool import BenchJob, LaunchInputs
    from kernellab.runtime.parallel_compile import CompileJob

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
    device: str | None = None  # the pool's device that timed it (None: this process)
    model: str | None = None  # that device's model: timings compare within a model

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


def _pre_hook(config: Config, named: dict) -> None:
    """Run the config's pre_hook before anything compiles or launches with it: it may set what
    the compile reads, such as a host TensorDescriptor's block shape (tutorials 06 and 09)."""
    if config.pre_hook:
        config.pre_hook({**named, **config.all_kwargs()})


def _call_prune(prune, configs: list[Config], named: dict, kwargs: dict):
    """`early_config_prune(configs, named_args, **kwargs)` as Triton 3.3 and newer call it (the
    launch's keyword arguments as keywords: tutorials 06 and 09 read `kwargs["N_CTX"]`), or
    `(configs, named_args)` for a function written for older Triton, which takes no more."""
    try:
        signature = inspect.signature(prune)
    except (TypeError, ValueError):  # no signature to read: call it as current Triton does
        return prune(configs, named, **kwargs)
    try:
        signature.bind(configs, named, **kwargs)
    except TypeError:
        return prune(configs, named)
    return prune(configs, named, **kwargs)


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
                 bench_executor=None, progress=None, bench_workers=None):  # fmt: skip
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
        # timings in flight on bench_executor: its device count where it says (a DevicePool)
        self.bench_workers = bench_workers or len(getattr(bench_executor, "devices", ())) or 1
        self.progress = progress
        self.cache: dict[tuple, Config] = {}
        self.best_config: Config | None = None
        self.best_by_model: dict[str, Config] = {}  # on a pool of several device models
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
                import difflib

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
        """The `key` arguments' values and the dtypes of the arrays, those inside tuple and
        descriptor arguments too: an fp8 and an fp16 TensorDescriptor of one shape need
        different configs (the fp16 one may not fit the fp8 one's tiles)."""
        key = [named.get(name) for name in self.key]
        for value in named.values():
            for leaf in argument_leaves(value):
                array = writable_array(leaf)
                if array is not None:
                    key.append(str(array.dtype))
        return tuple(key)

    def _prune(self, named: dict, kwargs: dict) -> list[Config]:
        configs = self.configs
        if self.early_config_prune:
            configs = list(_call_prune(self.early_config_prune, configs, named, kwargs))
            if not configs:
                raise ValueError(
                    f"autotune: early_config_prune left no config of {self.base.__name__} for "
                    "this launch; keep at least one"
                )
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
            _pre_hook(config, named)
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
                pruned = self._prune(named, kwargs)
                if warmup:
                    return [
                        _pre_hook(c, named) or self.fn.run(*args, grid=grid, warmup=True, **kwargs, **c.all_kwargs())
                        for c in pruned
                    ]
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
        _pre_hook(config, named)
        return self.fn.run(*args, grid=grid, warmup=warmup, **kwargs, **config.all_kwargs())

    # -- tuning ----------------------------------------------------------------------------------

    def _tune(self, configs: list[Config], args, kwargs, grid, named: dict) -> Config:
        """Compile every config (in parallel), time them (one by one here, or one per device on
        the bench executor), keep the fastest (per device model)."""
        from kernellab.testing.tuning import best_per_model, tuning_reporter

        conflicts = {name for c in configs for name in c.kwargs} & set(kwargs)
        if conflicts:
            raise ValueError(
                f"conflicting meta-parameters {', '.join(sorted(conflicts))}: they are tuned by "
                "autotune, so don't pass them to the launch"
            )
        where, target, device = self._where(named)
        models = self._pool_models(where)
        # one row per config, or per (config, device model) when the pool's devices differ
        rows = [ConfigTiming(c, model=m) for c in configs for m in (models if len(models) > 1 else [None])]
        pooled = self.bench_executor is not None
        # On the interpreter the sm_90 compile only informs the table: made when one shows.
        informative = where != "interpreter" or self.progress is not False and (
            self.progress is not None or _showing_tables()
        )
        ship = pooled and where != "interpreter"
        plan = self._compile_plan(rows, args, kwargs, target, models, ship) if informative else []
        resources_from = RESOURCES_TARGET if plan and where == "interpreter" else None
        report = tuning_reporter(self.progress, self.base.__name__, where, resources_from)
        self.tuning = TuningTable(self.base.__name__, rows, where, resources_from)

        def show(done: bool = False) -> None:
            if report is not None:
                report.update(rows, done)

        binaries = self._compile_all(plan, where, show) if plan else {}
        if pooled:
            errors = self._time_on_pool(rows, binaries, args, kwargs, grid, named, show)
        else:
            errors = [e for row in rows if not row.failed and (e := self._time_here(row, args, kwargs, grid, named, show))]
        show(done=True)
        best = best_per_model(rows)
        if not best:
            raise errors[0] if errors else RuntimeError(
                f"autotune: no config of {self.base.__name__} ran: "
                + "; ".join(f"{r.config}: {r.status}" for r in rows)
            )
        self.best_by_model = {model: row.config for model, row in best.items() if model is not None}
        model = self._launch_model(device) if len(best) > 1 else next(iter(best))
        chosen = best.get(model) or min(best.values(), key=lambda r: r.kernel_ms)
        self.configs_timings = {r.config: (r.kernel_ms if r.kernel_ms is not None else float("inf"))
                                for r in rows if r.model == chosen.model}  # fmt: skip
        return chosen.config

    def _time_here(self, row: ConfigTiming, args, kwargs, grid, named: dict, show) -> Exception | None:
        """Time one config in this process; the error when it can't run."""
        row.status = "timing"
        show()
        try:
            if row.compile_seconds is None:  # not compiled ahead: compile here, timed
                _pre_hook(row.config, named)
                start = time.perf_counter()
                self.fn.run(*args, grid=grid, warmup=True, **kwargs, **row.config.all_kwargs())
                row.compile_seconds = time.perf_counter() - start
            ms = self._bench(row.config, args, kwargs, grid, named)
        except Exception as error:  # noqa: BLE001 - a config that can't run is skipped
            row.status = f"failed: {type(error).__name__}: {error}"
            return error
        if ms == float("inf"):  # _bench's answer for a config that does not fit the GPU
            row.status = "failed: out of resources on this GPU"
        else:
            row.kernel_ms, row.status = ms, "timed"
        return None

    def _where(self, named: dict) -> tuple[str, str, int | None]:
        """Where the launch runs ("interpreter" or the GPU), the target compiled for, and the
        GPU's index (None on the interpreter)."""
        binder = self.base.binder
        names, keys = [], []
        for name, const in zip(binder.names, binder.is_constexpr):
            if const or name not in named:
                continue
            value = named[name]
            for leaf in argument_leaves(value):  # a tuple or descriptor: where its arrays live
                names.append(name)
                keys.append(specialize(leaf)[0])
        device = launch_device(keys, names)
        if device is None:
            return "interpreter", RESOURCES_TARGET, None
        from kernellab.backends.nvidia.driver import device_info

        return f"GPU (cuda:{device[0]})", device_info(device[0]).arch, device[0]

    @staticmethod
    def _launch_model(device: int | None) -> str:
        """The model of the device this process launches on (which best config it uses)."""
        if device is None:
            return "host"
        from kernellab.backends.nvidia.driver import device_info

        return device_info(device).name

    def _pool_models(self, where: str) -> dict[str, str | None]:
        """The bench executor's device models → their targets ({} when it doesn't say), after
        checking that its devices can run this launch's code."""
        models = dict(getattr(self.bench_executor, "models", None) or {})
        gpus = [m for m, arch in models.items() if arch is not None]
        if models and where == "interpreter" and gpus:
            raise ValueError(
                f"autotune {self.base.__name__}: the bench executor's workers own GPUs, but this launch "
                "runs on the host (CPU arrays): pass CUDA tensors, or time on DevicePool(host_workers=N)"
            )
        if models and where != "interpreter" and len(gpus) < len(models):
            raise ValueError(
                f"autotune {self.base.__name__}: this launch runs on the GPU, but the bench executor's "
                "workers are host processes: time on DevicePool() (its GPUs)"
            )
        return models

    def _compile_plan(self, rows, args, kwargs, target: str, models: dict, ship: bool) -> list[tuple[CompileJob, list]]:
        """The compile jobs (a config for one target) with the rows each fills: each config for
        `target`, and for each other GPU model of the pool, for that model's target. Empty where
        the kernel is wrapped in heuristics (their values are known only at launch) or the build
        can't compile for a GPU."""
        from kernellab.runtime.parallel_compile import CompileJob, KernelRef

        base = self.base
        if self.fn is not base or not _nvidia_available():
            return []
        ref = KernelRef.of(base)
        plan: dict[tuple[int, str], tuple[CompileJob, list]] = {}
        for row in rows:
            job_target = models.get(row.model) or target
            key = (id(row.config), job_target)
            if key not in plan:
                _pre_hook(row.config, _named_args(base, args, kwargs))
                meta = {**kwargs, **row.config.all_kwargs()}
                plan[key] = (CompileJob.for_launch(ref, base, args, meta, job_target, ship), [])
            plan[key][1].append(row)
        return list(plan.values())

    def _compile_all(self, plan: list[tuple[CompileJob, list]], where: str, show) -> dict[int, object]:
        """Run the compile jobs on the compile executor, filling their rows as they finish; the
        shipped binaries by row id. A config whose GPU compile fails is dropped when the launch
        runs on that GPU (the launch then finds each compile in the disk cache); on the
        interpreter it is still timed (only its resources are missing)."""
        from concurrent.futures import as_completed

        from kernellab.backends.nvidia.limits import occupancy
        from kernellab.runtime.parallel_compile import compile_job, default_executor

        executor = self.compile_executor
        own = executor is None and default_executor(len(plan))
        if own:
            executor = own
        for _, rows in plan:
            for row in rows:
                row.status = "compiling"
        show()
        binaries = {}
        try:
            if executor:
                futures = {executor.submit(compile_job, job): rows for job, rows in plan}
                done = ((futures[f], f.result()) for f in as_completed(futures))
            else:
                done = ((rows, compile_job(job)) for job, rows in plan)
            for rows, result in done:
                for row in rows:
                    row.target = result.target
                    if result.error is not None:
                        row.status = f"failed: {result.error}" if where != "interpreter" else "compiled (no GPU resources)"
                    else:
                        row.registers, row.spills, row.shared = result.registers, result.spills, result.shared
                        row.occupancy = occupancy(result.target, row.config.num_warps, result.registers, result.shared)
                        row.status = "compiled (cached)" if result.cache_hit else "compiled"
                        if result.binary is not None:
                            binaries[id(row)] = result.binary
                    row.compile_seconds = result.seconds
                show()
        finally:
            plan[0][0].kernel.release()
            if own:
                own.shutdown()
        return binaries

    def _time_on_pool(self, rows, binaries: dict, args, kwargs, grid, named: dict, show) -> list[Exception]:
        """Time the rows on the bench executor, `bench_workers` at a time: each job carries the
        config's compiled code; the launch's arguments go to each worker once (it asks)."""
        from kernellab.runtime.bench_pool import LaunchInputs

        errors: list[Exception] = []
        queue = deque(self._bench_jobs(rows, binaries, args, kwargs, grid, named, errors))
        inputs = LaunchInputs(named)
        try:
            self._run_jobs(rows, queue, inputs, show, errors)
        finally:
            inputs.close()
        return errors

    def _bench_jobs(self, rows, binaries: dict, args, kwargs, grid, named: dict, errors: list) -> list[BenchJob]:
        """A timing job per row that compiled (the arguments stay out: see _run_jobs)."""
        from kernellab.compiler.binary import binary_of
        from kernellab.runtime.bench_pool import BenchJob, new_inputs_key

        do_bench = None if self.do_bench is _median_wall_clock else self.do_bench
        inputs_key, jobs = new_inputs_key(), []
        for i, row in enumerate(rows):
            if row.failed:
                continue
            try:
                binary = binaries.get(id(row))
                if binary is None:  # the code this process would launch: compiled (or found) here
                    _pre_hook(row.config, named)
                    start = time.perf_counter()
                    ck = self.fn.run(*args, grid=grid, warmup=True, **kwargs, **row.config.all_kwargs())
                    row.compile_seconds = row.compile_seconds or time.perf_counter() - start
                    binary = binary_of(ck)
                meta = {**named, **binary.metadata.constexprs, **row.config.all_kwargs()}
                launch_grid = normalize_grid(grid(meta) if callable(grid) else grid)
            except Exception as error:  # noqa: BLE001 - a config that can't compile is skipped
                errors.append(error)
                row.status = f"failed: {type(error).__name__}: {error}"
                continue
            jobs.append(BenchJob(i, binary, inputs_key, None, row.config.all_kwargs(), launch_grid,
                                 tuple(self.reset_to_zero), tuple(self.restore_value), row.config.pre_hook,
                                 self.warmup, self.rep, do_bench))  # fmt: skip
        return jobs

    def _run_jobs(self, rows, queue: deque, inputs: LaunchInputs, show, errors: list) -> None:
        """Submit the jobs, keep `bench_workers` in flight, fill each row as its report comes.
        A worker new to this launch asks for the arguments: it gets them in shared memory, or
        inline when it can't map this host's (`needs_inline`)."""
        from concurrent.futures import FIRST_COMPLETED, wait

        from kernellab.runtime.bench_pool import bench_job, with_inputs

        pool, running = self.bench_executor, {}

        def start(job: BenchJob) -> None:
            row = rows[job.row]
            row.status = "timing"
            submit_on = getattr(pool, "submit_on", None)
            future = submit_on(row.model, bench_job, job) if submit_on and row.model else pool.submit(bench_job, job)
            running[future] = job

        while queue and len(running) < self.bench_workers:
            start(queue.popleft())
        show()
        while running:
            finished, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in finished:
                job = running.pop(future)
                row = rows[job.row]
                try:
                    result = future.result()
                except Exception as error:  # noqa: BLE001 - the job could not be sent, or its worker died
                    errors.append(error)
                    row.status = f"failed: on the bench executor: {type(error).__name__}: {error}"
                    if "pickle" in str(error).lower():
                        row.status += " (a pre_hook or do_bench sent to a worker must be a module-level function)"
                else:
                    if result.needs_inputs:
                        start(with_inputs(job, inputs.inline() if result.needs_inline else inputs.shared()))
                        continue
                    row.device, row.model = result.device.label, result.device.model
                    if result.error is not None:
                        row.status = f"failed: {result.error}"
                    elif result.ms == float("inf"):
                        row.status = "failed: out of resources on this GPU"
                    else:
                        row.kernel_ms, row.status = result.ms, "timed"
                if queue:
                    start(queue.popleft())
            show()

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
             progress=None, bench_workers=None):  # fmt: skip
    """Decorator: tune `configs` per distinct value of the `key` arguments (and array dtypes).

    `warmup` and `rep` are the milliseconds spent per config (small: the interpreter is slow,
    and the timing only has to rank configs). `prune_configs_by` accepts Triton's
    `perf_model`, `top_k` and `early_config_prune`. `do_bench(launch, warmup=, rep=)` times one
    config in milliseconds (default: the median wall-clock time, kernellab.testing.do_bench).

    `compile_executor`: where the configs compile, any concurrent.futures.Executor (a
    dask.distributed Client's `get_executor()`, Ray's `ray.util.multiprocessing` pool made an
    executor, ...); None starts a process pool, one worker per config up to the core count;
    False compiles in this process. `bench_executor`: where the configs are timed, None for
    here, one after another; a `kl.DevicePool()` times one config per GPU of the host at once
    (`DevicePool(host_workers=N)`: N host processes, for the interpreter and the CPU backend);
    any other Executor whose workers each own one device and run one task at a time serves too
    (`bench_workers`: how many timings to keep in flight on it; a DevicePool says itself).
    `progress`: None shows a live table in a notebook and progress lines on a terminal, True
    also in a non-interactive script, False nothing.
    Afterwards: `kernel.best_config`, `kernel.configs_timings`, `kernel.tuning` (the table),
    `kernel.best_by_model` (on a pool of several GPU models), `kernel.plot()`.
    """

    def decorator(fn):
        return Autotuner(fn, configs, key, prune_configs_by, reset_to_zero, restore_value, warmup, rep,
                         do_bench, compile_executor, bench_executor, progress, bench_workers)  # fmt: skip

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
