"""Naive, loop-based implementations of the documented layout semantics, written without
linear algebra, that the tests compare the linear layouts against."""

from __future__ import annotations

import itertools
import math


def delinearize(index: int, sizes, order) -> list[int]:
    """Multi-index of `index` over `sizes`, order[0] varying fastest."""
    coords = [0] * len(sizes)
    for d in order:
        coords[d] = index % sizes[d]
        index //= sizes[d]
    return coords


def blocked_coords(spt, tpw, wpc, order, shape, register, lane, warp) -> tuple[int, ...]:
    """Triton's blocked semantics: a CTA tile of spt*tpw*wpc per dim, thread coordinates
    delinearized in `order`, repeated over the tensor (registers index repetitions after
    the per-thread chunk), and everything taken modulo the shape (wrap-around)."""
    rank = len(shape)
    tile = [spt[d] * tpw[d] * wpc[d] for d in range(rank)]
    reps = [max(1, shape[d] // tile[d]) for d in range(rank)]
    per_thread = math.prod(spt)
    within = delinearize(register % per_thread, spt, order)
    rep = delinearize(register // per_thread, reps, order)
    lane_c = delinearize(lane, tpw, order)
    warp_c = delinearize(warp, wpc, order)
    return tuple(
        (rep[d] * tile[d] + warp_c[d] * spt[d] * tpw[d] + lane_c[d] * spt[d] + within[d]) % shape[d]
        for d in range(rank)
    )


def blocked_registers(spt, tpw, wpc, shape) -> int:
    rank = len(shape)
    reps = [max(1, shape[d] // (spt[d] * tpw[d] * wpc[d])) for d in range(rank)]
    return math.prod(spt) * math.prod(reps)


def swizzled_offset(row, col, vec, per_phase, max_phase, cols) -> int:
    """Element offset of (row, col) in a swizzled row-major buffer with `cols` columns."""
    phase = (row // per_phase) % max_phase
    chunks = cols // vec if cols >= vec else 1
    chunk = ((col // vec) ^ phase) % chunks
    return row * cols + chunk * vec + col % vec


def bank_ways(addresses_per_lane: list[int], access_bytes: int) -> int:
    """n-way conflict of one warp instruction: lanes grouped into phases by access width,
    distinct 4-byte words per bank counted per phase; the worst phase wins."""
    lanes_per_phase = {16: 8, 8: 16}.get(access_bytes, 32)
    worst = 0
    for start in range(0, len(addresses_per_lane), lanes_per_phase):
        words = set()
        for address in addresses_per_lane[start : start + lanes_per_phase]:
            for byte in range(address, address + access_bytes, 4):
                words.add(byte // 4)
        per_bank = {}
        for word in words:
            per_bank[word % 32] = per_bank.get(word % 32, 0) + 1
        worst = max(worst, max(per_bank.values()))
    return worst


def all_indices(*sizes):
    return itertools.product(*(range(s) for s in sizes))
