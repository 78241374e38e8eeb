"""The core's rule tables: every op the target-neutral lowering handles, assembled explicitly
from each rule module's table. A target lowers with `{**CORE_RULES, **its own rules}`."""

from kernellab.backends.llvm import (
    assume,
    control,
    dot,
    elementwise,
    gather,
    memory,
    reduce,
    scan,
    shape,
)

CORE_RULES = {
    **assume.RULES,
    **control.RULES,
    **elementwise.RULES,
    **shape.RULES,
    **gather.RULES,
    **memory.RULES,
    **reduce.RULES,
    **scan.RULES,
    **dot.RULES,
}

CORE_SCRATCH = {
    **shape.SCRATCH,
    **gather.SCRATCH,
    **memory.SCRATCH,
    **reduce.SCRATCH,
    **scan.SCRATCH,
}
