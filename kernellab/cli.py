"""Command line: `python -m kernellab [tour | compile FILE.py:kernel ... | doctor]`.

With no command it runs the tour (compile, inspect and run the vector-add tutorial). `compile`
prints one stage of a kernel from a file; `doctor` says what is installed and whether a GPU is
visible.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import importlib.util
import os
import sys
import traceback


class UsageError(Exception):
    """An ordinary mistake (a wrong path, a bad option, a kernel that does not compile): the CLI
    prints its message, which names the problem and the fix, and exits with status 2."""


def _load_kernel(target: str):
    """The kernel named by `path/to/file.py:name`, imported from that file under a private module
    name (a file called json.py must not replace the standard json module)."""
    from kernellab.language import core as tl

    path, sep, name = target.rpartition(":")
    if not sep or not path.endswith(".py"):
        raise UsageError(f"expected FILE.py:kernel (e.g. kernels.py:add_kernel), got {target!r}")
    if not os.path.exists(path):
        raise UsageError(f"no such file: {path}; check the path (relative to {os.getcwd()})")
    if os.path.isdir(path):
        raise UsageError(f"{path} is a directory; name the Python file that defines the kernel: FILE.py:{name}")
    module_name = "_kernellab_cli_" + hashlib.sha256(os.path.abspath(path).encode()).hexdigest()[:16]
    spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module  # dataclasses and pickling look the module up by name
    try:
        spec.loader.exec_module(module)
    except BaseException as error:
        del sys.modules[module_name]  # a failed import leaves nothing behind
        if not isinstance(error, Exception):  # Ctrl-C, sys.exit in the file
            raise
        raise _import_error(path, error) from error
    kernels = sorted(k for k, v in vars(module).items() if isinstance(v, tl.KernelFunction))
    listing = f"kernels in it: {', '.join(kernels)}" if kernels else "it defines no @kl.jit kernel"
    if not hasattr(module, name):
        raise UsageError(f"{path} defines no {name!r}; {listing}")
    kernel = getattr(module, name)
    if not isinstance(kernel, tl.KernelFunction):
        raise UsageError(f"{path}:{name} is a {type(kernel).__name__}, not a @kl.jit kernel; {listing}")
    return kernel


def _import_error(path: str, error: Exception) -> UsageError:
    """Why importing the user's file failed, where in it, and what to do about it."""
    if isinstance(error, UnicodeDecodeError) or (isinstance(error, SyntaxError) and "null bytes" in str(error)):
        return UsageError(f"{path} is not Python source (it is binary); give the .py file that defines the kernel")
    if isinstance(error, SyntaxError):
        return UsageError(f"{path}:{error.lineno}: syntax error: {error.msg}\n  {(error.text or '').strip()}\nfix the file and rerun")
    line = next((f.lineno for f in reversed(traceback.extract_tb(error.__traceback__)) if f.filename == path), None)
    where = f"{path}:{line}" if line else path
    fix = "install it or fix the import" if isinstance(error, ImportError) else "fix the file"
    return UsageError(f"importing {where} failed: {type(error).__name__}: {error}; {fix}")


def _parse_constexprs(items: list[str]) -> dict:
    """`NAME=VALUE` pairs; values are Python literals (1024, 0.5, True) or else strings."""
    result = {}
    for item in items:
        name, sep, text = item.partition("=")
        if not sep:
            raise UsageError(f"--constexprs takes NAME=VALUE, got {item!r} (e.g. --constexprs BLOCK=1024)")
        try:
            result[name.strip()] = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            result[name.strip()] = text
    return result


def _compile(args) -> int:
    import kernellab as kl
    from kernellab.frontend.errors import CompilationError
    from kernellab.passes.manager import PassError
    from kernellab.tour import pass_table

    kernel = _load_kernel(args.kernel)
    try:
        ck = kl.compile(
            kernel,
            signature=args.signature,
            constexprs=_parse_constexprs(args.constexprs),
            target=args.target,
            num_warps=args.num_warps,
            num_stages=args.num_stages,
        )
    except CompilationError as error:
        raise UsageError(f"the kernel does not compile: {error}") from error
    except (TypeError, ValueError) as error:  # the specialization or an option is wrong
        raise UsageError(f"{error}\n{_OPTIONS_HINT}") from error
    except PassError as error:  # e.g. ptxas refusing an architecture
        raise UsageError(
            f"compiling for {args.target} failed: {error}\ncheck --target; if it is right, this is a "
            "kernellab bug: rerun with --traceback and report it"
        ) from error
    stages = ck.asm.available() if hasattr(ck.asm, "available") else list(ck.asm)
    if args.stage not in stages:
        if args.target is None and args.stage in _GPU_STAGES:
            raise UsageError(
                f"--stage {args.stage} needs a GPU target: the default --target (the interpreter) "
                f"makes only {', '.join(stages)}; add --target sm_90 (or sm_80; compiling needs no GPU)"
            )
        raise UsageError(f"no stage {args.stage!r} for this target; --stage takes one of: {', '.join(stages)}")
    text = ck.asm[args.stage]
    if text is None:  # a stage made on demand whose tool is missing
        raise UsageError(f"--stage {args.stage}: {ck.metadata.get(args.stage, 'its tool is not installed')}")
    sys.stdout.write(text if isinstance(text, str) else text.hex() + "\n")
    if args.passes:
        print(pass_table(ck.passes))
    return 0


_GPU_STAGES = ("ttgir", "llir", "ptx", "cubin", "sass")

_OPTIONS_HINT = (
    "set it on the command line: --signature TYPES, --constexprs NAME=VALUE, --target, --num-warps "
    "(python -m kernellab compile --help)"
)


def _version(dist: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return "not installed"


def _gpu_status() -> str:
    """Whether the CUDA driver sees a GPU (imports cuda-python only here)."""
    try:
        from cuda.bindings import driver
    except ImportError:
        return "unknown (cuda-python is not installed)"
    try:
        (err,) = driver.cuInit(0)
        if err != driver.CUresult.CUDA_SUCCESS:
            return f"no ({err.name})"
        err, count = driver.cuDeviceGetCount()
        return f"yes ({count} device(s))" if count else "no (the driver sees no device)"
    except Exception as e:  # no libcuda.so on this machine
        return f"no ({type(e).__name__}: {str(e).splitlines()[0] if str(e) else 'driver not found'})"


def _nvjitlink_status() -> str:
    """Whether PTX can be assembled to a cubin (no GPU needed: nvJitLink runs ptxas)."""
    try:
        from kernellab.backends.nvidia.cubin import nvjitlink_version

        version = nvjitlink_version()
    except Exception as e:  # a broken install must not stop the rest of the report
        return f"unavailable ({type(e).__name__}: {e})"
    if version is None:
        return "not found: PTX is not assembled to cubins (pip install nvidia-nvjitlink)"
    return "version " + ".".join(map(str, version))


def _nvdisasm_status() -> str:
    from kernellab.backends.nvidia.sass import sass_status

    return sass_status()


def _graphviz_status() -> str:
    import shutil

    dot = shutil.which("dot")
    if dot is not None:
        return f"dot at {dot}"
    return "no `dot` on PATH: the lab draws its graphs with its own SVG layout (nothing to install)"


def _labextension_status() -> str:
    """Whether JupyterLab will load kernellab's extension (the viewer renderer and highlighting)."""
    from pathlib import Path

    if _version("jupyterlab") == "not installed":
        return "JupyterLab is not installed (pip install -e '.[lab]')"
    from jupyter_core.paths import jupyter_path

    for root in jupyter_path("labextensions"):
        if (Path(root) / "kernellab" / "package.json").exists():
            return f"installed at {Path(root) / 'kernellab'}"
    return (
        "not installed: notebooks show the viewer's static HTML instead (pip install -e '.[lab]' "
        "with node on PATH builds it)"
    )


def _doctor(args) -> int:
    import platform

    import kernellab

    rows = [("python", platform.python_version()), ("kernellab", kernellab.__version__)]
    rows += [(d, _version(d)) for d in ("numpy", "ml_dtypes", "xdsl", "llvmlite", "cuda-python", "torch")]
    rows.append(("GPU visible", _gpu_status()))
    rows += [("nvJitLink (ptxas)", _nvjitlink_status()), ("nvdisasm (SASS)", _nvdisasm_status()),
             ("graphviz (graphs)", _graphviz_status()), ("JupyterLab extension", _labextension_status())]
    width = max(len(k) for k, _ in rows)
    for key, value in rows:
        print(f"{key.ljust(width)}  {value}")
    return 0


def _tour(args) -> int:
    from kernellab.tour import main

    return main()


def main(argv: list[str] | None = None) -> int:
    shared = argparse.ArgumentParser(add_help=False)
    shared.add_argument("--traceback", action="store_true", default=argparse.SUPPRESS,
                        help="on an error, show the full traceback")  # fmt: skip
    parser = argparse.ArgumentParser(prog="python -m kernellab", description=__doc__.splitlines()[0], parents=[shared])
    commands = parser.add_subparsers(dest="command")
    commands.add_parser("tour", parents=[shared], help="compile, inspect and run the vector-add tutorial (default)")
    comp = commands.add_parser("compile", parents=[shared], help="compile a kernel from a file and print a stage")
    comp.add_argument("kernel", help="FILE.py:kernel_name")
    comp.add_argument("--signature", required=True, help='types of the non-constexpr parameters, e.g. "*fp32,*fp32,i32"')
    comp.add_argument("--constexprs", nargs="*", default=[], metavar="NAME=VALUE")
    comp.add_argument("--stage", default="ttir", help="which stage to print (default: ttir)")
    comp.add_argument("--target", default=None, help="backend target (default: interpreter)")
    comp.add_argument("--num-warps", type=int, default=4)
    comp.add_argument("--num-stages", type=int, default=3)
    comp.add_argument("--passes", action="store_true", help="also print each pass with its time")
    commands.add_parser("doctor", parents=[shared], help="print versions, the tools found (nvJitLink, nvdisasm, graphviz, the JupyterLab extension) and whether a GPU is visible")
    args = parser.parse_args(argv)
    handler = {"compile": _compile, "doctor": _doctor}.get(args.command, _tour)
    try:
        return handler(args)
    except UsageError as error:
        if getattr(args, "traceback", False):
            traceback.print_exc()
        print(f"kernellab: error: {error}", file=sys.stderr)
        if not getattr(args, "traceback", False):
            print("(rerun with --traceback to see the full traceback)", file=sys.stderr)
        return 2


__all__ = ["main"]
