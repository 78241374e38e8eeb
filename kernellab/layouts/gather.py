"""tl.gather within a warp: whether a gather's layouts keep each source element it needs in the
reading thread's warp, and in which lane and register the thread finds it.

A gather reads `src` at positions that are data (the index), so in general the whole source goes
through shared memory. But when every warp holds, for the positions off the axis that its
result elements have, the whole axis of the source (in its lanes and registers), a thread can
fetch the element from the lane holding it with one warp shuffle per register that might hold
it: no shared memory, no barrier, no bank conflicts between random indices. `shuffle_plan`
decides that for any pair of linear layouts, e.g. row-wise gathers whose source and index have
the same shape (and so the same layouts), and says how to compute the lane and register.
Unlike Triton's OptimizeThreadLocality, TTGIR does not re-lay a gather's operands to make it
warp-local: kernellab's loads keep their coalesced layouts, so the conversions that would take
cost a shared-memory round trip each, more than the gather they would save.

Positions are row-major flat indices (the bits of the coordinates, the last dim lowest), as in
the lowering. For a layout whose register, lane and warp bases span the tensor, every flat
index f decomposes as XOR of bases, and each bit of that decomposition is the parity of
f & mask for a fixed mask (the layout's inverse is linear): that is what a thread evaluates at
run time for the source index of each result element.
"""

from __future__ import annotations

from dataclasses import dataclass

from kernellab.layouts.gf2 import Span
from kernellab.layouts.linear import LinearLayout, log2

# Registers a thread may have to choose from (one shuffle and one select each per result
# element). A shared-memory gather costs a store, a barrier and a load per element, the load
# replayed for bank conflicts between random indices (about 3.5 ways for 32 random words);
# beyond 4 candidates the shuffles would cost more.
MAX_CANDIDATES = 4


@dataclass(frozen=True)
class GatherShuffles:
    """How a thread finds the source element of a result element from its flat source index f:
    source lane bit j = parity(f & lane_masks[j]), source register bit j = parity(f &
    register_masks[j]). The register bits in `dynamic` depend on run-time values (the index,
    the thread); the others follow from the result register alone."""

    lane_masks: tuple[int, ...]
    register_masks: tuple[int, ...]
    dynamic: int
    src_shape: tuple[int, ...]
    res_shape: tuple[int, ...]
    axis: int

    def candidates(self, res_register_flat: int) -> list[int]:
        """Every register that may hold the source element of the result register whose own
        offset (its register part, no thread) is `res_register_flat`: the static bits follow from
        it, the dynamic ones take every value."""
        static_flat = _off_axis(res_register_flat, self.src_shape, self.res_shape, self.axis)
        base = 0
        for j, mask in enumerate(self.register_masks):
            if not self.dynamic >> j & 1:
                base |= _parity(static_flat & mask) << j
        dynamic_bits = [j for j in range(len(self.register_masks)) if self.dynamic >> j & 1]
        out = []
        for choice in range(1 << len(dynamic_bits)):
            register = base
            for i, j in enumerate(dynamic_bits):
                register |= (choice >> i & 1) << j
            out.append(register)
        return out


def shuffle_plan(src: LinearLayout, result: LinearLayout, axis: int) -> GatherShuffles | None:
    """The shuffles of a gather from `src` into `result` (the index's layout) along `axis`, or
    None when some result element's source is in another warp, or when a thread would choose
    among more than MAX_CANDIDATES registers."""
    src_shape, res_shape = tuple(src.out_shape), tuple(result.out_shape)
    src_bases = {dim: _flat_bases(src, dim) for dim in ("register", "lane", "warp")}
    res_bases = {dim: _flat_bases(result, dim) for dim in ("register", "lane", "warp")}
    if len(src_bases["warp"]) != len(res_bases["warp"]) or len(src_bases["lane"]) != len(res_bases["lane"]):
        return None
    inputs = src_bases["register"] + src_bases["lane"] + src_bases["warp"]
    span = Span()
    independent = [span.add(v, 1 << i) for i, v in enumerate(inputs)]
    bits = sum(log2(s) for s in src_shape)
    masks = [0] * len(inputs)  # input i's bit of the decomposition = parity(f & masks[i])
    for p in range(bits):
        combination = span.solve(1 << p)
        if combination is None:
            return None  # the layout does not cover the tensor
        for i in range(len(inputs)):
            if combination >> i & 1:
                masks[i] |= 1 << p
    n_regs, n_lanes = len(src_bases["register"]), len(src_bases["lane"])
    axis_bits = _dim_mask(src_shape, axis)

    def moved(res_flat: int) -> int:
        return _off_axis(res_flat, src_shape, res_shape, axis)

    for w, src_warp in enumerate(src_bases["warp"]):
        if not src_warp:
            continue  # the source is copied over this warp bit: every warp has the data
        i = n_regs + n_lanes + w
        if not independent[i] or masks[i] & axis_bits:
            return None
        for dim in ("register", "lane", "warp"):
            for j, basis in enumerate(res_bases[dim]):
                own = dim == "warp" and j == w
                if _parity(moved(basis) & masks[i]) != own:
                    return None
    runtime = axis_bits
    for dim in ("lane", "warp"):
        for basis in res_bases[dim]:
            runtime |= moved(basis)
    register_masks = tuple(masks[:n_regs])
    dynamic = sum(1 << j for j, mask in enumerate(register_masks) if mask & runtime)
    if 1 << bin(dynamic).count("1") > MAX_CANDIDATES:
        return None
    return GatherShuffles(
        tuple(masks[n_regs : n_regs + n_lanes]), register_masks, dynamic, src_shape, res_shape, axis
    )


def source_flat(res_flat: int, index: int, src_shape, res_shape, axis: int) -> int:
    """Flat source index of the result element at `res_flat` whose coordinate on `axis` is
    replaced by `index`: the dims after the axis keep their bits, the dims before it move by
    the difference of the axis sizes."""
    low = sum(log2(s) for s in src_shape[axis + 1 :])
    high = res_flat >> (low + log2(res_shape[axis]))
    return (high << (low + log2(src_shape[axis]))) | (index << low) | (res_flat & ((1 << low) - 1))


def _off_axis(res_flat: int, src_shape, res_shape, axis: int) -> int:
    """The source offset of a result offset's position off the axis (axis coordinate 0)."""
    return source_flat(res_flat & ~_dim_mask(res_shape, axis), 0, src_shape, res_shape, axis)


def _flat_bases(layout: LinearLayout, dim: str) -> list[int]:
    shape = layout.out_shape
    return [_flat(layout.apply(**{dim: 1 << i}), shape) for i in range(layout.in_dim_bits(dim))]


def _flat(coords, shape) -> int:
    flat = 0
    for c, s in zip(coords, shape):
        flat = (flat << log2(s)) | c
    return flat


def _dim_mask(shape, dim: int) -> int:
    low = sum(log2(s) for s in shape[dim + 1 :])
    return ((1 << log2(shape[dim])) - 1) << low


def _parity(x: int) -> int:
    return bin(x).count("1") & 1
