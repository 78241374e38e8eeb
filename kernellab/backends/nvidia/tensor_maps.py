"""Tensor descriptors as TMA tensor maps: the 128-byte CUtensorMap each by-value kernel
parameter of a TMA kernel receives, encoded by the driver (`cuTensorMapEncodeTiled`) from the
launch's arguments (a host TensorDescriptor's, or the parameters a device-side descriptor is
made of) and the box, swizzle and fill the compiler chose (`TmaDescriptor`).

TMA reads a tensor only if its base is 16-byte aligned, its last stride is 1 and its other
strides are multiples of 16 bytes; a launch whose descriptor breaks one of these is refused
here with what to change (the plain lowering, `target="sm_90"`, reads any strided tensor).
Encoded maps are cached per (descriptor, base, shape, strides): a warm launch encodes nothing.

A tensor with an empty dim (0 rows, or K = 0 in a matmul whose operands the compiler reads
through descriptors) has no map the driver encodes, yet every access to it is defined: a read
gives the fill, a write writes nothing. Its map is encoded over a one-element tensor of this
module's own memory instead (`_EmptyTensors`): for a load map, a page that holds the fill,
never written (every element the map reaches past the first is outside, and reads the fill
too); for a store map, a page nothing reads. A map serves loads or stores, never both
(`TmaDescriptor.access`).
"""

from __future__ import annotations

from kernellab.backends.arguments import ArgumentError
from kernellab.backends.metadata import TmaDescriptor
from kernellab.backends.nvidia import driver

# pointee of the base parameter's signature type → (CUtensorMapDataType name, bytes)
_DATA_TYPES = {
    "fp16": ("FLOAT16", 2), "bf16": ("BFLOAT16", 2), "fp32": ("FLOAT32", 4),
    "fp64": ("FLOAT64", 8), "i8": ("UINT8", 1), "u8": ("UINT8", 1), "fp8e4nv": ("UINT8", 1),
    "fp8e5": ("UINT8", 1), "i16": ("UINT16", 2), "u16": ("UINT16", 2), "i32": ("INT32", 4),
    "u32": ("UINT32", 4), "i64": ("INT64", 8), "u64": ("UINT64", 8),
}  # fmt: skip


class TensorMaps:
    """The tensor maps of one kernel's TMA parameters, for the arguments of a launch."""

    def __init__(self, kernel: str, descriptors: list[TmaDescriptor], signature: list[str]):
        self.kernel = kernel
        self.descriptors = descriptors
        self.signature = signature
        self._cache: dict[tuple, bytes] = {}

    def encode(self, args, device: int) -> list[bytes]:
        return [self._map(i, d, args, device) for i, d in enumerate(self.descriptors)]

    def _map(self, i: int, d: TmaDescriptor, args, device: int) -> bytes:
        def value(source):
            kind, n = source
            return int(args[n]) if kind == "arg" else int(n)

        base = value(d.base)
        shape = tuple(value(s) for s in d.shape)
        strides = tuple(value(s) for s in d.strides)
        if min(shape) < 1:  # nothing inside: one element of memory every access may touch
            base, shape = _EMPTY.page(device, d), (1,) * len(shape)
            strides = (*[_PAGE_STRIDE] * (len(shape) - 1), 1)
        key = (i, base, shape, strides)
        found = self._cache.get(key)
        if found is None:
            found = self._cache[key] = self._encode(d, base, shape, strides)
        return found

    def _encode(self, d: TmaDescriptor, base: int, shape: tuple, strides: tuple) -> bytes:
        pointee = self.signature[d.base[1]].lstrip("*") if d.base[0] == "arg" else ""
        data_type, nbytes = _DATA_TYPES.get(pointee, (None, 0))
        problem = check(d, base, shape, strides, nbytes)
        if data_type is None:
            problem = f"its elements ({pointee}) have no TMA data type"
        if problem:
            raise ArgumentError(
                f"{self.kernel}: the tensor descriptor {d.param!r} can't be read with TMA: "
                f"{problem}. Pass a tensor that satisfies it (a contiguous tensor whose rows are a "
                "multiple of 16 bytes, from an aligned allocation), or compile for "
                'target="sm_90", whose plain loads read any strided tensor'
            )
        return driver.encode_tensor_map(
            data_type, base, shape, strides, nbytes, d.box, d.swizzle, d.fill == "nan"
        )


_PAGE_STRIDE = 16  # elements: a multiple of 16 bytes for any element size
_PAGE_BYTES = 256


class _EmptyTensors:
    """Per device, the pages the maps of empty tensors point at: one holding zeros and one
    holding NaN (all bits set: a NaN in every float format) for loads, one for stores."""

    def __init__(self):
        self._pages: dict[int, int] = {}  # device → address of its three pages

    def page(self, device: int, d: TmaDescriptor) -> int:
        start = self._pages.get(device)
        if start is None:
            start = int(driver.call("cuMemAlloc", 3 * _PAGE_BYTES))  # 256-byte aligned
            driver.call("cuMemsetD8", start, 0, _PAGE_BYTES)
            driver.call("cuMemsetD8", start + _PAGE_BYTES, 0xFF, _PAGE_BYTES)
            self._pages[device] = start
        if d.access == "store":
            return start + 2 * _PAGE_BYTES
        return start + (_PAGE_BYTES if d.fill == "nan" else 0)


_EMPTY = _EmptyTensors()


def check(d: TmaDescriptor, base: int, shape: tuple, strides: tuple, nbytes: int) -> str:
    """What keeps a tensor from TMA ("" when nothing does)."""
    if base % 16:
        return f"its base address {base:#x} is not 16-byte aligned"
    if strides[-1] != 1:
        return f"its last stride is {strides[-1]}, not 1"
    for dim, stride in enumerate(strides[:-1]):
        if stride * nbytes % 16:
            return f"stride {dim} ({stride} elements, {stride * nbytes} bytes) is not a multiple of 16 bytes"
    if any(s >= 2**32 for s in shape):
        return f"its shape {shape} has a dim of 2**32 or more"
    return ""
