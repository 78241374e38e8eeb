"""Golden TTIR for the AST visitor: a kernel in, the key lines of its printed TTIR checked in order.

Each test compiles one small kernel with `generate_ttir`, verifies the module, and checks the
lines that show the construct under test (SSA names, control flow, calls, folding).
"""

from __future__ import annotations

import re

import kernellab.language as tl
from kernellab.frontend import generate_ttir
from kernellab.ir import parse_module, print_module
from kernellab.language.core import KernelFunction, kernel_function
from tests.filecheck import check, check_not

R = re.compile


def ttir(fn, signature, constexprs=None, attrs=None, locations=False) -> str:
    module = generate_ttir(KernelFunction(fn), signature, constexprs or {}, attrs)
    module.verify()
    return print_module(module, locations=locations)


# ----------------------------------------------------------------------------- basics


def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(axis=0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)


def test_vector_add_reads_like_triton():
    ir = ttir(
        add_kernel,
        {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"},
        {"BLOCK": 1024},
        {"x_ptr": {"tt.divisibility": 16}, "n": {"tt.divisibility": 16}},
    )
    check(ir, [
        ("tt.func public @add_kernel(%x_ptr: !tt.ptr<f32> {tt.divisibility = 16 : i32}, "
         "%y_ptr: !tt.ptr<f32>, %out_ptr: !tt.ptr<f32>, %n: i32 {tt.divisibility = 16 : i32})"),
        "%pid = tt.get_program_id x : i32",
        R(r"arith.constant 1024 : i32"),
        R(r"arith.muli %pid, %\w+ : i32"),
        "tt.make_range {end = 1024 : i32, start = 0 : i32} : tensor<1024xi32>",
        R(r"%offs = arith.addi"),
        R(r"%mask = arith.cmpi slt, %offs, %\w+ : tensor<1024xi32>"),
        R(r"tt.splat %x_ptr : !tt.ptr<f32> -> tensor<1024x!tt.ptr<f32>>"),
        R(r"tt.addptr %\w+, %offs"),
        R(r"%x = tt.load %\w+, %mask : tensor<1024x!tt.ptr<f32>>"),
        R(r"%y = tt.load"),
        R(r"arith.addf %x, %y : tensor<1024xf32>"),
        R(r"tt.store %\w+, %\w+, %mask : tensor<1024x!tt.ptr<f32>>"),
        "tt.return",
    ])  # fmt: skip


def test_every_op_carries_its_source_line():
    ir = ttir(add_kernel, {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"},
              {"BLOCK": 64}, locations=True)  # fmt: skip
    import inspect

    lines, start = inspect.getsourcelines(add_kernel)
    line = start + next(i for i, text in enumerate(lines) if "mask = offs < n" in text)
    col = lines[line - start].index("offs < n")
    check(ir, [R(rf'%mask = arith.cmpi .* loc\(".*test_codegen.py":{line}:{col}\)')])


def cache_hints(x_ptr, out_ptr):
    offs = tl.arange(0, 16)
    x = tl.load(x_ptr + offs, cache_modifier=".cg", eviction_policy="evict_last", volatile=True)
    tl.store(out_ptr + offs, x, cache_modifier=".wb")


def test_memory_hints_print_and_parse_back():
    ir = ttir(cache_hints, {"x_ptr": "*fp32", "out_ptr": "*fp32"})
    check(ir, [R(r'tt.load .*\{cache = ".cg", evict = "evict_last", is_volatile = true\}'),
               R(r'tt.store .*\{cache = ".wb"\}')])  # fmt: skip
    assert print_module(parse_module(ir)) == ir


def scalar_arith(a, b, out_ptr, K: tl.constexpr):
    c = (K * 4 + 2) // 3  # folds at compile time
    d = a * c - b
    e = -d
    f = ~a
    g = a % b + (a >> 1) + (a << 2) + (a & b) + (a | b) + (a ^ b)
    h = a / b
    i = a // b
    tl.store(out_ptr, e + f + g + i + h.to(tl.int32))


def test_scalar_operators_and_folding():
    ir = ttir(scalar_arith, {"a": "i32", "b": "i32", "out_ptr": "*i32"}, {"K": 7})
    check(ir, [
        "%c = arith.constant 10 : i32",
        R(r"arith.muli %a, %c"), R(r"%d = arith.subi"),
        R(r"%e = arith.subi %\w+, %d"),  # -d is 0 - d
        R(r"%f = arith.xori %a, %\w+"),  # ~a is a ^ -1
        "arith.remsi %a, %b", "arith.shrsi", "arith.shli", "arith.andi %a, %b", "arith.ori %a, %b",
        "arith.xori %a, %b",
        R(r"arith.sitofp %a : i32 to f32"), R(r"%h = arith.divf"),
        R(r"%i = arith.divsi %a, %b"),
    ])  # fmt: skip
    check_not(ir, ["arith.constant 7 :", "arith.constant 4 :"])


def comparisons(a, b, out_ptr, FLAG: tl.constexpr, LIMIT: tl.constexpr):
    r = 0 < a < b  # chained: both comparisons, then and
    s = (a == b) or (a != 3)
    t = not (a >= b)
    u: tl.constexpr = FLAG and LIMIT > 3  # folds, no IR (a plain `u = ...` would be a tensor)
    if FLAG is not None and u:
        tl.store(out_ptr, r.to(tl.int32) + s.to(tl.int32) + t.to(tl.int32))


def test_comparisons_chains_and_boolean_operators():
    ir = ttir(comparisons, {"a": "i32", "b": "i32", "out_ptr": "*i32"}, {"FLAG": True, "LIMIT": 4})
    check(ir, [
        R(r"arith.cmpi slt, %\w+, %a : i32"), R(r"arith.cmpi slt, %a, %b"), R(r"%r = arith.andi"),
        R(r"arith.cmpi eq, %a, %b"), R(r"arith.cmpi ne, %a"), R(r"%s = arith.ori"),
        R(r"arith.cmpi sge, %a, %b"), R(r"%t = arith.xori"),
        "tt.store",
    ])  # fmt: skip


def test_constexpr_false_condition_compiles_nothing():
    ir = ttir(comparisons, {"a": "i32", "b": "i32", "out_ptr": "*i32"}, {"FLAG": False, "LIMIT": 4})
    check_not(ir, ["tt.store", "scf.if"])


# -------------------------------------------------------------------------- constexprs

SCALE = 3
GLOBAL_BLOCK = tl.constexpr(64)


def constexpr_kernel(out_ptr, BLOCK: tl.constexpr, USE_SCALE: tl.constexpr = True):
    N: tl.constexpr = BLOCK * 2
    offs = tl.arange(0, N)
    if USE_SCALE:
        offs = offs * SCALE
    else:
        offs = offs + 1000
    tl.store(out_ptr + offs, offs + GLOBAL_BLOCK)


def test_annotated_constexprs_globals_and_defaults():
    ir = ttir(constexpr_kernel, {"out_ptr": "*i32"}, {"BLOCK": 16})
    check(ir, [
        "tt.make_range {end = 32 : i32, start = 0 : i32}",
        "arith.constant dense<3> : tensor<32xi32>",
        "arith.muli",
        "arith.constant dense<64> : tensor<32xi32>",
    ])  # fmt: skip
    check_not(ir, ["1000", "scf.if"])
    ir = ttir(constexpr_kernel, {"out_ptr": "*i32"}, {"BLOCK": 16, "USE_SCALE": False})
    check(ir, ["arith.constant dense<1000> : tensor<32xi32>"])


def unused_constexpr_kernel(out_ptr, dtype: tl.constexpr):
    x = tl.zeros((8,), dtype=dtype)
    tl.store(out_ptr + tl.arange(0, 8), x.to(out_ptr.dtype.element_ty))


def test_dtype_constexpr_and_pointer_element_type():
    ir = ttir(unused_constexpr_kernel, {"out_ptr": "*fp32"}, {"dtype": tl.float16})
    check(
        ir, ["arith.constant dense<0.0", "tensor<8xf16>", "arith.extf", "tensor<8xf32>", "tt.store"]
    )


# --------------------------------------------------------------------------- loops


def for_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    total = 0
    for i in range(0, n, BLOCK):
        offs = i + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + offs, mask=offs < n, other=0.0)
        total = total + 1
    tl.store(out_ptr + tl.arange(0, BLOCK), acc * total)


def test_for_loop_carries_the_variables_it_assigns():
    ir = ttir(for_kernel, {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"}, {"BLOCK": 32})
    check(ir, [
        "%acc = arith.constant dense<0.0",
        "%total = arith.constant 0 : i32",
        R(r"%acc_\d+, %total_\d+ = scf.for %i = %\w+ to %n step %\w+ "
          r"iter_args\(%acc_\d+ = %acc, %total_\d+ = %total\) -> \(tensor<32xf32>, i32\) : i32"),
        R(r"%offs = arith.addi"),
        "tt.load",
        R(r"arith.addf %acc_\d+"),
        R(r"scf.yield %acc_\d+, %total_\d+ : tensor<32xf32>, i32"),
        R(r"arith.mulf %acc_\d+"),
    ])  # fmt: skip


def range_kernel(out_ptr, n):
    acc = 0
    for i in tl.range(10, 0, -3, num_stages=2):
        acc = acc * 10 + i
    for j in range(n):
        acc += j
    tl.store(out_ptr, acc)


def test_negative_step_and_range_hints():
    ir = ttir(range_kernel, {"out_ptr": "*i32", "n": "i32"})
    check(ir, [
        R(r"scf\.for %\w+ = %(\w+) to %(\w+) step %\w+ iter_args"),  # 0 to 10 step 3, mirrored
        R(r"arith.subi"), R(r"%i = arith.addi"),
        R(r"\{tt.num_stages = 2 : i32\}"),
        R(r"scf.for %j = %\w+ to %n step"),
    ])  # fmt: skip


def while_kernel(out_ptr, n):
    i = 0
    x = 1.0
    while i < n:
        x = x * 2.0
        i += 1
    tl.store(out_ptr, x)


def test_while_loop():
    ir = ttir(while_kernel, {"out_ptr": "*fp32", "n": "i32"})
    check(ir, [
        # carried in the order the body assigns them
        R(r"%x_\d+, %i_\d+ = scf.while \(%x_\d+ = %x, %i_\d+ = %i\) "
          r": \(f32, i32\) -> \(f32, i32\)"),
        R(r"arith.cmpi slt, %i_\d+, %n"),
        R(r"scf.condition\(%\w+\) %x_\d+, %i_\d+ : f32, i32"),
        "} do {",
        R(r"arith.mulf"), R(r"arith.addi"),
        R(r"scf.yield"),
        R(r"tt.store %out_ptr, %x_\d+"),
    ])  # fmt: skip


def static_range_kernel(out_ptr):
    x = 1
    for k in tl.static_range(1, 4):
        x = x * (k + 1)
    tl.store(out_ptr, x)


def test_static_range_unrolls():
    ir = ttir(static_range_kernel, {"out_ptr": "*i32"})
    assert ir.count("arith.muli") == 3
    check(ir, ["arith.constant 2 : i32", "arith.constant 3 : i32", "arith.constant 4 : i32"])
    check_not(ir, ["scf.for"])


# ---------------------------------------------------------------------------- branches


def if_kernel(x_ptr, out_ptr, n):
    x = tl.load(x_ptr)
    y = x
    if n > 0:
        y = x * 2.0
        z = 1  # noqa: F841 (only in one branch: not yielded)
    else:
        y = x + 1.0
    if n == 3:
        tl.store(out_ptr, y)
    w = x if n > 1 else 0.0
    tl.store(out_ptr + 1, w)


def test_runtime_if_yields_assigned_variables():
    ir = ttir(if_kernel, {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"})
    check(ir, [
        R(r"%y = scf.if %\w+ -> \(f32\) \{"),
        "arith.mulf", "scf.yield", "} else {", "arith.addf", "scf.yield",
        R(r"scf.if %\w+ \{"), R(r"tt.store %out_ptr, %y :"),
        R(r"%w = scf.if %\w+ -> \(f32\)"), "scf.yield %x : f32", "arith.constant 0.0", "scf.yield",
    ])  # fmt: skip


def block_ternary(x_ptr, out_ptr):
    offs = tl.arange(0, 16)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, x if x > 0 else 0.0)


def test_ternary_on_a_block_is_a_select():
    ir = ttir(block_ternary, {"x_ptr": "*fp32", "out_ptr": "*fp32"})
    check(
        ir,
        [R(r"arith.cmpf ogt"), R(r"arith.select %\w+, %x, %\w+ : tensor<16xi1>, tensor<16xf32>")],
    )


def early_return(x_ptr, n):
    pid = tl.program_id(0)
    if pid >= n:
        return
    tl.store(x_ptr + pid, pid)


def test_early_return_becomes_if_else():
    ir = ttir(early_return, {"x_ptr": "*i32", "n": "i32"})
    check(
        ir, [R(r"arith.cmpi sge, %pid, %n"), R(r"scf.if"), "} else {", "tt.store", "}", "tt.return"]
    )
    assert ir.count("tt.return") == 1


# ------------------------------------------------------------------------------- calls


@kernel_function
def scaled(x, factor, BIAS: tl.constexpr):
    return x * factor + BIAS


@kernel_function
def minmax(a, b):
    if a < b:
        return a, b
    return b, a


def call_kernel(x_ptr, out_ptr):
    offs = tl.arange(0, 16)
    x = tl.load(x_ptr + offs)
    y = scaled(x, 2.0, 1)
    z = scaled(y, 3.0, 1)  # same types and constexprs: same function
    w = scaled(z, 2.0, BIAS=5)  # another constexpr: another specialization
    lo, hi = minmax(tl.program_id(0), tl.program_id(1))
    tl.store(out_ptr + offs + lo * hi, w)


def test_calls_specialize_private_functions():
    ir = ttir(call_kernel, {"x_ptr": "*fp32", "out_ptr": "*fp32"})
    check(ir, [
        "tt.func public @call_kernel",
        R(r"%y = tt.call @scaled__fp32_16__c2_0__c1\(%x\) : \(tensor<16xf32>\) -> tensor<16xf32>"),
        R(r"%z = tt.call @scaled__fp32_16__c3_0__c1\(%y\)"),
        R(r"%w = tt.call @scaled__fp32_16__c2_0__c5\(%z\)"),
        R(r"%lo, %hi = tt.call @minmax__int32__int32\(%\w+, %\w+\) : \(i32, i32\) -> \(i32, i32\)"),
        "tt.func private @scaled__fp32_16__c2_0__c1(%x: tensor<16xf32>) -> tensor<16xf32>",
        "tt.return",
        "tt.func private @minmax__int32__int32(%a: i32, %b: i32) -> (i32, i32)",
        R(r"scf.if %\w+ -> \(i32, i32\)"),
        R(r"tt.return %\w+, %\w+ : i32, i32"),
    ])  # fmt: skip
    assert ir.count("tt.func private @scaled__fp32_16__c2_0__c1(") == 1


def stdlib_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    blocks = tl.cdiv(n, BLOCK)
    CONST: tl.constexpr = tl.cdiv(100, BLOCK)  # all compile-time: folds, no call
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, tl.sigmoid(x) + blocks + CONST)


def test_standard_library_functions_are_called():
    ir = ttir(stdlib_kernel, {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"}, {"BLOCK": 32})
    check(ir, [
        R(r"%blocks = tt.call @cdiv__int32__c32\(%n\)"),
        R(r"tt.call @sigmoid__fp32_32\(%x\)"),
        "arith.constant dense<4.000000e+00> : tensor<32xf32>",
        "tt.func private @cdiv__int32__c32", "arith.divsi",
        "tt.func private @sigmoid__fp32_32", "math.exp",
    ])  # fmt: skip
    check_not(ir, ["@cdiv__c100"])  # a call that only computes constants leaves no function


# ---------------------------------------------------------------------- tensor methods


def methods_kernel(x_ptr, out_ptr):
    rows = tl.arange(0, 16)[:, None]
    cols = tl.arange(0, 32)[None, :]
    x = tl.load(x_ptr + rows * 32 + cols)
    t = x.T
    s = t.sum(axis=0)
    h = s.to(tl.float16)
    M: tl.constexpr = max(h.shape[0], 4)
    tl.store(out_ptr + tl.arange(0, M), h)


def test_tensor_methods_indexing_and_attributes():
    ir = ttir(methods_kernel, {"x_ptr": "*fp32", "out_ptr": "*fp16"})
    check(ir, [
        R(r"tt.expand_dims %\w+ \{axis = 1 : i32\} : tensor<16xi32> -> tensor<16x1xi32>"),
        R(r"tt.expand_dims %\w+ \{axis = 0 : i32\} : tensor<32xi32> -> tensor<1x32xi32>"),
        R(r"%t = tt.trans %x"), "tensor<32x16xf32>",
        R(r"%s = \"?tt.reduce"), "tensor<16xf32>",
        R(r"%h = arith.truncf %s : tensor<16xf32> to tensor<16xf16>"),
        "tt.make_range {end = 16 : i32, start = 0 : i32}",
    ])  # fmt: skip


def debug_kernel(x_ptr, n):
    x = tl.load(x_ptr)
    assert x > 0, "x must be positive"
    print("x is", x)
    tl.static_assert(n is not None)


def test_assert_and_print():
    ir = ttir(debug_kernel, {"x_ptr": "*fp32", "n": "i32"})
    check(
        ir,
        [
            R(r"arith.cmpf ogt, %x"),
            R(r'tt.assert %\w+, "x must be positive"'),
            R(r'tt.print ".*x is.*: %x : f32'),
        ],
    )


# ------------------------------------------------------------- combine functions, tuples

PAIR = tl.constexpr((3, 5))


@kernel_function
def add_pair(a, b):
    return a + b


def reduce_kernel(x_ptr, out_ptr):
    """A docstring is ignored."""
    x = tl.load(x_ptr + tl.arange(0, 8))
    (n,) = x.shape
    lo, hi = PAIR
    total = tl.reduce(x, 0, add_pair)
    y = tl.math.exp(x)
    tl.store(out_ptr, total + n + lo * hi + tl.sum(y, axis=0))


def test_reduce_calls_its_combine_function_and_tuples_unpack():
    ir = ttir(reduce_kernel, {"x_ptr": "*fp32", "out_ptr": "*fp32"})
    check(ir, [
        "%n = arith.constant 8 : i32", "%lo = arith.constant 3 : i32",
        "%hi = arith.constant 5 : i32",
        R(r"%total = \"tt.reduce\"\(%x\)"),
        R(r"\^bb0\(%\w+: f32, %\w+: f32\):"),
        R(r"tt.call @add_pair__fp32__fp32\(%\w+, %\w+\) : \(f32, f32\) -> f32"),
        "tt.reduce.return",
        R(r"%y = math.exp %x : tensor<8xf32>"),
        "tt.func private @add_pair__fp32__fp32(%a: f32, %b: f32) -> f32",
    ])  # fmt: skip


def nested_loops(out_ptr, n):
    acc = 0
    for j in tl.static_range(2):
        acc += j
    for i in range(n):
        for j in tl.static_range(2):  # j was a constexpr before: not carried
            acc += i * j
        k = 0
        while k < i:
            k += 1
            acc += 1
    tl.store(out_ptr, acc)


def test_nested_loops_carry_only_what_they_assign():
    ir = ttir(nested_loops, {"out_ptr": "*i32", "n": "i32"})
    check(ir, [
        R(r"%acc_\d+ = scf.for %i = .* iter_args\(%acc_\d+ = %acc_\d+\) -> \(i32\)"),
        R(r"%k = arith.constant 0"),
        R(r"scf.while \(%k_\d+ = %k, %acc_\d+ = %acc_\d+\)"),
        R(r"scf.yield %acc_\d+ : i32"),
    ])  # fmt: skip


# ----------------------------------------------- control flow, run on the interpreter


def test_control_flow_runs_correctly():
    import numpy as np

    import kernellab as kl

    @kl.jit
    def clamp_pos(x, lim):
        if x > lim:
            return lim
        if x < 0:
            return 0
        return x

    @kl.jit
    def flow(out_ptr, n, m):
        pid = tl.program_id(0)
        if pid >= 3:
            return
        down = 0
        for i in range(n, 0, -3):  # n, n-3, ... > 0
            down = down * 10 + i
        steps = 0
        while m > 1:
            m = tl.where(m % 2 == 0, m // 2, 3 * m + 1)
            steps += 1
        picked = n if pid == 1 else m
        tl.store(out_ptr + pid * 4 + 0, down)
        tl.store(out_ptr + pid * 4 + 1, steps)
        tl.store(out_ptr + pid * 4 + 2, clamp_pos(n - 5 * pid, 4))
        tl.store(out_ptr + pid * 4 + 3, picked)

    def collatz(m):
        steps = 0
        while m > 1:
            m, steps = (m // 2 if m % 2 == 0 else 3 * m + 1), steps + 1
        return steps

    rng = np.random.default_rng()
    n, m = int(rng.integers(1, 9)), int(rng.integers(2, 30))
    out = np.full(16, -999, np.int32)
    flow[(4,)](out, n, m)
    down = 0
    for i in range(n, 0, -3):
        down = down * 10 + i
    expected = []
    for pid in range(3):
        expected += [down, collatz(m), min(max(n - 5 * pid, 0), 4), n if pid == 1 else 1]
    assert out.tolist() == expected + [-999] * 4
