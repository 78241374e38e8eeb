"""Rewrites of the PTX that keep ptxas from miscompiling it: the `ptxas-workarounds` pass.

LLVM's PTX is correct; a few patterns in it are assembled wrongly by some ptxas versions. Each
workaround here spells such a pattern another way with the same meaning, only where the pattern
occurs and only for the targets the bug affects, as its own traced pass so that the viewer shows
what was rewritten and why (the PTX stage's last record).
"""

from __future__ import annotations

import re

from kernellab.backends.nvidia.ptx import LlvmModule, parse_arch
from kernellab.passes.manager import PassOutcome

_NEG = re.compile(r"^([ \t]*)neg\.s(16|32)[ \t]+(%\w+),[ \t]*(%\w+);", re.M)
_MIN_MAX_OPERANDS = re.compile(r"^[ \t]*(?:@!?%\w+[ \t]+)?(?:min|max)\.[\w.]+[ \t]+%\w+,([^;]*);", re.M)
_COPY = re.compile(r"^[ \t]*mov\.[bsu](?:16|32)[ \t]+(%\w+),[ \t]*(%\w+);", re.M)


def spell_out_negations_under_min_max(ptx: str) -> tuple[str, int]:
    """Rewrite each 16/32-bit integer `neg` whose result a `min`/`max` reads (directly or through
    `mov` copies) as `not` + `add 1`, the same two's-complement value.

    Works around a ptxas miscompile on sm_90 and later (seen with nvJitLink 13.0; reported for
    ptxas 12.8 to 13.3 in pytorch/pytorch#190973): two chained integer min/max become one
    3-input VIMNMX3, and a `neg` feeding them is folded into it and lost, e.g.
    `neg.s32 %r4, %r1; min.s32 %r5, %r2, %r4; min.s32 %r6, %r3, %r5` assembles to the same
    machine code as min(r3, r2, r1). The fuzzer found it: on int32, min(a, min(b, -a)) gave 0
    on the GPU where the interpreter gave -6. ptxas keeps a `not` + `add` out of the fused
    instruction (LOP3 + VIADDMNMX), which is correct; a `sub 0, x` or `mul x, -1` is not.
    Negations nothing min/max reads keep `neg`, which ptxas folds for free elsewhere. Returns
    the PTX and how many negations were rewritten.
    """
    if "neg.s" not in ptx:
        return ptx, 0
    read = set()
    for operands in _MIN_MAX_OPERANDS.findall(ptx):
        read.update(o.strip() for o in operands.split(","))
    if not read:
        return ptx, 0
    copies = _COPY.findall(ptx)
    grew = True
    while grew:  # a register copied into one that a min/max reads is read by it too
        grew = False
        for dst, src in copies:
            if dst in read and src not in read:
                read.add(src)
                grew = True

    rewritten = 0

    def rewrite(m: re.Match) -> str:
        nonlocal rewritten
        indent, bits, dst, src = m.groups()
        if dst not in read:
            return m.group(0)
        rewritten += 1
        return f"{indent}not.b{bits} \t{dst}, {src};\n{indent}add.s{bits} \t{dst}, {dst}, 1;"

    return _NEG.sub(rewrite, ptx), rewritten


class _PtxasWorkarounds:
    NAME = "ptxas-workarounds"
    STAGE = "ptx"

    @staticmethod
    def run(m: LlvmModule) -> PassOutcome:
        if parse_arch(m.arch)[0] < 90:
            return PassOutcome(False, f"none needed for {m.arch}")
        m.ptx, negations = spell_out_negations_under_min_max(m.ptx)
        if not negations:
            return PassOutcome(False, "no pattern ptxas miscompiles")
        return PassOutcome(True, f"{negations} negation(s) read by integer min/max spelled not + add "
                                 "(ptxas on sm_90+ drops them: VIMNMX3)")  # fmt: skip


PTXAS_WORKAROUNDS = _PtxasWorkarounds()

__all__ = ["PTXAS_WORKAROUNDS", "spell_out_negations_under_min_max"]
