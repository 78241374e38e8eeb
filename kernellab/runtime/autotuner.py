"""`@kl.autotune` and `@kl.heuristics`: choose meta-parameters per problem, as Triton does.

The autotuner times every config the first time it sees a tuning key (the values of the `key`
arguments plus the dtypes of array arguments) and reuses the fastest afterwards. Timing runs
write to the real outputs, so `reset_to_zero` arguments are zeroed before each run and
`restore_value` arguments are restored after each, leaving the user's data as if only the final
launch had happened.
"""

from __future__ import annotations

import difflib
import inspect
import os
import time
import warnings

from kernellab.backends.arguments import snapshot, writable_array
from kernellab.runtime.jit import JITFunction, KernelInterface


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
                 restore_value=None, warmup=5, rep=20, do_bench=None):  # fmt: skip
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
        self.cache: dict[tuple, Config] = {}
        self.best_config: Config | None = None
        self.configs_timings: dict[Config, float] | None = None
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
        conflicts = set(config.kwargs) & set(kwargs)
        if conflicts:
            raise ValueError(
                f"conflicting meta-parameters {', '.join(sorted(conflicts))}: they are tuned by "
                "autotune, so don't pass them to the launch"
            )
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
                self.configs_timings = {c: self._bench(c, args, kwargs, grid, named) for c in pruned}
                self.cache[key] = min(self.configs_timings, key=self.configs_timings.__getitem__)
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

    def warmup(self, *args, grid=None, **kwargs):
        return self.run(*args, grid=grid, warmup=True, **kwargs)


def _median_wall_clock(launch, warmup: float, rep: float) -> float:
    from kernellab.testing import do_bench

    return do_bench(launch, warmup=warmup, rep=rep, return_mode="median")


def autotune(configs, key, prune_configs_by=None, reset_to_zero=None, restore_value=None,
             warmup=5, rep=20, do_bench=None):  # fmt: skip
    """Decorator: tune `configs` per distinct value of the `key` arguments (and array dtypes).

    `warmup` and `rep` are the milliseconds spent per config (small: the interpreter is slow,
    and the timing only has to rank configs). `prune_configs_by` accepts Triton's
    `perf_model`, `top_k` and `early_config_prune`. `do_bench(launch, warmup=, rep=)` times one
    config in milliseconds (default: the median wall-clock time, kernellab.testing.do_bench).
    """

    def decorator(fn):
        return Autotuner(fn, configs, key, prune_configs_by, reset_to_zero, restore_value, warmup, rep, do_bench)

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


__all__ = ["Config", "autotune", "Autotuner", "heuristics", "Heuristics"]
