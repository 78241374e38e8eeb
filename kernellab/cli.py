"""Command line: `python -m kernellab [tour | compile FILE.py:kernel ... | doctor]`.

With no command it runs the tour (compile, inspect and run the vector-add tutorial). `compile`
prints one stage of a kernel from a file; `doctor` says what is installed and whether a GPU is
visible.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import os
import sys


def _load_kernel(target: str):
    """The kernel named by `path/to/file.py:name`, imported from that file."""
    path, sep, name = target.rpartition(":")
    if not sep or not path.endswith(".py"):
        raise SystemExit(f"expected FILE.py:kernel, got {target!r}")
    if not os.path.exists(path):
        raise SystemExit(f"no such file: {path}")
    spec = importlib.util.spec_from_file_location(os.path.splitext(os.path.basename(path))[0], path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    try:
        return getattr(module, name)
    except AttributeError:
        raise SystemExit(f"{path} defines no {name!r}") from None


def _parse_constexprs(items: list[str]) -> dict:
    """`NAME=VALUE` pairs; values are Python literals (1024, 0.5, True) or else strings."""
    result = {}
    for item in items:
        name, sep, text = item.partition("=")
        if not sep:
            raise SystemExit(f"--constexprs takes NAME=VALUE, got {item!r}")
        try:
            result[name.strip()] = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            result[name.strip()] = text
    return result


def _compile(args) -> int:
    import kernellab as kl
    from kernellab.tour import pass_table

    kernel = _load_kernel(args.kernel)
    ck = kl.compile(
        kernel,
        signature=args.signature,
        constexprs=_parse_constexprs(args.constexprs),
        target=args.target,
        num_warps=args.num_warps,
        num_stages=args.num_stages,
    )
    if args.stage not in ck.asm:
        raise SystemExit(f"no stage {args.stage!r} for this target; stages: {', '.join(ck.asm)}")
    text = ck.asm[args.stage]
    sys.stdout.write(text if isinstance(text, str) else text.hex() + "\n")
    if args.passes:
        print(pass_table(ck.passes))
    return 0


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


def _doctor(args) -> int:
    import platform

    import kernellab

    rows = [("python", platform.python_version()), ("kernellab", kernellab.__version__)]
    rows += [(d, _version(d)) for d in ("numpy", "ml_dtypes", "xdsl", "llvmlite", "cuda-python", "torch")]
    rows.append(("GPU visible", _gpu_status()))
    width = max(len(k) for k, _ in rows)
    for key, value in rows:
        print(f"{key.ljust(width)}  {value}")
    return 0


def _tour(args) -> int:
    from kernellab.tour import main

    return main()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kernellab", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command")
    commands.add_parser("tour", help="compile, inspect and run the vector-add tutorial (default)")
    comp = commands.add_parser("compile", help="compile a kernel from a file and print a stage")
    comp.add_argument("kernel", help="FILE.py:kernel_name")
    comp.add_argument("--signature", required=True, help='types of the non-constexpr parameters, e.g. "*fp32,*fp32,i32"')
    comp.add_argument("--constexprs", nargs="*", default=[], metavar="NAME=VALUE")
    comp.add_argument("--stage", default="ttir", help="which stage to print (default: ttir)")
    comp.add_argument("--target", default=None, help="backend target (default: interpreter)")
    comp.add_argument("--num-warps", type=int, default=4)
    comp.add_argument("--num-stages", type=int, default=3)
    comp.add_argument("--passes", action="store_true", help="also print each pass with its time")
    commands.add_parser("doctor", help="print versions and whether a GPU is visible")
    args = parser.parse_args(argv)
    handler = {"compile": _compile, "doctor": _doctor}.get(args.command, _tour)
    return handler(args)


__all__ = ["main"]
