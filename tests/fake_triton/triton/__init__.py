"""A stand-in for the real Triton's decorator API, for kernellab's interop tests where Triton is
not installed: the attributes `kernellab.triton_compat` reads (`JITFunction.fn/src/arg_names/
do_not_specialize`, `Autotuner.fn/configs/keys/...`, `Heuristics.fn/values`, `Config`), under
Triton's names and module paths. It has no compiler: launching one of its kernels says so."""

import inspect

from triton import language  # noqa: F401  (triton.language, as the real package has it)


class KernelInterface:
    def __getitem__(self, grid):
        return lambda *args, **kwargs: self.run(*args, grid=grid, **kwargs)


class JITFunction(KernelInterface):
    def __init__(self, fn, do_not_specialize=(), do_not_specialize_on_alignment=(), debug=None,
                 noinline=False, launch_metadata=None):  # fmt: skip
        self.fn = fn
        self.src = inspect.getsource(fn)
        self.arg_names = list(inspect.signature(fn).parameters)
        self.do_not_specialize = [self.arg_names.index(a) if isinstance(a, str) else a for a in do_not_specialize]
        self.do_not_specialize_on_alignment = list(do_not_specialize_on_alignment)
        self.debug, self.noinline, self.launch_metadata = debug, noinline, launch_metadata

    def run(self, *args, **kwargs):
        raise RuntimeError("the stand-in Triton has no compiler")


def jit(fn=None, **options):
    return JITFunction(fn, **options) if fn is not None else (lambda f: JITFunction(f, **options))


class Config:
    def __init__(self, kwargs, num_warps=4, num_stages=3, num_ctas=1, maxnreg=None, pre_hook=None):
        self.kwargs, self.num_warps, self.num_stages = kwargs, num_warps, num_stages
        self.num_ctas, self.maxnreg, self.pre_hook = num_ctas, maxnreg, pre_hook


class Autotuner(KernelInterface):
    def __init__(self, fn, configs, key, prune_configs_by=None, reset_to_zero=None, restore_value=None):
        prune = prune_configs_by or {}
        self.fn, self.configs, self.keys, self.arg_names = fn, configs, key, fn.arg_names
        self.perf_model, self.configs_top_k = prune.get("perf_model"), prune.get("top_k")
        self.early_config_prune = prune.get("early_config_prune")
        self.reset_to_zero, self.restore_value = reset_to_zero or [], restore_value or []

    run = JITFunction.run


def autotune(configs, key, prune_configs_by=None, reset_to_zero=None, restore_value=None):
    return lambda fn: Autotuner(fn, configs, key, prune_configs_by, reset_to_zero, restore_value)


class Heuristics(KernelInterface):
    def __init__(self, fn, values):
        self.fn, self.values, self.arg_names = fn, values, fn.arg_names

    run = JITFunction.run


def heuristics(values):
    return lambda fn: Heuristics(fn, values)


def next_power_of_2(n: int) -> int:
    return 1 if n <= 1 else 1 << (n - 1).bit_length()
