"""tl.assume and tl.extra.cuda: hints and the GPU's own state (timer, SM id, grid
dependencies), each one op the backends give their meaning."""

from __future__ import annotations

from kernellab.frontend.errors import SemanticError
from kernellab.frontend.semantic.base import SemanticBase
from kernellab.frontend.types import to_ir_type as to_ir
from kernellab.frontend.values import show
from kernellab.ir import tt
from kernellab.language import core as tl


class GpuStateMixin(SemanticBase):
    def assume(self, cond) -> None:
        cond = self.to_tensor(cond)
        if not cond.dtype.is_bool():
            raise SemanticError(
                f"tl.assume needs a boolean condition, got {show(cond)}; compare, e.g. "
                "tl.assume(n > 0)"
            )
        self.builder.create(tt.AssumeOp(cond.handle))

    def gdc_wait(self) -> None:
        self.builder.create(tt.GridDependencyWaitOp())

    def gdc_launch_dependents(self) -> None:
        self.builder.create(tt.LaunchDependentsOp())

    def globaltimer(self) -> tl.tensor:
        return self._emit(tt.GlobalTimerOp(to_ir(tl.int64)), tl.int64)

    def smid(self) -> tl.tensor:
        return self._emit(tt.SmIdOp(to_ir(tl.int32)), tl.int32)
