"""The short tour `python -m kernellab` gives: compile, inspect and run the vector-add tutorial
(kernellab.examples).

It is the smallest end-to-end check that a fresh install works: the frontend, the TTIR passes,
the GPU pipeline down to PTX for sm_90 (compiling needs no GPU) and the interpreter all take
part, and the result is compared with numpy.
"""

from __future__ import annotations

import numpy as np

import kernellab as kl
from kernellab.examples import add, add_kernel


def pass_table(passes) -> str:
    """One line per pass: its name, whether it changed the IR, and its time."""
    return kl.testing.format_table(
        ["pass", "changed", "ms"], [[p.name, str(p.changed), round(p.seconds * 1e3, 3)] for p in passes]
    )


def show_gpu_stages(spec: dict, target: str = "sm_90") -> None:
    """The same kernel compiled for a GPU (no GPU needed): the TTGIR with its layouts and the PTX,
    specialized as a launch with real arrays would (pointers 16-byte aligned, the size a multiple
    of 16), so the loads are vectorized."""
    aligned = {name: {"tt.divisibility": 16} for name in ("x_ptr", "y_ptr", "output_ptr", "n_elements")}
    try:
        ck = kl.compile(add_kernel, target=target, attrs=aligned, **spec)
    except Exception as error:  # e.g. no nvJitLink: the interpreter part of the tour still runs
        print(f"== {target}: not compiled ({type(error).__name__}: {error})\n")
        return
    print(f"== TTGIR for {target} (layouts chosen by the compiler)\n{ck.asm['ttgir']}")
    print(f"== PTX for {target}\n{ck.asm['ptx']}")


def main() -> int:
    """Run the tour; returns a process exit status (1 if the result is wrong)."""
    spec = dict(signature="*fp32,*fp32,*fp32,i32", constexprs={"BLOCK_SIZE": 1024})
    ck = kl.compile(add_kernel, **spec)
    print(f"== {ck!r}\n\n== TTIR\n{ck.asm['ttir']}")
    print(f"== TTIR passes\n{pass_table(ck.passes)}\n")
    show_gpu_stages(spec)

    n = 98432
    rng = np.random.default_rng()
    x = rng.standard_normal(n, dtype=np.float32)
    y = rng.standard_normal(n, dtype=np.float32)
    out = np.full(n, np.nan, dtype=np.float32)

    def launch():
        add(x, y, out, BLOCK_SIZE=1024)

    launch()
    expected = x.astype(np.float64) + y
    error = float(np.max(np.abs(out - expected)))
    ms = kl.testing.do_bench(launch, warmup=10, rep=50, return_mode="median")
    print(f"== run on the interpreter: {n} elements, {kl.cdiv(n, 1024)} programs")
    print(f"max |out - numpy| = {error:.3g}; interpreter time {ms:.2f} ms per launch (median: the "
          "numpy interpreter's speed, not a GPU's)")
    ok = bool(np.all(np.abs(out - expected) <= 1e-6 * (1 + np.abs(expected))))
    print("result matches numpy" if ok else "RESULT DOES NOT MATCH NUMPY")
    return 0 if ok else 1
