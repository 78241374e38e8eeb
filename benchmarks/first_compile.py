"""Where the first compile of vector add in a fresh process spends its time, on any machine.

    python3 benchmarks/first_compile.py               # 15 runs of each kind, sm_90a (about 30 s)
    python3 benchmarks/first_compile.py --runs 31 --target sm_80

gpu.py's "compile" section times the first compile of vector add in a fresh process, `import
kernellab` included (issue 13's figure); this runs the same child program (gpu.KERNELLAB_CHILD,
after gpu.prepare_bytecode) and breaks its time down. Every run is a fresh process with an
empty KERNELLAB_CACHE_DIR:
  timing runs      import, compile call and total, and each stage's time;
  import runs      the child under `-X importtime`: the milliseconds the modules of each
                   package spend running their own top-level code (not counting what they
                   import), summed per package, and the costliest modules;
  collector runs   the milliseconds `dataclasses` spends making classes, per package (xDSL's
                   attributes, ops and constraints are dataclasses: Python 3.11 compiles each
                   generated method from source), and the garbage collector's passes;
  library runs     a fresh process that imports only the xDSL and llvmlite modules the compile
                   imported (listed by the first import run): what those two libraries cost
                   before any kernellab code runs, a floor for the figure while the IR is
                   xDSL's and LLVM is llvmlite's.
Each figure is the median over the runs of its kind; the kinds take turns, so a busy machine
slows them alike. The instrumented runs are slower than the timing runs: read their parts as
shares. Results go to benchmarks/results/first-compile-<host>-<date>.json.
"""

from __future__ import annotations

import argparse
import collections
import datetime
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from gpu import KERNELLAB_CHILD, prepare_bytecode  # the figure's own child program

# Prepended to the child in the collector runs: times dataclass creation per package and every
# collection of the cyclic garbage collector, and prints them when the child exits.
COLLECTOR_PRELUDE = """
import atexit as _atexit, dataclasses as _dc, gc as _gc, json as _json, time as _time
_classes, _collections, _start = {}, {}, [0.0]
_process_class = _dc._process_class
def _timed_process_class(cls, *args, **kwargs):
    start = _time.perf_counter()
    try:
        return _process_class(cls, *args, **kwargs)
    finally:
        package = cls.__module__.split(".")[0]
        count, seconds = _classes.get(package, (0, 0.0))
        _classes[package] = (count + 1, seconds + _time.perf_counter() - start)
_dc._process_class = _timed_process_class
def _collection(phase, info):
    if phase == "start":
        _start[0] = _time.perf_counter()
    else:
        count, seconds = _collections.get(info["generation"], (0, 0.0))
        _collections[info["generation"]] = (count + 1, seconds + _time.perf_counter() - _start[0])
_gc.callbacks.append(_collection)
_atexit.register(lambda: print("COLLECTOR " + _json.dumps({"classes": _classes, "collections": _collections})))
"""

_IMPORT_LINE = re.compile(r"import time:\s+(\d+) \|\s+\d+ \|\s*(\S+)")


def run(
    program: str, target: str, workdir: str, python_flags: tuple[str, ...] = ()
) -> tuple[dict, str, str]:
    """(the child's RESULT, its stdout, its stderr) of one fresh process with an empty cache."""
    script = Path(workdir) / "child.py"
    script.write_text(program)
    cache = tempfile.mkdtemp(prefix="kl-cache-", dir=workdir)
    env = {**os.environ, "KERNELLAB_CACHE_DIR": cache}
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p
    )
    env.pop("KERNELLAB_ALWAYS_COMPILE", None)
    proc = subprocess.run([sys.executable, *python_flags, str(script), "compile", target],
                          capture_output=True, text=True, env=env, cwd=workdir, timeout=300, check=False)  # fmt: skip
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            result = json.loads(line[len("RESULT ") :])
            if result["cache_hit"] or not result["correct"]:
                raise RuntimeError(f"the child's compile was not a first compile: {result}")
            return result, proc.stdout, proc.stderr
    raise RuntimeError(f"child exited {proc.returncode} without a result:\n{proc.stderr[-2000:]}")


def library_program(imported: dict[str, float]) -> str:
    """A child that imports the xDSL and llvmlite modules in `imported` (one import run's
    modules, in the order they loaded) and prints its milliseconds."""
    names = [m for m in imported if m.split(".")[0] in ("xdsl", "llvmlite")]
    return "\n".join([
        "import importlib, time",
        "start = time.perf_counter()",
        f"for name in {names!r}:",
        "    importlib.import_module(name)",
        "print('LIBRARIES', (time.perf_counter() - start) * 1e3)",
    ])  # fmt: skip


def run_plain(program: str, workdir: str) -> float:
    """The milliseconds a fresh process running `program` (library_program's) reports."""
    script = Path(workdir) / "libraries.py"
    script.write_text(program)
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          cwd=workdir, timeout=300, check=True)  # fmt: skip
    return float(proc.stdout.split("LIBRARIES")[1])


def import_times(stderr: str) -> dict[str, float]:
    """Milliseconds each module spent in its own top-level code, from `-X importtime` output."""
    return {
        m.group(2): int(m.group(1)) / 1e3 for m in map(_IMPORT_LINE.match, stderr.splitlines()) if m
    }


def package_of(module: str) -> str:
    top = module.split(".")[0]
    return (
        top if top in ("kernellab", "xdsl", "llvmlite", "cuda") else "(standard library and others)"
    )


def median(values) -> float:
    values = list(values)
    return statistics.median(values) if values else 0.0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--runs", type=int, default=15, help="fresh processes of each kind (default 15)"
    )
    parser.add_argument("--target", default="sm_90a")
    args = parser.parse_args(argv)
    timing, imports, collectors, libraries = [], [], [], []
    library_child = None
    with tempfile.TemporaryDirectory(prefix="kl-first-compile-") as work:
        bytecode = prepare_bytecode(args.target, work)
        for _ in range(args.runs):
            timing.append(run(KERNELLAB_CHILD, args.target, work)[0])
            imports.append(
                import_times(run(KERNELLAB_CHILD, args.target, work, ("-X", "importtime"))[2])
            )
            if library_child is None:
                library_child = library_program(imports[0])
            libraries.append(run_plain(library_child, work))
            stdout = run(COLLECTOR_PRELUDE + KERNELLAB_CHILD, args.target, work)[1]
            line = next(line for line in stdout.splitlines() if line.startswith("COLLECTOR "))
            collectors.append(json.loads(line[len("COLLECTOR ") :]))

    ms = {key: median(r[key] for r in timing) * 1e3 for key in ("import_s", "call_s", "total_s")}
    stages = {
        stage: median(r["stage_s"][stage] for r in timing) * 1e3 for stage in timing[0]["stage_s"]
    }
    packages = collections.defaultdict(list)
    modules = collections.defaultdict(list)
    for run_times in imports:
        per_package = collections.Counter()
        for module, t in run_times.items():
            per_package[package_of(module)] += t
            modules[module].append(t)
        for package, t in per_package.items():
            packages[package].append(t)
    package_ms = {
        p: median(ts) for p, ts in sorted(packages.items(), key=lambda kv: -median(kv[1]))
    }
    costliest = sorted(((median(ts), m) for m, ts in modules.items()), reverse=True)[:15]
    class_packages = {p for c in collectors for p in c["classes"]}
    classes = {p: (median(c["classes"].get(p, (0, 0))[0] for c in collectors),
                   median(c["classes"].get(p, (0, 0.0))[1] for c in collectors) * 1e3)
               for p in class_packages}  # fmt: skip
    generations = {g for c in collectors for g in c["collections"]}
    gc_ms = {g: (median(c["collections"].get(g, (0, 0))[0] for c in collectors),
                 median(c["collections"].get(g, (0, 0.0))[1] for c in collectors) * 1e3)
             for g in sorted(generations)}  # fmt: skip

    print(
        f"vector add, first compile for {args.target} in a fresh process, median of {args.runs} ({bytecode})"
    )
    print(
        f"  import kernellab {ms['import_s']:6.1f} ms   compile call {ms['call_s']:6.1f} ms   total {ms['total_s']:6.1f} ms"
    )
    print("  stages (ms):", ", ".join(f"{s} {t:.1f}" for s, t in stages.items()),
          f"(sum {sum(stages.values()):.1f}; the rest of the call is importing the compiler)")  # fmt: skip
    print(f"  importing only the xDSL and llvmlite modules it imports: {median(libraries):6.1f} ms")
    print("  module top-level code under -X importtime, per package (ms):")
    for package, t in package_ms.items():
        print(f"    {t:7.1f}  {package}")
    print("  costliest modules (ms):", ", ".join(f"{m} {t:.1f}" for t, m in costliest))
    print("  making dataclasses, per package (classes, ms):")
    for package, (count, t) in sorted(classes.items(), key=lambda kv: -kv[1][1]):
        print(f"    {t:7.1f}  {package} ({count:.0f} classes)")
    print(
        "  garbage collector:",
        ", ".join(f"generation {g}: {n:.0f} passes, {t:.1f} ms" for g, (n, t) in gc_ms.items()),
    )

    host, date = socket.gethostname(), datetime.date.today().isoformat()
    out = ROOT / "benchmarks" / "results" / f"first-compile-{host}-{date}.json"
    out.write_text(json.dumps({
        "target": args.target, "runs": args.runs, "python": sys.version.split()[0], "bytecode": bytecode,
        "median_ms": {"import kernellab": ms["import_s"], "compile call": ms["call_s"], "total": ms["total_s"]}, "stage_ms": stages, "libraries_alone_ms": median(libraries), "import_ms_per_package": package_ms,
        "costliest_modules_ms": {m: t for t, m in costliest},
        "dataclasses_per_package": {p: {"classes": n, "ms": t} for p, (n, t) in classes.items()},
        "gc_per_generation": {str(g): {"passes": n, "ms": t} for g, (n, t) in gc_ms.items()},
    }, indent=1) + "\n")  # fmt: skip
    print(f"results: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
