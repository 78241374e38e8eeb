"""The `tt` dialect: Triton's block-level ops and the pointer type, declared with xDSL IRDL.

Op names and textual forms mirror Triton's TritonOps.td so that IR read here reads like the IR
Triton prints. Element-wise arithmetic and math come from xDSL's `arith` and `math` dialects and
control flow from `scf`; only what those lack lives here.

Values are scalars (builtin integer/float types, `!tt.ptr<T>`) or ranked tensors of them
(`tensor<128x64xf32>`; a tensor of pointers is `tensor<128x!tt.ptr<f32>>`). Integers are
signless as in MLIR: signedness lives in the ops (`arith.divsi` vs `arith.divui`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar
from xdsl.dialects.utils import parse_func_op_like, print_func_op_like
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    FunctionType,
    BoolAttr,
    DenseArrayBase,
    IntegerAttr,
    IntegerType,
    StringAttr,
    TensorType,
    i1,
    i32,
)
from xdsl.ir import (
    Attribute,
    Dialect,
    ParametrizedAttribute,
    Region,
    SSAValue,
    TypeAttribute,
)
from xdsl.irdl import (
    AnyAttr,
    VarConstraint,
    AttrSizedOperandSegments,
    ParsePropInAttrDict,
    IRDLOperation,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.traits import (
    IsolatedFromAbove,
    SymbolOpInterface,
    IsTerminator,
    MemoryEffect,
    MemoryEffectKind,
    EffectInstance,
    Pure,
)

from kernellab.ir.op_families import BinaryOp, UnaryOp, define_op


# ----------------------------------------------------------------------------------- types


@irdl_attr_definition
class PointerType(ParametrizedAttribute, TypeAttribute):
    """`!tt.ptr<f32>`: a global-memory pointer to one element type (address space 1)."""

    name = "tt.ptr"

    pointee: Attribute
    address_space: IntegerAttr

    def __init__(self, pointee: Attribute, address_space: int = 1):
        super().__init__(pointee, IntegerAttr(address_space, i32))

    def print_parameters(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            printer.print_attribute(self.pointee)
            if self.address_space.value.data != 1:
                printer.print_string(f", {self.address_space.value.data}")

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        with parser.in_angle_brackets():
            pointee = parser.parse_type()
            space = 1
            if parser.parse_optional_punctuation(","):
                space = parser.parse_integer()
        return (pointee, IntegerAttr(space, i32))


def element_type(t: Attribute) -> Attribute:
    """The scalar type of a scalar or tensor type."""
    return t.element_type if isinstance(t, TensorType) else t


def shape_of(t: Attribute) -> tuple[int, ...]:
    """The static shape of a tensor type; () for a scalar."""
    return tuple(t.get_shape()) if isinstance(t, TensorType) else ()


def with_element_type(t: Attribute, elem: Attribute) -> Attribute:
    """`t` with its scalar type replaced, keeping the shape (and encoding, if any)."""
    if isinstance(t, TensorType):
        return TensorType(elem, t.get_shape(), t.encoding)
    return elem


def i1_like(t: Attribute) -> Attribute:
    return with_element_type(t, i1)


# ----------------------------------------------------------------------------- memory traits


class _ReadsMemory(MemoryEffect):
    @classmethod
    def get_effects(cls, op):
        return {EffectInstance(MemoryEffectKind.READ)}


class _WritesMemory(MemoryEffect):
    @classmethod
    def get_effects(cls, op):
        return {EffectInstance(MemoryEffectKind.WRITE)}


class _ReadsAndWritesMemory(MemoryEffect):
    @classmethod
    def get_effects(cls, op):
        return {EffectInstance(MemoryEffectKind.READ), EffectInstance(MemoryEffectKind.WRITE)}


# ------------------------------------------------------------------------------ functions


@irdl_op_definition
class FuncOp(IRDLOperation):
    """`tt.func public @kernel(%x_ptr: !tt.ptr<f32> {tt.divisibility = 16 : i32}, ...)`."""

    name = "tt.func"

    body = region_def()
    sym_name = prop_def(StringAttr)
    function_type = prop_def(FunctionType)
    sym_visibility = opt_prop_def(StringAttr)
    arg_attrs = opt_prop_def(ArrayAttr[DictionaryAttr])
    res_attrs = opt_prop_def(ArrayAttr[DictionaryAttr])

    traits = traits_def(IsolatedFromAbove(), SymbolOpInterface())

    def __init__(
        self,
        name: str,
        function_type: FunctionType | tuple[Sequence[Attribute], Sequence[Attribute]],
        region: Region,
        visibility: str | None = None,
        *,
        arg_attrs: ArrayAttr[DictionaryAttr] | None = None,
        res_attrs: ArrayAttr[DictionaryAttr] | None = None,
    ):
        if isinstance(function_type, tuple):
            function_type = FunctionType.from_lists(*function_type)
        super().__init__(
            properties={
                "sym_name": StringAttr(name),
                "function_type": function_type,
                "sym_visibility": StringAttr(visibility) if visibility else None,
                "arg_attrs": arg_attrs,
                "res_attrs": res_attrs,
            },
            regions=[region],
        )

    @property
    def args(self):
        return self.body.block.args

    @property
    def is_private(self) -> bool:
        """A function only called from this module (a @jit helper), which inlining removes."""
        return self.sym_visibility is not None and self.sym_visibility.data == "private"

    @classmethod
    def parse(cls, parser):
        visibility = parser.parse_optional_visibility_keyword()
        name, inputs, outputs, region, extra, arg_attrs, res_attrs = parse_func_op_like(
            parser, reserved_attr_names=("sym_name", "function_type", "sym_visibility")
        )
        op = cls(
            name,
            (inputs, outputs),
            region,
            visibility.data if visibility else None,
            arg_attrs=arg_attrs,
            res_attrs=res_attrs,
        )
        if extra is not None:
            op.attributes |= extra.data
        return op

    def print(self, printer: Printer) -> None:
        if self.sym_visibility:
            printer.print_string(" " + self.sym_visibility.data)
        print_func_op_like(
            printer,
            self.sym_name,
            self.function_type,
            self.body,
            self.attributes,
            arg_attrs=self.arg_attrs,
            res_attrs=self.res_attrs,
            reserved_attr_names=("sym_name", "function_type", "sym_visibility", "arg_attrs"),
        )


@irdl_op_definition
class ReturnOp(IRDLOperation):
    name = "tt.return"
    arguments = var_operand_def()
    traits = traits_def(IsTerminator(), Pure())
    assembly_format = "attr-dict ($arguments^ `:` type($arguments))?"

    def __init__(self, *values: SSAValue):
        super().__init__(operands=[values])


@irdl_op_definition
class CallOp(IRDLOperation):
    """A call to another kernel function; the inliner removes it before any backend sees it."""

    name = "tt.call"
    arguments = var_operand_def()
    callee = prop_def(Attribute)
    res = var_result_def()
    assembly_format = "$callee `(` $arguments `)` attr-dict `:` functional-type($arguments, $res)"


# ---------------------------------------------------------------------- program and ranges


class _ProgramAxisOp(IRDLOperation):
    axis = prop_def(IntegerAttr)
    result = result_def(i32)
    traits = traits_def(Pure())

    def __init__(self, axis: int):
        super().__init__(properties={"axis": IntegerAttr(axis, i32)}, result_types=[i32])

    def print(self, printer: Printer) -> None:
        printer.print_string(" " + "xyz"[self.axis.value.data] + " : i32")

    @classmethod
    def parse(cls, parser):
        axis = "xyz".index(parser.parse_identifier())
        parser.parse_punctuation(":")
        parser.parse_type()
        return cls(axis)


GetProgramIdOp = define_op(_ProgramAxisOp, "GetProgramIdOp", "tt.get_program_id", __name__)
GetNumProgramsOp = define_op(_ProgramAxisOp, "GetNumProgramsOp", "tt.get_num_programs", __name__)


@irdl_op_definition
class MakeRangeOp(IRDLOperation):
    """`tt.make_range {end = 128 : i32, start = 0 : i32} : tensor<128xi32>`."""

    name = "tt.make_range"
    start = prop_def(IntegerAttr)
    end = prop_def(IntegerAttr)
    result = result_def(TensorType)
    irdl_options = (ParsePropInAttrDict(),)
    traits = traits_def(Pure())
    assembly_format = "attr-dict `:` type($result)"

    def __init__(self, start: int, end: int):
        super().__init__(
            properties={"end": IntegerAttr(end, i32), "start": IntegerAttr(start, i32)},  # printed in Triton's order
            result_types=[TensorType(i32, [end - start])],
        )


# ------------------------------------------------------------------------- shape changes


class _UnaryShapeOp(IRDLOperation):
    irdl_options = (ParsePropInAttrDict(),)
    src = operand_def()
    result = result_def()
    traits = traits_def(Pure())
    assembly_format = "$src attr-dict `:` type($src) `->` type($result)"

    def __init__(self, src: SSAValue, result_type: Attribute, properties=None):
        super().__init__(operands=[src], result_types=[result_type], properties=properties or {})


# splat: scalar → tensor with every element equal to it; broadcast: tensor with size-1 dims →
# same rank with those dims stretched
SplatOp = define_op(_UnaryShapeOp, "SplatOp", "tt.splat", __name__)
BroadcastOp = define_op(_UnaryShapeOp, "BroadcastOp", "tt.broadcast", __name__)


@irdl_op_definition
class ExpandDimsOp(_UnaryShapeOp):
    name = "tt.expand_dims"
    axis = prop_def(IntegerAttr)

    def __init__(self, src: SSAValue, axis: int, result_type: Attribute):
        super().__init__(src, result_type, {"axis": IntegerAttr(axis, i32)})


@irdl_op_definition
class ReshapeOp(_UnaryShapeOp):
    """Row-major reshape; `allow_reorder` lets the compiler permute elements (tl.view)."""

    name = "tt.reshape"
    allow_reorder = opt_prop_def(BoolAttr)

    def __init__(self, src: SSAValue, result_type: Attribute, allow_reorder: bool = False):
        props = {"allow_reorder": BoolAttr(True, i1)} if allow_reorder else {}
        super().__init__(src, result_type, props)


@irdl_op_definition
class TransOp(_UnaryShapeOp):
    """Permute dims: result dim i is source dim order[i]."""

    name = "tt.trans"
    order = prop_def(DenseArrayBase)

    def __init__(self, src: SSAValue, order: Sequence[int], result_type: Attribute):
        super().__init__(src, result_type, {"order": DenseArrayBase.from_list(i32, list(order))})


class _PairOp(IRDLOperation):
    """Two tensors of one type → one tensor of `result_type` (join, cat)."""

    T: ClassVar = VarConstraint("T", AnyAttr())
    lhs = operand_def(T)
    rhs = operand_def(T)
    result = result_def()
    traits = traits_def(Pure())
    assembly_format = "$lhs `,` $rhs attr-dict `:` type($lhs) `->` type($result)"

    def __init__(self, lhs: SSAValue, rhs: SSAValue, result_type: Attribute):
        super().__init__(operands=[lhs, rhs], result_types=[result_type])


# join: two tensors of the same shape → one with a new minor dim of size 2; cat: concatenate
# along dim 0 (Triton's tl.cat with can_reorder)
JoinOp = define_op(_PairOp, "JoinOp", "tt.join", __name__)
CatOp = define_op(_PairOp, "CatOp", "tt.cat", __name__)


@irdl_op_definition
class SplitOp(IRDLOperation):
    """Inverse of join: a tensor whose minor dim is 2 → its two halves."""

    name = "tt.split"
    src = operand_def()
    T: ClassVar = VarConstraint("T", AnyAttr())
    out_lhs = result_def(T)
    out_rhs = result_def(T)
    traits = traits_def(Pure())
    assembly_format = "$src attr-dict `:` type($src) `->` type($out_lhs)"

    def __init__(self, src: SSAValue, result_type: Attribute):
        super().__init__(operands=[src], result_types=[result_type, result_type])


@irdl_op_definition
class GatherOp(IRDLOperation):
    """result[..., i, ...] = src[..., indices[..., i, ...], ...] along `axis` (tl.gather):
    `indices` has src's rank and sizes except on `axis`; the result has its shape, src's
    element type."""

    name = "tt.gather"
    src = operand_def()
    indices = operand_def()
    result = result_def()
    axis = prop_def(IntegerAttr)
    irdl_options = (ParsePropInAttrDict(),)
    traits = traits_def(Pure())
    assembly_format = "$src `[` $indices `]` attr-dict `:` functional-type(operands, results)"

    def __init__(self, src: SSAValue, indices: SSAValue, axis: int, result_type: Attribute):
        super().__init__(
            operands=[src, indices],
            result_types=[result_type],
            properties={"axis": IntegerAttr(axis, i32)},
        )


# ------------------------------------------------------------------------------ pointers


@irdl_op_definition
class AddPtrOp(IRDLOperation):
    """Pointer (or tensor of pointers) + integer offset, in elements."""

    T: ClassVar = VarConstraint("T", AnyAttr())
    name = "tt.addptr"
    ptr = operand_def(T)
    offset = operand_def()
    result = result_def(T)
    traits = traits_def(Pure())
    assembly_format = "$ptr `,` $offset attr-dict `:` type($result) `,` type($offset)"

    def __init__(self, ptr: SSAValue, offset: SSAValue):
        super().__init__(operands=[ptr, offset], result_types=[ptr.type])


IntToPtrOp = define_op(_UnaryShapeOp, "IntToPtrOp", "tt.int_to_ptr", __name__)
PtrToIntOp = define_op(_UnaryShapeOp, "PtrToIntOp", "tt.ptr_to_int", __name__)
# reinterprets bits between types of equal width (tensor.to(..., bitcast=True))
BitcastOp = define_op(_UnaryShapeOp, "BitcastOp", "tt.bitcast", __name__)


@irdl_op_definition
class FpToFpOp(_UnaryShapeOp):
    """Float conversions involving fp8, with an explicit rounding mode when narrowing."""

    name = "tt.fp_to_fp"
    rounding = opt_prop_def(StringAttr)

    def __init__(self, src: SSAValue, result_type: Attribute, rounding: str | None = None):
        super().__init__(src, result_type, {"rounding": StringAttr(rounding)} if rounding else {})


# -------------------------------------------------------------------------------- memory


def pointee_like(ptr_type: Attribute) -> Attribute:
    """The value type loaded from a pointer (or tensor of pointers) type."""
    ptr = element_type(ptr_type)
    assert isinstance(ptr, PointerType), ptr
    return with_element_type(ptr_type, ptr.pointee)


class _PointerOpFormat:
    """Print/parse `op attrs... %ptr, %a, %b {attrs} : <ptr type>`; other types follow from it.

    Memory ops name only the pointer type, as Triton prints them: every other operand has
    the pointee type or is an i1 mask of the same shape.
    """

    KEYWORD_PROPS: ClassVar[tuple[str, ...]] = ()

    def print(self, printer: Printer) -> None:
        for name in self.KEYWORD_PROPS:
            printer.print_string(f" {getattr(self, name).data},")
        printer.print_string(" ")
        printer.print_list(self.operands, printer.print_operand)
        hidden = {*self.KEYWORD_PROPS, "operandSegmentSizes"}
        attrs = {**self.properties, **self.attributes}
        printer.print_op_attributes({k: v for k, v in attrs.items() if k not in hidden})
        printer.print_string(" : ")
        printer.print_attribute(self.operands[0].type)

    @classmethod
    def parse(cls, parser):
        keywords = {}
        for name in cls.KEYWORD_PROPS:
            keywords[name] = StringAttr(parser.parse_identifier())
            parser.parse_punctuation(",")
        unresolved = parser.parse_comma_separated_list(
            parser.Delimiter.NONE, parser.parse_unresolved_operand
        )
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        ptr_type = parser.parse_type()
        types = cls._operand_types(ptr_type, len(unresolved))
        operands = [parser.resolve_operand(u, t) for u, t in zip(unresolved, types)]
        props = {**keywords, **{k: v for k, v in attrs.items() if k != "operandSegmentSizes"}}
        op = cls(*cls._init_args(operands, ptr_type, props))
        op.properties.update(props)
        return op

    @staticmethod
    def _operand_types(ptr_type: Attribute, count: int) -> list[Attribute]:
        """Types of the parsed operands: (ptr, value, mask), as store and atomic_rmw take them."""
        return [ptr_type, pointee_like(ptr_type), i1_like(ptr_type)][:count]

    @staticmethod
    def _init_args(operands: list[SSAValue], ptr_type: Attribute, props: dict) -> tuple:
        """`__init__`'s positional arguments for parsed operands (it may take from `props`)."""
        return tuple(operands)


def _hint_props(cache: str, evict: str) -> dict[str, Attribute]:
    """Cache and eviction properties, present only when set (as Triton prints them)."""
    props: dict[str, Attribute] = {}
    if cache:
        props["cache"] = StringAttr(cache)
    if evict:
        props["evict"] = StringAttr(evict)
    return props


CACHE_MODIFIERS = ("", ".ca", ".cg", ".cs", ".wb", ".wt", ".cv")
EVICTION_POLICIES = ("", "evict_first", "evict_last", "evict_normal")


@irdl_op_definition
class LoadOp(_PointerOpFormat, IRDLOperation):
    """Masked gather: lanes where `mask` is false read `other` (or an undefined value)."""

    name = "tt.load"
    ptr = operand_def()
    mask = opt_operand_def()
    other = opt_operand_def()
    result = result_def()
    cache = opt_prop_def(StringAttr)
    evict = opt_prop_def(StringAttr)
    is_volatile = opt_prop_def(BoolAttr)
    irdl_options = (AttrSizedOperandSegments(),)
    traits = traits_def(_ReadsMemory())

    @staticmethod
    def _operand_types(ptr_type, count):
        return [ptr_type, i1_like(ptr_type), pointee_like(ptr_type)][:count]

    @staticmethod
    def _init_args(operands, ptr_type, props):
        return (operands[0], pointee_like(ptr_type), *operands[1:])

    def __init__(
        self,
        ptr: SSAValue,
        result_type: Attribute,
        mask: SSAValue | None = None,
        other: SSAValue | None = None,
        cache: str = "",
        evict: str = "",
        is_volatile: bool = False,
    ):
        props = _hint_props(cache, evict)
        if is_volatile:
            props["is_volatile"] = BoolAttr(True, i1)
        super().__init__(
            operands=[ptr, [mask] if mask else [], [other] if other else []],
            result_types=[result_type],
            properties=props,
        )


@irdl_op_definition
class StoreOp(_PointerOpFormat, IRDLOperation):
    """Masked scatter: lanes where `mask` is false write nothing."""

    name = "tt.store"
    ptr = operand_def()
    value = operand_def()
    mask = opt_operand_def()
    cache = opt_prop_def(StringAttr)
    evict = opt_prop_def(StringAttr)
    traits = traits_def(_WritesMemory())

    def __init__(
        self,
        ptr: SSAValue,
        value: SSAValue,
        mask: SSAValue | None = None,
        cache: str = "",
        evict: str = "",
    ):
        super().__init__(
            operands=[ptr, value, [mask] if mask else []], properties=_hint_props(cache, evict)
        )


class _DescriptorFormat:
    """Print/parse `%base[%shape...] strides [%strides...] at [%offsets...] {attrs} : <ptr
    type>` (then `-> <tile type>` for a load, `, <tile type>` for a store's value first)."""

    def _print_parts(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.base)
        for keyword, values in (("", self.shape), (" strides ", self.strides), (" at ", self.offsets)):
            printer.print_string(f"{keyword}[")
            printer.print_list(values, printer.print_operand)
            printer.print_string("]")
        attrs = {**self.properties, **self.attributes}
        printer.print_op_attributes({k: v for k, v in attrs.items() if k != "operandSegmentSizes"})

    @staticmethod
    def _parse_parts(parser):
        base = parser.parse_unresolved_operand()
        square = parser.Delimiter.SQUARE
        shape = parser.parse_comma_separated_list(square, parser.parse_unresolved_operand)
        parser.parse_keyword("strides")
        strides = parser.parse_comma_separated_list(square, parser.parse_unresolved_operand)
        parser.parse_keyword("at")
        offsets = parser.parse_comma_separated_list(square, parser.parse_unresolved_operand)
        attrs = parser.parse_optional_attr_dict()
        return base, shape, strides, offsets, attrs

    @staticmethod
    def _resolve(parser, base, shape, strides, offsets, ptr_type):
        i64 = IntegerType(64)
        return (
            parser.resolve_operand(base, ptr_type),
            [parser.resolve_operand(v, i64) for v in shape],
            [parser.resolve_operand(v, i64) for v in strides],
            [parser.resolve_operand(v, i32) for v in offsets],
        )


def _descriptor_props(padding: str, host: str) -> dict[str, Attribute]:
    props: dict[str, Attribute] = {"padding": StringAttr(padding)}
    if host:
        props["host"] = StringAttr(host)
    return props


@irdl_op_definition
class DescriptorLoadOp(_DescriptorFormat, IRDLOperation):
    """A tile of a tensor descriptor: the tensor at `base` (i64 `shape` and `strides` in
    elements, one per dim) read at i32 `offsets`; elements outside [0, shape) read `padding`
    ("zero" or "nan"). `host` names the kernel parameter when the descriptor is a host
    `TensorDescriptor` argument (whose tensor map the launcher can encode). Kept as one op so
    that a target with a copy engine (Hopper's TMA) can take it whole; every other target
    rewrites it into masked pointer loads (passes/lower_descriptors.py)."""

    name = "tt.descriptor_load"
    base = operand_def()
    shape = var_operand_def()
    strides = var_operand_def()
    offsets = var_operand_def()
    result = result_def()
    padding = prop_def(StringAttr)
    host = opt_prop_def(StringAttr)
    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    traits = traits_def(_ReadsMemory())

    def __init__(self, base, shape, strides, offsets, result_type, padding="zero", host=""):
        super().__init__(
            operands=[base, list(shape), list(strides), list(offsets)],
            result_types=[result_type],
            properties=_descriptor_props(padding, host),
        )

    def print(self, printer: Printer) -> None:
        self._print_parts(printer)
        printer.print_string(" : ")
        printer.print_attribute(self.base.type)
        printer.print_string(" -> ")
        printer.print_attribute(self.result.type)

    @classmethod
    def parse(cls, parser):
        base, shape, strides, offsets, attrs = cls._parse_parts(parser)
        parser.parse_punctuation(":")
        ptr_type = parser.parse_type()
        parser.parse_punctuation("->")
        result_type = parser.parse_type()
        base, shape, strides, offsets = cls._resolve(parser, base, shape, strides, offsets, ptr_type)
        host = attrs.get("host")
        return cls(base, shape, strides, offsets, result_type, attrs["padding"].data,
                   host.data if host else "")  # fmt: skip


@irdl_op_definition
class DescriptorStoreOp(_DescriptorFormat, IRDLOperation):
    """Writes `value` (a tile of the descriptor's block shape) at `offsets`; elements outside
    the tensor are not written. Operands as `tt.descriptor_load`'s."""

    name = "tt.descriptor_store"
    base = operand_def()
    shape = var_operand_def()
    strides = var_operand_def()
    offsets = var_operand_def()
    value = operand_def()
    padding = prop_def(StringAttr)
    host = opt_prop_def(StringAttr)
    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    traits = traits_def(_WritesMemory())

    def __init__(self, base, shape, strides, offsets, value, host=""):
        super().__init__(
            operands=[base, list(shape), list(strides), list(offsets), value],
            properties=_descriptor_props("zero", host),
        )

    def print(self, printer: Printer) -> None:
        self._print_parts(printer)
        printer.print_string(", ")
        printer.print_operand(self.value)
        printer.print_string(" : ")
        printer.print_attribute(self.base.type)
        printer.print_string(", ")
        printer.print_attribute(self.value.type)

    @classmethod
    def parse(cls, parser):
        base, shape, strides, offsets, attrs = cls._parse_parts(parser)
        parser.parse_punctuation(",")
        value = parser.parse_unresolved_operand()
        parser.parse_punctuation(":")
        ptr_type = parser.parse_type()
        parser.parse_punctuation(",")
        value_type = parser.parse_type()
        base, shape, strides, offsets = cls._resolve(parser, base, shape, strides, offsets, ptr_type)
        host = attrs.get("host")
        return cls(base, shape, strides, offsets, parser.resolve_operand(value, value_type),
                   host.data if host else "")  # fmt: skip


ATOMIC_RMW_OPS = ("and", "or", "xor", "add", "fadd", "max", "min", "umax", "umin", "exch")
MEMORY_SEMANTICS = ("relaxed", "acquire", "release", "acq_rel")
MEMORY_SCOPES = ("gpu", "cta", "sys")


@irdl_op_definition
class AtomicRMWOp(_PointerOpFormat, IRDLOperation):
    """Read-modify-write on each lane's address; returns the old values."""

    name = "tt.atomic_rmw"
    ptr = operand_def()
    val = operand_def()
    mask = opt_operand_def()
    result = result_def()
    atomic_rmw_op = prop_def(StringAttr)
    sem = prop_def(StringAttr)
    scope = prop_def(StringAttr)
    traits = traits_def(_ReadsAndWritesMemory())
    KEYWORD_PROPS: ClassVar[tuple[str, ...]] = ("atomic_rmw_op", "sem", "scope")

    @staticmethod
    def _init_args(operands, ptr_type, props):
        return (props.pop("atomic_rmw_op").data, *operands)

    def __init__(
        self,
        op: str,
        ptr: SSAValue,
        val: SSAValue,
        mask: SSAValue | None = None,
        sem: str = "acq_rel",
        scope: str = "gpu",
    ):
        super().__init__(
            operands=[ptr, val, [mask] if mask else []],
            result_types=[val.type],
            properties={
                "atomic_rmw_op": StringAttr(op),
                "sem": StringAttr(sem),
                "scope": StringAttr(scope),
            },
        )


@irdl_op_definition
class AtomicCASOp(_PointerOpFormat, IRDLOperation):
    """Compare-and-swap on each lane's address; returns the old values."""

    name = "tt.atomic_cas"
    ptr = operand_def()
    cmp = operand_def()
    val = operand_def()
    result = result_def()
    sem = prop_def(StringAttr)
    scope = prop_def(StringAttr)
    traits = traits_def(_ReadsAndWritesMemory())
    KEYWORD_PROPS: ClassVar[tuple[str, ...]] = ("sem", "scope")

    @staticmethod
    def _operand_types(ptr_type, count):
        return [ptr_type, pointee_like(ptr_type), pointee_like(ptr_type)]

    def __init__(
        self, ptr: SSAValue, cmp: SSAValue, val: SSAValue, sem: str = "acq_rel", scope: str = "gpu"
    ):
        super().__init__(
            operands=[ptr, cmp, val],
            result_types=[val.type],
            properties={"sem": StringAttr(sem), "scope": StringAttr(scope)},
        )


# ---------------------------------------------------------------------------- arithmetic


INPUT_PRECISIONS = ("tf32", "tf32x3", "ieee")


@irdl_op_definition
class DotOp(IRDLOperation):
    """d = a @ b + c on 2-D (or batched 3-D) tiles."""

    T: ClassVar = VarConstraint("T", AnyAttr())
    name = "tt.dot"
    a = operand_def()
    b = operand_def()
    c = operand_def(T)
    d = result_def(T)
    input_precision = prop_def(StringAttr)
    max_num_imprecise_acc = prop_def(IntegerAttr)
    irdl_options = (ParsePropInAttrDict(),)
    traits = traits_def(Pure())
    assembly_format = "$a `,` $b `,` $c attr-dict `:` type($a) `*` type($b) `->` type($d)"

    def __init__(
        self,
        a: SSAValue,
        b: SSAValue,
        c: SSAValue,
        input_precision: str = "ieee",
        max_num_imprecise_acc: int = 0,
    ):
        super().__init__(
            operands=[a, b, c],
            result_types=[c.type],
            properties={
                "input_precision": StringAttr(input_precision),
                "max_num_imprecise_acc": IntegerAttr(max_num_imprecise_acc, i32),
            },
        )


# the high half of the unsigned product (tl.umulhi); correctly rounded sqrt (tl.sqrt_rn, where
# math.sqrt may be approximate on the GPU) and division (tl.div_rn)
MulhiUIOp = define_op(BinaryOp, "MulhiUIOp", "tt.mulhiui", __name__)
PreciseSqrtOp = define_op(UnaryOp, "PreciseSqrtOp", "tt.precise_sqrt", __name__)
PreciseDivFOp = define_op(BinaryOp, "PreciseDivFOp", "tt.precise_divf", __name__)


@irdl_op_definition
class ClampFOp(IRDLOperation):
    """min(max(x, lo), hi) on floats; `propagateNan` = "all" keeps NaNs of x."""

    T: ClassVar = VarConstraint("T", AnyAttr())
    name = "tt.clampf"
    x = operand_def(T)
    min = operand_def(T)
    max = operand_def(T)
    result = result_def(T)
    propagateNan = prop_def(StringAttr)
    traits = traits_def(Pure())
    assembly_format = "$x `,` $min `,` $max `,` `propagateNan` `=` $propagateNan attr-dict `:` type($result)"

    def __init__(self, x: SSAValue, lo: SSAValue, hi: SSAValue, propagate_nan: str = "none"):
        super().__init__(
            operands=[x, lo, hi],
            result_types=[x.type],
            properties={"propagateNan": StringAttr(propagate_nan)},
        )



@irdl_op_definition
class ExternElementwiseOp(IRDLOperation):
    """`symbol` of the external library `libname` (NVIDIA libdevice's `__nv_asinf`) applied
    element by element: the backend declares the function and links the library's bitcode
    (the `extern_libs` option). Operands share the result's shape."""

    name = "tt.extern_elementwise"
    srcs = var_operand_def()
    result = result_def()
    libname = prop_def(StringAttr)
    symbol = prop_def(StringAttr)
    irdl_options = (ParsePropInAttrDict(),)
    traits = traits_def(Pure())
    assembly_format = "$srcs attr-dict `:` functional-type($srcs, $result)"

    def __init__(self, srcs: Sequence[SSAValue], result_type: Attribute, libname: str, symbol: str):
        super().__init__(
            operands=[list(srcs)],
            result_types=[result_type],
            properties={"libname": StringAttr(libname), "symbol": StringAttr(symbol)},
        )

# ------------------------------------------------------------------ reductions and scans


class _CombineAlongAxisOp(IRDLOperation):
    """N same-shaped tensors combined along `axis` by the region's combine function."""

    srcs = var_operand_def()
    result = var_result_def()
    axis = prop_def(IntegerAttr)
    combineOp = region_def("single_block")
    traits = traits_def(Pure())


@irdl_op_definition
class ReduceOp(_CombineAlongAxisOp):
    """Reduce along `axis` with a combine region of 2N args → N values."""

    name = "tt.reduce"

    def __init__(
        self, srcs: Sequence[SSAValue], axis: int, result_types: Sequence[Attribute], combine: Region
    ):
        super().__init__(
            operands=[srcs],
            result_types=[result_types],
            properties={"axis": IntegerAttr(axis, i32)},
            regions=[combine],
        )


class _CombineReturnOp(IRDLOperation):
    result = var_operand_def()
    traits = traits_def(IsTerminator(), Pure())
    assembly_format = "$result attr-dict `:` type($result)"

    def __init__(self, *values: SSAValue):
        super().__init__(operands=[values])


ReduceReturnOp = define_op(_CombineReturnOp, "ReduceReturnOp", "tt.reduce.return", __name__)


@irdl_op_definition
class ScanOp(_CombineAlongAxisOp):
    """Inclusive scan along `axis`; the result has the sources' types."""

    name = "tt.scan"
    reverse = prop_def(BoolAttr)

    def __init__(
        self,
        srcs: Sequence[SSAValue],
        axis: int,
        reverse: bool,
        combine: Region,
    ):
        super().__init__(
            operands=[srcs],
            result_types=[[s.type for s in srcs]],
            properties={"axis": IntegerAttr(axis, i32), "reverse": BoolAttr(reverse, i1)},
            regions=[combine],
        )


ScanReturnOp = define_op(_CombineReturnOp, "ScanReturnOp", "tt.scan.return", __name__)


# ---------------------------------------------------------------------------- debugging


@irdl_op_definition
class PrintOp(IRDLOperation):
    """tl.device_print: prints prefix and each operand, per program and element."""

    name = "tt.print"
    args = var_operand_def()
    prefix = prop_def(StringAttr)
    hex = prop_def(BoolAttr)
    irdl_options = (ParsePropInAttrDict(),)
    traits = traits_def(_WritesMemory())
    assembly_format = "$prefix attr-dict (`:` $args^ `:` type($args))?"

    def __init__(self, prefix: str, args: Sequence[SSAValue], hex: bool = False):
        super().__init__(
            operands=[args],
            properties={"prefix": StringAttr(prefix), "hex": BoolAttr(hex, i1)},
        )


@irdl_op_definition
class AssertOp(IRDLOperation):
    """tl.device_assert: fails the launch where `condition` is false."""

    name = "tt.assert"
    condition = operand_def()
    message = prop_def(StringAttr)
    irdl_options = (ParsePropInAttrDict(),)
    traits = traits_def(_WritesMemory())
    assembly_format = "$condition `,` $message attr-dict `:` type($condition)"

    def __init__(self, condition: SSAValue, message: str):
        super().__init__(operands=[condition], properties={"message": StringAttr(message)})


# ------------------------------------------------------------ hints and the GPU's own state


@irdl_op_definition
class AssumeOp(IRDLOperation):
    """tl.assume: the program promises `condition` holds (the optimizer may rely on it; the
    interpreter checks it)."""

    name = "tt.assume"
    condition = operand_def()
    traits = traits_def(_WritesMemory())  # kept where it is: what follows relies on it
    assembly_format = "$condition attr-dict `:` type($condition)"

    def __init__(self, condition: SSAValue):
        super().__init__(operands=[condition])


class _ReadRegisterOp(IRDLOperation):
    """A read of a GPU register that changes under the program (so never merged or hoisted)."""

    result = result_def()
    assembly_format = "attr-dict `:` type($result)"

    def __init__(self, result_type: Attribute):
        super().__init__(result_types=[result_type])


GlobalTimerOp = define_op(_ReadRegisterOp, "GlobalTimerOp", "tt.globaltimer", __name__)
SmIdOp = define_op(_ReadRegisterOp, "SmIdOp", "tt.smid", __name__)


class _GridDependencyOp(IRDLOperation):
    """Programmatic dependent launch (sm_90): wait for the grid this one depends on, or let
    the next grid start."""

    traits = traits_def(_WritesMemory())
    assembly_format = "attr-dict"

    def __init__(self):
        super().__init__()


GridDependencyWaitOp = define_op(_GridDependencyOp, "GridDependencyWaitOp", "tt.gdc_wait", __name__)
LaunchDependentsOp = define_op(
    _GridDependencyOp, "LaunchDependentsOp", "tt.gdc_launch_dependents", __name__
)


def entry_function(module) -> FuncOp:
    """The module's public tt.func: the kernel a backend compiles and a launcher calls.

    Private functions are @jit helpers that inlining removes; exactly one public one is the
    entry point."""
    public = [
        op for op in module.walk()
        if isinstance(op, FuncOp) and (op.sym_visibility is None or op.sym_visibility.data == "public")
    ]  # fmt: skip
    if len(public) != 1:
        names = ", ".join(f.sym_name.data for f in public) or "none"
        raise ValueError(f"expected exactly one public tt.func in the module, found: {names}")
    return public[0]


TT = Dialect(
    "tt",
    [
        FuncOp,
        ReturnOp,
        CallOp,
        GetProgramIdOp,
        GetNumProgramsOp,
        MakeRangeOp,
        SplatOp,
        BroadcastOp,
        ExpandDimsOp,
        ReshapeOp,
        TransOp,
        JoinOp,
        SplitOp,
        CatOp,
        GatherOp,
        AddPtrOp,
        IntToPtrOp,
        PtrToIntOp,
        BitcastOp,
        FpToFpOp,
        LoadOp,
        StoreOp,
        DescriptorLoadOp,
        DescriptorStoreOp,
        AtomicRMWOp,
        AtomicCASOp,
        DotOp,
        MulhiUIOp,
        PreciseSqrtOp,
        PreciseDivFOp,
        ClampFOp,
        ExternElementwiseOp,
        ReduceOp,
        ReduceReturnOp,
        ScanOp,
        ScanReturnOp,
        PrintOp,
        AssertOp,
        AssumeOp,
        GlobalTimerOp,
        SmIdOp,
        GridDependencyWaitOp,
        LaunchDependentsOp,
    ],
    [PointerType],
)
