"""Interpreter speed: vector add (2^20 fp32, 1024 programs) and fused softmax (1024x1000 fp32).

The kernels are Triton's tutorial kernels from kernellab.examples. For each it reports the
first `kernel[grid](...)` call (frontend + passes + interpreter preparation + run), the median
steady-state `InterpretedKernel.run` after a warm-up, and the median warm `kernel[grid](...)`
launch (run plus argument binding). Prints a table and writes
benchmarks/results/interpreter-<host>-<date>.json.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import socket
import statistics
import time
from pathlib import Path

import numpy as np

import kernellab as kl
from kernellab.backends.interpreter import prepare
from kernellab.examples import add_kernel, softmax_kernel, softmax_reference

# Triton 3.9's interpreter on this kind of machine (from the issue), seconds per call.
TRITON_INTERPRETER_S = {"vector add": 0.50, "fused softmax": 1.19}


def vector_add_case():
    n, rng = 1 << 20, np.random.default_rng()
    x, y = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    out = np.full(n, np.nan, np.float32)

    def check():
        np.testing.assert_array_equal(out, x + y)

    return dict(name="vector add", detail="2^20 fp32, 1024 programs", kernel=add_kernel,
                grid=(n // 1024,), args=[x, y, out, n], constexprs={"BLOCK_SIZE": 1024},
                signature="*fp32,*fp32,*fp32,i32", check=check)  # fmt: skip


def softmax_case():
    rows, cols, rng = 1024, 1000, np.random.default_rng()
    x = rng.standard_normal((rows, cols), dtype=np.float32)
    out = np.full((rows, cols), np.nan, np.float32)

    def check():
        np.testing.assert_allclose(out, softmax_reference(x), rtol=1e-5, atol=1e-7)

    return dict(name="fused softmax", detail="1024x1000 fp32, 1024 programs", kernel=softmax_kernel,
                grid=(rows,), args=[out, x, cols, cols, cols], constexprs={"BLOCK_SIZE": 1024},
                signature="*fp32,*fp32,i32,i32,i32", check=check)  # fmt: skip


def _median(fn, repeats: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def bench(case, repeats=15) -> dict:
    kernel, grid, args, meta = case["kernel"], case["grid"], case["args"], case["constexprs"]
    start = time.perf_counter()
    kernel[grid](*args, **meta)
    first = time.perf_counter() - start
    case["check"]()
    interpreted = prepare(kl.compile(kernel, signature=case["signature"], constexprs=meta).module)
    run = _median(lambda: interpreted.run(args, grid + (1, 1)), repeats)
    launch = _median(lambda: kernel[grid](*args, **meta), repeats)
    case["check"]()
    return {"kernel": case["name"], "detail": case["detail"], "first_call_s": first, "run_s": run,
            "warm_launch_s": launch, "triton_interpreter_s": TRITON_INTERPRETER_S[case["name"]]}  # fmt: skip


def main() -> None:
    results = [bench(case()) for case in (vector_add_case, softmax_case)]
    header = f"{'kernel':44} {'run()':>9} {'launch':>9} {'first call':>11} {'Triton interp':>14}"
    print(header + "\n" + "-" * len(header))
    for r in results:
        label = f"{r['kernel']} ({r['detail']})"
        speedup = r["triton_interpreter_s"] / r["run_s"]
        print(f"{label:44} {r['run_s'] * 1e3:6.1f} ms {r['warm_launch_s'] * 1e3:6.1f} ms "
              f"{r['first_call_s'] * 1e3:8.1f} ms {speedup:12.0f}x")  # fmt: skip
    host, date = socket.gethostname(), datetime.date.today().isoformat()
    out = Path(__file__).parent / "results" / f"interpreter-{host}-{date}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    meta = {"host": host, "date": date, "machine": platform.machine(), "cpus": os.cpu_count(),
            "python": platform.python_version(), "numpy": np.__version__}  # fmt: skip
    out.write_text(json.dumps({"meta": meta, "results": results}, indent=2) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
