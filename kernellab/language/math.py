"""`tl.math`: the elementwise math builtins under Triton's `triton.language.math` names."""

from kernellab.language.builtins import (
    abs,
    ceil,
    cos,
    div_rn,
    erf,
    exp,
    exp2,
    fdiv,
    floor,
    fma,
    log,
    log2,
    rsqrt,
    sin,
    sqrt,
    sqrt_rn,
    umulhi,
)

__all__ = [
    "abs", "ceil", "cos", "div_rn", "erf", "exp", "exp2", "fdiv", "floor", "fma", "log",
    "log2", "rsqrt", "sin", "sqrt", "sqrt_rn", "umulhi",
]  # fmt: skip
