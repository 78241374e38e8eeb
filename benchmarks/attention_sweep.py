"""Fused attention forward over a grid of tile configs, kernellab and Triton in both kernel orders.

    python3 benchmarks/attention_sweep.py                   # head dim 64, N 1024/4096/16384 (about 5 min)
    python3 benchmarks/attention_sweep.py --head-dim 128 --seqs 4096

gpu.py's attention section runs one config per head dim (gpu.attention_config) for every
compiler and order. This asks which config each of them is fastest with: for every case (N,
causal or not) each (compiler, order) runs every config of CONFIGS that the kernel accepts, timed
once (gpu.Timer.median_ms: L2 flushed, median); then each one's best config is timed again, the
four of them in interleaved rounds (gpu.Timer.interleaved), and their TFLOP/s and ratios are
printed. The kernels and their checks are gpu.py's (examples.attention_fwd_kernel and
examples.attention_fwd_overlapped_kernel, and the same texts under triton.jit). Results go to
benchmarks/results/<device>-<date>-attention-sweep.json (and $OUT/ when OUT is set).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import gpu  # noqa: E402  (the benchmarks' timer, kernels and checks)

# (BLOCK_M, BLOCK_N, num_warps, num_stages): part of Triton's tutorial 06 grid (BLOCK_M 64 or
# 128, BLOCK_N 32 to 128, 4 or 8 warps, 2 to 4 stages)
CONFIGS = [
    (128, 64, 8, 3), (128, 64, 8, 2), (128, 128, 8, 2), (128, 128, 8, 3), (128, 64, 4, 3),
    (128, 32, 8, 3), (64, 64, 4, 3), (64, 32, 4, 4),
]  # fmt: skip


def providers():
    """{name: kernel}: both orders on both compilers."""
    found = {
        "kernellab tutorial order": gpu.attention_fwd_kernel,
        "kernellab overlapped order": gpu.attention_fwd_overlapped_kernel,
    }
    if gpu.triton is not None:
        found["triton tutorial order"] = gpu.triton_attention_fwd_kernel
        found["triton overlapped order"] = gpu.triton_attention_fwd_overlapped_kernel
    return found


def sweep_case(torch, timer, n_ctx: int, head_dim: int, causal: bool) -> dict:
    flops, _, run = gpu.attention_problem(torch, n_ctx, head_dim, causal)

    def launcher(kernel, config):
        launch, err = run(kernel, config)
        if not err <= gpu.ATTENTION_TOLERANCE:
            raise AssertionError(f"relative error {err:.3g}")
        return launch

    tflops = lambda ms: flops / (ms * 1e-3) / 1e12  # noqa: E731
    table, best = {}, {}
    for name, kernel in providers().items():
        overlapped = "overlapped" in name
        for config in CONFIGS:
            block_m, block_n = config[:2]
            if n_ctx % block_m or (overlapped and causal and block_m < block_n):
                continue  # the overlapped order runs one key tile before its loop
            try:
                launch = launcher(kernel, config)
                value = round(tflops(timer.median_ms(launch)[0]), 1)
            except Exception as e:  # a config a compiler refuses (shared memory, registers)
                value = f"{type(e).__name__}: {str(e).splitlines()[0][:80]}"
            table.setdefault(str(config), {})[name] = value
            if isinstance(value, float) and value > best.get(name, (None, 0.0))[1]:
                best[name] = (config, value)
    launches = {name: launcher(providers()[name], config) for name, (config, _) in best.items()}
    final = {name: round(tflops(ms), 1) for name, (ms, _) in timer.interleaved(launches).items()}
    return {
        "table": table,
        "best": {name: {"config": list(best[name][0]), "tflops": final[name]} for name in best},
    }


def render(case: str, result: dict) -> str:
    names = list(providers())
    head = ["config"] + names
    rows = [
        [config] + [str(cells.get(n, "-")) for n in names]
        for config, cells in result["table"].items()
    ]
    best = result["best"]
    rows.append(
        ["best, interleaved"]
        + [f"{best[n]['tflops']} {tuple(best[n]['config'])}" if n in best else "-" for n in names]
    )
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    lines = [f"{case} (TFLOP/s)", "  ".join(c.rjust(w) for c, w in zip(head, widths))]
    lines += ["  ".join(c.rjust(w) for c, w in zip(r, widths)) for r in rows]
    kl = max((best[n]["tflops"] for n in best if n.startswith("kernellab")), default=None)
    tr = max((best[n]["tflops"] for n in best if n.startswith("triton")), default=None)
    if kl and tr:
        lines.append(f"kernellab's best / Triton's best: {kl / tr:.3f}")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--head-dim", type=int, default=64)
    parser.add_argument(
        "--seqs", default="1024,4096,16384", help="comma-separated sequence lengths"
    )
    args = parser.parse_args(argv)
    import torch

    timer = gpu.Timer(torch)
    device = torch.cuda.get_device_name().replace(" ", "-")
    results = {}
    for n_ctx in [int(s) for s in args.seqs.split(",")]:
        for causal in (False, True):
            case = f"N={n_ctx} D={args.head_dim}{' causal' if causal else ''}"
            results[case] = sweep_case(torch, timer, n_ctx, args.head_dim, causal)
            print(render(case, results[case]), "\n", flush=True)
    record = {"device": device, "date": str(datetime.date.today()), "command": " ".join(sys.argv),
              "versions": gpu.versions(), "cases": results}  # fmt: skip
    name = f"{device}-{datetime.date.today()}-attention-sweep.json"
    for folder in [gpu.ROOT / "benchmarks" / "results"] + (
        [Path(os.environ["OUT"])] if os.environ.get("OUT") else []
    ):
        folder.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(json.dumps(record, indent=1))
    print("results:", name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
