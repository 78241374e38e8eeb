"""convert-to-ttgpuir: TTIR → TTGIR. Every tensor gets a layout; the module records the target.

Each tensor value gets Triton's default blocked layout for its shape (one element per thread per
step, last dim fastest; see encodings.blocked_for), except where an op fixes its layout:
  - tt.reduce yields the slice of its operand's layout along the reduced axis;
  - tt.expand_dims needs its operand in the slice of its result's layout, tt.broadcast needs its
    operand in its result's layout, tt.trans permutes its operand's layout;
  - tt.dot (lowered with FMAs until tensor cores come) takes its operands as `#ttg.dot_op` of
    its result's blocked layout;
  - tt.gather takes its index in its result's layout (each thread reads the index of every
    result element it holds), its source in the source's own default layout.
Where an operand's layout differs from what its op needs, a ttg.convert_layout is inserted;
remove_layout_conversions removes most of them later. Loop-carried values keep the layout of
their initial value. Scalars, including the arguments of reduce/scan combine regions, stay
scalars. The layouts here are only a correct start: coalesce picks the ones memory wants.
"""

from __future__ import annotations

from xdsl.dialects import scf
from xdsl.dialects.builtin import FunctionType, ModuleOp, TensorType
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.rewriter import Rewriter

from kernellab.ir import arith, tt, ttg
from kernellab.passes.rewrite import Rewrites
from kernellab.passes.structured import StructuredWalk
from kernellab.passes.ttgir.encodings import convert_before, default_blocked, permuted, retyped

NAME = "convert_to_ttgpuir"

TARGETS = {"sm_80": "cuda:80", "sm_90": "cuda:90", "sm_90a": "cuda:90"}


def run(
    module: ModuleOp,
    num_warps: int = 4,
    target: str = "sm_90",
    threads_per_warp: int = 32,
    num_ctas: int = 1,
    elements_per_thread: int = 1,
) -> Rewrites:
    """`elements_per_thread`: consecutive elements along the fastest dim each thread holds in
    the default layout (Triton's 1; the CPU's warps each take a contiguous chunk)."""
    ttg.set_module_attrs(module, num_warps, TARGETS.get(target, target), threads_per_warp, num_ctas)
    rewrites = Rewrites()
    rewrites.note("set-module-attributes")
    converter = _Converter(num_warps, threads_per_warp, rewrites, elements_per_thread)
    for func in [op for op in module.ops if isinstance(op, tt.FuncOp)]:
        converter.function(func)
    return rewrites


class _Converter(StructuredWalk):
    def __init__(self, num_warps: int, threads_per_warp: int, rewrites: Rewrites, elements_per_thread: int = 1):
        self.num_warps = num_warps
        self.elements_per_thread = elements_per_thread
        self.threads_per_warp = threads_per_warp
        self.rewrites = rewrites

    def default(self, t: Attribute) -> Attribute:
        if not isinstance(t, TensorType):
            return t
        return ttg.with_encoding(
            t, default_blocked(t.get_shape(), self.num_warps, self.threads_per_warp, self.elements_per_thread)
        )

    def retype(self, value: SSAValue, t: Attribute) -> SSAValue:
        if value.type == t:
            return value
        self.rewrites.note("assign-layout")
        return Rewriter.replace_value_with_new_type(value, t)

    def function(self, func: tt.FuncOp) -> None:
        args = [self.retype(a, self.default(a.type)) for a in func.body.block.args]
        outputs = [self.default(t) for t in func.function_type.outputs.data]
        func.function_type = FunctionType.from_lists([a.type for a in args], outputs)
        self.block(func.body.block)
        ret = func.body.block.last_op
        if isinstance(ret, tt.ReturnOp):
            self.match(ret, outputs)

    def match(self, op: Operation, types) -> None:
        """Convert `op`'s operands to `types` (same shapes, maybe other layouts)."""
        for i, (value, t) in enumerate(zip(op.operands, types)):
            if isinstance(t, TensorType):
                op.operands[i] = convert_before(value, ttg.encoding_of(t), op)
                if op.operands[i] is not value:
                    self.rewrites.note("insert-convert")

    def other(self, op: Operation) -> None:
        if isinstance(op, arith.ConstantOp) and isinstance(op.result.type, TensorType):
            return self.constant(op)
        for region in op.regions:  # reduce/scan combine regions: scalars only
            for block in region.blocks:
                self.block(block)
        results = self.result_types(op)
        for value, t in zip(list(op.results), results):
            self.retype(value, t)
        self.match(op, self.operand_types(op))

    def result_types(self, op: Operation) -> list[Attribute]:
        if isinstance(op, tt.ReduceOp):
            parent = ttg.encoding_of(op.srcs[0].type)
            axis = op.axis.value.data
            return [retyped(r.type, ttg.SliceEncodingAttr(axis, parent)) for r in op.results]
        if isinstance(op, tt.ScanOp):
            return [retyped(r.type, ttg.encoding_of(op.srcs[0].type)) for r in op.results]
        if isinstance(op, tt.TransOp):
            order = list(op.order.get_values())
            encoding = permuted(ttg.encoding_of(op.src.type), order)
            if encoding is not None:
                return [retyped(op.result.type, encoding)]
        return [self.default(r.type) for r in op.results]

    def operand_types(self, op: Operation) -> list[Attribute]:
        """The type each operand must have, given the op's (already converted) results."""
        if isinstance(op, (tt.ReduceOp, tt.TransOp, tt.PrintOp, tt.AssertOp)):
            return [v.type for v in op.operands]
        if isinstance(op, tt.ScanOp):
            encoding = ttg.encoding_of(op.srcs[0].type)
            return [retyped(v.type, encoding) for v in op.operands]
        if isinstance(op, tt.ExpandDimsOp):
            parent = ttg.encoding_of(op.result.type)
            return [retyped(op.src.type, ttg.SliceEncodingAttr(op.axis.value.data, parent))]
        if isinstance(op, tt.BroadcastOp):
            return [retyped(op.src.type, ttg.encoding_of(op.result.type))]
        if isinstance(op, tt.GatherOp):
            return [self.default(op.src.type), retyped(op.indices.type, ttg.encoding_of(op.result.type))]
        if isinstance(op, tt.DotOp):
            parent = ttg.encoding_of(op.d.type)
            return [
                retyped(op.a.type, ttg.DotOperandEncodingAttr(0, parent)),
                retyped(op.b.type, ttg.DotOperandEncodingAttr(1, parent)),
                op.d.type,
            ]
        return [self.default(v.type) for v in op.operands]

    def constant(self, op: arith.ConstantOp) -> None:
        t = self.default(op.result.type)
        value = type(op.value)(t, op.value.data)  # same elements, typed with the layout
        new = arith.ConstantOp(value)
        Rewriter.replace_op(op, new)
        self.rewrites.note("assign-layout")

    def for_op(self, op: scf.ForOp) -> None:
        body = op.body.block
        for init, arg, result in zip(op.iter_args, body.args[1:], list(op.results)):
            self.retype(arg, init.type)
            self.retype(result, init.type)
        self.block(body)
        self.match(body.last_op, [a.type for a in body.args[1:]])

    def if_op(self, op: scf.IfOp) -> None:
        for region in (op.true_region, op.false_region):
            for block in region.blocks:
                self.block(block)
        if not op.results:
            return
        then_yield = op.true_region.block.last_op
        types = [v.type for v in then_yield.operands]
        self.match(op.false_region.block.last_op, types)
        for result, t in zip(list(op.results), types):
            self.retype(result, t)

    def while_op(self, op: scf.WhileOp) -> None:
        before, after = op.before_region.block, op.after_region.block
        for init, arg in zip(op.arguments, before.args):
            self.retype(arg, init.type)
        self.block(before)
        condition = before.last_op
        for value, arg, result in zip(condition.args, after.args, list(op.results)):
            self.retype(arg, value.type)
            self.retype(result, value.type)
        self.block(after)
        self.match(after.last_op, [a.type for a in before.args])
