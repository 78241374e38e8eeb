"""How compile time grows with the block size: vector add, kernellab next to Triton.

    python3 benchmarks/compile_scaling.py              # Triton's column where it is installed
    python3 benchmarks/compile_scaling.py --limit 60   # seconds allowed per compile

Each compile runs in a fresh process with an empty cache (kernellab: KERNELLAB_CACHE_DIR;
Triton: TRITON_CACHE_DIR), for sm_90 (kernellab compiles without a GPU; Triton needs one), 4
warps, every pointer 16-byte aligned; the time is the compile call alone (imports excluded),
ptxas included. Block sizes 2^10 ... 2^16, then 2^20 (Triton's largest tensor) and 2^21, which
both compilers must refuse at once. A compile past --limit is killed and reported as such.
Results: benchmarks/results/compile-scaling-<machine>-<date>-<compilers>.json (and $OUT/ when OUT is
set), <machine> naming the GPUs and the cores the compiles ran on.
"""

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BLOCKS = [2**p for p in range(10, 17)] + [2**20, 2**21]

# the same kernel text for both compilers (each child imports its own `tl`)
ADD_KERNEL = """
@{jit}
def add_kernel(x_ptr, y_ptr, output_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    tl.store(output_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask),
             mask=mask)
"""

KERNELLAB = """
import sys, time
sys.path.insert(0, sys.argv[2])
import kernellab as kl
import kernellab.language as tl
""" + ADD_KERNEL.format(jit="kl.jit") + """
aligned = {"tt.divisibility": 16}
start = time.perf_counter()
try:
    ck = kl.compile(add_kernel, signature="*fp32,*fp32,*fp32,i32", constexprs={"BLOCK_SIZE": int(sys.argv[1])},
                    target="sm_90", num_warps=4,
                    attrs={"x_ptr": aligned, "y_ptr": aligned, "output_ptr": aligned, "n_elements": aligned})
    print("OK", time.perf_counter() - start, ck.metadata.registers, ck.metadata.spills)
except Exception as e:
    print("REFUSED", time.perf_counter() - start, type(e).__name__, str(e).strip().splitlines()[-1][:120])
"""

TRITON = """
import sys, time
import torch
import triton
import triton.language as tl
""" + ADD_KERNEL.format(jit="triton.jit") + """
x = torch.empty(1 << 10, device="cuda")
start = time.perf_counter()
try:
    k = add_kernel.warmup(x, x, x, 1 << 20, BLOCK_SIZE=int(sys.argv[1]), grid=(1,), num_warps=4)
    k._init_handles()
    print("OK", time.perf_counter() - start, k.n_regs, k.n_spills)
except Exception as e:
    print("REFUSED", time.perf_counter() - start, type(e).__name__, str(e).strip().splitlines()[-1][:120])
"""


def run(source: str, block: int, env: dict, limit: float) -> dict:
    """One compile in a fresh process (the kernel in a file: both compilers read its source)."""
    with tempfile.TemporaryDirectory() as scratch:
        env = {**os.environ, **{k: v.replace("{cache}", scratch) for k, v in env.items()}}
        script = Path(scratch) / "compile_child.py"
        script.write_text(source)
        try:
            done = subprocess.run([sys.executable, str(script), str(block), str(ROOT)], env=env,
                                  capture_output=True, text=True, timeout=limit)  # fmt: skip
        except subprocess.TimeoutExpired:
            return {"status": "timeout", "seconds": limit}
    line = next((l for l in done.stdout.splitlines() if l.startswith(("OK", "REFUSED"))), None)
    if line is None:
        return {"status": "crashed", "detail": (done.stderr or done.stdout).strip().splitlines()[-1:]}
    status, seconds, *rest = line.split(" ", 3)
    out = {"status": status.lower(), "seconds": float(seconds)}
    if status == "OK":
        out["registers"], out["spills"] = rest[0], rest[1]
    else:
        out["detail"] = " ".join(rest)
    return out


def cell(r: dict | None) -> str:
    if r is None:
        return "-"
    if r["status"] == "ok":
        return f"{r['seconds']:.2f} s"
    if r["status"] == "timeout":
        return f"> {r['seconds']:.0f} s"
    return r["status"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=float, default=120.0, help="seconds allowed per compile")
    parser.add_argument("--blocks", default=None, help="comma list of block sizes (default 2^10..2^16, 2^20, 2^21)")
    parser.add_argument("--compilers", default="kernellab,triton",
                        help="which columns to measure (two runs with one each can go side by side)")
    opts = parser.parse_args()
    blocks = [int(b) for b in opts.blocks.split(",")] if opts.blocks else BLOCKS
    try:
        import torch
        import triton  # noqa: F401

        triton_ok = torch.cuda.is_available() and "triton" in opts.compilers
    except Exception:  # noqa: BLE001 - no Triton (or no GPU): kernellab's column only
        triton_ok = False
    ours_ok = "kernellab" in opts.compilers
    rows = []
    print(f"{'BLOCK':>9} {'kernellab':>11} {'Triton':>11}  notes", flush=True)
    for block in blocks:
        ours = run(KERNELLAB, block, {"KERNELLAB_CACHE_DIR": "{cache}"}, opts.limit) if ours_ok else None
        theirs = run(TRITON, block, {"TRITON_CACHE_DIR": "{cache}"}, opts.limit) if triton_ok else None
        notes = "; ".join(f"{who}: {r['detail']}" for who, r in (("kernellab", ours), ("triton", theirs))
                          if r and r.get("detail"))  # fmt: skip
        print(f"{block:>9} {cell(ours):>11} {cell(theirs):>11}  {notes}", flush=True)
        rows.append({"block": block, "kernellab": ours, "triton": theirs})
    host = machine()
    results = {"host": host, "date": datetime.date.today().isoformat(), "target": "sm_90",
               "limit_s": opts.limit, "rows": rows}  # fmt: skip
    slug = host.split(" (")[0].lower().replace(" ", "-")
    name = f"compile-scaling-{slug}-{results['date']}-{opts.compilers.replace(',', '-')}.json"
    for folder in filter(None, [ROOT / "benchmarks" / "results", os.environ.get("OUT")]):
        Path(folder).mkdir(parents=True, exist_ok=True)
        (Path(folder) / name).write_text(json.dumps(results, indent=1))


def machine() -> str:
    """The GPUs (from nvidia-smi) and the CPU cores: host names say nothing on lent machines."""
    try:
        names = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
                               capture_output=True, text=True, timeout=30).stdout.split("\n")
        names = [n.strip() for n in names if n.strip()]
    except (OSError, subprocess.SubprocessError):
        names = []
    gpus = f"{len(names)} x {names[0]}" if names else platform.node()
    return f"{gpus} ({os.cpu_count()} cores)"


if __name__ == "__main__":
    main()
