"""`kl.reinterpret(tensor, dtype)`: the same memory passed to a kernel as another element type.

Triton's `triton.reinterpret` exists because host libraries lack some of the kernel's types
(fp8 formats in older torch releases, unsigned integers): a program keeps its data in a tensor
of a type the library has (`torch.uint8`) and tells the kernel what the bytes are
(`tl.float8e5`). The view copies nothing: on the GPU the kernel receives the tensor's address
typed as `*dtype`; on the interpreter it receives the array's bytes viewed as that dtype, so
stores land in the original tensor.
"""

from __future__ import annotations

from kernellab.language import core as tl


class ReinterpretedTensor:
    """`base` (a numpy array, a torch tensor, a GPU array) read by kernels as elements of `dtype`.

    It answers the questions Triton programs ask of the view (`dtype`, `shape`, `data_ptr()`,
    `stride()`, `numel()`, `element_size()`, `device`) from the base; `dtype` is the kernel's
    type (a `tl.dtype`), which is what makes the view worth having.
    """

    def __init__(self, base, dtype: tl.dtype):
        if isinstance(base, ReinterpretedTensor):
            base = base.base
        if isinstance(dtype, str):
            dtype = tl.dtype_from_signature(dtype)
        if not isinstance(dtype, tl.dtype) or isinstance(dtype, tl.pointer_type | tl.block_type) or dtype.is_void():
            raise TypeError(f"reinterpret takes a scalar type such as tl.float8e5, got {dtype!r}")
        self.base = base
        self.dtype = dtype

    @property
    def shape(self):
        return self.base.shape

    @property
    def device(self):
        return getattr(self.base, "device", "cpu")

    @property
    def is_cuda(self) -> bool:
        return bool(getattr(self.base, "is_cuda", False))

    def data_ptr(self) -> int:
        base = self.base
        return base.data_ptr() if hasattr(base, "data_ptr") else base.__array_interface__["data"][0]

    def element_size(self) -> int:
        return max(1, self.dtype.primitive_bitwidth // 8)

    def numel(self) -> int:
        base = self.base
        return base.numel() if hasattr(base, "numel") else int(base.size)

    def stride(self, dim: int | None = None):
        """The base's strides in elements (torch's `stride()`; numpy's byte strides converted)."""
        base = self.base
        if hasattr(base, "stride") and callable(base.stride):
            return base.stride() if dim is None else base.stride(dim)
        strides = tuple(s // base.itemsize for s in base.strides)
        return strides if dim is None else strides[dim]

    def __repr__(self) -> str:
        return f"reinterpret({type(self.base).__name__} of shape {tuple(self.shape)}, {self.dtype!r})"


def reinterpret(tensor, dtype) -> ReinterpretedTensor:
    """`tensor`'s memory, read and written by kernels as elements of `dtype` (a `tl.dtype` or
    its signature name, "fp8e5"). Reinterpreting a view again replaces its type; asking for the
    type the base already has gives the base back."""
    view = ReinterpretedTensor(tensor, dtype)
    return view.base if _base_dtype_name(view.base) == tl.signature_name(view.dtype) else view


def _base_dtype_name(base) -> str | None:
    from kernellab.backends.arguments import ArgumentError, specialize

    try:
        key, _ = specialize(base, specialize=False, align=False)
    except ArgumentError:
        return None
    return key[0][1:] if isinstance(key[0], str) and key[0][:1] == "*" else None


__all__ = ["ReinterpretedTensor", "reinterpret"]
