"""`%%kernel`: compile the kernel a notebook cell defines and show every stage.

    %load_ext kernellab

    %%kernel --signature "*fp32,*fp32,*fp32,i32" --constexprs BLOCK=1024
    def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
        ...

The cell body is ordinary Python run in the notebook's namespace (`tl`, `kl` and `np` are there
without importing); `@kl.jit` is optional on the kernel. The source is registered with
`linecache` under `<kernel-cell-N>`, so the compiler (and `inspect`) read it like a file and
errors point at cell lines: line 1 is the `%%kernel` line itself, line 2 the first line of the
body. After the cell, the kernel is a `@kl.jit` kernel in the namespace, ready to launch.

Kernel errors render as the source line with a caret, no Python traceback, and the cell fails;
a bad flag is an IPython UsageError. `%%kernel?` shows every option.
"""

from __future__ import annotations

import ast
import hashlib
import linecache
import shlex
import time
from collections import OrderedDict

import numpy as np
from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, magics_class, no_var_expand
from IPython.core.magic_arguments import argument, magic_arguments

import kernellab as kl
import kernellab.language as tl
from kernellab.lab.bundle import IR_STAGES
from kernellab.lab.compiling import compile_for_view
from kernellab.lab.kernel_view import KernelView

TARGETS = ("sm_90", "sm_80", "cpu", "gfx942", "gfx950", "interpreter", "auto")
_CACHE_SIZE = 64


class KernelCheckError(AssertionError):
    """`--check` found the kernel's output different from the reference (no traceback shown)."""

    def _render_traceback_(self) -> list[str]:
        return str(self).splitlines()


def _parse_line(parser, line: str):
    """Flags split as a shell would (quotes removed), then parsed; errors are UsageErrors."""
    try:
        argv = shlex.split(line, posix=True)
    except ValueError as e:
        raise UsageError(f"%%kernel {line.strip()!r}: {e}") from None
    return parser.parse_args(argv)


def _cell_filename(body: str, registry: dict[str, str]) -> str:
    """`<kernel-cell-N>`: the same N for the same body, so cached compiles keep their mapping."""
    digest = hashlib.sha256(body.encode()).hexdigest()
    if digest not in registry:
        registry[digest] = f"<kernel-cell-{len(registry) + 1}>"
    return registry[digest]


def register_source(filename: str, text: str) -> None:
    """Make `text` readable as `filename` by linecache (inspect.getsource, error rendering)."""
    lines = text.splitlines(keepends=True)
    # mtime None: linecache.checkcache never evicts it (there is no file to compare with)
    linecache.cache[filename] = (len(text), None, lines, filename)


def parse_keywords(text: str, namespace: dict, what: str) -> dict:
    """`A=1, B=2.0, C=some_name` → {"A": 1, "B": 2.0, "C": namespace value}; values are Python
    expressions evaluated in the notebook's namespace."""
    text = (text or "").strip()
    if not text:
        return {}
    call = _parse_expression(
        f"f({text})",
        f"{what} {text!r}: write NAME=VALUE pairs separated by commas, e.g. BLOCK=1024,NUM_WARPS=4",
    )
    if call.args or not isinstance(call, ast.Call) or any(k.arg is None for k in call.keywords):
        raise UsageError(f"{what} {text!r}: every entry must be NAME=VALUE")
    values = {}
    for keyword in call.keywords:
        expr = ast.Expression(keyword.value)
        try:
            values[keyword.arg] = eval(compile(expr, f"<{what}>", "eval"), namespace)
        except Exception as e:
            raise UsageError(
                f"{what}: can't evaluate {keyword.arg}={ast.unparse(keyword.value)}: {e}"
            ) from None
    return values


def _split_names(text: str) -> list[str]:
    """`x, y, out, n` → expressions (commas inside brackets don't split)."""
    node = _parse_expression(
        f"({text},)", f"--args {text!r}: give names (or expressions) separated by commas"
    )
    return [ast.unparse(e) for e in node.elts]


def _parse_expression(source: str, usage: str) -> ast.expr:
    """`source` as a Python expression, or a UsageError that says how to write the option."""
    try:
        return ast.parse(source, mode="eval").body
    except SyntaxError:
        raise UsageError(usage) from None


def _evaluate(expr: str, namespace: dict, what: str, extra: dict | None = None):
    try:
        return eval(compile(expr, f"<{what}>", "eval"), namespace, dict(extra or {}))
    except Exception as e:
        raise UsageError(f"{what}: can't evaluate {expr!r}: {type(e).__name__}: {e}") from None


def _underlying_jit(obj):
    """The JITFunction inside `obj` (itself, or under autotune/heuristics wrappers; a real
    `triton.jit` kernel as its kernellab twin), or None."""
    from kernellab.runtime.jit import JITFunction
    from kernellab.triton_compat import from_triton, is_triton_kernel

    if is_triton_kernel(obj):
        obj = from_triton(obj)

    seen = 0
    while obj is not None and seen < 8:
        if isinstance(obj, JITFunction):
            return obj
        obj = getattr(obj, "fn", None)
        seen += 1
    return None


def _is_cuda(value) -> bool:
    if getattr(value, "is_cuda", False):
        return True
    return hasattr(value, "__cuda_array_interface__") and not hasattr(value, "__array_interface__")


@magics_class
class KernelMagics(Magics):
    """The `%%kernel` cell magic (load with `%load_ext kernellab`)."""

    def __init__(self, shell=None, **kwargs):
        super().__init__(shell=shell, **kwargs)
        self._cells: dict[str, str] = {}
        self._compiled: OrderedDict = OrderedDict()
        self.last = None  # the last (KernelView, jit kernel) shown, for tests and tools

    # -- the magic -------------------------------------------------------------------------

    @magic_arguments(name="%kernel")
    @argument(
        "--signature",
        "-s",
        default=None,
        help='Types of the non-constexpr parameters, e.g. "*fp32,*fp32,*fp32,i32".',
    )
    @argument(
        "--constexprs",
        "-c",
        default="",
        help="tl.constexpr values: NAME=VALUE,... (Python expressions, evaluated in the notebook).",
    )
    @argument(
        "--args",
        "-a",
        default=None,
        help="Notebook variables for the kernel's parameters, in order (constexprs may be left "
        "out): the signature is inferred from them as a launch would; needed by --grid.",
    )
    @argument(
        "--name", "-n", default=None, help="Which kernel to compile when the cell defines several."
    )
    @argument(
        "--target",
        "-t",
        default="auto",
        choices=TARGETS,
        help="sm_90, sm_80 (every stage through PTX/SASS; no GPU needed), cpu (native code for "
        "this machine: --grid runs it there), gfx942/gfx950 (AMD, compile-only) or interpreter "
        "(TTIR only). Default: sm_90 when the NVIDIA backend is available.",
    )
    @argument("--num-warps", "-w", type=int, default=None, help="Warps per program (default 4).")
    @argument(
        "--num-stages", type=int, default=None, help="Software-pipelining stages (default 3)."
    )
    @argument(
        "--stages",
        default=None,
        help="Comma-separated stage tabs to show: source,ttir,ttgir,llir,ptx,sass "
        "(Passes, Resources and Timings are always shown).",
    )
    @argument(
        "--grid",
        "-g",
        default=None,
        help='Run the kernel on this grid after compiling, e.g. "(kl.cdiv(n, BLOCK),)"; '
        "constexpr names may be used. GPU when the --args are CUDA tensors, else the interpreter.",
    )
    @argument(
        "--check",
        default=None,
        help='After the run, compare an output with a reference: "out=x+y" '
        "(kl.testing.assert_close; the cell fails if they differ).",
    )
    @argument(
        "--atol", type=float, default=None, help="Absolute tolerance of --check (default 1e-2)."
    )
    @argument("--rtol", type=float, default=None, help="Relative tolerance of --check (default 0).")
    @argument(
        "--bench",
        default=None,
        help='Time the kernel launch against a reference: "torch: x + y" '
        "(label: expression), with kl.testing.do_bench_interleaved (four rounds, the order "
        "reversed every other round); shows both, the ratio, and on a GPU its clock and power.",
    )
    @argument("--warmup", type=float, default=25, help="--bench warm-up time in ms per round (default 25).")
    @argument("--rep", type=float, default=100, help="--bench measuring time in ms per round (default 100).")
    @argument("-f", "--force", action="store_true", help="Compile again, bypassing the caches.")
    @argument(
        "-q",
        "--quiet",
        action="store_true",
        help="Don't show the viewer (still compiles and runs).",
    )
    @no_var_expand
    @cell_magic
    def kernel(self, line, cell):
        """Compile the kernel this cell defines and show its stages, passes and resources."""
        args = _parse_line(self.kernel.parser, line)
        self._validate(args)
        ns = self.shell.user_ns
        ns.setdefault("tl", tl)
        ns.setdefault("kl", kl)
        ns.setdefault("np", np)

        filename = _cell_filename(cell, self._cells)
        register_source(filename, "# %%kernel\n" + cell)
        code = compile("\n" + cell, filename, "exec")  # line 1 is the %%kernel line
        exec(code, ns)

        name, jit = self._pick_kernel(cell, filename, ns, args.name)
        params = list(jit.arg_names)
        constexprs = parse_keywords(args.constexprs, ns, "--constexprs")
        unknown = [k for k in constexprs if k not in params]
        if unknown:
            raise UsageError(
                f"--constexprs: {name} has no parameter {', '.join(unknown)}; its parameters are {', '.join(params)}"
            )

        values = None
        signature, attrs = args.signature, None
        if args.args is not None:
            values = self._bind_values(jit, args.args, constexprs, ns)
            if signature is None:
                signature, constexprs, attrs = self._infer(jit, values, constexprs)
        elif signature is None:
            runtime = [p for p in params if p not in constexprs and p not in jit.constexpr_names]
            if runtime:
                raise UsageError(
                    f'{name}: give --signature (e.g. "{",".join("*fp32" for _ in runtime)}") or '
                    f"--args with notebook variables for {', '.join(runtime)}"
                )
            signature = {}
        self._check_signature(jit, signature, constexprs)

        options = {}
        if args.num_warps is not None:
            options["num_warps"] = args.num_warps
        if args.num_stages is not None:
            options["num_stages"] = args.num_stages
        target = None if args.target == "auto" else args.target
        ck, notes, cache_hit = self._compile(
            cell, name, jit, signature, constexprs, attrs, target, options, args.force
        )

        stages = None
        if args.stages:  # the source is always shown: it is what the other tabs point back to
            stages = ["source"] + [s for s in args.stages if s != "source"]
        view = KernelView(ck, fn=jit, notes=notes, cache_hit=cache_hit,
                          source=(f"%%kernel {line.strip()}\n{cell}", filename, 1), stages=stages)  # fmt: skip
        jit._kl_lab_last = ck
        self.last = (view, jit)
        from IPython.display import display

        if not args.quiet:
            display(view)

        if args.grid is not None:
            self._run(args, jit, name, values, constexprs, options, ns)

    # -- steps -----------------------------------------------------------------------------

    def _validate(self, args) -> None:
        if args.grid is not None and args.args is None:
            raise UsageError(
                "--grid runs the kernel, so it needs --args with the notebook variables to pass"
            )
        if args.check is not None and args.grid is None:
            raise UsageError("--check compares the result of a run: give --grid (and --args) too")
        if args.bench is not None and args.grid is None:
            raise UsageError("--bench times a launch: give --grid (and --args) too")
        if args.num_warps is not None and (
            args.num_warps < 1 or args.num_warps & (args.num_warps - 1)
        ):
            raise UsageError(f"--num-warps must be a power of two, got {args.num_warps}")
        if args.num_stages is not None and args.num_stages < 1:
            raise UsageError(f"--num-stages must be at least 1, got {args.num_stages}")
        if args.stages is not None:
            names = [s.strip().lower() for s in args.stages.split(",") if s.strip()]
            known = ("source",) + IR_STAGES
            bad = [s for s in names if s not in known]
            if bad or not names:
                raise UsageError(
                    f"--stages: unknown stage {', '.join(bad) or '(none given)'}; choose from {', '.join(known)}"
                )
            args.stages = names

    def _pick_kernel(self, cell: str, filename: str, ns: dict, wanted: str | None):
        """(name, JITFunction) of the kernel to compile; a plain function is wrapped in kl.jit."""
        tree = ast.parse(cell)
        defined = [
            n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
        ]
        jits, plains = [], []
        for name in dict.fromkeys(defined):
            obj = ns.get(name)
            inner = _underlying_jit(obj)
            if inner is not None and getattr(inner, "filename", None) == filename:
                jits.append(name)
            elif (
                callable(obj)
                and getattr(getattr(obj, "__code__", None), "co_filename", None) == filename
            ):
                plains.append(name)
        candidates = jits + plains
        if wanted is not None:
            if wanted not in candidates:
                raise UsageError(
                    f"--name {wanted}: the cell defines no kernel of that name; "
                    f"it defines {', '.join(candidates) or 'no functions'}"
                )
            name = wanted
        else:
            pool = jits or plains
            if not pool:
                raise UsageError(
                    "the cell defines no kernel: write a function (with or without @kl.jit)"
                )
            if len(pool) > 1:
                raise UsageError(
                    f"the cell defines several kernels ({', '.join(pool)}); pick one with --name"
                )
            name = pool[0]
        obj = ns[name]
        jit = _underlying_jit(obj)
        if jit is None:  # a plain function: make it a kernel, in the namespace too
            jit = kl.jit(obj)
            ns[name] = jit
        return name, jit

    def _bind_values(self, jit, text: str, constexprs: dict, ns: dict) -> dict:
        """The --args values by parameter name (constexprs filled in from --constexprs)."""
        exprs = _split_names(text)
        values = [_evaluate(e, ns, "--args") for e in exprs]
        from kernellab.compiler.specialization import match_parameters, runtime_parameters

        params = list(jit.arg_names)
        runtime = runtime_parameters(jit, constexprs)
        by_name = match_parameters(params, runtime, values)
        if by_name is None:
            raise UsageError(
                f"--args gives {len(values)} values; {jit.__name__} takes {len(runtime)} "
                f"({', '.join(runtime)}) besides its constexprs, or {len(params)} with them"
            )
        for p in params:
            if p in constexprs:
                by_name[p] = constexprs[p]
        missing = [
            p
            for p in params
            if p not in by_name
            and jit.signature.parameters[p].default is jit.signature.parameters[p].empty
        ]
        if missing:
            raise UsageError(
                f"{jit.__name__}: no value for {', '.join(missing)}; add it to --constexprs or --args"
            )
        return by_name

    def _infer(self, jit, values: list, constexprs: dict):
        """(signature, constexprs, attrs) a launch with these values would compile, via the binder."""
        from kernellab.backends.arguments import ArgumentError

        try:
            bound = jit.binder.bind((), values)
        except (ArgumentError, TypeError) as e:
            raise UsageError(f"--args: {e}") from None
        signature, consts, attrs = jit.binder.compile_args(bound)
        return signature, consts, attrs or None

    def _check_signature(self, jit, signature, constexprs: dict) -> None:
        from kernellab.compiler.specialization import resolve_constexprs, resolve_signature

        params = jit.signature.parameters
        missing = [
            p for p in jit.constexpr_names
            if p not in constexprs and params[p].default is params[p].empty
        ]  # fmt: skip
        if missing:
            example = ",".join(f"{p}=..." for p in sorted(missing))
            raise UsageError(
                f"{jit.__name__}: give the tl.constexpr values with --constexprs {example}"
            )
        try:
            consts = resolve_constexprs(jit, constexprs)
            resolve_signature(jit, signature, consts)
        except (TypeError, ValueError) as e:
            raise UsageError(str(e)) from None

    def _compile(self, cell, name, jit, signature, constexprs, attrs, target, options, force):
        key = hashlib.sha256(repr((
            kl.__version__, cell, name, signature, sorted(constexprs.items(), key=str), attrs, target,
            sorted(options.items()),
        )).encode()).hexdigest()  # fmt: skip
        if not force and key in self._compiled:
            self._compiled.move_to_end(key)
            ck, notes = self._compiled[key]
            return ck, list(notes), True
        if force:  # the runtime's own caches too, where it has them
            getattr(jit, "cache", {}).clear()
        ck, notes = compile_for_view(jit, signature=signature, constexprs=constexprs, attrs=attrs,
                                     target=target, force=force, **options)  # fmt: skip
        if ck.metadata.get("failed_stage"):  # partial (a later stage failed): retried next run
            return ck, notes, None
        self._compiled[key] = (ck, list(notes))
        while len(self._compiled) > _CACHE_SIZE:
            self._compiled.popitem(last=False)
        return ck, notes, None

    def _run(self, args, jit, name, values, constexprs, options, ns) -> None:
        from IPython.display import display

        grid = _evaluate(args.grid, ns, "--grid", extra=constexprs)
        kwargs = {**values, **options}
        device = "GPU" if any(_is_cuda(v) for v in values.values()) else "interpreter"
        if device == "interpreter" and args.target == "cpu":
            kwargs["target"], device = "cpu", "kernellab CPU backend"

        def launch():
            jit[grid](**kwargs)

        start = time.perf_counter()
        launch()
        if device == "GPU":
            _synchronize()
        elapsed = time.perf_counter() - start
        shown_grid = grid if not callable(grid) else "callable"
        display(
            _Message(
                f"ran {name}[{shown_grid}] on the {device} in {elapsed * 1e3:.1f} ms (first launch, compile included)"
            )
        )

        failure = None
        if args.check is not None:
            failure = self._check(args, ns)
        if args.bench is not None:
            self._bench(args, name, launch, ns, device)
        if failure is not None:
            raise failure

    def _check(self, args, ns):
        from IPython.display import display

        target_expr, ref_expr = _parse_check(args.check)
        actual = _evaluate(target_expr, ns, "--check")
        expected = _evaluate(ref_expr, ns, "--check")
        try:
            kl.testing.assert_close(actual, expected, atol=args.atol, rtol=args.rtol)
        except AssertionError as e:
            display(_Message(f"check {target_expr} == {ref_expr}: FAILED", ok=False))
            return KernelCheckError(f"--check {target_expr} == {ref_expr} failed:\n{e}")
        err = _max_error(actual, expected)
        atol = 1e-2 if args.atol is None else args.atol
        rtol = 0.0 if args.rtol is None else args.rtol
        display(_Message(
            f"check {target_expr} == {ref_expr}: ok ({_size(actual)} elements, max abs error {err:.3g}, "
            f"atol={atol:g}, rtol={rtol:g})", ok=True,
        ))  # fmt: skip
        return None

    def _bench(self, args, name, launch, ns, device) -> None:
        from IPython.display import display

        label, expr = _parse_bench(args.bench)
        env = dict(ns)
        if "torch" in expr and "torch" not in env:
            try:
                import torch

                env["torch"] = torch
            except ImportError:
                pass
        try:
            code = compile(expr, "<--bench>", "eval")
        except SyntaxError as e:
            raise UsageError(f"--bench: {expr!r} is not an expression: {e.msg}") from None

        def reference():
            eval(code, env)

        sync = _synchronize if device == "GPU" else None

        def timed(fn):
            if sync is None:
                return fn
            return lambda: (fn(), sync())

        fns = [timed(launch), timed(reference)]
        if device == "GPU":  # its clock follows its power: say at which the two were timed
            with kl.testing.GpuState() as state:
                ms_kernel, ms_ref = kl.testing.do_bench_interleaved(fns, warmup=args.warmup, rep=args.rep)
            conditions = state.describe()
        else:
            ms_kernel, ms_ref = kl.testing.do_bench_interleaved(fns, warmup=args.warmup, rep=args.rep)
            conditions = ""
        display(BenchResult(name, label, expr, ms_kernel, ms_ref, device, conditions))


def _synchronize() -> None:
    try:
        import torch

        torch.cuda.synchronize()
    except Exception:
        pass


def _parse_check(text: str) -> tuple[str, str]:
    """`out=x+y` → ("out", "x + y"); the left side may be any expression (`out[:10]`)."""
    try:
        tree = ast.parse(text.strip(), mode="exec")
    except SyntaxError:
        tree = None
    if (
        tree is None
        or len(tree.body) != 1
        or not isinstance(tree.body[0], ast.Assign)
        or len(tree.body[0].targets) != 1
    ):
        raise UsageError(f'--check {text!r}: write OUTPUT=REFERENCE, e.g. --check "out=x+y"')
    node = tree.body[0]
    return ast.unparse(node.targets[0]), ast.unparse(node.value)


def _parse_bench(text: str) -> tuple[str, str]:
    """`torch: x + y` → ("torch", "x + y"); a bare expression is labelled "reference"."""
    text = text.strip()
    try:
        ast.parse(text, mode="eval")
        return "reference", text
    except SyntaxError:
        pass
    label, sep, expr = text.partition(":")
    if not sep or not label.strip() or not expr.strip():
        raise UsageError(f'--bench {text!r}: write LABEL: EXPRESSION, e.g. --bench "torch: x + y"')
    return label.strip(), expr.strip()


def _size(x) -> int:
    from kernellab.testing.compare import host_float64  # host copy: CUDA tensors too

    return int(host_float64(x).size)


def _max_error(actual, expected) -> float:
    from kernellab.testing.compare import host_float64

    a, e = host_float64(actual), host_float64(expected)
    with np.errstate(invalid="ignore"):
        diff = np.abs(a - e)
    diff = diff[np.isfinite(diff)]
    return float(diff.max()) if diff.size else 0.0


class _Message:
    """A one-line status under the viewer (text and inline-styled HTML)."""

    def __init__(self, text: str, ok: bool | None = None):
        self.text = text
        self.ok = ok

    def _repr_mimebundle_(self, include=None, exclude=None):
        from html import escape

        color = {True: "#1a7f37", False: "#cf222e", None: "#656d76"}[self.ok]
        mark = {True: "✓ ", False: "✗ ", None: ""}[self.ok]
        html = f'<div style="font-family:monospace;font-size:12px;color:{color}">{mark}{escape(self.text)}</div>'
        return {"text/plain": mark + self.text, "text/html": html}


class BenchResult:
    """--bench's result: the kernel's and the reference's median time (timed in interleaved
    rounds), their ratio, and on a GPU the clock and power they ran at (`conditions`)."""

    def __init__(
        self, name: str, label: str, expr: str, ms_kernel: float, ms_reference: float, device: str,
        conditions: str = "",
    ):  # fmt: skip
        self.name, self.label, self.expr = name, label, expr
        self.ms_kernel, self.ms_reference, self.device = ms_kernel, ms_reference, device
        self.conditions = conditions

    @property
    def ratio(self) -> float:
        """How many times faster the kernel is than the reference (reference time / kernel time)."""
        return self.ms_reference / self.ms_kernel if self.ms_kernel > 0 else float("inf")

    @property
    def on_interpreter(self) -> bool:
        """Interpreter times compare numpy running IR with numpy: no result about a kernel. The
        CPU backend's and the GPU's are real kernels' times."""
        return self.device == "interpreter"

    def _repr_mimebundle_(self, include=None, exclude=None):
        from html import escape

        faster = f"{self.ratio:.2f}× the speed of {self.label}"
        if self.on_interpreter:  # numpy running IR vs numpy: not a result about any GPU kernel
            verdict = (f"interpreter times: they measure numpy on this CPU running the kernel's IR, "
                       f"not a GPU; the ratio ({self.ratio:.2f}×) says nothing about the kernel's speed")  # fmt: skip
        else:
            verdict = f"{self.name} runs at {faster}"
        where = f"the {self.device}" + (f" at {self.conditions}" if self.conditions else "")
        text = (
            f"bench on {where}: {self.name} {self.ms_kernel:.4f} ms | {self.label} "
            f"({self.expr}) {self.ms_reference:.4f} ms | {verdict}"
        )
        cell = "padding:2px 12px 2px 0;text-align:right;font-family:monospace"
        left = "padding:2px 12px 2px 0;text-align:left"
        width_k = 100 * min(1.0, self.ms_kernel / max(self.ms_kernel, self.ms_reference))
        width_r = 100 * min(1.0, self.ms_reference / max(self.ms_kernel, self.ms_reference))

        def bar(width, color):
            return (
                '<span style="display:inline-block;width:8em;height:0.7em;background-color:#eaeef2">'
                f'<span style="display:block;width:{width:.1f}%;height:100%;background-color:{color}"></span></span>'
            )

        html = (
            f'<div style="font-size:12px;margin:4px 0"><div style="color:#656d76">bench on '
            f'{escape(where)} (kl.testing.do_bench_interleaved: medians of 4 interleaved rounds)</div>'
            '<table style="border-collapse:collapse">'
            f'<tr><td style="{left}"><b>{escape(self.name)}</b></td><td style="{cell}">{self.ms_kernel:.4f} ms</td><td>{bar(width_k, "#0969da")}</td></tr>'
            f'<tr><td style="{left}">{escape(self.label)}: <code>{escape(self.expr)}</code></td><td style="{cell}">{self.ms_reference:.4f} ms</td><td>{bar(width_r, "#8c959f")}</td></tr>'
            "</table>"
            + (f"<div style='color:#9a6700'>{escape(verdict)}</div>" if self.on_interpreter else
               f"<div>{escape(self.name)} runs at <b>{self.ratio:.2f}×</b> the speed of {escape(self.label)}</div>")
            + "</div>"
        )  # fmt: skip
        return {"text/plain": text, "text/html": html}


def load_ipython_extension(ip) -> None:
    """`%load_ext kernellab`: register `%%kernel`, and show errors of kernel launches like
    compile errors (kernellab.lab.launch_errors)."""
    from kernellab.lab.launch_errors import register

    ip.register_magics(KernelMagics)
    register(ip)


def unload_ipython_extension(ip) -> None:
    magics = ip.magics_manager.magics.get("cell", {})
    magics.pop("kernel", None)
    ip.set_custom_exc((), None)


__all__ = [
    "BenchResult",
    "KernelCheckError",
    "KernelMagics",
    "load_ipython_extension",
    "unload_ipython_extension",
]
