"""The `ttg` dialect: layout encodings, shared-memory descriptors and the ops that move data
between layouts, declared with xDSL IRDL and printed exactly as Triton's TritonGPU dialect.

A TTGIR tensor type carries its layout in TensorType's encoding slot:
`tensor<1024xf32, #ttg.blocked<{sizePerThread = [4], threadsPerWarp = [32], warpsPerCTA = [4],
order = [0]}>>`. `kernellab.layouts.from_encoding(attr, shape)` turns each encoding into the
LinearLayout that says which thread holds which element.

Python reads every field in snake_case as plain ints / tuples (`attr.size_per_thread`,
`attr.warps_per_cta`, `attr.parent`); the IR parameters behind them (`_size_per_thread`, ...)
are xDSL attributes and not meant to be touched.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import (
    ArrayAttr,
    IntAttr,
    IntegerAttr,
    ModuleOp,
    NoneAttr,
    StringAttr,
    TensorType,
    i32,
)
from xdsl.ir import Attribute, Dialect, ParametrizedAttribute, SSAValue, TypeAttribute
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_attr_definition,
    operand_def,
    opt_operand_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.traits import (
    MemoryAllocEffect,
    MemoryFreeEffect,
    MemoryReadEffect,
    MemoryWriteEffect,
    Pure,
)

from kernellab.ir.op_families import op_definition

# ------------------------------------------------------------------------------ encodings

_INTS, _INT, _ATTR = "ints", "int", "attr"
_IR_TYPES = {_INTS: ArrayAttr[IntAttr], _INT: IntAttr, _ATTR: Attribute}


def _ints(values: Sequence[int]) -> ArrayAttr[IntAttr]:
    return ArrayAttr([IntAttr(int(v)) for v in values])


def _ir_param(kind: str, value) -> Attribute:
    """An encoding field's value as its IR parameter (`_IR_TYPES[kind]`)."""
    if kind == _INTS:
        return _ints(value)
    return IntAttr(int(value)) if kind == _INT else value


class _Encoding(ParametrizedAttribute):
    """An encoding printed as `#ttg.name<{key = value, ...}>`.

    FIELDS lists (printed key, python name, kind, default) in print order; kind is "ints"
    (`[1, 8]`), "int" or "attr" (another encoding, e.g. a slice's parent). A field with a
    default is omitted from the text when it has that value, as Triton omits kWidth = 0.
    FIELDS is the one declaration of an encoding's parameters: the IR parameters
    (`_size_per_thread: ArrayAttr[IntAttr]`) are derived from it, and the constructor takes the
    values in FIELDS order, trailing ones with a default optional.
    """

    FIELDS: ClassVar[tuple[tuple[str, str, str, object], ...]] = ()

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls.__annotations__ = {"_" + py: _IR_TYPES[kind] for _, py, kind, _ in cls.FIELDS}

    def __init__(self, *values):
        given = len(values)
        values = (*values, *(default for _, _, _, default in self.FIELDS[given:]))
        if given > len(self.FIELDS) or None in values[given:]:
            raise TypeError(
                f"{type(self).__name__} takes {', '.join(f[1] for f in self.FIELDS)}"
            )
        super().__init__(
            *(_ir_param(kind, v) for (_, _, kind, _), v in zip(self.FIELDS, values, strict=True))
        )

    def __getattr__(self, name: str):
        # python names (`size_per_thread`) read the private IR parameter (`_size_per_thread`)
        for _, py, kind, _ in type(self).FIELDS:
            if py == name:
                value = object.__getattribute__(self, "_" + py)
                if kind == _INTS:
                    return tuple(v.data for v in value.data)
                if kind == _INT:
                    return value.data
                return value
        raise AttributeError(f"{type(self).__name__} has no attribute {name!r}")

    def print_parameters(self, printer: Printer) -> None:
        parts = []
        for key, py, kind, default in self.FIELDS:
            value = getattr(self, py)
            if default is not None and value == default:
                continue
            parts.append((key, kind, value))
        printer.print_string("<{")
        for i, (key, kind, value) in enumerate(parts):
            printer.print_string(f"{', ' if i else ''}{key} = ")
            if kind == _INTS:
                printer.print_string("[" + ", ".join(str(v) for v in value) + "]")
            elif kind == _INT:
                printer.print_string(str(value))
            else:
                printer.print_attribute(value)
        printer.print_string("}>")

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        fields = {key: (py, kind, default) for key, py, kind, default in cls.FIELDS}
        values: dict[str, object] = {}

        def entry() -> None:
            key = parser.parse_identifier()
            if key not in fields:
                parser.raise_error(f"#{cls.name} has no field {key!r}; fields: {', '.join(fields)}")
            parser.parse_punctuation("=")
            kind = fields[key][1]
            if kind == _INTS:
                values[key] = parser.parse_comma_separated_list(
                    parser.Delimiter.SQUARE, parser.parse_integer
                )
            elif kind == _INT:
                values[key] = parser.parse_integer()
            else:
                values[key] = parser.parse_attribute()

        with parser.in_angle_brackets():
            parser.parse_comma_separated_list(parser.Delimiter.BRACES, entry)
        params = []
        for key, (_, kind, default) in fields.items():
            if key not in values:
                if default is None:
                    parser.raise_error(f"#{cls.name} needs {key}")
                values[key] = default
            params.append(_ir_param(kind, values[key]))
        return params


@irdl_attr_definition
class BlockedEncodingAttr(_Encoding):
    """Each thread holds `size_per_thread` contiguous elements; lanes then warps tile the rest.

    `order` lists dims fastest-varying first (order[0] is the most contiguous dim).
    """

    name = "ttg.blocked"
    FIELDS = (
        ("sizePerThread", "size_per_thread", _INTS, None),
        ("threadsPerWarp", "threads_per_warp", _INTS, None),
        ("warpsPerCTA", "warps_per_cta", _INTS, None),
        ("order", "order", _INTS, None),
    )

    @property
    def rank(self) -> int:
        return len(self.order)


@irdl_attr_definition
class SliceEncodingAttr(_Encoding):
    """The parent layout with dim `dim` removed: what a reduction along `dim` leaves."""

    name = "ttg.slice"
    FIELDS = (("dim", "dim", _INT, None), ("parent", "parent", _ATTR, None))

    @property
    def rank(self) -> int:
        return self.parent.rank - 1


@irdl_attr_definition
class NvidiaMmaEncodingAttr(_Encoding):
    """The accumulator layout of mma.sync (v2, Ampere) or wgmma (v3, Hopper)."""

    name = "ttg.nvidia_mma"
    FIELDS = (
        ("versionMajor", "version_major", _INT, None),
        ("versionMinor", "version_minor", _INT, None),
        ("warpsPerCTA", "warps_per_cta", _INTS, None),
        ("instrShape", "instr_shape", _INTS, None),
    )

    @property
    def rank(self) -> int:
        return len(self.warps_per_cta)


@irdl_attr_definition
class DotOperandEncodingAttr(_Encoding):
    """Operand `op_idx` (0 = A, 1 = B) of a dot whose result has layout `parent`.

    `k_width` is the number of consecutive K elements a thread holds (MMA parents); it is 0,
    and not printed, for a blocked parent (the FMA dot).
    """

    name = "ttg.dot_op"
    FIELDS = (
        ("opIdx", "op_idx", _INT, None),
        ("parent", "parent", _ATTR, None),
        ("kWidth", "k_width", _INT, 0),
    )

    @property
    def rank(self) -> int:
        return self.parent.rank


@irdl_attr_definition
class SwizzledSharedEncodingAttr(_Encoding):
    """Shared-memory layout: rows of `vec`-element vectors XOR-swizzled by (row / per_phase) %
    max_phase to avoid bank conflicts; `order` is the storage order, fastest dim first."""

    name = "ttg.swizzled_shared"
    FIELDS = (
        ("vec", "vec", _INT, None),
        ("perPhase", "per_phase", _INT, None),
        ("maxPhase", "max_phase", _INT, None),
        ("order", "order", _INTS, None),
    )

    @property
    def rank(self) -> int:
        return len(self.order)


@irdl_attr_definition
class NVMMASharedEncodingAttr(_Encoding):
    """Shared-memory layout the Hopper tensor cores read through descriptors: the contiguous dim
    is cut into blocks of `swizzlingByteWidth` bytes, each block stored as rows of that many
    bytes with 16-byte chunks XORed by the row (the hardware's 128/64/32-byte swizzle modes).
    `transposed`: dim 0 is the contiguous one (else the last dim)."""

    name = "ttg.nvmma_shared"
    FIELDS = (
        ("swizzlingByteWidth", "swizzle_bytes", _INT, None),
        ("transposed", "transposed", _INT, 0),
        ("elementBitWidth", "element_bits", _INT, None),
    )

    @property
    def order(self) -> tuple[int, int]:
        return (0, 1) if self.transposed else (1, 0)

    @property
    def rank(self) -> int:
        return 2


SHARED_ENCODINGS = (SwizzledSharedEncodingAttr, NVMMASharedEncodingAttr)


@irdl_attr_definition
class SharedMemorySpaceAttr(ParametrizedAttribute):
    """`#ttg.shared_memory`: the memory space of a memdesc living in shared memory."""

    name = "ttg.shared_memory"


DISTRIBUTED_ENCODINGS = (
    BlockedEncodingAttr,
    SliceEncodingAttr,
    NvidiaMmaEncodingAttr,
    DotOperandEncodingAttr,
)


# ----------------------------------------------------------------------------- memdesc type


@irdl_attr_definition
class MemDescType(ParametrizedAttribute, TypeAttribute):
    """`!ttg.memdesc<64x64xf16, #shared, #smem, mutable>`: a tensor-shaped buffer in shared
    memory. Values of this type are descriptors, not data; local_load/local_store move data."""

    name = "ttg.memdesc"
    _shape: ArrayAttr[IntAttr]
    element_type: Attribute
    encoding: Attribute
    memory_space: Attribute
    _mutable: IntAttr

    def __init__(
        self,
        shape: Sequence[int],
        element_type: Attribute,
        encoding: Attribute,
        memory_space: Attribute | None = None,
        mutable: bool = False,
    ):
        space = memory_space if memory_space is not None else SharedMemorySpaceAttr()
        super().__init__(_ints(shape), element_type, encoding, space, IntAttr(int(mutable)))

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(d.data for d in self._shape.data)

    def get_shape(self) -> tuple[int, ...]:
        return self.shape

    @property
    def mutable(self) -> bool:
        return bool(self._mutable.data)

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string("<")
        printer.print_string("".join(f"{d}x" for d in self.shape))
        printer.print_attribute(self.element_type)
        printer.print_string(", ")
        printer.print_attribute(self.encoding)
        printer.print_string(", ")
        printer.print_attribute(self.memory_space)
        if self.mutable:
            printer.print_string(", mutable")
        printer.print_string(">")

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        with parser.in_angle_brackets():
            shape, elem = parser.parse_ranked_shape()
            parser.parse_punctuation(",")
            encoding = parser.parse_attribute()
            parser.parse_punctuation(",")
            space = parser.parse_attribute()
            mutable = False
            if parser.parse_optional_punctuation(","):
                parser.parse_keyword("mutable")
                mutable = True
        return (_ints(shape), elem, encoding, space, IntAttr(int(mutable)))


# ----------------------------------------------------------------------------------- helpers


def encoding_of(t: Attribute) -> Attribute | None:
    """The layout encoding of a tensor type (None for scalars and encoding-less tensors)."""
    if isinstance(t, TensorType) and not isinstance(t.encoding, NoneAttr):
        return t.encoding
    return None


def with_encoding(t: TensorType, encoding: Attribute | None) -> TensorType:
    return TensorType(
        t.element_type, t.get_shape(), encoding if encoding is not None else NoneAttr()
    )


MODULE_ATTRS = ("ttg.num-ctas", "ttg.num-warps", "ttg.target", "ttg.threads-per-warp")


def set_module_attrs(
    module: ModuleOp, num_warps: int, target: str, threads_per_warp: int = 32, num_ctas: int = 1
) -> None:
    """`"ttg.num-warps" = 4 : i32, "ttg.target" = "cuda:90", ...` on the module."""
    module.attributes.update(
        {
            "ttg.num-ctas": IntegerAttr(num_ctas, i32),
            "ttg.num-warps": IntegerAttr(num_warps, i32),
            "ttg.target": StringAttr(target),
            "ttg.threads-per-warp": IntegerAttr(threads_per_warp, i32),
        }
    )


def _module_int(module: ModuleOp, key: str, default: int) -> int:
    attr = module.attributes.get(key)
    return attr.value.data if isinstance(attr, IntegerAttr) else default


def num_warps(module: ModuleOp) -> int:
    return _module_int(module, "ttg.num-warps", 4)


def threads_per_warp(module: ModuleOp) -> int:
    return _module_int(module, "ttg.threads-per-warp", 32)


def num_ctas(module: ModuleOp) -> int:
    return _module_int(module, "ttg.num-ctas", 1)


def target(module: ModuleOp) -> str:
    attr = module.attributes.get("ttg.target")
    return attr.data if isinstance(attr, StringAttr) else "cuda:90"


# ------------------------------------------------------------------------------------- ops


@op_definition
class ConvertLayoutOp(IRDLOperation):
    """Same values, another layout: `ttg.convert_layout %x : tensor<..., #a> -> tensor<..., #b>`.
    The lowering moves data in registers, across lanes or through shared memory as needed."""

    name = "ttg.convert_layout"
    src = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$src attr-dict `:` type($src) `->` type($result)"

    def __init__(self, src: SSAValue, result_type: TensorType):
        super().__init__(operands=[src], result_types=[result_type])


class _AllocEffects(MemoryAllocEffect):
    """Allocates; with an initial value also writes it."""

    @classmethod
    def get_effects(cls, op):
        effects = set(super().get_effects(op))
        if op.operands:
            effects |= MemoryWriteEffect.get_effects(op)
        return effects


@op_definition
class LocalAllocOp(IRDLOperation):
    """A shared-memory buffer, optionally initialised from a tensor:
    `ttg.local_alloc %x : (tensor<64x64xf16, #blocked>) -> !ttg.memdesc<64x64xf16, #shared, #smem>`.
    Without `src` the buffer is mutable and filled by local_store."""

    name = "ttg.local_alloc"
    src = opt_operand_def(TensorType)
    result = result_def(MemDescType)
    traits = traits_def(_AllocEffects())
    assembly_format = "($src^)? attr-dict `:` functional-type(operands, results)"

    def __init__(self, result_type: MemDescType, src: SSAValue | None = None):
        super().__init__(operands=[[src] if src is not None else []], result_types=[result_type])


@op_definition
class LocalLoadOp(IRDLOperation):
    """Shared memory → registers in the result's layout."""

    name = "ttg.local_load"
    src = operand_def(MemDescType)
    result = result_def(TensorType)
    traits = traits_def(MemoryReadEffect())
    assembly_format = "$src attr-dict `:` type($src) `->` type($result)"

    def __init__(self, src: SSAValue, result_type: TensorType):
        super().__init__(operands=[src], result_types=[result_type])


@op_definition
class LocalStoreOp(IRDLOperation):
    """Registers → a mutable shared-memory buffer."""

    name = "ttg.local_store"
    src = operand_def(TensorType)
    dst = operand_def(MemDescType)
    traits = traits_def(MemoryWriteEffect())
    assembly_format = "$src `,` $dst attr-dict `:` type($src) `->` type($dst)"

    def __init__(self, src: SSAValue, dst: SSAValue):
        super().__init__(operands=[src, dst])


@op_definition
class LocalDeallocOp(IRDLOperation):
    """Ends a buffer's lifetime (the allocator may reuse its bytes after this point)."""

    name = "ttg.local_dealloc"
    src = operand_def(MemDescType)
    traits = traits_def(MemoryFreeEffect())
    assembly_format = "$src attr-dict `:` type($src)"

    def __init__(self, src: SSAValue):
        super().__init__(operands=[src])



# ------------------------------------------------------------------ asynchronous copies


@irdl_attr_definition
class AsyncTokenType(ParametrizedAttribute, TypeAttribute):
    """`!ttg.async.token`: names a group of asynchronous copies, so that waits and the ops
    reading their buffers can be seen to depend on them."""

    name = "ttg.async.token"


@op_definition
class MemDescIndexOp(IRDLOperation):
    """One buffer of a ring: `ttg.memdesc_index %ring[%i] : !ttg.memdesc<3x64x64xf16, ...> ->
    !ttg.memdesc<64x64xf16, ...>`. The software pipeliner allocates `num_stages` copies of a
    tile as one buffer with a leading dim and picks the copy an iteration uses at run time."""

    name = "ttg.memdesc_index"
    src = operand_def(MemDescType)
    index = operand_def(i32)
    result = result_def(MemDescType)
    traits = traits_def(Pure())
    assembly_format = "$src `[` $index `]` attr-dict `:` type($src) `->` type($result)"

    def __init__(self, src: SSAValue, index: SSAValue):
        t = src.type
        view = MemDescType(t.shape[1:], t.element_type, t.encoding, t.memory_space, t.mutable)
        super().__init__(operands=[src, index], result_types=[view])


@op_definition
class AsyncCopyGlobalToLocalOp(IRDLOperation):
    """Global memory → a shared buffer without passing through registers (cp.async):
    `%t = ttg.async_copy_global_to_local %ptrs, %buf mask %m : tensor<64x64x!tt.ptr<f16>,
    #blocked> -> !ttg.memdesc<64x64xf16, ...>`. Masked-off elements are filled with zeros;
    the data is there only after an async_wait that covers the copy's commit group."""

    name = "ttg.async_copy_global_to_local"
    src = operand_def(TensorType)
    result = operand_def(MemDescType)
    mask = opt_operand_def(TensorType)
    token = result_def(AsyncTokenType)
    irdl_options = (AttrSizedOperandSegments(),)
    traits = traits_def(MemoryWriteEffect())
    assembly_format = (
        "$src `,` $result (`mask` $mask^ `:` type($mask))? attr-dict `:` type($src) `->` type($result)"
    )

    def __init__(self, src: SSAValue, dst: SSAValue, mask: SSAValue | None = None):
        super().__init__(
            operands=[src, dst, [mask] if mask is not None else []],
            result_types=[AsyncTokenType()],
        )


@op_definition
class AsyncCommitGroupOp(IRDLOperation):
    """Closes the group of asynchronous copies this thread issued since the last commit
    (cp.async.commit_group); waits count groups."""

    name = "ttg.async_commit_group"
    tokens = var_operand_def(AsyncTokenType)
    result = result_def(AsyncTokenType)
    traits = traits_def(MemoryWriteEffect())
    assembly_format = "$tokens attr-dict"

    def __init__(self, tokens: Sequence[SSAValue] = ()):
        super().__init__(operands=[list(tokens)], result_types=[AsyncTokenType()])


@op_definition
class AsyncWaitOp(IRDLOperation):
    """Waits until at most `num` of the committed copy groups are still in flight, then makes
    the finished copies visible to every thread of the program (cp.async.wait_group + a
    barrier)."""

    name = "ttg.async_wait"
    tokens = var_operand_def(AsyncTokenType)
    num = prop_def(IntegerAttr)
    result = result_def(AsyncTokenType)
    traits = traits_def(MemoryWriteEffect())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$tokens attr-dict"

    def __init__(self, num: int, tokens: Sequence[SSAValue] = ()):
        super().__init__(
            operands=[list(tokens)],
            result_types=[AsyncTokenType()],
            properties={"num": IntegerAttr(num, i32)},
        )

    @property
    def pending(self) -> int:
        return self.num.value.data


@op_definition
class GlobalScratchAllocOp(IRDLOperation):
    """`ttg.global_scratch_alloc {alignment = 128 : i32, nbytes = 128 : i32, offset = 0 : i32}
    : !tt.ptr<i8>`: `nbytes` of global memory of this program's own, `offset` bytes into the
    per-program region the launch provides (the module's `ttg.global_scratch_memory_size`
    bytes per program, one region per program of the grid)."""

    name = "ttg.global_scratch_alloc"
    nbytes = prop_def(IntegerAttr)
    alignment = prop_def(IntegerAttr)
    offset = prop_def(IntegerAttr)
    result = result_def()
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "attr-dict `:` type($result)"

    def __init__(self, result_type: Attribute, nbytes: int, alignment: int, offset: int):
        props = {"nbytes": IntegerAttr(nbytes, i32), "alignment": IntegerAttr(alignment, i32),
                 "offset": IntegerAttr(offset, i32)}  # fmt: skip
        super().__init__(result_types=[result_type], properties=props)


SCRATCH_SIZE_ATTR = "ttg.global_scratch_memory_size"


def memdesc_root(value: SSAValue) -> SSAValue:
    """The buffer a memdesc value views: through ttg.memdesc_index to the ring's local_alloc."""
    while isinstance(value.owner, MemDescIndexOp):
        value = value.owner.src
    return value


TTG = Dialect(
    "ttg",
    [
        ConvertLayoutOp,
        LocalAllocOp,
        LocalLoadOp,
        LocalStoreOp,
        LocalDeallocOp,
        MemDescIndexOp,
        AsyncCopyGlobalToLocalOp,
        AsyncCommitGroupOp,
        AsyncWaitOp,
        GlobalScratchAllocOp,
    ],
    [
        BlockedEncodingAttr,
        SliceEncodingAttr,
        NvidiaMmaEncodingAttr,
        DotOperandEncodingAttr,
        SwizzledSharedEncodingAttr,
        NVMMASharedEncodingAttr,
        SharedMemorySpaceAttr,
        MemDescType,
        AsyncTokenType,
    ],
)
