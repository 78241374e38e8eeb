"""End to end: a kernel through the frontend and the TTIR passes, then make_ttgir."""

from __future__ import annotations

import pytest

import kernellab as kl
import kernellab.language as tl
from kernellab.ir import parse_module, print_module
from kernellab.passes.ttgir.axis_info import AxisInfo
from kernellab.backends.nvidia.pipeline import TTGIR_PASSES, make_ttgir
from tests import test_tutorials as tutorials
from tests.filecheck import check, check_not


@kl.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(axis=0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)


ALIGNED = {name: {"tt.divisibility": 16} for name in ("x_ptr", "y_ptr", "out_ptr", "n")}


def ttgir(kernel, signature, constexprs, attrs=None, **options):
    module = kl.compile(kernel, signature=signature, constexprs=constexprs, attrs=attrs).module
    records = make_ttgir(module, {"debug": True, **options})
    return module, records


def test_vector_add_from_python():
    module, records = ttgir(
        add_kernel, "*fp32,*fp32,*fp32,i32", {"BLOCK": 1024}, ALIGNED, num_warps=4
    )
    assert [r.name for r in records] == [p.NAME for p in TTGIR_PASSES]
    ir = records[-1].ir_after
    assert ir == print_module(module) and print_module(parse_module(ir)) == ir
    check(ir, [
        "#blocked = #ttg.blocked<{sizePerThread = [4], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>",
        '"ttg.num-warps" = 4 : i32',
        'ttg.target = "cuda:90"',
        "tt.load", "tt.load", "arith.addf", "tt.store",
    ])  # fmt: skip
    check_not(ir, ["ttg.convert_layout", "#blocked1"])
    load = next(op for op in module.walk() if op.name == "tt.load")
    assert AxisInfo.of(load.ptr).divisibility == (16,)


def test_unaligned_vector_add_uses_scalar_accesses():
    _, records = ttgir(
        add_kernel, "*fp32,*fp32,*fp32,i32", {"BLOCK": 1024}, num_warps=8, target="sm_80"
    )
    ir = records[-1].ir_after
    check(ir, ["#blocked = #ttg.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [8], order = [0]}>",
               'ttg.target = "cuda:80"'])  # fmt: skip
    check_not(ir, ["ttg.convert_layout"])


@pytest.mark.parametrize(
    "kernel, signature, constexprs, aligned",
    [
        (tutorials.softmax_kernel, "*fp32,*fp32,i32,i32,i32,i32", {"BLOCK_SIZE": 1024, "num_stages": 2},
         ["output_ptr", "input_ptr", "input_row_stride", "output_row_stride", "n_cols"]),
        (tutorials._seeded_dropout, "*fp32,*fp32,i32,fp32,i32", {"BLOCK_SIZE": 1024},
         ["x_ptr", "output_ptr", "n_elements"]),
        (tutorials._layer_norm_fwd_fused, "*fp32,*fp32,*fp32,*fp32,*fp32,*fp32,i32,i32,fp32",
         {"BLOCK_SIZE": 1024}, ["X", "Y", "W", "B", "Mean", "Rstd", "stride", "N"]),
    ],
)  # fmt: skip
def test_memory_bound_tutorials_need_no_conversions(kernel, signature, constexprs, aligned):
    attrs = {name: {"tt.divisibility": 16} for name in aligned}
    _, records = ttgir(kernel, signature, constexprs, attrs)
    ir = records[-1].ir_after
    check(
        ir,
        [
            "#blocked = #ttg.blocked<{sizePerThread = [4], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>"
        ],
    )
    check_not(ir, ["ttg.convert_layout", "#blocked1"])


MATMUL_CONSTEXPRS = {"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 8,
                     "ACTIVATION": "leaky_relu", "stride_ak": 1, "stride_bn": 1, "stride_cn": 1}  # fmt: skip
MATMUL_ATTRS = {n: {"tt.divisibility": 16} for n in ("a_ptr", "b_ptr", "c_ptr", "M", "N", "K",
                                                     "stride_am", "stride_bk", "stride_cm")}  # fmt: skip


def matmul_ttgir(**options) -> str:
    matmul = tutorials.matmul_kernel.fn  # the autotuner's kernel
    signature = "*fp16,*fp16,*fp16,i32,i32,i32,i32,i32,i32"
    _, records = ttgir(matmul, signature, MATMUL_CONSTEXPRS, MATMUL_ATTRS, **options)
    return records[-1].ir_after


def test_matmul_tutorial_stages_dot_operands_in_shared_memory():
    ir = matmul_ttgir(num_stages=1)
    check(ir, [
        "#blocked = #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>",
        "#blocked1 = #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>",
        "#shared = ", "#smem = ",
        "scf.for", "tt.load", "tt.load", "ttg.local_alloc %a", "ttg.local_load", "ttg.local_alloc %b",
        "ttg.local_load", "tt.dot", "scf.yield",
    ])  # fmt: skip
    assert "async" not in ir
    assert ir.count("ttg.convert_layout") == 1  # the accumulator, into the store's layout


@pytest.mark.parametrize("stages", [2, 3, 4])
def test_matmul_tutorial_pipelines_its_loads_over_num_stages(stages):
    """Rings of `stages` tiles (stages-1 in flight, one being read); the prologue copies
    iterations 0..stages-2, one commit group each; the loop waits for its own tile (stages-2
    groups may stay in flight), at once refills the slot the previous iteration read with the
    tile stages-1 iterations ahead (the barrier after the wait orders it after that read), then
    reads its slot and runs the dot; the epilogue drains and frees."""
    ir = matmul_ttgir(num_stages=stages)
    prologue = ["ttg.async_copy_global_to_local %a_ptrs", "ttg.async_copy_global_to_local %b_ptrs",
                "ttg.async_commit_group"] * (stages - 1)  # fmt: skip
    check(ir, [
        f"ttg.local_alloc : () -> !ttg.memdesc<{stages}x64x32xf16, #shared, #smem, mutable>",
        f"ttg.local_alloc : () -> !ttg.memdesc<{stages}x32x64xf16, #shared1, #smem, mutable>",
        *prologue,
        "scf.for",
        f"ttg.async_wait {{num = {stages - 2} : i32}}",
        "ttg.async_copy_global_to_local", "ttg.async_copy_global_to_local", "ttg.async_commit_group",
        "ttg.memdesc_index", "ttg.memdesc_index", "ttg.local_load", "ttg.local_load", "tt.dot",
        "scf.yield",
        "ttg.async_wait {num = 0 : i32}", "ttg.local_dealloc", "ttg.local_dealloc",
    ])  # fmt: skip
    assert "tt.load" not in ir and ir.count("ttg.async_copy_global_to_local") == 2 * stages

