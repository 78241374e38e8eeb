"""The `ttng` dialect (Triton's TritonNvidiaGPU): ops only NVIDIA's Hopper tensor cores have.

`ttng.warp_group_dot %a, %b, %c : !ttg.memdesc<...> * !ttg.memdesc<...> -> tensor<...>` is a
dot on wgmma: the operands are read by the tensor cores straight from shared memory (through
descriptors of their #ttg.nvmma_shared layouts), the accumulator is in an MMA v3 layout, and
each group of 4 warps (a warp group) computes 64 rows of it. `maxNumImpreciseAcc = N` (fp8 only,
from tl.dot's max_num_imprecise_acc): the tensor cores' reduced-precision sum runs over at most
N of K before it is added into the fp32 accumulator. A may instead be a register tensor
in `#ttg.dot_op<{opIdx = 0, parent = #mma}>` (a value the kernel computed, such as attention's
probabilities, which then never goes through shared memory). With `isAsync` the dot only
starts; `ttng.warp_group_dot_wait` says when its result (and its buffers) may be used.

The Tensor Memory Accelerator (TMA) copies a whole tile between global and shared memory for
one thread, through a tensor map (a 128-byte CUtensorMap the driver encodes, a kernel
parameter `!tt.ptr<i8> {tt.nv_tma_desc}` passed by value; or one the kernel writes into global
scratch, `tensormap_create`, and acquires, `tensormap_fenceproxy_acquire`). A copy into shared memory completes
on an mbarrier (`!ttg.memdesc<1xi64>`): `init_barrier` (arrivals expected), `barrier_expect`
(the bytes the copies will bring: the phase completes when they have), the copies, and
`wait_barrier` (until the barrier's phase with the given parity completes);
`inval_barrier` before its bytes are reused. A copy out of shared memory follows
`fence_async_shared` (the threads' writes made visible to the copy engine) and completes at
`async_tma_store_wait`.
"""

from __future__ import annotations

from typing import ClassVar

from xdsl.dialects.builtin import (
    DenseArrayBase,
    IntegerAttr,
    StringAttr,
    TensorType,
    UnitAttr,
    i1,
    i32,
    i64,
)
from xdsl.ir import Dialect, SSAValue
from xdsl.irdl import (
    AnyOf,
    AttrSizedOperandSegments,
    BaseAttr,
    IRDLOperation,
    ParsePropInAttrDict,
    VarConstraint,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import MemoryReadEffect, MemoryWriteEffect

from kernellab.ir.op_families import op_definition
from kernellab.ir.ttg import MemDescType


@op_definition
class WarpGroupDotOp(IRDLOperation):
    name = "ttng.warp_group_dot"
    a = operand_def(AnyOf([BaseAttr(MemDescType), BaseAttr(TensorType)]))
    b = operand_def(MemDescType)
    T: ClassVar = VarConstraint("T", BaseAttr(TensorType))
    c = operand_def(T)
    d = result_def(T)
    input_precision = prop_def(StringAttr)
    is_async = opt_prop_def(UnitAttr, prop_name="isAsync")
    max_num_imprecise_acc = opt_prop_def(IntegerAttr, prop_name="maxNumImpreciseAcc")
    traits = traits_def(MemoryReadEffect())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$a `,` $b `,` $c attr-dict `:` type($a) `*` type($b) `->` type($d)"

    def __init__(self, a: SSAValue, b: SSAValue, c: SSAValue, input_precision: str = "tf32",
                 is_async: bool = False, max_num_imprecise_acc: int = 0):  # fmt: skip
        props = {"input_precision": StringAttr(input_precision)}
        if is_async:
            props["isAsync"] = UnitAttr()
        if max_num_imprecise_acc:
            props["maxNumImpreciseAcc"] = IntegerAttr(max_num_imprecise_acc, i32)
        super().__init__(operands=[a, b, c], result_types=[c.type], properties=props)


@op_definition
class WarpGroupDotWaitOp(IRDLOperation):
    """`%d = ttng.warp_group_dot_wait %acc[, %a] {pendings = 1 : i32} : tensor<...>[, ...]`:
    waits until at most `pendings` asynchronous warp-group dots of this warp group are still
    running; its result is the accumulator from then on (the lowering ties the registers, so
    nothing reads them earlier). An asynchronous dot's buffers may be overwritten only after such
    a wait. `keep`: register operands A of the dots it waits for, read by the wait so that they
    stay live (and their registers unwritten) until the tensor cores are done with them."""

    name = "ttng.warp_group_dot_wait"
    T: ClassVar = VarConstraint("T", BaseAttr(TensorType))
    src = operand_def(T)
    keep = var_operand_def(TensorType)
    result = result_def(T)
    pendings = prop_def(IntegerAttr)
    traits = traits_def(MemoryReadEffect())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$src (`,` $keep^)? attr-dict `:` type($src) (`,` type($keep)^)?"

    def __init__(self, src: SSAValue, pendings: int, keep: tuple[SSAValue, ...] = ()):
        super().__init__(
            operands=[src, list(keep)],
            result_types=[src.type],
            properties={"pendings": IntegerAttr(pendings, i32)},
        )


def _i32(value: int) -> IntegerAttr:
    return IntegerAttr(value, i32)


def _print_with_number(printer: Printer, alloc: SSAValue, number: IntegerAttr, flags: list) -> None:
    """` %bar, 16384[, %pred] : !ttg.memdesc<...>`, as Triton prints its barrier ops."""
    printer.print_string(" ")
    printer.print_operand(alloc)
    printer.print_string(f", {number.value.data}")
    for flag in flags:
        printer.print_string(", ")
        printer.print_operand(flag)
    printer.print_string(" : ")
    printer.print_attribute(alloc.type)


def _parse_with_number(parser: Parser, flags: int) -> tuple[SSAValue, int, list[SSAValue]]:
    alloc = parser.parse_unresolved_operand()
    parser.parse_punctuation(",")
    number = parser.parse_integer()
    unresolved = []
    for _ in range(flags):
        parser.parse_punctuation(",")
        unresolved.append(parser.parse_unresolved_operand())
    parser.parse_punctuation(":")
    alloc_type = parser.parse_type()
    return (parser.resolve_operand(alloc, alloc_type), number,
            [parser.resolve_operand(u, i1) for u in unresolved])  # fmt: skip


@op_definition
class InitBarrierOp(IRDLOperation):
    """`ttng.init_barrier %bar, 1`: one thread makes the mbarrier expect `count` arrivals."""

    name = "ttng.init_barrier"
    alloc = operand_def(MemDescType)
    count = prop_def(IntegerAttr)
    traits = traits_def(MemoryWriteEffect())

    def __init__(self, alloc: SSAValue, count: int):
        super().__init__(operands=[alloc], properties={"count": _i32(count)})

    def print(self, printer: Printer) -> None:
        _print_with_number(printer, self.alloc, self.count, [])

    @classmethod
    def parse(cls, parser: Parser) -> InitBarrierOp:
        alloc, number, _ = _parse_with_number(parser, 0)
        return cls(alloc, number)


class _OnBarrierOp(IRDLOperation):
    """`name %bar : !ttg.memdesc<1xi64, ...>`: an op on an mbarrier alone."""

    alloc = operand_def(MemDescType)
    traits = traits_def(MemoryWriteEffect())
    assembly_format = "$alloc attr-dict `:` type($alloc)"

    def __init__(self, alloc: SSAValue):
        super().__init__(operands=[alloc])


@op_definition
class InvalBarrierOp(_OnBarrierOp):
    """`ttng.inval_barrier %bar`: the mbarrier's bytes become ordinary shared memory again."""

    name = "ttng.inval_barrier"


@op_definition
class BarrierExpectOp(IRDLOperation):
    """`ttng.barrier_expect %bar, 16384, %pred`: one thread arrives, announcing `size` bytes to
    come (nothing happens where `pred` is false)."""

    name = "ttng.barrier_expect"
    alloc = operand_def(MemDescType)
    pred = operand_def(i1)
    size = prop_def(IntegerAttr)
    traits = traits_def(MemoryWriteEffect())

    def __init__(self, alloc: SSAValue, size: int, pred: SSAValue):
        super().__init__(operands=[alloc, pred], properties={"size": _i32(size)})

    def print(self, printer: Printer) -> None:
        _print_with_number(printer, self.alloc, self.size, [self.pred])

    @classmethod
    def parse(cls, parser: Parser) -> BarrierExpectOp:
        alloc, number, (pred,) = _parse_with_number(parser, 1)
        return cls(alloc, number, pred)


@op_definition
class WaitBarrierOp(IRDLOperation):
    """`ttng.wait_barrier %bar, %phase[ deps %ring, ...]`: every thread waits until the phase of
    parity `phase` has completed (its arrivals and bytes are in). `deps`: the buffers whose
    accesses the barrier's protocol orders (a cp.async ring's copies and reads), so that the
    lowering puts no `bar.sync` between the threads' accesses to them."""

    name = "ttng.wait_barrier"
    alloc = operand_def(MemDescType)
    phase = operand_def(i32)
    deps = var_operand_def(MemDescType)
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())
    assembly_format = "$alloc `,` $phase (`deps` $deps^)? attr-dict `:` type($alloc) (`,` type($deps)^)?"

    def __init__(self, alloc: SSAValue, phase: SSAValue, deps: tuple[SSAValue, ...] = ()):
        super().__init__(operands=[alloc, phase, list(deps)])


@op_definition
class ArriveBarrierOp(IRDLOperation):
    """`ttng.arrive_barrier %bar, %pred`: every thread arrives on the mbarrier once (nothing
    happens where `pred` is false): a consumer saying it is done reading a ring's slot."""

    name = "ttng.arrive_barrier"
    alloc = operand_def(MemDescType)
    pred = operand_def(i1)
    traits = traits_def(MemoryWriteEffect())
    assembly_format = "$alloc `,` $pred attr-dict `:` type($alloc)"

    def __init__(self, alloc: SSAValue, pred: SSAValue):
        super().__init__(operands=[alloc, pred])


@op_definition
class AsyncCopyMbarrierArriveOp(_OnBarrierOp):
    """`ttng.async_copy_mbarrier_arrive %bar`: the mbarrier counts this thread's arrival once
    every cp.async copy the thread issued before it has landed (`.noinc`: the barrier's init
    count includes these arrivals, one per thread)."""

    name = "ttng.async_copy_mbarrier_arrive"


@op_definition
class AsyncTMACopyGlobalToLocalOp(IRDLOperation):
    """`ttng.async_tma_copy_global_to_local %desc[%i, %j] %buf, %bar, %pred`: one thread asks
    the TMA to copy the tile at coordinates (%i, %j) (tensor dims, outermost first) into `buf`,
    completing on `bar` (nothing where `pred` is false); elements outside the tensor arrive as
    the tensor map's fill."""

    name = "ttng.async_tma_copy_global_to_local"
    desc = operand_def()
    coord = var_operand_def(i32)
    result = operand_def(MemDescType)
    barrier = operand_def(MemDescType)
    pred = operand_def(i1)
    traits = traits_def(MemoryWriteEffect())
    assembly_format = (
        "$desc `[` $coord `]` $result `,` $barrier `,` $pred attr-dict `:` type($desc) `,` "
        "type($barrier) `->` type($result)"
    )

    def __init__(self, desc: SSAValue, coord, result: SSAValue, barrier: SSAValue, pred: SSAValue):
        super().__init__(operands=[desc, list(coord), result, barrier, pred])


@op_definition
class AsyncTMACopyLocalToGlobalOp(IRDLOperation):
    """`ttng.async_tma_copy_local_to_global %desc[%i, %j] %buf`: one thread asks the TMA to
    write `buf` as the tile at (%i, %j); elements outside the tensor are not written."""

    name = "ttng.async_tma_copy_local_to_global"
    desc = operand_def()
    coord = var_operand_def(i32)
    src = operand_def(MemDescType)
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())
    assembly_format = "$desc `[` $coord `]` $src attr-dict `:` type($desc) `,` type($src)"

    def __init__(self, desc: SSAValue, coord, src: SSAValue):
        super().__init__(operands=[desc, list(coord), src])


@op_definition
class FenceAsyncSharedOp(IRDLOperation):
    """`ttng.fence_async_shared`: the threads' shared-memory writes become visible to the
    async proxy (the TMA, the tensor cores)."""

    name = "ttng.fence_async_shared"
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())
    assembly_format = "attr-dict"


@op_definition
class AsyncTMAStoreWaitOp(IRDLOperation):
    """`ttng.async_tma_store_wait {pendings = 0 : i32}`: until at most `pendings` TMA stores
    still read their shared buffers."""

    name = "ttng.async_tma_store_wait"
    pendings = prop_def(IntegerAttr)
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "attr-dict"

    def __init__(self, pendings: int = 0):
        super().__init__(properties={"pendings": _i32(pendings)})


@op_definition
class TensormapCreateOp(IRDLOperation):
    """`ttng.tensormap_create %slot, %base, [%dims...], [%strides...] {box = array<i32: ...>,
    elem_type, swizzle_mode, fill_mode}`: the program writes a tiled tensor map (what
    `cuTensorMapEncodeTiled` encodes on the host) into the 128 global bytes at `slot`: i64
    `dims` and `strides` in elements, outermost dim first as the descriptor holds them (the
    innermost stride, one element, left out), the box (elements, outermost first), and the
    element type, swizzle and out-of-bounds fill numbered as PTX's `tensormap.replace` numbers
    them. The write is released to the tensor-map proxy; a reader
    acquires it (`tensormap_fenceproxy_acquire`) before its copies use the map."""

    name = "ttng.tensormap_create"
    desc_ptr = operand_def()
    global_address = operand_def()
    global_dim = var_operand_def(i64)
    global_stride = var_operand_def(i64)
    box = prop_def(DenseArrayBase)
    elem_type = prop_def(IntegerAttr)
    swizzle_mode = prop_def(IntegerAttr)
    fill_mode = prop_def(IntegerAttr)
    traits = traits_def(MemoryWriteEffect())
    irdl_options = (AttrSizedOperandSegments(as_property=True), ParsePropInAttrDict())
    assembly_format = (
        "$desc_ptr `,` $global_address `,` `[` $global_dim `]` `,` `[` $global_stride `]` attr-dict "
        "`:` type($desc_ptr) `,` type($global_address)"
    )

    def __init__(self, desc_ptr: SSAValue, global_address: SSAValue, dims, strides, box,
                 elem_type: int, swizzle_mode: int, fill_mode: int):  # fmt: skip
        super().__init__(
            operands=[desc_ptr, global_address, list(dims), list(strides)],
            properties={
                "box": DenseArrayBase.from_list(i32, list(box)), "elem_type": _i32(elem_type),
                "swizzle_mode": _i32(swizzle_mode), "fill_mode": _i32(fill_mode),
            },
        )  # fmt: skip


@op_definition
class TensormapFenceproxyAcquireOp(IRDLOperation):
    """`ttng.tensormap_fenceproxy_acquire %slot : !tt.ptr<i8>`: the tensor map written at
    `slot` becomes visible to this program's TMA copies (the acquire half of the writer's
    release through the tensor-map proxy)."""

    name = "ttng.tensormap_fenceproxy_acquire"
    desc_ptr = operand_def()
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())
    assembly_format = "$desc_ptr attr-dict `:` type($desc_ptr)"

    def __init__(self, desc_ptr: SSAValue):
        super().__init__(operands=[desc_ptr])


TMA_OPS = (
    InitBarrierOp, InvalBarrierOp, BarrierExpectOp, WaitBarrierOp, AsyncTMACopyGlobalToLocalOp,
    AsyncTMACopyLocalToGlobalOp, FenceAsyncSharedOp, AsyncTMAStoreWaitOp, TensormapCreateOp,
    TensormapFenceproxyAcquireOp,
)  # fmt: skip

# a cp.async ring synchronized by mbarriers instead of bar.sync (passes/ttgir/pipeline_loops.py)
COPY_BARRIER_OPS = (ArriveBarrierOp, AsyncCopyMbarrierArriveOp)

TTNG = Dialect("ttng", [WarpGroupDotOp, WarpGroupDotWaitOp, *TMA_OPS, *COPY_BARRIER_OPS], [])
