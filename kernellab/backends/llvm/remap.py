"""Index maps for the shape ops, and the shared-memory staging that conversions fall back to.

A shape op that changes the shape (broadcast, expand_dims, reshape, trans, split) is "result
element at flat index d = source element at flat index g(d)" with g linear over GF(2) on the
bits of the flat index (identity for reshape/expand_dims, a bit permutation for trans, a bit
selection for broadcast, a shift for split). Pulling the result layout back through g gives a
layout `want` over the source shape whose register r of thread (l, w) is the source element
result register r of (l, w) needs. That reduces the op to a same-shape conversion
source -> want, which convert.py emits as the layout core's `conversion_plan` says; nothing
here decides how data moves.

`through_smem` is the "shared" plan's code: the source is written to shared memory in the
staging layout the plan chose (kernellab.layouts.best_swizzle over both sides' accesses), a
barrier separates the writes from the reads, and every thread reads its result registers
back. The swizzle is a linear map, so each side's element offsets are a layout too
(`staged`): a per-thread part computed once plus a constant per register, and a run of
registers at consecutive offsets moves as one vector. A source the target can write with
matrix stores (stmatrix, `rows` given) goes four 8x8 matrices per instruction.

`pad_shift` / `padded_elems` size the padded flat buffers other ops stage through (an
atomic's result broadcast).
"""

from __future__ import annotations

import llvmlite.ir as ir

from kernellab.backends.llvm.addressing import element_address
from kernellab.backends.llvm.layout import Lay, _log2, coords_of, derived
from kernellab.backends.llvm.smem_vectors import (
    aligned_run,
    load_runs,
    max_run,
    smem_elem_bytes,
    store_runs,
)
from kernellab.backends.llvm.types import I8, I32, TV, llty
from kernellab.layouts import LinearLayout


def pull_back(dst: Lay, g, src_shape) -> Lay:
    """The layout over the source shape whose register/lane/warp bases are g(dst bases)."""
    return derived(dst, g, src_shape)


def pad_shift(shape) -> int:
    return _log2(max(32, shape[-1] if shape else 1))


def staging_run(lay: Lay, elem) -> int:
    """Registers of `lay` per access to a buffer in flat order: a run along the last dim, at
    most 16 bytes and one row."""
    return lay.contiguous_run(lay.rank - 1, min(lay.shape[-1], max_run(elem)))


def padded_elems(shape) -> int:
    """Elements of a flat buffer of `shape` with one element of padding after each row of
    2**pad_shift elements (spreads a row's accesses over the banks)."""
    n = 1
    for s in shape:
        n *= s
    return n + (n >> pad_shift(shape)) + 1


def staged(lay: Lay, staging: LinearLayout) -> Lay:
    """`lay` with every basis mapped to its element offset in the `staging` buffer (offset ->
    coordinates, a bijection): a 1-D layout of offsets, read like any other layout."""
    inverse = staging.invert()
    names = staging.out_dims

    def offset_of(flat: int) -> int:
        return inverse.apply(**dict(zip(names, coords_of(flat, lay.shape))))[0]

    return derived(lay, offset_of, (lay.numel,))


def through_smem(ctx, src: TV, want: Lay, staging: LinearLayout, rows: Lay | None, op=None) -> list:
    """`src` written to the op's scratch as `staging` lays it out (with matrix stores along
    `rows`, the stmatrix row-address layout, when given), a barrier, then read back in layout
    `want`; runs of registers at consecutive offsets move as vectors."""
    b = ctx.b
    base = ctx.scratch_offset(op)
    iv = ctx.scratch_interval(op)
    nbytes = smem_elem_bytes(src.elem)

    def offset_of(lay: Lay):
        """Byte offset of register r: the thread part XOR the constant's bits it may touch
        (one XOR per distinct such part), plus the rest of the constant (an immediate)."""
        thread, xored = ctx.thread_flat(lay), {}

        def offset(r):
            constant = lay.reg_flat[r]
            overlap = constant & lay.thread_bits
            if overlap not in xored:
                xored[overlap] = b.xor(thread, I32(overlap)) if overlap else thread
            index = b.add(xored[overlap], I32(constant ^ overlap))
            return b.add(I32(base), b.mul(index, I32(nbytes)))

        return offset

    def ptr_of(lay: Lay):
        """Shared pointer of register r: one base per distinct variable part, the constants as
        immediates (each side its own: the barrier between them may end a CPU phase)."""
        offset, made = offset_of(lay), {}
        return lambda r: element_address(b, ctx.smem_base, offset(r), I8, made)

    ctx.smem_access(iv, write=True)
    if rows is not None and base % 16 == 0:
        _store_matrices(ctx, src, staged(rows, staging), offset_of)
    else:
        source = staged(src.lay, staging)
        store_run = aligned_run(source.contiguous_run(0, max_run(src.elem)), base, src.elem)
        store_runs(ctx, src.regs, src.lay, src.elem, store_run, ptr_of(source))
    ctx.smem_access(iv, write=False)
    target = staged(want, staging)
    load_run = aligned_run(target.contiguous_run(0, max_run(src.elem)), base, src.elem)
    return load_runs(ctx, want, src.elem, load_run, ptr_of(target))


def _store_matrices(ctx, src: TV, rows: Lay, offset_of) -> None:
    """One stmatrix.x4 per register of `rows`: lane 8j+i gives row i of matrix j; source
    registers 8k + 2j, 8k + 2j + 1 (k the rows register) are this lane's pair of matrix j."""
    b = ctx.b
    pair = ir.VectorType(llty(src.elem), 2)
    offset = offset_of(rows)
    for k in rows.canonical_regs:
        words = []
        for j in range(4):
            vec = pair(ir.Undefined)
            for h in range(2):
                vec = b.insert_element(vec, src.regs[8 * k + 2 * j + h], I32(h))
            words.append(b.bitcast(vec, I32))
        ctx.target.store_matrices(ctx, offset(k), words)


__all__ = ["pull_back", "through_smem", "staged", "padded_elems", "smem_elem_bytes"]
