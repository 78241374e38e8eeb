"""`kl.compile`: turn a kernel (or IR text of a stage) into a CompiledKernel, stage by stage.

The backend's stage dict is run in order and every stage's text is kept in `asm`, every pass's
record in `passes`, and each stage's time in `metadata["times"]`, so nothing the compiler did is
hidden. Compiling needs no device; launching goes through the backend's launcher.
"""

from __future__ import annotations

import hashlib
import os
import re
import time
from dataclasses import asdict, dataclass

from kernellab.backends import get_backend
from kernellab.language import core as tl
from kernellab.runtime.args import ArgumentError, launch_device, normalize_grid, specialize

VERSION = "0.1.0"


@dataclass(frozen=True)
class CompileOptions:
    """Options every backend sees. The interpreter records them; GPU backends act on them."""

    num_warps: int = 4
    num_stages: int = 3
    num_ctas: int = 1
    maxnreg: int | None = None
    debug: bool = False


OPTION_NAMES = frozenset(CompileOptions.__dataclass_fields__)


class Metadata(dict):
    """A dict whose keys also read as attributes (`ck.metadata.num_warps`, as in Triton)."""

    def __getattr__(self, name: str):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(f"metadata has no {name!r}; keys: {', '.join(self)}") from None


class LazyAsm(dict):
    """`asm` of a compiled kernel: stage → text (bytes for cubin). Entries a backend makes on
    demand (`asm["sass"]`, via nvdisasm) are computed on first access; `None` means the tool is
    unavailable (metadata says why). `in` is True for them before they are computed."""

    def __init__(self, data, lazy=None):
        super().__init__(data)
        self._lazy = dict(lazy or {})

    def __missing__(self, key):
        if key not in self._lazy:
            raise KeyError(key)
        source, make = self._lazy.pop(key)
        value = make(self[source]) if source in self else None
        self[key] = value
        return value

    def __contains__(self, key) -> bool:
        return dict.__contains__(self, key) or key in self._lazy

    def get(self, key, default=None):
        return self[key] if key in self else default

    def available(self) -> list[str]:
        """Every stage name, including ones made on demand."""
        return list(self) + [k for k in self._lazy if not dict.__contains__(self, k)]


class CompiledKernel:
    """A kernel compiled for one specialization: every stage's text, pass records, and a launcher.

    `asm[stage]` is the text of each stage, `passes` the pass records (IR after each pass, time,
    changed?), `metadata` the name, options, signature, hash and per-stage times. Launch with
    `ck[grid](*args)` or `ck.run(grid, *args)`, passing one value per kernel argument (constexpr
    parameters are already baked in).
    """

    def __init__(self, name, asm, metadata, passes, module, arg_names, param_names, make_launcher,
                 located=None, source_maps=None):  # fmt: skip
        self.name = name
        self.asm = asm
        self.metadata = metadata
        self._passes = passes
        self._module = module
        self.arg_names = arg_names
        self.param_names = param_names
        self._make_launcher = make_launcher
        self._launcher = None
        self._located = located or {}  # stage → IR text printed with locations
        self._source_maps = dict(source_maps or {})

    @property
    def passes(self) -> list:
        if callable(self._passes):  # loaded from the disk cache on first use
            self._passes = self._passes()
        return self._passes

    @property
    def module(self):
        """The last xDSL module (TTIR or TTGIR); parsed back from text for a cached kernel."""
        if self._module is None:
            stage = next((s for s in ("ttgir", "ttir") if isinstance(self.asm.get(s), str)), None)
            if stage is not None:
                from kernellab.ir import parse_module

                self._module = parse_module(self.asm[stage])
        return self._module

    @property
    def source_maps(self) -> dict[str, dict[int, tuple[str, int]]]:
        """Per IR stage (ttir, ttgir): line of `asm[stage]` → (source file, source line)."""
        for stage, text in self._located.items():
            if stage not in self._source_maps:
                self._source_maps[stage] = source_map_of(text)
        if "ttir" not in self._source_maps and self._module is not None and not self._located:
            from kernellab.ir import print_module

            self._source_maps["ttir"] = source_map_of(print_module(self._module, locations=True))
        return self._source_maps

    @property
    def source_map(self) -> dict[int, tuple[str, int]]:
        """Line of `asm["ttir"]` (1-based) → (source file, source line) of the code that made it."""
        return self.source_maps.get("ttir", {})

    def _get_launcher(self):
        launcher = self._make_launcher()
        if hasattr(launcher, "arg_names"):
            launcher.arg_names = list(self.arg_names)
        self._launcher = launcher
        return launcher

    def launch(self, args: list, grid: tuple[int, int, int], trace=None, where=None):
        """Run with already-converted arguments (the JIT's warm path). `where` is the GPU
        (device index, use torch's stream) for GPU launches."""
        launcher = self._launcher or self._get_launcher()
        if where is None:
            return launcher.run(args, grid, trace)
        return launcher.run(args, grid, trace, where)

    @property
    def on_gpu(self) -> bool:
        return str(self.metadata.get("target", "")).startswith("sm_")

    def run(self, grid, *args, trace=None):
        """Launch on `grid` (arrays are written in place).

        Pass one value per kernel argument, or, as Triton allows, one per Python parameter
        including the constexprs (whose values were fixed at compile time and are skipped).
        """
        if len(args) == len(self.param_names) != len(self.arg_names):
            args = tuple(a for a, n in zip(args, self.param_names) if n in self.arg_names)
        if len(args) != len(self.arg_names):
            raise TypeError(
                f"{self.name} takes {len(self.arg_names)} arguments ({', '.join(self.arg_names)}), "
                f"got {len(args)}"
            )
        keys, values = [], []
        for name, value in zip(self.arg_names, args):
            try:
                key, v = specialize(value, False, False)
            except ArgumentError as e:
                raise ArgumentError(f"{self.name}: argument {name!r}: {e}") from None
            keys.append(key)
            values.append(v)
        where = launch_device(keys, self.arg_names)
        target = self.metadata.get("target")
        if where is not None and not self.on_gpu:
            raise ArgumentError(
                f"{self.name} was compiled for the {target} but got GPU arrays; compile with "
                "target='cuda' to run on the GPU, or pass CPU arrays"
            )
        if where is None and self.on_gpu:
            cpu = [n for n, k in zip(self.arg_names, keys) if isinstance(k[0], str) and k[0][:1] == "*"]
            if cpu:
                raise ArgumentError(
                    f"{self.name} was compiled for {target} (the GPU) but {cpu[0]!r} is a CPU array; "
                    "pass CUDA tensors (torch: x.cuda()), or compile without target= to use the interpreter"
                )
        return self.launch(values, normalize_grid(grid), trace, where)

    def __getitem__(self, grid):
        return lambda *args, trace=None: self.run(grid, *args, trace=trace)

    def __repr__(self) -> str:
        md = self.metadata
        consts = ", ".join(f"{k}={v!r}" for k, v in md["constexprs"].items())
        stages = self.asm.available() if isinstance(self.asm, LazyAsm) else list(self.asm)
        passes = len(self._passes) if isinstance(self._passes, list) else "?"
        return (
            f"<CompiledKernel {self.name}({md['signature']}"
            + (f"; {consts}" if consts else "")
            + f") target={md['target']} stages=[{', '.join(stages)}] passes={passes}>"
        )


_LOC = re.compile(r'loc\("((?:[^"\\]|\\.)*)":(\d+):(\d+)\)\s*$')


def source_map_of(located_text: str) -> dict[int, tuple[str, int]]:
    """Map each line of IR printed with locations to its source line.

    The printer puts an op's location after its last line, so an op with regions (`scf.for`)
    gets its location on the closing brace; a stack of open braces carries it back to the
    op's first line too. Printing without locations yields the same lines, so the map applies
    to `asm["ttir"]` as is.
    """
    result: dict[int, tuple[str, int]] = {}
    openers: list[int] = []
    for number, line in enumerate(located_text.splitlines(), start=1):
        stripped = line.strip()
        m = _LOC.search(stripped)
        where = (m.group(1), int(m.group(2))) if m else None
        if stripped.startswith("}"):
            opener = openers[-1] if openers else None
            if not stripped.endswith("{") and openers:
                openers.pop()
            if where and opener is not None:
                result.setdefault(opener, where)
        elif stripped.endswith("{"):
            openers.append(number)
            continue
        if where:
            result[number] = where
    return dict(sorted(result.items()))


def _param_kind(fn: tl.KernelFunction) -> dict[str, bool]:
    return {name: name in fn.constexpr_names for name in fn.arg_names}


def _resolve_constexprs(fn: tl.KernelFunction, constexprs: dict | None) -> dict:
    values = {}
    for name, value in (constexprs or {}).items():
        if name not in fn.arg_names:
            raise TypeError(
                f"{fn.__name__} has no parameter {name!r} (given in constexprs); "
                f"its parameters are {', '.join(fn.arg_names)}"
            )
        values[name] = value.value if isinstance(value, tl.constexpr) else value
    for name in fn.arg_names:
        if name in fn.constexpr_names and name not in values:
            default = fn.signature.parameters[name].default
            if default is fn.signature.parameters[name].empty:
                raise TypeError(
                    f"{fn.__name__}: {name} is a tl.constexpr parameter without a default; "
                    f"pass constexprs={{{name!r}: ...}}"
                )
            values[name] = default.value if isinstance(default, tl.constexpr) else default
    return values


def _parse_type(fn_name: str, param: str, entry) -> tl.dtype:
    if isinstance(entry, tl.dtype):
        return entry
    try:
        return tl.dtype_from_signature(str(entry))
    except ValueError as e:
        raise TypeError(f"{fn_name}: parameter {param!r}: {e}") from None


def _resolve_signature(fn: tl.KernelFunction, signature, constexprs: dict) -> dict[str, tl.dtype]:
    """Signature as {param: tl.dtype} for the non-constexpr params, checking every param is covered."""
    runtime_params = [n for n in fn.arg_names if n not in constexprs]
    if signature is None:
        signature = {}
    if isinstance(signature, str):
        entries = [e.strip() for e in signature.split(",") if e.strip()]
        if len(entries) == len(fn.arg_names) and len(entries) != len(runtime_params):
            pairs = zip(fn.arg_names, entries)  # one entry per parameter, "constexpr" for constexprs
            signature = {n: e for n, e in pairs if e != "constexpr" or n not in constexprs}
        elif len(entries) == len(runtime_params):
            signature = dict(zip(runtime_params, entries))
        else:
            raise TypeError(
                f"{fn.__name__}: signature {signature!r} has {len(entries)} entries; give one per "
                f"non-constexpr parameter ({', '.join(runtime_params) or 'none'})"
            )
    elif not isinstance(signature, dict):
        raise TypeError('signature must be a string like "*fp32,*fp32,i32" or a dict {param: type}')
    result = {}
    for name, entry in signature.items():
        if name not in fn.arg_names:
            raise TypeError(f"{fn.__name__} has no parameter {name!r} (given in signature)")
        if entry == "constexpr":
            if name not in constexprs:
                raise TypeError(f"{fn.__name__}: {name} is marked constexpr; give its value in constexprs")
            continue
        if name in constexprs:
            raise TypeError(f"{fn.__name__}: {name} is a constexpr; remove it from signature")
        result[name] = _parse_type(fn.__name__, name, entry)
    missing = [n for n in runtime_params if n not in result]
    if missing:
        raise TypeError(
            f"{fn.__name__}: no type for {', '.join(missing)}; pass signature= with a type for "
            'each (e.g. "*fp32" for an array, "i32" for an int)'
        )
    return {name: result[name] for name in runtime_params}  # in parameter (= argument) order


def _digest(*parts) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(repr(part).encode())
        h.update(b"\0")
    return h.hexdigest()


def _ir_signature_name(t) -> str:
    """Signature spelling of an IR argument type (signedness is gone in IR: ints print as iN)."""
    from xdsl.dialects import builtin

    from kernellab.ir.tt import PointerType

    if isinstance(t, PointerType):
        return "*" + _ir_signature_name(t.pointee)
    if isinstance(t, builtin.IntegerType):
        return f"i{t.width.data}"
    names = {
        builtin.Float16Type: "fp16", builtin.BFloat16Type: "bf16", builtin.Float32Type: "fp32",
        builtin.Float64Type: "fp64", builtin.Float8E4M3FNType: "fp8e4nv",
        builtin.Float8E5M2Type: "fp8e5",
    }  # fmt: skip
    return names.get(type(t), str(t))


def _entry_function(module):
    from kernellab.ir.tt import entry_function  # xDSL loads only when IR is handled

    return entry_function(module)


# An op prefix that only IR of that stage contains; the latest stage whose marker appears wins.
_STAGE_MARKERS = {"ttir": "tt.", "ttgir": "ttg."}


def _stage_of_text(text: str, stages: list[str], markers: dict | None = None) -> str:
    """Which stage a piece of IR text belongs to (backends may give a regex per stage)."""
    if markers:
        for stage in reversed(stages):
            if stage in markers and re.search(markers[stage], text, re.M):
                return stage
    found = [s for s in stages if s in _STAGE_MARKERS and _STAGE_MARKERS[s] in text]
    return found[-1] if found else stages[0]


def _make_options(backend, target_name: str, fields: dict):
    if backend.make_options is not None:
        return backend.make_options(target_name, **fields)
    return CompileOptions(**fields)


def compile(
    src,
    signature=None,
    constexprs: dict | None = None,
    target: str | None = None,
    num_warps: int = 4,
    num_stages: int = 3,
    attrs: dict | None = None,
    force: bool = False,
    **options,
) -> CompiledKernel:
    """Compile a @kl.jit kernel (or IR text / a path to a .ttir file) without launching it.

    `signature` types the non-constexpr parameters ("*fp32,*fp32,i32" or {"x_ptr": "*fp32"});
    `constexprs` gives the tl.constexpr values; `attrs` adds specialization attributes
    ({"x_ptr": {"tt.divisibility": 16}}). IR text skips the stages up to and including its own.
    `target`: None (the interpreter), "sm_80", "sm_90", "sm_90a" or "cuda" (the visible GPU;
    sm_90 without one) — GPU targets need no GPU to compile. GPU compiles are cached on disk
    (`KERNELLAB_CACHE_DIR`); `force=True` (or KERNELLAB_ALWAYS_COMPILE=1) compiles anyway.
    """
    unknown = set(options) - OPTION_NAMES
    if unknown:
        raise TypeError(
            f"unknown compile option(s) {', '.join(sorted(unknown))}; known: "
            f"{', '.join(sorted(OPTION_NAMES))}"
        )
    backend = get_backend(target)
    if target is None:
        target_name = backend.name
    elif backend.resolve_target is not None:
        target_name = backend.resolve_target(str(target))
    else:
        target_name = str(target)
    opts = _make_options(backend, target_name, dict(num_warps=num_warps, num_stages=num_stages, **options))
    stages = backend.stages()
    times: dict[str, float] = {}
    cache_key = None

    if isinstance(src, tl.KernelFunction):
        consts = _resolve_constexprs(src, constexprs)
        sig = _resolve_signature(src, signature, consts)
        sig_text = ",".join(tl.signature_name(t) for t in sig.values())
        arg_names = list(sig)
        param_names = list(src.arg_names)
        if backend.disk_cache:
            from kernellab.runtime import cache as disk

            if not disk.cache_disabled():
                start = time.perf_counter()
                cache_key = disk.kernel_key(src, sig_text, consts, attrs, opts, target_name, VERSION)
                entry = None if force or disk.always_compile() else disk.default_cache().get(cache_key)
                if entry is not None:
                    return _from_cache(entry, backend, consts, attrs, arg_names, param_names,
                                       time.perf_counter() - start)  # fmt: skip
        prepare = getattr(backend, "prepare", None)  # e.g. start loading the GPU toolchain
        if prepare is not None:
            prepare(opts)
        from kernellab.frontend.codegen import generate_ttir

        start = time.perf_counter()
        artifact = generate_ttir(src, sig, consts, attrs)
        times["frontend"] = time.perf_counter() - start
        first = 0
        source_hash = (src.src, src.filename)
    elif isinstance(src, str):
        if signature is not None or constexprs or attrs:
            raise TypeError("signature, constexprs and attrs apply to Python kernels; IR text already fixes them")
        text, stage = _read_ir(src, list(stages), backend.stage_markers)
        if stage not in backend.parsers:
            raise ValueError(f"the {target_name} backend can't resume from {stage} text")
        artifact = backend.parsers[stage](text)
        first = list(stages).index(stage) + 1
        consts = {}
        source_hash = text
        arg_names = param_names = sig_text = None
        if _is_module(artifact):
            func = _entry_function(artifact)
            sig_text = ",".join(_ir_signature_name(t) for t in func.function_type.inputs.data)
            arg_names = param_names = [a.name_hint or f"arg{i}" for i, a in enumerate(func.args)]
    else:
        raise TypeError(
            f"compile() takes a @kl.jit kernel, IR text or a path to a .ttir file, not {type(src).__name__}"
        )

    from kernellab.ir import print_module

    asm: dict[str, str | bytes] = {}
    records: list = []
    stage_metadata: dict = dict(getattr(artifact, "metadata", None) or {})  # parsed LLVM IR/PTX
    located: dict[str, str] = {}
    keep_locations = backend.name != "interpreter"
    if first > 0:
        text_stage = list(stages)[first - 1]
        asm[text_stage] = print_module(artifact) if _is_module(artifact) else text  # reprinted: source_map matches it
    module = artifact if _is_module(artifact) else None
    for name, stage in list(stages.items())[first:]:
        start = time.perf_counter()
        try:
            out = stage(artifact, opts)
        except Exception as error:  # keep what the earlier stages made: the lab still shows it
            fields = {"target": target_name, **asdict(opts), "signature": sig_text,
                      "constexprs": consts, "attrs": attrs or {}}  # fmt: skip
            _attach_partial(error, name, asm, records, stage_metadata, module, located, times,
                            fields, arg_names, param_names)  # fmt: skip
            raise
        times[name] = time.perf_counter() - start
        artifact, asm[name] = out.artifact, out.text
        for record in out.passes:
            if not getattr(record, "stage", ""):
                try:
                    record.stage = name  # the stage whose pipeline ran it
                except AttributeError:  # a backend's own record type without the field
                    pass
        records.extend(out.passes)
        stage_metadata.update(out.metadata)
        if _is_module(artifact):
            module = artifact
            if keep_locations:  # later stages rewrite the module in place: print it now
                located[name] = print_module(artifact, locations=True)
    if module is not None:
        func_name = _entry_function(module).sym_name.data
    else:
        func_name = getattr(artifact, "name", None) or stage_metadata.get("name", "kernel")
    if arg_names is None:  # resumed from LLVM IR / PTX: arguments known from the PTX parameters
        from kernellab.backends.nvidia.launcher import _PTX_SIG

        params = stage_metadata.get("params", [])
        sig_text = ",".join(_PTX_SIG.get(p, p) for p in params)
        arg_names = param_names = [f"arg{i}" for i in range(len(params))]
    metadata = Metadata({
        "name": func_name,
        "target": target_name,
        **asdict(opts),
        "signature": sig_text,
        "constexprs": consts,
        "attrs": attrs or {},
        "hash": _digest(VERSION, source_hash, sig_text, sorted(consts.items(), key=str),
                        attrs, opts, target_name),
        "times": times,
        "kernellab_version": VERSION,
    })  # fmt: skip
    for key, value in stage_metadata.items():
        metadata.setdefault(key, value)
    if backend.disk_cache:
        metadata["cache_hit"] = False
        metadata["cache_key"] = cache_key
    launcher, restore, lazy = backend.launcher, backend.restore, LazyAsm(asm, backend.lazy_asm)
    if restore is not None:  # the launcher reads the final metadata (signature, options) too

        def make_launcher():
            return launcher(restore(lazy, metadata))

    else:

        def make_launcher():
            return launcher(artifact)

    ck = CompiledKernel(
        func_name, lazy, metadata, records, module, arg_names, param_names, make_launcher,
        located=located,
    )
    if cache_key is not None:
        from kernellab.runtime import cache as disk

        stored = {k: v for k, v in metadata.items() if k not in ("constexprs", "attrs")}
        stored["source_maps"] = {s: sorted(m.items()) for s, m in ck.source_maps.items()}
        disk.default_cache().put(cache_key, dict(asm), stored, records)
    return ck


def _attach_partial(error, failed, asm, records, stage_metadata, module, located, times, fields,
                    arg_names, param_names) -> None:
    """Give `error` (a stage failed) a `partial` attribute: a CompiledKernel of the stages that
    did compile (asm, passes, times), whose metadata names the `failed_stage` and the `error`.
    It can be shown, not launched."""
    if not asm:
        return
    name = stage_metadata.get("name", "kernel")
    if module is not None:
        try:
            name = _entry_function(module).sym_name.data
        except Exception:  # never hide the stage's own error behind this one
            pass
    reason = f"{type(error).__name__}: {error}"
    metadata = Metadata({"name": name, **fields, "times": dict(times), "kernellab_version": VERSION})
    for key, value in stage_metadata.items():
        metadata.setdefault(key, value)
    metadata.update(failed_stage=failed, error=reason)

    def make_launcher():
        raise RuntimeError(f"{name} did not compile past {list(asm)[-1]} ({failed} failed: {reason})")

    try:
        # module None: the failed stage may have half-rewritten it; .module parses asm instead
        error.partial = CompiledKernel(name, LazyAsm(dict(asm)), metadata, list(records), None,
                                       arg_names, param_names, make_launcher, located=dict(located))  # fmt: skip
    except (AttributeError, TypeError):  # an exception type that takes no attributes
        pass


def _is_module(artifact) -> bool:
    from xdsl.dialects.builtin import ModuleOp

    return isinstance(artifact, ModuleOp)


def _from_cache(entry, backend, consts, attrs, arg_names, param_names, seconds) -> CompiledKernel:
    """A CompiledKernel rebuilt from a disk-cache entry, without running any stage."""
    stored = dict(entry.metadata)
    maps = {
        stage: {int(line): (f, int(n)) for line, (f, n) in pairs}
        for stage, pairs in (stored.pop("source_maps", None) or {}).items()
    }
    metadata = Metadata(stored)
    metadata["constexprs"] = consts
    metadata["attrs"] = attrs or {}
    metadata["compile_times"] = stored.get("times", {})
    metadata["times"] = {"cache": seconds}
    metadata["cache_hit"] = True
    metadata["cache_key"] = entry.key
    asm = LazyAsm(entry.asm, backend.lazy_asm)

    def make_launcher():
        return backend.launcher(backend.restore(asm, metadata))

    return CompiledKernel(
        metadata["name"], asm, metadata, entry.load_passes, None, arg_names, param_names,
        make_launcher, source_maps=maps,
    )


_EXTENSIONS = {"ll": "llir", "mlir": None}


def _read_ir(src: str, stages: list[str], markers: dict | None = None) -> tuple[str, str]:
    """(text, stage) of IR given as text or as a path whose extension names the stage."""
    ext = os.path.splitext(src)[1].lstrip(".")
    if ext and "\n" not in src:
        stage = _EXTENSIONS.get(ext, ext)
        with open(src) as f:
            text = f.read()
        if stage is None:
            return text, _stage_of_text(text, stages, markers)
        if stage not in stages:
            raise ValueError(f"can't compile {src!r}: resumable stages are {', '.join(stages)}")
        return text, stage
    return src, _stage_of_text(src, stages, markers)


__all__ = ["compile", "CompiledKernel", "CompileOptions", "source_map_of"]
