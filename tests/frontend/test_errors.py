"""Rejected kernels: each error names the reason, the line, and puts the caret under the culprit.

Every case is a small kernel with one mistake. `expect_error` compiles it and checks the error's
class, its message (a regex), its line, and its column (where `at`, a snippet of the bad
expression, starts on that line), so a test fails if the caret moves off the expression.
"""

from __future__ import annotations

import inspect
import re

import pytest

import kernellab.language as tl
from kernellab.frontend import CompilationError, generate_ttir
from kernellab.frontend.errors import (
    CompileTimeAssertionFailure,
    SemanticError,
    UnsupportedLanguageConstruct,
)
from kernellab.language.core import KernelFunction, kernel_function


def expect_error(
    fn, signature, match, at, constexprs=None, cls=CompilationError, nth=0, source=None
):
    """Compile `fn`; assert a `cls` error matching `match` at the `nth` occurrence of `at` in
    the source of `source` (default: `fn` itself)."""
    with pytest.raises(cls) as info:
        generate_ttir(KernelFunction(fn), signature, constexprs or {})
    error = info.value
    source = source or fn
    lines, start = inspect.getsourcelines(source)
    hits = [(i, line.index(at)) for i, line in enumerate(lines) if at in line]
    assert hits, f"{at!r} is not in the source of {source.__name__}"
    index, col = hits[nth]
    assert re.search(match, error.message), f"{error.message!r} does not match {match!r}"
    assert (error.line, error.col) == (start + index, col), str(error)
    assert error.filename == inspect.getsourcefile(source)
    rendered = str(error).splitlines()
    assert rendered[0] == f"{error.filename}:{error.line}:{error.col + 1}:"
    caret = next(line for line in rendered if line.strip().startswith("^"))
    code = rendered[rendered.index(caret) - 1]
    assert code[caret.index("^") :].startswith(at), str(error)
    return error


# ------------------------------------------------------------------------ rendering


def test_rendering_shows_line_caret_reason_and_notes():
    error = CompilationError(
        "cannot add shapes (128,) and (64,)",
        "k.py",
        7,
        12,
        "        z = x + y",
        ["x: fp32[128]"],
        17,
    )
    assert str(error).splitlines() == [
        "k.py:7:13:",
        "    z = x + y",
        "        ^~~~~",
        "CompilationError: cannot add shapes (128,) and (64,)",
        "  note: x: fp32[128]",
    ]
    assert error._render_traceback_() == str(error).splitlines()
    assert SemanticError("bad", ["n"]).notes == ["n"]


# -------------------------------------------------------------------- unsupported syntax


def uses_with(x_ptr):
    with open("f") as f:  # noqa: F841
        tl.store(x_ptr, 1)


def uses_lambda(x_ptr):
    f = lambda v: v + 1
    tl.store(x_ptr, f(1))


def uses_try(x_ptr):
    try:
        tl.store(x_ptr, 1)
    except Exception:  # noqa: BLE001, S110
        pass


def uses_list_comprehension(x_ptr):
    values = [i for i in range(4)]
    tl.store(x_ptr, values[0])


def exits_loop_early(x_ptr, n):
    for i in range(n):
        break


@pytest.mark.parametrize(
    "fn, match, at",
    [
        (uses_with, r"`with` blocks are not supported", "with open"),
        (uses_lambda, r"lambda is not supported.*@kl.jit", "lambda v"),
        (uses_try, r"try/except is not supported", "try:"),
        (uses_list_comprehension, r"list comprehensions are not supported.*static_range", "[i for"),
        (exits_loop_early, r"`break` is not supported", "break"),
    ],
)
def test_unsupported_syntax(fn, match, at):
    signature = {"x_ptr": "*i32", "n": "i32"}
    signature = {k: v for k, v in signature.items() if k in inspect.signature(fn).parameters}
    expect_error(fn, signature, match, at, cls=UnsupportedLanguageConstruct)


# ----------------------------------------------------------------- shapes and dtypes


def zeros_runtime_shape(x_ptr, n):
    acc = tl.zeros((n,), dtype=tl.float32)
    tl.store(x_ptr, acc)


def test_non_constexpr_shape():
    expect_error(
        zeros_runtime_shape,
        {"x_ptr": "*fp32", "n": "i32"},
        r"(?i)shape.*(constexpr|compile-time)",
        "tl.zeros",
    )


def arange_not_power_of_two(x_ptr):
    offs = tl.arange(0, 100)
    tl.store(x_ptr + offs, offs)


def test_arange_needs_a_power_of_two():
    expect_error(
        arange_not_power_of_two, {"x_ptr": "*i32"}, r"power of 2|power of two", "tl.arange"
    )


def mismatched_shapes(x_ptr):
    a = tl.arange(0, 128)
    b = tl.arange(0, 64)
    tl.store(x_ptr + b, a + b)


def test_mismatched_shapes_in_binary_op():
    expect_error(mismatched_shapes, {"x_ptr": "*i32"}, r"128.*64", "a + b")


def bad_broadcast(x_ptr):
    a = tl.arange(0, 32)
    b = tl.broadcast_to(a, (16,))
    tl.store(x_ptr + b, b)


def test_bad_broadcast():
    expect_error(bad_broadcast, {"x_ptr": "*i32"}, r"32.*16|16.*32", "tl.broadcast_to")


def store_wrong_shape(x_ptr):
    offs = tl.arange(0, 16)
    value = tl.zeros((32,), dtype=tl.float32)
    tl.store(x_ptr + offs, value)


def test_store_of_wrong_shape():
    expect_error(store_wrong_shape, {"x_ptr": "*fp32"}, r"32.*16|16.*32", "tl.store")


def mask_wrong_shape(x_ptr):
    offs = tl.arange(0, 16)
    mask = tl.arange(0, 8) < 4
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(x_ptr + offs, x)


def test_mask_shape_mismatch():
    expect_error(mask_wrong_shape, {"x_ptr": "*fp32"}, r"(?i)mask.*(8.*16|16.*8)", "tl.load")


def dot_shape_mismatch(a_ptr):
    a = tl.zeros((16, 32), dtype=tl.float16)
    b = tl.zeros((16, 16), dtype=tl.float16)
    c = tl.dot(a, b)
    tl.store(a_ptr + tl.arange(0, 16), tl.sum(c, axis=1))


def test_dot_shape_mismatch():
    expect_error(dot_shape_mismatch, {"a_ptr": "*fp32"}, r"32.*16|16.*32", "tl.dot")


def dot_dtype_mismatch(a_ptr):
    a = tl.zeros((16, 16), dtype=tl.float16)
    b = tl.zeros((16, 16), dtype=tl.float32)
    c = tl.dot(a, b)
    tl.store(a_ptr + tl.arange(0, 16), tl.sum(c, axis=1))


def test_dot_dtype_mismatch():
    expect_error(dot_dtype_mismatch, {"a_ptr": "*fp32"}, r"fp16.*fp32|fp32.*fp16", "tl.dot")


def reduce_bad_axis(x_ptr):
    x = tl.zeros((16, 16), dtype=tl.float32)
    tl.store(x_ptr, tl.sum(x, axis=2))


def test_reduction_axis_out_of_range():
    expect_error(reduce_bad_axis, {"x_ptr": "*fp32"}, r"(?i)axis.*2", "tl.sum")


def other_without_mask(x_ptr):
    x = tl.load(x_ptr + tl.arange(0, 16), other=0.0)
    tl.store(x_ptr + tl.arange(0, 16), x)


def test_other_without_mask():
    expect_error(other_without_mask, {"x_ptr": "*fp32"}, r"(?i)other.*mask", "tl.load")


# ----------------------------------------------------------------------- control flow


def carried_changes_type(x_ptr, n):
    acc = 0
    for i in range(n):
        acc = acc + 0.5
    tl.store(x_ptr, acc)


def test_loop_carried_variable_changing_type():
    expect_error(
        carried_changes_type, {"x_ptr": "*fp32", "n": "i32"},
        r"loop-carried variable 'acc' changes type.*int32.*fp32", "acc = acc + 0.5",
    )  # fmt: skip


def branch_types_differ(x_ptr, n):
    y = 0
    if n > 0:
        y = 1.5
    tl.store(x_ptr, y)


def test_branches_yielding_different_types():
    expect_error(
        branch_types_differ, {"x_ptr": "*fp32", "n": "i32"}, r"'y' is fp32 .* but int32", "y = 1.5"
    )


def return_in_loop(x_ptr, n):
    for i in range(n):
        if i > 3:
            return
    tl.store(x_ptr, n)


def test_return_inside_a_loop():
    expect_error(
        return_in_loop, {"x_ptr": "*i32", "n": "i32"}, r"`return` inside a loop", "return", nth=1
    )


def static_range_runtime_bound(x_ptr, n):
    for i in tl.static_range(n):
        tl.store(x_ptr + i, i)


def test_static_range_needs_constexpr_bounds():
    expect_error(
        static_range_runtime_bound,
        {"x_ptr": "*i32", "n": "i32"},
        r"static_range.*compile-time",
        "tl.static_range(n)",
    )


def block_condition(x_ptr):
    x = tl.load(x_ptr + tl.arange(0, 16))
    if x > 0:
        tl.store(x_ptr, 1.0)


def test_if_on_a_block():
    expect_error(
        block_condition,
        {"x_ptr": "*fp32"},
        r"must be a scalar.*fp32|must be a scalar.*int1",
        "x > 0",
    )


def while_true(x_ptr):
    while True:
        tl.store(x_ptr, 1)


def test_while_true_never_ends():
    expect_error(while_true, {"x_ptr": "*i32"}, r"always true", "True")


# ------------------------------------------------------------------------------ names


def undefined_name(x_ptr):
    offs = tl.arange(0, 16)
    tl.store(x_ptr + ofs, offs)  # noqa: F821


def test_undefined_name():
    expect_error(
        undefined_name, {"x_ptr": "*i32"}, r"name 'ofs' is not defined; did you mean 'offs'", "ofs,"
    )


def loop_local_used_after(x_ptr, n):
    for i in range(n):
        last = i
    tl.store(x_ptr, last)


def test_name_defined_only_in_a_loop():
    error = expect_error(
        loop_local_used_after, {"x_ptr": "*i32", "n": "i32"}, r"name 'last' is not defined", "last)"
    )
    assert "only assigned inside the loop" in error.notes[0]


def unknown_tl_function(x_ptr):
    tl.store(x_ptr, tl.exponential(1.0))


def test_unknown_tl_function():
    expect_error(
        unknown_tl_function, {"x_ptr": "*fp32"}, r"tl.exponential does not exist", "tl.exponential"
    )


def plain_helper(x):
    return x + 1


def calls_plain_function(x_ptr):
    tl.store(x_ptr, plain_helper(1))


def test_calling_a_non_jit_function():
    expect_error(
        calls_plain_function,
        {"x_ptr": "*i32"},
        r"plain_helper is a plain Python function.*@kl.jit",
        "plain_helper(",
    )


@kernel_function
def two_args(a, b):
    return a + b


def wrong_arg_count(x_ptr):
    tl.store(x_ptr, two_args(1, 2, 3))


def test_wrong_argument_count():
    expect_error(
        wrong_arg_count,
        {"x_ptr": "*i32"},
        r"wrong arguments for two_args\(a, b\).*too many",
        "two_args(",
    )


def simple_kernel(x_ptr, n):
    tl.store(x_ptr, n)


def test_unsupported_argument_type():
    expect_error(
        simple_kernel, {"x_ptr": "*i32", "n": "tensor"}, r"unknown type 'tensor' in signature", "n)"
    )
    expect_error(
        simple_kernel,
        {"x_ptr": "*i32", "n": [1, 2]},
        r"unsupported argument type \[1, 2\] for 'n'",
        "n)",
    )


MUTABLE = [1, 2, 3]


def reads_mutable_global(x_ptr):
    tl.store(x_ptr, MUTABLE[0])


def test_mutable_global():
    expect_error(
        reads_mutable_global,
        {"x_ptr": "*i32"},
        r"global 'MUTABLE' is a list.*tl.constexpr",
        "MUTABLE",
    )


def assigns_constexpr(x_ptr, n, BLOCK: tl.constexpr):
    BLOCK = n * 2
    tl.store(x_ptr, BLOCK)


def test_assigning_a_runtime_value_to_a_constexpr_parameter():
    expect_error(
        assigns_constexpr,
        {"x_ptr": "*i32", "n": "i32"},
        r"'BLOCK' is a tl.constexpr",
        "BLOCK =",
        constexprs={"BLOCK": 4},
    )


def returns_value(x_ptr):
    return 1


def test_kernel_returning_a_value():
    expect_error(returns_value, {"x_ptr": "*i32"}, r"a kernel cannot return a value", "return 1")


def indexes_tensor(x_ptr):
    offs = tl.arange(0, 16)
    tl.store(x_ptr, offs[3])


def test_integer_index_on_a_tensor():
    expect_error(indexes_tensor, {"x_ptr": "*i32"}, r"only be indexed with None", "offs[3]")


# ------------------------------------------------------------------------- assertions


def static_assert_fails(x_ptr, BLOCK: tl.constexpr):
    tl.static_assert(BLOCK % 16 == 0, "BLOCK must be a multiple of 16")
    tl.store(x_ptr, BLOCK)


def test_static_assert_failure():
    expect_error(
        static_assert_fails, {"x_ptr": "*i32"}, r"BLOCK must be a multiple of 16",
        "tl.static_assert",
        constexprs={"BLOCK": 24}, cls=CompileTimeAssertionFailure,
    )  # fmt: skip


def assert_constexpr(x_ptr, BLOCK: tl.constexpr):
    assert BLOCK > 32, "too small"


def test_assert_on_a_constexpr_is_checked_at_compile_time():
    expect_error(
        assert_constexpr, {"x_ptr": "*i32"}, r"assertion `BLOCK > 32` failed: too small",
        "BLOCK > 32",
        constexprs={"BLOCK": 16}, cls=CompileTimeAssertionFailure,
    )  # fmt: skip


# ---------------------------------------------------------------------- called functions


@kernel_function
def bad_helper(x):
    return x + undefined_thing  # noqa: F821


def calls_bad_helper(x_ptr):
    tl.store(x_ptr, bad_helper(1))


def test_error_inside_a_called_function_points_there_and_notes_the_call():
    error = expect_error(
        calls_bad_helper, {"x_ptr": "*i32"}, r"name 'undefined_thing' is not defined",
        "undefined_thing", source=bad_helper.fn,
    )  # fmt: skip
    assert error.notes[-1].startswith("in bad_helper, called from")
    assert f":{inspect.getsourcelines(calls_bad_helper)[1] + 1}:" in error.notes[-1]
