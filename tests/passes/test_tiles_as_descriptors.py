"""tiles_as_descriptors: which pointer tiles become descriptor loads on sm_90a, and that the
rewritten kernel computes what the pointer kernel does (run on the interpreter after its
descriptor loads are lowered to their meaning, reads outside the tensor giving zero)."""

from __future__ import annotations

import numpy as np
import pytest

import kernellab as kl
import kernellab.language as tl
from kernellab.examples import add_kernel, matmul_kernel
from kernellab.ir import parse_module
from kernellab.passes import lower_descriptors
from kernellab.passes.tiles_as_descriptors import Linear, linear

ALIGNED = {"tt.divisibility": 16}
SIGNATURE = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32", "K": "i32",
             "stride_am": "i32", "stride_bk": "i32", "stride_cm": "i32"}  # fmt: skip
TUTORIAL = dict(stride_ak=1, stride_bn=1, stride_cn=1, BLOCK_SIZE_M=64, BLOCK_SIZE_N=64, BLOCK_SIZE_K=32,
                GROUP_SIZE_M=8, ACTIVATION="")  # fmt: skip


def record(ck) -> str:
    return next(r for r in ck.passes if r.name == "tiles_as_descriptors").summary


def compile_tutorial(target="sm_90a", attrs=None, **options):
    attrs = {n: ALIGNED for n in SIGNATURE} if attrs is None else attrs
    return kl.compile(matmul_kernel, signature=SIGNATURE, constexprs=TUTORIAL, attrs=attrs,
                      target=target, num_warps=4, num_stages=3, **options)  # fmt: skip


def test_the_tutorial_matmul_reads_both_operands_through_descriptors():
    ck = compile_tutorial()
    assert record(ck) == "2× tile-as-descriptor, 2× drop-carried-pointers"
    ttir = ck.asm["ttir"]
    loop = ttir.split("scf.for")[1].split("scf.yield")[0]
    # A: rows from pid_m * BM, columns k * BK along K; B: rows k * BK, columns from pid_n * BN
    assert "tt.descriptor_load %a_ptr[" in loop and "tt.descriptor_load %b_ptr[" in loop
    assert " tt.load " not in loop and "tt.addptr" not in loop  # the carried pointers are gone
    assert ck.asm["ptx"].count("cp.async.bulk.tensor.2d.shared::cluster.global") >= 2


@pytest.mark.parametrize("target", ["sm_90", "sm_80"])
def test_targets_without_tma_keep_the_pointer_loads(target):
    ck = compile_tutorial(target=target)
    assert record(ck) == "the target has no tile copy engine"
    assert "tt.descriptor_load" not in ck.asm["ttir"]


def test_debug_compiles_keep_the_pointer_loads_they_check():
    assert record(compile_tutorial(debug=True)) == "debug compiles check the bounds of pointer accesses"


def test_strides_not_known_aligned_keep_the_pointer_loads_and_say_why():
    attrs = {n: ALIGNED for n in SIGNATURE if n != "stride_am"}
    summary = record(compile_tutorial(attrs=attrs))
    assert "kept-pointers(the target would not copy the tile whole" in summary
    assert "stride 0 is not known to be a multiple of 16 bytes" in summary


@kl.jit
def wrapped_rows_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm,
                        BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                        MASK_ROWS: tl.constexpr, OTHER: tl.constexpr):  # fmt: skip
    """The tutorial's operand loads (rows and columns wrapped, K masked) with the row mask of
    the store and the masked-off value as parameters."""
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BM + tl.arange(0, BM)
    offs_n = pid_n * BN + tl.arange(0, BN)
    offs_k = tl.arange(0, BK)
    a_ptrs = a_ptr + (offs_m % M)[:, None] * stride_am + offs_k[None, :]
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + (offs_n % N)[None, :]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BK, other=OTHER)
        b = tl.load(b_ptrs, mask=offs_k[:, None] + k * BK < K, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BK
        b_ptrs += BK * stride_bk
    mask = offs_n[None, :] < N
    if MASK_ROWS:
        mask = mask & (offs_m[:, None] < M)
    tl.store(c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :], acc.to(tl.float16), mask=mask)


def compile_wrapped(mask_rows: bool, other: float, target="sm_90a"):
    constexprs = dict(BM=64, BN=64, BK=32, MASK_ROWS=mask_rows, OTHER=other)
    return kl.compile(wrapped_rows_kernel, signature=SIGNATURE, constexprs=constexprs,
                      attrs={n: ALIGNED for n in SIGNATURE}, target=target, num_warps=4)  # fmt: skip


def test_a_wrapped_dim_needs_a_store_that_masks_the_rows_it_wraps():
    assert record(compile_wrapped(True, 0.0)).startswith("2× tile-as-descriptor")
    # without the row mask, rows past M would be stored: those of the wrapped read (rows from
    # the top of A) differ from zeros
    summary = record(compile_wrapped(False, 0.0))
    assert "kept-pointers(dim 0 wraps" in summary and "not masked to the rows inside the tensor" in summary


def test_masked_off_elements_must_read_zero():
    ck = compile_wrapped(True, 1.0)
    assert record(ck) == "1× kept-pointers(its masked-off elements are not zero)"
    # the record says why, and that the IR is as it was
    assert not next(r for r in ck.passes if r.name == "tiles_as_descriptors").changed


def test_a_kernel_without_dots_is_left_as_it_is():
    ck = kl.compile(add_kernel, signature="*fp32,*fp32,*fp32,i32", constexprs={"BLOCK_SIZE": 1024}, target="sm_90a")
    assert record(ck) == "no dot reads two loaded tiles"


@pytest.mark.parametrize("kernel", ["tutorial", "wrapped"])
@pytest.mark.parametrize("shape", [(80, 96, 48), (64, 128, 32), (17, 144, 100), (130, 40, 0)])
def test_the_rewritten_kernel_computes_what_the_pointer_kernel_does(kernel, shape):
    """The sm_90a TTIR, its descriptor loads lowered to their meaning (masked loads reading 0
    outside [0, shape)), run on the interpreter: partial tiles on every edge, rows and columns
    the pointer kernel wraps, K = 0 (no iteration)."""
    ck = compile_tutorial() if kernel == "tutorial" else compile_wrapped(True, 0.0)
    module = parse_module(ck.asm["ttir"])
    assert lower_descriptors.run(module).counts["lower-load"] == 2
    interpreted = kl.compile(str(module), target=None)
    m, n, k = shape
    rng = np.random.default_rng(sum(shape))
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    c = np.full((m, n), np.nan, np.float16)
    if kernel == "tutorial":
        interpreted[(kl.cdiv(m, 64) * kl.cdiv(n, 64),)](a, b, c, m, n, k, k, n, n)
    else:
        interpreted[(kl.cdiv(m, 64), kl.cdiv(n, 64))](a, b, c, m, n, k, k, n, n)
    expected = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(c.astype(np.float64), expected, rtol=2e-3, atol=2e-3 * np.sqrt(max(k, 1)))


def test_linear_forms_read_index_arithmetic():
    module = parse_module(compile_tutorial(target="sm_90").asm["ttir"])
    masks = [op for op in module.walk() if op.name == "arith.cmpi" and "tensor<1x32xi32>" in str(op.lhs.type)]
    form = linear(masks[0].rhs)  # splat(K - k * 32)
    (k_arg,) = [a for a in form.terms if getattr(a, "name_hint", None) == "K"]
    (iv,) = [a for a in form.terms if a is not k_arg]
    assert form == Linear({k_arg: 1, iv: -32}, 0)
    assert linear(masks[0].lhs).terms and linear(masks[0].lhs).has_arange()
