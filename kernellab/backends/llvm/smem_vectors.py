"""Shared-memory stores and loads of a thread's registers, one access per run of consecutive
registers that sit at consecutive, aligned addresses (the caller finds the run length from the
layouts): a run moves as one LLVM vector of 32-bit words (or one narrower integer) on an
addrspace(3) pointer aligned to its size, which a target emits as its vector shared access
(NVPTX: st.shared.v4.b32 ...). A run of 1 is the scalar access."""

from __future__ import annotations

import llvmlite.ir as ir

from kernellab.backends.llvm.layout import Lay
from kernellab.backends.llvm.types import I8, I32, BFloatType, bitwidth, llty

MAX_ACCESS_BYTES = 16
_NUMBER_TYPES = (ir.IntType, ir.HalfType, ir.FloatType, ir.DoubleType, BFloatType)


def smem_elem_bytes(elem) -> int:
    """Bytes an element takes in shared memory (i1 as one byte)."""
    return max(1, (bitwidth(elem) + 7) // 8)


def max_run(elem) -> int:
    """The longest run one access may move: 16 bytes of numbers, a single pointer."""
    if not isinstance(llty(elem), _NUMBER_TYPES):
        return 1
    return max(1, MAX_ACCESS_BYTES // smem_elem_bytes(elem))


def aligned_run(run: int, byte_offset: int, elem) -> int:
    """`run` halved until runs starting at element multiples of it, counted from
    `byte_offset`, are aligned to their size."""
    while run > 1 and byte_offset % (run * smem_elem_bytes(elem)):
        run //= 2
    return run


def _types(elem, run: int):
    """(the element's type in shared memory, the type one access of `run` elements moves)."""
    ety = llty(elem)
    mem_ty = I8 if bitwidth(elem) == 1 else ety
    if run == 1:
        return mem_ty, mem_ty
    total = run * smem_elem_bytes(elem)
    if total <= 4:
        return mem_ty, ir.IntType(8 * total)
    return mem_ty, ir.VectorType(I32, total // 4)


def store_runs(ctx, regs: list, lay: Lay, elem, run: int, ptr_of) -> None:
    """Store every distinct element of `regs` (laid out as `lay`): one access per `run`
    registers, at `ptr_of(r)` for the run's first register r."""
    b = ctx.b
    ety = llty(elem)
    mem_ty, access_ty = _types(elem, run)
    for r in lay.canonical_regs:
        if r % run:
            continue
        values = [regs[r + j] for j in range(run)]
        if mem_ty is not ety:
            values = [b.zext(v, mem_ty) for v in values]
        if run == 1:
            b.store(values[0], ptr_of(r))
            continue
        vec = ir.VectorType(mem_ty, run)(ir.Undefined)
        for j, v in enumerate(values):
            vec = b.insert_element(vec, v, I32(j))
        st = b.store(b.bitcast(vec, access_ty), ptr_of(r))
        st.align = run * smem_elem_bytes(elem)


def load_run(ctx, elem, run: int, ptr) -> list:
    """The `run` consecutive elements at `ptr` (aligned to the run's size), one access."""
    b = ctx.b
    ety = llty(elem)
    mem_ty, access_ty = _types(elem, run)
    if run == 1:
        values = [b.load(ptr, typ=mem_ty)]
    else:
        ld = b.load(ptr, typ=access_ty)
        ld.align = run * smem_elem_bytes(elem)
        vec = b.bitcast(ld, ir.VectorType(mem_ty, run))
        values = [b.extract_element(vec, I32(j)) for j in range(run)]
    return [b.trunc(v, ety) if mem_ty is not ety else v for v in values]


def load_runs(ctx, lay: Lay, elem, run: int, ptr_of) -> list:
    """One value per register of `lay`, loaded once per distinct element: one access per `run`
    registers, from `ptr_of(r)` for the run's first register r."""
    by_flat = {}
    for r in lay.canonical_regs:
        if r % run:
            continue
        for j, v in enumerate(load_run(ctx, elem, run, ptr_of(r))):
            by_flat[lay.reg_flat[r + j]] = v
    return [by_flat[f] for f in lay.reg_flat]
