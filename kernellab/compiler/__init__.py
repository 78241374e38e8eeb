"""`kl.compile`: turn a kernel (or IR text of a stage) into a CompiledKernel, stage by stage.

The backend's stage dict is run in order and every stage's text is kept in `asm`, every pass's
record in `passes`, and each stage's time in `metadata.times`; each stage's facts land in the
kernel's `KernelMetadata`, so nothing the compiler did is hidden. Compiling needs no device;
launching goes through the backend's launcher. GPU compiles go through the disk cache
(compiler/cache.py).
"""

from __future__ import annotations

import hashlib
import os
import re
import time

from kernellab.backends import get_backend
from kernellab.backends.extern_libs import fingerprint, linked
from kernellab.backends.metadata import KernelMetadata
from kernellab.backends.options import OPTION_NAMES, CompileOptions
from kernellab.compiler.kernel import CompiledKernel, LazyAsm, source_map_of
from kernellab.compiler.specialization import resolve_constexprs, resolve_signature
from kernellab.language import core as tl
from kernellab.language.signature import Signature

VERSION = "0.1.0"


def _digest(*parts) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(repr(part).encode())
        h.update(b"\0")
    return h.hexdigest()


def _ir_type_spelling(t) -> str:
    """Signature spelling of an IR argument type (signedness is gone in IR: ints print as iN)."""
    from xdsl.dialects import builtin

    from kernellab.ir.tt import PointerType

    if isinstance(t, PointerType):
        return "*" + _ir_type_spelling(t.pointee)
    if isinstance(t, builtin.IntegerType):
        return f"i{t.width.data}"
    names = {
        builtin.Float16Type: "fp16", builtin.BFloat16Type: "bf16", builtin.Float32Type: "fp32",
        builtin.Float64Type: "fp64", builtin.Float8E4M3FNType: "fp8e4nv",
        builtin.Float8E5M2Type: "fp8e5", builtin.Float8E4M3FNUZType: "fp8e4b8",
        builtin.Float8E5M2FNUZType: "fp8e5b16",
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


def _make_options(backend, target_name: str, fields: dict) -> CompileOptions:
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

    `signature` types the non-constexpr parameters: a `Signature`, text ("*fp32,*fp32,i32") or
    a dict ({"x_ptr": "*fp32"}); `constexprs` gives the tl.constexpr values; `attrs` adds
    specialization attributes ({"x_ptr": {"tt.divisibility": 16}}). IR text skips the stages
    up to and including its own. `target`: None (the interpreter), "sm_80", "sm_90", "sm_90a"
    or "cuda" (the visible GPU; sm_90 without one) — GPU targets need no GPU to compile. GPU
    compiles are cached on disk (`KERNELLAB_CACHE_DIR`); `force=True` (or
    KERNELLAB_ALWAYS_COMPILE=1) compiles anyway. `**options` are the launch options
    (`num_ctas`, `maxnreg`, `debug`, ..., and `extern_libs={'libdevice': path}`, which NVIDIA
    targets link: backends/extern_libs.py).
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
    metadata = KernelMetadata(target=target_name, options=opts, attrs=attrs or {}, kernellab_version=VERSION)
    cache_key = None

    if isinstance(src, tl.KernelFunction):
        consts = resolve_constexprs(src, constexprs)
        sig = resolve_signature(src, signature, consts)
        param_names = list(src.arg_names)
        if backend.disk_cache:
            from kernellab.compiler import cache as disk

            if not disk.cache_disabled():
                start = time.perf_counter()
                cache_key = disk.kernel_key(src, str(sig), consts, attrs, opts, target_name, VERSION)
                entry = None if force or disk.always_compile() else disk.default_cache().get(cache_key)
                if entry is not None:
                    ck = _from_cache(entry, backend, sig, consts, attrs, param_names, time.perf_counter() - start)
                    ck.function = src
                    return ck
        if backend.prepare is not None:  # e.g. start loading the GPU toolchain
            backend.prepare(opts)
        from kernellab.frontend.codegen import generate_ttir

        start = time.perf_counter()
        artifact = generate_ttir(src, sig, consts, attrs, extern_libs=linked(opts.extern_libs, backend.extern_libs))
        metadata.times["frontend"] = time.perf_counter() - start
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
        sig = param_names = None
        if _is_module(artifact):
            func = _entry_function(artifact)
            names = [a.name_hint or f"arg{i}" for i, a in enumerate(func.args)]
            sig = Signature(zip(names, [_ir_type_spelling(t) for t in func.function_type.inputs.data]))
            param_names = names
        else:  # LLVM IR / PTX: what the parser read off the text
            metadata.record(artifact.metadata)
    else:
        raise TypeError(
            f"compile() takes a @kl.jit kernel, IR text or a path to a .ttir file, not {type(src).__name__}"
        )
    metadata.constexprs = consts
    if sig is not None:
        metadata.signature = sig

    from kernellab.ir import print_module

    asm: dict[str, str | bytes] = {}
    records: list = []
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
            _attach_partial(error, name, asm, records, metadata, module, located, param_names)
            raise
        metadata.times[name] = time.perf_counter() - start
        artifact, asm[name] = out.artifact, out.text
        for record in out.passes:
            if not getattr(record, "stage", ""):
                try:
                    record.stage = name  # the stage whose pipeline ran it
                except AttributeError:  # a backend's own record type without the field
                    pass
        records.extend(out.passes)
        metadata.record(out.metadata)
        if _is_module(artifact):
            module = artifact
            if keep_locations:  # later stages rewrite the module in place: print it now
                located[name] = print_module(artifact, locations=True)
    if module is not None:
        metadata.name = _entry_function(module).sym_name.data
    if sig is None and backend.arguments_of is not None:  # resumed from LLVM IR / PTX
        metadata.signature = backend.arguments_of(metadata)
    if param_names is None:
        param_names = list(metadata.signature)
    metadata.hash = _digest(VERSION, source_hash, str(metadata.signature), sorted(consts.items(), key=str),
                            attrs, opts, fingerprint(opts.extern_libs), target_name)  # fmt: skip
    if backend.disk_cache:
        metadata.cache_hit = False
        metadata.cache_key = cache_key
    launcher, restore, lazy = backend.launcher, backend.restore, LazyAsm(asm, backend.lazy_asm)
    if restore is not None:  # the launcher reads the final metadata (signature, options) too

        def make_launcher():
            return launcher(restore(lazy, metadata))

    else:

        def make_launcher():
            return launcher(artifact)

    ck = CompiledKernel(metadata.name, lazy, metadata, records, module, param_names, make_launcher,
                        located_asm=located)  # fmt: skip
    if isinstance(src, tl.KernelFunction):
        ck.function = src
    if cache_key is not None:
        from kernellab.compiler import cache as disk

        stored = {k: v for k, v in metadata.items() if k not in ("constexprs", "attrs")}
        stored["source_maps"] = {s: sorted(m.items()) for s, m in ck.source_maps.items()}
        disk.default_cache().put(cache_key, dict(asm), stored, records)
    return ck


def _attach_partial(error, failed, asm, records, metadata, module, located, param_names) -> None:
    """Give `error` (a stage failed) a `partial` attribute: a CompiledKernel of the stages that
    did compile (asm, passes, times), whose metadata names the `failed_stage` and the `error`.
    It can be shown, not launched."""
    if not asm:
        return
    if module is not None:
        try:
            metadata.name = _entry_function(module).sym_name.data
        except Exception:  # never hide the stage's own error behind this one
            pass
    name = metadata.name
    reason = f"{type(error).__name__}: {error}"
    metadata.failed_stage, metadata.error = failed, reason

    def make_launcher():
        raise RuntimeError(f"{name} did not compile past {list(asm)[-1]} ({failed} failed: {reason})")

    try:
        # module None: the failed stage may have half-rewritten it; .module parses asm instead
        error.partial = CompiledKernel(name, LazyAsm(dict(asm)), metadata, list(records), None,
                                       param_names or list(metadata.signature), make_launcher,
                                       located_asm=dict(located))  # fmt: skip
    except (AttributeError, TypeError):  # an exception type that takes no attributes
        pass


def _is_module(artifact) -> bool:
    from xdsl.dialects.builtin import ModuleOp

    return isinstance(artifact, ModuleOp)


def _from_cache(entry, backend, sig, consts, attrs, param_names, seconds) -> CompiledKernel:
    """A CompiledKernel rebuilt from a disk-cache entry, without running any stage."""
    stored = dict(entry.metadata)
    maps = {
        stage: {int(line): (f, int(n)) for line, (f, n) in pairs}
        for stage, pairs in (stored.pop("source_maps", None) or {}).items()
    }
    options = _make_options(backend, stored["target"], {k: stored[k] for k in OPTION_NAMES})
    metadata = KernelMetadata(options=options, signature=sig, constexprs=consts, attrs=attrs or {})
    metadata.record({k: v for k, v in stored.items() if k not in ("signature", *OPTION_NAMES)})
    metadata.target = stored["target"]
    metadata.compile_times = stored.get("times", {})
    metadata.times = {"cache": seconds}
    metadata.cache_hit = True
    metadata.cache_key = entry.key
    asm = LazyAsm(entry.asm, backend.lazy_asm)

    def make_launcher():
        return backend.launcher(backend.restore(asm, metadata))

    return CompiledKernel(metadata.name, asm, metadata, entry.load_passes, None, param_names,
                          make_launcher, source_maps=maps)  # fmt: skip

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


__all__ = [
    "compile", "CompiledKernel", "CompileOptions", "KernelMetadata", "Signature", "source_map_of", "VERSION",
]  # fmt: skip
