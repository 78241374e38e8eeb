"""ptxas miscompiles that the PTX stage steers around (backends/nvidia/ptxas_workarounds.py),
checked on the CPU: the PTX rewrite itself, its pass record, and the machine code that
nvJitLink's ptxas makes of a compiled kernel (disassembled by nvdisasm). Running the kernels on a GPU is test_lowering_gpu.py's job
(case "min_max_neg") and tests/reliability/test_fuzz.py's (the program the fuzzer found)."""

from __future__ import annotations

import re

import pytest

import kernellab as kl
import kernellab.language as tl
from kernellab.backends.nvidia.ptxas_workarounds import spell_out_negations_under_min_max
from kernellab.backends.nvidia.sass import find_nvdisasm

# -- the rewrite ------------------------------------------------------------------------------


def test_a_negation_that_chained_min_max_read_becomes_not_plus_one():
    ptx = "\tneg.s32 \t%r4, %r1;\n\tmin.s32 \t%r5, %r2, %r4;\n\tmin.s32 \t%r6, %r3, %r5;\n"
    assert spell_out_negations_under_min_max(ptx) == (
        "\tnot.b32 \t%r4, %r1;\n\tadd.s32 \t%r4, %r4, 1;\n\tmin.s32 \t%r5, %r2, %r4;\n\tmin.s32 \t%r6, %r3, %r5;\n",
        1,
    )


def test_16_bit_negations_and_ones_read_through_copies_are_rewritten_too():
    ptx = ("\tneg.s16 \t%rs3, %rs1;\n\tmax.s16 \t%rs4, %rs2, %rs3;\n"
           "\tneg.s32 \t%r4, %r1;\n\tmov.b32 \t%r7, %r4;\n\tmax.u32 \t%r5, %r2, %r7;\n")  # fmt: skip
    out, rewritten = spell_out_negations_under_min_max(ptx)
    assert "neg." not in out and rewritten == 2
    assert "\tnot.b16 \t%rs3, %rs1;\n\tadd.s16 \t%rs3, %rs3, 1;\n" in out
    assert "\tnot.b32 \t%r4, %r1;\n\tadd.s32 \t%r4, %r4, 1;\n\tmov.b32 \t%r7, %r4;\n" in out


def test_negations_no_min_max_reads_keep_neg():
    """ptxas folds those into their users for free (IADD3 -R, IMAD); 64-bit and float negations
    stay too (the miscompile is the 16/32-bit integer VIMNMX3's)."""
    ptx = ("\tneg.s32 \t%r4, %r1;\n\tadd.s32 \t%r5, %r2, %r4;\n\tmin.s32 \t%r6, %r3, %r5;\n"
           "\tneg.s64 \t%rd3, %rd1;\n\tmin.s64 \t%rd4, %rd2, %rd3;\n"
           "\tneg.f32 \t%r9, %r8;\n\tmin.f32 \t%r10, %r9, %r3;\n")  # fmt: skip
    assert spell_out_negations_under_min_max(ptx) == (ptx, 0)


def test_the_rewrite_is_a_pass_the_viewer_shows():
    ck = kl.compile(min_max_chain_k, signature="*i32,*i32,*i32,*i32", target="sm_90",
                    constexprs={"CHAIN": "min", "NEGATE": "neg", "BLOCK": 128})  # fmt: skip
    record = next(r for r in ck.passes if r.name == "ptxas-workarounds")
    assert record.changed and record.stage == "ptx" and "negation(s) read by integer min/max" in record.summary
    assert record.ir_after == ck.asm["ptx"] and "neg.s32" not in ck.asm["ptx"]
    sm80 = kl.compile(min_max_chain_k, signature="*i32,*i32,*i32,*i32", target="sm_80",
                      constexprs={"CHAIN": "min", "NEGATE": "neg", "BLOCK": 128})  # fmt: skip
    assert not next(r for r in sm80.passes if r.name == "ptxas-workarounds").changed
    assert "neg.s32" in sm80.asm["ptx"]


# -- what ptxas makes of a compiled kernel ------------------------------------------------------


@kl.jit
def min_max_chain_k(a_ptr, b_ptr, c_ptr, out_ptr, CHAIN: tl.constexpr, NEGATE: tl.constexpr,
                    BLOCK: tl.constexpr):  # fmt: skip
    offs = tl.arange(0, BLOCK)
    a = tl.load(a_ptr + offs)
    b = tl.load(b_ptr + offs)
    c = tl.load(c_ptr + offs)
    if NEGATE == "neg":
        a = -a
    elif NEGATE == "sub":
        a = 0 - a
    elif NEGATE == "mul":
        a = a * -1
    if CHAIN == "max_max":
        y = tl.maximum(c, tl.maximum(b, a))
    else:
        y = tl.minimum(tl.minimum(b, a), c)
    tl.store(out_ptr + offs, y)


def _instructions(ck) -> list[str]:
    """The SASS instructions, without addresses, line comments or register-reuse hints."""
    lines = re.findall(r"^\s+/\*[0-9a-f]{4}\*/\s+([^;]*);", ck.asm["sass"], re.M)
    return [line.replace(".reuse", "").strip() for line in lines]


@pytest.mark.skipif(find_nvdisasm() is None, reason="nvdisasm is not installed")
@pytest.mark.parametrize("negate", ["neg", "sub", "mul"])
@pytest.mark.parametrize("chain", ["max_max", "min_min"])
@pytest.mark.parametrize("dtype", ["i32", "i16"])
def test_ptxas_keeps_the_negation_inside_chained_integer_min_max(dtype, chain, negate):
    """max(c, max(b, -a)) must not assemble to the machine code of max(c, max(b, a)): on sm_90
    ptxas fuses the chain into one VIMNMX3 and, given a PTX `neg`, dropped the negation."""

    def compile_(how):
        constexprs = {"CHAIN": chain, "NEGATE": how, "BLOCK": 256}
        return kl.compile(min_max_chain_k, signature=",".join([f"*{dtype}"] * 4), constexprs=constexprs,
                          target="sm_90", force=True)  # fmt: skip

    negated, plain = compile_(negate), compile_("")
    assert not re.search(r"\bneg\.s(16|32)\b", negated.asm["ptx"])
    assert _instructions(negated) != _instructions(plain), "\n".join(_instructions(negated))


@kl.jit
def fuzz_found_k(a_ptr, b_ptr, out_ptr, v0, B0: tl.constexpr):
    """The program the fuzzer found wrong on the GPU, as it generates it (store finish)."""
    offs = tl.arange(0, B0)
    mask = offs < v0
    a = tl.load(a_ptr + offs, mask=mask, other=0)
    b = tl.load(b_ptr + offs, mask=mask, other=0)
    value = tl.minimum(a, tl.minimum(b, (-a)))
    tl.store(out_ptr + offs, value, mask=mask)


def test_the_fuzz_found_program_negates_with_not_and_add_on_sm90_only():
    def ptx(target):  # without the .loc lines between the instructions
        text = kl.compile(fuzz_found_k, signature="*i32,*i32,*fp64,i32", constexprs={"B0": 2}, target=target,
                          force=True).asm["ptx"]  # fmt: skip
        return re.sub(r"^\s*\.loc\b.*\n", "", text, flags=re.M)

    sm90, sm80 = ptx("sm_90"), ptx("sm_80")
    negated = r"not\.b32\s+(%r\d+), %r\d+;\s+add\.s32\s+\1, \1, 1;\s+min\.s32\s+%r\d+, %r\d+, \1;"
    assert re.search(negated, sm90) and "neg.s32" not in sm90, sm90
    assert re.search(r"neg\.s32\s+(%r\d+), %r\d+;\s+min\.s32\s+%r\d+, %r\d+, \1;", sm80), sm80

