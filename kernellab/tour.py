"""The short tour `python -m kernellab` gives: compile, inspect and run the vector-add tutorial
(kernellab.examples).

It is the smallest end-to-end check that a fresh install works: the frontend, the TTIR passes
and the interpreter all take part, and the result is compared with numpy.
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


def main() -> int:
    """Run the tour; returns a process exit status (1 if the result is wrong)."""
    ck = kl.compile(add_kernel, signature="*fp32,*fp32,*fp32,i32", constexprs={"BLOCK_SIZE": 1024})
    print(f"== {ck!r}\n\n== TTIR\n{ck.asm['ttir']}")
    print(f"== TTIR passes\n{pass_table(ck.passes)}\n")

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
    print(f"max |out - numpy| = {error:.3g}; {ms:.2f} ms per launch (median)")
    ok = bool(np.all(np.abs(out - expected) <= 1e-6 * (1 + np.abs(expected))))
    print("result matches numpy" if ok else "RESULT DOES NOT MATCH NUMPY")
    return 0 if ok else 1
