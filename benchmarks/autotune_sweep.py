"""An autotuning sweep timed on one GPU and on every GPU of the host, in one run.

    python3 benchmarks/autotune_sweep.py            # a host with NVIDIA GPUs and torch
    python3 benchmarks/autotune_sweep.py --quick    # small shapes and few configs: a smoke run

The sweep: Triton's tutorial matmul (kernellab.examples.matmul_kernel), fp16, autotuned over a
grid of configs (BLOCK_M x BLOCK_N x BLOCK_K x num_stages x num_warps) at several shapes, each
config timed as Triton's autotuner does (do_bench, 25 ms warm-up, 100 ms of runs, median). The
configs compile first, in parallel, into the disk cache, so every run below finds them there
and what is compared is the timing, which dominates a sweep once compiles are parallel:

  here        the autotuner's default: every config timed in this process on GPU 0
  pool x1     kl.DevicePool(gpus=[0]): the same, through one worker process (the pool's cost)
  pool xN     kl.DevicePool(): one worker per GPU, N configs timed at once

Printed: each run's wall time, the speed-up of pool xN over `here` and over pool x1 (target:
at least 0.8 x N), the pool's start-up time (its workers import torch and make their CUDA
contexts, in the background while the configs compile; paid once per session), whether the
chosen configs agree, and the best config's TFLOP/s at each shape next to cuBLAS. Each run's
tuning table (which GPU timed which config) goes to the log. Results: benchmarks/results/
<device>-<date>-autotune-sweep.json (and $OUT/ when OUT is set).
"""

import argparse
import datetime
import itertools
import json
import os
import sys
import time
from concurrent.futures import as_completed
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import kernellab as kl
from kernellab.examples import matmul_kernel
from kernellab.runtime.parallel_compile import CompileJob, KernelRef, compile_job, default_executor

SHAPES = [(2048, 2048, 2048), (4096, 4096, 4096), (8192, 8192, 4096)]
# (BLOCK_M, BLOCK_N, BLOCK_K, num_stages, num_warps); GROUP_M is 8 throughout
CONFIG_GRID = list(itertools.product((64, 128), (64, 128, 256), (32, 64), (3, 4), (4, 8)))
QUICK_SHAPES = [(512, 512, 512), (1024, 1024, 512)]
QUICK_GRID = list(itertools.product((64, 128), (64, 128), (32,), (3,), (4,)))


def configs_of(grid) -> list:
    return [kl.Config({"BLOCK_SIZE_M": bm, "BLOCK_SIZE_N": bn, "BLOCK_SIZE_K": bk, "GROUP_SIZE_M": 8},
                      num_stages=stages, num_warps=warps) for bm, bn, bk, stages, warps in grid]  # fmt: skip


def make_inputs(torch, shapes):
    out = {}
    for m, n, k in shapes:
        a = torch.randn(m, k, device="cuda", dtype=torch.float16)
        b = torch.randn(k, n, device="cuda", dtype=torch.float16)
        out[(m, n, k)] = (a, b, torch.full((m, n), float("nan"), device="cuda", dtype=torch.float16))
    return out


def launch(kernel, a, b, c):
    m, k = a.shape
    n = b.shape[1]
    grid = lambda meta: (kl.cdiv(m, meta["BLOCK_SIZE_M"]) * kl.cdiv(n, meta["BLOCK_SIZE_N"]),)  # noqa: E731
    kernel[grid](a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                 c.stride(0), c.stride(1), ACTIVATION="")  # fmt: skip


def compile_all(configs, inputs, arch: str) -> tuple[float, list[str]]:
    """Compile every config for every distinct specialization, in parallel, into the disk
    cache; (seconds, the configs that failed)."""
    base = matmul_kernel
    ref = KernelRef.of(base)
    jobs = {}
    for a, b, c in inputs.values():
        m, k = a.shape
        n = b.shape[1]
        args = (a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1))
        for config in configs:
            bound = base.binder.bind(args, {"ACTIVATION": "", **config.all_kwargs()})
            signature, constexprs, attrs = base.binder.compile_args(bound)
            job = CompileJob(ref, str(signature), constexprs, attrs or None, arch, dict(bound.options))
            jobs[repr(job)] = job
    start = time.perf_counter()
    pool = default_executor(len(jobs))
    try:
        futures = [pool.submit(compile_job, job) for job in jobs.values()] if pool else None
        reports = [f.result() for f in as_completed(futures)] if pool else [compile_job(j) for j in jobs.values()]
    finally:
        if pool:
            pool.shutdown()
        ref.release()
    failed = sorted({r.error.splitlines()[0][:100] for r in reports if r.error})
    return time.perf_counter() - start, failed


def sweep(name, configs, inputs, bench_executor, log) -> dict:
    """Tune every shape once (a fresh autotuner: nothing remembered); wall time and choices."""
    kernel = kl.autotune(configs, key=["M", "N", "K"], warmup=25, rep=100, progress=False,
                         bench_executor=bench_executor)(matmul_kernel)  # fmt: skip
    chosen, tables = {}, []
    start = time.perf_counter()
    for shape, (a, b, c) in inputs.items():
        launch(kernel, a, b, c)
        chosen[shape] = (kernel.best_config, min(r.kernel_ms for r in kernel.tuning.rows if r.kernel_ms))
        tables.append(str(kernel.tuning))
    wall = time.perf_counter() - start
    log.write(f"\n== {name}: {wall:.2f} s ==\n" + "\n\n".join(tables) + "\n")
    log.flush()
    return {"wall_s": wall, "chosen": chosen}


def check(torch, inputs) -> float:
    """The largest relative error of the last launch's C at any shape (fp32 accumulation)."""
    worst = 0.0
    for a, b, c in inputs.values():
        ref = a.double() @ b.double()
        worst = max(worst, float((c.double() - ref).norm() / ref.norm()))
    return worst


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small shapes, four configs")
    parser.add_argument("--max-configs", type=int, default=None, help="time only the first N configs of the grid")
    parser.add_argument("--log", default=None, help="where the tuning tables go (default: $OUT or results/)")
    opts = parser.parse_args()

    import torch

    from kernellab.backends.nvidia.driver import device_count, device_info

    shapes = QUICK_SHAPES if opts.quick else SHAPES
    configs = configs_of(QUICK_GRID if opts.quick else CONFIG_GRID)[: opts.max_configs]
    gpus = device_count()
    info = device_info(0)
    out_dir = Path(os.environ.get("OUT") or ROOT / "benchmarks" / "results")
    out_dir.mkdir(parents=True, exist_ok=True)
    log_path = Path(opts.log) if opts.log else out_dir / "autotune-sweep.log"
    print(f"{gpus} x {info.name} ({info.arch}); {len(configs)} configs x {len(shapes)} shapes, fp16 matmul")

    inputs = make_inputs(torch, shapes)
    compile_s, failed = compile_all(configs, inputs, info.arch)
    print(f"compile: {compile_s:.1f} s for every config in parallel (into the disk cache)"
          + (f"; {len(failed)} kinds of failure: {failed}" if failed else ""))  # fmt: skip

    runs = {}
    with open(log_path, "w") as log:
        runs["here"] = sweep("here (GPU 0, this process)", configs, inputs, None, log)
        start = time.perf_counter()
        with kl.DevicePool(gpus=[0]) as one:
            one.wait_ready()
            start_one = time.perf_counter() - start
            runs["pool x1"] = sweep("pool x1", configs, inputs, one, log)
        start = time.perf_counter()
        with kl.DevicePool() as every:
            every.wait_ready()
            start_all = time.perf_counter() - start
            runs[f"pool x{gpus}"] = sweep(f"pool x{gpus}", configs, inputs, every, log)
    error = check(torch, inputs)

    all_key = f"pool x{gpus}"
    base, pooled_one, pooled_all = runs["here"]["wall_s"], runs["pool x1"]["wall_s"], runs[all_key]["wall_s"]
    agree = {
        f"{m}x{n}x{k}": len({str(run["chosen"][(m, n, k)][0]) for run in runs.values()}) == 1
        for m, n, k in shapes
    }
    cublas = {}
    for (m, n, k), (a, b, _) in inputs.items():
        ms = kl.testing.do_bench(lambda a=a, b=b: torch.matmul(a, b), warmup=25, rep=100, return_mode="median")
        cublas[f"{m}x{n}x{k}"] = 2 * m * n * k / ms / 1e9

    print(f"\n{'run':<10} {'wall s':>8} {'speed-up':>9}")
    print(f"{'here':<10} {base:>8.2f} {1.0:>9.2f}")
    print(f"{'pool x1':<10} {pooled_one:>8.2f} {base / pooled_one:>9.2f}")
    print(f"{all_key:<10} {pooled_all:>8.2f} {base / pooled_all:>9.2f}   ({pooled_one / pooled_all:.2f}x pool x1; "
          f"target {0.8 * gpus:.1f}x)")  # fmt: skip
    print(f"pool start-up (once per session): x1 {start_one:.1f} s, x{gpus} {start_all:.1f} s")
    print(f"\n{'shape':<16} {'best config (' + all_key + ')':<72} {'TFLOP/s':>8} {'cuBLAS':>8} agree")
    for m, n, k in shapes:
        config, ms = runs[all_key]["chosen"][(m, n, k)]
        name = f"{m}x{n}x{k}"
        print(f"{name:<16} {str(config):<72} {2 * m * n * k / ms / 1e9:>8.1f} {cublas[name]:>8.1f} "
              f"{'yes' if agree[name] else 'NO'}")  # fmt: skip
    print(f"last launch's relative error (fp32 accumulation, fp16 C): {error:.2e}; tables: {log_path}")

    results = {
        "device": f"{gpus} x {info.name}", "date": datetime.date.today().isoformat(),
        "configs": len(configs), "shapes": [list(s) for s in shapes], "compile_s": compile_s,
        "wall_s": {name: run["wall_s"] for name, run in runs.items()},
        "speedup_vs_here": base / pooled_all, "speedup_vs_pool_x1": pooled_one / pooled_all,
        "pool_start_s": {"x1": start_one, f"x{gpus}": start_all}, "configs_agree": agree,
        "chosen": {name: {f"{m}x{n}x{k}": [str(c), ms] for (m, n, k), (c, ms) in run["chosen"].items()}
                   for name, run in runs.items()},
        "cublas_tflops": cublas, "relative_error": error,
    }  # fmt: skip
    slug = info.name.lower().replace(" ", "-")
    path = out_dir / f"{slug}-x{gpus}-{results['date']}-autotune-sweep.json"
    path.write_text(json.dumps(results, indent=1))
    print(f"results: {path}")


if __name__ == "__main__":
    main()
