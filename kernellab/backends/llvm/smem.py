"""Shared memory: a liveness-based allocator and the barrier tracker.

Allocation. Ops are numbered in program order (a pre-order walk, so an op with regions spans
the numbers of everything inside it). Two kinds of buffers need bytes of the one dynamic
shared array `@global_smem`:
  - `ttg.local_alloc` results, live from the alloc to their last use; a use inside a loop or
    branch that the alloc is outside of keeps the buffer alive to the end of that op;
  - per-op scratch (layout conversions through shared memory, cross-warp reductions and scans,
    scalar atomics), live only while its op runs.
Buffers are placed first-fit (largest first, then by start) at the lowest aligned offset that
doesn't overlap a buffer whose live range overlaps; the high-water mark is the kernel's
dynamic shared memory size.

Barriers. While emitting code the lowering tells the tracker about every shared-memory access
(byte interval, read or write). Accesses since the last barrier are pending; a new access that
overlaps a pending one and where either writes (RAW, WAR, WAW) gets a `bar.sync` first. Loops
start with their whole body's accesses pending (the previous iteration's: reads of a buffer
that is immutable after its local_alloc stay reads), an access pending from before a loop that
conflicts with the body's gets its barrier before the loop (once, not per iteration), and
branches merge by union, so a barrier is emitted only where some path needs it. A wait on an
mbarrier that hands a ring's slots between threads orders the ring's accesses itself
(`ordered`). An access may name LLVM values
its op computed before it and uses after it (`keep`: a scan's prefixes within a warp); it
returns them as valid past any barrier it made, which on the CPU, whose barrier ends the kernel
function's phase, are copies reloaded in the next phase (backends/cpu/lowering/phases.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.ir import Operation, SSAValue

from kernellab.ir import ttg

ALIGN = 16
BASE_ALIGN = 1024  # the shared array's own alignment: the largest a buffer asks for (NVMMA's)


@dataclass
class Interval:
    lo: int
    hi: int  # exclusive

    def overlaps(self, other: "Interval") -> bool:
        return self.lo < other.hi and other.lo < self.hi


@dataclass
class Placement:
    """One buffer the plan placed: live over op numbers [start, end), at `offset`."""

    key: object  # an Operation (scratch) or SSAValue (local_alloc)
    size: int
    start: int
    end: int
    offset: int = -1
    align: int = ALIGN


@dataclass
class SmemPlan:
    scratch: dict = field(default_factory=dict)  # op -> offset
    scratch_size: dict = field(default_factory=dict)  # op -> bytes
    buffers: dict = field(default_factory=dict)  # SSAValue -> offset
    buffer_size: dict = field(default_factory=dict)
    total: int = 0
    # op -> [(Interval, may write)] of itself and the ops nested in it
    op_accesses: dict = field(default_factory=dict)
    placements: list = field(default_factory=list)  # every Placement, largest first

    def accesses_in(self, op: Operation) -> list[tuple[Interval, bool]]:
        return self.op_accesses.get(op, [])


def plan_shared_memory(func_op, scratch_bytes, memdesc_bytes, memdesc_align=lambda t: ALIGN) -> SmemPlan:
    """Assign offsets. `scratch_bytes(op) -> int` says how much scratch an op needs;
    `memdesc_bytes(type) -> int` the size of a local_alloc buffer, `memdesc_align(type)` the
    alignment its layout needs (a swizzle the hardware applies repeats on 256..1024 bytes)."""
    order: dict[Operation, int] = {}
    ends: dict[Operation, int] = {}
    counter = 0

    def number(op: Operation):
        nonlocal counter
        order[op] = counter
        counter += 1
        for region in op.regions:
            for block in region.blocks:
                for inner in block.ops:
                    number(inner)
        ends[op] = counter
        counter += 1

    for block in func_op.body.blocks:
        for op in block.ops:
            number(op)

    bufs: list[Placement] = []
    for op in list(order):
        n = scratch_bytes(op)
        if n:
            bufs.append(Placement(op, n, order[op], ends[op]))
        if isinstance(op, ttg.LocalAllocOp):
            value = op.result
            start = order[op]
            end = ends[op]
            users = []
            for use in list(value.uses):
                users.append(use.operation)
                if isinstance(use.operation, ttg.LocalLoadOp):
                    # tt.dot reads its operands straight from the buffer (see dot.py)
                    for u2 in list(use.operation.result.uses):
                        if u2.operation.name == "tt.dot":
                            users.append(u2.operation)
            for user in users:
                # walk up to the ancestor that is a sibling-level op of the alloc's block
                anc = user
                while anc is not None and anc.parent_block() is not op.parent_block():
                    anc = anc.parent_op()
                if anc is None:
                    anc = user
                end = max(end, ends.get(anc, order.get(user, 0) + 1))
            bufs.append(Placement(value, memdesc_bytes(value.type), start, end,
                                  align=memdesc_align(value.type)))  # fmt: skip

    placed: list[Placement] = []
    for b in sorted(bufs, key=lambda b: (-b.size, b.start)):
        offset = 0
        while True:
            offset = (offset + b.align - 1) // b.align * b.align
            clash = [
                p for p in placed
                if p.start < b.end and b.start < p.end
                and p.offset < offset + b.size and offset < p.offset + p.size
            ]
            if not clash:
                break
            offset = max(p.offset + p.size for p in clash)
        b.offset = offset
        placed.append(b)

    plan = SmemPlan(placements=placed)
    for b in placed:
        if isinstance(b.key, SSAValue):
            plan.buffers[b.key] = b.offset
            plan.buffer_size[b.key] = b.size
        else:
            plan.scratch[b.key] = b.offset
            plan.scratch_size[b.key] = b.size
        plan.total = max(plan.total, b.offset + b.size)

    # every op's own shared-memory intervals and whether it may write them (its scratch, a
    # buffer it allocates, a mutable one it takes or views; an immutable buffer is only read
    # after its local_alloc), then rolled up into the ops that contain them
    def own(op: Operation) -> list[tuple[Interval, bool]]:
        out = []
        if op in plan.scratch:
            out.append((Interval(plan.scratch[op], plan.scratch[op] + plan.scratch_size[op]), True))
        for v in list(op.operands) + list(op.results):
            root = ttg.memdesc_root(v)
            if root in plan.buffers:
                write = root.type.mutable or isinstance(op, ttg.LocalAllocOp)  # not a view op
                out.append((Interval(plan.buffers[root], plan.buffers[root] + plan.buffer_size[root]), write))
        return out

    def roll(op: Operation) -> list[tuple[Interval, bool]]:
        acc = own(op)
        for region in op.regions:
            for block in region.blocks:
                for inner in block.ops:
                    acc.extend(roll(inner))
        plan.op_accesses[op] = acc
        return acc

    for block in func_op.body.blocks:
        for op in block.ops:
            roll(op)
    return plan


class BarrierTracker:
    """Pending shared-memory accesses since the last barrier (see the module docstring)."""

    def __init__(self, emit_barrier):
        self.pending: list[tuple[Interval, bool]] = []
        self._emit = emit_barrier
        self.count = 0
        self.kept: list = []  # the values the access in progress keeps; a barrier may replace them

    def access(self, iv: Interval, write: bool, keep: list = ()) -> list:
        """Record the access, with a barrier first if it conflicts with a pending one; returns
        `keep` as valid after it."""
        self.kept = list(keep)
        try:
            for p, w in self.pending:
                if (w or write) and p.overlaps(iv):
                    self.barrier()
                    break
            self.pending.append((iv, write))
            return self.kept
        finally:
            self.kept = []

    def before_async_write(self, iv: Interval) -> None:
        """An asynchronous copy into `iv` is about to start: the bytes must be free of pending
        accesses. The copy itself is not pending: it lands at a wait, which is a barrier."""
        self.free(iv)

    def read_asynchronously(self, iv: Interval) -> None:
        """Another unit (a TMA store) has read `iv` until now: a write to it must wait for a
        barrier, though no thread's access is pending."""
        if (iv, False) not in self.pending:
            self.pending.append((iv, False))

    def ordered(self, iv: Interval) -> None:
        """An mbarrier wait now orders every thread's accesses to `iv` (a ring whose slots the
        barriers hand from the copies to the readers and back, passes/ttgir/pipeline_loops.py):
        they are no longer pending, and no `bar.sync` goes between them."""
        self.pending = [(p, w) for p, w in self.pending if not p.overlaps(iv)]

    def free(self, iv: Interval) -> None:
        """A barrier now if `iv` has pending accesses: whatever comes next may write it."""
        if any(p.overlaps(iv) for p, _ in self.pending):
            self.barrier()

    def barrier(self) -> None:
        self._emit()
        self.count += 1
        self.pending = []

    def snapshot(self) -> list:
        return list(self.pending)

    def restore(self, state: list) -> None:
        self.pending = list(state)

    def merge(self, *states: list) -> None:
        out = []
        for s in states:
            for item in s:
                if item not in out:
                    out.append(item)
        self.pending = out

    def before_loop(self, accesses: list[tuple[Interval, bool]]) -> None:
        """A loop whose body makes `accesses` (interval, may write) is about to start: where an
        access pending from before it conflicts with one of them, the barrier goes here, once,
        rather than at that access in every iteration."""
        if any((w or write) and p.overlaps(iv) for p, w in self.pending for iv, write in accesses):
            self.barrier()

    def assume_all(self, accesses: list[tuple[Interval, bool]]) -> None:
        """Add accesses that may be pending from another path (loop back edge): (interval, may
        write) pairs."""
        for access in accesses:
            if access not in self.pending:
                self.pending.append(access)
