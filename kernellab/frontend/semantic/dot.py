"""tl.dot: the operand checks and result types of Triton's matrix product."""

from __future__ import annotations

from kernellab.frontend.errors import SemanticError
from kernellab.frontend.semantic.base import SemanticBase
from kernellab.frontend.values import python_value, show, unwrap
from kernellab.ir import tt
from kernellab.language import core as tl

_DOT_DTYPES = ("int8", "uint8", "fp16", "bf16", "fp32", "fp64")


class DotMixin(SemanticBase):
    """tl.dot."""

    def dot(
        self,
        input,
        other,
        acc,
        input_precision,
        allow_tf32,
        max_num_imprecise_acc,
        out_dtype,
    ) -> tl.tensor:
        a, b = self._block(input, "tl.dot"), self._block(other, "tl.dot")
        precision, allow_tf32 = unwrap(input_precision), unwrap(allow_tf32)
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
                f"tl.dot needs two 2-D (or two 3-D batched) blocks, got {show(a)} and {show(b)}; "
                "reshape them"
            )
        both_fp8 = a.dtype.is_fp8() and b.dtype.is_fp8()
        if not both_fp8 and (a.dtype.name not in _DOT_DTYPES or a.dtype != b.dtype):
            raise SemanticError(
                "tl.dot operands must share one dtype among int8, fp16, bf16, fp32, fp64 (or both "
                "be fp8), "
                f"got {show(a)} and {show(b)}; convert with .to(...)"
            )
        if a.shape[-1] != b.shape[-2] or (len(a.shape) == 3 and a.shape[0] != b.shape[0]):
            raise SemanticError(
                f"tl.dot shapes {a.shape} and {b.shape} do not match: the inner dimensions "
                f"({a.shape[-1]} and {b.shape[-2]})"
                " must be equal" + (" and so must the batch sizes" if len(a.shape) == 3 else "")
            )
        n, k = b.shape[-1], a.shape[-1]
        if a.dtype.is_int():
            if a.dtype != tl.int8:
                raise SemanticError(
                    f"integer tl.dot supports int8 only, got {show(a)}; convert both operands "
                    "with .to(tl.int8)"
                )
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
        if unwrap(acc) is None:
            acc_t = self._constant(0, ret_elem, ret_ty.shape)
        else:
            acc_t = self.to_tensor(unwrap(acc))
            if acc_t.type != ret_ty:
                raise SemanticError(
                    f"the accumulator of tl.dot is {show(acc_t)} but the product of {show(a)} "
                    f"and {show(b)} is {show(ret_ty)}; make acc match"
                )
        imprecise = python_value(max_num_imprecise_acc) or 0
        if a.dtype.is_fp8() and imprecise > k:
            raise SemanticError(
                f"max_num_imprecise_acc ({imprecise}) must be at most K ({k}); lower it"
            )
        return self._emit(tt.DotOp(a.handle, b.handle, acc_t.handle, precision, imprecise), ret_ty)
