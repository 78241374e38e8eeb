"""Index maps for the shape ops, and the shared-memory staging that conversions fall back to.

A shape op that changes the shape (broadcast, expand_dims, reshape, trans, split) is "result
element at flat index d = source element at flat index g(d)" with g linear over GF(2) on the
bits of the flat index (identity for reshape/expand_dims, a bit permutation for trans, a bit
selection for broadcast, a shift for split). Pulling the result layout back through g gives a
layout `want` over the source shape whose register r of thread (l, w) is the source element
result register r of (l, w) needs. That reduces the op to a same-shape conversion
source -> want, which convert.py emits as the layout core's `conversion_plan` says; nothing
here decides how data moves.

`through_smem` is the "shared" plan's code: the source is written to shared memory (indexed
by its flat index, padded after each row to spread banks: one element, or the longest vector
run of either side so that runs stay aligned), a barrier separates the writes from the reads,
and every thread reads its result registers back, a vector per run where the layouts allow.
"""

from __future__ import annotations

from kernellab.backends.llvm.layout import Lay, _log2, derived
from kernellab.backends.llvm.smem_vectors import (
    aligned_run,
    load_runs,
    max_run,
    smem_elem_bytes,
    store_runs,
)
from kernellab.backends.llvm.types import I32, TV


def pull_back(dst: Lay, g, src_shape) -> Lay:
    """The layout over the source shape whose register/lane/warp bases are g(dst bases)."""
    return derived(dst, g, src_shape)


def pad_shift(shape) -> int:
    return _log2(max(32, shape[-1] if shape else 1))


def staging_run(lay: Lay, elem) -> int:
    """Registers of `lay` per staging access: a run along the last dim (flat order), at most
    16 bytes, never past a padded row (rows of 2**pad_shift elements)."""
    return lay.contiguous_run(lay.rank - 1, min(lay.shape[-1], max_run(elem)))


def staging_pad(src: Lay, dst: Lay, elem) -> int:
    """Elements of padding after each padded row: 1 spreads the banks; the longer of the two
    sides' runs keeps every run's start aligned to its length."""
    return max(staging_run(src, elem), staging_run(dst, elem))


def padded_elems(shape, pad: int = 1) -> int:
    n = 1
    for s in shape:
        n *= s
    return n + ((n >> pad_shift(shape)) + 1) * pad


def _addr(ctx, flat, shift: int, pad: int = 1):
    b = ctx.b
    rows = b.lshr(flat, I32(shift))
    return b.add(flat, rows if pad == 1 else b.mul(rows, I32(pad)))


def through_smem(ctx, src: TV, want: Lay, op=None) -> list:
    """`src` written to the op's scratch (flat order, `staging_pad` elements after each padded
    row), a barrier, then read back in layout `want`; runs of registers move as vectors."""
    b = ctx.b
    base = ctx.scratch_offset(op)
    iv = ctx.scratch_interval(op)
    nbytes = smem_elem_bytes(src.elem)
    shift = pad_shift(src.lay.shape)
    pad = staging_pad(src.lay, want, src.elem)

    def ptr_of(lay: Lay):
        def ptr(r):
            idx = _addr(ctx, ctx.flat_index(lay, r), shift, pad)
            return ctx.smem_ptr(b.add(I32(base), b.mul(idx, I32(nbytes))))

        return ptr

    ctx.smem_access(iv, write=True)
    store_run = aligned_run(staging_run(src.lay, src.elem), base, src.elem)
    store_runs(ctx, src.regs, src.lay, src.elem, store_run, ptr_of(src.lay))
    ctx.smem_access(iv, write=False)
    load_run = aligned_run(staging_run(want, src.elem), base, src.elem)
    return load_runs(ctx, want, src.elem, load_run, ptr_of(want))


__all__ = ["pull_back", "through_smem", "padded_elems", "smem_elem_bytes", "staging_pad"]
