"""Semantic rules, tested directly: promotion, broadcasting, casts, checks and their messages.

Each test builds IR into the body of a `tt.func` whose arguments have the given language types,
then checks result types, the printed IR, or the SemanticError raised for a bad kernel.
"""

from __future__ import annotations

import re

import pytest
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Region

import kernellab.language as language
from kernellab.frontend.builder import IRBuilder
from kernellab.frontend.errors import SemanticError
from kernellab.frontend.semantic import Semantic
from kernellab.frontend.types import to_ir_type
from kernellab.frontend.values import bind_to_builtin
from kernellab.ir import print_module, tt
from kernellab.language import core as tl

DT = {
    "i1": tl.int1,
    "i8": tl.int8,
    "i16": tl.int16,
    "i32": tl.int32,
    "i64": tl.int64,
    "u8": tl.uint8,
    "u16": tl.uint16,
    "u32": tl.uint32,
    "u64": tl.uint64,
    "f8e4": tl.float8e4nv,
    "f8e5": tl.float8e5,
    "f16": tl.float16,
    "bf16": tl.bfloat16,
    "f32": tl.float32,
    "f64": tl.float64,
}


class CalledAsInAKernel:
    """A Semantic whose `tl` builtins are called as the frontend calls them: the arguments bound
    to the builtin's parameters, the language's defaults filled in."""

    def __init__(self, semantic: Semantic):
        self.semantic = semantic

    def __getattr__(self, name: str):
        method = getattr(self.semantic, name)
        builtin = getattr(language, name, None)
        if not hasattr(builtin, "__kernellab_builtin__"):
            return method

        def call(*args, **kwargs):
            arguments = bind_to_builtin(builtin, args, kwargs)
            return method(*arguments.args, **arguments.kwargs)

        return call


class Kernel:
    """A `tt.func` under construction: `.s` is its Semantic, `.args` its arguments."""

    def __init__(self, *arg_types: tl.dtype, call_function=None):
        block = Block(arg_types=[to_ir_type(t) for t in arg_types])
        self.func = tt.FuncOp("k", ([to_ir_type(t) for t in arg_types], []), Region(block))
        self.module = ModuleOp([self.func])
        self.s = CalledAsInAKernel(Semantic(IRBuilder(block), call_function))
        self.args = [tl.tensor(a, t) for a, t in zip(block.args, arg_types)]

    def block(self, dtype: tl.dtype, shape=(128,)) -> tl.tensor:
        """A block of `dtype` loaded from a new pointer argument."""
        ptr = self.new_arg(tl.pointer_type(dtype))
        offs = self.s.arange(0, 1)
        ptr = self.s.broadcast_to(self.s.add(ptr, offs), shape) if shape else ptr
        return self.s.load(ptr)

    def new_arg(self, ty: tl.dtype) -> tl.tensor:
        block = self.func.body.block
        arg = block.insert_arg(to_ir_type(ty), len(block.args))
        return tl.tensor(arg, ty)

    def ir(self) -> str:
        """The module's text, after checking that it verifies (with a `tt.return` appended)."""
        block = self.func.body.block
        self.func.function_type = self.func.function_type.from_lists(
            [a.type for a in block.args], []
        )
        ret = tt.ReturnOp()
        block.add_op(ret)
        try:
            self.module.verify()
            return print_module(self.module)
        finally:
            block.detach_op(ret)


def result(op, a, b):
    """dtype of `a <op> b` where a/b are dtype keys (a block of that type) or Python values."""
    k = Kernel()
    lhs = k.block(DT[a]) if isinstance(a, str) else a
    rhs = k.block(DT[b]) if isinstance(b, str) else b
    out = getattr(k.s, op)(lhs, rhs)
    k.ir()
    return out.dtype


# ------------------------------------------------------------------------------ promotion

# Triton's table: integer promotion by width, unsigned wins ties; fp16 wins over bf16 (Triton
# checks fp16 first); any int with a float -> the float, except bf16 with a non-bf16 -> fp32;
# two different fp8 -> fp16.
TENSOR_PROMOTION = [
    ("i8", "i16", tl.int16),
    ("i32", "u32", tl.uint32),
    ("u32", "i64", tl.int64),
    ("u8", "i32", tl.int32),
    ("u64", "i8", tl.uint64),
    ("i1", "i8", tl.int8),
    ("i1", "u16", tl.uint16),
    ("u16", "i16", tl.uint16),
    ("i64", "u64", tl.uint64),
    ("f16", "bf16", tl.float16),
    ("f16", "f16", tl.float16),
    ("bf16", "bf16", tl.bfloat16),
    ("f16", "f32", tl.float32),
    ("f32", "f64", tl.float64),
    ("i32", "f16", tl.float16),
    ("i64", "bf16", tl.float32),
    ("u8", "f64", tl.float64),
    ("f8e4", "f8e5", tl.float16),
    ("f8e4", "f8e4", tl.float8e4nv),
    ("f8e5", "f16", tl.float16),
    ("f8e4", "f32", tl.float32),
]


@pytest.mark.parametrize("a,b,expected", TENSOR_PROMOTION, ids=lambda v: str(v))
def test_tensor_promotion_is_symmetric_and_matches_triton(a, b, expected):
    assert result("add", a, b) == expected
    assert result("add", b, a) == expected


# A Python scalar of the same or a lower kind (bool < int < float) keeps the tensor's type.
SCALAR_PROMOTION = [
    ("f16", 2.0, tl.float16),
    ("bf16", 3, tl.bfloat16),
    ("i8", 3, tl.int8),
    ("u8", True, tl.uint8),
    ("i32", 2.5, tl.float32),
    ("i1", 1, tl.int32),
    ("i64", 1.5, tl.float32),
    ("f64", 1.0, tl.float64),
    ("u32", 7, tl.uint32),
    ("i1", True, tl.int1),
    ("f8e5", 1.0, tl.float8e5),
]


@pytest.mark.parametrize("a,b,expected", SCALAR_PROMOTION, ids=lambda v: str(v))
def test_python_scalars_do_not_upcast_tensors(a, b, expected):
    assert result("mul", a, b) == expected
    assert result("mul", b, a) == expected


def test_runtime_scalar_arguments_do_promote():
    k = Kernel(tl.float32)
    x = k.block(tl.float16)
    assert k.s.add(x, k.args[0]).type == tl.block_type(tl.float32, [128])


@pytest.mark.parametrize(
    "a,b,expected",
    [
        ("i32", "i32", tl.float32),
        ("i8", "u8", None),
        ("f16", "f16", tl.float32),
        ("bf16", "bf16", tl.float32),
        ("f32", "f64", tl.float64),
        ("i32", "f16", tl.float32),
        ("f16", 2.0, tl.float32),
        ("i32", 2, tl.float32),
    ],
)
def test_true_division_is_float(a, b, expected):
    if expected is None:
        with pytest.raises(SemanticError, match="mixes signed and unsigned"):
            result("truediv", a, b)
    else:
        assert result("truediv", a, b) == expected


@pytest.mark.parametrize(
    "op,a,b,text",
    [
        ("floordiv", "i32", "i32", "arith.divsi"),
        ("floordiv", "u32", "u32", "arith.divui"),
        ("mod", "i16", "i16", "arith.remsi"),
        ("mod", "u8", "u8", "arith.remui"),
        ("mod", "f32", "f32", "arith.remf"),
        ("floordiv", "i8", 3, "arith.divsi"),
    ],
)
def test_floordiv_and_mod_are_c_style_like_triton(op, a, b, text):
    k = Kernel()
    out = getattr(k.s, op)(k.block(DT[a]), b if not isinstance(b, str) else k.block(DT[b]))
    assert text in k.ir()
    assert out.dtype == DT[a]


def test_floor_division_of_floats_is_rejected():
    k = Kernel()
    with pytest.raises(SemanticError, match=r"`//` needs integer operands, got fp32\[128\]"):
        k.s.floordiv(k.block(tl.float32), 2.0)


@pytest.mark.parametrize(
    "a,b,message",
    [
        ("i8", 300, "the constant 300 does not fit in int8"),
        ("u32", -1, "unsigned uint32 value and the negative constant -1"),
        ("i32", 2**40, "does not fit in int32"),
    ],
)
def test_python_constants_must_fit_the_tensor_type(a, b, message):
    with pytest.raises(SemanticError, match=message):
        result("add", a, b)


def test_shifts_follow_the_left_operand_signedness():
    k = Kernel()
    assert k.s.rshift(k.block(tl.int8), 1).dtype == tl.int8
    assert k.s.rshift(k.block(tl.uint16), 1).dtype == tl.uint16
    ir = k.ir()
    assert "arith.shrsi" in ir and "arith.shrui" in ir


def test_bitwise_ops_need_integers():
    with pytest.raises(
        SemanticError, match=r"`&` needs integer \(or boolean\) operands, got fp32\[128\]"
    ):
        result("and_", "f32", "f32")
    assert result("xor_", "i1", "i1") == tl.int1


def test_comparisons_produce_int1_with_signedness_aware_predicates():
    k = Kernel()
    assert k.s.less_than(k.block(tl.uint32), 5).type == tl.block_type(tl.int1, [128])
    k.s.less_than(k.block(tl.int32), 5)
    k.s.not_equal(k.block(tl.float32), 0.5)
    ir = k.ir()
    assert "arith.cmpi ult" in ir and "arith.cmpi slt" in ir and "arith.cmpf une" in ir


def test_unary_operators():
    k = Kernel()
    assert k.s.minus(k.block(tl.float16)).dtype == tl.float16
    assert k.s.invert(k.block(tl.uint8)).dtype == tl.uint8
    assert k.s.not_(k.block(tl.int32)).dtype == tl.int1
    with pytest.raises(
        SemanticError, match=r"`~` needs an integer or boolean operand, got fp32\[128\]"
    ):
        k.s.invert(k.block(tl.float32))
    k.ir()


# ---------------------------------------------------------------------------- broadcasting


def test_broadcasting_adds_leading_dims_and_stretches_ones():
    k = Kernel()
    row = k.block(tl.float32, (128,))
    col = k.block(tl.float32, (64, 1))
    out = k.s.add(row, col)
    assert out.shape == (64, 128)
    ir = k.ir()
    assert "tt.expand_dims" in ir and "tensor<1x128xf32> -> tensor<64x128xf32>" in ir
    assert "tensor<64x1xf32> -> tensor<64x128xf32>" in ir


def test_incompatible_shapes_name_both_shapes():
    k = Kernel()
    with pytest.raises(
        SemanticError,
        match=r"shapes \(128,\) and \(64,\) cannot be broadcast together: dimension 0",
    ):
        k.s.add(k.block(tl.float32, (128,)), k.block(tl.float32, (64,)))


def test_scalars_are_splat_and_pointers_advance_with_addptr():
    k = Kernel(tl.pointer_type(tl.float32), tl.int32)
    offs = k.s.arange(0, 1024)
    ptrs = k.s.add(k.args[0], offs)
    k.s.less_than(offs, k.args[1])
    assert ptrs.type == tl.block_type(tl.pointer_type(tl.float32), [1024])
    ir = k.ir()
    assert "tt.make_range {end = 1024 : i32, start = 0 : i32} : tensor<1024xi32>" in ir
    assert "tt.splat %0 : !tt.ptr<f32> -> tensor<1024x!tt.ptr<f32>>" in ir
    assert "tt.addptr" in ir and "tt.splat %1 : i32 -> tensor<1024xi32>" in ir


def test_unsigned_offsets_are_widened_before_addptr():
    k = Kernel(tl.pointer_type(tl.float32), tl.uint32)
    k.s.add(k.args[0], k.args[1])
    assert "arith.extui %1 : i32 to i64" in k.ir()


@pytest.mark.parametrize(
    "lhs,rhs,message",
    [
        (tl.pointer_type(tl.float32), tl.float32, "cannot offset pointer"),
        (tl.pointer_type(tl.float32), tl.pointer_type(tl.float32), "cannot add two pointers"),
    ],
)
def test_bad_pointer_arithmetic(lhs, rhs, message):
    k = Kernel(lhs, rhs)
    with pytest.raises(SemanticError, match=message):
        k.s.add(*k.args)


# ---------------------------------------------------------------------------------- casts


@pytest.mark.parametrize(
    "src,dst,ops",
    [
        ("f32", "f16", ["arith.truncf"]),
        ("f16", "bf16", ["arith.extf", "arith.truncf"]),
        ("f32", "f8e4", ["tt.fp_to_fp", 'rounding = "rtne"']),
        ("f8e5", "f32", ["tt.fp_to_fp"]),
        ("u8", "f32", ["arith.uitofp"]),
        ("i8", "f32", ["arith.sitofp"]),
        ("i8", "i64", ["arith.extsi"]),
        ("u8", "i64", ["arith.extui"]),
        ("i64", "i16", ["arith.trunci"]),
        ("f32", "u32", ["arith.fptoui"]),
        ("i32", "i1", ["arith.cmpi ne"]),
        ("f32", "i1", ["arith.cmpf une"]),
        ("f16", "i32", ["arith.extf", "arith.fptosi"]),
    ],
)
def test_casts_use_triton_ops(src, dst, ops):
    k = Kernel()
    out = k.s.cast(k.block(DT[src]), DT[dst])
    assert out.type == tl.block_type(DT[dst], [128])
    ir = k.ir()
    for op in ops:
        assert op in ir


def test_same_width_integer_casts_emit_nothing():
    k = Kernel()
    x = k.block(tl.int32)
    assert k.s.cast(x, tl.uint32).handle is x.handle


def test_bitcast_and_its_errors():
    k = Kernel()
    x = k.block(tl.float32)
    assert k.s.to(x, tl.int32, bitcast=True).dtype == tl.int32
    assert "tt.bitcast" in k.ir()
    with pytest.raises(
        SemanticError, match=r"cannot bitcast fp32\[128\] to fp16: 32 bits vs 16 bits"
    ):
        k.s.to(x, tl.float16, bitcast=True)
    with pytest.raises(SemanticError, match="fp_downcast_rounding applies only"):
        k.s.to(x, tl.float64, fp_downcast_rounding="rtz")
    k.s.to(x, tl.float16, fp_downcast_rounding="rtz")
    assert 'rounding = "rtz"' in k.ir()


@pytest.mark.parametrize(
    "src,dst,hint",
    [
        (tl.pointer_type(tl.float32), tl.int32, "convert pointers to int64"),
        (tl.pointer_type(tl.float32), tl.float32, "pointers convert only to integers"),
        (tl.float8e4nv, tl.int32, "convert to a standard float type first"),
    ],
)
def test_impossible_conversions_say_what_to_do(src, dst, hint):
    k = Kernel(src)
    with pytest.raises(
        SemanticError, match=f"cannot convert {re.escape(str(src))} to {dst}; {hint}"
    ):
        k.s.cast(k.args[0], dst)


def test_to_tensor_types_python_values_like_triton():
    k = Kernel()
    values = [
        (True, tl.int1),
        (7, tl.int32),
        (2**31, tl.uint32),
        (-(2**40), tl.int64),
        (2**63, tl.uint64),
        (0.5, tl.float32),
        (1e300, tl.float64),
    ]
    for value, dtype in values:
        assert k.s.to_tensor(value).dtype == dtype
    with pytest.raises(SemanticError, match="does not fit in 64 bits"):
        k.s.to_tensor(2**64)
    k.ir()


# ---------------------------------------------------------------------------------- memory


def test_load_broadcasts_mask_and_casts_other():
    k = Kernel(tl.pointer_type(tl.float16))
    offs = k.s.arange(0, 64)
    ptrs = k.s.add(k.args[0], k.s.add(k.s.expand_dims(offs, 1), k.s.expand_dims(offs, 0)))
    mask = k.s.less_than(offs, 10)  # (64,) -> (64, 64)
    x = k.s.load(ptrs, mask=mask, other=0.0, cache_modifier=".cg", eviction_policy="evict_last")
    assert x.type == tl.block_type(tl.float16, [64, 64])
    ir = k.ir()
    assert "arith.constant dense<0.000000e+00> : tensor<64x64xf16>" in ir
    assert 'cache = ".cg"' in ir and 'evict = "evict_last"' in ir


@pytest.mark.parametrize(
    "kwargs,message",
    [
        ({"other": 0.0}, "`other` is the value of masked-off lanes, so it needs a mask"),
        ({"boundary_check": (0,)}, "belong to block pointers"),
        ({"cache_modifier": ".wb"}, "cache_modifier '.wb' is not supported"),
        ({"eviction_policy": "never"}, "eviction_policy 'never' is not supported"),
    ],
)
def test_load_rejects_bad_arguments(kwargs, message):
    k = Kernel(tl.pointer_type(tl.float32))
    ptrs = k.s.add(k.args[0], k.s.arange(0, 16))
    with pytest.raises(SemanticError, match=message):
        k.s.load(ptrs, **kwargs)


def test_mask_must_be_boolean_and_fit_the_pointer():
    k = Kernel(tl.pointer_type(tl.float32))
    offs = k.s.arange(0, 16)
    ptrs = k.s.add(k.args[0], offs)
    with pytest.raises(
        SemanticError, match=r"must be boolean \(tl.int1\), got int32\[16\]; compare it"
    ):
        k.s.load(ptrs, mask=offs)
    wide = k.s.less_than(k.s.add(k.s.expand_dims(offs, 1), offs), 4)
    with pytest.raises(
        SemanticError, match=r"of shape \(16, 16\) does not broadcast to the pointer shape \(16,\)"
    ):
        k.s.store(ptrs, 1.0, mask=wide)


def test_store_casts_and_broadcasts_values():
    k = Kernel(tl.pointer_type(tl.float16), tl.float32)
    ptrs = k.s.add(k.args[0], k.s.arange(0, 16))
    k.s.store(ptrs, k.args[1])
    ir = k.ir()
    assert "arith.truncf %1 : f32 to f16" in ir and "tt.splat" in ir and "tt.store" in ir
    with pytest.raises(
        SemanticError, match="tl.store needs a pointer or a block of pointers, got fp32"
    ):
        k.s.store(k.args[1], 1.0)


def test_booleans_go_through_memory_as_int8():
    k = Kernel(tl.pointer_type(tl.int1))
    ptrs = k.s.add(k.args[0], k.s.arange(0, 16))
    assert k.s.load(ptrs).dtype == tl.int1
    k.s.store(ptrs, True)
    ir = k.ir()
    assert "tensor<16x!tt.ptr<i1>> -> tensor<16x!tt.ptr<i8>>" in ir and "arith.cmpi ne" in ir


# --------------------------------------------------------------------------------- atomics


def test_atomics():
    k = Kernel(tl.pointer_type(tl.float32), tl.pointer_type(tl.int32), tl.pointer_type(tl.int8))
    fptrs = k.s.add(k.args[0], k.s.arange(0, 16))
    iptrs = k.s.add(k.args[1], k.s.arange(0, 16))
    assert k.s.atomic_add(fptrs, 1, sem="relaxed", scope="cta").dtype == tl.float32
    assert k.s.atomic_max(fptrs, 2.0).dtype == tl.float32
    assert k.s.atomic_or(iptrs, 3).dtype == tl.int32
    assert k.s.atomic_cas(k.args[1], 0, 1).dtype == tl.int32
    ir = k.ir()
    assert (
        "tt.atomic_rmw fadd, relaxed, cta" in ir
        and "tt.atomic_rmw umin" in ir
        and "tt.atomic_cas" in ir
    )
    with pytest.raises(SemanticError, match="tl.atomic_add does not support int8"):
        k.s.atomic_add(k.args[2], 1)
    with pytest.raises(SemanticError, match="tl.atomic_xor needs an integer pointer"):
        k.s.atomic_xor(fptrs, 1.0)
    with pytest.raises(
        SemanticError,
        match="sem 'weak' is not supported; use one of 'relaxed', 'acquire', 'release', "
        "'acq_rel' or leave it out",
    ):
        k.s.atomic_xchg(iptrs, 1, sem="weak")


# --------------------------------------------------------------------------- creation


@pytest.mark.parametrize(
    "start,end,message",
    [
        (0, 100, "has 100 elements, which is not a power of 2"),
        (8, 8, "end must be greater than start"),
        (0, 2**21, "more than 1048576 elements"),
        (0, 2**33, "does not fit in int32"),
    ],
)
def test_arange_checks(start, end, message):
    with pytest.raises(SemanticError, match=message):
        Kernel().s.arange(start, end)


def test_arange_needs_compile_time_bounds():
    k = Kernel(tl.int32)
    with pytest.raises(
        SemanticError, match="tl.arange bounds must be compile-time ints, got int32"
    ):
        k.s.arange(0, k.args[0])


def test_full_and_zeros():
    k = Kernel(tl.float32)
    assert k.s.zeros((16, 32), tl.float32).type == tl.block_type(tl.float32, [16, 32])
    assert k.s.full((8,), k.args[0], tl.float16).type == tl.block_type(tl.float16, [8])
    assert k.s.full((), 3, tl.int64).type == tl.int64
    assert "arith.constant dense<0.000000e+00> : tensor<16x32xf32>" in k.ir()
    with pytest.raises(
        SemanticError, match=r"tl.full shape \(16, 24\) has dimension 24, which is not a power of 2"
    ):
        k.s.full((16, 24), 0, tl.float32)
    with pytest.raises(SemanticError, match="tl.full shape must be compile-time ints, got fp32"):
        k.s.zeros((k.args[0],), tl.float32)


def test_program_id_axis():
    k = Kernel()
    assert k.s.num_programs(2).dtype == tl.int32
    with pytest.raises(SemanticError, match="tl.program_id axis must be 0, 1 or 2, got 3"):
        k.s.program_id(3)


# ------------------------------------------------------------------------------ shape ops


def test_shape_ops():
    k = Kernel()
    x = k.block(tl.float32, (4, 8, 16))
    assert k.s.reshape(x, 32, 16).shape == (32, 16)
    assert k.s.reshape(x, (512,)).shape == (512,)
    assert k.s.view(x, (16, 32)).shape == (16, 32)
    assert k.s.permute(x, 2, 0, 1).shape == (16, 4, 8)
    assert k.s.trans(k.s.reshape(x, 32, 16)).shape == (16, 32)
    assert k.s.expand_dims(k.s.reshape(x, 512), (0, 2)).shape == (1, 512, 1)
    a, b = k.s.split(k.s.join(x, 1.0))
    assert a.shape == b.shape == (4, 8, 16)
    assert k.s.cat(k.s.reshape(x, 512), k.s.reshape(x, 512), can_reorder=True).shape == (1024,)
    assert k.s.broadcast_to(k.s.reshape(x, 512), 4, 512).shape == (4, 512)
    k.ir()


@pytest.mark.parametrize(
    "call,message",
    [
        (
            lambda s, x: s.reshape(x, 8, 8),
            r"cannot reshape fp32\[4, 8, 16\] \(512 elements\) to \(8, 8\)",
        ),
        (
            lambda s, x: s.permute(x, 0, 0, 1),
            r"dims \(0, 0, 1\) are not a permutation of the 3 dimensions",
        ),
        (lambda s, x: s.expand_dims(x, 5), r"axis 5 is out of range for 4 dimensions"),
        (lambda s, x: s.split(x), "needs a last dimension of size 2"),
        (lambda s, x: s.cat(x, x), "needs can_reorder=True"),
        (
            lambda s, x: s.broadcast_to(x, 4, 8, 32),
            r"cannot broadcast fp32\[4, 8, 16\] to shape \(4, 8, 32\)",
        ),
    ],
)
def test_shape_op_errors(call, message):
    k = Kernel()
    with pytest.raises(SemanticError, match=message):
        call(k.s, k.block(tl.float32, (4, 8, 16)))


# ------------------------------------------------------------------------------------ math


def test_math_needs_fp32_or_fp64_as_in_triton():
    k = Kernel()
    assert k.s.exp(k.block(tl.float32)).dtype == tl.float32
    assert k.s.sqrt_rn(k.block(tl.float32)).dtype == tl.float32
    with pytest.raises(
        SemanticError, match=r"tl.exp needs fp32 or fp64, got fp16\[128\]; convert first"
    ):
        k.s.exp(k.block(tl.float16))
    with pytest.raises(SemanticError, match="tl.sqrt_rn needs fp32, got fp64"):
        k.s.sqrt_rn(k.block(tl.float64))
    k.ir()


def test_other_math():
    k = Kernel()
    assert k.s.abs(k.block(tl.int8)).dtype == tl.int8
    x = k.block(tl.uint32)
    assert k.s.abs(x) is x
    assert k.s.fdiv(k.block(tl.float32), k.block(tl.float16)).dtype == tl.float32
    assert k.s.umulhi(k.block(tl.uint32), 0xCD9E8D57).dtype == tl.uint32
    assert k.s.fma(k.block(tl.float32), 2.0, 1.0).dtype == tl.float32
    assert k.s.clamp(k.block(tl.float16), 0.0, 1.0).dtype == tl.float32  # Triton promotes here
    assert k.s.maximum(k.block(tl.float32), 0.0, propagate_nan="all").dtype == tl.float32
    assert k.s.where(k.block(tl.int1), 1.0, k.block(tl.float16)).dtype == tl.float16
    ir = k.ir()
    for op in (
        "math.absi",
        "tt.mulhiui",
        "math.fma",
        "tt.clampf",
        "arith.maximumf",
        "arith.select",
    ):
        assert op in ir
    with pytest.raises(SemanticError, match="tl.clamp works on floats"):
        k.s.clamp(k.block(tl.int32), 0, 1)
    with pytest.raises(
        SemanticError, match=r"tl.umulhi needs 32- or 64-bit integers, got int8\[128\]"
    ):
        k.s.umulhi(k.block(tl.int8), 3)


# ------------------------------------------------------------------------------ reductions


def test_sum_accumulates_narrow_types_like_triton():
    k = Kernel()
    assert k.s.sum(k.block(tl.int8), 0).dtype == tl.int32
    assert k.s.sum(k.block(tl.uint16), 0).dtype == tl.uint32
    assert k.s.sum(k.block(tl.bfloat16), 0).dtype == tl.float32
    assert k.s.sum(k.block(tl.float16), 0).dtype == tl.float16
    assert k.s.sum(k.block(tl.float16), 0, dtype=tl.float32).dtype == tl.float32
    assert k.s.max(k.block(tl.float16), 0).dtype == tl.float32
    assert k.s.min(k.block(tl.int8), 0).dtype == tl.int32
    assert k.s.xor_sum(k.block(tl.uint32), 0).dtype == tl.uint32
    k.ir()


def test_reduction_shapes_and_axes():
    k = Kernel()
    x = k.block(tl.float32, (8, 16))
    assert k.s.sum(x, 1).shape == (8,)
    assert k.s.sum(x, -2).shape == (16,)
    assert k.s.sum(x, 0, keep_dims=True).shape == (1, 16)
    assert k.s.sum(x).type == tl.float32
    assert k.s.max(x, None, keep_dims=True).shape == (1, 1)
    values, index = k.s.max(x, 1, return_indices=True)
    assert values.type == tl.block_type(tl.float32, [8]) and index.type == tl.block_type(
        tl.int32, [8]
    )
    assert k.s.argmin(x, 0, keep_dims=True).type == tl.block_type(tl.int32, [1, 16])
    assert k.s.argmax(x, None).type == tl.int32
    ir = k.ir()
    assert '"tt.reduce"' in ir and "tt.reduce.return" in ir and "arith.maxnumf" in ir
    with pytest.raises(
        SemanticError,
        match=r"tl.sum axis 2 is out of range for 2 dimensions of fp32\[8, 16\]; use an axis in \[-2, 2\)",
    ):
        k.s.sum(x, 2)
    with pytest.raises(SemanticError, match="tl.xor_sum needs integers"):
        k.s.xor_sum(x, 0)


def test_user_reduce_and_scan_call_the_combine_function():
    calls = []

    def call_function(fn, args, kwargs):
        calls.append((fn, [a.dtype for a in args]))
        return k.s.add(args[0], args[2]), k.s.maximum(args[1], args[3])

    k = Kernel(call_function=call_function)
    a, b = k.block(tl.float32, (8, 16)), k.block(tl.int32, (8, 16))
    total, biggest = k.s.reduce((a, b), 1, "combine")
    assert total.shape == biggest.shape == (8,)
    scanned = k.s.associative_scan((a, b), 0, "combine", reverse=True)
    assert scanned[0].type == a.type
    assert calls == [("combine", [tl.float32, tl.int32, tl.float32, tl.int32])] * 2
    ir = k.ir()
    assert "reverse = true" in ir and "tt.scan.return" in ir


def test_combine_function_must_return_the_input_types():
    k = Kernel(call_function=lambda fn, args, kwargs: k.s.cast(args[0], tl.float64))
    with pytest.raises(SemanticError, match="returned fp64 where fp32 was expected"):
        k.s.reduce(k.block(tl.float32), 0, "combine")


def test_cumulative_ops():
    k = Kernel()
    assert k.s.cumsum(k.block(tl.int8, (4, 16)), 1).type == tl.block_type(tl.int32, [4, 16])
    assert k.s.cumprod(k.block(tl.bfloat16), 0).dtype == tl.float32
    assert "arith.mulf" in k.ir()


# ------------------------------------------------------------------------------------- dot


def test_dot_types():
    k = Kernel()
    assert k.s.dot(
        k.block(tl.float16, (32, 16)), k.block(tl.float16, (16, 64))
    ).type == tl.block_type(tl.float32, [32, 64])
    assert (
        k.s.dot(
            k.block(tl.float16, (16, 16)), k.block(tl.float16, (16, 16)), out_dtype=tl.float16
        ).dtype
        == tl.float16
    )
    assert k.s.dot(k.block(tl.int8, (16, 32)), k.block(tl.int8, (32, 16))).dtype == tl.int32
    assert (
        k.s.dot(k.block(tl.float8e5, (16, 32)), k.block(tl.float8e4nv, (32, 16))).dtype
        == tl.float32
    )
    batched = k.s.dot(
        k.block(tl.float32, (2, 16, 32)), k.block(tl.float32, (2, 32, 16)), input_precision="ieee"
    )
    assert batched.shape == (2, 16, 16)
    acc = k.s.zeros((16, 16), tl.float32)
    assert (
        k.s.dot(k.block(tl.bfloat16, (16, 16)), k.block(tl.bfloat16, (16, 16)), acc).handle.op.c
        is acc.handle
    )
    ir = k.ir()
    assert 'input_precision = "tf32"' in ir and 'input_precision = "ieee"' in ir


@pytest.mark.parametrize(
    "a,b,kwargs,message",
    [
        (
            (32, 16),
            (32, 16),
            {},
            r"tl.dot shapes \(32, 16\) and \(32, 16\) do not match: the inner dimensions \(16 and 32\)",
        ),
        (
            (16, 16),
            (16, 16),
            {"input_precision": "bf16x9"},
            "input_precision 'bf16x9' is not supported",
        ),
        ((16, 16), (16, 16), {"out_dtype": tl.bfloat16}, "cannot produce bfloat16"),
        (
            (16, 16),
            (16, 16),
            {"acc": "wrong"},
            r"the accumulator of tl.dot is fp16\[16, 16\] but the product",
        ),
    ],
)
def test_dot_errors(a, b, kwargs, message):
    k = Kernel()
    if kwargs.get("acc") == "wrong":
        kwargs["acc"] = k.block(tl.float16, (16, 16))
    with pytest.raises(SemanticError, match=message):
        k.s.dot(k.block(tl.float16, a), k.block(tl.float16, b), **kwargs)


def test_dot_needs_one_dtype():
    k = Kernel()
    with pytest.raises(
        SemanticError, match=r"must share one dtype .* got fp16\[16, 16\] and fp32\[16, 16\]"
    ):
        k.s.dot(k.block(tl.float16, (16, 16)), k.block(tl.float32, (16, 16)))


# ------------------------------------------------------------------------ hints and debug


def test_hints_attach_attributes():
    k = Kernel(tl.int32)
    offs = k.s.multiple_of(k.s.arange(0, 16), 16)
    k.s.max_contiguous(offs, [16])
    k.s.multiple_of(k.args[0], 16)
    ir = k.ir()
    assert "tt.divisibility = dense<16> : tensor<1xi32>" in ir and "tt.contiguity = dense<16>" in ir
    assert "%0: i32 {tt.divisibility = 16 : i32}" in ir
    with pytest.raises(SemanticError, match="tl.max_constancy got 2 values"):
        k.s.max_constancy(offs, (1, 2))


def test_static_and_device_checks(capsys):
    k = Kernel(tl.int32)
    k.s.static_assert(tl.constexpr(True), "fine")
    with pytest.raises(SemanticError, match="static assertion failed: BLOCK too small"):
        k.s.static_assert(tl.constexpr(4) > 8, "BLOCK too small")
    with pytest.raises(SemanticError, match="use tl.device_assert for runtime checks"):
        k.s.static_assert(k.args[0])
    k.s.static_print("shape", tl.constexpr(16), k.args[0])
    assert capsys.readouterr().out == "shape 16 int32\n"
    k.s.device_print("pid", k.args[0])
    k.s.device_assert(k.s.greater_than(k.args[0], 0), "n must be positive", mask=True)
    ir = k.ir()
    assert 'tt.print " pid: "' in ir and "tt.assert" in ir and '"n must be positive"' in ir


def test_ir_types_are_signless():
    expected = {
        "i1": "i1", "i8": "i8", "i16": "i16", "i32": "i32", "i64": "i64",
        "u8": "i8", "u16": "i16", "u32": "i32", "u64": "i64",
        "f8e4": "f8E4M3FN", "f8e5": "f8E5M2", "f16": "f16", "bf16": "bf16", "f32": "f32",
        "f64": "f64",
    }  # fmt: skip
    assert {key: str(to_ir_type(dtype)) for key, dtype in DT.items()} == expected
    ptr = tl.block_type(tl.pointer_type(tl.bfloat16), [4, 8])
    assert str(to_ir_type(ptr)) == "tensor<4x8x!tt.ptr<bf16>>"
