"""Types and values of the block language: dtypes, pointer and block types, constexpr, tensor.

These mirror `triton.language` so kernels written for Triton read the same here. Nothing in
this module knows about IR: the frontend maps dtypes to IR types and gives tensors a handle.
"""

from __future__ import annotations

import operator
from typing import Any


class dtype:
    """A scalar element type (`tl.float32`, `tl.int8`, ...). Compare with `==`; print as Triton."""

    # Triton's classification tuples, by name, over the dtypes kernellab carries (Triton's
    # FP_TYPES also lists fp8e4b15, which kernellab has not). fp8e4b8 and fp8e5b16 are the
    # "fnuz" formats of torch.float8_e4m3fnuz / float8_e5m2fnuz (no -0, one NaN, no inf).
    SINT_TYPES = ("int8", "int16", "int32", "int64")
    UINT_TYPES = ("int1", "uint8", "uint16", "uint32", "uint64")
    FP_TYPES = ("fp8e4nv", "fp8e4b8", "fp8e5", "fp8e5b16", "fp16", "bf16", "fp32", "fp64")
    FP8_TYPES = ("fp8e4nv", "fp8e5", "fp8e4b8", "fp8e5b16")
    STANDARD_FP_TYPES = ("fp16", "bf16", "fp32", "fp64")
    OTHER_TYPES = ("void",)
    _BITS = {
        "int1": 1, "int8": 8, "int16": 16, "int32": 32, "int64": 64,
        "uint8": 8, "uint16": 16, "uint32": 32, "uint64": 64,
        "fp8e4nv": 8, "fp8e5": 8, "fp8e4b8": 8, "fp8e5b16": 8, "fp16": 16, "bf16": 16, "fp32": 32, "fp64": 64,
    }  # fmt: skip
    # (exponent bits, mantissa bits, exponent bias) of each float format
    _FP_LAYOUT = {
        "fp8e4nv": (4, 3, 7), "fp8e5": (5, 2, 15), "fp8e4b8": (4, 3, 8), "fp8e5b16": (5, 2, 16),
        "fp16": (5, 10, 15),
        "bf16": (8, 7, 127), "fp32": (8, 23, 127), "fp64": (11, 52, 1023),
    }  # fmt: skip

    def __init__(self, name: str):
        if name not in self._BITS and name != "void":
            raise ValueError(f"unknown dtype {name!r}")
        self.name = name

    # -- classification -------------------------------------------------------------------
    @property
    def primitive_bitwidth(self) -> int:
        return self._BITS[self.name]

    @property
    def int_bitwidth(self) -> int:
        """Bits of an integer type (Triton's attribute, which float types lack)."""
        if not self.is_int():
            raise AttributeError(f"{self!r} is not an integer type, so it has no int_bitwidth")
        return self._BITS[self.name]

    @property
    def fp_mantissa_width(self) -> int:
        return self._FP_LAYOUT[self.name][1]

    @property
    def exponent_bias(self) -> int:
        return self._FP_LAYOUT[self.name][2]

    def is_floating(self) -> bool:
        return self.name in self.FP_TYPES

    def is_standard_floating(self) -> bool:
        return self.name in self.STANDARD_FP_TYPES

    @staticmethod
    def is_dtype(name: str) -> bool:
        """Whether `name` names a dtype (`tl.dtype.is_dtype("fp16")`)."""
        return name in dtype._BITS or name == "void"

    def is_int(self) -> bool:
        return self.name in self.SINT_TYPES or self.name in self.UINT_TYPES

    def is_int_signed(self) -> bool:
        return self.name in self.SINT_TYPES

    def is_int_unsigned(self) -> bool:
        return self.name in self.UINT_TYPES

    def is_bool(self) -> bool:
        return self.name == "int1"

    def is_fp8(self) -> bool:
        return self.name in self.FP8_TYPES

    def is_ptr(self) -> bool:
        return False

    def is_block(self) -> bool:
        return False

    def is_void(self) -> bool:
        return self.name == "void"

    @property
    def scalar(self) -> dtype:
        return self

    # -- identity -------------------------------------------------------------------------
    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other.name == self.name  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((type(self).__name__, self.name))

    def __repr__(self) -> str:
        return f"tl.{_PUBLIC_NAME.get(self.name, self.name)}"

    def __str__(self) -> str:
        return self.name

    def __call__(self, value):
        raise TypeError(
            f"{self!r} is a type, not a conversion function; use x.to({self!r}) in a kernel"
        )


def _is_named(name: str):
    def predicate(self) -> bool:
        return self.name == name

    predicate.__name__ = predicate.__qualname__ = f"is_{name}"
    return predicate


# Triton's one predicate per scalar type: is_int1(), is_uint32(), is_fp8e4nv(), is_bf16(), ...
for _scalar_name in dtype._BITS:
    setattr(dtype, f"is_{_scalar_name}", _is_named(_scalar_name))


class pointer_type(dtype):
    """Pointer to global memory holding `element_ty` (`*fp32` in a signature)."""

    def __init__(self, element_ty: dtype, address_space: int = 1):
        self.element_ty = element_ty
        self.address_space = address_space
        self.name = f"pointer<{element_ty.name}>"

    @property
    def primitive_bitwidth(self) -> int:
        return 64

    def is_ptr(self) -> bool:
        return True

    def is_int(self) -> bool:
        return False

    def is_floating(self) -> bool:
        return False

    def __eq__(self, other: object) -> bool:
        return isinstance(other, pointer_type) and other.element_ty == self.element_ty

    def __hash__(self) -> int:
        return hash(("pointer", self.element_ty))

    def __repr__(self) -> str:
        return f"pointer<{self.element_ty!r}>"

    def __str__(self) -> str:
        return f"*{self.element_ty.name}"


class block_type(dtype):
    """A tensor type: `element_ty` over a static `shape` (each dim a power of two)."""

    def __init__(self, element_ty: dtype, shape: tuple[int, ...] | list[int]):
        self.element_ty = element_ty
        self.shape = tuple(int(s) for s in shape)
        self.numel = 1
        for s in self.shape:
            self.numel *= s
        self.name = f"<{self.shape}, {element_ty.name}>"

    @property
    def scalar(self) -> dtype:
        return self.element_ty

    @property
    def primitive_bitwidth(self) -> int:
        return self.element_ty.primitive_bitwidth

    def is_block(self) -> bool:
        return True

    def is_ptr(self) -> bool:
        return False

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, block_type)
            and other.element_ty == self.element_ty
            and other.shape == self.shape
        )

    def __hash__(self) -> int:
        return hash(("block", self.element_ty, self.shape))

    def __repr__(self) -> str:
        dims = "x".join(str(s) for s in self.shape)
        return f"block<{dims}x{self.element_ty!r}>"

    __str__ = __repr__


_PUBLIC_NAME = {"fp8e4nv": "float8e4nv", "fp8e5": "float8e5", "fp8e4b8": "float8e4b8",
                "fp8e5b16": "float8e5b16", "fp16": "float16",
                "bf16": "bfloat16", "fp32": "float32", "fp64": "float64"}  # fmt: skip

void = dtype("void")
int1 = dtype("int1")
int8 = dtype("int8")
int16 = dtype("int16")
int32 = dtype("int32")
int64 = dtype("int64")
uint8 = dtype("uint8")
uint16 = dtype("uint16")
uint32 = dtype("uint32")
uint64 = dtype("uint64")
float8e4nv = dtype("fp8e4nv")
float8e5 = dtype("fp8e5")
float8e4b8 = dtype("fp8e4b8")
float8e5b16 = dtype("fp8e5b16")
float16 = dtype("fp16")
bfloat16 = dtype("bf16")
float32 = dtype("fp32")
float64 = dtype("fp64")
pi32_t = pointer_type(int32)

# Signature spellings, as in Triton: "*fp32", "i32", "u64", "fp16", "i1".
_SIGNATURE_NAMES = {
    "i1": int1, "i8": int8, "i16": int16, "i32": int32, "i64": int64,
    "u1": int1, "u8": uint8, "u16": uint16, "u32": uint32, "u64": uint64,
    "fp8e4nv": float8e4nv, "fp8e5": float8e5, "fp8e4b8": float8e4b8, "fp8e5b16": float8e5b16,
    "fp16": float16, "bf16": bfloat16,
    "fp32": float32, "f32": float32, "fp64": float64, "B": int1,
}  # fmt: skip
_ALIASES = ("u1", "f32", "B")  # other spellings of int1 and fp32


def dtype_from_signature(text: str) -> dtype:
    """Parse one signature entry: `*fp32` → pointer_type(float32), `i32` → int32. Triton's
    `*k` (pointer to constant data) reads as a plain pointer: kernellab has no const pointers."""
    text = text.strip()
    if text.startswith("*"):
        return pointer_type(dtype_from_signature(text[2:] if text.startswith("*k") else text[1:]))
    try:
        return _SIGNATURE_NAMES[text]
    except KeyError:
        known = ", ".join(sorted(_SIGNATURE_NAMES))
        raise ValueError(f"unknown type {text!r} in signature; use one of {known}, or *T for a pointer") from None


def signature_name(ty: dtype) -> str:
    """The inverse of `dtype_from_signature`."""
    if isinstance(ty, pointer_type):
        return "*" + signature_name(ty.element_ty)
    for name, t in _SIGNATURE_NAMES.items():
        if t == ty and name not in _ALIASES:
            return name
    raise ValueError(f"{ty!r} has no signature spelling")


def str_to_ty(name: str, c: Any = None) -> dtype:
    """Triton's name for `dtype_from_signature` (`tl.str_to_ty("*fp16", None)`), callable on
    the host and, with a compile-time name, in a kernel. Triton's `c` is the value of a
    `"constexpr"` entry, which has no dtype here; it is accepted so Triton's calls run."""
    return dtype_from_signature(name)


class constexpr:
    """A compile-time constant. Annotate a kernel parameter with `tl.constexpr` to specialize on it.

    Arithmetic between constexprs folds in Python, so `BLOCK // 2` stays a constant.
    """

    def __init__(self, value: Any):
        self.value = value.value if isinstance(value, constexpr) else value

    def __repr__(self) -> str:
        return f"constexpr[{self.value!r}]"

    def __index__(self) -> int:
        return operator.index(self.value)

    def __bool__(self) -> bool:
        return bool(self.value)

    def __int__(self) -> int:
        return int(self.value)

    def __float__(self) -> float:
        return float(self.value)

    def __hash__(self) -> int:
        return hash(self.value)

    def __call__(self, *args, **kwargs):
        return self.value(*args, **kwargs)

    def __getattr__(self, name: str):
        if name == "value":  # only reached before __init__ ran (e.g. while unpickling)
            raise AttributeError(name)
        return getattr(self.value, name)


def _unwrap(x: Any) -> Any:
    return x.value if isinstance(x, constexpr) else x


def _constexpr_binary(op):
    def forward(self, other):
        return constexpr(op(self.value, _unwrap(other)))

    def reverse(self, other):
        return constexpr(op(_unwrap(other), self.value))

    return forward, reverse


for _name, _op in {
    "add": operator.add, "sub": operator.sub, "mul": operator.mul,
    "truediv": operator.truediv, "floordiv": operator.floordiv, "mod": operator.mod,
    "pow": operator.pow, "and": operator.and_, "or": operator.or_, "xor": operator.xor,
    "lshift": operator.lshift, "rshift": operator.rshift,
}.items():  # fmt: skip
    _fwd, _rev = _constexpr_binary(_op)
    setattr(constexpr, f"__{_name}__", _fwd)
    setattr(constexpr, f"__r{_name}__", _rev)

for _name, _op in {
    "eq": operator.eq, "ne": operator.ne, "lt": operator.lt,
    "le": operator.le, "gt": operator.gt, "ge": operator.ge,
}.items():  # fmt: skip
    setattr(constexpr, f"__{_name}__", _constexpr_binary(_op)[0])

constexpr.__neg__ = lambda self: constexpr(-self.value)  # type: ignore[attr-defined]
constexpr.__pos__ = lambda self: constexpr(+self.value)  # type: ignore[attr-defined]
constexpr.__invert__ = lambda self: constexpr(~self.value)  # type: ignore[attr-defined]


class Shape(tuple):
    """A tensor's shape: a tuple of sizes that also compares equal to a list of the same sizes,
    because Triton's shape is a list and kernels check it as one (`x.shape == [BM, BN]`)."""

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (tuple, list)):
            return tuple(map(_unwrap, self)) == tuple(map(_unwrap, other))
        return NotImplemented

    def __ne__(self, other: object) -> bool:
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    __hash__ = tuple.__hash__


class tensor:
    """A value inside a kernel: a scalar or a block, with its type and an IR handle.

    Only the frontend creates tensors; user code sees them as the variables of a kernel.
    """

    def __init__(self, handle: Any, type: dtype):
        self.handle = handle
        self.type = type

    @property
    def dtype(self) -> dtype:
        return self.type.scalar

    @property
    def shape(self) -> Shape:
        return Shape(self.type.shape if isinstance(self.type, block_type) else ())

    @property
    def numel(self) -> int:
        return self.type.numel if isinstance(self.type, block_type) else 1

    def __repr__(self) -> str:
        return f"tensor({self.type!r})"

    def __bool__(self) -> bool:
        raise TypeError(
            "a kernel value has no truth value at compile time; compare it inside `if` "
            "(a runtime branch) or use tl.where"
        )


class tensor_descriptor:
    """A tensor descriptor inside a kernel: what `tl.make_tensor_descriptor` returns and what a
    host `TensorDescriptor` argument is. Only the frontend creates them; kernels test for one
    with `isinstance(x, tl.tensor_descriptor)` (decided at compile time), as Triton's tutorials
    do to accept either a host descriptor or a plain pointer."""


class KernelFunction:
    """A Python function written in the block language: the source the frontend compiles.

    `@kl.jit` wraps a function in a subclass that can also be launched; functions of the
    standard library (`tl.cdiv`, `tl.sigmoid`, `tl.rand`, ...) are plain KernelFunctions. Either
    can be called from a kernel, where the frontend compiles the call.
    """

    _SOURCE_FIELDS = ("src", "start_line", "filename", "indent")

    def __init__(self, fn, noinline: bool = False, lazy_source: bool = False, extern: ExternSymbols | None = None):
        import inspect

        self.fn = fn
        self.extern = extern
        self.__name__ = fn.__name__
        self.__qualname__ = getattr(fn, "__qualname__", fn.__name__)
        self.__doc__ = fn.__doc__
        self.__module__ = fn.__module__
        self.__wrapped__ = fn
        self.noinline = noinline
        self.signature = inspect.signature(fn)
        self.arg_names = list(self.signature.parameters)
        self.constexpr_names = {
            name
            for name, p in self.signature.parameters.items()
            if p.annotation is constexpr or p.annotation == "tl.constexpr"
            or (isinstance(p.annotation, str) and p.annotation.endswith("constexpr"))
        }
        if not lazy_source:
            self._read_source()

    def _read_source(self) -> None:
        import inspect
        import textwrap

        lines, self.start_line = inspect.getsourcelines(self.fn)
        self.filename = inspect.getsourcefile(self.fn) or self.fn.__code__.co_filename
        self.src = textwrap.dedent("".join(lines))
        # column offset removed by dedent, so errors can point at the original column
        self.indent = len(lines[0]) - len(lines[0].lstrip())

    def __getattr__(self, name: str):
        # the standard library's functions read their source when first compiled: reading
        # the ~150 of them at `import kernellab` cost a fifth of the import
        if name in KernelFunction._SOURCE_FIELDS:
            self._read_source()
            return self.__dict__[name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    @property
    def globals(self) -> dict:
        return self.fn.__globals__

    def __call__(self, *args, **kwargs):
        raise RuntimeError(
            f"{self.__name__} is a kernel function: call it from inside a @kl.jit kernel, or "
            f"launch a kernel with {self.__name__}[grid](...)"
        )

    def __repr__(self) -> str:
        return f"<kernel function {self.__qualname__}>"


class ExternSymbols:
    """The functions of an external library that compute a kernel function, by argument dtype
    ({"fp32": "__nv_asinf", "fp64": "__nv_asin"}). A backend that links `library` (the
    `extern_libs` option) calls them where every argument has one of those dtypes; elsewhere
    the kernel function's own body runs."""

    def __init__(self, library: str, symbols: dict[str, str]):
        self.library = library
        self.symbols = dict(symbols)

    def __repr__(self) -> str:
        return f"ExternSymbols({self.library!r}, {self.symbols!r})"


def kernel_function(fn=None, *, noinline: bool = False, extern: ExternSymbols | None = None):
    """Mark a function as written in the block language (used by the standard library);
    `extern` names library functions that may replace it (see ExternSymbols)."""
    if fn is None:
        return lambda f: KernelFunction(f, noinline=noinline, lazy_source=True, extern=extern)
    return KernelFunction(fn, noinline=noinline, lazy_source=True, extern=extern)


def builtin(fn):
    """Mark a `tl` function as a compiler builtin: the frontend implements it; Python can't call it."""
    import functools

    @functools.wraps(fn)
    def outside_kernel(*args, **kwargs):
        raise RuntimeError(
            f"tl.{fn.__name__} can only be called inside a @kl.jit kernel"
        )

    outside_kernel.__kernellab_builtin__ = fn.__name__
    return outside_kernel
