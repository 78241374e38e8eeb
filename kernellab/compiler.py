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
from kernellab.runtime.args import ArgumentError, normalize_grid, runtime_value

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


class CompiledKernel:
    """A kernel compiled for one specialization: every stage's text, pass records, and a launcher.

    `asm[stage]` is the text of each stage, `passes` the pass records (IR after each pass, time,
    changed?), `metadata` the name, options, signature, hash and per-stage times. Launch with
    `ck[grid](*args)` or `ck.run(grid, *args)`, passing one value per kernel argument (constexpr
    parameters are already baked in).
    """

    def __init__(self, name, asm, metadata, passes, module, arg_names, param_names, make_launcher):
        self.name = name
        self.asm = asm
        self.metadata = metadata
        self.passes = passes
        self.module = module
        self.arg_names = arg_names
        self.param_names = param_names
        self._make_launcher = make_launcher
        self._launcher = None
        self._source_map = None

    @property
    def source_map(self) -> dict[int, tuple[str, int]]:
        """Line of `asm["ttir"]` (1-based) → (source file, source line) of the code that made it."""
        if self._source_map is None:
            from kernellab.ir import print_module

            self._source_map = source_map_of(print_module(self.module, locations=True))
        return self._source_map

    def launch(self, args: list, grid: tuple[int, int, int], trace=None):
        """Run with already-converted arguments (the JIT's warm path)."""
        if self._launcher is None:
            self._launcher = self._make_launcher()
        return self._launcher.run(args, grid, trace)

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
        values = []
        for name, value in zip(self.arg_names, args):
            try:
                values.append(runtime_value(value))
            except ArgumentError as e:
                raise ArgumentError(f"{self.name}: argument {name!r}: {e}") from None
        return self.launch(values, normalize_grid(grid), trace)

    def __getitem__(self, grid):
        return lambda *args, trace=None: self.run(grid, *args, trace=trace)

    def __repr__(self) -> str:
        md = self.metadata
        consts = ", ".join(f"{k}={v!r}" for k, v in md["constexprs"].items())
        return (
            f"<CompiledKernel {self.name}({md['signature']}"
            + (f"; {consts}" if consts else "")
            + f") target={md['target']} stages=[{', '.join(self.asm)}] passes={len(self.passes)}>"
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
    from kernellab.ir.tt import FuncOp

    funcs = [op for op in module.walk() if isinstance(op, FuncOp)]
    public = [f for f in funcs if f.sym_visibility is None or f.sym_visibility.data == "public"]
    if not public:
        raise ValueError("the IR has no public tt.func to launch")
    return public[0]


# An op prefix that only IR of that stage contains; the latest stage whose marker appears wins.
_STAGE_MARKERS = {"ttir": "tt.", "ttgir": "ttg."}


def _stage_of_text(text: str, stages: list[str]) -> str:
    """Which stage a piece of IR text belongs to."""
    found = [s for s in stages if s in _STAGE_MARKERS and _STAGE_MARKERS[s] in text]
    return found[-1] if found else stages[0]


def compile(
    src,
    signature=None,
    constexprs: dict | None = None,
    target: str | None = None,
    num_warps: int = 4,
    num_stages: int = 3,
    attrs: dict | None = None,
    **options,
) -> CompiledKernel:
    """Compile a @kl.jit kernel (or IR text / a path to a .ttir file) without launching it.

    `signature` types the non-constexpr parameters ("*fp32,*fp32,i32" or {"x_ptr": "*fp32"});
    `constexprs` gives the tl.constexpr values; `attrs` adds specialization attributes
    ({"x_ptr": {"tt.divisibility": 16}}). IR text skips the stages up to and including its own.
    """
    unknown = set(options) - OPTION_NAMES
    if unknown:
        raise TypeError(
            f"unknown compile option(s) {', '.join(sorted(unknown))}; known: "
            f"{', '.join(sorted(OPTION_NAMES))}"
        )
    opts = CompileOptions(num_warps=num_warps, num_stages=num_stages, **options)
    backend = get_backend(target)
    stages = backend.stages()
    target_name = backend.name if target is None else target
    times: dict[str, float] = {}

    if isinstance(src, tl.KernelFunction):
        from kernellab.frontend.codegen import generate_ttir

        consts = _resolve_constexprs(src, constexprs)
        sig = _resolve_signature(src, signature, consts)
        start = time.perf_counter()
        artifact = generate_ttir(src, sig, consts, attrs)
        times["frontend"] = time.perf_counter() - start
        first = 0
        sig_text = ",".join(tl.signature_name(t) for t in sig.values())
        source_hash = (src.src, src.filename)
        arg_names = list(sig)
        param_names = list(src.arg_names)
    elif isinstance(src, str):
        if signature is not None or constexprs or attrs:
            raise TypeError("signature, constexprs and attrs apply to Python kernels; IR text already fixes them")
        text, stage = _read_ir(src, list(stages))
        if stage not in backend.parsers:
            raise ValueError(f"the {target_name} backend can't resume from {stage} text")
        artifact = backend.parsers[stage](text)
        first = list(stages).index(stage) + 1
        consts = {}
        func = _entry_function(artifact)
        sig_text = ",".join(_ir_signature_name(t) for t in func.function_type.inputs.data)
        source_hash = text
        arg_names = param_names = [a.name_hint or f"arg{i}" for i, a in enumerate(func.args)]
    else:
        raise TypeError(
            f"compile() takes a @kl.jit kernel, IR text or a path to a .ttir file, not {type(src).__name__}"
        )

    from xdsl.dialects.builtin import ModuleOp

    from kernellab.ir import print_module

    asm: dict[str, str | bytes] = {}
    records: list = []
    if first > 0:
        asm[list(stages)[first - 1]] = print_module(artifact)  # reprinted: source_map matches it
    module = artifact
    for name, stage in list(stages.items())[first:]:
        start = time.perf_counter()
        out = stage(artifact, opts)
        times[name] = time.perf_counter() - start
        artifact, asm[name] = out.artifact, out.text
        records.extend(out.passes)
        if isinstance(artifact, ModuleOp):
            module = artifact
    func_name = _entry_function(module).sym_name.data
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
    launcher = backend.launcher
    return CompiledKernel(
        func_name, asm, metadata, records, module, arg_names, param_names, lambda: launcher(artifact)
    )


def _read_ir(src: str, stages: list[str]) -> tuple[str, str]:
    """(text, stage) of IR given as text or as a path whose extension names the stage."""
    ext = os.path.splitext(src)[1].lstrip(".")
    if ext and "\n" not in src:
        if ext not in stages:
            raise ValueError(f"can't compile {src!r}: resumable stages are {', '.join(stages)}")
        with open(src) as f:
            return f.read(), ext
    return src, _stage_of_text(src, stages)


__all__ = ["compile", "CompiledKernel", "CompileOptions", "source_map_of"]
