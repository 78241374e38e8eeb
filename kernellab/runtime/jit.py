"""`@kl.jit`: a kernel you can launch with `kernel[grid](*args)`.

A launch binds the arguments to the parameters, reduces them to a specialization key (argument
types, 16-divisibility, equality to 1, constexpr values, options, and for GPU arrays their
device), and looks the key up in an in-memory cache of compiled kernels; only a miss compiles
(through the disk cache for GPU targets). The binder is built once per function from its
signature.

Repeated GPU launches take a warm path (`Binder.warm`): a function generated once per kernel,
with the kernel's own parameters (so Python binds the call), builds a key parameter by
parameter (type dispatch by `value.__class__`, a tensor's dtype, device and `data_ptr() % 16`),
one dict lookup finds the launch made for it the first time, and that launch packs the
arguments into a preallocated buffer and calls the driver once (backends/nvidia/launcher.py).
`kernel[grid]` is that function bound to the grid (a method object: its one argument is
prepended at no cost), the same one for the same grid tuple, and bound to the grid's x itself
when the grid is a 1-tuple of a valid int.

Where a launch runs follows from its arrays: CPU arrays (numpy, torch CPU tensors) run on the
interpreter; torch CUDA tensors and `__cuda_array_interface__` objects compile for the GPU they
live on and launch there (on torch's current stream when torch tensors are passed). Mixing the
two is an error that names the arguments.
"""

from __future__ import annotations

import builtins
import functools
import inspect
import keyword
import os
from dataclasses import dataclass
from types import MethodType

from kernellab.backends.arguments import (
    _HANDLERS,
    FAST_TENSOR,
    GRID_LIMITS,
    TENSOR_TYPES,
    ArgumentError,
    fast_class,
    launch_device,
    normalize_grid,
    specialize,
)
from kernellab.backends.nvidia.driver import CudaError
from kernellab.backends.nvidia.launcher import OutOfResources
from kernellab.backends.options import OPTION_NAMES as COMPILE_OPTIONS
from kernellab.runtime.argument_trees import flatten_argument, is_structured
from kernellab.compiler import CompiledKernel, compile
from kernellab.compiler.cache import GONE, global_reads
from kernellab.language import core as tl
from kernellab.language.signature import Signature
from kernellab.runtime import launch_hooks
from kernellab.runtime.launch_hooks import ENTER_HOOKS

# what a launch takes by keyword besides the kernel's parameters: the compile options and the
# target ("cpu" runs numpy arrays natively; the default for them is the interpreter, or
# $KERNELLAB_TARGET)
OPTION_NAMES = COMPILE_OPTIONS | {"target"}
# The file name generated launch code is compiled under: its frames are kernellab's own (the
# lab's tracebacks skip them, as they skip the package's files)
GENERATED_CODE = "<kernellab "

_MISSING = inspect.Parameter.empty
GPU_ERRORS = (CudaError, OutOfResources)
_SIMPLE_CONSTEXPR = frozenset({int, float, bool, str, type(None)})

# Per-parameter kinds of the fast binder: -1 for a constexpr, else the flags of a runtime
# argument (0 when both are off), 1 = specialize on 16-byte alignment / divisibility, 2 =
# specialize on the value 1 (Binder._generate folds them into the code it writes).
_CONST, _ALIGN, _SPECIALIZE = -1, 1, 2
# Markers of the fast key (see Binder.fast): scalars' specializations.
_K_ONE, _K_I32, _K_I32_16, _K_FP32, _K_I1, _K_NONE = "=1", "i32", "i32%16", "fp32", "i1", "None"
_DROP = object()  # the warm path's runtime value of an argument the key made a constant


def _not_warm(grid, values, extra, options, key) -> None:
    """`Binder.fast`'s answer for a call that needs `bind`: None."""


def grid_argument(grid):
    """What the warm launch function takes for `grid`: an int, the grid's x, when the grid is a
    1-tuple (or a bare int) of a valid program count, which the launch reads as it is; else the
    grid itself (checked at each launch), a bare int made a grid function returning it."""
    x = grid[0] if grid.__class__ is tuple and len(grid) == 1 else grid
    if x.__class__ is int:
        if 0 < x <= GRID_LIMITS[0]:
            return x
        if grid is x:  # an empty or invalid bare int: normalize_grid says what is wrong
            return lambda meta: grid
    return grid


def bound_launch(warm, grid):
    """`warm` with `grid` (see grid_argument) as its first argument: what `kernel[grid]` is."""
    g = grid_argument(grid)
    return functools.partial(warm, None) if g is None else MethodType(warm, g)


def _option_key(value):
    """A launch option's value as a key part: a dict (extern_libs) as its sorted items, the
    paths as text (a Path and its str compile alike)."""
    if value.__class__ is dict:
        return tuple(sorted((str(k), os.fspath(v) if isinstance(v, os.PathLike) else v) for k, v in value.items()))
    return value


def describe_argument(value) -> str:
    """`float32[1024] on cuda:0` for an array argument, the value itself for a scalar."""
    shape = getattr(value, "shape", None)
    if shape is None or isinstance(value, (int, float, bool)):
        return repr(value)
    dtype = str(getattr(value, "dtype", "?")).replace("torch.", "")
    device = getattr(value, "device", None)
    where = f" on {device}" if device is not None and str(device) != "cpu" else ""
    return f"{dtype}[{', '.join(str(int(n)) for n in shape)}]{where}"


class KernelInterface:
    """`kernel[grid](*args, **kwargs)` is `kernel.run(*args, grid=grid, **kwargs)`."""

    def __getitem__(self, grid):
        return lambda *args, **kwargs: self.run(*args, grid=grid, **kwargs)


@dataclass
class Bound:
    """One launch's arguments: the cache key, the runtime values in kernel-argument order, and
    every parameter's value by position (for grid callables and for compiling on a miss)."""

    key: tuple
    args: list
    values: list
    options: dict


class Binder:
    """Maps a launch's (args, kwargs) to a Bound, following the kernel's Python signature."""

    def __init__(self, fn: tl.KernelFunction, do_not_specialize=(), do_not_specialize_on_alignment=()):
        self.fn_name = fn.__name__
        params = fn.signature.parameters
        self.names = list(params)
        self.index = {name: i for i, name in enumerate(self.names)}
        self.defaults = [p.default for p in params.values()]
        self.is_constexpr = [name in fn.constexpr_names for name in self.names]
        no_spec = self._names(do_not_specialize, "do_not_specialize")
        no_align = self._names(do_not_specialize_on_alignment, "do_not_specialize_on_alignment")
        self.specialize = [name not in no_spec for name in self.names]
        self.align = [name not in no_align for name in self.names]
        self._kinds = tuple(
            _CONST if const else (_SPECIALIZE if spec else 0) | (_ALIGN if align else 0)
            for const, spec, align in zip(self.is_constexpr, self.specialize, self.align)
        )
        self._parameters = list(params.values())
        self._key_function = None  # `fast`'s generated code (see _generate), or False
        self._option_parts: dict[tuple, tuple | None] = {}  # launch options' items → _option_part
        self._tail_defaults = tuple(
            (name, d.value if isinstance(d, tl.constexpr) else d) for name, d in zip(self.names, self.defaults)
        )

    def _names(self, items, what: str) -> set[str]:
        names = set()
        for item in items:
            name = self.names[item] if isinstance(item, int) else item
            if name not in self.index:
                raise ValueError(f"{what}: {self.fn_name} has no parameter {item!r}")
            names.add(name)
        return names

    def _usage(self) -> str:
        return f"{self.fn_name}({', '.join(self.names)})"

    def bind(self, args: tuple, kwargs: dict) -> Bound:
        n = len(self.names)
        if len(args) > n:
            raise TypeError(f"{self._usage()} takes {n} arguments but {len(args)} were given")
        values = list(args)
        if len(values) < n:
            values += [_MISSING] * (n - len(values))
        options = {}
        if kwargs:
            self._bind_keywords(values, kwargs, options)
        key, runtime = [], []
        for i, const in enumerate(self.is_constexpr):
            value = values[i]
            if value is _MISSING:
                value = values[i] = self._default(i)
            if const:
                if isinstance(value, tl.constexpr):
                    value = values[i] = value.value
                key.append(self._constexpr_key(i, value))
                continue
            if is_structured(value):  # a tuple or descriptor: one key entry per leaf
                key.append(self._structured_key(i, value, runtime))
                continue
            key.append(self._argument_key(i, f"parameter {self.names[i]!r}", value, runtime))
        if options:
            key.append(tuple(sorted((name, _option_key(v)) for name, v in options.items())))
        return Bound(tuple(key), runtime, values, options)

    def _structured_key(self, i: int, value, runtime: list) -> tuple:
        """("tree", its ArgumentTree, each leaf's key) for a structured argument; the leaves'
        runtime values go to `runtime`."""
        tree, leaves = flatten_argument(value)
        keys = [
            self._argument_key(i, f"argument {path!r}", leaf, runtime)
            for path, leaf in zip(tree.leaf_paths(self.names[i]), leaves)
        ]
        return ("tree", tree, tuple(keys))

    def _argument_key(self, i: int, what: str, value, runtime: list) -> tuple:
        """The specialization key of a runtime value of parameter `i` (its launch value goes to
        `runtime` unless the key made it a constant)."""
        handler = _HANDLERS.get(type(value))
        try:
            if handler is None:
                k, r = specialize(value, self.specialize[i], self.align[i])
            else:
                k, r = handler(value, self.specialize[i], self.align[i])
        except ArgumentError as e:
            raise ArgumentError(f"{self.fn_name}: {what}: {e}") from None
        if k[0] != "constexpr":
            runtime.append(r)
        return k

    def flat_keys(self, bound: Bound) -> tuple[list, list]:
        """(key, name) of every argument, a structured argument's leaves one by one."""
        keys, names = [], []
        for name, k in zip(self.names, bound.key):
            if k[0] == "tree":
                keys.extend(k[2])
                names.extend(k[1].leaf_paths(name))
            else:
                keys.append(k)
                names.append(name)
        return keys, names

    def values(self, args: tuple, kwargs: dict):
        """Every parameter's value in order (defaults filled in), or None when one is missing or
        there are too many: what a grid callable and an error message see of a call."""
        if len(args) > len(self.names):
            return None
        values = list(args)
        for name, default in self._tail_defaults[len(args) :]:
            value = kwargs.get(name, default)
            if value is _MISSING:
                return None
            values.append(value)
        return values

    def fast(self, args: tuple, kwargs: dict):
        """The warm path's binding: `(key, runtime args)`, or None when an argument needs the
        full `bind` (numpy arrays, CPU tensors, large ints, tl.constexpr objects, unknown or
        repeated names, ...). The key is the one `warm` looks its launch up by."""
        if self._key_function is None:
            self._key_function = self._generate(None)
        if self._key_function is False:
            return None
        try:
            return self._key_function(None, *args, **kwargs)
        except TypeError:  # Python refused the call (a name given twice, ...): bind explains it
            return None

    def warm(self, jit: JITFunction):
        """The warm launch path of `jit`: a function `(grid, *args, **kwargs)` with the kernel's
        own parameters (`grid` as `grid_argument` gives it), generated once (see `_generate`);
        None for a kernel whose parameter names it can't take (bind handles every launch of
        it)."""
        return self._generate(jit) or None

    def _generate(self, jit):
        """Straight-line Python for one launch, with the kernel's parameters as its own (Python
        binds the call). Per parameter, the branch for each type it may take, the kind's flags
        folded in: a torch CUDA tensor gives its dtype and its device (as ~device when not
        16-byte aligned), a scalar its specialization marker (and None), a constexpr its type and
        value. These make a flat key (options last) that equals `bind`'s key exactly when the
        calls share a specialization. `jit` None: return (key, runtime args). Else look the key
        up in `jit._launches` and launch with every runtime value (the launch leaves out those
        the key made constants); a miss or an argument the code doesn't know goes to
        `jit._slow`.

        False when a parameter's name would clash with the code's own names or with a launch
        option (bind gives such a parameter both meanings), or is not plain positional."""
        params = self.names
        kinds = self._kinds
        plain = all(p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD for p in self._parameters)
        if not plain or any(name.startswith("_kl_") or name in OPTION_NAMES for name in params):
            return False
        # the kernel's name where Python takes it (tracebacks show it), else a plain one
        fn_name = self.fn_name if self.fn_name.isidentifier() and not keyword.iskeyword(self.fn_name) else "kernel"
        fn_name = "kernel" if fn_name.startswith("_kl_") else fn_name
        defaults = "".join(f"{name}=_kl_d{i}, " for i, name in enumerate(params))
        values = "(" + "".join(f"{name}, " for name in params) + ")"
        slow = f"return _kl_slow(_kl_grid, {values}, _kl_extra, _kl_options, None)"
        lines = [
            f"def {fn_name}(_kl_grid, /, {defaults}*_kl_extra, **_kl_options):",
            " if _kl_extra or _kl_hooks:" if jit is not None else " if _kl_extra:",  # a profiler listens
            "  " + slow,
        ]
        key = []
        runtime = []
        for i, (name, kind) in enumerate(zip(params, kinds)):
            k, e, r = f"_kl_k{i}", f"_kl_e{i}", f"_kl_r{i}"
            if kind == _CONST:
                lines += [f" {k} = {name}.__class__", f" if {k} is _kl_constexpr or {name} is _kl_MISSING:", "  " + slow]
                key += [k, name]
                continue
            key += [k, e]  # a tensor's dtype and device (~device when unaligned), a scalar's marker
            runtime.append(r)
            lines += [
                f" _kl_c = {name}.__class__",
                " if _kl_c in _kl_tensors:",
                f"  {e} = {name}.get_device()",
                f"  if {e} < 0:  # a CPU tensor: the interpreter",
                "   " + slow,
                f"  {r} = {name}.data_ptr()",
                f"  {k} = {name}.dtype",
                *([f"  if {r} & 15:", f"   {e} = ~{e}"] if kind & _ALIGN else []),
                " elif _kl_c is _kl_int:",
            ]
            if kind & _SPECIALIZE:
                lines += [f"  if {name} == 1:", f"   {k} = _kl_K_ONE", f"   {r} = _kl_DROP",
                          f"  elif -0x80000000 <= {name} <= 0x7FFFFFFF:"]  # fmt: skip
            else:
                lines += [f"  if -0x80000000 <= {name} <= 0x7FFFFFFF:"]
            marker = f"_kl_K_I32 if {name} & 15 else _kl_K_I32_16" if kind == _ALIGN | _SPECIALIZE else "_kl_K_I32"
            lines += [
                f"   {k} = {marker}", f"   {r} = {name}", "  else:", "   " + slow,
                f"  {e} = None",
                " elif _kl_c is _kl_float:", f"  {k} = _kl_K_FP32", f"  {e} = None", f"  {r} = {name}",
                " elif _kl_c is _kl_bool:", f"  {k} = _kl_K_I1", f"  {e} = None", f"  {r} = {name}",
                f" elif {name} is None:", f"  {k} = _kl_K_NONE", f"  {e} = None", f"  {r} = _kl_DROP",
                " elif _kl_fast_class(_kl_c) == _kl_FAST_TENSOR:  # a tensor class not seen before",
                f"  return _kl_retry(_kl_grid, {values[1:-1]}**_kl_options)",
                " else:", "  " + slow,
            ]  # fmt: skip
        flat = "".join(k + ", " for k in key)
        # the runtime values a key kept (every one but None and specialized 1s), in order
        kept = [line for r in runtime for line in (f" if {r} is not _kl_DROP:", f"  _kl_kept.append({r})")]
        lines += [
            " if _kl_options:",  # launch options: their values join the key
            "  _kl_o = _kl_option_part(_kl_options)",
            "  if _kl_o is None:",  # a name that is no option (warmup=, a typo): bind decides
            "   " + slow,
            f"  _kl_key = ({flat}_kl_o)",
            " else:",
            f"  _kl_key = ({flat})",
        ]
        if jit is None:
            lines += [" _kl_kept = []", *kept, " return _kl_key, _kl_kept"]
        else:
            miss = f"_kl_slow(_kl_grid, {values}, (), _kl_options, _kl_key)"
            described = "{" + "".join(f"{name!r}: {name}, " for name in params) + "}"
            lines += [
                " try:",
                "  _kl_entry = _kl_launches[_kl_key]",
                " except (KeyError, TypeError):  # a miss, or an unhashable constexpr (bind says which)",
                "  _kl_entry = None",  # (left outside the handler: errors raised on a miss stand alone)
                " if _kl_entry is None:",
                f"  return {miss}",
                " if _kl_jit._reads:",
                "  _kl_jit._check_globals()",
                " _kl_launch, _kl_kernel = _kl_entry",
                " if _kl_grid.__class__ is _kl_int:",  # the grid's x (see grid_argument)
                "  _kl_x = _kl_grid",
                "  _kl_y = _kl_z = 1",
                " else:",
                f"  _kl_x, _kl_y, _kl_z = _kl_grid_of(_kl_grid, {described})",
                "  if not (_kl_x and _kl_y and _kl_z):",
                "   return _kl_kernel",
                " try:",  # every runtime value: the launch leaves out those its key made constants
                f"  _kl_launch(_kl_x, _kl_y, _kl_z, {''.join(r + ', ' for r in runtime)})",
                " except _kl_GPU_ERRORS as _kl_error:",
                f"  raise _kl_jit._fault(_kl_error, {values}, {{}})",
                " return _kl_kernel",
            ]
        namespace = {
            "__name__": __name__,  # its frames are kernellab's: warnings and errors name the caller's line
            "_kl_slow": jit._launch_slowly if jit is not None else _not_warm,
            "_kl_hooks": ENTER_HOOKS, "_kl_constexpr": tl.constexpr, "_kl_MISSING": _MISSING,
            "_kl_tensors": TENSOR_TYPES, "_kl_fast_class": fast_class, "_kl_FAST_TENSOR": FAST_TENSOR,
            "_kl_int": int, "_kl_float": float, "_kl_bool": bool,
            "_kl_K_ONE": _K_ONE, "_kl_K_I32": _K_I32, "_kl_K_I32_16": _K_I32_16, "_kl_K_FP32": _K_FP32,
            "_kl_K_I1": _K_I1, "_kl_K_NONE": _K_NONE, "_kl_DROP": _DROP, "_kl_option_part": self._option_part,
            "_kl_jit": jit, "_kl_launches": jit._launches if jit is not None else None,
            "_kl_grid_of": jit and jit._grid, "_kl_GPU_ERRORS": GPU_ERRORS,
            **{f"_kl_d{i}": default for i, (_, default) in enumerate(self._tail_defaults)},
        }  # fmt: skip
        what = "warm launch" if jit is not None else "fast binder"
        exec(builtins.compile("\n".join(lines), f"{GENERATED_CODE}{what} of {self.fn_name}>", "exec"), namespace)
        namespace["_kl_retry"] = namespace[fn_name]
        return namespace[fn_name]

    def _option_part(self, options: dict):
        """The launch options' part of a key: their names as given and their values (a dict's,
        extern_libs, as its items); None when a name is no option. Options given in another
        order make another key for the same launch. Remembered by the options' items (a bounded
        table), so a repeated launch finds it with one lookup."""
        items = tuple(options.items())
        try:
            return self._option_parts[items]
        except KeyError:
            pass
        except TypeError:  # an unhashable value (extern_libs' dict): made each time
            return self._make_option_part(options)
        part = self._make_option_part(options)
        if len(self._option_parts) >= 64:  # bounded: the oldest options make room
            self._option_parts.pop(next(iter(self._option_parts)), None)
        self._option_parts[items] = part
        return part

    @staticmethod
    def _make_option_part(options: dict):
        names = tuple(options)
        if not OPTION_NAMES.issuperset(names):
            return None
        values = tuple(options.values())
        try:
            hash(values)
        except TypeError:
            values = tuple(map(_option_key, values))
        return names, values

    def _bind_keywords(self, values: list, kwargs: dict, options: dict) -> None:
        for name, value in kwargs.items():
            if name in OPTION_NAMES:  # a parameter named like an option sets both, as in Triton
                options[name] = value
            i = self.index.get(name)
            if i is None:
                if name in OPTION_NAMES:
                    continue
                raise TypeError(
                    f"{self._usage()} got an unexpected argument {name!r}; launch options are "
                    f"{', '.join(sorted(OPTION_NAMES))}"
                )
            if values[i] is not _MISSING:
                raise TypeError(f"{self._usage()} got two values for {name!r}")
            values[i] = value

    def _default(self, i: int):
        default = self.defaults[i]
        if default is _MISSING:
            name = self.names[i]
            what = "a tl.constexpr" if self.is_constexpr[i] else f"parameter {i + 1} of {len(self.names)}"
            raise TypeError(
                f"{self._usage()} is missing {name!r} ({what}); pass it positionally or as {name}=..."
            )
        return default.value if isinstance(default, tl.constexpr) else default

    def _constexpr_key(self, i: int, value) -> tuple:
        if type(value) in _SIMPLE_CONSTEXPR:
            return (type(value), value)
        try:
            hash(value)
        except TypeError:
            raise TypeError(
                f"{self.fn_name}: constexpr {self.names[i]}={value!r} must be hashable "
                "(use a tuple instead of a list)"
            ) from None
        return (type(value), value)

    def meta(self, bound: Bound) -> dict:
        """Every parameter's value by name: what a grid callable receives."""
        return dict(zip(self.names, bound.values))

    def compile_args(self, bound: Bound) -> tuple[Signature, dict, dict]:
        """(signature, constexprs, attrs) for `compile`, read off the key."""
        signature, constexprs, attrs = [], {}, {}

        def add(name: str, k: tuple) -> None:  # one runtime value's key
            if k[0] == "constexpr":
                constexprs[name] = k[1]
            else:
                signature.append((name, k[0]))
                if k[1]:
                    attrs[name] = {"tt.divisibility": 16}

        for name, k, value, const in zip(self.names, bound.key, bound.values, self.is_constexpr):
            if const:
                constexprs[name] = value
            elif k[0] == "tree":  # the tree, then its leaves as if they were parameters
                constexprs[name] = k[1]
                for path, leaf in zip(k[1].leaf_paths(name), k[2]):
                    add(path, leaf)
            else:
                add(name, k)
        return Signature(signature), constexprs, attrs


class JITFunction(KernelInterface, tl.KernelFunction):
    """A kernel made by `@kl.jit`: launch with `kernel[grid](...)`, compile with `.warmup(...)`."""

    def __init__(
        self,
        fn,
        do_not_specialize=(),
        do_not_specialize_on_alignment=(),
        noinline: bool = False,
        debug: bool | None = None,
        launch_metadata=None,
    ):
        tl.KernelFunction.__init__(self, fn, noinline=noinline)
        if launch_metadata is not None and not callable(launch_metadata):
            raise TypeError(
                f"{fn.__name__}: launch_metadata must be a function (grid, kernel, args) -> dict, "
                f"not {type(launch_metadata).__name__}"
            )
        self.launch_metadata = launch_metadata
        self.binder = Binder(self, do_not_specialize, do_not_specialize_on_alignment)
        self.debug = debug
        self.cache: dict[tuple, CompiledKernel] = {}
        self.where: dict[tuple, tuple[int, bool] | None] = {}  # key → (GPU index, torch stream?)
        # warm path: Binder.fast's key → (launch(gx, gy, gz, *runtime args), CompiledKernel)
        self._launches: dict[tuple, tuple] = {}
        self._warm = None  # Binder.warm's function, made on the first launch
        self._last_grid: tuple = (None, None)  # (grid tuple, the launch kernel[grid] returned)
        # the globals the code read when first compiled (cache.GlobalRead), checked at launch
        self._reads: tuple | None = None

    def __getitem__(self, grid):
        last = self._last_grid
        if last[0] is grid:  # the same grid tuple again (a constant in the caller's code)
            return last[1]
        launch = bound_launch(self._warm or self._warm_path(), grid)
        if grid.__class__ is tuple:  # a grid function is not kept: it may hold tensors
            self._last_grid = (grid, launch)
        return launch

    def _warm_path(self):
        """The warm launch function (Binder.warm), made once; the slow path when there is none."""
        if self._warm is None:
            self._warm = self.binder.warm(self) or self._launch_unbound
        return self._warm

    def run(self, *args, grid=None, warmup: bool = False, **kwargs) -> CompiledKernel:
        """Bind, look up (or compile) the specialization, and launch it on `grid` unless `warmup`."""
        if warmup:
            return self._slow(grid, args, kwargs, True)
        return (self._warm or self._warm_path())(grid_argument(grid), *args, **kwargs)

    def _launch_unbound(self, grid, *args, **kwargs) -> CompiledKernel:
        """A launch of a kernel that has no warm path: bind every time."""
        return self._slow((grid,) if grid.__class__ is int else grid, args, kwargs, False)

    def _launch_slowly(self, grid, values: tuple, extra: tuple, options: dict, key) -> CompiledKernel:
        """The warm path's way out: the call it was given, rebuilt for `_slow` (all positional
        when there were extra positional arguments, else by name, missing ones left out);
        `key` is the warm key to remember the launch under, None when the call has none."""
        if grid.__class__ is int:  # the grid's x (see grid_argument)
            grid = (grid,)
        if extra:
            args, kwargs = (*values, *extra), options
        else:
            args = ()
            kwargs = {name: v for name, v in zip(self.binder.names, values) if v is not _MISSING}
            kwargs.update(options)
        return self._slow(grid, args, kwargs, False, key)

    def _grid(self, grid, meta: dict | None) -> tuple[int, int, int]:
        """A launch's grid as three ints; `meta` is every parameter's value by name, for a grid
        function."""
        if grid is None:
            raise TypeError(f"launch {self.__name__} with a grid: {self.__name__}[grid](...)")
        if callable(grid):
            grid = grid(meta)
        return normalize_grid(grid)

    def _slow(self, grid, args: tuple, kwargs: dict, warmup: bool, key=None) -> CompiledKernel:
        """Bind every argument, compile on a miss, and remember the launch for the warm path."""
        if "warmup" in kwargs:  # kernel[grid](..., warmup=True)
            kwargs = dict(kwargs)
            warmup = bool(kwargs.pop("warmup"))
        bound = self.binder.bind(args, kwargs)
        if self._reads:
            self._check_globals()
        kernel = self.cache.get(bound.key)
        if kernel is None:
            try:
                kernel = self._compile(bound)
            except OutOfResources as e:  # refused while compiling for this launch's GPU
                raise self._fault(e, args, kwargs)
        if warmup:
            return kernel
        try:
            return self._launch_bound(kernel, bound, grid, key)
        except GPU_ERRORS as e:
            raise self._fault(e, args, kwargs)

    def _launch_bound(self, kernel: CompiledKernel, bound: Bound, grid, key) -> CompiledKernel:
        """Launch a bound call (remembering GPU launches under the warm path's `key`)."""
        where = self.where.get(bound.key)
        if key is not None and where is not None:  # GPU launches: remember for the warm path
            launcher = kernel._launcher or kernel._get_launcher()
            bind = getattr(launcher, "bind", None)
            if bind is not None:
                # the warm path passes a value per runtime parameter: the launch leaves out
                # those the key made constants (None, an int 1)
                parts = [k for k, const in zip(bound.key, self.binder.is_constexpr) if not const]
                constants = [i for i, k in enumerate(parts) if k[0] == "constexpr"]
                try:
                    self._launches[key] = (bind(where, constants), kernel)
                except TypeError:  # an unhashable constexpr
                    pass
        if grid is None:
            raise TypeError(f"launch {self.__name__} with a grid: {self.__name__}[grid](...)")
        if callable(grid):
            grid = grid(self.binder.meta(bound))
        grid = normalize_grid(grid)
        if ENTER_HOOKS:
            args_by_name = self.binder.meta(bound)
            launch = launch_hooks.describe(self.launch_metadata, grid, kernel, args_by_name, where)
            after = launch_hooks.notify(launch)
            try:
                kernel.launch(bound.args, grid, None, where)
            finally:
                for done in after:
                    done()
            return kernel
        kernel.launch(bound.args, grid, None, where)
        return kernel

    def warmup(self, *args, grid=None, **kwargs) -> CompiledKernel:
        """Compile for these arguments without launching; returns the CompiledKernel."""
        return self.run(*args, grid=grid, warmup=True, **kwargs)

    def _fault(self, error: Exception, args: tuple, kwargs: dict) -> Exception:
        """`error` (a GPU launch failed) with this launch's arguments, shapes and dtypes named."""
        values = self.binder.values(args, kwargs) or [*args, *kwargs.values()]
        names = [*self.binder.names, *kwargs][: len(values)]
        described = ", ".join(f"{name}={describe_argument(value)}" for name, value in zip(names, values))
        message = error.args[0] if error.args else str(error)
        error.args = (f"{message}\n  the launch: {self.__name__}[grid]({described})", *error.args[1:])
        return error

    def _check_globals(self) -> None:
        """Raise if a global the compiled code has baked in was rebound since: running the old
        code would silently use the old value."""
        for read in self._reads:
            if read.changed():
                now = read.current()
                now = "deleted" if now is GONE else repr(now)
                if isinstance(read.value, tl.KernelFunction):
                    fix = f"define {self.__name__} again (re-run its cell) to compile it with the new one"
                else:
                    fix = f"pass {read.name} as an argument or a tl.constexpr parameter to vary it"
                raise RuntimeError(
                    f"{self.__name__}: global {read.name} changed since the kernel was compiled "
                    f"(from {read.value!r} to {now}); kernels read globals once, at compile time: {fix}"
                )

    def explain_key(self, *args, **kwargs):
        """The specialization key these arguments would launch with, part by part, and whether
        it is cached (runtime/cache_info.py); nothing is compiled or launched."""
        from kernellab.runtime.cache_info import explain_key

        return explain_key(self, *args, **kwargs)

    def cache_info(self):
        """Every specialization compiled so far in this process, with its key explained."""
        from kernellab.runtime.cache_info import cache_info

        return cache_info(self)

    def compile_request(self, bound: Bound) -> tuple:
        """(signature, constexprs, attrs, options): what `kl.compile` is given for a bound launch,
        the kernel's own `debug` default included. One place, so that the JIT, the autotuner's
        parallel compiles and the benchmark's precompile build the same specialization."""
        signature, constexprs, attrs = self.binder.compile_args(bound)
        options = dict(bound.options)
        if self.debug is not None:
            options.setdefault("debug", self.debug)
        return signature, constexprs, attrs, options

    def _compile(self, bound: Bound) -> CompiledKernel:
        if self._reads is None:  # before compiling: the values the compile reads
            self._reads = tuple(global_reads(self))
        where = launch_device(*self.binder.flat_keys(bound))  # raises on mixed devices
        signature, constexprs, attrs, options = self.compile_request(bound)
        target = options.pop("target", None)
        if where is not None:
            from kernellab.backends.nvidia.driver import device_info

            if target is not None and not str(target).startswith(("sm_", "cuda")):
                raise ArgumentError(f"{self.__name__}: target={target!r} runs on host memory, but the "
                                    "arrays are on the GPU; drop target= or pass CPU arrays")  # fmt: skip
            target = device_info(where[0]).arch
        elif target is None:
            target = os.environ.get("KERNELLAB_TARGET") or None
        kernel = compile(
            self, signature=signature, constexprs=constexprs, attrs=attrs or None, target=target, **options
        )
        self.where[bound.key] = where
        self.cache[bound.key] = kernel
        return kernel

    def __repr__(self) -> str:
        return f"JITFunction({self.__module__}:{self.__qualname__})"


def jit(
    fn=None, *, do_not_specialize=(), do_not_specialize_on_alignment=(), noinline=False, debug=None,
    launch_metadata=None,
):  # fmt: skip
    """Make a Python function in the block language a launchable kernel (`@kl.jit` or `@kl.jit(...)`).

    `do_not_specialize` names parameters (or their positions) whose integer values should not
    specialize the kernel (no equal-to-1 / divisible-by-16 variants); `noinline` keeps a called
    kernel function as a call until the inliner runs; `launch_metadata(grid, kernel, args)`
    returns a dict (name, flops, bytes, ...) describing a launch to the launch hooks
    (runtime/launch_hooks.py), as Triton's does for its profiler.
    """

    def decorate(f) -> JITFunction:
        return JITFunction(
            f,
            do_not_specialize=do_not_specialize,
            do_not_specialize_on_alignment=do_not_specialize_on_alignment,
            noinline=noinline,
            debug=debug,
            launch_metadata=launch_metadata,
        )

    return decorate if fn is None else decorate(fn)


__all__ = ["jit", "JITFunction", "KernelInterface", "Binder", "Bound"]
