"""Shared-memory bank conflicts of one warp's access, computed from the two layouts involved.

Model (NVIDIA, 32 banks of 4 bytes): each thread moves `vec` consecutive registers that are
also consecutive in shared memory, up to 16 bytes, in one access. The warp's request is split
into phases: 128-bit accesses in 4 phases of 8 lanes, 64-bit in 2 phases of 16, narrower in
one phase of 32. Within a phase, lanes reading the same 4-byte word are served together
(broadcast); distinct words in one bank are serialized. The n-way conflict of a phase is the
largest number of distinct words any bank must serve; 1 means conflict-free.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from kernellab.layouts.linear import LinearLayout
from kernellab.layouts.shared import swizzled_shared
from kernellab.layouts.vector import max_contiguous_registers

if TYPE_CHECKING:
    import numpy as np

NUM_BANKS = 32
BANK_BYTES = 4
MAX_ACCESS_BYTES = 16


def offsets(reg_layout: LinearLayout, shared_layout: LinearLayout) -> LinearLayout:
    """hardware index -> element offset in the shared buffer."""
    if dict(zip(reg_layout.out_dims, reg_layout.out_shape)) != dict(
        zip(shared_layout.out_dims, shared_layout.out_shape)
    ):
        raise ValueError(
            f"register layout shape {reg_layout.out_shape} does not match shared layout "
            f"shape {shared_layout.out_shape}"
        )
    return (
        shared_layout.sublayout(["offset"], shared_layout.out_dims)
        .invert()
        .compose(reg_layout.sublayout(["register", "lane", "warp"], shared_layout.out_dims))
    )


def access_vector(offset_layout: LinearLayout, elem_bytes: int) -> int:
    """Registers per access: contiguous in memory and at most 16 bytes."""
    vec = max_contiguous_registers(offset_layout, 0)
    return max(1, min(vec, MAX_ACCESS_BYTES // elem_bytes))


@dataclass(frozen=True)
class SharedAccess:
    """One warp's access: per instruction (a group of `vec` registers) and lane, the bytes.

    `words[i, lane, j]` is the j-th 4-byte word lane `lane` touches in instruction i.
    """

    vec: int
    elem_bytes: int
    words: np.ndarray  # [instructions, lanes, words per access]
    ways: np.ndarray  # [instructions]: n-way conflict (max over phases)
    wavefronts: np.ndarray  # [instructions]: sum over phases of the n-way

    @property
    def banks(self) -> np.ndarray:
        return self.words % NUM_BANKS

    @property
    def max_ways(self) -> int:
        return int(self.ways.max())


def analyze(
    reg_layout: LinearLayout, shared_layout: LinearLayout, elem_bytes: int, warp: int = 0
) -> SharedAccess:
    """Every access one warp makes to move its registers to or from `shared_layout`."""
    import numpy as np  # loaded by the first kernel that stages data through shared memory

    layout = offsets(reg_layout, shared_layout)
    vec = access_vector(layout, elem_bytes)
    table = layout.table(("register", "lane"), warp=warp)  # [registers, lanes]
    starts = table[::vec] * elem_bytes  # [instructions, lanes] byte address of each access
    access_bytes = vec * elem_bytes
    per_access = max(1, access_bytes // BANK_BYTES)
    words = starts[:, :, None] // BANK_BYTES + np.arange(per_access)
    instructions, lanes = starts.shape
    lanes_per_phase = min(lanes, NUM_BANKS * BANK_BYTES // max(BANK_BYTES, access_bytes))
    phases = lanes // lanes_per_phase
    # one key per (instruction, phase, word): duplicates are broadcasts, not conflicts
    group = np.arange(instructions)[:, None] * phases + np.arange(lanes)[None, :] // lanes_per_phase
    group = np.broadcast_to(group[:, :, None], words.shape).ravel()
    flat = words.ravel()
    span = int(flat.max()) + 1 if flat.size else 1
    unique = np.unique(group.astype(np.int64) * span + flat)
    g, w = unique // span, unique % span
    counts = np.bincount(g * NUM_BANKS + w % NUM_BANKS, minlength=instructions * phases * NUM_BANKS)
    per_phase = counts.reshape(instructions, phases, NUM_BANKS).max(axis=2)
    return SharedAccess(vec, elem_bytes, words, per_phase.max(axis=1), per_phase.sum(axis=1))


def bank_conflicts(
    reg_layout: LinearLayout, shared_layout: LinearLayout, elem_bytes: int, warp: int = 0
) -> int:
    """n-way bank conflict of one warp's access (worst instruction); 1 = conflict-free."""
    return analyze(reg_layout, shared_layout, elem_bytes, warp).max_ways


def bank_map(
    reg_layout: LinearLayout,
    shared_layout: LinearLayout,
    elem_bytes: int,
    warp: int = 0,
    instruction: int = 0,
) -> np.ndarray:
    """[lanes, words per access]: the banks each lane touches in one instruction."""
    return analyze(reg_layout, shared_layout, elem_bytes, warp).banks[instruction]


def best_swizzle(
    accesses: list[LinearLayout], elem_bytes: int
) -> tuple[LinearLayout, list[SharedAccess]]:
    """The swizzled shared layout that serves all `accesses` (register layouts of one shape)
    in the fewest wavefronts, then the fewest instructions, then the smallest max_phase."""
    shape = accesses[0].out_shape
    rank = len(shape)
    orders = []
    for layout in accesses:
        fastest = max(range(rank), key=lambda d: (max_contiguous_registers(layout, d), d))
        order = [fastest] + [d for d in reversed(range(rank)) if d != fastest]
        if order not in orders:
            orders.append(order)
    best = None
    for order in orders:
        cols = shape[order[0]]
        widest = max(1, min(cols, 2 * MAX_ACCESS_BYTES // elem_bytes))
        for vec in (1 << k for k in range(widest.bit_length())):
            for max_phase in (1, 2, 4, 8, 16):
                if rank < 2 or vec * max_phase > cols:
                    continue
                for per_phase in (1, 2, 4, 8) if max_phase > 1 else (1,):
                    shared = swizzled_shared(vec, per_phase, max_phase, order, shape)
                    results = [analyze(a, shared, elem_bytes) for a in accesses]
                    cost = (
                        sum(int(r.wavefronts.sum()) for r in results),
                        sum(len(r.wavefronts) for r in results),
                        max_phase,
                        per_phase,
                    )
                    if best is None or cost < best[0]:
                        best = (cost, shared, results)
    if best is None:  # rank 1: nothing to swizzle
        shared = swizzled_shared(1, 1, 1, [0], shape)
        return shared, [analyze(a, shared, elem_bytes) for a in accesses]
    return best[1], best[2]
