"""What the LLVM lowering core asks of a target: the few things that differ between GPUs (and a
CPU), as one explicit protocol.

The core emits everything that is plain LLVM IR (arithmetic, control flow, register
permutations, shared-memory staging, the FMA dot); a target object answers for the module's
triple and data layout, the kernel function's conventions, the thread and program ids, the
warp-level exchange, the barrier, global memory and atomics, and the instructions where a
target has a faster or exact form of its own (approximate exp2/sqrt, float rounding modes).
Each hook takes the `Lowering` context and emits at its builder (`ctx.b`, or `ctx.pro` for
the once-per-thread prologue).

A target is one folder: its `Target` object, its rule modules for the ops only it lowers
(e.g. printf), and its rule table `{**CORE_RULES, **its own}` passed to `Lowering`.
"""

from __future__ import annotations

from typing import Protocol


class Target(Protocol):
    name: str  # for error messages ("NVIDIA")
    triple: str
    data_layout: str
    threads_per_warp: int  # lanes that exchange registers with `shuffle` (1: a CPU thread)
    arch: int  # the target's generation number (e.g. 80 for sm_80)
    # (name, LLVM type) parameters the kernel function takes after the kernel's own arguments
    # (a CPU's program ids); the lowering hands them to the target as `ctx.hidden[name]`
    hidden_params: tuple
    # whether the target stores four 8x8 matrices of 16-bit elements in one instruction
    # (`store_matrices`, called only when this is true)
    matrix_stores: bool

    # -- the kernel function and thread ids --------------------------------------------------

    def define_kernel(self, ctx, fn, threads: int) -> None:
        """Mark LLVM function `fn` as a kernel launched with `threads` threads per program."""

    def thread_id(self, ctx):
        """i32 id of this thread in its program (emitted in the prologue)."""

    def program_id(self, ctx, axis: int):
        """i32 id of this program along grid axis 0, 1 or 2."""

    def num_programs(self, ctx, axis: int):
        """i32 number of programs along grid axis 0, 1 or 2."""

    def shared_memory(self, ctx, nbytes: int):
        """Pointer (addrspace 3) to the program's `nbytes` of shared memory."""

    # -- exchange between threads -------------------------------------------------------------

    def barrier(self, ctx) -> None:
        """All threads of the program reach this point before any passes it (shared memory
        written before is visible after)."""

    def shuffle_i32(self, ctx, value, lane, kind: str):
        """i32 `value` as held by lane `lane` ("idx"), lane `this ^ lane` ("bfly"), or
        `this ∓ lane` ("up"/"down") of this warp."""

    def store_matrices(self, ctx, offset, words: list) -> None:
        """This warp's four 8x8 matrices of 16-bit elements to shared memory: `offset` (i32) is
        the byte offset in the program's shared memory of row i of matrix j for lane 8j+i,
        `words` (four i32) are this lane's pair of each matrix (row lane/4, columns 2(lane%4)
        and 2(lane%4)+1): stmatrix.x4."""

    # -- global memory ------------------------------------------------------------------------

    def load(self, ctx, op, addr, pred, others, elem, vec: int) -> list:
        """`vec` consecutive elements of IR type `elem` at `addr` for load `op`, under i1
        `pred` (None: always); masked-off elements are `others` (None: zeros)."""

    def store(self, ctx, op, addr, pred, values: list, elem) -> None:
        """`values` (consecutive elements) to `addr` for store `op`, under `pred`."""

    def atomic(self, ctx, op, kind: str, addr, val, cmp, pred, elem):
        """One atomic `kind` ("add", "fadd", "max", "exch", "cas", ...) on `addr` under `pred`;
        returns the old value."""

    # -- arithmetic a target does its own way -------------------------------------------------

    def exp2_approx_f32(self, ctx, x, flush_subnormal: bool = False):
        """2^x in fp32 (the fast approximation the language's exp/exp2 promise); with
        `flush_subnormal`, results below 2^-126 may be 0 where that is the target's faster form
        (tl.exp2 on NVIDIA, as Triton's)."""

    def sqrt_approx_f32(self, ctx, x):
        """√x in fp32 (tl.sqrt's fast form)."""

    def rsqrt_approx_f32(self, ctx, x):
        """1/√x in fp32."""

    def fdiv_f32(self, ctx, x, y):
        """x / y in fp32 for the `/` operator (tl.div_rn is an IEEE fdiv in the core)."""

    def mulhi(self, ctx, x, y):
        """High half of the unsigned product of i32 or i64 x and y (narrower ints the core
        widens itself)."""

    def f64_to_f32_toward_zero(self, ctx, x):
        """f64 → f32 rounded toward zero (the first step of round-to-odd narrowing)."""

    def convert_float(self, ctx, x, src, dst, rounding: str):
        """x of IR float type `src` → IR float type `dst` ("rtne" or "rtz"), fp8 included."""

    def tf32_round(self, ctx, x):
        """fp32 x rounded to tf32 (nearest, ties away), as an fp32 value."""
