"""Program ids, ranges, shape changes, gathers, pointer arithmetic and tt.dot.

Values carry a leading program axis (size P, or 1 when uniform), so a tensor op on dim `d`
works on numpy axis `d + 1`. Splat and broadcast return broadcast views: no copies.
"""

from __future__ import annotations

import numpy as np

from kernellab.backends.interpreter.compiler import builds
from kernellab.backends.interpreter.debug import first_false
from kernellab.backends.interpreter.errors import GatherIndexError
from kernellab.backends.interpreter.dtypes import F32, F64, I64, NARROW_FLOATS, np_dtype, round_float
from kernellab.backends.interpreter.ops import elementwise
from kernellab.ir import tt


@builds(tt.GetProgramIdOp)
def _program_id(c, op):
    axis, o = op.axis.value.data, c.slot(op.result)

    def run(fr):
        fr.env[o] = fr.pid[axis]

    return run


@builds(tt.GetNumProgramsOp)
def _num_programs(c, op):
    axis, o = op.axis.value.data, c.slot(op.result)

    def run(fr):
        fr.env[o] = np.array([fr.grid[axis]], np.int32)

    return run


@builds(tt.MakeRangeOp)
def _make_range(c, op):
    start, end = op.start.value.data, op.end.value.data
    c.const(op.result, np.arange(start, end, dtype=np.int32)[None])


def _to_shape(op, fn):
    """An op whose result has the static shape of its result type, computed by `fn(x, shape)`."""
    shape = tt.shape_of(op.results[0].type)
    return lambda x: fn(x, shape)


@builds(tt.SplatOp)
def _splat(c, op):
    rank = len(tt.shape_of(op.result.type))
    trailing = (1,) * rank
    return elementwise(c, op, _to_shape(
        op, lambda x, shape: np.broadcast_to(x.reshape(x.shape + trailing), x.shape + shape)))


@builds(tt.BroadcastOp)
def _broadcast(c, op):
    return elementwise(c, op, _to_shape(op, lambda x, shape: np.broadcast_to(x, x.shape[:1] + shape)))


@builds(tt.ExpandDimsOp)
def _expand_dims(c, op):
    axis = op.axis.value.data + 1
    return elementwise(c, op, lambda x: np.expand_dims(x, axis))


@builds(tt.ReshapeOp)
def _reshape(c, op):
    return elementwise(c, op, _to_shape(op, lambda x, shape: x.reshape(x.shape[:1] + shape)))


@builds(tt.TransOp)
def _trans(c, op):
    order = (0, *(d + 1 for d in op.order.get_values()))
    return elementwise(c, op, lambda x: np.transpose(x, order))


def _same_programs(a, b):
    n = max(a.shape[0], b.shape[0])
    return np.broadcast_to(a, (n,) + a.shape[1:]), np.broadcast_to(b, (n,) + b.shape[1:])


@builds(tt.JoinOp)
def _join(c, op):
    return elementwise(c, op, lambda a, b: np.stack(_same_programs(a, b), axis=-1))


@builds(tt.CatOp)
def _cat(c, op):
    return elementwise(c, op, lambda a, b: np.concatenate(_same_programs(a, b), axis=1))


@builds(tt.SplitOp)
def _split(c, op):
    s, lhs, rhs = c.slot(op.src), c.slot(op.out_lhs), c.slot(op.out_rhs)

    def run(fr):
        e = fr.env
        x = e[s]
        e[lhs], e[rhs] = x[..., 0], x[..., 1]

    return run


@builds(tt.GatherOp)
def _gather(c, op):
    """numpy's take_along_axis; an index outside [0, n) raises with the source line (Triton
    leaves it undefined; compiled kernels wrap it modulo n)."""
    axis = op.axis.value.data
    n = tt.shape_of(op.src.type)[axis]
    s, i, o = c.slot(op.src), c.slot(op.indices), c.slot(op.result)
    where = c.location(op)

    def run(fr):
        e = fr.env
        src, idx = _same_programs(e[s], e[i])
        ok = (idx >= 0) & (idx < n)
        if not ok.all():
            at, index = first_false(fr, ok)
            value = int(idx[np.unravel_index(int(np.argmin(ok)), ok.shape)])
            raise GatherIndexError(
                f"{where}: tl.gather index {value} is outside [0, {n}) on axis {axis} ({at}, "
                f"index element {index}); Triton leaves such a gather undefined: clamp or mask "
                "the index"
            )
        e[o] = np.take_along_axis(src, idx.astype(np.intp), axis + 1)

    return run


# ------------------------------------------------------------------------------ pointers


@builds(tt.AddPtrOp)
def _addptr(c, op):
    size = np_dtype(tt.element_type(op.ptr.type).pointee).itemsize

    def addptr(p, off):
        r = off.astype(I64)  # a fresh array: scaled and offset in place (fewer passes)
        if size > 1:
            np.multiply(r, size, out=r)
        if r.shape == np.broadcast_shapes(r.shape, p.shape):
            r += p
            return r
        return r + p

    return elementwise(c, op, addptr)


@builds(tt.PtrToIntOp, tt.IntToPtrOp)
def _ptr_int(c, op):
    dt = np_dtype(op.result.type)
    return elementwise(c, op, lambda x: x.astype(dt))


# ----------------------------------------------------------------------------------- dot


def tf32_rna(x: np.ndarray) -> np.ndarray:
    """float32 values rounded to tf32 (10 explicit mantissa bits) to nearest, ties away from
    zero, exactly as PTX's `cvt.rna.tf32.f32` does (the low 13 bits come out zero). Adding half
    an ulp of tf32 to the magnitude bits and truncating rounds ties away from zero (the carry
    may ripple into the exponent: 1.11..1 becomes 2.0, the largest values become infinity);
    infinities and NaNs are kept as they are."""
    x = np.asarray(x, dtype=F32)
    bits = x.view(np.uint32)
    rounded = ((bits + np.uint32(0x1000)) & np.uint32(0xFFFFE000)).view(F32)
    return np.where(np.isfinite(x), rounded, x)


def tf32x3_split(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(big, small) with big = tf32(x) and small = tf32(x - big) (x - big is exact in fp32)."""
    big = tf32_rna(x)
    with np.errstate(invalid="ignore"):
        small = tf32_rna(np.asarray(x, dtype=F32) - big)
    return big, small


@builds(tt.DotOp)
def _dot(c, op):
    """Matmul batched over programs: narrow floats multiply exactly in float32 and accumulate
    in float32, int8 accumulates in int32. fp32 inputs follow input_precision as the GPU does:
    "tf32" rounds both operands with tf32_rna first (products then exact in fp32), "tf32x3"
    splits each operand into big + small tf32 parts and sums small·big + big·small + big·big
    (the small·small term dropped), "ieee" multiplies the fp32 values. A float accumulator
    narrower than fp32 (out_dtype=tl.float16) takes the tensor cores' rounding: each K chunk
    of one mma.sync instruction (16 for 16-bit inputs, 32 for fp8) is summed in fp32 with the
    accumulator and rounded once, as the GPU's MMA and FMA paths both do."""
    a_dt, b_dt, acc_dt = np_dtype(op.a.type), np_dtype(op.b.type), np_dtype(op.c.type)
    precision = op.input_precision.data if a_dt == F32 and b_dt == F32 else "ieee"
    if a_dt.kind in "iub":
        work = np.dtype(np.int32) if acc_dt.itemsize <= 4 else I64
    else:
        work = F64 if F64 in (a_dt, acc_dt) else F32

    is_float = acc_dt.kind == "f" or acc_dt in NARROW_FLOATS
    group = 32 // a_dt.itemsize if is_float and acc_dt.itemsize < 4 else None

    def product(a, b, acc):
        if precision == "tf32":
            d = np.matmul(tf32_rna(a).astype(work), tf32_rna(b).astype(work))
        elif precision == "tf32x3":
            (ab, as_), (bb, bs) = tf32x3_split(a), tf32x3_split(b)
            ab, as_, bb, bs = (v.astype(work) for v in (ab, as_, bb, bs))
            d = np.matmul(as_, bb) + np.matmul(ab, bs) + np.matmul(ab, bb)
        else:
            d = np.matmul(a.astype(work), b.astype(work))
        d = d + acc.astype(work)
        return round_float(d, acc_dt) if is_float else d.astype(acc_dt)

    def dot(a, b, acc):
        if group is None:
            return product(a, b, acc)
        for k0 in range(0, a.shape[-1], group):
            chunk = slice(k0, k0 + group)
            acc = product(a[..., chunk], b[..., chunk, :], acc)
        return acc

    return elementwise(c, op, dot)

