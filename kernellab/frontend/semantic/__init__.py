"""Triton's semantics for every builtin and operator: type promotion, broadcasting, checks, IR.

The AST visitor hands each operator and `tl` call to a `Semantic` method with the user's
arguments: `tl.tensor`s (runtime values) or Python values/constexprs (compile-time). A `tl` call's
arguments are bound to the builtin's parameters in `kernellab.language` first, its defaults
filled in (`values.bind_to_builtin`), so the methods repeat no defaults of their own. The method
decides the result type exactly as Triton does, emits the ops through the `IRBuilder`, and
returns a `tl.tensor`. User mistakes raise `SemanticError` with one sentence that names the
shapes and dtypes involved and says what to change; the visitor adds the source location.

`Semantic` is one class assembled from a mixin per family of builtins, each in its own module
on top of `base.SemanticBase` (conversions, promotion, broadcasting). The mixins call each
other's builtins through `self` (a cast to bool compares with `not_equal`, `tl.argmax` uses
`where`), so only the assembled class is meant to be used.
"""

from kernellab.frontend.semantic.arithmetic import ArithmeticMixin
from kernellab.frontend.semantic.debug import DebugMixin
from kernellab.frontend.semantic.dot import DotMixin
from kernellab.frontend.semantic.gpu_state import GpuStateMixin
from kernellab.frontend.semantic.memory import MemoryMixin
from kernellab.frontend.semantic.reductions import ReductionMixin
from kernellab.frontend.semantic.shapes import ShapeMixin
from kernellab.frontend.semantic.tiles import TileMixin


class Semantic(
    ArithmeticMixin,
    ShapeMixin,
    MemoryMixin,
    TileMixin,
    ReductionMixin,
    DotMixin,
    DebugMixin,
    GpuStateMixin,
):
    """Builds IR for builtins and operators with Triton's typing rules.

    `Semantic(builder, call_function)`: `call_function(fn, args, kwargs)` comes from the visitor
    and emits a call of a kernel function (the combine functions of reduce and scan).
    """


__all__ = ["Semantic"]
