"""The layouts a compiled kernel really uses, read from its TTGIR, for the explorers.

    kernel_layouts(ck)   every distinct layout of the TTGIR's values (blocked, slice,
                         #ttg.nvidia_mma, #ttg.dot_op, #ttg.swizzled_shared), the values that
                         carry it and their shapes
    shared_buffers(ck)   every shared-memory buffer (`ttg.local_alloc`): its shape, element
                         size, the swizzle the compiler chose, and the register layouts of the
                         accesses that write and read it, modelled as the compiler modelled them
                         when it chose the swizzle (reduce_data_duplication.staging_accesses)

Nothing here compiles: both read the TTGIR text the CompiledKernel carries, so they show what
the compiler emitted, whatever passes it ran (a pipelined loop's ring buffers included).
"""

from __future__ import annotations

from dataclasses import dataclass, field

KINDS = {
    "ttg.blocked": "blocked",
    "ttg.slice": "slice",
    "ttg.nvidia_mma": "nvidia_mma",
    "ttg.dot_op": "dot_op",
    "ttg.swizzled_shared": "swizzled_shared",
}

# the ops whose first operand is a shared buffer used as an mbarrier (TMA's completion, a cp.async
# ring's hand-over), not as data (wait_barrier's later operands are the data it orders)
MBARRIER_OPS = {"ttng.init_barrier", "ttng.inval_barrier", "ttng.barrier_expect", "ttng.wait_barrier",
                "ttng.arrive_barrier", "ttng.async_copy_mbarrier_arrive"}  # fmt: skip


@dataclass
class KernelLayout:
    """One distinct layout of a compiled kernel's TTGIR."""

    name: str  # as the TTGIR prints it where it is used: `#mma`, `#ttg.dot_op<{opIdx = 0, ...}>`
    kind: str  # blocked, slice, nvidia_mma, dot_op or swizzled_shared
    encoding: object  # the ttg encoding attribute
    text: str  # its full definition
    shapes: list[tuple[int, ...]] = field(default_factory=list)  # of the values carrying it
    values: list[str] = field(default_factory=list)  # their printed names, in program order

    @property
    def shared(self) -> bool:
        return self.kind == "swizzled_shared"

    @property
    def shape(self) -> tuple[int, ...]:
        """The largest shape it is used with (the one the explorer draws)."""
        return max(self.shapes, key=lambda s: (len(s), _size(s)))

    def linear_layout(self, shape=None):
        """The `kernellab.layouts.LinearLayout` the code generator uses for it."""
        from kernellab.layouts import from_encoding

        return from_encoding(self.encoding, shape or self.shape)


@dataclass
class SharedAccess:
    """One warp's access to a shared buffer, as the compiler modelled it."""

    what: str  # e.g. "write: local_alloc of %a (#blocked1)", "read: ldmatrix into #ttg.dot_op<...>"
    layout: object  # the register LinearLayout of the access (one warp)


@dataclass
class SharedBuffer:
    """A `ttg.local_alloc` of the TTGIR and the accesses that write and read it."""

    name: str  # the printed SSA name of the buffer (`%59`)
    shape: tuple[int, int]  # of one tile (a ring buffer's stage dim left out)
    stages: int  # tiles in the buffer: 1, or num_stages for a pipelined loop's ring
    elem_bytes: int
    encoding: object  # its #ttg.swizzled_shared
    encoding_name: str
    accesses: list[SharedAccess]

    @property
    def params(self) -> dict:
        """vec, per_phase, max_phase, order of the chosen swizzle."""
        from kernellab.layouts.encodings import to_named

        record = to_named(self.encoding)
        return {"vec": record.vec, "per_phase": record.per_phase, "max_phase": record.max_phase,
                "order": tuple(record.order)}  # fmt: skip

    @property
    def label(self) -> str:
        stages = f" x {self.stages} stages" if self.stages > 1 else ""
        return (f"{self.name}: {self.shape[0]}x{self.shape[1]}{stages}, {self.elem_bytes}-byte "
                f"elements, {self.encoding_name}")  # fmt: skip


def _size(shape) -> int:
    n = 1
    for s in shape:
        n *= int(s)
    return n


def _ttgir_module(ck):
    asm = getattr(ck, "asm", None)
    if asm is None:
        raise TypeError(f"expected a CompiledKernel (kl.compile(...)), not {type(ck).__name__}")
    if "ttgir" not in asm:
        raise ValueError(
            "this kernel has no TTGIR, so it has no layouts yet (layouts are chosen when compiling "
            f"for a GPU); stages compiled: {', '.join(asm)}. Compile with target='sm_90' or "
            "target='sm_80' (no GPU needed)."
        )
    from kernellab.ir import parse_module

    return parse_module(asm["ttgir"])


def _values(module):
    """Every SSA value of the module in program order (op results, then block arguments)."""
    for op in module.walk():
        for region in op.regions:
            for block in region.blocks:
                yield from block.args
        yield from op.results


def kernel_layouts(ck) -> list[KernelLayout]:
    """Every distinct layout in `ck`'s TTGIR, in order of first use."""
    from xdsl.dialects.builtin import TensorType

    from kernellab.ir import aliases_of, ttg
    from kernellab.lab.graphs import _TypePrinter, value_names

    module = _ttgir_module(ck)
    names = value_names(module)
    aliases = aliases_of(module)
    type_str = _TypePrinter(module)
    found: dict[object, KernelLayout] = {}
    for value in _values(module):
        t = value.type
        if isinstance(t, TensorType):
            encoding, shape = t.encoding, tuple(int(s) for s in t.get_shape())
        elif isinstance(t, ttg.MemDescType):
            encoding, shape = t.encoding, t.shape[-2:]
        else:
            continue
        kind = KINDS.get(getattr(encoding, "name", ""))
        if kind is None:
            continue
        layout = found.get(encoding)
        if layout is None:
            text = _definition(encoding)
            name = aliases.get(encoding) or type_str(encoding)
            layout = found[encoding] = KernelLayout(name, kind, encoding, text)
        if shape not in layout.shapes:
            layout.shapes.append(shape)
        printed = names.get(value)
        if printed is not None:
            layout.values.append(f"%{printed}")
    return list(found.values())


def _definition(encoding) -> str:
    from xdsl.printer import Printer
    import io

    out = io.StringIO()
    Printer(stream=out).print_attribute(encoding)
    return out.getvalue()


def shared_buffers(ck) -> list[SharedBuffer]:
    """Every `ttg.local_alloc` of `ck`'s TTGIR with the accesses that write and read it."""
    from kernellab.ir import aliases_of, ttg
    from kernellab.lab.graphs import _TypePrinter, value_names
    from kernellab.passes.ttgir.axis_info import element_bytes

    module = _ttgir_module(ck)
    names = value_names(module)
    aliases = aliases_of(module)
    type_str = _TypePrinter(module)
    buffers = []
    for op in module.walk():
        if op.name != "ttg.local_alloc":
            continue
        memdesc = op.results[0].type
        encoding = memdesc.encoding
        if KINDS.get(getattr(encoding, "name", "")) != "swizzled_shared" or len(memdesc.shape) < 2:
            continue
        if _holds_mbarriers(op.results[0]):  # a TMA ring's barriers: 8 bytes a slot, no data
            continue
        shape = tuple(memdesc.shape[-2:])
        stages = _size(memdesc.shape[:-2])
        elem = element_bytes(memdesc.element_type)
        writes, reads = _accessors(op.results[0])
        accesses = []
        for read in reads:  # the compiler chose the swizzle for each (write, dot-operand read)
            dst = ttg.encoding_of(read.results[0].type)
            for write in writes or [None]:
                src = _written_encoding(write) if write is not None else None
                if src is None or not isinstance(dst, ttg.DotOperandEncodingAttr):
                    continue
                accesses += _staging(src, dst, shape, elem, names, write, read, aliases, type_str)
        buffers.append(SharedBuffer(f"%{names.get(op.results[0], '?')}", shape, stages, elem, encoding,
                                    aliases.get(encoding) or type_str(encoding), _unique(accesses)))  # fmt: skip
    return buffers


def _views(buffer):
    """`buffer` and every view of it (a ring buffer's stage slices)."""
    out, todo = [], [buffer]
    while todo:
        value = todo.pop()
        out.append(value)
        for use in value.uses:
            if use.operation.name in ("ttg.memdesc_subview", "ttg.memdesc_index") and use.operation.results:
                todo.append(use.operation.results[0])
    return out


def _holds_mbarriers(buffer) -> bool:
    return any(
        use.operation.name in MBARRIER_OPS and use.index == 0 for view in _views(buffer) for use in view.uses
    )


def _accessors(buffer):
    """(writers, readers) of a buffer, through the views of it (a ring buffer's stage slices)."""
    writes, reads, todo, seen = [], [], [buffer], set()
    while todo:
        value = todo.pop()
        for use in list(value.uses):
            op = use.operation
            if id(op) in seen:
                continue
            seen.add(id(op))
            if op.name == "ttg.local_load":
                reads.append(op)
            elif op.name in ("ttg.local_store", "ttg.async_copy_global_to_local"):
                writes.append(op)
            elif op.name in ("ttg.memdesc_subview", "ttg.memdesc_index") and op.results:
                todo.append(op.results[0])
    alloc = buffer.owner
    if alloc.operands:  # local_alloc %tensor: the alloc itself writes it
        writes.insert(0, alloc)
    return writes, reads


def _written_encoding(op):
    """The register layout a writer stores from: its tensor (or pointer tensor) operand's."""
    from kernellab.ir import ttg

    for operand in op.operands:
        encoding = ttg.encoding_of(operand.type)
        if encoding is not None and KINDS.get(getattr(encoding, "name", "")) in ("blocked", "slice"):
            return encoding
    return None


def _staging(src, dst, shape, elem, names, write, read, aliases, type_str) -> list[SharedAccess]:
    from kernellab.passes.ttgir.reduce_data_duplication import staging_accesses

    write_layout, read_layout = staging_accesses(src, dst, shape, elem)
    source = write.operands[0] if write.operands else None
    what = f"%{names.get(source, '?')}" if source is not None else "the tile"
    how = "ldmatrix" if elem == 2 and dst.parent.name == "ttg.nvidia_mma" else "local_load"
    return [
        SharedAccess(f"write: {write.name.removeprefix('ttg.')} of {what} "
                     f"({aliases.get(src) or type_str(src)})", write_layout),
        SharedAccess(f"read: {how} into {type_str(dst)}", read_layout),
    ]  # fmt: skip


def _unique(accesses: list[SharedAccess]) -> list[SharedAccess]:
    seen, out = set(), []
    for a in accesses:
        if a.what not in seen:
            seen.add(a.what)
            out.append(a)
    return out


__all__ = ["KernelLayout", "SharedAccess", "SharedBuffer", "kernel_layouts", "shared_buffers"]
