"""Triton programs on kernellab: kernels decorated by the real Triton, and Triton's import names.

Two ways in, for the kernels users already have:

- `from_triton(obj)`: a function decorated with the real `triton.jit` (under `triton.autotune` /
  `triton.heuristics` too) as the equivalent kernellab kernel. Only Triton's public attributes
  are read (`fn`, `do_not_specialize`, `configs`, `keys`, `values`, ...); the Python function is
  rebuilt over its own code with globals where Triton's modules, dtypes, constexprs and other
  Triton kernels are replaced by kernellab's. `kl.lab.show` and `%%kernel` call it, so any
  Triton kernel opens in the lab.
- `as_triton()`: `import triton` / `import triton.language as tl` (and every `triton.X`
  submodule kernellab has) give kernellab's modules, so an unmodified Triton program runs on
  kernellab, e.g. on the interpreter on a machine without a GPU. Used as a context manager it
  is undone on exit (and a real Triton imported before comes back).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import types

import kernellab
import kernellab.language as kl_language
from kernellab.runtime.autotuner import Config, autotune, heuristics
from kernellab.runtime.jit import JITFunction, jit

_CONVERTED = "__kernellab__"  # attribute a converted Triton object keeps its kernellab twin in


def _is_triton(obj) -> bool:
    return type(obj).__module__.split(".")[0] == "triton"


def is_triton_kernel(obj) -> bool:
    """Whether `obj` is a real Triton kernel: a `triton.jit` function or an autotune/heuristics
    wrapper around one."""
    return _is_triton(obj) and callable(getattr(obj, "run", None)) and hasattr(obj, "fn")


def from_triton(obj):
    """The kernellab kernel equivalent to a real Triton kernel (made once per object)."""
    twin = getattr(obj, _CONVERTED, None)
    if twin is not None:
        return twin
    if hasattr(obj, "configs"):  # triton.autotune
        configs = [
            Config(c.kwargs, num_warps=c.num_warps, num_stages=c.num_stages, num_ctas=c.num_ctas,
                   maxnreg=c.maxnreg, pre_hook=c.pre_hook)
            for c in obj.configs
        ]  # fmt: skip
        prune = {"perf_model": obj.perf_model, "top_k": obj.configs_top_k, "early_config_prune": obj.early_config_prune}
        twin = autotune(configs, key=list(obj.keys), prune_configs_by=prune, reset_to_zero=obj.reset_to_zero,
                        restore_value=obj.restore_value)(from_triton(obj.fn))  # fmt: skip
    elif hasattr(obj, "values") and not hasattr(obj, "src"):  # triton.heuristics
        twin = heuristics(dict(obj.values))(from_triton(obj.fn))
    elif hasattr(obj, "src") and callable(getattr(obj, "fn", None)):  # triton.jit
        twin = _from_triton_jit(obj)
    else:
        raise TypeError(f"{type(obj).__module__}.{type(obj).__qualname__} is not a Triton kernel kernellab can read")
    try:
        setattr(obj, _CONVERTED, twin)
    except AttributeError:
        pass
    return twin


def _from_triton_jit(obj) -> JITFunction:
    fn = obj.fn
    names = list(obj.arg_names)
    twin_fn = types.FunctionType(fn.__code__, {}, fn.__name__, fn.__defaults__, fn.__closure__)
    twin_fn.__kwdefaults__ = fn.__kwdefaults__
    twin_fn.__qualname__, twin_fn.__module__, twin_fn.__doc__ = fn.__qualname__, fn.__module__, fn.__doc__
    twin_fn.__annotations__ = {k: _twin(v) for k, v in fn.__annotations__.items()}
    twin = jit(
        twin_fn,
        do_not_specialize=[names[i] if isinstance(i, int) else i for i in obj.do_not_specialize],
        do_not_specialize_on_alignment=[
            names[i] if isinstance(i, int) else i for i in getattr(obj, "do_not_specialize_on_alignment", ())
        ],
        noinline=bool(getattr(obj, "noinline", False)),
        debug=getattr(obj, "debug", None),
        launch_metadata=getattr(obj, "launch_metadata", None),
    )
    setattr(obj, _CONVERTED, twin)  # before the globals: a kernel that calls itself finds its twin
    twin_fn.__globals__.update({k: _twin(v) for k, v in fn.__globals__.items()})
    return twin


def _kernellab_name(triton_name: str) -> str:
    return "kernellab" + triton_name[len("triton") :]


def _twin(value):
    """kernellab's counterpart of a global a Triton kernel reads (the value itself if none)."""
    if isinstance(value, types.ModuleType):
        name = value.__name__
        if name == "triton" or name.startswith("triton."):
            try:
                return importlib.import_module(_kernellab_name(name))
            except ImportError:
                return value
        return value
    if value is None or isinstance(value, (int, float, str, bool, tuple)):
        return value
    if value.__class__.__module__.split(".")[0] != "triton":
        if isinstance(value, type) and value.__module__.split(".")[0] == "triton":
            return getattr(kl_language, value.__name__, value)  # tl.constexpr as an annotation
        if callable(value) and (getattr(value, "__module__", None) or "").split(".")[0] == "triton":
            return _same_name_in_kernellab(value)
        return value
    if is_triton_kernel(value):
        try:
            return from_triton(value)
        except TypeError:  # a Triton object kernellab can't read: it fails only if a kernel uses it
            return value
    kind = type(value).__name__
    if kind == "constexpr":
        return kl_language.constexpr(_twin(value.value))
    if kind == "pointer_type":
        return kl_language.pointer_type(_twin(value.element_ty))
    if kind == "dtype":
        return kl_language.dtype(value.name)
    return value


def _same_name_in_kernellab(fn):
    """A function of Triton's (`triton.cdiv`, `tl.sigmoid` imported by name) → kernellab's own."""
    module = _kernellab_name(fn.__module__)
    try:
        return getattr(importlib.import_module(module), fn.__name__)
    except (ImportError, AttributeError):
        for fallback in (kl_language, kernellab):
            if hasattr(fallback, fn.__name__):
                return getattr(fallback, fn.__name__)
    return fn


# -- as_triton: Triton's import names for kernellab's modules ------------------------------------


class _TritonNames(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds `triton` and `triton.X` as kernellab's `kernellab` and `kernellab.X`.

    The module object is kernellab's own: `exec_module` puts it in sys.modules under the
    Triton name, which the import system then returns."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "triton" and not fullname.startswith("triton."):
            return None
        name = _kernellab_name(fullname)
        if name != "kernellab" and importlib.util.find_spec(name) is None:
            raise ImportError(
                f"{fullname} has no kernellab counterpart ({name}): kernellab.as_triton() maps "
                "Triton's modules onto kernellab's, and kernellab has no such module",
                name=fullname,
            )
        return importlib.machinery.ModuleSpec(fullname, self)

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        sys.modules[module.__name__] = importlib.import_module(_kernellab_name(module.__name__))


class TritonNames:
    """The effect of `as_triton()`: undo it with `.restore()`, or use it in a `with` block."""

    def __init__(self):
        self._finder = _TritonNames()
        self._saved = {k: v for k, v in sys.modules.items() if k == "triton" or k.startswith("triton.")}
        for name in self._saved:
            del sys.modules[name]
        sys.meta_path.insert(0, self._finder)

    def restore(self) -> None:
        """Forget the aliases; a Triton imported before `as_triton()` is importable again."""
        if self._finder not in sys.meta_path:
            return
        sys.meta_path.remove(self._finder)
        for name in [k for k in sys.modules if k == "triton" or k.startswith("triton.")]:
            del sys.modules[name]
        sys.modules.update(self._saved)

    def __enter__(self) -> TritonNames:
        return self

    def __exit__(self, *exc) -> None:
        self.restore()


def as_triton() -> TritonNames:
    """Make `import triton` and `import triton.language as tl` import kernellab, so a Triton
    program runs unmodified: `kl.as_triton()` at the top of a script or notebook, or
    `with kl.as_triton(): import triton, triton.language as tl` to scope it."""
    return TritonNames()


__all__ = ["as_triton", "from_triton", "is_triton_kernel", "TritonNames"]
