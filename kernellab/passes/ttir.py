"""The TTIR pipeline: the passes that clean up the frontend's IR, in order.

1. inline       first, so every later pass sees helper functions' code in context (constant
                arguments fold, duplicates across call sites merge).
2. canonicalize folds constants and identities the frontend leaves (`pid * 1`, splats of
                constants, branches on constexpr-derived constants) and forwards the values a
                loop carries unchanged (a block pointer's base and strides).
3. tiles_as_descriptors  pointer loads of whole 2-D tiles (the tutorial matmul's operands) as
                tensor descriptor loads, where the target copies those whole (`keep`: Hopper's
                TMA) and the pass proves they read the same; before lower_descriptors, which
                then keeps them.
4. lower_descriptors  tensor descriptor accesses as masked pointer loads and stores, except
                those the target copies whole (`keep`, Hopper's TMA, which needs their fields
                traced to kernel parameters: after the forwarding); before the passes below,
                which clean up the index math.
5. cse          merges what the frontend and inlining duplicated (each `offs < n` splats `n`
                again), including constants that folding just created.
6. licm         hoists invariant pure ops out of loops; after CSE so each value moves once.
7. fuse_nested_loops  fuses a `tl.range(..., flatten=True)` nest into one loop (the pipeliner
                then runs across its outer iterations); after licm, so the prologue it
                recomputes per iteration holds only what depends on the outer loop. Not in
                the interpreter (its record says so), the reference that runs the kernel
                as written.
8. canonicalize again: CSE exposes folds canonicalize could not see (`x - y` once y is x),
                and folds the fused loop's index math where bounds are constants.
9. dce          last, to erase everything the passes above left without users.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects.builtin import ModuleOp

from kernellab.passes import (
    canonicalize,
    cse,
    dce,
    fuse_nested_loops,
    inline,
    licm,
    lower_descriptors,
    tiles_as_descriptors,
)
from kernellab.passes.manager import PassManager, PassOutcome, PassRecord

TTIR_PASSES = [inline, canonicalize, tiles_as_descriptors, lower_descriptors, cse, licm, fuse_nested_loops,
               canonicalize, dce]  # fmt: skip


@dataclass(frozen=True)
class _LowerDescriptors:
    NAME = lower_descriptors.NAME
    keep: object

    def run(self, module: ModuleOp):
        return lower_descriptors.run(module, self.keep)


@dataclass(frozen=True)
class _TilesAsDescriptors:
    NAME = tiles_as_descriptors.NAME
    keep: object
    debug: bool

    def run(self, module: ModuleOp):
        if self.keep is None:  # the record stays, saying why nothing was rewritten
            return PassOutcome(False, "the target has no tile copy engine")
        if self.debug:
            return PassOutcome(False, "debug compiles check the bounds of pointer accesses")
        return tiles_as_descriptors.run(module, self.keep)


@dataclass(frozen=True)
class _FuseNestedLoops:
    NAME = fuse_nested_loops.NAME
    enabled: bool

    def run(self, module: ModuleOp):
        if not self.enabled:  # the record stays, saying why nothing was fused
            return PassOutcome(False, "the interpreter runs loop nests as written")
        return fuse_nested_loops.run(module)


def make_ttir(module: ModuleOp, options=None, trace: bool = True, keep_descriptors=None,
              tile_descriptors=None, fuse_loops: bool = True) -> list[PassRecord]:  # fmt: skip
    """Run the TTIR passes on `module` in place; `options.debug` verifies after each pass.
    `keep_descriptors(op) -> reason` keeps the descriptor accesses a target copies whole (those
    with no reason to lower them); `tile_descriptors(op) -> reason`, the same rule for a dot's
    operand tile read through pointers (tiles_as_descriptors). `fuse_loops` False (the
    interpreter) keeps flatten=True nests as written."""
    debug = (
        options.get("debug", False)
        if isinstance(options, dict)
        else getattr(options, "debug", False)
    )
    configured = {
        tiles_as_descriptors: _TilesAsDescriptors(tile_descriptors, bool(debug)),
        lower_descriptors: _LowerDescriptors(keep_descriptors),
        fuse_nested_loops: _FuseNestedLoops(fuse_loops),
    }
    passes = [configured.get(p, p) for p in TTIR_PASSES]
    return PassManager(passes, trace=trace, verify=bool(debug)).run(module)
