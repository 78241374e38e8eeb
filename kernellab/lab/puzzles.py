"""The exercise series of notebooks/exercises: eight puzzles, from one block to a quantized matmul.

A `Puzzle` is data: what the kernel must do (`spec`), the kernel's signature (`signature`), how
to make fresh random inputs (`make`), the launch (`grid`, `meta`), which arguments it writes
(`outputs`), a numpy reference in float64 (`reference`), honest tolerances and a `hint`.
`kl.lab.check(kernel, puzzle)` (lab/checks.py) runs a learner's kernel against one. The
solutions live away from the learner, in notebooks/exercises/solutions.py.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


@dataclass(frozen=True)
class Puzzle:
    name: str
    title: str
    spec: str
    signature: str  # the kernel's `def` line, what the learner's cell starts from
    make: Callable[[np.random.Generator], dict]  # runtime argument name → value, in order
    meta: dict  # the constexprs the check passes
    grid: Callable[[dict], tuple]  # the grid, from the arguments and meta
    outputs: tuple[str, ...]  # the arguments the kernel writes (poisoned before the run)
    reference: Callable[[dict], dict]  # float64 inputs → {output: expected float64 array}
    hint: str
    atol: float = 1e-6
    rtol: float = 1e-6
    # a check beyond the values: (access trace, arguments, meta) → a problem, or None
    also: Callable | None = field(default=None, repr=False)

    def describe(self) -> str:
        """The puzzle as the notebook prints it: title, spec, signature, launch."""
        meta = ", ".join(f"{k}={v}" for k, v in self.meta.items())
        return f"{self.title}\n\n{self.spec}\n\n    {self.signature}\n\nchecked with {meta}"

    def __repr__(self) -> str:
        return f"<Puzzle {self.name}: {self.title}>"


def _f32(rng, *shape, low=-1.0, high=1.0):
    return rng.uniform(low, high, size=shape).astype(np.float32)


def _empty(*shape, dtype=np.float32):
    return np.empty(shape, dtype)


# -- 1. load a block ---------------------------------------------------------------------------

LOAD_BLOCK = Puzzle(
    name="load_block",
    title="1. Load a block",
    spec=(
        "One program. Load the BLOCK elements of x, compute 2·x + 1 and store them to z.\n"
        "tl.arange(0, BLOCK) is the vector of offsets 0..BLOCK-1; x_ptr + offsets points at them."
    ),
    signature="def load_block(x_ptr, z_ptr, BLOCK: tl.constexpr):",
    make=lambda rng: {"x_ptr": _f32(rng, 128), "z_ptr": _empty(128)},
    meta={"BLOCK": 128},
    grid=lambda a: (1,),
    outputs=("z_ptr",),
    reference=lambda a: {"z_ptr": 2 * a["x_ptr"] + 1},
    hint="offs = tl.arange(0, BLOCK); x = tl.load(x_ptr + offs); tl.store(z_ptr + offs, ...)",
)

# -- 2. masks ----------------------------------------------------------------------------------

MASKS = Puzzle(
    name="masks",
    title="2. Masks: a length that is not a multiple of the block",
    spec=(
        "z[i] = x[i] · y[i] for i < n, with n = 1000 and BLOCK = 256: four programs, and the last\n"
        "one's 24 highest lanes point past the end of the arrays. Program p handles elements\n"
        "p·BLOCK .. p·BLOCK + BLOCK - 1; a lane past n must neither load nor store."
    ),
    signature="def masks(x_ptr, y_ptr, z_ptr, n, BLOCK: tl.constexpr):",
    make=lambda rng: {"x_ptr": _f32(rng, 1000), "y_ptr": _f32(rng, 1000), "z_ptr": _empty(1000), "n": 1000},
    meta={"BLOCK": 256},
    grid=lambda a: (cdiv(a["n"], 256),),
    outputs=("z_ptr",),
    reference=lambda a: {"z_ptr": a["x_ptr"] * a["y_ptr"]},
    hint=(
        "offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK); mask = offs < n; pass mask= to "
        "both tl.load calls and to tl.store."
    ),
)

# -- 3. 2-D pointers ---------------------------------------------------------------------------

POINTERS_2D = Puzzle(
    name="pointers_2d",
    title="3. 2-D pointers: transpose",
    spec=(
        "z = xᵀ for an M×N matrix x (M = 50, N = 70; z is N×M). A 2-D grid: program (i, j) owns\n"
        "the BLOCK_M×BLOCK_N tile of x at rows i·BLOCK_M.., columns j·BLOCK_N... Element (r, c) of\n"
        "x is at x_ptr + r·stride_x + c. Build 2-D offsets by broadcasting a column of row\n"
        "offsets against a row of column offsets, and mask both edges."
    ),
    signature=(
        "def pointers_2d(x_ptr, z_ptr, M, N, stride_x, stride_z, BLOCK_M: tl.constexpr, "
        "BLOCK_N: tl.constexpr):"
    ),
    make=lambda rng: {"x_ptr": _f32(rng, 50, 70), "z_ptr": _empty(70, 50), "M": 50, "N": 70,
                      "stride_x": 70, "stride_z": 50},  # fmt: skip
    meta={"BLOCK_M": 32, "BLOCK_N": 32},
    grid=lambda a: (cdiv(a["M"], 32), cdiv(a["N"], 32)),
    outputs=("z_ptr",),
    reference=lambda a: {"z_ptr": a["x_ptr"].T},
    hint=(
        "rows[:, None] is a column, cols[None, :] a row: x_ptr + rows[:, None] * stride_x + "
        "cols[None, :] is the tile's pointers; store at z_ptr + cols[None, :] * stride_z + "
        "rows[:, None] with mask (rows[:, None] < M) & (cols[None, :] < N)."
    ),
)

# -- 4. reductions -----------------------------------------------------------------------------

ROW_MAX = Puzzle(
    name="row_max",
    title="4. Reductions: the maximum of each row",
    spec=(
        "z[r] = max over c of x[r, c], for a 40×100 matrix of negative numbers, one program per\n"
        "row with BLOCK_N = 128 ≥ N. The 28 lanes past the row's end load nothing — and what a\n"
        "masked load gives them (other=) enters the maximum."
    ),
    signature="def row_max(x_ptr, z_ptr, N, stride_x, BLOCK_N: tl.constexpr):",
    make=lambda rng: {"x_ptr": _f32(rng, 40, 100, low=-5.0, high=-1.0), "z_ptr": _empty(40),
                      "N": 100, "stride_x": 100},  # fmt: skip
    meta={"BLOCK_N": 128},
    grid=lambda a: (a["x_ptr"].shape[0],),
    outputs=("z_ptr",),
    reference=lambda a: {"z_ptr": a["x_ptr"].max(axis=1)},
    hint=(
        "The masked lanes must not win the maximum: tl.load(..., mask=cols < N, other=-float('inf')), "
        "then tl.max(x, axis=0)."
    ),
)

# -- 5. softmax --------------------------------------------------------------------------------


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


SOFTMAX = Puzzle(
    name="softmax",
    title="5. Softmax: a row in SRAM",
    spec=(
        "z[r, :] = softmax(x[r, :]) for a 64×200 matrix with entries up to ±100, one program per\n"
        "row: load the row once, subtract its maximum (exp(100) overflows fp32, whose largest\n"
        "value is about exp(88.7)), exponentiate, divide by the sum, store. The row never goes\n"
        "back to DRAM in between."
    ),
    signature="def softmax(x_ptr, z_ptr, N, stride_x, stride_z, BLOCK_N: tl.constexpr):",
    make=lambda rng: {"x_ptr": _f32(rng, 64, 200, low=-100.0, high=100.0), "z_ptr": _empty(64, 200),
                      "N": 200, "stride_x": 200, "stride_z": 200},  # fmt: skip
    meta={"BLOCK_N": 256},
    grid=lambda a: (a["x_ptr"].shape[0],),
    outputs=("z_ptr",),
    reference=lambda a: {"z_ptr": _softmax(a["x_ptr"])},
    atol=1e-7,
    rtol=1e-5,
    hint=(
        "other=-float('inf') for the lanes past N (exp(-inf) = 0 adds nothing to the sum); "
        "x - tl.max(x, axis=0), tl.exp, / tl.sum(e, axis=0); store with mask=cols < N."
    ),
)

# -- 6. tiled matmul, grouped order ------------------------------------------------------------


def grouped_tile(pid: int, tiles_m: int, tiles_n: int, group_m: int) -> tuple[int, int]:
    """(tile row, tile column) program `pid` computes in the grouped order: GROUP_M tile rows
    at a time, walked column by column, so consecutive programs share the tiles of A and B."""
    per_group = group_m * tiles_n
    first_m = (pid // per_group) * group_m
    rows = min(tiles_m - first_m, group_m)
    return first_m + (pid % per_group) % rows, (pid % per_group) // rows


def _matmul_inputs(rng) -> dict:
    M, N, K = 80, 72, 64
    a = rng.uniform(-1, 1, (M, K)).astype(np.float16)
    b = rng.uniform(-1, 1, (K, N)).astype(np.float16)
    return {"a_ptr": a, "b_ptr": b, "c_ptr": _empty(M, N), "M": M, "N": N, "K": K,
            "stride_am": K, "stride_bk": N, "stride_cm": N}  # fmt: skip


def _grouped_order_problem(trace, args: dict, meta: dict) -> str | None:
    """Whether each program stored the C tile the grouped order gives it (values can be right
    in any order, so the order is checked on the access trace)."""
    bm, bn, group = meta["BLOCK_M"], meta["BLOCK_N"], meta["GROUP_M"]
    tiles_m, tiles_n = cdiv(args["M"], bm), cdiv(args["N"], bn)
    width = args["stride_cm"]
    for record in trace.records:
        if record.arg != "c_ptr" or record.kind != "store":
            continue
        for program, indices, mask in zip(record.programs, record.indices, record.mask):
            written = np.asarray(indices)[np.asarray(mask)]
            if written.size == 0:
                continue
            pid = int(program[0])
            first = int(written.min())
            got = (first // width // bm, first % width // bn)
            want = grouped_tile(pid, tiles_m, tiles_n, group)
            if got != want:
                return (f"program {pid} computed C tile {got}, but the grouped order (GROUP_M={group}) "
                        f"gives it tile {want}: the values are right, the order is row-major")  # fmt: skip
    return None


GROUPED_MATMUL = Puzzle(
    name="grouped_matmul",
    title="6. Tiled matmul in grouped order",
    spec=(
        "C = A·B for fp16 A (80×64) and B (64×72), fp32 C, with BLOCK_M = BLOCK_N = BLOCK_K = 16\n"
        "and a 1-D grid of 5·5 = 25 programs. Each program owns one 16×16 tile of C: it walks\n"
        "along K, loading a 16×16 tile of A and of B per step, and accumulates tl.dot in fp32.\n"
        "Program ids map to tiles in grouped order: GROUP_M = 2 tile rows at a time, down the\n"
        "column first (program 0 → tile (0, 0), 1 → (1, 0), 2 → (0, 1), ...), so programs running\n"
        "together reuse the same tiles of A and B from L2. The check verifies the order too."
    ),
    signature=(
        "def grouped_matmul(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm, "
        "BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):"
    ),
    make=_matmul_inputs,
    meta={"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16, "GROUP_M": 2},
    grid=lambda a: (cdiv(a["M"], 16) * cdiv(a["N"], 16),),
    outputs=("c_ptr",),
    reference=lambda a: {"c_ptr": a["a_ptr"] @ a["b_ptr"]},
    atol=1e-4,  # fp16 inputs: products exact in fp32, 64 fp32 additions
    rtol=1e-5,
    also=_grouped_order_problem,
    hint=(
        "per_group = GROUP_M * tiles_n; first_m = (pid // per_group) * GROUP_M; "
        "rows = min(tiles_m - first_m, GROUP_M); pid_m = first_m + (pid % per_group) % rows; "
        "pid_n = (pid % per_group) // rows. Then for k in range(0, K, BLOCK_K): load both tiles "
        "(masked at the edges, other=0) and acc += tl.dot(a, b)."
    ),
)

# -- 7. flash attention ------------------------------------------------------------------------


def _attention_inputs(rng) -> dict:
    seq, head = 100, 32
    q, k, v = (rng.uniform(-1, 1, (seq, head)).astype(np.float16) for _ in range(3))
    return {"q_ptr": q, "k_ptr": k, "v_ptr": v, "o_ptr": _empty(seq, head), "seq": seq,
            "scale": 1.0 / np.sqrt(head), "stride": head}  # fmt: skip


def _attention(a: dict) -> dict:
    s = (a["q_ptr"] @ a["k_ptr"].T) * a["scale"]
    return {"o_ptr": _softmax(s) @ a["v_ptr"]}


FLASH_ATTENTION = Puzzle(
    name="flash_attention",
    title="7. Flash attention: softmax(Q·Kᵀ·scale)·V without the seq×seq matrix",
    spec=(
        "O = softmax(Q·Kᵀ·scale)·V for one head: fp16 Q, K, V of 100×32, fp32 O. Program i owns\n"
        "BLOCK_M = 32 rows of Q and walks K and V in blocks of BLOCK_N = 32 rows, keeping per row\n"
        "a running maximum m, a running sum l and an accumulator. For each block: scores\n"
        "s = q·kᵀ·scale, new maximum m' = max(m, rowmax(s)), p = exp(s - m'), rescale the old\n"
        "l and acc by exp(m - m'), add rowsum(p) and p·v. At the end O = acc / l. Scores of key\n"
        "rows past seq must be -inf."
    ),
    signature=(
        "def flash_attention(q_ptr, k_ptr, v_ptr, o_ptr, seq, scale, stride, "
        "BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, HEAD: tl.constexpr):"
    ),
    make=_attention_inputs,
    meta={"BLOCK_M": 32, "BLOCK_N": 32, "HEAD": 32},
    grid=lambda a: (cdiv(a["seq"], 32),),
    outputs=("o_ptr",),
    reference=_attention,
    atol=2e-3,  # p is rounded to fp16 before p·v (as on the tensor cores): 2^-11 relative each
    rtol=2e-3,
    hint=(
        "running_max = tl.full((BLOCK_M,), -float('inf'), tl.float32); s = tl.dot(q, tl.trans(k)) "
        "* scale; s = tl.where(rn[None, :] < seq, s, -float('inf')); correction = "
        "tl.exp(running_max - new_max); acc = acc * correction[:, None] + tl.dot(p.to(tl.float16), v)."
    ),
)

# -- 8. quantized matmul -----------------------------------------------------------------------


def _quantized_inputs(rng) -> dict:
    M, N, K, group = 48, 40, 128, 32
    a = rng.uniform(-1, 1, (M, K)).astype(np.float16)
    w = rng.integers(-127, 128, (K, N), dtype=np.int8)
    scales = rng.uniform(0.001, 0.02, (K // group, N)).astype(np.float32)
    return {"a_ptr": a, "w_ptr": w, "scale_ptr": scales, "c_ptr": _empty(M, N), "M": M, "N": N,
            "K": K, "stride_am": K, "stride_wk": N, "stride_sg": N, "stride_cm": N}  # fmt: skip


def _dequantized(a: dict) -> dict:
    group = a["w_ptr"].shape[0] // a["scale_ptr"].shape[0]
    weights = a["w_ptr"] * np.repeat(a["scale_ptr"], group, axis=0)
    return {"c_ptr": a["a_ptr"] @ weights}


QUANTIZED_MATMUL = Puzzle(
    name="quantized_matmul",
    title="8. Quantized matmul: int8 weights with group scales",
    spec=(
        "C = A·W for fp16 A (48×128) and int8 weights (128×40) stored with one fp32 scale per\n"
        "group of GROUP_K = 32 rows and column: W[k, n] = w[k, n] · scale[k // 32, n]. A 2-D grid\n"
        "of BLOCK_M×BLOCK_N tiles (16×16); walk K one group at a time, convert the int8 tile\n"
        "(exact in fp16), tl.dot it with A's tile, and apply the group's scales."
    ),
    signature=(
        "def quantized_matmul(a_ptr, w_ptr, scale_ptr, c_ptr, M, N, K, stride_am, stride_wk, "
        "stride_sg, stride_cm, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP_K: tl.constexpr):"
    ),
    make=_quantized_inputs,
    meta={"BLOCK_M": 16, "BLOCK_N": 16, "GROUP_K": 32},
    grid=lambda a: (cdiv(a["M"], 16), cdiv(a["N"], 16)),
    outputs=("c_ptr",),
    reference=_dequantized,
    atol=1e-3,  # products of fp16 and int8 are exact in fp32; 128 fp32 additions of values up to ~2.5
    rtol=1e-5,
    hint=(
        "A group's scales are one row of scale_ptr: s = tl.load(scale_ptr + g * stride_sg + rn). "
        "Scale after the dot, per column: acc += tl.dot(a, w.to(tl.float16)) * s[None, :]."
    ),
)

PUZZLES = {p.name: p for p in (LOAD_BLOCK, MASKS, POINTERS_2D, ROW_MAX, SOFTMAX, GROUPED_MATMUL,
                               FLASH_ATTENTION, QUANTIZED_MATMUL)}  # fmt: skip


def puzzle(name: str) -> Puzzle:
    """The puzzle called `name` (a clear error listing them otherwise)."""
    try:
        return PUZZLES[name]
    except KeyError:
        raise KeyError(f"no puzzle {name!r}; the puzzles are {', '.join(PUZZLES)}") from None


__all__ = ["PUZZLES", "Puzzle", "grouped_tile", "puzzle"]
