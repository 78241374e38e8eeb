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
by its flat index, padded one element per row to spread banks), a barrier separates the writes
from the reads, and every thread reads its result registers back.
"""

from __future__ import annotations

from kernellab.backends.llvm.layout import Lay, _log2, derived
from kernellab.backends.llvm.types import I8, I32, TV, bitwidth, llty


def pull_back(dst: Lay, g, src_shape) -> Lay:
    """The layout over the source shape whose register/lane/warp bases are g(dst bases)."""
    return derived(dst, g, src_shape)


def pad_shift(shape) -> int:
    return _log2(max(32, shape[-1] if shape else 1))


def padded_elems(shape) -> int:
    n = 1
    for s in shape:
        n *= s
    return n + (n >> pad_shift(shape)) + 1


def smem_elem_bytes(elem) -> int:
    return max(1, (bitwidth(elem) + 7) // 8)


def _addr(ctx, flat, shift: int):
    b = ctx.b
    return b.add(flat, b.lshr(flat, I32(shift)))


def through_smem(ctx, src: TV, want: Lay, c: int, op=None) -> list:
    b = ctx.b
    base = ctx.scratch_offset(op)
    iv = ctx.scratch_interval(op)
    ety = llty(src.elem)
    nbytes = smem_elem_bytes(src.elem)
    store_ty = I8 if bitwidth(src.elem) == 1 else ety
    shift = pad_shift(src.lay.shape)
    lay = src.lay

    ctx.smem_access(iv, write=True)
    for r in lay.canonical_regs:
        v = src.regs[r]
        if store_ty is not ety:
            v = b.zext(v, store_ty)
        idx = _addr(ctx, ctx.flat_index(lay, r), shift)
        ptr = ctx.smem_ptr(b.add(I32(base), b.mul(idx, I32(nbytes))))
        b.store(v, ptr)
    ctx.smem_access(iv, write=False)
    out = []
    memo = {}
    for r in range(want.nregs):
        f = want.reg_flat[r] ^ c
        if f in memo:
            out.append(memo[f])
            continue
        flat = ctx.thread_flat(want)
        if f:
            flat = b.xor(flat, I32(f)) if f & want.thread_bits else b.or_(flat, I32(f))
        idx = _addr(ctx, flat, shift)
        ptr = ctx.smem_ptr(b.add(I32(base), b.mul(idx, I32(nbytes))))
        v = b.load(ptr, typ=store_ty)
        if store_ty is not ety:
            v = b.trunc(v, ety)
        memo[f] = v
        out.append(v)
    return out


__all__ = ["pull_back", "through_smem", "padded_elems", "smem_elem_bytes"]
