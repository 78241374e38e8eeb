"""Triton's semantics for every builtin and operator: type promotion, broadcasting, checks, IR.

The AST visitor hands each operator and `tl` call to a `Semantic` method with the user's
arguments: `tl.tensor`s (runtime values) or Python values/constexprs (compile-time). The method
decides the result type exactly as Triton does, emits the ops through the `IRBuilder`, and
returns a `tl.tensor`. User mistakes raise `SemanticError` with one sentence that names the
shapes and dtypes involved and says what to change; the visitor adds the source location.
"""

from __future__ import annotations

import builtins
import numbers
from collections.abc import Callable, Sequence

import numpy as np
from xdsl.dialects import math
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseIntOrFPElementsAttr,
    DictionaryAttr,
    IntegerAttr,
    TensorType,
    i32,
)
from xdsl.ir import Block, BlockArgument, OpResult, Region

from kernellab.frontend.builder import IRBuilder
from kernellab.frontend.errors import SemanticError
from kernellab.frontend.types import block_of, to_ir_type
from kernellab.ir import arith, tt
from kernellab.language import core as tl
from kernellab.language.builtins import TRITON_MAX_TENSOR_NUMEL, PropagateNan

_KIND_BOOL, _KIND_INT, _KIND_FLOAT = 0, 1, 2
_LOAD_CACHE = ("", ".ca", ".cg", ".cv")
_STORE_CACHE = ("", ".wb", ".cg", ".cs", ".wt")
_EVICTION = ("", "evict_first", "evict_last")
_SEMANTICS = ("acq_rel", "acquire", "release", "relaxed")
_SCOPES = ("gpu", "cta", "sys")
_DOT_DTYPES = ("int8", "uint8", "fp16", "bf16", "fp32", "fp64")
_MIN_DOT_SIZE = 16


# ------------------------------------------------------------------------------ helpers


def _unwrap(x):
    return x.value if isinstance(x, tl.constexpr) else x


def _is_python_number(x) -> bool:
    x = _unwrap(x)
    return isinstance(x, numbers.Number) and not isinstance(x, tl.tensor)


def _python_value(x):
    """A Python int/float/bool from a constexpr, numpy scalar or Python number."""
    x = _unwrap(x)
    return x.item() if isinstance(x, np.generic) else x


def _kind(ty: tl.dtype) -> int:
    if ty.is_bool():
        return _KIND_BOOL
    return _KIND_INT if ty.is_int() else _KIND_FLOAT


def _int_range(ty: tl.dtype) -> tuple[int, int]:
    bits = ty.primitive_bitwidth
    if ty.is_int_signed():
        return -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
    return 0, 2**bits - 1


def _show(x) -> str:
    """How an operand appears in messages: `fp32[128, 64]`, `int32` (a scalar), `3.0`."""
    if isinstance(x, tl.tensor):
        x = x.type
    if isinstance(x, tl.block_type):
        return f"{x.element_ty}[{', '.join(str(s) for s in x.shape)}]"
    if isinstance(x, tl.dtype):
        return str(x)
    return repr(_unwrap(x))


def _is_power_of_two(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def _int_list(values, what: str) -> list[int]:
    """A tuple/list (or varargs holding one tuple) of compile-time ints."""
    values = _unwrap(values)
    if (
        isinstance(values, (tuple, list))
        and len(values) == 1
        and isinstance(_unwrap(values[0]), (tuple, list))
    ):
        values = _unwrap(values[0])
    if not isinstance(values, (tuple, list)):
        values = [values]
    out = []
    for v in values:
        v = _python_value(v)
        if isinstance(v, bool) or not isinstance(v, int):
            raise SemanticError(
                f"{what} must be compile-time ints, got {_show(v)}; "
                "make the value a tl.constexpr parameter or a literal"
            )
        out.append(v)
    return out


def _block_shape(shape, what: str) -> list[int]:
    """Validate a block shape as Triton does: constexpr ints, each a power of two."""
    dims = _int_list(shape, what)
    numel = 1
    for d in dims:
        if not _is_power_of_two(d):
            raise SemanticError(
                f"{what} {tuple(dims)} has dimension {d}, which is not a power of 2; round it up "
                "(e.g. triton.next_power_of_2) and mask"
            )
        numel *= d
    if numel > TRITON_MAX_TENSOR_NUMEL:
        raise SemanticError(
            f"{what} {tuple(dims)} has {numel} elements, more than the limit of "
            f"{TRITON_MAX_TENSOR_NUMEL}; use smaller blocks"
        )
    return dims


def _broadcast_shapes(a: Sequence[int], b: Sequence[int]) -> tuple[int, ...]:
    """NumPy broadcasting: align right, size-1 dims stretch; anything else is an error."""
    a, b = tuple(a), tuple(b)
    rank = builtins.max(len(a), len(b))
    pa, pb = (1,) * (rank - len(a)) + a, (1,) * (rank - len(b)) + b
    out = []
    for i, (x, y) in enumerate(zip(pa, pb)):
        if x != y and x != 1 and y != 1:
            raise SemanticError(
                f"shapes {a} and {b} cannot be broadcast together: dimension {i} is {x} in one and "
                f"{y} in the other; "
                "make them equal or 1 (e.g. index with [:, None] or [None, :])"
            )
        out.append(y if x == 1 else x)
    return tuple(out)


def _broadcasts_to(src: Sequence[int], dst: tuple[int, ...]) -> bool:
    try:
        return _broadcast_shapes(src, dst) == dst
    except SemanticError:
        return False


def _to_tensor_type(value) -> tl.dtype:
    """Triton's type of a Python number: bool → int1, int → int32/uint32/int64/uint64,
    float → fp32 (fp64 if its magnitude needs it)."""
    if isinstance(value, bool):
        return tl.int1
    if isinstance(value, int):
        for ty, lo, hi in (
            (tl.int32, -(2**31), 2**31),
            (tl.uint32, 2**31, 2**32),
            (tl.int64, -(2**63), 2**63),
            (tl.uint64, 2**63, 2**64),
        ):
            if lo <= value < hi:
                return ty
        raise SemanticError(f"the integer {value} does not fit in 64 bits; use a smaller constant")
    if isinstance(value, float):
        mag = abs(value)
        fits_fp32 = not np.isfinite(value) or mag == 0.0 or 2**-126 <= mag <= (2 - 2**-23) * 2**127
        return tl.float32 if fits_fp32 else tl.float64
    raise SemanticError(
        f"{value!r} of Python type {type(value).__name__} cannot be a kernel value; use an int, "
        "float or bool"
    )


def _propagate_nan(value) -> str:
    value = _unwrap(value)
    if isinstance(value, PropagateNan):
        return value.name.lower()
    if value in (None, False, 0):
        return "none"
    if value in ("none", "all"):
        return value
    raise SemanticError(
        f"propagate_nan must be tl.PropagateNan.NONE or tl.PropagateNan.ALL, got {value!r}"
    )


class Semantic:
    """Builds IR for builtins and operators with Triton's typing rules.

    `call_function(fn, args, kwargs)` comes from the visitor: it emits a call of a kernel
    function (combine functions of reduce/scan) into the builder's current block.
    """

    def __init__(self, builder: IRBuilder, call_function: Callable):
        self.builder = builder
        self.call_function = call_function

    # ------------------------------------------------------------------------ emission

    def _emit(self, op, ty: tl.dtype) -> tl.tensor:
        return self.builder.value(op, ty)

    def _like(self, x: tl.tensor, elem: tl.dtype) -> tl.dtype:
        """The type of `x` with element type `elem` (scalar stays scalar)."""
        return block_of(elem, x.shape)

    def _constant(self, value, dtype: tl.dtype, shape: Sequence[int] = ()) -> tl.tensor:
        """`arith.constant` of `value` as `dtype`, splat over `shape` (dense) if not empty."""
        ty = block_of(dtype, shape)
        if dtype.is_floating():
            v = float(value)
        elif dtype.is_bool():
            v = 1 if value else 0
        else:
            bits = dtype.primitive_bitwidth
            v = int(value) & (2**bits - 1)
            v = v - 2**bits if v >= 2 ** (bits - 1) else v
        return self._emit(arith.ConstantOp.of(v, to_ir_type(ty)), ty)

    def _python_constant(self, value, dtype: tl.dtype, shape: Sequence[int] = ()) -> tl.tensor:
        """A Python number converted to `dtype` as Triton does it: first to the number's own
        type (`to_tensor`), then cast; the conversion happens here, so one constant is emitted."""
        value = _python_value(value)
        src = _to_tensor_type(value)
        if src == tl.float32:
            value = float(np.float32(value))
        if dtype.is_bool():
            value = value != 0
        elif dtype.is_int() and isinstance(value, float):
            if not np.isfinite(value):
                raise SemanticError(f"{value} cannot be converted to {dtype}; use a finite value")
            value = int(value)
        return self._constant(value, dtype, shape)

    # ------------------------------------------------------------------ conversions

    def to_tensor(self, x) -> tl.tensor:
        """A kernel value for `x`: tensors pass through, Python numbers become constants."""
        if isinstance(x, tl.tensor):
            return x
        value = _python_value(x)
        if isinstance(value, numbers.Number):
            return self._constant(value, _to_tensor_type(value))
        raise SemanticError(
            f"{value!r} of Python type {type(value).__name__} cannot be used as a kernel value; "
            "pass a tensor, an int, a float or a bool"
        )

    def cast(self, input, dtype, fp_downcast_rounding=None, bitcast=False) -> tl.tensor:
        input = self.to_tensor(input)
        dtype = self._dtype_arg(dtype, "cast")
        if _unwrap(bitcast):
            return self._bitcast(input, dtype)
        return self._cast(input, dtype, _unwrap(fp_downcast_rounding))

    to = cast

    def _dtype_arg(self, dtype, what: str) -> tl.dtype:
        dtype = _unwrap(dtype)
        if not isinstance(dtype, tl.dtype):
            raise SemanticError(f"{what} needs a dtype such as tl.float32, got {dtype!r}")
        return dtype.scalar

    def _rewrap(self, x: tl.tensor, elem: tl.dtype) -> tl.tensor:
        """Same IR value, new language type (int32 ↔ uint32: the IR is signless)."""
        return tl.tensor(x.handle, self._like(x, elem))

    def _cast(self, x: tl.tensor, dst: tl.dtype, rounding: str | None = None) -> tl.tensor:
        src = x.dtype
        dst = dst.scalar
        if src == dst:
            return x
        dst_ty = self._like(x, dst)
        ir_dst = to_ir_type(dst_ty)
        if rounding not in (None, "rtne", "rtz"):
            raise SemanticError(f"fp_downcast_rounding must be 'rtne' or 'rtz', got {rounding!r}")
        narrowing = (
            src.is_floating()
            and dst.is_floating()
            and dst.primitive_bitwidth < src.primitive_bitwidth
        )
        if narrowing:
            custom = rounding not in (None, "rtne")
            rounding = rounding or "rtne"
        elif rounding is not None:
            raise SemanticError(
                "fp_downcast_rounding applies only to casts from a float to a narrower float, not "
                f"{src} to {dst}; drop it"
            )
        else:
            custom = False
        if (src.is_fp8() and dst.is_floating()) or (src.is_floating() and dst.is_fp8()) or custom:
            return self._emit(
                tt.FpToFpOp(x.handle, ir_dst, rounding if narrowing else None), dst_ty
            )
        if (src.is_fp16() or src.is_bf16()) and not dst.is_fp32():
            return self._cast(self._cast(x, tl.float32), dst)
        if src.is_floating() and dst.is_floating():
            op = arith.TruncfOp if narrowing else arith.ExtfOp
            return self._emit(op(x.handle, ir_dst), dst_ty)
        if src.is_int() and dst.is_int():
            if dst.is_bool():
                return self.not_equal(x, 0)
            if src.primitive_bitwidth == dst.primitive_bitwidth:
                return self._rewrap(x, dst)
            if src.primitive_bitwidth > dst.primitive_bitwidth:
                return self._emit(arith.TrunciOp(x.handle, ir_dst), dst_ty)
            signed = src.is_int_signed()
            return self._emit(
                (arith.ExtsiOp if signed else arith.ExtuiOp)(x.handle, ir_dst), dst_ty
            )
        if src.is_floating() and not src.is_fp8() and dst.is_int():
            if dst.is_bool():
                return self.not_equal(x, 0.0)
            op = arith.FptosiOp if dst.is_int_signed() else arith.FptouiOp
            return self._emit(op(x.handle, ir_dst), dst_ty)
        if src.is_int() and dst.is_floating() and not dst.is_fp8():
            op = arith.SitofpOp if src.is_int_signed() else arith.UitofpOp
            return self._emit(op(x.handle, ir_dst), dst_ty)
        if src.is_ptr() and dst.is_int():
            if dst.primitive_bitwidth == 64:
                return self._emit(tt.PtrToIntOp(x.handle, ir_dst), dst_ty)
            if dst.is_bool():
                return self.not_equal(self._cast(x, tl.int64), 0)
        if src.is_int() and dst.is_ptr():
            return self._emit(tt.IntToPtrOp(x.handle, ir_dst), dst_ty)
        if src.is_ptr() and dst.is_ptr():
            if to_ir_type(src) == to_ir_type(dst):
                return self._rewrap(x, dst)
            return self._emit(tt.BitcastOp(x.handle, ir_dst), dst_ty)
        hint = "; convert to a standard float type first" if src.is_fp8() or dst.is_fp8() else ""
        raise SemanticError(f"cannot convert {_show(x)} to {dst}{hint}")

    def _bitcast(self, x: tl.tensor, dst: tl.dtype) -> tl.tensor:
        src = x.dtype
        dst = dst.scalar
        if src == dst:
            return x
        if src.is_ptr() or dst.is_ptr():
            return self._cast(x, dst)
        if src.primitive_bitwidth != dst.primitive_bitwidth:
            raise SemanticError(
                f"cannot bitcast {_show(x)} to {dst}: {src.primitive_bitwidth} bits vs "
                f"{dst.primitive_bitwidth} bits; "
                "bitcast between types of equal width or drop bitcast=True to convert values"
            )
        if to_ir_type(src) == to_ir_type(dst):
            return self._rewrap(x, dst)
        dst_ty = self._like(x, dst)
        return self._emit(tt.BitcastOp(x.handle, to_ir_type(dst_ty)), dst_ty)

    # ------------------------------------------------------------------ broadcasting

    def _splat(self, x: tl.tensor, shape: Sequence[int]) -> tl.tensor:
        shape = tuple(shape)
        if not shape:
            return x
        ty = tl.block_type(x.dtype, shape)
        return self._emit(tt.SplatOp(x.handle, to_ir_type(ty)), ty)

    def _expand_dims(self, x: tl.tensor, axis: int) -> tl.tensor:
        shape = list(x.shape)
        shape.insert(axis, 1)
        if not x.type.is_block():
            return self._splat(x, shape)
        ty = tl.block_type(x.dtype, shape)
        return self._emit(tt.ExpandDimsOp(x.handle, axis, to_ir_type(ty)), ty)

    def _broadcast_to(self, x: tl.tensor, shape: Sequence[int]) -> tl.tensor:
        """`x` made to have exactly `shape`: splat a scalar, add leading dims, stretch 1s.
        The caller has checked that `shape` is a broadcast of `x.shape`."""
        shape = tuple(shape)
        if x.shape == shape:
            return x
        if not x.type.is_block():
            return self._splat(x, shape)
        while len(x.shape) < len(shape):
            x = self._expand_dims(x, 0)
        if x.shape != shape:
            ty = tl.block_type(x.dtype, shape)
            x = self._emit(tt.BroadcastOp(x.handle, to_ir_type(ty)), ty)
        return x

    def _broadcast_all(self, *xs: tl.tensor) -> list[tl.tensor]:
        shape: tuple[int, ...] = ()
        for x in xs:
            shape = _broadcast_shapes(shape, x.shape)
        return [self._broadcast_to(x, shape) for x in xs]

    def _fit_to(self, x: tl.tensor, shape: tuple[int, ...], role: str, target: str) -> tl.tensor:
        """Broadcast a mask, `other` or value to a pointer block's shape (it may not grow it)."""
        if not _broadcasts_to(x.shape, shape):
            raise SemanticError(
                f"{role} of shape {x.shape} does not broadcast to the {target} shape {shape}; "
                f"give it shape {shape} or one that broadcasts to it"
            )
        return self._broadcast_to(x, shape)

    def broadcast(self, input, other):
        input, other = self.to_tensor(input), self.to_tensor(other)
        return tuple(self._broadcast_all(input, other))

    def broadcast_to(self, input, *shape):
        input = self.to_tensor(input)
        shape = tuple(_block_shape(shape, "tl.broadcast_to shape"))
        if not _broadcasts_to(input.shape, shape):
            raise SemanticError(
                f"cannot broadcast {_show(input)} to shape {shape}: the target must keep every "
                "dimension that is not 1"
            )
        return self._broadcast_to(input, shape)

    # ----------------------------------------------------------- binary op typing

    def _computation_type(
        self, a: tl.dtype, a_py: bool, b: tl.dtype, b_py: bool, div_or_mod: bool, op: str
    ) -> tl.dtype:
        """Triton's implicit promotion of two element types (C rules, plus: a Python scalar
        of the same or lower kind than the tensor does not widen it)."""
        if a_py != b_py:
            scalar, tensor = (a, b) if a_py else (b, a)
            if _kind(scalar) <= _kind(tensor):
                if div_or_mod and (tensor.is_fp16() or tensor.is_bf16()):
                    return tl.float32
                return tensor
        if a.is_fp64() or b.is_fp64():
            return tl.float64
        if a.is_fp32() or b.is_fp32():
            return tl.float32
        if a.is_fp16() or b.is_fp16():
            return tl.float32 if div_or_mod else tl.float16
        if a.is_bf16() and b.is_bf16():
            return tl.float32 if div_or_mod else tl.bfloat16
        if a.is_bf16() or b.is_bf16():
            return tl.float32
        if a.is_fp8() and b.is_fp8():
            return a if a == b else tl.float16
        if not (a.is_int() and b.is_int()):
            raise SemanticError(
                f"`{op}` cannot combine {a} and {b}; convert one with .to(...) first"
            )
        if div_or_mod and a.is_int_signed() != b.is_int_signed():
            raise SemanticError(
                f"`{op}` on {a} and {b} mixes signed and unsigned integers, which rarely gives a "
                "useful answer; cast both to the same signedness"
            )
        return self._integer_promote(a, b)

    @staticmethod
    def _integer_promote(a: tl.dtype, b: tl.dtype) -> tl.dtype:
        """C's usual arithmetic conversions: the wider wins; on a tie of widths unsigned wins."""
        a_bits, b_bits = a.primitive_bitwidth, b.primitive_bitwidth
        if a.is_int_signed() == b.is_int_signed():
            return a if a_bits > b_bits else b
        if a.is_int_unsigned():
            return a if a_bits >= b_bits else b
        return b if b_bits >= a_bits else a

    def _binary_operands(
        self,
        lhs,
        rhs,
        op: str,
        allow_lhs_ptr=False,
        allow_rhs_ptr=False,
        arithmetic_check=True,
        div_or_mod=False,
    ) -> tuple[tl.tensor, tl.tensor]:
        """Promote and broadcast two operands as Triton's binary_op_type_checking does."""
        lhs_py, rhs_py = _is_python_number(lhs), _is_python_number(rhs)
        lhs_v = _python_value(lhs) if lhs_py else None
        rhs_v = _python_value(rhs) if rhs_py else None
        lhs_ty = _to_tensor_type(lhs_v) if lhs_py else self.to_tensor(lhs).dtype
        rhs_ty = _to_tensor_type(rhs_v) if rhs_py else self.to_tensor(rhs).dtype
        self._check_ptr(lhs_ty, rhs_ty, allow_lhs_ptr, op)
        self._check_ptr(rhs_ty, lhs_ty, allow_rhs_ptr, op)
        if arithmetic_check and not lhs_ty.is_ptr() and not rhs_ty.is_ptr():
            ret = self._computation_type(lhs_ty, lhs_py, rhs_ty, rhs_py, div_or_mod, op)
            for py, v in ((lhs_py, lhs_v), (rhs_py, rhs_v)):
                if py and ret.is_int():
                    lo, hi = _int_range(ret)
                    if ret.is_int_unsigned() and v < 0:
                        raise SemanticError(
                            f"`{op}` of an unsigned {ret} value and the negative constant {v} is "
                            "ambiguous; cast one of them explicitly"
                        )
                    if not lo <= v <= hi:
                        raise SemanticError(
                            f"the constant {v} does not fit in {ret}, the type of the other "
                            "operand; cast that operand to a wider type"
                        )
            lhs_ty = rhs_ty = ret
        lhs_t = None if lhs_py else self._cast(lhs, lhs_ty)
        rhs_t = None if rhs_py else self._cast(rhs, rhs_ty)
        # a Python operand becomes a constant of the computation type, already of the other's shape
        shape = next((t.shape for t in (lhs_t, rhs_t) if t is not None), ())
        if lhs_py:
            lhs_t = self._constant(lhs_v, lhs_ty, shape)
        if rhs_py:
            rhs_t = self._constant(rhs_v, rhs_ty, shape)
        lhs_t, rhs_t = self._broadcast_all(lhs_t, rhs_t)
        return lhs_t, rhs_t

    @staticmethod
    def _check_ptr(a: tl.dtype, b: tl.dtype, allow: bool, op: str) -> None:
        if not a.is_ptr():
            return
        if not allow:
            raise SemanticError(
                f"`{op}` is not defined for pointer {a} and {b}; pointers only support + and - "
                "with integer offsets"
            )
        if b.is_ptr() and a != b:
            raise SemanticError(f"`{op}` cannot combine pointers of different types {a} and {b}")
        if b.is_floating():
            raise SemanticError(
                f"`{op}` cannot offset pointer {a} by a float ({b}); offsets must be integers"
            )

    def _arith(self, name: str, a: tl.tensor, b: tl.tensor) -> tl.tensor:
        return self._emit(arith.BINARY_OPS[name](a.handle, b.handle), a.type)

    # -------------------------------------------------------------------- arithmetic

    def add(self, input, other) -> tl.tensor:
        input, other = self._binary_operands(input, other, "+", True, True)
        if input.dtype.is_ptr() and other.dtype.is_ptr():
            raise SemanticError(
                f"cannot add two pointers ({_show(input)} + {_show(other)}); add an integer offset "
                "to one pointer"
            )
        if other.dtype.is_ptr():
            input, other = other, input
        if input.dtype.is_ptr():
            return self._addptr(input, other)
        return self._arith("addf" if input.dtype.is_floating() else "addi", input, other)

    def _addptr(self, ptr: tl.tensor, offset: tl.tensor) -> tl.tensor:
        if offset.dtype.is_int_unsigned() and offset.dtype.primitive_bitwidth < 64:
            # addptr reads offsets as signed: widen unsigned ones so large values stay positive
            offset = self._cast(offset, tl.int64)
        return self._emit(tt.AddPtrOp(ptr.handle, offset.handle), ptr.type)

    def sub(self, input, other) -> tl.tensor:
        input, other = self._binary_operands(input, other, "-", True, False)
        if input.dtype.is_ptr():
            return self._addptr(input, self.minus(other))
        return self._arith("subf" if input.dtype.is_floating() else "subi", input, other)

    def mul(self, input, other) -> tl.tensor:
        input, other = self._binary_operands(input, other, "*")
        return self._arith("mulf" if input.dtype.is_floating() else "muli", input, other)

    def truediv(self, input, other) -> tl.tensor:
        """`/`: always a float division; ints are converted to fp32 first (as Triton)."""
        input, other = self._binary_operands(input, other, "/", div_or_mod=True)
        if input.dtype.is_int():  # both are: promotion made the types equal
            input, other = self._cast(input, tl.float32), self._cast(other, tl.float32)
        return self._arith("divf", input, other)

    def floordiv(self, input, other) -> tl.tensor:
        """`//` on ints: C division, truncating toward zero (arith.divsi / divui), as Triton."""
        input, other = self._binary_operands(input, other, "//", div_or_mod=True)
        if not input.dtype.is_int():
            raise SemanticError(
                f"`//` needs integer operands, got {_show(input)} and {_show(other)}; for floats "
                "use tl.floor(x / y)"
            )
        return self._arith("divsi" if input.dtype.is_int_signed() else "divui", input, other)

    def mod(self, input, other) -> tl.tensor:
        """`%`: C remainder (sign of the dividend: arith.remsi/remui/remf), as Triton."""
        input, other = self._binary_operands(input, other, "%", div_or_mod=True)
        if input.dtype.is_floating():
            return self._arith("remf", input, other)
        return self._arith("remsi" if input.dtype.is_int_signed() else "remui", input, other)

    def _bitwise_operands(self, input, other, op: str) -> tuple[tl.tensor, tl.tensor]:
        input, other = self._binary_operands(input, other, op)
        if not (input.dtype.is_int() and other.dtype.is_int()):
            raise SemanticError(
                f"`{op}` needs integer (or boolean) operands, got {_show(input)} and {_show(other)}"
            )
        return input, other

    def and_(self, input, other) -> tl.tensor:
        return self._arith("andi", *self._bitwise_operands(input, other, "&"))

    def or_(self, input, other) -> tl.tensor:
        return self._arith("ori", *self._bitwise_operands(input, other, "|"))

    def xor_(self, input, other) -> tl.tensor:
        return self._arith("xori", *self._bitwise_operands(input, other, "^"))

    def lshift(self, input, other) -> tl.tensor:
        return self._arith("shli", *self._bitwise_operands(input, other, "<<"))

    def rshift(self, input, other) -> tl.tensor:
        """`>>`: arithmetic shift if the left operand is signed, logical otherwise (as Triton)."""
        left = (
            input.dtype if isinstance(input, tl.tensor) else _to_tensor_type(_python_value(input))
        )
        a, b = self._bitwise_operands(input, other, ">>")
        return self._arith("shrsi" if left.is_int_signed() else "shrui", a, b)

    def _bool(self, x) -> tl.tensor:
        x = self.to_tensor(x)
        return x if x.dtype.is_bool() else self._cast(x, tl.int1)

    def logical_and(self, input, other) -> tl.tensor:
        return self.and_(self._bool(input), self._bool(other))

    def logical_or(self, input, other) -> tl.tensor:
        return self.or_(self._bool(input), self._bool(other))

    def not_(self, input) -> tl.tensor:
        return self.invert(self._bool(input))

    def plus(self, input) -> tl.tensor:
        return self.to_tensor(input)

    def minus(self, input) -> tl.tensor:
        input = self.to_tensor(input)
        if input.dtype.is_ptr():
            raise SemanticError(f"cannot negate pointer {_show(input)}")
        return self.sub(self._constant(0, input.dtype, input.shape), input)

    def invert(self, input) -> tl.tensor:
        input = self.to_tensor(input)
        if not input.dtype.is_int():
            raise SemanticError(f"`~` needs an integer or boolean operand, got {_show(input)}")
        return self.xor_(input, self._constant(-1, input.dtype, input.shape))

    # -------------------------------------------------------------------- comparisons

    def _compare(self, input, other, op: str, fpred: str, spred: str, upred: str) -> tl.tensor:
        input, other = self._binary_operands(input, other, op)
        if input.dtype.is_floating():
            cmp = arith.CmpfOp(fpred, input.handle, other.handle)
        else:
            cmp = arith.CmpiOp(
                spred if input.dtype.is_int_signed() else upred, input.handle, other.handle
            )
        return self._emit(cmp, self._like(input, tl.int1))

    def equal(self, input, other) -> tl.tensor:
        return self._compare(input, other, "==", "oeq", "eq", "eq")

    def not_equal(self, input, other) -> tl.tensor:
        return self._compare(input, other, "!=", "une", "ne", "ne")

    def less_than(self, input, other) -> tl.tensor:
        return self._compare(input, other, "<", "olt", "slt", "ult")

    def less_equal(self, input, other) -> tl.tensor:
        return self._compare(input, other, "<=", "ole", "sle", "ule")

    def greater_than(self, input, other) -> tl.tensor:
        return self._compare(input, other, ">", "ogt", "sgt", "ugt")

    def greater_equal(self, input, other) -> tl.tensor:
        return self._compare(input, other, ">=", "oge", "sge", "uge")

    # ------------------------------------------------------------- programs and creation

    def _axis012(self, axis, what: str) -> int:
        axis = _python_value(axis)
        if axis not in (0, 1, 2) or isinstance(axis, bool):
            raise SemanticError(f"{what} axis must be 0, 1 or 2, got {axis!r}")
        return axis

    def program_id(self, axis) -> tl.tensor:
        return self._emit(tt.GetProgramIdOp(self._axis012(axis, "tl.program_id")), tl.int32)

    def num_programs(self, axis) -> tl.tensor:
        return self._emit(tt.GetNumProgramsOp(self._axis012(axis, "tl.num_programs")), tl.int32)

    def arange(self, start, end) -> tl.tensor:
        start, end = _python_value(start), _python_value(end)
        for v in (start, end):
            if isinstance(v, (tl.tensor, bool)) or not isinstance(v, int):
                raise SemanticError(
                    f"tl.arange bounds must be compile-time ints, got {_show(v)}; "
                    "make the bound a tl.constexpr parameter (e.g. BLOCK: tl.constexpr)"
                )
        if not (-(2**31) <= start < 2**31 and -(2**31) <= end < 2**31):
            raise SemanticError(
                f"tl.arange({start}, {end}) does not fit in int32; use smaller bounds"
            )
        if end <= start:
            raise SemanticError(
                f"tl.arange({start}, {end}) is empty: end must be greater than start"
            )
        if not _is_power_of_two(end - start):
            raise SemanticError(
                f"tl.arange({start}, {end}) has {end - start} elements, which is not a power of 2; "
                "round the length up to a power of 2 and mask the extra lanes"
            )
        if end - start > TRITON_MAX_TENSOR_NUMEL:
            raise SemanticError(
                f"tl.arange({start}, {end}) has more than {TRITON_MAX_TENSOR_NUMEL} elements; use "
                "a smaller block"
            )
        return self._emit(tt.MakeRangeOp(start, end), tl.block_type(tl.int32, [end - start]))

    def full(self, shape, value, dtype) -> tl.tensor:
        shape = _block_shape(shape, "tl.full shape")
        dtype = self._dtype_arg(dtype, "tl.full")
        if isinstance(value, tl.tensor):
            if value.type.is_block():
                raise SemanticError(f"tl.full needs a scalar value, got {_show(value)}")
            return self._splat(self._cast(value, dtype), shape)
        return self._python_constant(value, dtype, shape)

    def zeros(self, shape, dtype) -> tl.tensor:
        return self.full(shape, 0, dtype)

    # -------------------------------------------------------------------- shapes

    def _block(self, x, what: str) -> tl.tensor:
        x = self.to_tensor(x)
        if not x.type.is_block():
            raise SemanticError(f"{what} needs a block, got the scalar {_show(x)}")
        return x

    def reshape(self, input, *shape, can_reorder=False) -> tl.tensor:
        input = self.to_tensor(input)
        dims = _block_shape(shape, "tl.reshape shape")
        numel = int(np.prod(dims)) if dims else 1
        if numel != input.numel:
            raise SemanticError(
                f"cannot reshape {_show(input)} ({input.numel} elements) to {tuple(dims)} ({numel} "
                "elements); "
                "the number of elements must stay the same"
            )
        if not input.type.is_block():
            return self._splat(input, dims)
        if tuple(dims) == input.shape:
            return input
        ty = tl.block_type(input.dtype, dims)
        return self._emit(
            tt.ReshapeOp(input.handle, to_ir_type(ty), bool(_unwrap(can_reorder))), ty
        )

    def view(self, input, *shape) -> tl.tensor:
        return self.reshape(input, *shape, can_reorder=True)

    def trans(self, input, *dims) -> tl.tensor:
        input = self._block(input, "tl.trans")
        order = _int_list(dims, "tl.trans dims") if dims else [1, 0]
        return self.permute(input, order)

    def permute(self, input, *dims) -> tl.tensor:
        input = self._block(input, "tl.permute")
        order = _int_list(dims, "tl.permute dims")
        if sorted(order) != list(builtins.range(len(input.shape))):
            raise SemanticError(
                f"dims {tuple(order)} are not a permutation of the {len(input.shape)} dimensions "
                f"of {_show(input)}; "
                f"pass each of 0..{len(input.shape) - 1} once"
            )
        if order == sorted(order):
            return input
        ty = tl.block_type(input.dtype, [input.shape[d] for d in order])
        return self._emit(tt.TransOp(input.handle, order, to_ir_type(ty)), ty)

    def expand_dims(self, input, axis) -> tl.tensor:
        input = self.to_tensor(input)
        axes = _int_list(axis, "tl.expand_dims axis")
        rank = len(input.shape) + len(axes)
        wrapped = sorted(self._wrap_axis(a, rank, "tl.expand_dims", input) for a in axes)
        if len(set(wrapped)) != len(wrapped):
            raise SemanticError(
                f"tl.expand_dims got the axis {axes} twice; pass each new axis once"
            )
        for a in wrapped:
            input = self._expand_dims(input, a)
        return input

    @staticmethod
    def _wrap_axis(axis, rank: int, what: str, x=None) -> int:
        axis = _python_value(axis)
        if isinstance(axis, bool) or not isinstance(axis, int):
            raise SemanticError(f"{what} axis must be a compile-time int, got {_show(axis)}")
        if not -rank <= axis < rank:
            shown = f" of {_show(x)}" if x is not None else ""
            raise SemanticError(
                f"{what} axis {axis} is out of range for {rank} dimensions{shown}; use an axis in "
                f"[{-rank}, {rank})"
            )
        return axis + rank if axis < 0 else axis

    def join(self, a, b) -> tl.tensor:
        a, b = self._broadcast_all(self.to_tensor(a), self.to_tensor(b))
        if a.dtype != b.dtype:
            raise SemanticError(
                f"tl.join needs two tensors of one dtype, got {_show(a)} and {_show(b)}; convert "
                "one with .to(...)"
            )
        scalar = not a.type.is_block()
        if scalar:
            a, b = self._expand_dims(a, 0), self._expand_dims(b, 0)
        ty = tl.block_type(a.dtype, list(a.shape) + [2])
        out = self._emit(tt.JoinOp(a.handle, b.handle, to_ir_type(ty)), ty)
        return self.reshape(out, [2]) if scalar else out

    def split(self, a):
        a = self._block(a, "tl.split")
        if a.shape[-1] != 2:
            raise SemanticError(
                f"tl.split needs a last dimension of size 2, got {_show(a)}; split the result of "
                "tl.join or reshape to (..., 2)"
            )
        ty = block_of(a.dtype, a.shape[:-1])
        op = self.builder.create(tt.SplitOp(a.handle, to_ir_type(ty)))
        return tl.tensor(op.results[0], ty), tl.tensor(op.results[1], ty)

    def cat(self, input, other, can_reorder=False) -> tl.tensor:
        input, other = self._block(input, "tl.cat"), self._block(other, "tl.cat")
        if not _unwrap(can_reorder):
            raise SemanticError(
                "tl.cat may reorder elements, so it needs can_reorder=True (as in Triton); use "
                "tl.join for an ordered pair"
            )
        if input.type != other.type or len(input.shape) != 1:
            raise SemanticError(
                f"tl.cat needs two 1-D blocks of one shape and dtype, got {_show(input)} and "
                f"{_show(other)}"
            )
        ty = tl.block_type(input.dtype, [2 * input.shape[0]])
        return self._emit(tt.CatOp(input.handle, other.handle, to_ir_type(ty)), ty)

    # -------------------------------------------------------------------- memory

    def _pointer(self, pointer, what: str) -> tl.tensor:
        if not (isinstance(pointer, tl.tensor) and pointer.dtype.is_ptr()):
            raise SemanticError(
                f"{what} needs a pointer or a block of pointers, got {_show(pointer)}; "
                "add offsets to a pointer argument, e.g. x_ptr + offs"
            )
        return pointer

    @staticmethod
    def _option(value, allowed: Sequence[str], what: str) -> str:
        value = _unwrap(value) or ""
        if value not in allowed:
            raise SemanticError(
                f"{what} {value!r} is not supported; use one of "
                f"{', '.join(repr(a) for a in allowed)}"
            )
        return value

    def _operand_for(
        self, ptr: tl.tensor, value, elem: tl.dtype, role: str, target: str
    ) -> tl.tensor:
        """`value` (Python number or tensor) as `elem`, with the shape of the pointer block."""
        if _is_python_number(value):
            return self._python_constant(value, elem, ptr.shape)
        value = self.to_tensor(value)
        if not ptr.type.is_block() and value.type.is_block():
            raise SemanticError(
                f"{role} {_show(value)} is a block but the pointer is a single {ptr.dtype}; use a "
                "block of pointers (ptr + offsets)"
            )
        return self._fit_to(self._cast(value, elem), ptr.shape, role, target)

    def _mask_for(self, ptr: tl.tensor, mask, what: str) -> tl.tensor | None:
        if _unwrap(mask) is None:
            return None
        mask = self.to_tensor(_unwrap(mask))
        if not mask.dtype.is_bool():
            raise SemanticError(
                f"the mask of {what} must be boolean (tl.int1), got {_show(mask)}; compare it, "
                "e.g. mask=offs < n"
            )
        if not ptr.type.is_block() and mask.type.is_block():
            raise SemanticError(
                f"the mask {_show(mask)} of {what} is a block but the pointer is a single "
                f"{ptr.dtype}; use a block of pointers"
            )
        return self._fit_to(mask, ptr.shape, f"the mask of {what}", "pointer")

    def _int8_view(self, ptr: tl.tensor) -> tl.tensor:
        """Booleans live in memory as int8: view `*i1` pointers as `*i8`."""
        return self._cast(ptr, tl.pointer_type(tl.int8, ptr.dtype.address_space))

    def load(
        self,
        pointer,
        mask=None,
        other=None,
        boundary_check=(),
        padding_option="",
        cache_modifier="",
        eviction_policy="",
        volatile=False,
    ) -> tl.tensor:
        ptr = self._pointer(pointer, "tl.load")
        if _unwrap(boundary_check) or _unwrap(padding_option):
            raise SemanticError(
                "boundary_check and padding_option belong to block pointers, which kernellab does "
                "not support; "
                "mask the load instead (mask=offs < n, other=0)"
            )
        cache = self._option(cache_modifier, _LOAD_CACHE, "cache_modifier")
        evict = self._option(eviction_policy, _EVICTION, "eviction_policy")
        mask_t = self._mask_for(ptr, mask, "tl.load")
        if mask_t is None and _unwrap(other) is not None:
            raise SemanticError(
                "`other` is the value of masked-off lanes, so it needs a mask; pass mask=... or "
                "drop other"
            )
        elem = ptr.dtype.element_ty
        is_bool = elem.is_bool()
        if is_bool:
            ptr, elem = self._int8_view(ptr), tl.int8
        other_t = (
            None
            if _unwrap(other) is None
            else self._operand_for(ptr, _unwrap(other), elem, "`other` of tl.load", "pointer")
        )
        ty = self._like(ptr, elem)
        op = tt.LoadOp(
            ptr.handle,
            to_ir_type(ty),
            mask_t.handle if mask_t is not None else None,
            other_t.handle if other_t is not None else None,
            cache,
            evict,
            bool(_unwrap(volatile)),
        )
        out = self._emit(op, ty)
        return self._cast(out, tl.int1) if is_bool else out

    def store(
        self, pointer, value, mask=None, boundary_check=(), cache_modifier="", eviction_policy=""
    ) -> None:
        ptr = self._pointer(pointer, "tl.store")
        if _unwrap(boundary_check):
            raise SemanticError(
                "boundary_check belongs to block pointers, which kernellab does not support; mask "
                "the store instead (mask=offs < n)"
            )
        cache = self._option(cache_modifier, _STORE_CACHE, "cache_modifier")
        evict = self._option(eviction_policy, _EVICTION, "eviction_policy")
        mask_t = self._mask_for(ptr, mask, "tl.store")
        elem = ptr.dtype.element_ty
        if elem.is_bool():
            ptr, elem = self._int8_view(ptr), tl.int8
        value_t = self._operand_for(ptr, _unwrap(value), elem, "the value of tl.store", "pointer")
        self.builder.create(
            tt.StoreOp(
                ptr.handle,
                value_t.handle,
                mask_t.handle if mask_t is not None else None,
                cache,
                evict,
            )
        )

    # ------------------------------------------------------------------- atomics

    def _atomic_operands(self, op: str, pointer, val, mask, sem, scope):
        ptr = self._pointer(pointer, f"tl.atomic_{op}")
        sem = self._option(sem, ("",) + _SEMANTICS, "sem") or "acq_rel"
        scope = self._option(scope, ("",) + _SCOPES, "scope") or "gpu"
        elem = ptr.dtype.element_ty
        if (elem.is_fp16() or elem.is_bf16()) and op != "add":
            raise SemanticError(f"tl.atomic_{op} does not support {elem}; use a 32-bit type")
        if elem.primitive_bitwidth < 16 or (elem.is_int() and elem.primitive_bitwidth < 32):
            raise SemanticError(f"tl.atomic_{op} does not support {elem}; use a 32- or 64-bit type")
        val_t = self._operand_for(
            ptr, _unwrap(val), elem, f"the value of tl.atomic_{op}", "pointer"
        )
        mask_t = self._mask_for(ptr, mask, f"tl.atomic_{op}")
        return ptr, val_t, mask_t, sem, scope

    def _rmw(self, kind: str, ptr, val, mask, sem, scope) -> tl.tensor:
        op = tt.AtomicRMWOp(
            kind, ptr.handle, val.handle, mask.handle if mask is not None else None, sem, scope
        )
        return self._emit(op, val.type)

    def atomic_add(self, pointer, val, mask=None, sem=None, scope=None) -> tl.tensor:
        ptr, val, mask, sem, scope = self._atomic_operands("add", pointer, val, mask, sem, scope)
        return self._rmw("fadd" if val.dtype.is_floating() else "add", ptr, val, mask, sem, scope)

    def atomic_xchg(self, pointer, val, mask=None, sem=None, scope=None) -> tl.tensor:
        return self._rmw("exch", *self._atomic_operands("xchg", pointer, val, mask, sem, scope))

    def _int_atomic(self, op: str, pointer, val, mask, sem, scope) -> tl.tensor:
        ptr, val, mask, sem, scope = self._atomic_operands(op, pointer, val, mask, sem, scope)
        if not val.dtype.is_int():
            raise SemanticError(f"tl.atomic_{op} needs an integer pointer, got {_show(ptr)}")
        return self._rmw(op, ptr, val, mask, sem, scope)

    def atomic_and(self, pointer, val, mask=None, sem=None, scope=None) -> tl.tensor:
        return self._int_atomic("and", pointer, val, mask, sem, scope)

    def atomic_or(self, pointer, val, mask=None, sem=None, scope=None) -> tl.tensor:
        return self._int_atomic("or", pointer, val, mask, sem, scope)

    def atomic_xor(self, pointer, val, mask=None, sem=None, scope=None) -> tl.tensor:
        return self._int_atomic("xor", pointer, val, mask, sem, scope)

    def atomic_max(self, pointer, val, mask=None, sem=None, scope=None) -> tl.tensor:
        return self._minmax_atomic("max", pointer, val, mask, sem, scope)

    def atomic_min(self, pointer, val, mask=None, sem=None, scope=None) -> tl.tensor:
        return self._minmax_atomic("min", pointer, val, mask, sem, scope)

    def _minmax_atomic(self, op: str, pointer, val, mask, sem, scope) -> tl.tensor:
        ptr, val, mask, sem, scope = self._atomic_operands(op, pointer, val, mask, sem, scope)
        elem = val.dtype
        if elem.is_int():
            return self._rmw(op if elem.is_int_signed() else "u" + op, ptr, val, mask, sem, scope)
        if not (elem.is_fp32() or elem.is_fp64()):
            raise SemanticError(f"tl.atomic_{op} supports integers, fp32 and fp64, not {elem}")
        # IEEE floats order like sign-magnitude ints: for values with the sign bit clear the
        # signed-int max (min) is the float max (min); with it set, the unsigned-int min (max).
        itype = tl.int32 if elem.is_fp32() else tl.int64
        utype = tl.uint32 if elem.is_fp32() else tl.uint64
        iptr = self._cast(ptr, tl.pointer_type(itype))
        ival = self._bitcast(val, itype)
        neg = self._cast(
            self.rshift(self._rewrap(ival, utype), elem.primitive_bitwidth - 1), tl.int1
        )
        pos = self.not_(neg)
        if mask is None:
            mask = self._constant(True, tl.int1, ptr.shape)
        other = {"max": "umin", "min": "umax"}[op]
        pos_ret = self._rmw(op, iptr, ival, self.and_(mask, pos), sem, scope)
        neg_ret = self._rmw(
            other,
            self._rewrap(iptr, tl.pointer_type(utype)),
            self._rewrap(ival, utype),
            self.and_(mask, neg),
            sem,
            scope,
        )
        return self._bitcast(self.where(pos, pos_ret, self._rewrap(neg_ret, itype)), elem)

    def atomic_cas(self, pointer, cmp, val, sem=None, scope=None) -> tl.tensor:
        ptr = self._pointer(pointer, "tl.atomic_cas")
        sem = self._option(sem, ("",) + _SEMANTICS, "sem") or "acq_rel"
        scope = self._option(scope, ("",) + _SCOPES, "scope") or "gpu"
        elem = ptr.dtype.element_ty
        if elem.primitive_bitwidth not in (16, 32, 64):
            raise SemanticError(f"tl.atomic_cas supports 16-, 32- and 64-bit elements, not {elem}")
        cmp_t = self._operand_for(ptr, _unwrap(cmp), elem, "`cmp` of tl.atomic_cas", "pointer")
        val_t = self._operand_for(ptr, _unwrap(val), elem, "`val` of tl.atomic_cas", "pointer")
        return self._emit(
            tt.AtomicCASOp(ptr.handle, cmp_t.handle, val_t.handle, sem, scope), val_t.type
        )

    # ---------------------------------------------------------------------- math

    def where(self, condition, x, y) -> tl.tensor:
        condition = self._bool(condition)
        x, y = self._binary_operands(x, y, "tl.where", True, True)
        if x.dtype.is_ptr() != y.dtype.is_ptr():
            raise SemanticError(
                f"tl.where cannot choose between {_show(x)} and {_show(y)}; both must be pointers "
                "or both values"
            )
        condition, x, y = self._broadcast_all(condition, x, y)
        return self._emit(arith.SelectOp(condition.handle, x.handle, y.handle), x.type)

    def _minmax(
        self, x, y, propagate_nan, fname: str, sname: str, uname: str, what: str
    ) -> tl.tensor:
        x, y = self._binary_operands(x, y, what)
        if x.dtype.is_floating():
            suffix = "imumf" if _propagate_nan(propagate_nan) == "all" else "numf"
            return self._arith(fname + suffix, x, y)
        return self._arith(sname if x.dtype.is_int_signed() else uname, x, y)

    def minimum(self, x, y, propagate_nan=PropagateNan.NONE) -> tl.tensor:
        return self._minmax(x, y, propagate_nan, "min", "minsi", "minui", "tl.minimum")

    def maximum(self, x, y, propagate_nan=PropagateNan.NONE) -> tl.tensor:
        return self._minmax(x, y, propagate_nan, "max", "maxsi", "maxui", "tl.maximum")

    def clamp(self, x, min, max, propagate_nan=PropagateNan.NONE) -> tl.tensor:
        lo, hi = self._binary_operands(min, max, "tl.clamp")
        x, lo = self._binary_operands(x, lo, "tl.clamp")
        x, hi = self._binary_operands(x, hi, "tl.clamp")
        x, lo, hi = self._broadcast_all(x, lo, hi)
        if not x.dtype.is_floating():
            raise SemanticError(
                f"tl.clamp works on floats, got {_show(x)}; use tl.minimum(tl.maximum(x, lo), hi) "
                "for ints"
            )
        op = tt.ClampFOp(x.handle, lo.handle, hi.handle, _propagate_nan(propagate_nan))
        return self._emit(op, x.type)

    def _float_math(self, x, op_cls, what: str, dtypes=("fp32", "fp64")) -> tl.tensor:
        x = self.to_tensor(x)
        if x.dtype.name not in dtypes:
            raise SemanticError(
                f"tl.{what} needs {' or '.join(dtypes)}, got {_show(x)}; convert first, e.g. "
                f"tl.{what}(x.to(tl.float32))"
            )
        return self._emit(op_cls(x.handle), x.type)

    def exp(self, x) -> tl.tensor:
        return self._float_math(x, math.ExpOp, "exp")

    def exp2(self, x) -> tl.tensor:
        return self._float_math(x, math.Exp2Op, "exp2")

    def log(self, x) -> tl.tensor:
        return self._float_math(x, math.LogOp, "log")

    def log2(self, x) -> tl.tensor:
        return self._float_math(x, math.Log2Op, "log2")

    def sqrt(self, x) -> tl.tensor:
        return self._float_math(x, math.SqrtOp, "sqrt")

    def sqrt_rn(self, x) -> tl.tensor:
        return self._float_math(x, tt.PreciseSqrtOp, "sqrt_rn", ("fp32",))

    def rsqrt(self, x) -> tl.tensor:
        return self._float_math(x, math.RsqrtOp, "rsqrt")

    def sin(self, x) -> tl.tensor:
        return self._float_math(x, math.SinOp, "sin")

    def cos(self, x) -> tl.tensor:
        return self._float_math(x, math.CosOp, "cos")

    def erf(self, x) -> tl.tensor:
        return self._float_math(x, math.ErfOp, "erf")

    def floor(self, x) -> tl.tensor:
        return self._float_math(x, math.FloorOp, "floor")

    def ceil(self, x) -> tl.tensor:
        return self._float_math(x, math.CeilOp, "ceil")

    def abs(self, x) -> tl.tensor:
        x = self.to_tensor(x)
        if x.dtype.is_floating():
            return self._emit(math.AbsFOp(x.handle), x.type)
        if x.dtype.is_int_signed():
            return self._emit(math.AbsIOp(x.handle), x.type)
        if x.dtype.is_int():
            return x
        raise SemanticError(f"tl.abs needs a number, got {_show(x)}")

    def fdiv(self, x, y, ieee_rounding=False) -> tl.tensor:
        x, y = self.to_tensor(x), self.to_tensor(y)
        if not (x.dtype.is_floating() and y.dtype.is_floating()):
            raise SemanticError(
                f"tl.fdiv needs float operands, got {_show(x)} and {_show(y)}; use `/` for ints"
            )
        x, y = self._binary_operands(x, y, "tl.fdiv")
        return self._arith("divf", x, y)

    def div_rn(self, x, y) -> tl.tensor:
        x, y = self._binary_operands(self.to_tensor(x), self.to_tensor(y), "tl.div_rn")
        if not x.dtype.is_fp32():
            raise SemanticError(
                f"tl.div_rn needs fp32 operands, got {_show(x)}; convert with .to(tl.float32)"
            )
        return self._emit(tt.PreciseDivFOp(x.handle, y.handle), x.type)

    def fma(self, x, y, z) -> tl.tensor:
        x, y, z = self.to_tensor(x), self.to_tensor(y), self.to_tensor(z)
        x, y = self._binary_operands(x, y, "tl.fma")
        z, x = self._binary_operands(z, x, "tl.fma")
        z, y = self._binary_operands(z, y, "tl.fma")
        x, y, z = self._broadcast_all(x, y, z)
        if not x.dtype.is_floating():
            raise SemanticError(
                f"tl.fma needs float operands, got {_show(x)}; use x * y + z for ints"
            )
        return self._emit(math.FmaOp(x.handle, y.handle, z.handle), x.type)

    def umulhi(self, x, y) -> tl.tensor:
        x, y = self.to_tensor(x), self.to_tensor(y)
        for v in (x, y):
            if v.dtype.name not in ("int32", "int64", "uint32", "uint64"):
                raise SemanticError(f"tl.umulhi needs 32- or 64-bit integers, got {_show(v)}")
        x, y = self._binary_operands(x, y, "tl.umulhi")
        return self._emit(tt.MulhiUIOp(x.handle, y.handle), x.type)

    # ---------------------------------------------------------------- reductions

    def _combine_block(self, inputs: Sequence[tl.tensor]) -> tuple[Block, list[tl.tensor]]:
        """The combine region's block: (a0..aN-1, b0..bN-1) scalars of the inputs' types."""
        elems = [t.dtype for t in inputs] * 2
        block = Block(arg_types=[to_ir_type(e) for e in elems])
        return block, [tl.tensor(arg, e) for arg, e in zip(block.args, elems)]

    def _combine_results(self, results, inputs: Sequence[tl.tensor], what: str) -> list[tl.tensor]:
        results = list(results) if isinstance(results, (tuple, list)) else [results]
        if len(results) != len(inputs):
            raise SemanticError(
                f"the combine function of {what} returned {len(results)} values for {len(inputs)} "
                "inputs; return one value per input"
            )
        out = []
        for r, t in zip(results, inputs):
            r = self.to_tensor(r)
            if r.type != t.dtype:
                raise SemanticError(
                    f"the combine function of {what} returned {_show(r)} where {t.dtype} was "
                    "expected; return values of the input types"
                )
            out.append(r)
        return out

    def _user_combine(self, combine_fn, what: str):
        fn = _unwrap(combine_fn)

        def build(args: list[tl.tensor], inputs):
            return self._combine_results(self.call_function(fn, args, {}), inputs, what)

        return build

    def _reduction(self, inputs, axis, keep_dims, combine, what: str) -> tuple[tl.tensor, ...]:
        inputs = [self._block(t, what) for t in inputs]
        axis = _python_value(axis)
        keep_dims = bool(_unwrap(keep_dims))
        rank = len(inputs[0].shape)
        if axis is None:
            inputs = [self.reshape(t, [t.numel], can_reorder=True) for t in inputs]
            red_axis = 0
        else:
            red_axis = self._wrap_axis(axis, rank, what, inputs[0])
        shape = inputs[0].shape
        if any(t.shape != shape for t in inputs):
            raise SemanticError(
                f"{what} needs inputs of one shape, got {', '.join(_show(t) for t in inputs)}"
            )
        block, args = self._combine_block(inputs)
        with self.builder.at_block(block):
            results = combine(args, inputs)
            self.builder.create(tt.ReduceReturnOp(*[r.handle for r in results]))
        out_shape = shape[:red_axis] + shape[red_axis + 1 :]
        types = [block_of(t.dtype, out_shape) for t in inputs]
        op = self.builder.create(
            tt.ReduceOp(
                [t.handle for t in inputs], red_axis, [to_ir_type(t) for t in types], Region(block)
            )
        )
        outs = [tl.tensor(r, t) for r, t in zip(op.results, types)]
        if keep_dims:
            axes = [red_axis] if axis is not None else list(builtins.range(rank))
            for i, o in enumerate(outs):
                for a in axes:
                    o = self._expand_dims(o, a)
                outs[i] = o
        return tuple(outs)

    def reduce(self, input, axis, combine_fn, keep_dims=False):
        inputs = _unwrap(input)
        single = isinstance(inputs, tl.tensor)
        inputs = [inputs] if single else list(inputs)
        outs = self._reduction(
            inputs, axis, keep_dims, self._user_combine(combine_fn, "tl.reduce"), "tl.reduce"
        )
        return outs[0] if single else outs

    @staticmethod
    def _sum_dtype(elem: tl.dtype, dtype) -> tl.dtype | None:
        """Triton's accumulator for sum/cumsum: `dtype` if given, else (u)int32 for narrower
        ints and fp32 for bf16."""
        dtype = _unwrap(dtype)
        if dtype is not None:
            return dtype.scalar
        if elem.is_int() and elem.primitive_bitwidth < 32:
            return tl.int32 if elem.is_int_signed() else tl.uint32
        return tl.float32 if elem.is_bf16() else None

    def _binary_combine(self, method):
        return lambda args, inputs: [method(args[0], args[1])]

    def sum(self, input, axis=None, keep_dims=False, dtype=None) -> tl.tensor:
        input = self._block(input, "tl.sum")
        acc = self._sum_dtype(input.dtype, dtype)
        if acc is not None:
            input = self._cast(input, acc)
        return self._reduction([input], axis, keep_dims, self._binary_combine(self.add), "tl.sum")[
            0
        ]

    def xor_sum(self, input, axis=None, keep_dims=False) -> tl.tensor:
        input = self._block(input, "tl.xor_sum")
        if not input.dtype.is_int():
            raise SemanticError(f"tl.xor_sum needs integers, got {_show(input)}")
        return self._reduction(
            [input], axis, keep_dims, self._binary_combine(self.xor_), "tl.xor_sum"
        )[0]

    def max(
        self,
        input,
        axis=None,
        return_indices=False,
        return_indices_tie_break_left=True,
        keep_dims=False,
        propagate_nan=PropagateNan.NONE,
    ):
        return self._extremum(
            input,
            axis,
            return_indices,
            return_indices_tie_break_left,
            keep_dims,
            propagate_nan,
            "max",
        )

    def min(
        self,
        input,
        axis=None,
        return_indices=False,
        return_indices_tie_break_left=True,
        keep_dims=False,
        propagate_nan=PropagateNan.NONE,
    ):
        return self._extremum(
            input,
            axis,
            return_indices,
            return_indices_tie_break_left,
            keep_dims,
            propagate_nan,
            "min",
        )

    def argmax(self, input, axis, tie_break_left=True, keep_dims=False) -> tl.tensor:
        return self._extremum(
            input, axis, True, tie_break_left, keep_dims, PropagateNan.NONE, "max"
        )[1]

    def argmin(self, input, axis, tie_break_left=True, keep_dims=False) -> tl.tensor:
        return self._extremum(
            input, axis, True, tie_break_left, keep_dims, PropagateNan.NONE, "min"
        )[1]

    def _extremum(
        self, input, axis, return_indices, tie_break_left, keep_dims, propagate_nan, which: str
    ):
        what = f"tl.{'arg' if _unwrap(return_indices) else ''}{which}"
        input = self._block(input, what)
        if input.dtype.is_bf16():
            input = self._cast(input, tl.float32)
        pick = self.maximum if which == "max" else self.minimum
        if not _unwrap(return_indices):
            if input.dtype.primitive_bitwidth < 32:
                input = self._cast(input, tl.float32 if input.dtype.is_floating() else tl.int32)
            combine = self._binary_combine(lambda a, b: pick(a, b, propagate_nan))
            return self._reduction([input], axis, keep_dims, combine, what)[0]
        axis = _python_value(axis)
        rank = len(input.shape)
        if axis is None:  # indices into the row-major flattened block
            flat = self.reshape(input, [input.numel])
            values, index = self._extremum(
                flat, 0, True, tie_break_left, False, propagate_nan, which
            )
            if _unwrap(keep_dims):
                values, index = (self.reshape(t, [1] * rank) for t in (values, index))
            return values, index
        axis = self._wrap_axis(axis, rank, what, input)
        index = self.arange(0, input.shape[axis])
        if rank > 1:
            for d in builtins.range(rank):
                if d != axis:
                    index = self._expand_dims(index, d)
            index = self._broadcast_to(index, input.shape)
        better = self.greater_than if which == "max" else self.less_than
        tie_left = bool(_unwrap(tie_break_left))

        def combine(args, inputs):
            v1, i1, v2, i2 = args
            take_first = better(v1, v2)
            if tie_left:
                take_first = self.or_(
                    take_first, self.and_(self.equal(v1, v2), self.less_than(i1, i2))
                )
            return [self.where(take_first, v1, v2), self.where(take_first, i1, i2)]

        return self._reduction([input, index], axis, keep_dims, combine, what)

    # --------------------------------------------------------------------- scans

    def _scan(self, inputs, axis, reverse, combine, what: str) -> tuple[tl.tensor, ...]:
        inputs = [self._block(t, what) for t in inputs]
        shape = inputs[0].shape
        axis = self._wrap_axis(axis, len(shape), what, inputs[0])
        if any(t.shape != shape for t in inputs):
            raise SemanticError(
                f"{what} needs inputs of one shape, got {', '.join(_show(t) for t in inputs)}"
            )
        block, args = self._combine_block(inputs)
        with self.builder.at_block(block):
            results = combine(args, inputs)
            self.builder.create(tt.ScanReturnOp(*[r.handle for r in results]))
        op = self.builder.create(
            tt.ScanOp([t.handle for t in inputs], axis, bool(_unwrap(reverse)), Region(block))
        )
        return tuple(tl.tensor(r, t.type) for r, t in zip(op.results, inputs))

    def associative_scan(self, input, axis, combine_fn, reverse=False):
        inputs = _unwrap(input)
        single = isinstance(inputs, tl.tensor)
        inputs = [inputs] if single else list(inputs)
        what = "tl.associative_scan"
        outs = self._scan(inputs, axis, reverse, self._user_combine(combine_fn, what), what)
        return outs[0] if single else outs

    def cumsum(self, input, axis=0, reverse=False, dtype=None) -> tl.tensor:
        input = self._block(input, "tl.cumsum")
        acc = self._sum_dtype(input.dtype, dtype)
        if acc is not None:
            input = self._cast(input, acc)
        return self._scan([input], axis, reverse, self._binary_combine(self.add), "tl.cumsum")[0]

    def cumprod(self, input, axis=0, reverse=False) -> tl.tensor:
        input = self._block(input, "tl.cumprod")
        if input.dtype.is_bf16():
            input = self._cast(input, tl.float32)
        return self._scan([input], axis, reverse, self._binary_combine(self.mul), "tl.cumprod")[0]

    # ----------------------------------------------------------------------- dot

    def dot(
        self,
        input,
        other,
        acc=None,
        input_precision=None,
        allow_tf32=None,
        max_num_imprecise_acc=None,
        out_dtype=tl.float32,
    ) -> tl.tensor:
        a, b = self._block(input, "tl.dot"), self._block(other, "tl.dot")
        precision, allow_tf32 = _unwrap(input_precision), _unwrap(allow_tf32)
        if precision is not None and allow_tf32 is not None:
            raise SemanticError(
                "tl.dot got both input_precision and allow_tf32; pass only input_precision"
            )
        if allow_tf32 is not None:
            precision = "tf32" if allow_tf32 else "ieee"
        precision = (precision or "tf32").lower()
        if precision not in tt.INPUT_PRECISIONS:
            raise SemanticError(
                f"tl.dot input_precision {precision!r} is not supported; use one of "
                f"{', '.join(tt.INPUT_PRECISIONS)}"
            )
        out_dtype = self._dtype_arg(out_dtype, "tl.dot out_dtype")
        if len(a.shape) != len(b.shape) or len(a.shape) not in (2, 3):
            raise SemanticError(
                f"tl.dot needs two 2-D (or two 3-D batched) blocks, got {_show(a)} and {_show(b)}"
            )
        both_fp8 = a.dtype.is_fp8() and b.dtype.is_fp8()
        if not both_fp8 and (a.dtype.name not in _DOT_DTYPES or a.dtype != b.dtype):
            raise SemanticError(
                "tl.dot operands must share one dtype among int8, fp16, bf16, fp32, fp64 (or both "
                "be fp8), "
                f"got {_show(a)} and {_show(b)}; convert with .to(...)"
            )
        if a.shape[-1] != b.shape[-2] or (len(a.shape) == 3 and a.shape[0] != b.shape[0]):
            raise SemanticError(
                f"tl.dot shapes {a.shape} and {b.shape} do not match: the inner dimensions "
                f"({a.shape[-1]} and {b.shape[-2]})"
                " must be equal" + (" and so must the batch sizes" if len(a.shape) == 3 else "")
            )
        m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
        if builtins.min(m, n, k) < _MIN_DOT_SIZE:
            raise SemanticError(
                f"tl.dot needs M, N and K of at least {_MIN_DOT_SIZE}, got M={m}, N={n}, K={k} "
                f"({_show(a)} × {_show(b)}); use larger blocks"
            )
        if a.dtype.is_int():
            if a.dtype != tl.int8:
                raise SemanticError(f"integer tl.dot supports int8 only, got {_show(a)}")
            ret_elem = tl.int32
        elif out_dtype.is_bf16():
            raise SemanticError(
                "tl.dot cannot produce bfloat16; use out_dtype=tl.float32 and convert the result "
                "with .to(tl.bfloat16)"
            )
        elif a.dtype.is_fp32() or a.dtype.is_bf16():
            ret_elem = tl.float32
        elif a.dtype.is_fp64():
            ret_elem = tl.float64
        else:
            ret_elem = out_dtype
        ret_ty = tl.block_type(ret_elem, list(a.shape[:-1]) + [n])
        if _unwrap(acc) is None:
            acc_t = self._constant(0, ret_elem, ret_ty.shape)
        else:
            acc_t = self.to_tensor(_unwrap(acc))
            if acc_t.type != ret_ty:
                raise SemanticError(
                    f"the accumulator of tl.dot is {_show(acc_t)} but the product of {_show(a)} "
                    f"and {_show(b)} is {_show(ret_ty)}; make acc match"
                )
        imprecise = _python_value(max_num_imprecise_acc) or 0
        if a.dtype.is_fp8() and imprecise > k:
            raise SemanticError(f"max_num_imprecise_acc ({imprecise}) must be at most K ({k})")
        return self._emit(tt.DotOp(a.handle, b.handle, acc_t.handle, precision, imprecise), ret_ty)

    # ------------------------------------------------------------ compiler hints

    def _hint(self, input, values, attr: str, what: str, min_rank: int) -> tl.tensor:
        input = self.to_tensor(input)
        values = _int_list(values, f"{what} values")
        if builtins.max(min_rank, len(input.shape)) != len(values):
            raise SemanticError(
                f"{what} got {len(values)} values for {_show(input)}; give one value per dimension"
            )
        handle = input.handle
        if isinstance(handle, OpResult):
            handle.op.attributes[attr] = DenseIntOrFPElementsAttr.from_list(
                TensorType(i32, [len(values)]), values
            )
        elif isinstance(handle, BlockArgument) and isinstance(handle.block.parent_op(), tt.FuncOp):
            # a kernel argument: recorded as specialization does it (`tt.divisibility = 16 : i32`)
            self._set_arg_attr(handle, attr, IntegerAttr(values[0], i32))
        return input

    @staticmethod
    def _set_arg_attr(arg: BlockArgument, name: str, value) -> None:
        func = arg.block.parent_op()
        count = len(func.args)
        attrs = list(func.arg_attrs.data) if func.arg_attrs else [DictionaryAttr({})] * count
        attrs[arg.index] = DictionaryAttr({**attrs[arg.index].data, name: value})
        func.arg_attrs = ArrayAttr(attrs)

    def multiple_of(self, input, values) -> tl.tensor:
        return self._hint(input, values, "tt.divisibility", "tl.multiple_of", 1)

    def max_contiguous(self, input, values) -> tl.tensor:
        return self._hint(input, values, "tt.contiguity", "tl.max_contiguous", 0)

    def max_constancy(self, input, values) -> tl.tensor:
        return self._hint(input, values, "tt.constancy", "tl.max_constancy", 0)

    def debug_barrier(self) -> None:
        """Threads of a program never race in TTIR's block semantics; nothing to emit."""

    # ----------------------------------------------------------------- debugging

    def static_assert(self, cond, msg="") -> None:
        if isinstance(cond, tl.tensor):
            raise SemanticError(
                "tl.static_assert needs a compile-time condition, got a runtime value; use "
                "tl.device_assert for runtime checks"
            )
        if not _unwrap(cond):
            raise SemanticError(
                f"static assertion failed: {_unwrap(msg)}"
                if _unwrap(msg)
                else "static assertion failed"
            )

    def static_print(self, *values, sep=" ", end="\n", file=None, flush=False) -> None:
        shown = [_show(v) if isinstance(v, tl.tensor) else _unwrap(v) for v in values]
        print(
            *shown,
            sep=_unwrap(sep),
            end=_unwrap(end),
            file=_unwrap(file),
            flush=bool(_unwrap(flush)),
        )

    def device_print(self, prefix, *args, hex=False) -> None:
        prefix = _unwrap(prefix)
        if not isinstance(prefix, str):
            raise SemanticError(f"tl.device_print needs a string prefix first, got {_show(prefix)}")
        if args:  # "pid: " style, as Triton prints it
            prefix = prefix if prefix.endswith(" ") else prefix + " "
            prefix = prefix if prefix.endswith(": ") else prefix[:-1] + ": "
        if len(prefix) > 2 and not prefix.startswith(" "):
            prefix = " " + prefix
        handles = [self.to_tensor(_unwrap(a)).handle for a in args]
        self.builder.create(tt.PrintOp(prefix, handles, bool(_unwrap(hex))))

    def device_assert(self, cond, msg="", mask=None) -> None:
        cond = self._bool(_unwrap(cond))
        if _unwrap(mask) is not None:
            cond = self.or_(cond, self.not_(self._bool(_unwrap(mask))))
        self.builder.create(tt.AssertOp(cond.handle, str(_unwrap(msg))))
