"""Interpreter speed: vector add (2^20 fp32, 1024 programs) and fused softmax (1024x1000 fp32).

The kernels are Triton's tutorial kernels with only the imports changed. For each it reports
the first `kernel[grid](...)` call (frontend + passes + interpreter preparation + run), the
median steady-state `InterpretedKernel.run` after a warm-up, and the median warm
`kernel[grid](...)` launch (run plus argument binding). Prints a table and writes
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
import kernellab.language as tl
from kernellab.backends.interpreter import prepare

# Triton 3.9's interpreter on this kind of machine (from the issue), seconds per call.
TRITON_INTERPRETER_S = {"vector add": 0.50, "fused softmax": 1.19}


@kl.jit
def add_kernel(x_ptr, y_ptr, output_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    block_start = pid * BLOCK_SIZE
    offsets = block_start + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    output = x + y
    tl.store(output_ptr + offsets, output, mask=mask)


@kl.jit
def softmax_kernel(output_ptr, input_ptr, input_row_stride, output_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    row_idx = tl.program_id(0)
    row_start_ptr = input_ptr + row_idx * input_row_stride
    col_offsets = tl.arange(0, BLOCK_SIZE)
    input_ptrs = row_start_ptr + col_offsets
    mask = col_offsets < n_cols
    row = tl.load(input_ptrs, mask=mask, other=-float("inf"))
    row_minus_max = row - tl.max(row, axis=0)
    numerator = tl.exp(row_minus_max)
    denominator = tl.sum(numerator, axis=0)
    softmax_output = numerator / denominator
    output_row_start_ptr = output_ptr + row_idx * output_row_stride
    output_ptrs = output_row_start_ptr + col_offsets
    tl.store(output_ptrs, softmax_output, mask=mask)


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
        e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
        np.testing.assert_allclose(out, e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-7)

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
