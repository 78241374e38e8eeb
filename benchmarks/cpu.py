"""The native CPU backend (target="cpu") next to numpy, torch CPU (when installed) and the
interpreter, on all cores and on one.

    python3 benchmarks/cpu.py            # the full sizes (a few minutes on 2 cores)
    python3 benchmarks/cpu.py --quick    # small sizes: checks every path (numbers meaningless)

Measures:
  vector add   fp32, 2^24 elements, BLOCK 1024; GB/s counting 3 arrays
  softmax      fp32, 4096 x 1024, one program per row; GB/s counting read + write
  layer norm   fp32 forward, 4096 x 4096, BLOCK 1024; GB/s counting x, y, w, b (mean, rstd)
  cumsum       fp32, 4096 x 1024 along the rows, one program per row; GB/s counting read + write
  matmul       fp32 (input_precision="ieee"), 1024^3 and 2048^3, 128 x 128 x 128 tiles; GFLOP/s (2MNK)
  compile      the first kl.compile of vector add for the CPU in a fresh process (clean cache)

Every kernellab result is checked (against numpy in float64) before it is timed. Times are
medians of repeated runs after a warm-up; the interpreter runs once per case, and is skipped
where one run would take minutes (it says so). Threads: "all cores" is every core this process
may use; "1 thread" sets kernellab.backends.cpu.launcher.set_num_threads(1) and, for numpy and
torch, runs with their own single-thread settings where they have them (torch.set_num_threads;
numpy's BLAS is left as is and said so). Results go to benchmarks/results/cpu-<host>-<date>.json.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import kernellab as kl  # noqa: E402
import kernellab.language as tl  # noqa: E402
from kernellab.backends.cpu import launcher  # noqa: E402
from kernellab.examples import add_kernel, layer_norm_kernel, softmax_kernel, softmax_reference  # noqa: E402


@kl.jit
def matmul_f32(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm,
               BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):  # fmt: skip
    """C = A @ B, fp32 in and out, one BM x BN tile of C per program (sizes divide the tiles)."""
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a_ptrs = a_ptr + rm[:, None] * stride_am + rk[None, :]
    b_ptrs = b_ptr + rk[:, None] * stride_bk + rn[None, :]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for _ in range(0, K, BK):
        acc = tl.dot(tl.load(a_ptrs), tl.load(b_ptrs), acc, input_precision="ieee")
        a_ptrs += BK
        b_ptrs += BK * stride_bk
    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :], acc)


@kl.jit
def cumsum_rows(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """Each row's prefix sums, a row per program (BLOCK >= n)."""
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * n + cols, mask=cols < n, other=0.0)
    tl.store(out_ptr + row * n + cols, tl.cumsum(x, axis=0), mask=cols < n)


def _median(fn, repeat: int) -> float:
    fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _once(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def _torch():
    try:
        import torch
    except ImportError:
        return None
    return torch


# -- cases: (name, detail, unit, amount, runs{label: fn}, check) --------------------------------


def vector_add(quick: bool):
    n = 1 << (16 if quick else 24)
    rng = np.random.default_rng()
    x, y = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    out = np.full(n, np.nan, np.float32)
    grid = (n // 1024,)

    def cpu():
        add_kernel[grid](x, y, out, n, BLOCK_SIZE=1024, target="cpu")

    def check():
        np.testing.assert_array_equal(out, x + y)

    torch = _torch()
    tx, ty = (torch.from_numpy(x), torch.from_numpy(y)) if torch else (None, None)
    return dict(name="vector add", detail=f"2^{n.bit_length() - 1} fp32", unit="GB/s", amount=3 * 4 * n / 1e9,
                cpu=cpu, check=check, numpy=lambda: np.add(x, y, out=out),
                torch=(lambda: torch.add(tx, ty, out=torch.from_numpy(out))) if torch else None,
                interpreter=lambda: add_kernel[grid](x, y, out, n, BLOCK_SIZE=1024), interpreter_ok=True)  # fmt: skip


def softmax(quick: bool):
    rows, cols = (256, 1024) if quick else (4096, 1024)
    rng = np.random.default_rng()
    x = rng.standard_normal((rows, cols), dtype=np.float32)
    out = np.full_like(x, np.nan)

    def cpu():
        softmax_kernel[(rows,)](out, x, cols, cols, cols, BLOCK_SIZE=1024, target="cpu")

    def check():
        np.testing.assert_allclose(out, softmax_reference(x), rtol=1e-5, atol=1e-7)

    def numpy_softmax():
        e = np.exp(x - x.max(axis=1, keepdims=True))
        np.divide(e, e.sum(axis=1, keepdims=True), out=out)

    torch = _torch()
    tx = torch.from_numpy(x) if torch else None
    return dict(name="softmax", detail=f"{rows}x{cols} fp32", unit="GB/s", amount=2 * 4 * rows * cols / 1e9,
                cpu=cpu, check=check, numpy=numpy_softmax,
                torch=(lambda: torch.softmax(tx, dim=1)) if torch else None,
                interpreter=lambda: softmax_kernel[(rows,)](out, x, cols, cols, cols, BLOCK_SIZE=1024),
                interpreter_ok=True)  # fmt: skip


def cumsum(quick: bool):
    rows, cols = (256, 1024) if quick else (4096, 1024)
    rng = np.random.default_rng()
    x = rng.standard_normal((rows, cols), dtype=np.float32)
    out = np.full_like(x, np.nan)

    def cpu():
        cumsum_rows[(rows,)](x, out, cols, BLOCK=1024, target="cpu")

    def check():
        x64 = x.astype(np.float64)
        bound = np.cumsum(np.abs(x64), axis=1) * cols * 2**-24
        assert np.all(np.abs(out - np.cumsum(x64, axis=1)) <= bound)

    torch = _torch()
    tx = torch.from_numpy(x) if torch else None
    return dict(name="cumsum", detail=f"{rows}x{cols} fp32", unit="GB/s", amount=2 * 4 * rows * cols / 1e9,
                cpu=cpu, check=check, numpy=lambda: np.cumsum(x, axis=1, out=out),
                torch=(lambda: torch.cumsum(tx, dim=1)) if torch else None,
                interpreter=lambda: cumsum_rows[(rows,)](x, out, cols, BLOCK=1024), interpreter_ok=True)  # fmt: skip


def layer_norm(quick: bool):
    rows, cols = (256, 4096) if quick else (4096, 4096)
    rng = np.random.default_rng()
    x = rng.standard_normal((rows, cols), dtype=np.float32)
    w, b = rng.standard_normal(cols, dtype=np.float32), rng.standard_normal(cols, dtype=np.float32)
    y = np.full_like(x, np.nan)
    mean, rstd = np.full(rows, np.nan, np.float32), np.full(rows, np.nan, np.float32)
    eps = 1e-5

    def run(**target):
        layer_norm_kernel[(rows,)](x, y, w, b, mean, rstd, cols, cols, eps, BLOCK_SIZE=1024, **target)

    def check():
        x64 = x.astype(np.float64)
        ref = (x64 - x64.mean(1, keepdims=True)) / np.sqrt(x64.var(1, keepdims=True) + eps) * w + b
        np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-4)

    def numpy_layer_norm():
        m = x.mean(axis=1, keepdims=True)
        v = x.var(axis=1, keepdims=True)
        np.multiply((x - m) / np.sqrt(v + eps), w, out=y)
        y.__iadd__(b)

    torch = _torch()
    if torch:
        tx, tw, tb = torch.from_numpy(x), torch.from_numpy(w), torch.from_numpy(b)
    return dict(name="layer norm", detail=f"{rows}x{cols} fp32", unit="GB/s", amount=(2 * rows * cols + 2 * cols) * 4 / 1e9,
                cpu=lambda: run(target="cpu"), check=check, numpy=numpy_layer_norm,
                torch=(lambda: torch.nn.functional.layer_norm(tx, (cols,), tw, tb, eps)) if torch else None,
                interpreter=run, interpreter_ok=True)  # fmt: skip


# The dot's micro-kernel runs 4 x 4 zmm blocks of C whatever the tile; a larger tile copies less
# per FMA (A's copy per K step is 1/BN of its FMAs, B's 1/BM, C's 1/BK). Measured at 2048^3 on 2
# AVX-512 cores, best of 7: 16x32x32 80 GFLOP/s, 64x128x64 133, 128x128x64 140, 128x128x128 156
# (torch 180). The price is compile time: about 18 s for this tile, 6 s for 64x128x64, 1 s for
# 16x32x32 (LLVM's code generation of the tile-wide loads and shuffles).
MATMUL_TILE = dict(BM=128, BN=128, BK=128)


def matmul(size: int, quick: bool):
    n = 256 if quick else size
    rng = np.random.default_rng()
    a = rng.standard_normal((n, n), dtype=np.float32)
    b = rng.standard_normal((n, n), dtype=np.float32)
    c = np.full((n, n), np.nan, np.float32)
    grid = (n // MATMUL_TILE["BM"], n // MATMUL_TILE["BN"])

    def run(**target):
        matmul_f32[grid](a, b, c, n, n, n, n, n, n, **MATMUL_TILE, **target)

    def check():
        ref = a.astype(np.float64) @ b.astype(np.float64)
        bound = 2 * n * np.finfo(np.float32).eps * (np.abs(a).astype(np.float64) @ np.abs(b))
        assert np.all(np.abs(c - ref) <= bound), "matmul result out of its fp32 error bound"

    torch = _torch()
    ta, tb = (torch.from_numpy(a), torch.from_numpy(b)) if torch else (None, None)
    return dict(name="matmul", detail=f"{n}^3 fp32", unit="GFLOP/s", amount=2 * n**3 / 1e9,
                cpu=lambda: run(target="cpu"), check=check, numpy=lambda: np.matmul(a, b, out=c),
                torch=(lambda: torch.matmul(ta, tb)) if torch else None,
                interpreter=run, interpreter_ok=n <= 1024)  # fmt: skip


# -- the first compile in a fresh process ------------------------------------------------------

COMPILE_PROBE = textwrap.dedent("""
    import time, kernellab as kl
    from kernellab.examples import add_kernel
    import kernellab.backends.cpu.launcher, kernellab.backends.cpu.lowering  # imports are not compiling
    start = time.perf_counter()
    kl.compile(add_kernel, signature="*fp32,*fp32,*fp32,i32", constexprs={"BLOCK_SIZE": 1024}, target="cpu")
    print(time.perf_counter() - start)
""")


def first_compile() -> float:
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, KERNELLAB_CACHE_DIR=cache, PYTHONPATH=str(ROOT))
        out = subprocess.run([sys.executable, "-c", COMPILE_PROBE], env=env, capture_output=True, text=True, check=True)
    return float(out.stdout.strip().splitlines()[-1])


# -- running -------------------------------------------------------------------------------


def measure(case: dict, repeat: int) -> dict:
    row = {"name": case["name"], "detail": case["detail"], "unit": case["unit"]}
    rate = lambda s: case["amount"] / s  # noqa: E731
    case["cpu"]()
    case["check"]()
    launcher.set_num_threads(None)
    row["kernellab cpu, all cores"] = rate(_median(case["cpu"], repeat))
    launcher.set_num_threads(1)
    row["kernellab cpu, 1 thread"] = rate(_median(case["cpu"], repeat))
    launcher.set_num_threads(None)
    row["numpy"] = rate(_median(case["numpy"], repeat))
    torch = _torch()
    if case["torch"] is not None:
        row["torch cpu, all cores"] = rate(_median(case["torch"], repeat))
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        row["torch cpu, 1 thread"] = rate(_median(case["torch"], repeat))
        torch.set_num_threads(threads)
    if case["interpreter_ok"]:
        case["interpreter"]()  # compile + warm
        row["interpreter"] = rate(_once(case["interpreter"]))
        row["cpu / interpreter"] = row["kernellab cpu, all cores"] / row["interpreter"]
    else:
        row["interpreter"] = None  # one run takes minutes: skipped
    row["cpu / numpy"] = row["kernellab cpu, all cores"] / row["numpy"]
    if "torch cpu, all cores" in row:
        row["cpu / torch"] = row["kernellab cpu, all cores"] / row["torch cpu, all cores"]
    return row


COLUMNS = ["kernellab cpu, all cores", "kernellab cpu, 1 thread", "numpy", "torch cpu, all cores",
           "torch cpu, 1 thread", "interpreter", "cpu / numpy", "cpu / torch", "cpu / interpreter"]  # fmt: skip


def table(rows: list[dict]) -> str:
    head = ["case", "unit", *COLUMNS]
    lines = [" | ".join(head), " | ".join("---" for _ in head)]
    for r in rows:
        cells = [f"{r['name']} {r['detail']}", r["unit"]]
        for c in COLUMNS:
            v = r.get(c, "n/a")
            cells.append("skipped" if v is None else v if isinstance(v, str) else f"{v:.3g}")
        lines.append(" | ".join(cells))
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small sizes (checks every path)")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    cases = [vector_add(args.quick), softmax(args.quick), layer_norm(args.quick), cumsum(args.quick),
             matmul(1024, args.quick), matmul(2048, args.quick)]  # fmt: skip
    rows = []
    for case in cases:
        rows.append(measure(case, args.repeat))
        print(f"{case['name']} {case['detail']}: done", flush=True)
    compile_s = first_compile()
    machine = f"{platform.processor() or platform.machine()}, {len(os.sched_getaffinity(0))} cores, {kl.__name__} CPU backend on {launcher.num_threads()} threads"
    print()
    print(table(rows))
    print(f"\nfirst compile of vector add for the CPU (fresh process, clean cache): {compile_s:.3f} s")
    print(f"machine: {machine}; torch: {'installed' if _torch() else 'not installed'}")
    result = {"machine": machine, "host": socket.gethostname(), "date": datetime.datetime.now().isoformat(),
              "quick": args.quick, "rows": rows, "first_compile_s": compile_s,
              "command": "python3 benchmarks/cpu.py" + (" --quick" if args.quick else "")}  # fmt: skip
    out = ROOT / "benchmarks" / "results"
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"cpu-{socket.gethostname()}-{datetime.date.today()}.json"
    path.write_text(json.dumps(result, indent=2))
    print(f"saved {path.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
