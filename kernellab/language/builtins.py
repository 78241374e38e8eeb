"""The builtins of the block language: Triton's names and parameters, implemented by the compiler.

Each function here is a signature and a docstring: inside a `@kl.jit` kernel the frontend binds
the call to this signature, defaults filled in, and calls `Semantic.<name>` with every argument;
called from plain Python it raises. Functions Triton writes in the language itself (cdiv,
sigmoid, softmax, rand, ...) live in `standard` and `random`.
"""

from __future__ import annotations

import builtins as _py
import inspect
from enum import Enum

from kernellab.language.core import builtin, constexpr, float32

TRITON_MAX_TENSOR_NUMEL = 1048576


class PropagateNan(Enum):
    """Whether minimum/maximum/clamp return NaN when an operand is NaN (ALL) or the other
    operand (NONE, the default)."""

    NONE = 0x0000
    ALL = 0xFFFF


def _parameters_of(template):
    """Declares a builtin that takes `template`'s parameters (tl.min mirrors tl.max)."""

    def declare(fn):
        fn.__signature__ = inspect.signature(template)
        return builtin(fn)

    return declare


# ------------------------------------------------------------------------- programming model


@builtin
def program_id(axis):
    """Index of this program along grid `axis` (0, 1 or 2), an int32 scalar.

    pid = tl.program_id(axis=0)
    """


@builtin
def num_programs(axis):
    """Number of programs launched along grid `axis` (0, 1 or 2), an int32 scalar."""


# ------------------------------------------------------------------------------- creation


@builtin
def arange(start, end):
    """int32 block [start, start+1, ..., end-1]; `start`/`end` are constexprs and `end-start`
    is a power of two.

    offs = pid * BLOCK + tl.arange(0, BLOCK)
    """


@builtin
def full(shape, value, dtype):
    """Block of constexpr `shape` (tuple of powers of two) filled with `value` as `dtype`.

    acc = tl.full((BLOCK_M, BLOCK_N), float("-inf"), tl.float32)
    """


@builtin
def zeros(shape, dtype):
    """Block of constexpr `shape` filled with zeros of `dtype`.

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    """


@builtin
def to_tensor(x):
    """`x` as a kernel value: a Python int becomes int32 (int64/uint64 if it doesn't fit),
    a float fp32, a bool int1; tensors pass through."""


@builtin
def cast(input, dtype, fp_downcast_rounding=None, bitcast=False):
    """`input` converted to `dtype` (same as `input.to(dtype)`); `bitcast=True` reinterprets
    the bits (equal widths); `fp_downcast_rounding` is "rtne" (default) or "rtz"."""


@builtin
def to(input, dtype, fp_downcast_rounding=None, bitcast=False):
    """The `tensor.to(dtype, fp_downcast_rounding=None, bitcast=False)` method; see `cast`.

    x16 = x.to(tl.float16)
    """


# ------------------------------------------------------------------------------ shapes


@builtin
def broadcast(input, other):
    """`input` and `other` broadcast against each other (NumPy rules: leading dims are added,
    size-1 dims stretch); returns both."""


@builtin
def broadcast_to(input, *shape):
    """`input` broadcast to `shape` (size-1 dims stretch, scalars splat).

    row = tl.broadcast_to(x[None, :], (BLOCK_M, BLOCK_N))
    """


@builtin
def expand_dims(input, axis):
    """`input` with a new size-1 dim at `axis` (an int or a tuple of ints).

    col = tl.expand_dims(offs, 1)   # (N,) -> (N, 1), like offs[:, None]
    """


@builtin
def reshape(input, *shape, can_reorder=False):
    """`input` with a new `shape` of the same number of elements, row-major order kept
    unless `can_reorder=True`.

    y = tl.reshape(x, (16, 64))
    """


@builtin
def view(input, *shape):
    """Deprecated spelling of `reshape(input, shape, can_reorder=True)`."""


@builtin
def trans(input, *dims):
    """Permuted `input`: result dim i is `input` dim dims[i]; with no dims a 2-D transpose.

    bt = tl.trans(b)     # (K, N) -> (N, K)
    """


@builtin
def permute(input, *dims):
    """Permuted `input`: result dim i is `input` dim dims[i] (dims a permutation of 0..n-1).

    y = tl.permute(x, (2, 0, 1))
    """


@builtin
def join(a, b):
    """`a` and `b` (same shape after broadcasting) stacked along a new minor dim of size 2.

    ab = tl.join(a, b)   # (N,), (N,) -> (N, 2)
    """


@builtin
def split(a):
    """Inverse of `join`: a tensor whose last dim is 2 → its two halves.

    a, b = tl.split(ab)  # (N, 2) -> (N,), (N,)
    """


@builtin
def cat(input, other, can_reorder=False):
    """1-D concatenation of two blocks of one shape; needs `can_reorder=True` because the
    compiler may reorder the elements (as in Triton)."""


@builtin
def gather(src, index, axis):
    """out[..., i, ...] = src[..., index[..., i, ...], ...] along `axis`: `index` (integers) has
    `src`'s rank and its sizes on every other axis; the result has `index`'s shape and `src`'s
    dtype. An index outside [0, src.shape[axis]) is undefined in Triton (the interpreter
    raises; compiled kernels read the index modulo the axis size).

    rows = tl.gather(table, ids, 0)
    """


# ------------------------------------------------------------------------------ memory


@builtin
def load(
    pointer,
    mask=None,
    other=None,
    boundary_check=(),
    padding_option="",
    cache_modifier="",
    eviction_policy="",
    volatile=False,
):
    """Values at `pointer` (a pointer or a block of pointers); lanes where `mask` is false
    read `other` (cast to the pointee type, needs `mask`). `mask`/`other` broadcast to the
    pointer's shape. cache_modifier: "", ".ca", ".cg", ".cv"; eviction_policy: "",
    "evict_first", "evict_last". Through a block pointer (tl.make_block_ptr), the dims in
    `boundary_check` are kept in bounds and elements outside read `padding_option` ("zero",
    "nan"; zero when not given).

    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    """


@builtin
def store(pointer, value, mask=None, boundary_check=(), cache_modifier="", eviction_policy=""):
    """Write `value` (cast to the pointee type, broadcast to the pointer's shape) where `mask`
    is true. cache_modifier: "", ".wb", ".cg", ".cs", ".wt". Through a block pointer, elements
    outside the dims in `boundary_check` are not written.

    tl.store(out_ptr + offs, x + y, mask=offs < n)
    """


@builtin
def make_block_ptr(base, shape, strides, offsets, block_shape, order):
    """A block pointer: the tile of constexpr `block_shape` at `offsets` in a tensor of `shape`
    and `strides` (in elements) at pointer `base`. Load and store through it with
    `boundary_check`; move it with tl.advance.

    a_ptrs = tl.make_block_ptr(a_ptr, (M, K), (stride_am, stride_ak), (pid_m * BM, 0),
                               (BM, BK), order=(1, 0))
    """


@builtin
def advance(base, offsets):
    """The block pointer `base` moved by `offsets` (one integer per dim).

    a_ptrs = tl.advance(a_ptrs, (0, BK))
    """


@builtin
def make_tensor_descriptor(base, shape, strides, block_shape, padding_option="zero"):
    """A tensor descriptor: a tensor of `shape` and `strides` (elements; the last stride 1)
    at `base`, read and written in tiles of constexpr `block_shape` with `desc.load([i, j])` and
    `desc.store([i, j], tile)`. Reads outside the tensor give zero (NaN with
    padding_option="nan"); writes outside it are dropped.

    desc = tl.make_tensor_descriptor(x_ptr, [M, N], [N, 1], [BM, BN])
    """


@builtin
def load_tensor_descriptor(desc, offsets):
    """The tile of `desc` at `offsets` (`desc.load(offsets)`)."""


@builtin
def store_tensor_descriptor(desc, offsets, value):
    """Write the tile `value` at `offsets` of `desc` (`desc.store(offsets, value)`)."""


@builtin
def atomic_add(pointer, val, mask=None, sem=None, scope=None):
    """Atomically add `val` (ints, fp16, bf16, fp32, fp64) at `pointer` where `mask` is true;
    returns the old values.
    sem: "acq_rel" (default), "acquire", "release", "relaxed"; scope: "gpu" (default), "cta",
    "sys".

    old = tl.atomic_add(counter_ptr + bins, 1, mask=valid)
    """


@builtin
def atomic_max(pointer, val, mask=None, sem=None, scope=None):
    """Atomically take the max with `val` (ints, fp32, fp64) at `pointer` where `mask` is true;
    returns the old values. `sem` and `scope` as for `atomic_add`."""


@builtin
def atomic_min(pointer, val, mask=None, sem=None, scope=None):
    """Atomically take the min with `val` (ints, fp32, fp64) at `pointer` where `mask` is true;
    returns the old values. `sem` and `scope` as for `atomic_add`."""


@builtin
def atomic_xchg(pointer, val, mask=None, sem=None, scope=None):
    """Atomically replace the value at `pointer` with `val` where `mask` is true; returns the
    old values. `sem` and `scope` as for `atomic_add`."""


@builtin
def atomic_and(pointer, val, mask=None, sem=None, scope=None):
    """Atomically and `val` into the value (ints) at `pointer` where `mask` is true; returns
    the old values. `sem` and `scope` as for `atomic_add`."""


@builtin
def atomic_or(pointer, val, mask=None, sem=None, scope=None):
    """Atomically or `val` into the value (ints) at `pointer` where `mask` is true; returns
    the old values. `sem` and `scope` as for `atomic_add`."""


@builtin
def atomic_xor(pointer, val, mask=None, sem=None, scope=None):
    """Atomically xor `val` into the value (ints) at `pointer` where `mask` is true; returns
    the old values. `sem` and `scope` as for `atomic_add`."""


@builtin
def atomic_cas(pointer, cmp, val, sem=None, scope=None):
    """Atomically: where the value at `pointer` equals `cmp`, write `val`; returns the old
    values (16/32/64-bit elements). `sem` and `scope` as for `atomic_add`.

    while tl.atomic_cas(lock, 0, 1) == 1: pass
    """


# --------------------------------------------------------------------------------- math


@builtin
def where(condition, x, y):
    """Elementwise `x` where `condition` else `y` (all three broadcast, x/y promoted).

    y = tl.where(x > 0, x, 0.01 * x)
    """


@builtin
def minimum(x, y, propagate_nan=PropagateNan.NONE):
    """Elementwise min of `x` and `y` (promoted and broadcast); NaN handling per
    `propagate_nan`."""


@builtin
def maximum(x, y, propagate_nan=PropagateNan.NONE):
    """Elementwise max of `x` and `y` (promoted and broadcast); NaN handling per
    `propagate_nan`.

    y = tl.maximum(x, 0.0)   # ReLU
    """


@builtin
def clamp(x, min, max, propagate_nan=PropagateNan.NONE):
    """Floats: `x` limited to [min, max] elementwise (tt.clampf).

    y = tl.clamp(x, -1.0, 1.0)
    """


@builtin
def exp(x):
    """Elementwise e**x of `x` (fp32 or fp64; convert others first, e.g. x.to(tl.float32))."""


@builtin
def exp2(x):
    """Elementwise 2**x of `x` (fp32 or fp64; convert others first, e.g. x.to(tl.float32))."""


@builtin
def log(x):
    """Elementwise natural logarithm of `x` (fp32 or fp64; convert others first, e.g.
    x.to(tl.float32))."""


@builtin
def log2(x):
    """Elementwise base-2 logarithm of `x` (fp32 or fp64; convert others first, e.g.
    x.to(tl.float32))."""


@builtin
def sqrt(x):
    """Elementwise square root (fast, may be approximate on a GPU) of `x` (fp32 or fp64; convert
    others first, e.g. x.to(tl.float32))."""


@builtin
def sqrt_rn(x):
    """Elementwise square root rounded to nearest of `x` (fp32; convert others first, e.g.
    x.to(tl.float32))."""


@builtin
def rsqrt(x):
    """Elementwise 1/sqrt(x) of `x` (fp32 or fp64; convert others first, e.g. x.to(tl.float32))."""


@builtin
def sin(x):
    """Elementwise sine of `x` (fp32 or fp64; convert others first, e.g. x.to(tl.float32))."""


@builtin
def cos(x):
    """Elementwise cosine of `x` (fp32 or fp64; convert others first, e.g. x.to(tl.float32))."""


@builtin
def erf(x):
    """Elementwise error function of `x` (fp32 or fp64; convert others first, e.g.
    x.to(tl.float32))."""


@builtin
def floor(x):
    """Elementwise floor of `x` (fp32 or fp64; convert others first, e.g. x.to(tl.float32))."""


@builtin
def ceil(x):
    """Elementwise ceiling of `x` (fp32 or fp64; convert others first, e.g. x.to(tl.float32))."""


@builtin
def abs(x):
    """Elementwise |x| for floats and signed ints (unsigned ints unchanged)."""


@builtin
def fma(x, y, z):
    """Elementwise x * y + z with one rounding (promoted and broadcast)."""


@builtin
def fdiv(x, y, ieee_rounding=False):
    """Elementwise float division x / y (both floats). Like `/`, fp32 division is approximate
    on the GPU (a couple of ulps); ieee_rounding=True rounds correctly (as tl.div_rn)."""


@builtin
def div_rn(x, y):
    """Elementwise fp32 division x / y rounded to nearest (IEEE)."""


@builtin
def umulhi(x, y):
    """Elementwise high 32 (or 64) bits of the full unsigned product of two int32/int64
    values, as used by Philox."""


# ---------------------------------------------------------------------------- reductions


@builtin
def reduce(input, axis, combine_fn, keep_dims=False):
    """Reduce `input` (a tensor or a tuple of same-shaped tensors) along `axis` (None: all
    dims) with `combine_fn`, a @jit function of 2N scalars returning N.

    @kl.jit
    def add(a, b): return a + b
    total = tl.reduce(x, 0, add)
    """


@builtin
def sum(input, axis=None, keep_dims=False, dtype=None):
    """Sum along `axis` (None: all). Ints narrower than 32 bits accumulate in (u)int32, bf16
    in fp32; `dtype` picks the accumulator.

    row_sum = tl.sum(x, axis=1)
    """


@builtin
def max(
    input,
    axis=None,
    return_indices=False,
    return_indices_tie_break_left=True,
    keep_dims=False,
    propagate_nan=PropagateNan.NONE,
):
    """Max along `axis` (None: all); NaNs are ignored unless propagate_nan=tl.PropagateNan.ALL.
    Types narrower than 32 bits are widened (fp16 → fp32). With `return_indices`, returns
    (values, int32 indices).

    row_max = tl.max(x, axis=1)
    """


@_parameters_of(max)
def min(*args, **kwargs):
    """Min along `axis` (None: all); like `max`."""


@builtin
def argmax(input, axis, tie_break_left=True, keep_dims=False):
    """int32 index of the max along `axis` (the first one on ties with `tie_break_left`)."""


@builtin
def argmin(input, axis, tie_break_left=True, keep_dims=False):
    """int32 index of the min along `axis` (the first one on ties with `tie_break_left`)."""


@builtin
def xor_sum(input, axis=None, keep_dims=False):
    """Bitwise xor of integer `input` along `axis` (None: all)."""


@builtin
def associative_scan(input, axis, combine_fn, reverse=False):
    """Inclusive scan of `input` (a tensor or a tuple) along `axis` with `combine_fn`, a @jit
    function of 2N scalars returning N; `reverse` scans from the end.

    running = tl.associative_scan(x, 0, add)
    """


@builtin
def cumsum(input, axis=0, reverse=False, dtype=None):
    """Inclusive cumulative sum along `axis` (accumulator chosen as for `sum`)."""


@builtin
def cumprod(input, axis=0, reverse=False):
    """Inclusive cumulative product along `axis` (bf16 computed in fp32)."""


# ------------------------------------------------------------------------- linear algebra


@builtin
def dot(
    input,
    other,
    acc=None,
    input_precision=None,
    allow_tf32=None,
    max_num_imprecise_acc=None,
    out_dtype=float32,
):
    """Matrix product of 2-D (M, K) × (K, N) blocks, or 3-D batched, plus `acc`, of any size
    (tiles too small for a tensor-core instruction run on FMAs). fp16/bf16/fp32 accumulate in
    fp32 (fp16 may use out_dtype=tl.float16), int8 in int32. `input_precision` for fp32
    inputs: "tf32" (default: both operands rounded to tf32, 10 mantissa bits, nearest with ties
    away from zero), "tf32x3" (each operand split into big = tf32(x) and small = tf32(x - big);
    big·big + big·small + small·big, close to fp32), "ieee" (fp32 products).

    acc = tl.dot(a, b, acc)
    """


# ------------------------------------------------------------------------- compiler hints


@builtin
def multiple_of(input, values):
    """Promise that each element of `input` is a multiple of `values` (per dim); returns it."""


@builtin
def max_contiguous(input, values):
    """Promise that the first `values` elements of `input` (per dim) are contiguous."""


@builtin
def max_constancy(input, values):
    """Promise that the first `values` elements of `input` (per dim) are equal."""


@builtin
def debug_barrier():
    """Synchronize all threads of the program (no effect on the interpreter)."""


# -------------------------------------------------------------------------------- debugging


@builtin
def assume(cond):
    """A promise that `cond` (a boolean scalar or block) holds, for the optimizer; the
    interpreter checks it and names the program where it does not.

    tl.assume(pid >= 0)
    """


@builtin
def static_assert(cond, msg=""):
    """Fail compilation with `msg` unless the constexpr `cond` holds.

    tl.static_assert(BLOCK % 16 == 0, "BLOCK must be a multiple of 16")
    """


@builtin
def static_print(*values, sep=" ", end="\n", file=None, flush=False):
    """Print compile-time values (constexprs, shapes, dtypes) while the kernel compiles."""


@builtin
def device_print(prefix, *args, hex=False):
    """Print `prefix` and the values of `args` from every program when the kernel runs."""


@builtin
def device_assert(cond, msg="", mask=None):
    """Fail the launch with `msg` where `cond` is false (only where `mask` is true)."""


# ---------------------------------------------------------------------------------- loops


class static_range:
    """A loop the compiler unrolls: `for i in tl.static_range(4)` (constexpr bounds), each
    iteration sees `i` as a constexpr."""

    def __init__(self, arg1, arg2=None, step=None):
        start, end = (0, arg1) if arg2 is None else (arg1, arg2)
        self.start, self.end = _constexpr_int(start, "start"), _constexpr_int(end, "end")
        self.step = 1 if step is None else _constexpr_int(step, "step")
        if self.step == 0:
            raise ValueError("tl.static_range step must not be 0")

    def __iter__(self):
        return iter(_py.range(self.start, self.end, self.step))

    def __repr__(self) -> str:
        return f"static_range({self.start}, {self.end}, {self.step})"


class range:
    """A runtime loop (`scf.for`) like Python's range, with Triton's pipelining hints:
    `for k in tl.range(0, K, BLOCK_K, num_stages=3)`. Bounds may be runtime ints.

    `num_stages` pipelines the loop's loads that many iterations deep. `flatten=True` fuses the
    nest under this loop into one loop (tutorial 09's persistent matmul over its tiles: pure
    index math, one inner loop whose bounds do not change, an epilogue), so the pipeline runs on
    across the outer iterations: the next tile's first loads are in flight while this tile's
    epilogue stores (passes/fuse_nested_loops.py; a nest of another shape stays as written, and
    the pass's record says why). Triton's other hints are accepted with their meaning and change
    no result: `warp_specialize=True` asks Triton to split the loop's work between producer and
    consumer warp groups (Hopper and Blackwell); kernellab does not yet. `loop_unroll_factor` is
    recorded on the loop (`tt.loop_unroll_factor`), `disallow_acc_multi_buffer` is accepted."""

    def __init__(
        self,
        arg1,
        arg2=None,
        step=None,
        num_stages=None,
        loop_unroll_factor=None,
        disallow_acc_multi_buffer=False,
        flatten=False,
        warp_specialize=False,
    ):
        self.start, self.end = (0, arg1) if arg2 is None else (arg1, arg2)
        self.step = 1 if step is None else step
        self.num_stages = _unwrap(num_stages)
        self.loop_unroll_factor = _unwrap(loop_unroll_factor)
        self.disallow_acc_multi_buffer = bool(_unwrap(disallow_acc_multi_buffer))
        self.flatten = bool(_unwrap(flatten))
        self.warp_specialize = bool(_unwrap(warp_specialize))

    def __iter__(self):
        raise RuntimeError("tl.range can only be iterated inside a @kl.jit kernel")

    def __repr__(self) -> str:
        return f"range({self.start!r}, {self.end!r}, {self.step!r})"


def _unwrap(x):
    return x.value if isinstance(x, constexpr) else x


def _constexpr_int(x, what):
    x = _unwrap(x)
    if not isinstance(x, int):
        raise TypeError(
            f"tl.static_range {what} must be a compile-time int, got {x!r}; "
            "use tl.range for bounds known only at run time"
        )
    return x
