"""Vector width: how many consecutive registers of a thread hold consecutive elements, which
is what one vectorized load/store (or one shared-memory access) can move at once."""

from __future__ import annotations

from collections.abc import Sequence

from kernellab.layouts.linear import LinearLayout


def max_contiguous_registers(layout: LinearLayout, dim: int | Sequence[int]) -> int:
    """Largest 2**k such that every group of 2**k consecutive registers (register index a
    multiple of 2**k, any thread) holds 2**k consecutive elements along `dim`, in order,
    starting at a multiple of 2**k. `dim` may also be an order list; its first dim is used.

    Why the alignment condition: outputs combine by XOR, so a thread whose other index bits
    set some of the low k bits along `dim` would see its group in a permuted order.
    """
    if not isinstance(dim, int):
        dim = int(dim[0])
    registers = layout.bases.get("register", ())
    k = 0
    while k < len(registers) and registers[k] == tuple(
        (1 << k) if d == dim else 0 for d in range(len(registers[k]))
    ):
        k += 1
    others = [b[dim] for name, rows in layout.bases.items() for b in rows if name != "register"]
    while k and any(v % (1 << k) for v in others + [b[dim] for b in registers[k:]]):
        k -= 1
    return 1 << k
