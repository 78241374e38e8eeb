"""tma: tensor-descriptor accesses as TMA copies on Hopper (sm_90a).

Which accesses (`why_not`, asked by the TTIR stage, which lowers the others to masked pointer
accesses and names the reason in its record): a 2-D or 3-D tile of 8-, 16-, 32- or 64-bit
elements whose rows span at least 32 bytes (the tile lands in the `#ttg.nvmma_shared` layout,
whose 32/64/128-byte swizzle is the TMA's own; a 3-D tile's leading dim stacks whole 2-D
tiles), at most 256 rows, and a multiple of 8 rows when the row is cut into several
swizzle-wide panels or the tile into several batch slices (each panel and slice starts where
the swizzle pattern does),
at an innermost offset AxisInfo knows to be a multiple of 16 bytes (a box starting elsewhere
faults: an illegal instruction on Hopper). For a host `TensorDescriptor` the rest TMA needs
(a 16-byte aligned base, strides multiples of 16 bytes, the last stride 1) is checked at
launch; a device-side one (`tl.make_tensor_descriptor`) qualifies only where AxisInfo already
promises it (the specialization's `tt.divisibility`, `tl.multiple_of`, and arithmetic on them),
and keeps the plain lowering otherwise.

Where the tensor map comes from: a descriptor whose base, shape and strides are kernel
parameters or constants (every host descriptor) has it encoded by the launcher
(`cuTensorMapEncodeTiled`) and passed by value; one whose fields the kernel computes has it
built by the kernel in global scratch (`built_map`: `ttg.global_scratch_alloc`,
`ttng.tensormap_create`, `ttng.tensormap_fenceproxy_acquire`, as Triton does on Hopper), 128
bytes per map per program, which the launcher provides.

The rewrite, per access, non-pipelined: a launcher-encoded descriptor becomes one by-value
kernel parameter (`!tt.ptr<i8> {tt.nv_tma_desc = 1}`, the CUtensorMap; its arg attribute `tt.tma`
records what the launcher encodes: the parameters holding base, shape and strides (or their
specialized constants), the box, the swizzle and the fill). A load becomes

    %buf = ttg.local_alloc : () -> !ttg.memdesc<BMxBKxf16, #nvmma_shared, #smem, mutable>
    %bar = ttg.local_alloc : () -> !ttg.memdesc<1xi64, #shared, #smem, mutable>
    ttng.init_barrier %bar, 1
    ttng.barrier_expect %bar, <tile bytes>
    ttng.async_tma_copy_global_to_local %desc[%i, %j] %buf, %bar
    ttng.wait_barrier %bar, %c0_i32
    ttng.inval_barrier %bar

and the tile is read from %buf: a wgmma operand directly (the buffer replaces the one
accelerate_matmul staged the load into: same layout), anything else through `ttg.local_load`.
Each use initialises its own barrier and waits for phase 0, so no phase is carried across
iterations. A store goes to shared memory (`ttg.local_alloc %tile`), `ttng.fence_async_shared`,
`ttng.async_tma_copy_local_to_global`, `ttng.async_tma_store_wait {pendings = 0}`. In a loop
that holds no dot itself (tutorial 09's tile loop: `store_loop`), the store stays in flight into
the next iteration, as in Triton: its buffer is allocated once above the loop, and each
iteration waits for the previous copy's read (`async_tma_store_wait {pendings = 0}`) before it
writes the buffer (`ttg.local_store`), fences and copies; after the loop, the last read.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects import scf
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    FunctionType,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    StringAttr,
    i1,
    i32,
)
from xdsl.ir import Attribute, BlockArgument, Operation, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from kernellab.ir import arith, tt, ttg, ttng
from kernellab.passes import lower_descriptors
from kernellab.passes.rewrite import Rewrites
from kernellab.passes.ttgir import axis_info, mma_v3

NAME = "tma"

SWIZZLES = (128, 64, 32)
MAX_BOX = 256
TMA_ATTR = "tt.nv_tma_desc"
FACTS_ATTR = "tt.tma"
_I64 = IntegerType(64)


def why_not(op: tt.DescriptorLoadOp | tt.DescriptorStoreOp) -> str:
    """Why `op` cannot be a TMA copy here ("" when it can)."""
    t = _tile_type(op)
    shape = t.get_shape()
    if len(shape) not in (2, 3):
        return f"TMA here copies 2-D and 3-D tiles, not {len(shape)}-D"
    bits = getattr(t.element_type, "bitwidth", 0)
    if bits not in (8, 16, 32, 64):
        return f"TMA copies 8-, 16-, 32- or 64-bit elements, not {t.element_type}"
    *batch, rows, cols = shape
    row_bytes = cols * bits // 8
    if row_bytes < 32:
        return f"a tile row of {row_bytes} bytes is under the narrowest swizzle (32 bytes)"
    if rows > MAX_BOX:
        return f"a TMA box has at most {MAX_BOX} rows, the tile has {rows}"
    if row_bytes > swizzle_of(op) and rows % 8:
        return f"{rows} rows: panels of a swizzled tile start on 8-row boundaries"
    if batch and batch[0] > 1 and rows % 8:
        return f"{rows} rows: the batch slices of a 3-D tile start on 8-row boundaries"
    analysis = axis_info.analyze(op.get_toplevel_object())
    if analysis[op.offsets[-1]].element_divisibility() * bits // 8 % 16:
        return ("the innermost offset is not known to be a multiple of 16 bytes (a TMA box must "
                "start on one: the hardware faults otherwise; tl.multiple_of can promise it)")  # fmt: skip
    if op.host is not None:
        if not launch_encoded(op):
            return "the host descriptor's base, shape and strides are not kernel parameters"
        return ""
    return _device_side_alignment(op, bits // 8, analysis)


def why_not_for_dot_operand(op: tt.DescriptorLoadOp, num_warps: int) -> str:
    """Why the tile `op` reads for dots (it has no other uses) would not land by TMA in the
    buffer wgmma reads ("" when it would): TMA's own rules (`why_not`), every dot with a wgmma
    form, and 16-bit elements in a b tile: wgmma reads 8- and 32-bit operands K-major, and a b
    tile read as (K, N) keeps N contiguous, so it would wait for its copy and be transposed
    through registers instead of being pipelined."""
    why = why_not(op)
    if why:
        return why
    for use in op.result.uses:
        dot = use.operation
        why = mma_v3.why_not(dot, num_warps)
        if why:
            return f"the dot has no wgmma form ({why})"
        if use.index == 1 and op.result.type.element_type.bitwidth != 16:
            return "wgmma reads 8- and 32-bit b tiles K-major, and this (K, N) tile keeps N contiguous"
    return ""


def launch_encoded(op) -> bool:
    """Whether the launcher encodes `op`'s tensor map (its base, shape and strides are kernel
    parameters or constants); else the kernel builds it (`ttng.tensormap_create`)."""
    return all(_source(v) is not None for v in (op.base, *op.shape, *op.strides))


def _device_side_alignment(op, nbytes: int, analysis) -> str:
    """TMA's rules for a device-side descriptor must be known at compile time (its map is
    encoded at launch from parameters, or built by the kernel, and neither may fail): a
    16-byte aligned base and strides multiples of 16 bytes (AxisInfo: the specialization's
    `tt.divisibility`, `tl.multiple_of`, and what the kernel computes from them), the last
    stride the constant 1. (A host descriptor's are checked at launch.)"""
    if analysis[op.base].element_divisibility() % 16:
        return "a device-side descriptor's base is not known to be 16-byte aligned"
    if _source(op.strides[-1]) != ("value", 1):
        return "a device-side descriptor's last stride is not the constant 1"
    for d, stride in enumerate(op.strides[:-1]):
        if analysis[stride].element_divisibility() * nbytes % 16:
            return f"a device-side descriptor's stride {d} is not known to be a multiple of 16 bytes"
    return ""


def _function(op) -> tt.FuncOp:
    func = op.parent_op()
    while not isinstance(func, tt.FuncOp):
        func = func.parent_op()
    return func


def swizzle_of(op) -> int:
    """The widest swizzle (bytes) a tile row fills: the NVMMA layout's, and the TMA box's row."""
    t = _tile_type(op)
    row_bytes = t.get_shape()[-1] * t.element_type.bitwidth // 8
    return next(s for s in SWIZZLES if row_bytes >= s)


def shared_type(op) -> ttg.MemDescType:
    """The buffer a tile lands in: NVMMA-swizzled, rows contiguous (what wgmma reads)."""
    t = _tile_type(op)
    encoding = ttg.NVMMASharedEncodingAttr(swizzle_of(op), 0, t.element_type.bitwidth)
    return ttg.MemDescType(t.get_shape(), t.element_type, encoding, mutable=True)


def run(module: ModuleOp, shared_limit: int | None = None) -> Rewrites:
    """`shared_limit`: bytes of shared memory a program may use; a store stays in flight across
    its loop only where its buffer fits beside everything the loop allocates."""
    rewrites = Rewrites()
    maps_before = _built_maps(module)
    for func in [op for op in module.ops if isinstance(op, tt.FuncOp)]:
        for op in list(func.walk()):
            if not isinstance(op, (tt.DescriptorLoadOp, tt.DescriptorStoreOp)):
                continue
            reason = why_not(op)
            if reason:  # a module resumed from text the TTIR stage did not sort
                lower_descriptors.lower(op)
                rewrites.note("plain")
                continue
            loop = store_loop(op) if isinstance(op, tt.DescriptorStoreOp) else None
            if loop is not None and not _fits_beside(loop, tile_bytes(op), shared_limit):
                loop = None
            desc = tensor_map(op)
            if isinstance(op, tt.DescriptorLoadOp):
                _load(op, desc)
                rewrites.note("tma-load")
            elif loop is not None:
                _store_in_flight(op, desc, loop)
                rewrites.note("tma-store-in-flight")
            else:
                _store(op, desc)
                rewrites.note("tma-store")
    built = _built_maps(module) - maps_before
    if built:  # tensor maps this pass placed in the kernel (the pipeliner's are before it)
        rewrites.note("tensormap-create", built)
    return rewrites


def _built_maps(module: ModuleOp) -> int:
    return sum(isinstance(op, ttng.TensormapCreateOp) for op in module.walk())


def _tile_type(op):
    return op.result.type if isinstance(op, tt.DescriptorLoadOp) else op.value.type


_source = lower_descriptors.field_source


def _field(value: SSAValue) -> Attribute:
    kind, n = _source(value)
    return DictionaryAttr({kind: IntegerAttr(n, _I64)})


def tensor_map(op) -> SSAValue:
    """The tensor map `op` copies through. Launcher-encoded (`launch_encoded`): the kernel's
    by-value parameter (added after the others the first time a descriptor asks), one per host
    descriptor, one per distinct device-side descriptor (its fields, tile and fill). Otherwise
    the global slot the kernel builds it in (`built_map`)."""
    if op.host is None and not launch_encoded(op):
        return built_map(op)
    func = _function(op)
    facts = _facts(op)
    for i, attrs in enumerate(func.arg_attrs.data if func.arg_attrs else ()):
        if attrs.data.get(FACTS_ATTR) == facts:
            return func.args[i]
    return _add_parameter(func, facts)


def _label(op) -> str:
    """How errors name a descriptor: its parameter, or where the kernel made it."""
    if op.host is not None:
        return op.host.data
    return f"device-side descriptor over argument {_source(op.base)[1]}"


def _box(op) -> tuple[int, ...]:
    """The TMA box (elements, outermost dim first): the tile's rows and one swizzle-wide panel
    of its columns, and of a 3-D tile one batch slice (the NVMMA buffer stacks the slices as
    whole 2-D tiles, each copied on its own)."""
    t = _tile_type(op)
    *batch, rows, cols = t.get_shape()
    return (*[1 for _ in batch], rows, min(cols, swizzle_of(op) * 8 // t.element_type.bitwidth))


def _facts(op) -> DictionaryAttr:
    return DictionaryAttr({
        "param": StringAttr(_label(op)),
        "base": _field(op.base),
        "shape": ArrayAttr([_field(v) for v in op.shape]),
        "strides": ArrayAttr([_field(v) for v in op.strides]),
        "box": ArrayAttr([IntegerAttr(b, i32) for b in _box(op)]),
        "swizzle": IntegerAttr(swizzle_of(op), i32),
        "fill": StringAttr(op.padding.data),
        "access": StringAttr("load" if isinstance(op, tt.DescriptorLoadOp) else "store"),
    })  # fmt: skip


MAP_BYTES = 128  # a CUtensorMap; its global slot is aligned to its size
# element type → the number `tensormap.replace.tile.elemtype` takes (PTX's own table: from f64
# on it is not the driver's CUtensorMapDataType, where f64 is 8 and bf16 9)
_ELEMENT_TYPES = {"f16": 6, "bf16": 10, "f32": 7, "f64": 9, "i8": 0, "i16": 1, "i32": 3, "i64": 5}
_SWIZZLE_MODES = {32: 1, 64: 2, 128: 3}
_FILL_MODES = {"zero": 0, "nan": 1}  # nan: CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA


def built_map(op) -> SSAValue:
    """The global slot where the kernel builds `op`'s tensor map: a 128-byte
    `ttg.global_scratch_alloc` of the program's own (the module's
    `ttg.global_scratch_memory_size` grows by one map), written by `ttng.tensormap_create` and
    acquired by `ttng.tensormap_fenceproxy_acquire` right after the last of the descriptor's
    fields is defined, so that every access through it (and a pipeline's prologue) sees it.
    One map per distinct descriptor (fields, box, element type, swizzle, fill)."""
    func = _function(op)
    t = _tile_type(op)
    element_type = _ELEMENT_TYPES.get(str(t.element_type), 0)  # fp8: bytes
    props = (list(_box(op)), element_type, _SWIZZLE_MODES[swizzle_of(op)], _FILL_MODES[op.padding.data])
    fields = [op.base, *op.shape, *op.strides[:-1]]
    for create in func.walk():
        if isinstance(create, ttng.TensormapCreateOp) and list(create.operands[1:]) == fields:
            found = (list(create.box.get_values()), create.elem_type.value.data,
                     create.swizzle_mode.value.data, create.fill_mode.value.data)  # fmt: skip
            if found == props:
                return create.desc_ptr
    module = op.get_toplevel_object()
    used = module.attributes.get(ttg.SCRATCH_SIZE_ATTR)
    offset = used.value.data if used is not None else 0
    module.attributes[ttg.SCRATCH_SIZE_ATTR] = IntegerAttr(offset + MAP_BYTES, i32)
    slot = ttg.GlobalScratchAllocOp(tt.PointerType(IntegerType(8)), MAP_BYTES, MAP_BYTES, offset)
    new = [slot, ttng.TensormapCreateOp(slot.result, op.base, op.shape, op.strides[:-1], *props),
           ttng.TensormapFenceproxyAcquireOp(slot.result)]  # fmt: skip
    for o in new:
        o.location = op.location
    Rewriter.insert_op(new, _after(fields))
    return slot.result


def _after(values: list[SSAValue]) -> InsertPoint:
    """Right after the last of `values` to be defined. Every value dominates the access that
    uses them all, so their definitions lie on its ancestor blocks: the deepest block's last."""

    def position(value: SSAValue) -> tuple[int, int, SSAValue]:
        block = value.block if isinstance(value, BlockArgument) else value.owner.parent_block()
        depth, parent = 0, block.parent_op()
        while parent is not None:
            depth, parent = depth + 1, parent.parent_op()
        index = -1 if isinstance(value, BlockArgument) else block.get_operation_index(value.owner)
        return depth, index, value

    *_, last = max((position(v) for v in values), key=lambda p: p[:2])
    if isinstance(last, BlockArgument):
        return InsertPoint.at_start(last.block)
    return InsertPoint.after(last.owner)


def defined_outside(op, loop: Operation) -> bool:
    """Whether `op`'s tensor map can be used before `loop` (a pipeline's prologue issues its
    first copies there): launcher-encoded, or built from fields defined outside the loop."""
    if op.host is not None or launch_encoded(op):
        return True
    return not any(loop.is_ancestor(value.owner) for value in (op.base, *op.shape, *op.strides))


def _add_parameter(func: tt.FuncOp, facts: DictionaryAttr) -> SSAValue:
    block = func.body.block
    arg = block.insert_arg(tt.PointerType(IntegerType(8)), len(block.args))
    inputs = [*func.function_type.inputs.data, arg.type]
    func.function_type = FunctionType.from_lists(inputs, func.function_type.outputs.data)
    attrs = list(func.arg_attrs.data) if func.arg_attrs else [DictionaryAttr({})] * (len(inputs) - 1)
    attrs.append(DictionaryAttr({TMA_ATTR: IntegerAttr(1, i32), FACTS_ATTR: facts}))
    func.arg_attrs = ArrayAttr(attrs)
    return arg


def barrier_type(slots: int = 0) -> ttg.MemDescType:
    """An mbarrier (`memdesc<1xi64>`), or a ring of `slots` of them."""
    encoding = ttg.SwizzledSharedEncodingAttr(1, 1, 1, (0,))
    return ttg.MemDescType((slots, 1) if slots else (1,), _I64, encoding, mutable=True)


def tile_bytes(op) -> int:
    return axis_info.tile_bytes(_tile_type(op))


def _load(op: tt.DescriptorLoadOp, desc: SSAValue) -> None:
    staged = staging(op)
    buf_type = staged.buffer_type if staged else shared_type(op)
    buf = ttg.LocalAllocOp(buf_type)
    bar = ttg.LocalAllocOp(barrier_type())
    phase = arith.ConstantOp.of(0, i32)
    true = arith.ConstantOp.of(1, i1)
    new: list[Operation] = [
        buf, bar, true, ttng.InitBarrierOp(bar.result, 1),
        ttng.BarrierExpectOp(bar.result, tile_bytes(op), true.result),
        ttng.AsyncTMACopyGlobalToLocalOp(desc, op.offsets, buf.result, bar.result, true.result),
        phase, ttng.WaitBarrierOp(bar.result, phase.result), ttng.InvalBarrierOp(bar.result),
    ]  # fmt: skip
    if staged is None:
        read = ttg.LocalLoadOp(buf.result, op.result.type)
        new.append(read)
    for o in new:
        o.location = op.location
    Rewriter.insert_op(new, InsertPoint.before(op))
    if staged is None:
        Rewriter.replace_op(op, [], [read.result])
        return
    staged.replace(buf.result)


@dataclass
class Staging:
    """A tile's way into the wgmma operand buffer accelerate_matmul staged it in: the
    `ttg.local_alloc`, reached from the load directly, through layout conversions, or through
    a `tt.trans` (then the buffer is the transposed NVMMA layout of the tile, holding the same
    bytes: `b.T` of a K-contiguous tile is a K-major B). The TMA copy can land there."""

    alloc: ttg.LocalAllocOp
    between: list[Operation]

    @property
    def buffer_type(self) -> ttg.MemDescType:
        t = self.alloc.result.type
        return ttg.MemDescType(t.get_shape(), t.element_type, t.encoding, mutable=True)

    def replace(self, view: SSAValue) -> None:
        """Read `view` where the staged buffer was read; erase the staging and the load."""
        self.alloc.result.replace_all_uses_with(view)
        load = (self.between[0] if self.between else self.alloc).operands[0].owner
        for o in [self.alloc, *reversed(self.between), load]:
            Rewriter.erase_op(o)


def staging(op: tt.DescriptorLoadOp) -> Staging | None:
    """How `op`'s tile (its only use) reaches a wgmma operand buffer whose layout is the one
    the TMA writes, if it does."""
    encoding = shared_type(op).encoding
    value, between = op.result, []
    while True:
        uses = list(value.uses)
        if len(uses) != 1:
            return None
        user = uses[0].operation
        if isinstance(user, ttg.LocalAllocOp):
            return Staging(user, between) if user.result.type.encoding == encoding else None
        if isinstance(user, tt.TransOp) and encoding.transposed == 0 and len(user.result.type.get_shape()) == 2:
            encoding = ttg.NVMMASharedEncodingAttr(encoding.swizzle_bytes, 1, encoding.element_bits)
        elif not isinstance(user, ttg.ConvertLayoutOp):
            return None
        between.append(user)
        value = user.result


def store_loop(op: tt.DescriptorStoreOp) -> scf.ForOp | None:
    """The loop a TMA store stays in flight across: its innermost enclosing `scf.for`, where
    that loop holds no dot itself (tutorial 09's tile loop, not a fused nest's loop, whose rings
    and epilogue buffers already fill shared memory) and the store's map is usable before it.
    Its buffer is allocated once above the loop, and the wait for the copy's read of it moves
    to the next write of the buffer, so the store of one tile overlaps the next tile's loop, as
    in Triton."""
    loop = op.parent_op()
    while loop is not None and not isinstance(loop, (scf.ForOp, tt.FuncOp)):
        loop = loop.parent_op()
    if not isinstance(loop, scf.ForOp) or not defined_outside(op, loop):
        return None
    if any(isinstance(o, (tt.DotOp, ttng.WarpGroupDotOp)) for o in loop.body.block.ops):
        return None
    return loop


def stores_in_flight_bytes(loop: scf.ForOp) -> int:
    """Shared bytes held across `loop` by the buffers of TMA stores kept in flight around it:
    what the pipeliner leaves beside its rings."""
    total = 0
    for op in _function(loop).walk():
        if isinstance(op, tt.DescriptorStoreOp) and not why_not(op):
            outer = store_loop(op)
            if outer is not None and outer is not loop and outer.is_ancestor(loop):
                total += tile_bytes(op)
    return total


def _fits_beside(loop: scf.ForOp, nbytes: int, shared_limit: int | None) -> bool:
    """Whether `nbytes` fit beside every buffer allocated in `loop` (as if all were live)."""
    if shared_limit is None:
        return True
    allocated = sum(axis_info.tile_bytes(op.result.type) for op in loop.walk() if isinstance(op, ttg.LocalAllocOp))
    return allocated + nbytes <= shared_limit


def _store_in_flight(op: tt.DescriptorStoreOp, desc: SSAValue, loop: scf.ForOp) -> None:
    """The buffer above `loop`; at the store: wait for the previous copy's read, write, fence,
    copy; after the loop, wait for the last read and free the buffer."""
    buf = ttg.LocalAllocOp(shared_type(op))
    buf.location = op.location
    Rewriter.insert_op(buf, InsertPoint.before(loop))
    new = [
        ttng.AsyncTMAStoreWaitOp(0), ttg.LocalStoreOp(_written_value(op), buf.result),
        ttng.FenceAsyncSharedOp(), ttng.AsyncTMACopyLocalToGlobalOp(desc, op.offsets, buf.result),
    ]  # fmt: skip
    after = [ttng.AsyncTMAStoreWaitOp(0), ttg.LocalDeallocOp(buf.result)]
    for o in (*new, *after):
        o.location = op.location
    Rewriter.insert_op(new, InsertPoint.before(op))
    Rewriter.insert_op(after, InsertPoint.after(loop))
    Rewriter.erase_op(op)


def _written_value(op: tt.DescriptorStoreOp) -> SSAValue:
    value = op.value
    while isinstance(value.owner, ttg.ConvertLayoutOp):  # any layout can be written to shared
        value = value.owner.src
    return value


def _store(op: tt.DescriptorStoreOp, desc: SSAValue) -> None:
    buf_type = shared_type(op)
    value = _written_value(op)
    staged = ttg.LocalAllocOp(
        ttg.MemDescType(buf_type.get_shape(), buf_type.element_type, buf_type.encoding), value
    )
    new = [
        staged, ttng.FenceAsyncSharedOp(),
        ttng.AsyncTMACopyLocalToGlobalOp(desc, op.offsets, staged.result),
        ttng.AsyncTMAStoreWaitOp(0),
    ]  # fmt: skip
    for o in new:
        o.location = op.location
    Rewriter.insert_op(new, InsertPoint.before(op))
    Rewriter.erase_op(op)
