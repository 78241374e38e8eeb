"""Do warps pay for reducing kernels on the CPU? Such a kernel kept one warp, one thread
holding its whole row; warps of 64 elements run in turn (in phases between the reductions'
exchanges, as the CPU backend now runs them) each hold 4 AVX-512 registers' worth. This
measures the pieces without the warps: the same kernels working on their row in pieces, the
kernel as written (the row at once: warps, now) next to them (docs/ARCHITECTURE.md, the CPU
section, has the numbers).

    python3 benchmarks/cpu_pieces.py

  softmax     4096 x 1024 fp32, one program per row: the row at once (16 warps in phases) against
              an online max/sum pass and a write pass over 64/128/256-element pieces; all cores
              and 1 thread
  layer norm  4096 x 4096 fp32: its own loop over the row with BLOCK_SIZE 1024/256/64
  reference   numpy's softmax and layer norm, and a 64 MB numpy copy (memory speed)
GB/s count each array read and written once; medians of 7 after a warm-up; every result is
checked against numpy first.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import kernellab as kl
import kernellab.language as tl
from kernellab.backends.cpu import launcher
from kernellab.examples import layer_norm_kernel, softmax_kernel, softmax_reference

from cpu import _median  # benchmarks/cpu.py, beside this script


@kl.jit
def softmax_pieces(out_ptr, in_ptr, stride, n_cols, BLOCK: tl.constexpr, PIECE: tl.constexpr):
    """Softmax of one row per program, PIECE elements at a time: an online max/sum pass, then
    the write pass."""
    row = tl.program_id(0)
    m = tl.full([PIECE], -float("inf"), tl.float32)
    s = tl.zeros([PIECE], tl.float32)
    for off in range(0, BLOCK, PIECE):
        cols = off + tl.arange(0, PIECE)
        x = tl.load(in_ptr + row * stride + cols, mask=cols < n_cols, other=-float("inf"))
        new = tl.maximum(m, x)
        s = s * tl.exp(m - new) + tl.exp(x - new)
        m = new
    top = tl.max(m, 0)
    total = tl.sum(s * tl.exp(m - top), 0)
    for off in range(0, BLOCK, PIECE):
        cols = off + tl.arange(0, PIECE)
        x = tl.load(in_ptr + row * stride + cols, mask=cols < n_cols, other=-float("inf"))
        tl.store(out_ptr + row * stride + cols, tl.exp(x - top) / total, mask=cols < n_cols)


def softmax() -> None:
    rows, cols = 4096, 1024
    x = np.random.default_rng().standard_normal((rows, cols), dtype=np.float32)
    out = np.full_like(x, np.nan)
    expected, gb = softmax_reference(x), 2 * 4 * rows * cols / 1e9
    runs = {
        "the row at once (16 warps)": lambda: softmax_kernel[(rows,)](
            out, x, cols, cols, cols, BLOCK_SIZE=1024, target="cpu"
        )
    }
    for piece in (64, 128, 256):
        runs[f"{piece}-element pieces"] = lambda piece=piece: softmax_pieces[(rows,)](
            out, x, cols, cols, BLOCK=1024, PIECE=piece, target="cpu")  # fmt: skip
    for threads, label in ((None, "all cores"), (1, "1 thread")):
        launcher.set_num_threads(threads)
        for name, run in runs.items():
            out.fill(np.nan)
            run()
            np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-7)
            print(f"softmax {rows}x{cols}, {name}, {label}: {gb / _median(run, 7):.1f} GB/s")
    launcher.set_num_threads(None)

    def numpy_softmax():
        e = np.exp(x - x.max(axis=1, keepdims=True))
        np.divide(e, e.sum(axis=1, keepdims=True), out=out)

    print(f"numpy softmax: {gb / _median(numpy_softmax, 7):.1f} GB/s")


def layer_norm() -> None:
    rows, cols, eps = 4096, 4096, 1e-5
    rng = np.random.default_rng()
    x = rng.standard_normal((rows, cols), dtype=np.float32)
    w, b = rng.standard_normal(cols, dtype=np.float32), rng.standard_normal(cols, dtype=np.float32)
    y, mean, rstd = (
        np.full_like(x, np.nan),
        np.full(rows, np.nan, np.float32),
        np.full(rows, np.nan, np.float32),
    )
    x64 = x.astype(np.float64)
    expected = (x64 - x64.mean(1, keepdims=True)) / np.sqrt(x64.var(1, keepdims=True) + eps) * w + b
    gb = (2 * rows * cols + 2 * cols) * 4 / 1e9
    for block in (1024, 256, 64):

        def run(block=block):
            layer_norm_kernel[(rows,)](
                x, y, w, b, mean, rstd, cols, cols, eps, BLOCK_SIZE=block, target="cpu"
            )

        y.fill(np.nan)
        run()
        np.testing.assert_allclose(y, expected, rtol=1e-4, atol=1e-4)
        print(
            f"layer norm {rows}x{cols}, BLOCK_SIZE={block}, all cores: {gb / _median(run, 7):.1f} GB/s"
        )

    def numpy_layer_norm():
        m, v = x.mean(axis=1, keepdims=True), x.var(axis=1, keepdims=True)
        np.multiply((x - m) / np.sqrt(v + eps), w, out=y)
        y.__iadd__(b)

    print(f"numpy layer norm: {gb / _median(numpy_layer_norm, 7):.1f} GB/s")
    copy = np.empty_like(x)
    print(f"numpy copy, 64 MB: {2 * x.nbytes / 1e9 / _median(lambda: np.copyto(copy, x), 7):.1f} GB/s")


if __name__ == "__main__":
    softmax()
    layer_norm()
