"""Loads, stores and atomics through pointers and blocks of pointers.

Masks, `other` and stored values broadcast to the pointer block's shape but never grow it, and
are converted to the pointee type. Booleans live in memory as int8, so `*int1` pointers are
accessed as `*int8` and converted on the way in and out.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partialmethod

from kernellab.frontend.errors import SemanticError
from kernellab.frontend.semantic.base import SemanticBase
from kernellab.frontend.semantic.tiles import BlockPointer
from kernellab.frontend.types import to_ir_type
from kernellab.frontend.values import is_number, show, unwrap
from kernellab.ir import tt
from kernellab.language import core as tl

_LOAD_CACHE = (".ca", ".cg", ".cv")
_STORE_CACHE = (".wb", ".cg", ".cs", ".wt")
_EVICTION = ("evict_first", "evict_last")


class MemoryMixin(SemanticBase):
    """load, store and the atomic_* builtins."""

    # -------------------------------------------------------------------- memory

    def _pointer(self, pointer, what: str) -> tl.tensor:
        if not (isinstance(pointer, tl.tensor) and pointer.dtype.is_ptr()):
            raise SemanticError(
                f"{what} needs a pointer or a block of pointers, got {show(pointer)}; "
                "add offsets to a pointer argument, e.g. x_ptr + offs"
            )
        return pointer

    @staticmethod
    def _option(value, allowed: Sequence[str], what: str) -> str:
        """A string option, "" when not given; `allowed` lists the values besides ""."""
        value = unwrap(value) or ""
        if value and value not in allowed:
            raise SemanticError(
                f"{what} {value!r} is not supported; use one of "
                f"{', '.join(repr(a) for a in allowed)} or leave it out"
            )
        return value

    def _operand_for(self, ptr: tl.tensor, value, elem: tl.dtype, role: str) -> tl.tensor:
        """`value` (Python number or tensor) as `elem`, with the shape of the pointer block."""
        if is_number(value):
            return self._python_constant(value, elem, ptr.shape)
        value = self.to_tensor(value)
        if not ptr.type.is_block() and value.type.is_block():
            raise SemanticError(
                f"{role} {show(value)} is a block but the pointer is a single {ptr.dtype}; use a "
                "block of pointers (ptr + offsets)"
            )
        return self._fit_to(self._cast(value, elem), ptr.shape, role)

    def _mask_for(self, ptr: tl.tensor, mask, what: str) -> tl.tensor | None:
        if unwrap(mask) is None:
            return None
        mask = self.to_tensor(unwrap(mask))
        if not mask.dtype.is_bool():
            raise SemanticError(
                f"the mask of {what} must be boolean (tl.int1), got {show(mask)}; compare it, "
                "e.g. mask=offs < n"
            )
        if not ptr.type.is_block() and mask.type.is_block():
            raise SemanticError(
                f"the mask {show(mask)} of {what} is a block but the pointer is a single "
                f"{ptr.dtype}; use a block of pointers"
            )
        return self._fit_to(mask, ptr.shape, f"the mask of {what}")

    def _int8_view(self, ptr: tl.tensor) -> tl.tensor:
        """Booleans live in memory as int8: view `*i1` pointers as `*i8`."""
        return self._cast(ptr, tl.pointer_type(tl.int8, ptr.dtype.address_space))

    def load(
        self,
        pointer,
        mask,
        other,
        boundary_check,
        padding_option,
        cache_modifier,
        eviction_policy,
        volatile,
    ) -> tl.tensor:
        access = {
            "cache": self._option(cache_modifier, _LOAD_CACHE, "cache_modifier"),
            "evict": self._option(eviction_policy, _EVICTION, "eviction_policy"),
            "volatile": bool(unwrap(volatile)),
        }
        if isinstance(pointer, BlockPointer):
            if unwrap(mask) is not None or unwrap(other) is not None:
                raise SemanticError(
                    "a load through a block pointer takes boundary_check and padding_option, "
                    "not mask and other; e.g. boundary_check=(0, 1), padding_option=\"zero\""
                )
            return self._block_pointer_load(pointer, boundary_check, padding_option, **access)
        ptr = self._pointer(pointer, "tl.load")
        if unwrap(boundary_check) or unwrap(padding_option):
            raise SemanticError(
                "boundary_check and padding_option belong to block pointers (tl.make_block_ptr); "
                "mask a load through ordinary pointers instead (mask=offs < n, other=0)"
            )
        return self._pointer_load(ptr, self._mask_for(ptr, mask, "tl.load"), other, **access)

    def _pointer_load(self, ptr, mask_t, other, cache, evict, volatile=False) -> tl.tensor:
        if mask_t is None and unwrap(other) is not None:
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
            if unwrap(other) is None
            else self._operand_for(ptr, unwrap(other), elem, "`other` of tl.load")
        )
        ty = self._like(ptr, elem)
        op = tt.LoadOp(
            ptr.handle,
            to_ir_type(ty),
            mask_t.handle if mask_t is not None else None,
            other_t.handle if other_t is not None else None,
            cache,
            evict,
            volatile,
        )
        out = self._emit(op, ty)
        return self._cast(out, tl.int1) if is_bool else out

    def store(
        self, pointer, value, mask, boundary_check, cache_modifier, eviction_policy
    ) -> None:
        access = {
            "cache": self._option(cache_modifier, _STORE_CACHE, "cache_modifier"),
            "evict": self._option(eviction_policy, _EVICTION, "eviction_policy"),
        }
        if isinstance(pointer, BlockPointer):
            if unwrap(mask) is not None:
                raise SemanticError(
                    "a store through a block pointer takes boundary_check, not mask; e.g. "
                    "boundary_check=(0, 1)"
                )
            self._block_pointer_store(pointer, value, boundary_check, **access)
            return
        ptr = self._pointer(pointer, "tl.store")
        if unwrap(boundary_check):
            raise SemanticError(
                "boundary_check belongs to block pointers (tl.make_block_ptr); mask a store "
                "through ordinary pointers instead (mask=offs < n)"
            )
        self._pointer_store(ptr, value, self._mask_for(ptr, mask, "tl.store"), **access)

    def _pointer_store(self, ptr, value, mask_t, cache, evict) -> None:
        elem = ptr.dtype.element_ty
        if elem.is_bool():
            ptr, elem = self._int8_view(ptr), tl.int8
        value_t = self._operand_for(ptr, unwrap(value), elem, "the value of tl.store")
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

    def _ordering(self, sem, scope) -> tuple[str, str]:
        """An atomic's memory semantics and scope; Triton's defaults are acq_rel and gpu."""
        sem = self._option(sem, tt.MEMORY_SEMANTICS, "sem") or "acq_rel"
        return sem, self._option(scope, tt.MEMORY_SCOPES, "scope") or "gpu"

    def _atomic_operands(self, op: str, pointer, val, mask, sem, scope):
        ptr = self._pointer(pointer, f"tl.atomic_{op}")
        sem, scope = self._ordering(sem, scope)
        elem = ptr.dtype.element_ty
        if (elem.is_fp16() or elem.is_bf16()) and op != "add":
            raise SemanticError(f"tl.atomic_{op} does not support {elem}; use a 32-bit type")
        if elem.primitive_bitwidth < 16 or (elem.is_int() and elem.primitive_bitwidth < 32):
            raise SemanticError(f"tl.atomic_{op} does not support {elem}; use a 32- or 64-bit type")
        val_t = self._operand_for(ptr, unwrap(val), elem, f"the value of tl.atomic_{op}")
        mask_t = self._mask_for(ptr, mask, f"tl.atomic_{op}")
        return ptr, val_t, mask_t, sem, scope

    def _rmw(self, kind: str, ptr, val, mask, sem, scope) -> tl.tensor:
        op = tt.AtomicRMWOp(
            kind, ptr.handle, val.handle, mask.handle if mask is not None else None, sem, scope
        )
        return self._emit(op, val.type)

    def atomic_add(self, pointer, val, mask, sem, scope) -> tl.tensor:
        ptr, val, mask, sem, scope = self._atomic_operands("add", pointer, val, mask, sem, scope)
        return self._rmw("fadd" if val.dtype.is_floating() else "add", ptr, val, mask, sem, scope)

    def atomic_xchg(self, pointer, val, mask, sem, scope) -> tl.tensor:
        return self._rmw("exch", *self._atomic_operands("xchg", pointer, val, mask, sem, scope))

    def _int_atomic(self, op: str, pointer, val, mask, sem, scope) -> tl.tensor:
        ptr, val, mask, sem, scope = self._atomic_operands(op, pointer, val, mask, sem, scope)
        if not val.dtype.is_int():
            raise SemanticError(
                f"tl.atomic_{op} needs an integer pointer, got {show(ptr)}; bitcast the pointer "
                "to an integer type, e.g. ptr.to(tl.pointer_type(tl.int32))"
            )
        return self._rmw(op, ptr, val, mask, sem, scope)

    atomic_and = partialmethod(_int_atomic, "and")
    atomic_or = partialmethod(_int_atomic, "or")
    atomic_xor = partialmethod(_int_atomic, "xor")

    def _minmax_atomic(self, op: str, pointer, val, mask, sem, scope) -> tl.tensor:
        ptr, val, mask, sem, scope = self._atomic_operands(op, pointer, val, mask, sem, scope)
        elem = val.dtype
        if elem.is_int():
            return self._rmw(op if elem.is_int_signed() else "u" + op, ptr, val, mask, sem, scope)
        if not (elem.is_fp32() or elem.is_fp64()):
            raise SemanticError(
                f"tl.atomic_{op} supports integers, fp32 and fp64, not {elem}; keep the data "
                "in fp32"
            )
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

    atomic_max = partialmethod(_minmax_atomic, "max")
    atomic_min = partialmethod(_minmax_atomic, "min")

    def atomic_cas(self, pointer, cmp, val, sem, scope) -> tl.tensor:
        ptr = self._pointer(pointer, "tl.atomic_cas")
        sem, scope = self._ordering(sem, scope)
        elem = ptr.dtype.element_ty
        if elem.primitive_bitwidth not in (16, 32, 64):
            raise SemanticError(
                f"tl.atomic_cas supports 16-, 32- and 64-bit elements, not {elem}; use a pointer "
                "to a wider type"
            )
        cmp_t = self._operand_for(ptr, unwrap(cmp), elem, "`cmp` of tl.atomic_cas")
        val_t = self._operand_for(ptr, unwrap(val), elem, "`val` of tl.atomic_cas")
        return self._emit(
            tt.AtomicCASOp(ptr.handle, cmp_t.handle, val_t.handle, sem, scope), val_t.type
        )
