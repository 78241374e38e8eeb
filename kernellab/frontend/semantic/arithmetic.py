"""Operators, comparisons and elementwise math.

Python operators on kernel values arrive here by name (`add` for `+`, `less_than` for `<`, ...),
after the visitor has folded those whose operands are all compile-time. Each promotes and
broadcasts its operands (`_binary_operands`) and picks the signed, unsigned or float flavour of
the `arith` op from the promoted type, as Triton does.
"""

from __future__ import annotations

from kernellab.frontend.errors import SemanticError
from kernellab.frontend.semantic.base import SemanticBase, number_type
from kernellab.frontend.types import to_ir_type
from kernellab.frontend.values import is_number, python_value, show, unwrap
from kernellab.ir import arith, math, tt
from kernellab.language import core as tl
from kernellab.language.builtins import PropagateNan


def _propagate_nan(value) -> str:
    value = unwrap(value)
    if isinstance(value, PropagateNan):
        return value.name.lower()
    if value in (None, False, 0):
        return "none"
    if value in ("none", "all"):
        return value
    raise SemanticError(
        f"propagate_nan must be tl.PropagateNan.NONE or tl.PropagateNan.ALL, got {value!r}"
    )


def _comparison(symbol: str, fpred: str, spred: str, upred: str):
    """The builtin for a comparison operator: `arith.cmpf fpred` on floats, `arith.cmpi` with
    the signed or unsigned predicate on integers."""

    def compare(self, input, other) -> tl.tensor:
        return self._compare(input, other, symbol, fpred, spred, upred)

    return compare


def _float_unary(name: str, op_cls: type, dtypes: tuple[str, ...] = ("fp32", "fp64")):
    """The builtin `tl.<name>(x)`: `op_cls` applied to a float of one of `dtypes`."""

    def unary(self, x) -> tl.tensor:
        return self._float_math(x, op_cls, name, dtypes)

    unary.__name__ = unary.__qualname__ = name
    return unary


class ArithmeticMixin(SemanticBase):
    """Python operators, comparisons, where/minimum/maximum/clamp and the math builtins."""

    # -------------------------------------------------------------------- arithmetic

    def add(self, input, other) -> tl.tensor:
        input, other = self._binary_operands(input, other, "+", True, True)
        if input.dtype.is_ptr() and other.dtype.is_ptr():
            raise SemanticError(
                f"cannot add two pointers ({show(input)} + {show(other)}); add an integer offset "
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
                f"`//` needs integer operands, got {show(input)} and {show(other)}; for floats "
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
                f"`{op}` needs integer (or boolean) operands, got {show(input)} and {show(other)}; "
                "convert floats first, e.g. x.to(tl.int32)"
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
        left = input.dtype if isinstance(input, tl.tensor) else number_type(python_value(input))
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
            raise SemanticError(
                f"cannot negate pointer {show(input)}; negate the offset instead (ptr - offs)"
            )
        return self.sub(self._constant(0, input.dtype, input.shape), input)

    def invert(self, input) -> tl.tensor:
        input = self.to_tensor(input)
        if not input.dtype.is_int():
            raise SemanticError(
                f"`~` needs an integer or boolean operand, got {show(input)}; use -x to negate "
                "a float"
            )
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

    equal = _comparison("==", "oeq", "eq", "eq")
    not_equal = _comparison("!=", "une", "ne", "ne")
    less_than = _comparison("<", "olt", "slt", "ult")
    less_equal = _comparison("<=", "ole", "sle", "ule")
    greater_than = _comparison(">", "ogt", "sgt", "ugt")
    greater_equal = _comparison(">=", "oge", "sge", "uge")

    # ---------------------------------------------------------------------- math

    def where(self, condition, x, y) -> tl.tensor:
        condition = self._bool(condition)
        x, y = self._binary_operands(x, y, "tl.where", True, True)
        if x.dtype.is_ptr() != y.dtype.is_ptr():
            raise SemanticError(
                f"tl.where cannot choose between {show(x)} and {show(y)}; both must be pointers "
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

    def _promote_three(self, a, b, c, what: str) -> tuple[tl.tensor, tl.tensor, tl.tensor]:
        """Three operands promoted to one type as Triton does it: `b` with `c`, then `a` with
        each of them."""
        b, c = self._binary_operands(b, c, what)
        a, b = self._binary_operands(a, b, what)
        a, c = self._binary_operands(a, c, what)
        return a, b, c

    def clamp(self, x, min, max, propagate_nan) -> tl.tensor:
        x, lo, hi = self._broadcast_all(*self._promote_three(x, min, max, "tl.clamp"))
        if not x.dtype.is_floating():
            raise SemanticError(
                f"tl.clamp works on floats, got {show(x)}; use tl.minimum(tl.maximum(x, lo), hi) "
                "for ints"
            )
        op = tt.ClampFOp(x.handle, lo.handle, hi.handle, _propagate_nan(propagate_nan))
        return self._emit(op, x.type)

    def _float_math(self, x, op_cls, what: str, dtypes: tuple[str, ...]) -> tl.tensor:
        x = self.to_tensor(x)
        if x.dtype.name not in dtypes:
            raise SemanticError(
                f"tl.{what} needs {' or '.join(dtypes)}, got {show(x)}; convert first, e.g. "
                f"tl.{what}(x.to(tl.float32))"
            )
        return self._emit(op_cls(x.handle), x.type)

    exp = _float_unary("exp", math.ExpOp)
    exp2 = _float_unary("exp2", math.Exp2Op)
    log = _float_unary("log", math.LogOp)
    log2 = _float_unary("log2", math.Log2Op)
    sqrt = _float_unary("sqrt", math.SqrtOp)
    sqrt_rn = _float_unary("sqrt_rn", tt.PreciseSqrtOp, ("fp32",))
    rsqrt = _float_unary("rsqrt", math.RsqrtOp)
    sin = _float_unary("sin", math.SinOp)
    cos = _float_unary("cos", math.CosOp)
    erf = _float_unary("erf", math.ErfOp)
    floor = _float_unary("floor", math.FloorOp)
    ceil = _float_unary("ceil", math.CeilOp)

    def abs(self, x) -> tl.tensor:
        x = self.to_tensor(x)
        if x.dtype.is_floating():
            return self._emit(math.AbsFOp(x.handle), x.type)
        if x.dtype.is_int_signed():
            return self._emit(math.AbsIOp(x.handle), x.type)
        if x.dtype.is_int():
            return x
        raise SemanticError(
            f"tl.abs needs an int or a float, got {show(x)}; pass a value, not a pointer"
        )

    def fdiv(self, x, y, ieee_rounding) -> tl.tensor:
        x, y = self.to_tensor(x), self.to_tensor(y)
        if not (x.dtype.is_floating() and y.dtype.is_floating()):
            raise SemanticError(
                f"tl.fdiv needs float operands, got {show(x)} and {show(y)}; use `/` for ints"
            )
        x, y = self._binary_operands(x, y, "tl.fdiv")
        if unwrap(ieee_rounding) and (x.dtype.is_fp32() or x.dtype.is_fp64()):
            # correctly rounded (div.rn); arith.divf is `/`, approximate for fp32 on the GPU
            # (narrower floats divide correctly rounded in fp32 either way)
            return self._emit(tt.PreciseDivFOp(x.handle, y.handle), x.type)
        return self._arith("divf", x, y)

    def div_rn(self, x, y) -> tl.tensor:
        x, y = self._binary_operands(self.to_tensor(x), self.to_tensor(y), "tl.div_rn")
        if not x.dtype.is_fp32():
            raise SemanticError(
                f"tl.div_rn needs fp32 operands, got {show(x)}; convert with .to(tl.float32)"
            )
        return self._emit(tt.PreciseDivFOp(x.handle, y.handle), x.type)

    def fma(self, x, y, z) -> tl.tensor:
        x, y, z = self.to_tensor(x), self.to_tensor(y), self.to_tensor(z)
        z, x, y = self._promote_three(z, x, y, "tl.fma")
        x, y, z = self._broadcast_all(x, y, z)
        if not x.dtype.is_floating():
            raise SemanticError(
                f"tl.fma needs float operands, got {show(x)}; use x * y + z for ints"
            )
        return self._emit(math.FmaOp(x.handle, y.handle, z.handle), x.type)

    def extern_elementwise(self, args: list, extern: tl.ExternSymbols) -> tl.tensor | None:
        """`extern`'s function for the arguments' dtype on each element (numbers take that
        dtype, shapes broadcast), or None where it has none: the runtime arguments must share
        one dtype `extern.symbols` names, and the rest be numbers."""
        tensors = [a for a in args if isinstance(a, tl.tensor)]
        if not tensors or not all(isinstance(a, tl.tensor) or is_number(a) for a in args):
            return None
        dtype = tensors[0].dtype
        symbol = extern.symbols.get(dtype.name)
        if symbol is None or any(t.dtype != dtype for t in tensors):
            return None
        operands = self._broadcast_all(
            *(a if isinstance(a, tl.tensor) else self._constant(python_value(a), dtype) for a in args)
        )
        ty = operands[0].type
        op = tt.ExternElementwiseOp([o.handle for o in operands], to_ir_type(ty), extern.library, symbol)
        return self._emit(op, ty)

    def umulhi(self, x, y) -> tl.tensor:
        x, y = self.to_tensor(x), self.to_tensor(y)
        for v in (x, y):
            if v.dtype.name not in ("int32", "int64", "uint32", "uint64"):
                raise SemanticError(
                    f"tl.umulhi needs 32- or 64-bit integers, got {show(v)}; convert with "
                    ".to(tl.uint32) or .to(tl.uint64)"
                )
        x, y = self._binary_operands(x, y, "tl.umulhi")
        return self._emit(tt.MulhiUIOp(x.handle, y.handle), x.type)
