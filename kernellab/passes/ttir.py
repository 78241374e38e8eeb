"""The TTIR pipeline: the passes that clean up the frontend's IR, in order.

1. inline       first, so every later pass sees helper functions' code in context (constant
                arguments fold, duplicates across call sites merge).
2. canonicalize folds constants and identities the frontend leaves (`pid * 1`, splats of
                constants, branches on constexpr-derived constants).
3. cse          merges what the frontend and inlining duplicated (each `offs < n` splats `n`
                again), including constants that folding just created.
4. licm         hoists invariant pure ops out of loops; after CSE so each value moves once.
5. canonicalize again: CSE exposes folds canonicalize could not see (`x - y` once y is x).
6. dce          last, to erase everything the passes above left without users.
"""

from __future__ import annotations

from xdsl.dialects.builtin import ModuleOp

from kernellab.passes import canonicalize, cse, dce, inline, licm
from kernellab.passes.manager import PassManager, PassRecord

TTIR_PASSES = [inline, canonicalize, cse, licm, canonicalize, dce]


def make_ttir(module: ModuleOp, options=None, trace: bool = True) -> list[PassRecord]:
    """Run the TTIR passes on `module` in place; `options.debug` verifies after each pass."""
    debug = (
        options.get("debug", False)
        if isinstance(options, dict)
        else getattr(options, "debug", False)
    )
    return PassManager(TTIR_PASSES, trace=trace, verify=bool(debug)).run(module)
