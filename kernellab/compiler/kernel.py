"""`CompiledKernel`: one specialization's stages, pass records, metadata and launcher."""

from __future__ import annotations

import re

from kernellab.backends.arguments import ArgumentError, launch_device, normalize_grid, specialize
from kernellab.backends.metadata import KernelMetadata
from kernellab.compiler.specialization import match_parameters


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
    changed?), `metadata` the `KernelMetadata` (name, options, signature, hash, per-stage
    times, resources), `source_maps` per IR stage, `located_asm` the IR printed with locations. Launch with
    `ck[grid](*args)` or `ck.run(grid, *args)`, passing one value per kernel argument (constexpr
    parameters are already baked in).
    """

    def __init__(self, name: str, asm: LazyAsm, metadata: KernelMetadata, passes, module, param_names: list[str],
                 make_launcher, located_asm: dict[str, str] | None = None, source_maps=None):  # fmt: skip
        self.name = name
        self.asm = asm
        self.metadata = metadata
        self._passes = passes
        self._module = module
        self.param_names = param_names  # every Python parameter, constexprs included
        self._make_launcher = make_launcher
        self._launcher = None
        # stage → its IR printed with source locations (what `source_maps` is read from); the
        # viewer reads it, empty on a cache hit, whose maps come from the cache entry
        self.located_asm: dict[str, str] = dict(located_asm or {})
        self._source_maps = dict(source_maps or {})
        # the @kl.jit function compiled (kl.compile sets it; None for IR text): its source is
        # what the viewer shows and links every stage's lines to, without compiling again
        self.function = None

    @property
    def arg_names(self) -> list[str]:
        """The kernel's arguments (its runtime parameters), in order."""
        return list(self.metadata.signature)

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
        for stage, text in self.located_asm.items():
            if stage not in self._source_maps:
                self._source_maps[stage] = source_map_of(text)
        if "ttir" not in self._source_maps and self._module is not None and not self.located_asm:
            from kernellab.ir import print_module

            self._source_maps["ttir"] = source_map_of(print_module(self._module, locations=True))
        return self._source_maps

    @property
    def source_map(self) -> dict[int, tuple[str, int]]:
        """Line of `asm["ttir"]` (1-based) → (source file, source line) of the code that made it."""
        return self.source_maps.get("ttir", {})

    def _get_launcher(self):
        launcher = self._make_launcher()
        if hasattr(launcher, "arg_names"):  # the GPU launcher names arguments in its errors
            launcher.arg_names = self.arg_names
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
        return self.metadata.target.startswith("sm_")

    # -- Triton's handle API: `_init_handles()`, then `n_regs`, `n_spills`, `n_max_threads` ------

    def _init_handles(self) -> None:
        """Load the kernel and read its resources, as Triton's tutorials do before sizing a
        persistent grid from registers and shared memory. A GPU kernel is loaded onto its
        device. An interpreter kernel answers as `driver.active` does (the visible GPU, else the
        default target, sm_90): its TTIR is compiled once for that target (no GPU needed) and the
        registers, spills and shared memory of that compile fill this kernel's metadata."""
        if self.on_gpu:
            self._launcher or self._get_launcher()
            return
        if self.metadata.registers is not None:
            return
        from kernellab.compiler import compile

        options = {k: v for k, v in self.metadata.options.as_dict().items() if k != "target"}
        gpu = compile(self.asm["ttir"], target="cuda", **options).metadata  # sm_90 without a GPU
        self.metadata.record({"shared": gpu.shared, "registers": gpu.registers, "spills": gpu.spills,
                              "max_threads": gpu.max_threads, "resources_of": gpu.target})  # fmt: skip

    @property
    def n_regs(self) -> int:
        self._init_handles()
        return self.metadata.registers

    @property
    def n_spills(self) -> int:
        self._init_handles()
        return self.metadata.spills

    @property
    def n_max_threads(self) -> int:
        self._init_handles()
        return self.metadata.max_threads

    def run(self, grid, *args, trace=None):
        """Launch on `grid` (arrays are written in place).

        Pass one value per kernel argument, or, as Triton allows, one per Python parameter
        including the constexprs (whose values were fixed at compile time and are skipped).
        """
        values, where = self._converted(args)
        return self.launch(values, normalize_grid(grid), trace, where)

    def bound(self, grid, *args):
        """A function of no arguments that launches on `grid` with `args`, checked and converted
        once: what a benchmark calls thousands of times (`run` checks them on every call)."""
        values, where = self._converted(args)
        grid = normalize_grid(grid)
        launcher = self._launcher or self._get_launcher()
        if where is None:
            return lambda: launcher.run(values, grid)
        if all(grid) and hasattr(launcher, "bind"):  # the GPU's warm path: one driver call
            launch = launcher.bind(where)
            return lambda: launch(*grid, *values)
        return lambda: launcher.run(values, grid, None, where)

    def _converted(self, args) -> tuple[list, tuple | None]:
        """The launcher's values for `args` and where they live (None: host memory)."""
        arg_names = self.arg_names
        by_name = match_parameters(self.param_names, arg_names, args)
        if by_name is None:
            raise TypeError(f"{self.name} takes {len(arg_names)} arguments ({', '.join(arg_names)}), got {len(args)}")
        keys, values = [], []
        for name in arg_names:
            value = by_name[name]
            try:
                key, v = specialize(value, False, False)
            except ArgumentError as e:
                raise ArgumentError(f"{self.name}: argument {name!r}: {e}") from None
            keys.append(key)
            values.append(v)
        where = launch_device(keys, arg_names)
        target = self.metadata.target
        if where is not None and not self.on_gpu:
            raise ArgumentError(
                f"{self.name} was compiled for the {target} but got GPU arrays; compile with "
                "target='cuda' to run on the GPU, or pass CPU arrays"
            )
        if where is None and self.on_gpu:
            cpu = [n for n, k in zip(arg_names, keys) if isinstance(k[0], str) and k[0][:1] == "*"]
            if cpu:
                raise ArgumentError(
                    f"{self.name} was compiled for {target} (the GPU) but {cpu[0]!r} is a CPU array; "
                    "pass CUDA tensors (torch: x.cuda()), or compile without target= to use the interpreter"
                )
        return values, where

    def __getitem__(self, grid):
        return lambda *args, trace=None: self.run(grid, *args, trace=trace)

    def __repr__(self) -> str:
        md = self.metadata
        consts = ", ".join(f"{k}={v!r}" for k, v in md.constexprs.items())
        stages = self.asm.available() if isinstance(self.asm, LazyAsm) else list(self.asm)
        passes = len(self._passes) if isinstance(self._passes, list) else "?"
        return (
            f"<CompiledKernel {self.name}({md.signature}"
            + (f"; {consts}" if consts else "")
            + f") target={md.target} stages=[{', '.join(stages)}] passes={passes}>"
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




__all__ = ["CompiledKernel", "LazyAsm", "source_map_of"]
