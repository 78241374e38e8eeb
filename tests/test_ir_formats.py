"""The dialects' declarative assembly formats, compiled on first use (ir/op_families.py's
`op_definition`): every one compiles, none at import, and IR that uses them prints, parses and
prints again to the same text."""

import subprocess
import sys

import pytest

import kernellab as kl
from kernellab.examples import attention_fwd_kernel, attention_fwd_overlapped_kernel, matmul_kernel
from kernellab.ir import parse_module, print_module
from kernellab.ir.arith import ARITH
from kernellab.ir.cpu import CPU
from kernellab.ir.math import Math
from kernellab.ir.tt import TT
from kernellab.ir.ttg import TTG
from kernellab.ir.ttng import TTNG

DIALECTS = (ARITH, Math, TT, TTG, TTNG, CPU)


def test_every_assembly_format_compiles():
    from xdsl.irdl.declarative_assembly_format import FormatProgram

    with_format = [op for dialect in DIALECTS for op in dialect.operations if op.assembly_format]
    assert len(with_format) > 50  # the dialects' formats, not an empty walk
    for op in with_format:
        assert isinstance(op.format_program(), FormatProgram), op.name
        assert op.format_program() is op.format_program()  # compiled once


def test_importing_the_dialects_compiles_no_format():
    probe = """
import xdsl.dialects.builtin, xdsl.dialects.scf
from xdsl.irdl.declarative_assembly_format import FormatProgram
compiled = []
original = FormatProgram.from_str
FormatProgram.from_str = staticmethod(lambda text, op_def: compiled.append(op_def.name) or original(text, op_def))
import kernellab.ir
assert not compiled, compiled
"""
    subprocess.run([sys.executable, "-c", probe], check=True)


A16 = {"tt.divisibility": 16}


@pytest.mark.parametrize(
    "kernel, signature, constexprs, num_warps, attrs",
    [
        (matmul_kernel, "*fp16,*fp16,*fp16,i32,i32,i32,i32,i32,i32",
         dict(BLOCK_SIZE_M=128, BLOCK_SIZE_N=256, BLOCK_SIZE_K=64, GROUP_SIZE_M=8, ACTIVATION="",
              stride_ak=1, stride_bn=1, stride_cn=1), 8,
         {n: A16 for n in ("a_ptr", "b_ptr", "c_ptr", "M", "N", "K", "stride_am", "stride_bk", "stride_cm")}),
        (attention_fwd_kernel, "*fp16,*fp16,*fp16,*fp16,fp32," + ",".join(["i32"] * 18),
         dict(HEAD_DIM=64, BLOCK_M=128, BLOCK_N=64, CAUSAL=True), 8, None),
        (attention_fwd_overlapped_kernel, "*fp16,*fp16,*fp16,*fp16,fp32," + ",".join(["i32"] * 18),
         dict(HEAD_DIM=64, BLOCK_M=128, BLOCK_N=64, CAUSAL=True), 8, None),
    ],
    ids=["matmul", "attention", "attention-overlapped"],
)  # fmt: skip
def test_sm90a_ir_round_trips_through_the_formats(kernel, signature, constexprs, num_warps, attrs):
    """The sm_90a TTGIR of matmul and attention (shared-memory rings, async copies, wgmma,
    fences: most of the formatted ops) parses back and prints to the same text, at each stage."""
    ck = kl.compile(kernel, signature=signature, constexprs=constexprs, num_warps=num_warps,
                    num_stages=3, attrs=attrs, target="sm_90a", force=True)  # fmt: skip
    formatted = set()
    for stage in ("ttir", "ttgir"):
        text = ck.asm[stage]
        module = parse_module(text)
        assert print_module(module) == text
        formatted |= {op.name for op in module.walk() if type(op).assembly_format}
    assert {"ttg.local_alloc", "ttng.warp_group_dot"} <= formatted, sorted(formatted)
