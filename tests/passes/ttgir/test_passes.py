"""Golden TTGIR tests: TTIR text in, one pass (or the pipeline prefix up to it), lines out."""

from __future__ import annotations

import re

from kernellab.ir import parse_module, print_module, ttg
from kernellab.passes.ttgir import (
    coalesce,
    convert_to_ttgpuir,
    reduce_data_duplication,
    remove_layout_conversions,
)
from kernellab.passes.ttgir.encodings import blocked_for, default_blocked
from tests.filecheck import check, check_not

from .ttir import DOT, DOT_BATCHED, SOFTMAX_ROWS, parse, vector_add

B1 = (
    "#ttg.blocked<{{sizePerThread = [{}], threadsPerWarp = [32], warpsPerCTA = [{}], order = [0]}}>"
)


def run(text: str, *passes, num_warps: int = 4, target: str = "sm_90") -> str:
    module = parse(text)
    assert convert_to_ttgpuir.run(module, num_warps=num_warps, target=target)
    for p in passes:
        p.run(module)
    module.verify()
    printed = print_module(module)
    assert print_module(parse_module(printed)) == printed  # what we print parses back
    return printed


# ------------------------------------------------------------------------ convert_to_ttgpuir


def test_default_blocked_matches_triton():
    assert default_blocked([1024], 4) == ttg.BlockedEncodingAttr([1], [32], [4], [0])
    assert default_blocked([128, 32], 8) == ttg.BlockedEncodingAttr([1, 1], [1, 32], [8, 1], [1, 0])
    assert default_blocked([4, 8], 4) == ttg.BlockedEncodingAttr([1, 1], [4, 8], [4, 1], [1, 0])
    assert default_blocked([16], 8) == ttg.BlockedEncodingAttr([1], [32], [8], [0])  # duplicates
    # the seed example of the layouts: 128x32, sizePerThread [1, 8], 8 warps
    assert blocked_for([128, 32], [1, 8], [1, 0], 8) == ttg.BlockedEncodingAttr(
        [1, 8], [8, 4], [8, 1], [1, 0]
    )


def test_convert_sets_module_attributes_and_default_layouts():
    ir = run(vector_add(), num_warps=8, target="sm_80")
    check(ir, [
        "#blocked = " + B1.format(1, 8),
        ('"ttg.num-ctas" = 1 : i32, "ttg.num-warps" = 8 : i32, ttg.target = "cuda:80", '
         '"ttg.threads-per-warp" = 32 : i32'),
        "tt.make_range {end = 1024 : i32, start = 0 : i32} : tensor<1024xi32, #blocked>",
        "tt.load %xp, %mask : tensor<1024x!tt.ptr<f32>, #blocked>",
        "arith.addf %a, %b : tensor<1024xf32, #blocked>",
    ])  # fmt: skip
    check_not(ir, ["ttg.convert_layout", "#blocked1"])


def test_reduction_yields_a_slice_and_expand_dims_takes_one():
    ir = run(SOFTMAX_ROWS)
    check(ir, [
        "#blocked = " + B1.format(1, 4),
        "#blocked1 = #ttg.blocked<{sizePerThread = [1, 1], threadsPerWarp = [32, 1], warpsPerCTA = [4, 1], order = [1, 0]}>",
        "#blocked2 = #ttg.blocked<{sizePerThread = [1, 1], threadsPerWarp = [1, 32], warpsPerCTA = [1, 4], order = [1, 0]}>",
        "ttg.convert_layout %rows : tensor<4xi32, #blocked> -> tensor<4xi32, #ttg.slice<{dim = 1, parent = #blocked1}>>",
        "^bb0(%l: f32, %r: f32):",  # combine regions stay scalar
        re.compile(r"\(tensor<4x256xf32, #blocked2>\) -> tensor<4xf32, #ttg\.slice<\{dim = 1, parent = #blocked2\}>>"),
    ])  # fmt: skip


def test_dot_operands_become_dot_op_of_the_blocked_result():
    ir = run(DOT)
    check(ir, [
        "#blocked = #ttg.blocked<{sizePerThread = [1, 1], threadsPerWarp = [2, 16], warpsPerCTA = [4, 1], order = [1, 0]}>",
        "#blocked1 = #ttg.blocked<{sizePerThread = [1, 1], threadsPerWarp = [1, 32], warpsPerCTA = [2, 2], order = [1, 0]}>",
        "ttg.convert_layout %a : tensor<32x16xf16, #blocked> -> tensor<32x16xf16, #ttg.dot_op<{opIdx = 0, parent = #blocked1}>>",
        "-> tensor<16x64xf16, #ttg.dot_op<{opIdx = 1, parent = #blocked1}>>",
        "-> tensor<32x64xf32, #blocked1>",
    ])  # fmt: skip


GATHER = """builtin.module {
  tt.func public @rows(%table: tensor<64x32xf32>, %ids: tensor<64x8xi32>, %out: !tt.ptr<f32> {tt.divisibility = 16 : i32}) {
    %g = tt.gather %table[%ids] {axis = 1 : i32} : (tensor<64x32xf32>, tensor<64x8xi32>) -> tensor<64x8xf32>
    %two = arith.addf %g, %g : tensor<64x8xf32>
    %r = tt.make_range {end = 8 : i32, start = 0 : i32} : tensor<8xi32>
    %c = tt.expand_dims %r {axis = 0 : i32} : tensor<8xi32> -> tensor<1x8xi32>
    %cb = tt.broadcast %c : tensor<1x8xi32> -> tensor<64x8xi32>
    %os = tt.splat %out : !tt.ptr<f32> -> tensor<64x8x!tt.ptr<f32>>
    %op = tt.addptr %os, %cb : tensor<64x8x!tt.ptr<f32>>, tensor<64x8xi32>
    tt.store %op, %two : tensor<64x8x!tt.ptr<f32>>
    tt.return
  }
}
"""


def test_gather_takes_its_index_in_its_result_layout_and_stays_put():
    """Source and index get their shapes' default layouts, the result the index's; after
    coalesce picks a 4-wide layout for the store, the one conversion left sits between the
    addf and the store: nothing moves into or through the gather."""
    gather = ("tt.gather %table[%ids] {axis = 1 : i32} : (tensor<64x32xf32, #blocked>, "
              "tensor<64x8xi32, #blocked1>) -> tensor<64x8xf32, #blocked1>")
    ir = run(GATHER)
    check(ir, [
        "#blocked = #ttg.blocked<{sizePerThread = [1, 1], threadsPerWarp = [1, 32], warpsPerCTA = [4, 1], order = [1, 0]}>",
        "#blocked1 = #ttg.blocked<{sizePerThread = [1, 1], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>",
        gather,
        "%two = arith.addf %g, %g : tensor<64x8xf32, #blocked1>",
    ])  # fmt: skip
    ir = run(GATHER, coalesce, remove_layout_conversions)
    check(ir, [
        "#blocked2 = #ttg.blocked<{sizePerThread = [1, 4], threadsPerWarp = [16, 2], warpsPerCTA = [4, 1], order = [1, 0]}>",
        gather,
        "%two = arith.addf %g, %g : tensor<64x8xf32, #blocked1>",
        "ttg.convert_layout %two : tensor<64x8xf32, #blocked1> -> tensor<64x8xf32, #blocked2>",
    ])  # fmt: skip
    assert ir.count("ttg.convert_layout") == 1


def test_loop_carried_values_take_their_initial_layout():
    text = """builtin.module {
  tt.func public @k(%n: i32) {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %init = arith.constant dense<1.000000e+00> : tensor<256xf32>
    %res = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %init) -> (tensor<256xf32>) : i32 {
      %next = arith.addf %acc, %acc : tensor<256xf32>
      scf.yield %next : tensor<256xf32>
    }
    tt.return
  }
}
"""
    ir = run(text)
    check(ir, ["%init = arith.constant dense<1.000000e+00> : tensor<256xf32, #blocked>",
               "iter_args(%acc = %init) -> (tensor<256xf32, #blocked>)",
               "scf.yield %next : tensor<256xf32, #blocked>"])  # fmt: skip


# ------------------------------------------------------------------------------------ coalesce


def test_vector_add_gets_16_byte_vectors_when_aligned():
    ir = run(vector_add(aligned=True), coalesce)
    check(ir, ["#blocked = " + B1.format(1, 4), "#blocked1 = " + B1.format(4, 4),
               "ttg.convert_layout %xp : tensor<1024x!tt.ptr<f32>, #blocked> -> tensor<1024x!tt.ptr<f32>, #blocked1>",
               "tt.load %0, %1 : tensor<1024x!tt.ptr<f32>, #blocked1>",
               "ttg.convert_layout %a : tensor<1024xf32, #blocked1> -> tensor<1024xf32, #blocked>",
               re.compile(r"tt.store %\d+, %\d+, %\d+ : tensor<1024x!tt.ptr<f32>, #blocked1>")])  # fmt: skip


def test_vector_add_gets_one_element_per_thread_when_not_aligned():
    ir = run(vector_add(aligned=False), coalesce, remove_layout_conversions)
    check(
        ir,
        [
            "#blocked = " + B1.format(1, 4),
            "tt.load %xp, %mask : tensor<1024x!tt.ptr<f32>, #blocked>",
        ],
    )
    check_not(ir, ["sizePerThread = [4]", "ttg.convert_layout"])


def test_fp16_vectors_and_small_blocks():
    ir = run(vector_add(aligned=True, elem="f16"), coalesce, remove_layout_conversions)
    check(ir, ["#blocked = " + B1.format(8, 4)])
    # 256 elements over 128 threads: two per thread, however wide the vector could be
    ir = run(vector_add(aligned=True, block=256), coalesce, remove_layout_conversions)
    check(ir, ["#blocked = " + B1.format(2, 4)])


def test_row_loads_vectorize_along_the_contiguous_dim():
    ir = run(SOFTMAX_ROWS, coalesce)
    check(
        ir,
        [
            "#ttg.blocked<{sizePerThread = [1, 4], threadsPerWarp = [1, 32], warpsPerCTA = [2, 2], order = [1, 0]}>"
        ],
    )


# ---------------------------------------------------------------------- remove_layout_conversions


def test_vector_add_ends_in_one_layout_without_conversions():
    ir = run(vector_add(aligned=True), coalesce, remove_layout_conversions)
    check(ir, [
        "#blocked = " + B1.format(4, 4),
        "tt.make_range {end = 1024 : i32, start = 0 : i32} : tensor<1024xi32, #blocked>",
        "%offs = arith.addi %base, %range : tensor<1024xi32, #blocked>",
        "tt.load %xp, %mask : tensor<1024x!tt.ptr<f32>, #blocked>",
        "%sum = arith.addf %a, %b : tensor<1024xf32, #blocked>",
        "tt.store %op, %sum, %mask : tensor<1024x!tt.ptr<f32>, #blocked>",
    ])  # fmt: skip
    check_not(ir, ["ttg.convert_layout", "#blocked1"])


def test_softmax_rows_end_in_the_load_layout_with_slices():
    ir = run(SOFTMAX_ROWS, coalesce, remove_layout_conversions)
    blocked = "#blocked = #ttg.blocked<{sizePerThread = [1, 4], threadsPerWarp = [1, 32], warpsPerCTA = [2, 2], order = [1, 0]}>"
    check(ir, [
        blocked,
        "%rr = tt.make_range {end = 4 : i32, start = 0 : i32} : tensor<4xi32, #ttg.slice<{dim = 1, parent = #blocked}>>",
        "%cols = tt.make_range {end = 256 : i32, start = 0 : i32} : tensor<256xi32, #ttg.slice<{dim = 0, parent = #blocked}>>",
        "%x = tt.load %inp, %mask, %ninf : tensor<4x256x!tt.ptr<f32>, #blocked>",
        "-> tensor<4xf32, #ttg.slice<{dim = 1, parent = #blocked}>>",
        "%e = math.exp %xs : tensor<4x256xf32, #blocked>",
    ])  # fmt: skip
    check_not(ir, ["ttg.convert_layout", "#blocked1"])


def test_conversion_pairs_cancel_and_cheap_sources_are_recomputed():
    text = """#blocked = #ttg.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
#blocked1 = #ttg.blocked<{sizePerThread = [4], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
builtin.module attributes {"ttg.num-warps" = 4 : i32} {
  tt.func public @k(%p: !tt.ptr<f32>, %v: tensor<512xf32, #blocked>) {
    %0 = ttg.convert_layout %v : tensor<512xf32, #blocked> -> tensor<512xf32, #blocked1>
    %1 = ttg.convert_layout %0 : tensor<512xf32, #blocked1> -> tensor<512xf32, #blocked>
    %r = tt.make_range {end = 512 : i32, start = 0 : i32} : tensor<512xi32, #blocked>
    %2 = ttg.convert_layout %r : tensor<512xi32, #blocked> -> tensor<512xi32, #blocked1>
    %s = tt.splat %p : !tt.ptr<f32> -> tensor<512x!tt.ptr<f32>, #blocked1>
    %q = tt.addptr %s, %2 : tensor<512x!tt.ptr<f32>, #blocked1>, tensor<512xi32, #blocked1>
    %3 = ttg.convert_layout %1 : tensor<512xf32, #blocked> -> tensor<512xf32, #blocked1>
    tt.store %q, %3 : tensor<512x!tt.ptr<f32>, #blocked1>
    tt.return
  }
}
"""
    module = parse(text)
    assert remove_layout_conversions.run(module)
    module.verify()
    ir = print_module(module)
    check(ir, ["%r = tt.make_range {end = 512 : i32, start = 0 : i32} : tensor<512xi32, #blocked1>",
               "ttg.convert_layout %v : tensor<512xf32, #blocked> -> tensor<512xf32, #blocked1>",
               "tt.store"])  # fmt: skip
    assert ir.count("ttg.convert_layout") == 1  # the argument's data really must move


_EPILOGUE = """#blocked = #ttg.blocked<{{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}}>
#mma = #ttg.nvidia_mma<{{versionMajor = 2, versionMinor = 0, warpsPerCTA = [2, 2], instrShape = [16, 8]}}>
builtin.module attributes {{"ttg.num-warps" = 4 : i32}} {{
  tt.func public @k(%p: tensor<64x64x!tt.ptr<{narrow}>, #blocked>, %q: tensor<64x64x!tt.ptr<{wide}>, #blocked>, %acc: tensor<64x64x{wide}, #mma>) {{
    %moved = ttg.convert_layout %acc : tensor<64x64x{wide}, #mma> -> tensor<64x64x{wide}, #blocked>
    %c = {cast} %moved : tensor<64x64x{wide}, #blocked> to tensor<64x64x{narrow}, #blocked>
    tt.store %p, %c : tensor<64x64x!tt.ptr<{narrow}>, #blocked>
    {also}tt.return
  }}
}}
"""


def _epilogue(cast: str, wide: str, narrow: str, also: str = "") -> str:
    module = parse(_EPILOGUE.format(cast=cast, wide=wide, narrow=narrow, also=also))
    remove_layout_conversions.run(module)
    module.verify()
    return print_module(module)


def test_narrowing_casts_run_before_the_conversion():
    """The accumulator is narrowed in the MMA layout, so half (a quarter) the bytes move."""
    for cast, wide, narrow in (("arith.truncf", "f32", "f16"), ("arith.truncf", "f32", "bf16"),
                               ("arith.trunci", "i32", "i8"), ("arith.fptosi", "f32", "i16")):
        ir = _epilogue(cast, wide, narrow)
        check(ir, [
            f"%c = {cast} %acc : tensor<64x64x{wide}, #mma> to tensor<64x64x{narrow}, #mma>",
            f"ttg.convert_layout %c : tensor<64x64x{narrow}, #mma> -> tensor<64x64x{narrow}, #blocked>",
            "tt.store",
        ])  # fmt: skip
        assert ir.count("ttg.convert_layout") == 1
        check_not(ir, [f"tensor<64x64x{wide}, #blocked>"])


def test_widening_casts_and_shared_conversions_keep_their_place():
    # widening would move more bytes
    ir = _epilogue("arith.extf", "f16", "f32")
    check(ir, ["ttg.convert_layout %acc", "arith.extf %moved : tensor<64x64xf16, #blocked>"])
    # the wide value is also stored: narrowing first would add a second conversion
    also = "tt.store %q, %moved : tensor<64x64x!tt.ptr<f32>, #blocked>\n    "
    ir = _epilogue("arith.truncf", "f32", "f16", also)
    check(ir, ["ttg.convert_layout %acc", "arith.truncf %moved : tensor<64x64xf32, #blocked>"])
    assert ir.count("ttg.convert_layout") == 1


def test_conversions_into_dot_operands_stay():
    ir = run(DOT, coalesce, remove_layout_conversions)
    assert ir.count("#ttg.dot_op<{opIdx = 0") == 2  # the conversion's result and the dot's operand
    check(ir, ["ttg.convert_layout %a", "ttg.convert_layout %b", "tt.dot"])


def test_loop_carried_pointers_move_into_the_load_layout():
    text = """builtin.module {
  tt.func public @k(%p: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %n: i32) {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %r = tt.make_range {end = 1024 : i32, start = 0 : i32} : tensor<1024xi32>
    %ps = tt.splat %p : !tt.ptr<f32> -> tensor<1024x!tt.ptr<f32>>
    %p0 = tt.addptr %ps, %r : tensor<1024x!tt.ptr<f32>>, tensor<1024xi32>
    %zero = arith.constant dense<0.000000e+00> : tensor<1024xf32>
    %step = arith.constant dense<1024> : tensor<1024xi32>
    %res:2 = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %zero, %ptr = %p0) -> (tensor<1024xf32>, tensor<1024x!tt.ptr<f32>>) : i32 {
      %x = tt.load %ptr : tensor<1024x!tt.ptr<f32>>
      %sum = arith.addf %acc, %x : tensor<1024xf32>
      %next = tt.addptr %ptr, %step : tensor<1024x!tt.ptr<f32>>, tensor<1024xi32>
      scf.yield %sum, %next : tensor<1024xf32>, tensor<1024x!tt.ptr<f32>>
    }
    tt.store %p0, %res#0 : tensor<1024x!tt.ptr<f32>>
    tt.return
  }
}
"""
    ir = run(text, coalesce, remove_layout_conversions)
    check(ir, ["#blocked = " + B1.format(4, 4),
               "-> (tensor<1024xf32, #blocked>, tensor<1024x!tt.ptr<f32>, #blocked>)",
               "tt.load %ptr : tensor<1024x!tt.ptr<f32>, #blocked>"])  # fmt: skip
    check_not(ir, ["ttg.convert_layout", "#blocked1"])


# ------------------------------------------------------------------------ reduce_data_duplication


def test_dot_operands_go_through_shared_memory():
    ir = run(DOT, coalesce, remove_layout_conversions, reduce_data_duplication)
    check(ir, [
        "#shared = #ttg.swizzled_shared<{vec = 1, perPhase = 1, maxPhase = 1, order = [1, 0]}>",
        "#smem = #ttg.shared_memory",
        re.compile(r"ttg\.local_alloc %a : \(tensor<32x16xf16, #blocked\d?>\) -> !ttg\.memdesc<32x16xf16, #shared, #smem>"),
        re.compile(r"ttg\.local_load %\d+ : !ttg\.memdesc<32x16xf16, #shared, #smem> -> tensor<32x16xf16, #ttg\.dot_op<\{opIdx = 0"),
        "ttg.local_alloc %b",
        "tt.dot",
    ])  # fmt: skip
    check_not(ir, ["ttg.convert_layout %a", "ttg.convert_layout %b"])


def test_mma_operands_get_a_swizzled_layout():
    # the layout core's best_swizzle (what the lab's swizzle explorer draws), asked for the
    # tile's writes and ldmatrix's row reads, finds Triton's ldmatrix swizzle for fp16 MMA
    # operands: 16-byte vectors XORed across 128-byte rows
    from kernellab.layouts import analyze, best_swizzle, from_encoding, ldmatrix_access, swizzled_shared
    from kernellab.passes.ttgir.encodings import default_blocked

    mma = ttg.NvidiaMmaEncodingAttr(2, 0, [2, 2], [16, 8])
    dot = ttg.DotOperandEncodingAttr(0, mma, 2)
    for shape, want in (([128, 64], (8, 1, 8)), ([128, 32], (8, 2, 4))):
        src = default_blocked(shape, 4)
        shared = reduce_data_duplication.shared_encoding(src, dot, shape, 2)
        assert shared == ttg.SwizzledSharedEncodingAttr(*want, [1, 0])
        accesses = [from_encoding(src, shape), ldmatrix_access(from_encoding(dot, shape), 0, 1)]
        best, _ = best_swizzle(accesses, 2)
        assert best == from_encoding(shared, shape)
        plain = swizzled_shared(1, 1, 1, [1, 0], shape)
        wavefronts = [sum(int(analyze(a, s, 2).wavefronts.sum()) for a in accesses) for s in (plain, best)]
        assert wavefronts[1] < wavefronts[0]


def test_batched_dot_operands_are_rank_3_dot_ops_staged_in_shared_memory():
    ir = run(DOT_BATCHED, coalesce, remove_layout_conversions, reduce_data_duplication)
    check(ir, [
        re.compile(r"#blocked\d? = #ttg\.blocked<\{sizePerThread = \[1, 1, 1\], threadsPerWarp = \[\d+, \d+, \d+\], "
                   r"warpsPerCTA = \[\d+, \d+, \d+\], order = \[2, 1, 0\]\}>"),
        # A's rows are read one k at a time by lanes along m (32 floats apart): swizzled so
        # those reads hit distinct banks; B's columns are already conflict-free plain
        "#shared = #ttg.swizzled_shared<{vec = 1, perPhase = 1, maxPhase = 2, order = [2, 1, 0]}>",
        "#shared1 = #ttg.swizzled_shared<{vec = 1, perPhase = 1, maxPhase = 1, order = [2, 1, 0]}>",
        re.compile(r"ttg\.local_load %\d+ : !ttg\.memdesc<2x16x32xf32, #shared, #smem> -> "
                   r"tensor<2x16x32xf32, #ttg\.dot_op<\{opIdx = 0, parent = #blocked\d?\}>>"),
        re.compile(r"tensor<2x32x16xf32, #ttg\.dot_op<\{opIdx = 1, parent = #blocked\d?\}>>"),
        re.compile(r"tt\.dot .* -> tensor<2x16x16xf32, #blocked\d?>"),
    ])  # fmt: skip
    check_not(ir, ["ttg.convert_layout %a", "ttg.convert_layout %b"])


def test_fma_operand_staging_is_best_swizzle_for_the_scalar_accesses_the_lowering_makes():
    # one swizzle rule: the layout core's best_swizzle, on one element per thread (the
    # local_alloc stores and the FMA loop's reads are scalar); never worse than plain
    from kernellab.layouts import LinearLayout, analyze, from_encoding, swizzled_shared

    src = ttg.BlockedEncodingAttr([1, 1], [1, 32], [4, 1], [1, 0])
    parent = ttg.BlockedEncodingAttr([1, 1], [2, 16], [4, 1], [1, 0])
    shape = [32, 64]
    dot = ttg.DotOperandEncodingAttr(0, parent)
    shared = reduce_data_duplication.shared_encoding(src, dot, shape, 4)

    def scalar(layout):
        return LinearLayout({**layout.bases, "register": []}, layout.out_shape, layout.out_dims)

    accesses = [scalar(from_encoding(src, shape)), scalar(from_encoding(dot, shape))]
    plain = swizzled_shared(1, 1, 1, [1, 0], shape)
    ways = [[analyze(a, s, 4).max_ways for a in accesses] for s in (plain, from_encoding(shared, shape))]
    assert ways[0] == [1, 2]  # lanes along m read A[m, k] 64 floats apart: 2-way conflicts
    assert ways[1] == [1, 1]


def test_batched_dot_operand_layouts_give_each_thread_all_of_k():
    from kernellab.layouts import from_encoding

    module = parse(DOT_BATCHED)
    convert_to_ttgpuir.run(module, num_warps=4, target="sm_90")
    dot = next(op for op in module.walk() if op.name == "tt.dot")
    parent = from_encoding(dot.d.type.encoding, [2, 16, 16])
    a = from_encoding(dot.a.type.encoding, [2, 16, 32])
    for warp in range(4):
        for lane in range(32):
            rows = {(c[0], c[1]) for c in parent.coords_of_thread(lane, warp)}
            held = {tuple(c) for c in a.coords_of_thread(lane, warp)}
            assert {(bb, m, k) for bb, m in rows for k in range(32)} <= held
