"""The virtual address space: pointer arguments, address resolution and bounds checks.

Pointers are int64 byte addresses. Pointer argument k lives at `(k + 1) << 40`, so pointer
arithmetic, `ptr_to_int`/`int_to_ptr` and pointer bitcasts are plain integer arithmetic, and
the buffer an address belongs to is its nearest base (`(addr + 2**39) >> 40`): an address a
little before a buffer still names that buffer in error messages. Every access checks all its
active lanes before touching memory, so an out-of-bounds access raises instead of reading or
writing anywhere.
"""

from __future__ import annotations

import numpy as np

from kernellab.backends.arguments import ArgumentError, flat_buffer
from kernellab.backends.interpreter.errors import OutOfBoundsError, describe_program

REGION_BITS = 40
_HALF = 1 << (REGION_BITS - 1)
_I64_MAX = np.iinfo(np.int64).max
_I64_MIN = np.iinfo(np.int64).min


def base_address(arg_index: int) -> int:
    return (arg_index + 1) << REGION_BITS


class Buffer:
    """One pointer argument: its array's bytes and typed flat views of them.

    A strided view (`x[::2]`, a column of a matrix) is passed as Triton passes it: its data
    pointer, the kernel indexing memory with the view's strides. The buffer is then the span
    from the view's first to its last element, and `members` marks which of the span's elements
    belong to the view, so that touching one in between is reported like an out-of-bounds
    access instead of silently reading or writing the parent array."""

    __slots__ = ("name", "array", "base", "nbytes", "members", "_bytes", "_views")

    def __init__(self, name: str, array: np.ndarray, base: int):
        if not isinstance(array, np.ndarray):
            raise TypeError(
                f"pointer argument '{name}' must be a numpy array, got {type(array).__name__}"
            )
        self.members = None
        if array.flags.c_contiguous or array.flags.f_contiguous:
            flat = array.ravel(order="K")
        else:
            try:
                flat = flat_buffer(array)
            except ArgumentError as e:
                raise ValueError(f"pointer argument '{name}': {e}") from None
            if flat.size > array.size:  # elements of the parent array lie in between
                steps = [np.arange(n) * (st // array.itemsize) for n, st in zip(array.shape, array.strides)]
                self.members = np.zeros(flat.size, bool)
                self.members[sum(np.ix_(*steps)).ravel()] = True
        self.name, self.array, self.base, self.nbytes = name, array, base, flat.nbytes
        self._bytes = flat.view(np.uint8)
        self._views = {flat.dtype: flat}

    def outside_view(self, byte_offsets: np.ndarray) -> np.ndarray:
        """Which in-range byte offsets fall on an element the (strided) view does not contain."""
        return ~self.members[byte_offsets // self.array.itemsize]

    def describe_view(self) -> str:
        item = self.array.itemsize
        strides = tuple(st // item for st in self.array.strides)
        return f"a strided view (shape {self.array.shape}, strides {strides} elements)"

    def view(self, dt: np.dtype) -> np.ndarray:
        """The buffer as a flat array of `dt` (pointer bitcasts read other types)."""
        v = self._views.get(dt)
        if v is None:
            usable = self.nbytes - self.nbytes % dt.itemsize
            v = self._views[dt] = self._bytes[:usable].view(dt)
        return v


class Site:
    """What an access is, for error messages and traces: kind, op index, source location."""

    __slots__ = ("kind", "op_index", "location")

    def __init__(self, kind: str, op_index: int, location: str):
        self.kind, self.op_index, self.location = kind, op_index, location


class Memory:
    """The buffers of one launch, keyed by region (`addr >> 40`)."""

    def __init__(self, buffers: list[Buffer], check_alignment: bool):
        self.regions = {(b.base + _HALF) >> REGION_BITS: b for b in buffers}
        self.check_alignment = check_alignment

    def locate(self, fr, site: Site, addr: np.ndarray, mask, dt: np.dtype):
        """Resolve the active lanes of an access to element indices.

        Returns `(shape, groups)`: `addr` and `mask` broadcast to `shape`, and one
        `(buffer, idx, lane_mask)` per buffer touched, where `idx` has `shape` and `lane_mask`
        is None when every lane is active. Indices of inactive lanes are arbitrary: gathers clip
        them into the buffer and scatters skip them. Raises OutOfBoundsError if any active lane
        is outside its buffer.
        """
        if mask is not None:
            addr, mask = np.broadcast_arrays(addr, mask)
            if mask.all():
                mask = None
            elif not mask.any():
                return addr.shape, []
        size = dt.itemsize
        if mask is None:
            lo, hi = int(addr.min()), int(addr.max())
        else:
            lo = int(np.min(addr, where=mask, initial=_I64_MAX))
            hi = int(np.max(addr, where=mask, initial=_I64_MIN))
        region = (lo + _HALF) >> REGION_BITS
        buf = self.regions.get(region)
        if (
            buf is not None
            and (hi + _HALF) >> REGION_BITS == region
            and lo >= buf.base
            and hi + size <= buf.base + buf.nbytes
        ):
            idx = addr - buf.base
            if self.check_alignment and size > 1 and self._misaligned(idx, mask, size):
                return self._slow(fr, site, addr, mask, dt)
            if buf.members is not None:  # masked-off lanes' addresses may lie anywhere
                outside = buf.outside_view(idx if mask is None else np.where(mask, idx, 0))
                if (outside if mask is None else outside & mask).any():
                    return self._slow(fr, site, addr, mask, dt)
            if size > 1:
                np.right_shift(idx, size.bit_length() - 1, out=idx)
            return addr.shape, [(buf, idx, mask)]
        return self._slow(fr, site, addr, mask, dt)

    @staticmethod
    def _misaligned(off, mask, size) -> bool:
        bad = (off & (size - 1)) != 0
        return bool((bad if mask is None else bad & mask).any())

    def _slow(self, fr, site, addr, mask, dt):
        """Per-lane resolution: accesses spanning several buffers, or the error report."""
        size = dt.itemsize
        region = (addr + _HALF) >> REGION_BITS
        active = np.ones(addr.shape, bool) if mask is None else mask
        valid = np.zeros(addr.shape, bool)
        groups = []
        for r in np.unique(region[active]):
            buf = self.regions.get(int(r))
            lanes = active & (region == r)
            if buf is None:
                continue
            off = addr - buf.base
            ok = lanes & (off >= 0) & (off + size <= buf.nbytes) & (off % size == 0)
            if buf.members is not None:
                ok &= ~buf.outside_view(np.where(ok, off, 0))
            valid |= ok
            groups.append((buf, np.where(ok, off // size, 0), ok))
        bad = active & ~valid
        if bad.any():
            raise self._error(fr, site, addr, bad, region, dt)
        return addr.shape, groups

    def _error(self, fr, site, addr, bad, region, dt) -> OutOfBoundsError:
        first = np.unravel_index(int(np.argmax(bad)), bad.shape)
        if bad.shape[0] == 1:  # the same access in every program of the frame
            program, count = fr.program_of(0), fr.P
        else:
            program = fr.program_of(int(first[0]))
            count = int(bad.reshape(bad.shape[0], -1).any(axis=1).sum())
        at = describe_program(program)
        if count > 1:
            at += f" (and {count - 1} other programs)"
        if len(first) > 1:
            at += f", lane {tuple(int(i) for i in first[1:])}"
        a = int(addr[first])
        buf = self.regions.get(int(region[first]))
        verb = {"load": "load from", "store": "store to"}.get(site.kind, f"{site.kind} on")
        head = f"{site.location}: out-of-bounds {verb}"
        if buf is None:
            return OutOfBoundsError(
                f"{head} address {a:#x}, which is in no argument's buffer, in {at}; "
                "check the pointer arithmetic"
            )
        off = a - buf.base
        if off % dt.itemsize:
            what = f"byte offset {off} is not a multiple of the {dt.itemsize}-byte element size"
        elif buf.members is not None and 0 <= off < buf.nbytes and buf.outside_view(np.array(off)):
            return OutOfBoundsError(
                f"{head} argument '{buf.name}' in {at}: element offset {off // dt.itemsize} from its "
                f"pointer is not an element of the array, which is {buf.describe_view()}; a kernel "
                "gets a view's base pointer, as in Triton: index it with its strides (pass "
                "x.stride(0)), or pass a contiguous copy"
            )
        else:
            count = buf.nbytes // dt.itemsize
            what = f"element index {off // dt.itemsize} but the buffer has {count} elements of {dt}"
        return OutOfBoundsError(
            f"{head} argument '{buf.name}' in {at}: {what}; mask the access or fix the offsets"
        )
