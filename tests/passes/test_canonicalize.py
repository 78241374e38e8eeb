"""Golden tests for canonicalize: folds, exact identities only, trivial control flow."""

from __future__ import annotations

import re

import pytest

from kernellab.passes import canonicalize
from tests.filecheck import check, check_not

from .ir import run_on_body


def fold(body: str, args: str = "", results: str = "", changed: bool | None = True) -> str:
    return run_on_body(canonicalize, body, args, results, changed)


# -------------------------------------------------------------------------- integer folds


def test_i8_arithmetic_wraps():
    ir = fold(
        """
    %a = arith.constant 100 : i8
    %b = arith.constant 27 : i8
    %sum = arith.addi %a, %a : i8
    %prod = arith.muli %a, %b : i8
    %c = arith.constant -128 : i8
    %one = arith.constant 1 : i8
    %diff = arith.subi %c, %one : i8
    tt.return %sum, %prod, %diff : i8, i8, i8""",
        results="(i8, i8, i8)",
    )
    # 200 - 256 = -56; 2700 mod 256 = 140 → -116; -129 + 256 = 127
    check(ir, ["%sum = arith.constant -56 : i8", "%prod = arith.constant -116 : i8",
               "%diff = arith.constant 127 : i8", "tt.return %sum, %prod, %diff"])  # fmt: skip


def test_signedness_follows_the_op():
    ir = fold(
        """
    %m = arith.constant -7 : i32
    %two = arith.constant 2 : i32
    %q = arith.divsi %m, %two : i32
    %r = arith.remsi %m, %two : i32
    %uq = arith.divui %m, %two : i32
    %sh = arith.shrsi %m, %two : i32
    %ush = arith.shrui %m, %two : i32
    %mx = arith.maxui %m, %two : i32
    %lt = arith.cmpi slt, %m, %two : i32
    %ult = arith.cmpi ult, %m, %two : i32
    tt.return %q, %r, %uq, %sh, %ush, %mx, %lt, %ult : i32, i32, i32, i32, i32, i32, i1, i1""",
        results="(i32, i32, i32, i32, i32, i32, i1, i1)",
    )
    check(ir, [
        "%q = arith.constant -3 : i32",  # rounds toward zero
        "%r = arith.constant -1 : i32",  # sign of the dividend
        "%uq = arith.constant 2147483644 : i32",  # (2^32 - 7) / 2
        "%sh = arith.constant -2 : i32",
        "%ush = arith.constant 1073741822 : i32",
        "%mx = arith.constant -7 : i32",  # 0xFFFFFFF9 is the larger unsigned value
        "%lt = arith.constant true",
        "%ult = arith.constant false",
    ])  # fmt: skip


def test_undefined_results_are_not_folded():
    ir = fold(
        """
    %zero = arith.constant 0 : i32
    %min = arith.constant -2147483648 : i32
    %m1 = arith.constant -1 : i32
    %big = arith.constant 32 : i32
    %a = arith.divsi %min, %zero : i32
    %b = arith.divsi %min, %m1 : i32
    %c = arith.shli %m1, %big : i32
    %inf = arith.constant 0x7f800000 : f32
    %d = arith.fptosi %inf : f32 to i32
    %huge = arith.constant 3.0e+09 : f32
    %e = arith.fptosi %huge : f32 to i32
    tt.return %a, %b, %c, %d, %e : i32, i32, i32, i32, i32""",
        results="(i32, i32, i32, i32, i32)",
        changed=False,
    )
    check(ir, ["arith.divsi %min, %zero", "arith.divsi %min, %m1", "arith.shli %m1, %big",
               "arith.fptosi %inf", "arith.fptosi %huge"])  # fmt: skip


def test_integer_casts_of_constants():
    ir = fold(
        """
    %m = arith.constant -1 : i8
    %s = arith.extsi %m : i8 to i32
    %u = arith.extui %m : i8 to i32
    %w = arith.constant 300 : i32
    %t = arith.trunci %w : i32 to i8
    %f = arith.uitofp %m : i8 to f32
    %g = arith.sitofp %m : i8 to f32
    %h = arith.constant -2.75 : f32
    %i = arith.fptosi %h : f32 to i32
    %bits = arith.bitcast %h : f32 to i32
    tt.return %s, %u, %t, %f, %g, %i, %bits : i32, i32, i8, f32, f32, i32, i32""",
        results="(i32, i32, i8, f32, f32, i32, i32)",
    )
    check(ir, ["%s = arith.constant -1 : i32", "%u = arith.constant 255 : i32",
               "%t = arith.constant 44 : i8", "%f = arith.constant 2.550000e+02 : f32",
               "%g = arith.constant -1.000000e+00 : f32", "%i = arith.constant -2 : i32",
               "%bits = arith.constant -1070596096 : i32"])  # fmt: skip


# ---------------------------------------------------------------------------- float folds


def test_floats_fold_at_their_precision():
    ir = fold(
        """
    %a = arith.constant 1.0 : f32
    %b = arith.constant 1.0e-08 : f32
    %s = arith.addf %a, %b : f32
    %c = arith.constant 1.0 : bf16
    %d = arith.constant 0.00390625 : bf16
    %e = arith.addf %c, %d : bf16
    tt.return %s, %e : f32, bf16""",
        results="(f32, bf16)",
    )
    # 1 + 1e-8 is 1 in f32 (not in f64); in bf16 1 + 2^-8 is a tie that rounds to even: 1
    check(ir, ["%s = arith.constant 1.000000e+00 : f32", "%e = arith.constant 1.000000e+00 : bf16"])


def test_truncf_that_would_round_twice_is_not_folded():
    # 1 + 2^-8 + 2^-40 rounds up in bf16, but to 1 + 2^-8 (a tie, then down) through f32
    ir = fold(
        """
    %x = arith.constant 1.0039062500009095 : f64
    %t = arith.truncf %x : f64 to bf16
    %y = arith.constant 0.1 : f32
    %u = arith.truncf %y : f32 to bf16
    tt.return %t, %u : bf16, bf16""",
        results="(bf16, bf16)",
    )
    check(ir, ["arith.truncf %x : f64 to bf16", "%u = arith.constant 1.000980e-01 : bf16"])


def test_float_min_max_and_nan_compares():
    ir = fold(
        """
    %pz = arith.constant 0.0 : f32
    %nz = arith.constant -0.0 : f32
    %nan = arith.constant 0x7fc00000 : f32
    %one = arith.constant 1.0 : f32
    %mx = arith.maximumf %nz, %pz : f32
    %mn = arith.minimumf %pz, %nz : f32
    %mnan = arith.maximumf %one, %nan : f32
    %mnum = arith.maxnumf %nan, %one : f32
    %oeq = arith.cmpf oeq, %nan, %nan : f32
    %une = arith.cmpf une, %nan, %nan : f32
    %ult = arith.cmpf ult, %nan, %one : f32
    tt.return %mx, %mn, %mnan, %mnum, %oeq, %une, %ult : f32, f32, f32, f32, i1, i1, i1""",
        results="(f32, f32, f32, f32, i1, i1, i1)",
    )
    check(ir, ["%mx = arith.constant 0.000000e+00 : f32", "%mn = arith.constant -0.000000e+00",
               "%mnan = arith.constant 0x7fc00000", "%mnum = arith.constant 1.000000e+00",
               "%oeq = arith.constant false", "%une = arith.constant true",
               "%ult = arith.constant true"])  # fmt: skip


# ----------------------------------------------------------------------------- identities


def test_integer_identities():
    ir = fold(
        """
    %zero = arith.constant 0 : i32
    %one = arith.constant 1 : i32
    %ones = arith.constant -1 : i32
    %a = arith.addi %x, %zero : i32
    %b = arith.muli %one, %a : i32
    %c = arith.ori %b, %zero : i32
    %d = arith.andi %ones, %c : i32
    %e = arith.divsi %d, %one : i32
    %f = arith.shli %e, %zero : i32
    %dead = arith.muli %x, %zero : i32
    %gone = arith.subi %x, %x : i32
    %xor = arith.xori %x, %x : i32
    tt.return %f, %dead, %gone, %xor : i32, i32, i32, i32""",
        args="%x: i32",
        results="(i32, i32, i32, i32)",
    )
    check(ir, ["%dead = arith.constant 0 : i32", "%gone = arith.constant 0 : i32",
               "%xor = arith.constant 0 : i32", "tt.return %x, %dead, %gone, %xor"])  # fmt: skip
    check_not(ir, ["arith.addi", "arith.muli", "arith.ori", "arith.andi", "arith.divsi"])


def test_float_add_zero_is_not_an_identity():
    ir = fold(
        """
    %pz = arith.constant 0.0 : f32
    %nz = arith.constant -0.0 : f32
    %zero_plus = arith.addf %x, %pz : f32
    %times_zero = arith.mulf %x, %pz : f32
    %self_diff = arith.subf %x, %x : f32
    %minus_nz = arith.subf %x, %nz : f32
    %plus_nz = arith.addf %nz, %x : f32
    tt.return %zero_plus, %times_zero, %self_diff, %minus_nz, %plus_nz : f32, f32, f32, f32, f32""",
        args="%x: f32",
        results="(f32, f32, f32, f32, f32)",
    )
    # -0.0 + 0.0 = +0.0, NaN * 0 = NaN, inf - inf = NaN, -0.0 - -0.0 = +0.0: none is x
    returned = "tt.return %zero_plus, %times_zero, %self_diff, %minus_nz, %x"
    check(ir, ["arith.addf %x, %pz", "arith.mulf %x, %pz", "arith.subf %x, %x",
               "arith.subf %x, %nz", returned])  # fmt: skip


def test_exact_float_identities():
    ir = fold(
        """
    %one = arith.constant dense<1.0> : tensor<8xf32>
    %pz = arith.constant dense<0.0> : tensor<8xf32>
    %a = arith.mulf %one, %x : tensor<8xf32>
    %b = arith.divf %a, %one : tensor<8xf32>
    %c = arith.subf %b, %pz : tensor<8xf32>
    %n = arith.negf %c : tensor<8xf32>
    %d = arith.negf %n : tensor<8xf32>
    tt.return %d : tensor<8xf32>""",
        args="%x: tensor<8xf32>",
        results="tensor<8xf32>",
    )
    check(ir, ["tt.return %x : tensor<8xf32>"])


def test_compare_and_select_identities():
    ir = fold(
        """
    %eq = arith.cmpi sle, %x, %x : i32
    %lt = arith.cmpi ugt, %x, %x : i32
    %t = arith.constant true
    %s1 = arith.select %t, %x, %y : i1, i32
    %s2 = arith.select %c, %y, %y : i1, i32
    %cond = arith.constant dense<false> : tensor<4xi1>
    %s3 = arith.select %cond, %v, %w : tensor<4xi1>, tensor<4xi32>
    tt.return %eq, %lt, %s1, %s2, %s3 : i1, i1, i32, i32, tensor<4xi32>""",
        args="%x: i32, %y: i32, %c: i1, %v: tensor<4xi32>, %w: tensor<4xi32>",
        results="(i1, i1, i32, i32, tensor<4xi32>)",
    )
    check(ir, ["%eq = arith.constant true", "%lt = arith.constant false",
               "tt.return %eq, %lt, %x, %y, %w"])  # fmt: skip


def test_redundant_cast_pairs():
    ir = fold(
        """
    %w = arith.extsi %x : i8 to i32
    %n = arith.trunci %w : i32 to i8
    %w2 = arith.extsi %w : i32 to i64
    %h = arith.extf %f : f16 to f32
    %back = arith.truncf %h : f32 to f16
    %u = arith.extui %x : i8 to i16
    %narrow = arith.trunci %u : i16 to i8
    tt.return %n, %w2, %back, %narrow : i8, i64, f16, i8""",
        args="%x: i8, %f: f16",
        results="(i8, i64, f16, i8)",
    )
    check(ir, [re.compile(r"%w2 = arith.extsi %x : i8 to i64"), "tt.return %x, %w2, %f, %x"])


# ----------------------------------------------------------------------------- tt ops


def test_splat_and_shape_ops_of_constants():
    ir = fold(
        """
    %c = arith.constant 3 : i32
    %s = tt.splat %c : i32 -> tensor<1x8xi32>
    %b = tt.broadcast %s : tensor<1x8xi32> -> tensor<4x8xi32>
    %e = tt.expand_dims %b {axis = 0 : i32} : tensor<4x8xi32> -> tensor<1x4x8xi32>
    %r = tt.reshape %e : tensor<1x4x8xi32> -> tensor<32xi32>
    tt.return %s, %r : tensor<1x8xi32>, tensor<32xi32>""",
        results="(tensor<1x8xi32>, tensor<32xi32>)",
    )
    check(ir, ["%s = arith.constant dense<3> : tensor<1x8xi32>",
               "%r = arith.constant dense<3> : tensor<32xi32>"])  # fmt: skip


def test_shape_ops_of_a_splat_become_one_splat():
    ir = fold(
        """
    %s = tt.splat %x : i32 -> tensor<1x8xi32>
    %b = tt.broadcast %s : tensor<1x8xi32> -> tensor<4x8xi32>
    %e = tt.expand_dims %b {axis = 2 : i32} : tensor<4x8xi32> -> tensor<4x8x1xi32>
    tt.return %e : tensor<4x8x1xi32>""",
        args="%x: i32",
        results="tensor<4x8x1xi32>",
    )
    check(ir, ["%e = tt.splat %x : i32 -> tensor<4x8x1xi32>", "tt.return %e"])


def test_addptr_of_zero_offset():
    ir = fold(
        """
    %zero = arith.constant dense<0> : tensor<4xi32>
    %ptrs = tt.splat %p : !tt.ptr<f32> -> tensor<4x!tt.ptr<f32>>
    %q = tt.addptr %ptrs, %zero : tensor<4x!tt.ptr<f32>>, tensor<4xi32>
    %v = tt.load %q : tensor<4x!tt.ptr<f32>>
    tt.return %v : tensor<4xf32>""",
        args="%p: !tt.ptr<f32>",
        results="tensor<4xf32>",
    )
    check(ir, ["%v = tt.load %ptrs"])
    check_not(ir, ["tt.addptr"])


# -------------------------------------------------------------------------- control flow


@pytest.mark.parametrize("cond, taken", [("true", "%a"), ("false", "%b")])
def test_if_on_a_constant_inlines_the_taken_branch(cond, taken):
    ir = fold(
        f"""
    %c = arith.constant {cond}
    %r = scf.if %c -> (i32) {{
      %a = arith.muli %x, %x : i32
      scf.yield %a : i32
    }} else {{
      %b = arith.addi %x, %x : i32
      scf.yield %b : i32
    }}
    tt.return %r : i32""",
        args="%x: i32",
        results="i32",
    )
    check(ir, [f"{taken} = arith", f"tt.return {taken} : i32"])
    check_not(ir, ["scf.if", "scf.yield"])


def test_if_false_without_else_disappears_with_its_store():
    ir = fold(
        """
    %c = arith.constant false
    scf.if %c {
      tt.store %p, %f : !tt.ptr<f32>
    }
    tt.return""",
        args="%p: !tt.ptr<f32>, %f: f32",
    )
    check_not(ir, ["scf.if", "tt.store"])


def test_for_with_zero_trips_yields_its_initial_values():
    ir = fold(
        """
    %lb = arith.constant 8 : i32
    %ub = arith.constant 8 : i32
    %step = arith.constant 1 : i32
    %r = scf.for %i = %lb to %ub step %step iter_args(%acc = %x) -> (f32) : i32 {
      %y = arith.addf %acc, %acc : f32
      scf.yield %y : f32
    }
    tt.return %r : f32""",
        args="%x: f32",
        results="f32",
    )
    check(ir, ["tt.return %x : f32"])
    check_not(ir, ["scf.for"])


def test_for_with_runtime_bound_stays():
    ir = fold(
        """
    %lb = arith.constant 0 : i32
    %step = arith.constant 1 : i32
    %r = scf.for %i = %lb to %n step %step iter_args(%acc = %x) -> (f32) : i32 {
      %y = arith.addf %acc, %acc : f32
      scf.yield %y : f32
    }
    tt.return %r : f32""",
        args="%x: f32, %n: i32",
        results="f32",
        changed=False,
    )
    check(ir, ["scf.for %i = %lb to %n step %step"])


def test_transpose_of_a_square_tile_is_not_an_identity():
    ir = fold(
        """
    %t = tt.trans %x {order = array<i32: 1, 0>} : tensor<4x4xf32> -> tensor<4x4xf32>
    %same = tt.trans %x {order = array<i32: 0, 1>} : tensor<4x4xf32> -> tensor<4x4xf32>
    tt.return %t, %same : tensor<4x4xf32>, tensor<4x4xf32>""",
        args="%x: tensor<4x4xf32>",
        results="(tensor<4x4xf32>, tensor<4x4xf32>)",
    )
    check(ir, ["%t = tt.trans %x", "tt.return %t, %x"])


def test_shape_ops_of_non_splat_constants_move_elements():
    ir = fold(
        """
    %c = arith.constant dense<[[1, 2], [3, 4]]> : tensor<2x2xi32>
    %t = tt.trans %c {order = array<i32: 1, 0>} : tensor<2x2xi32> -> tensor<2x2xi32>
    %r = tt.reshape %t : tensor<2x2xi32> -> tensor<4xi32>
    tt.return %r : tensor<4xi32>""",
        results="tensor<4xi32>",
    )
    check(ir, ["%r = arith.constant dense<[1, 3, 2, 4]> : tensor<4xi32>"])
