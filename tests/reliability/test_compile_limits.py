"""Compiles stay bounded (issue 14, item 6): the LLVM IR's per-element addresses are constant
offsets from a few shared bases, so NVPTX code generation stays linear in the block size, and a
tensor above Triton's limit (2**20 elements) is refused at compile time, pointing at the line."""

import re

import pytest

import kernellab as kl
import kernellab.language as tl
from kernellab.frontend.errors import CompilationError


@kl.jit
def add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


@kl.jit
def tile(x_ptr, stride, M: tl.constexpr, N: tl.constexpr):
    offs = tl.arange(0, M)[:, None] * stride + tl.arange(0, N)[None, :]
    tl.store(x_ptr + offs, tl.load(x_ptr + offs) * 2)


_VARIABLE_GEP = re.compile(r"getelementptr [^\n]*, i(32|64) %")


def _llir(kernel, signature, constexprs):
    ck = kl.compile(kernel, signature=signature, constexprs=constexprs, target="sm_90", force=True)
    return ck.asm["llir"]


@pytest.mark.parametrize("block", [1024, 8192])
def test_a_vector_adds_addresses_are_constant_offsets_of_one_base_per_pointer(block):
    llir = _llir(add, "*fp32,*fp32,*fp32,i32", {"BLOCK": block})
    variable = _VARIABLE_GEP.findall(llir)
    constant = re.findall(r"getelementptr [^\n]*, i32 -?\d+", llir)
    assert len(variable) == 3  # x, y, out: one base address each
    assert len(constant) >= 3 * (block // 128 - 1)  # every other element is base + constant


def test_a_2d_tiles_variable_addresses_grow_with_rows_not_elements():
    small = len(_VARIABLE_GEP.findall(_llir(tile, "*fp32,i32", {"M": 8, "N": 256})))
    wide = len(_VARIABLE_GEP.findall(_llir(tile, "*fp32,i32", {"M": 8, "N": 4096})))
    assert wide == small  # 16x the columns, the same number of variable addresses


@kl.jit
def big_range(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, offs)


@kl.jit
def big_broadcast(x_ptr, M: tl.constexpr, N: tl.constexpr):
    offs = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    tl.store(x_ptr + offs, offs)


@kl.jit
def big_dot(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr):
    k = tl.arange(0, 16)
    a = tl.load(a_ptr + tl.arange(0, M)[:, None] * 16 + k[None, :])
    b = tl.load(b_ptr + k[:, None] * N + tl.arange(0, N)[None, :])
    c = tl.dot(a, b)
    tl.store(c_ptr + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :], c)


@pytest.mark.parametrize(
    "kernel, signature, constexprs, line",
    [(big_range, "*i32", {"BLOCK": 2**21}, "tl.arange(0, BLOCK)"),
     (big_broadcast, "*i32", {"M": 2048, "N": 1024}, "tl.arange(0, M)[:, None] * N"),
     (big_dot, "*fp16,*fp16,*fp32", {"M": 2048, "N": 1024}, "tl.dot(a, b)")],
)  # fmt: skip
@pytest.mark.parametrize("target", [None, "sm_90"])
def test_a_tensor_above_2_to_the_20_elements_is_refused_at_its_line(kernel, signature, constexprs, line, target):
    with pytest.raises(CompilationError) as error:
        kl.compile(kernel, signature=signature, constexprs=constexprs, target=target, force=True)
    message = str(error.value)
    assert "1048576" in message and "smaller block" in message
    assert line in message and "^" in message  # the caret under the offending expression


def test_2_to_the_20_elements_is_still_allowed():
    kl.compile(big_broadcast, signature="*i32", constexprs={"M": 1024, "N": 1024})  # the interpreter
