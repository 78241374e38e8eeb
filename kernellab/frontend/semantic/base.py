"""What every builtin builds on: emission, constants, conversions, broadcasting, promotion.

`SemanticBase` holds the builder and the rules that all families of builtins share: how Python
numbers become typed constants, how a value converts to another dtype (`.to()`), how shapes
broadcast (NumPy rules, as Triton), and how the operands of a binary operator are promoted to
one computation type (Triton's `binary_op_type_checking`).
"""

from __future__ import annotations

import builtins
import math
from collections.abc import Callable, Sequence

from kernellab.frontend.builder import IRBuilder
from kernellab.frontend.errors import SemanticError
from kernellab.frontend.types import block_of, to_ir_type
from kernellab.frontend.values import is_number, python_value, show, unwrap
from kernellab.ir import arith, tt
from kernellab.language import core as tl
from kernellab.language.builtins import TRITON_MAX_TENSOR_NUMEL

_KIND_BOOL, _KIND_INT, _KIND_FLOAT = 0, 1, 2


def _kind(ty: tl.dtype) -> int:
    if ty.is_bool():
        return _KIND_BOOL
    return _KIND_INT if ty.is_int() else _KIND_FLOAT


def _int_range(ty: tl.dtype) -> tuple[int, int]:
    bits = ty.primitive_bitwidth
    if ty.is_int_signed():
        return -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
    return 0, 2**bits - 1


def is_power_of_two(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def int_list(values, what: str) -> list[int]:
    """A tuple/list (or varargs holding one tuple) of compile-time ints."""
    values = unwrap(values)
    if (
        isinstance(values, (tuple, list))
        and len(values) == 1
        and isinstance(unwrap(values[0]), (tuple, list))
    ):
        values = unwrap(values[0])
    if not isinstance(values, (tuple, list)):
        values = [values]
    out = []
    for v in values:
        v = python_value(v)
        if isinstance(v, bool) or not isinstance(v, int):
            raise SemanticError(
                f"{what} must be compile-time ints, got {show(v)}; "
                "make the value a tl.constexpr parameter or a literal"
            )
        out.append(v)
    return out


def block_shape(shape, what: str) -> list[int]:
    """Validate a block shape as Triton does: constexpr ints, each a power of two."""
    dims = int_list(shape, what)
    numel = 1
    for d in dims:
        if not is_power_of_two(d):
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


def number_type(value) -> tl.dtype:
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
        fits_fp32 = not math.isfinite(value) or mag == 0.0 or 2**-126 <= mag <= (2 - 2**-23) * 2**127
        return tl.float32 if fits_fp32 else tl.float64
    raise SemanticError(
        f"{value!r} of Python type {type(value).__name__} cannot be a kernel value; use a tensor, "
        "an int, a float or a bool"
    )


# ------------------------------------------------------------------------------ promotion


def _computation_type(
    a: tl.dtype, a_py: bool, b: tl.dtype, b_py: bool, div_or_mod: bool, op: str
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
        raise SemanticError(f"`{op}` cannot combine {a} and {b}; convert one with .to(...) first")
    if div_or_mod and a.is_int_signed() != b.is_int_signed():
        raise SemanticError(
            f"`{op}` on {a} and {b} mixes signed and unsigned integers, which rarely gives a "
            "useful answer; cast both to the same signedness"
        )
    return _integer_promote(a, b)


def _integer_promote(a: tl.dtype, b: tl.dtype) -> tl.dtype:
    """C's usual arithmetic conversions: the wider wins; on a tie of widths unsigned wins."""
    a_bits, b_bits = a.primitive_bitwidth, b.primitive_bitwidth
    if a.is_int_signed() == b.is_int_signed():
        return a if a_bits > b_bits else b
    if a.is_int_unsigned():
        return a if a_bits >= b_bits else b
    return b if b_bits >= a_bits else a


def _check_ptr(a: tl.dtype, b: tl.dtype, allow: bool, op: str) -> None:
    if not a.is_ptr():
        return
    if not allow:
        raise SemanticError(
            f"`{op}` is not defined for pointer {a} and {b}; pointers only support + and - "
            "with integer offsets"
        )
    if b.is_ptr() and a != b:
        raise SemanticError(
            f"`{op}` cannot combine pointers of different types {a} and {b}; convert one so "
            "both point to the same type"
        )
    if b.is_floating():
        raise SemanticError(
            f"`{op}` cannot offset pointer {a} by a float ({b}); offsets must be integers"
        )


class SemanticBase:
    """The builder, and the typing rules shared by every family of builtins.

    `call_function(fn, args, kwargs)` comes from the visitor: it emits a call of a kernel
    function (combine functions of reduce/scan) into the builder's current block.
    """

    def __init__(self, builder: IRBuilder, call_function: Callable):
        self.builder = builder
        self.call_function = call_function

    # ------------------------------------------------------------------------ emission

    def _emit(self, op, ty: tl.dtype) -> tl.tensor:
        if isinstance(ty, tl.block_type) and ty.numel > TRITON_MAX_TENSOR_NUMEL:
            # the one check every op's result passes: broadcasts, joins and dots grow tensors too
            raise SemanticError(
                f"this makes a tensor of shape {tuple(ty.shape)} ({ty.numel} elements), more than "
                f"the limit of {TRITON_MAX_TENSOR_NUMEL} (2**20); use smaller blocks"
            )
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
        value = python_value(value)
        src = number_type(value)
        if src == tl.float32:
            import numpy as np  # only for a float literal: rounded to fp32 once

            value = float(np.float32(value))
        if dtype.is_bool():
            value = value != 0
        elif dtype.is_int() and isinstance(value, float):
            if not math.isfinite(value):
                raise SemanticError(f"{value} cannot be converted to {dtype}; use a finite value")
            value = int(value)
        return self._constant(value, dtype, shape)

    # ------------------------------------------------------------------ conversions

    def to_tensor(self, x) -> tl.tensor:
        """A kernel value for `x`: tensors pass through, Python numbers become constants."""
        if isinstance(x, tl.tensor):
            return x
        value = python_value(x)
        return self._constant(value, number_type(value))

    def cast(self, input, dtype, fp_downcast_rounding=None, bitcast=False) -> tl.tensor:
        input = self.to_tensor(input)
        dtype = self._dtype_arg(dtype, "cast")
        if unwrap(bitcast):
            return self._bitcast(input, dtype)
        return self._cast(input, dtype, unwrap(fp_downcast_rounding))

    to = cast

    def _dtype_arg(self, dtype, what: str) -> tl.dtype:
        dtype = unwrap(dtype)
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
        if src.is_fp8() or dst.is_fp8():
            hint = "convert to a standard float type first"
        elif src.is_ptr() and dst.is_int():
            hint = "convert pointers to int64"
        else:
            hint = "pointers convert only to integers and to other pointers"
        raise SemanticError(f"cannot convert {show(x)} to {dst}; {hint}")

    def _bitcast(self, x: tl.tensor, dst: tl.dtype) -> tl.tensor:
        src = x.dtype
        dst = dst.scalar
        if src == dst:
            return x
        if src.is_ptr() or dst.is_ptr():
            return self._cast(x, dst)
        if src.primitive_bitwidth != dst.primitive_bitwidth:
            raise SemanticError(
                f"cannot bitcast {show(x)} to {dst}: {src.primitive_bitwidth} bits vs "
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

    def _fit_to(self, x: tl.tensor, shape: tuple[int, ...], role: str) -> tl.tensor:
        """Broadcast a mask, `other` or value to a pointer block's shape (it may not grow it)."""
        if not _broadcasts_to(x.shape, shape):
            raise SemanticError(
                f"{role} of shape {x.shape} does not broadcast to the pointer shape {shape}; "
                f"give it shape {shape} or one that broadcasts to it"
            )
        return self._broadcast_to(x, shape)

    def broadcast(self, input, other):
        input, other = self.to_tensor(input), self.to_tensor(other)
        return tuple(self._broadcast_all(input, other))

    def broadcast_to(self, input, *shape):
        input = self.to_tensor(input)
        shape = tuple(block_shape(shape, "tl.broadcast_to shape"))
        if not _broadcasts_to(input.shape, shape):
            raise SemanticError(
                f"cannot broadcast {show(input)} to shape {shape}: the target must keep every "
                "dimension that is not 1"
            )
        return self._broadcast_to(input, shape)

    # ----------------------------------------------------------- binary op typing

    def _binary_operands(
        self,
        lhs,
        rhs,
        op: str,
        allow_lhs_ptr=False,
        allow_rhs_ptr=False,
        div_or_mod=False,
    ) -> tuple[tl.tensor, tl.tensor]:
        """Promote and broadcast two operands as Triton's binary_op_type_checking does."""
        lhs_py, rhs_py = is_number(lhs), is_number(rhs)
        lhs_v = python_value(lhs) if lhs_py else None
        rhs_v = python_value(rhs) if rhs_py else None
        lhs_ty = number_type(lhs_v) if lhs_py else self.to_tensor(lhs).dtype
        rhs_ty = number_type(rhs_v) if rhs_py else self.to_tensor(rhs).dtype
        _check_ptr(lhs_ty, rhs_ty, allow_lhs_ptr, op)
        _check_ptr(rhs_ty, lhs_ty, allow_rhs_ptr, op)
        if not lhs_ty.is_ptr() and not rhs_ty.is_ptr():
            ret = _computation_type(lhs_ty, lhs_py, rhs_ty, rhs_py, div_or_mod, op)
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

    def _arith(self, name: str, a: tl.tensor, b: tl.tensor) -> tl.tensor:
        return self._emit(arith.BINARY_OPS[name](a.handle, b.handle), a.type)

    # ------------------------------------------------------------------ axes and blocks

    def _block(self, x, what: str) -> tl.tensor:
        x = self.to_tensor(x)
        if not x.type.is_block():
            raise SemanticError(
                f"{what} needs a block, got the scalar {show(x)}; apply it to a tensor with "
                "a shape (e.g. one built from tl.arange)"
            )
        return x

    @staticmethod
    def _wrap_axis(axis, rank: int, what: str, x=None) -> int:
        axis = python_value(axis)
        if isinstance(axis, bool) or not isinstance(axis, int):
            raise SemanticError(
                f"{what} axis must be a compile-time int, got {show(axis)}; pass a literal or a "
                "tl.constexpr"
            )
        if not -rank <= axis < rank:
            shown = f" of {show(x)}" if x is not None else ""
            raise SemanticError(
                f"{what} axis {axis} is out of range for {rank} dimensions{shown}; use an axis in "
                f"[{-rank}, {rank})"
            )
        return axis + rank if axis < 0 else axis
