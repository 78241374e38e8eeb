"""pipeline: software pipelining of scf.for loops over `num_stages` (Triton's pipeliner for
cp.async targets), so that the global loads of the next iterations are in flight while this
iteration computes.

Which loops. A loop with `tl.range(..., num_stages=N)` asks for N stages; otherwise a loop
whose body holds a `tt.dot` gets the kernel's `num_stages` (as in Triton, plain loops are
pipelined only on request). N < 2 leaves the loop alone.

Which loads. Tensor loads directly in the body whose pointer (and mask) are computed by pure
ops (an `scf.if` among them when everything in it is pure: a fused nest's per-tile branch)
from the induction variable, loop invariants and iter_args that only feed such address
computations (pointer increments: `a_ptrs += BLOCK_K * stride_ak`) or scalar iter_args the
loop also reads otherwise (a fused nest's inner index, which its epilogue branch tests: the
copies read a shadow of it, carried S-1 iterations ahead), whose accesses move at
least 4 bytes per thread and copy (cp.async copies 4, 8 or 16 bytes) and whose masked-off
value is 0 or can be selected afterwards. In a loop with a dot only the loads that become dot
operands (`tt.load` → `ttg.local_alloc`) are pipelined.

The rewrite, for S stages (Triton's shape):
  - each pipelined load gets a ring of slots, one `ttg.local_alloc` with a leading dim (the
    shared layout of the local_alloc it fed, or unswizzled in the load's order when it fed
    registers): S-1 slots in a plain loop; S in a loop with a dot, whose refill comes first
    (below) and so writes the slot the previous iteration read; S+1 when the loop's only dot
    is an asynchronous warp-group dot, since the previous iteration's dot may still be reading
    (it waits for its predecessor right after issuing). Behind other dots, as attention's
    P·V, the asynchronous dot stays in flight until the next iteration's first dot, whose
    wait drains it before the refill, so S slots do (as Triton's; a slot more would cost a
    program per SM where shared memory sets the occupancy). A last dot whose result is read
    later in its own iteration (the overlapped attention's P·V, read by the rescale after the
    next tile's softmax) runs asynchronously up to that read and is waited for there, its
    register A kept live by the wait: S slots as well, and S = 2 will do;
  - the prologue issues the copies of iterations 0..S-2 (`ttg.async_copy_global_to_local` into
    slot i, masked by `i < trip count`), each iteration's copies one commit group, as early in
    the block as their operands and the ops before them allow (`_issue_early`: ahead of loads,
    never of a store);
  - iteration k starts with `ttg.async_wait {num = S-2}` (its own group has landed; the
    lowering follows the wait with a barrier) and reads its tile from its slot (the memdesc
    the local_alloc made, or a `ttg.local_load`, then `arith.select` with the load's `other`);
    the copies of iteration k+S-1 refill the oldest slot, so S-2 groups stay in flight behind
    the math. In a loop with a dot the refill comes right after the wait: the wait's barrier
    already orders it after every earlier read of that slot, so the loop needs no second
    barrier; behind an asynchronous last dot (attention's P·V) it comes right after that dot's
    issue instead, so the copies overlap the running dot rather than delay the first dot's
    issue (a barrier before it, as Triton's loop has). A plain loop (a row loop like the
    persistent softmax, whose occupancy is set by its shared memory) keeps S-1 slots and
    refills after its last read of the slot;
  - the pointer iter_args now run S-1 iterations ahead (the prologue advanced them), the
    shadows beside the values they copy; one whose next value is computed from the induction
    variable or a shadowed value is advanced where the copies are issued, from that iteration's
    values; i32 iter_args carry the read and write slots; after the loop,
    `ttg.async_wait {num = 0}` and `ttg.local_dealloc` of each ring.
On sm_90a, tensor-descriptor loads kept for TMA (passes/ttgir/tma.py) that feed the dot are
pipelined the same way with TMA copies instead (a loop uses one kind of copy; TMA loads beside
cp.async ones are left to the tma pass): their offsets are the addresses, a ring of mbarriers
(one per slot, initialised before the loop, invalidated after) replaces the commit groups, a
copy's bytes are announced on its slot's barrier (`ttng.barrier_expect`, predicated like the
copies on the iteration existing), and `ttng.wait_barrier` on the read slot, with a parity the
loop carries and flips each time the read slot wraps, replaces `ttg.async_wait`; the lowering
puts the barrier before a refill where earlier reads of the slot are pending.
On Hopper a loop of two or more warp-group dots whose program is alone on its SM (attention at
head dim 128) hands its cp.async rings over by mbarriers instead of a `bar.sync` per iteration
(`_handed_over`: a `full` and an `empty` barrier per slot and a slot more, so its warp groups
drift up to an iteration apart); the compile option `ring_mbarriers=False` keeps the barrier.
A fused loop nest (passes/fuse_nested_loops.py: tl.range(..., flatten=True)) is pipelined like
any loop: its addresses are pure ops of its indices and of the per-tile branch, so the copies of
iteration k+S-1 may be the next tile's; that branch's cheap rank-1 consumers (the tile's offsets
vectors) move into it first, carried in their final layouts (`carry_tile_values`), so a K step
recomputes neither the tile's index math nor its vectors. Its warp-group dot stays asynchronous: its result goes to the next
iteration through the epilogue branch (`scf.if` of a tile's last step, which yields the reset
accumulator, the other branch the running one), and the epilogue waits for it
(`warp_group_dot_wait {pendings = 0}`) where the branch starts; its refill comes after the
`pendings = 1` wait of the previous dot, whose slot it reuses (the lowering's barrier before
it), rather than taking one slot more: the epilogue's layout-conversion buffer is live beside
the rings inside the loop.
The old address computations of iteration k are left to dce. Where the rings would pass
`shared_limit` (beside the buffers of TMA stores kept in flight across an enclosing loop:
tma.stores_in_flight_bytes), a ring under an asynchronous dot first gives up its extra slot (the
refill waits for the previous dot, as in a fused nest), then the loop gets the largest S that
fits (at least 2). As in Triton, a store in the
loop is not assumed to alias a pipelined load: loads of later iterations move above it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.dialects import scf
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, TensorType, UnitAttr, i1, i32
from xdsl.ir import Block, BlockArgument, Operation, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.traits import is_side_effect_free

from kernellab.ir import arith, tt, ttg, ttng
from kernellab.layouts import from_encoding
from kernellab.passes.rewrite import Rewrites
from kernellab.passes.structured import OpBuilder, reinitialized_for
from kernellab.passes.ttgir import axis_info, tma
from kernellab.passes.ttgir.axis_info import element_bytes, tile_bytes

NAME = "pipeline"

MIN_COPY_BYTES = 4  # cp.async moves 4, 8 or 16 bytes
DOTS = (tt.DotOp, ttng.WarpGroupDotOp)


@dataclass(frozen=True)
class SmBudget:
    """What one SM holds for the programs on it (the backend's device limits)."""

    shared: int  # bytes of shared memory
    shared_reserved: int  # bytes the driver keeps per program
    registers: int

    def programs(self, shared: int, threads: int, registers: int) -> int:
        """Programs of `threads` threads using `shared` bytes and `registers` a thread (rounded
        up to the allocation unit of 8) that fit at once."""
        by_shared = self.shared // (shared + self.shared_reserved)
        return min(by_shared, self.registers // (threads * -(-registers // 8) * 8))


def run(module: ModuleOp, num_stages: int = 3, shared_limit: int | None = None,
        sm: SmBudget | None = None, ring_mbarriers: bool = True) -> Rewrites:  # fmt: skip
    """`shared_limit`: bytes of shared memory a program may use; a loop whose rings would take
    more gets fewer stages (none below 2), as many as fit. `ring_mbarriers` (the compile option):
    hand rings over by mbarriers where `_handed_over` says and, given the SM's budget `sm`, the
    program is alone on its SM."""
    rewrites = Rewrites()
    for loop in [op for op in module.walk() if isinstance(op, scf.ForOp)]:
        if loop_stages(loop, num_stages) >= 2:
            rewrites.note("carry-tile-values", carry_tile_values(loop))
    analysis = axis_info.analyze(module)
    threads = ttg.num_warps(module) * 32
    loops = [op for op in module.walk() if isinstance(op, scf.ForOp)]
    for loop in reversed(loops):  # inner loops first
        stages = loop_stages(loop, num_stages)
        if stages < 2:
            continue
        plan = _plan(loop, analysis)
        if plan is None:
            continue
        per_slot = sum(tile_bytes(item.load.result.type) for item in plan.loads)
        reserved = tma.stores_in_flight_bytes(loop)
        body = loop.body.block

        def fits(stages: int, tight: bool, handed: bool) -> bool:
            async_dot = _async_dot(body, plan, stages)
            if async_dot is not None:
                async_dot.tight = tight
            slots = _slots(body, async_dot, stages, handed and _handed_over(body, plan, async_dot))
            return shared_limit is None or per_slot * slots + reserved <= shared_limit

        # mbarriers hand the ring over where its slot more fits and the program is alone on its
        # SM: beside another program its warp groups already overlap that program's
        async_dot = _async_dot(body, plan, stages)
        handed = ring_mbarriers and _handed_over(body, plan, async_dot) and fits(stages, False, True)
        if handed and sm is not None:
            plain = per_slot * _slots(body, async_dot, stages) + reserved + _buffers_across(loop)
            handed = sm.programs(plain, threads, _estimated_registers(body)) == 1
            if not handed:
                rewrites.note("bar-sync-ring-beside-other-programs")

        # beside a TMA store kept in flight, the refill first gives up the slot it takes beyond
        # Triton's ring (waiting for the previous dot instead), then stages
        fitting, tight = stages, False
        while fitting >= 2 and not fits(fitting, tight, handed):
            if reserved and not tight and fits(fitting, True, handed):
                tight = True
            else:
                fitting -= 1
        if fitting < 2:
            rewrites.note("too-big-to-pipeline")
            continue
        if fitting < stages:
            rewrites.note("fewer-stages-to-fit-shared-memory")
        if tight:
            rewrites.note("ring-of-stages-beside-a-store-in-flight")
        _rewrite(loop, plan, fitting, threads, tight, handed)
        rewrites.note("pipeline-loop")
        rewrites.note("async-copy", len(plan.loads))
    if rewrites:
        axis_info.invalidate(module)
    return rewrites


def ring_slots(module: ModuleOp) -> list[tuple[int, int]]:
    """(slots, bytes per slot) of every ring the pipeliner allocated in `module`."""
    rings = {ttg.memdesc_root(op.result) for op in module.walk()
             if isinstance(op, (ttg.AsyncCopyGlobalToLocalOp, ttng.AsyncTMACopyGlobalToLocalOp))}  # fmt: skip
    out = []
    for ring in rings:
        t = ring.type
        out.append((t.shape[0], tile_bytes(t) // t.shape[0]))
    return out


def loop_stages(loop: scf.ForOp, default: int) -> int:
    """The stages `loop` asks for: tl.range's num_stages, else `default` when its body holds a
    dot, else 1 (not pipelined). The lab's pass explanations ask the same question."""
    attr = loop.attributes.get("tt.num_stages")
    if isinstance(attr, IntegerAttr):
        return attr.value.data
    if any(isinstance(op, DOTS) for op in loop.body.block.ops):
        return default
    return 1


# ------------------------------------------------------------------- a fused nest's tile values


def carry_tile_values(loop: scf.ForOp) -> int:
    """A fused loop nest computes a tile's index math in an `scf.if` at the tile's first step
    (its results carried to the other steps); the vectors the loads build from them (`offs_am
    = where(pid_m * BLOCK_M + arange < M, ..., 0)`) would still be rebuilt at every step. Move
    the rank-1 tensor ops computed only from that branch's results and loop invariants into the
    branch, and carry their results too: now, in their final layouts, which the fusion (before
    layouts) could not choose. Higher ranks stay per step (a broadcast tile would be carried
    register by register). The number of values it carries more."""
    body = loop.body.block
    yield_op = body.last_op
    for branch in [op for op in body.ops if isinstance(op, scf.IfOp)]:
        positions = _carried_results(branch, body)
        if positions is None:
            continue
        chosen, known = [], set(branch.results)
        for op in list(body.ops)[list(body.ops).index(branch) + 1:]:
            if (op.regions or not is_side_effect_free(op) or not op.results
                    or not all(_rank(r) == 1 for r in op.results)
                    or not any(v in known for v in op.operands)
                    or not all(v in known or not _defined_in(v, body) for v in op.operands)):  # fmt: skip
                continue
            chosen.append(op)
            known.update(op.results)
        frontier = [r for op in chosen for r in op.results
                    if any(u.operation not in chosen for u in r.uses)]  # fmt: skip
        if not frontier:
            continue
        then_block, else_block = (region.block for region in branch.regions)
        env = dict(zip(branch.results, then_block.last_op.operands))
        OpBuilder(InsertPoint.before(then_block.last_op)).clone(chosen, env)
        computed = [env[r] for r in frontier]
        Rewriter.replace_op(then_block.last_op, scf.YieldOp(*then_block.last_op.operands, *computed))
        args = [body.insert_arg(r.type, len(body.args)) for r in frontier]
        Rewriter.replace_op(else_block.last_op, scf.YieldOp(*else_block.last_op.operands, *args))
        regions = [Rewriter.move_region_contents_to_new_regions(r) for r in branch.regions]
        wider = scf.IfOp(branch.cond, [r.type for r in (*branch.results, *frontier)], *regions)
        Rewriter.insert_op(wider, InsertPoint.before(branch))
        for old, new in zip(branch.results, wider.results):
            old.replace_all_uses_with(new)
        added = wider.results[len(branch.results):]
        for old, new in zip(frontier, added):
            old.replace_uses_with_if(new, lambda use: use.operation not in chosen)
        Rewriter.replace_op(yield_op, scf.YieldOp(*yield_op.operands, *added))
        # the first iteration's values: the moved ops from the loop's initial values
        init_env = {result: loop.iter_args[q] for result, q in zip(wider.results, positions)}
        OpBuilder(InsertPoint.before(loop)).clone(chosen, init_env)
        for op in reversed(chosen):
            Rewriter.erase_op(op)
        Rewriter.erase_op(branch)
        new_loop = reinitialized_for(loop, [*loop.iter_args, *(init_env[r] for r in frontier)])
        for old, new in zip(loop.results, new_loop.results):
            old.replace_all_uses_with(new)
        Rewriter.erase_op(loop)
        return len(frontier)
    return 0


def _rank(value: SSAValue) -> int | None:
    return len(value.type.get_shape()) if isinstance(value.type, TensorType) else None


def _carried_results(branch: scf.IfOp, body: Block) -> list[int] | None:
    """The iter_arg positions `branch`'s results are carried at, where its else branch yields
    those iter_args as they are (a value recomputed at some steps, kept at the others)."""
    yielded = list(body.last_op.operands)
    otherwise = branch.regions[1].blocks[0].last_op.operands if branch.regions[1].blocks else ()
    if not branch.results or len(otherwise) != len(branch.results):
        return None
    positions = []
    for result, kept in zip(branch.results, otherwise):
        if yielded.count(result) != 1 or not _is_iter_arg(kept, body):
            return None
        if yielded.index(result) != kept.index - 1:
            return None
        positions.append(kept.index - 1)
    return positions


# ------------------------------------------------------------------------------ the plan


@dataclass
class _Load:
    load: tt.LoadOp | tt.DescriptorLoadOp  # a descriptor load is a TMA copy (sm_90a)
    alloc: ttg.LocalAllocOp | None  # the local_alloc it fed (a dot operand), if any
    encoding: object  # the ring's shared encoding
    offsets: tuple = ()  # a descriptor load's tile coordinates
    tensor_map: SSAValue | None = None  # and the kernel parameter its copies read
    staging: tma.Staging | None = None  # and its way into the wgmma buffer (alloc, trans)


def _is_tma(load) -> bool:
    return isinstance(load, tt.DescriptorLoadOp)


@dataclass
class _Plan:
    loads: list[_Load]
    address_ops: list[Operation]  # pure body ops the copies' operands need, in body order
    ahead: list[int] = field(default_factory=list)  # iter_arg positions that run S-1 ahead
    update_ops: list[Operation] = field(default_factory=list)  # body ops computing their next values
    shadowed: list[int] = field(default_factory=list)  # ahead positions also read as they are
    recomputed: list[int] = field(default_factory=list)  # ahead positions advanced at the copies


def _plan(loop: scf.ForOp, analysis) -> _Plan | None:
    body = loop.body.block
    has_dot = any(isinstance(op, DOTS) for op in body.ops)
    loads, tma_loads = [], []
    for op in body.ops:
        if isinstance(op, tt.DescriptorLoadOp):  # kept for TMA by the TTIR stage
            if not tma.defined_outside(op, loop):  # a map the kernel builds in the loop
                continue
            staged = tma.staging(op)
            if staged is not None:
                encoding = staged.buffer_type.encoding
                tma_loads.append(_Load(op, staged.alloc, encoding, tuple(op.offsets), staging=staged))
            elif not has_dot:
                tma_loads.append(_Load(op, None, tma.shared_type(op).encoding, tuple(op.offsets)))
            continue
        if not isinstance(op, tt.LoadOp) or not isinstance(op.result.type, TensorType):
            continue
        alloc = _feeds_local_alloc(op)
        if has_dot and alloc is None:
            continue
        shared = alloc.result.type.encoding if alloc else _plain_shared(op)
        if _copyable(op, shared, analysis) and _other_ok(op):
            loads.append(_Load(op, alloc, shared))
    loads = loads or tma_loads  # one kind of copy per loop: TMA loads beside cp.async ones stay
    if not loads:
        return None
    roots = [v for item in loads for v in _address_operands(item.load)]
    slice_ops = _backward_slice(roots, body)
    if slice_ops is None:
        return None
    carried = {arg.index - 1 for op in slice_ops for arg in _reads(op) if _is_iter_arg(arg, body)}
    carried |= {v.index - 1 for v in roots if _is_iter_arg(v, body)}
    yield_op = body.last_op
    update_ops = _backward_slice([yield_op.operands[i] for i in sorted(carried)], body)
    if update_ops is None:
        return None
    # the values carried ahead may feed nothing but address computations and their own updates;
    # a scalar the loop also reads otherwise (a fused nest's inner index) is carried twice: as
    # it is, and ahead in a shadow of its own
    replaced = {item.load for item in loads}
    allowed = set(slice_ops) | set(update_ops) | replaced | {yield_op}
    shadowed = []
    for i in sorted(carried):
        arg = body.args[i + 1]
        dependents = _dependents({arg}, body, replaced)
        if _only_addresses(dependents, body, allowed, carried) and not loop.results[i].uses:
            continue
        if isinstance(arg.type, TensorType):
            return None
        shadowed.append(i)
    ahead_args = {body.args[i + 1] for i in carried if i not in shadowed}
    ahead_values = _dependents(ahead_args, body, replaced)
    for i in shadowed:  # a value carried as it is must not be computed from one carried ahead
        update = _backward_slice([yield_op.operands[i]], body)
        if any(v in ahead_values for op in update for v in _reads(op)):
            return None
    for item in loads:  # a select after the copy needs this iteration's mask
        if not _is_tma(item.load) and not _zero_other(item.load) and item.load.mask in ahead_values:
            return None
    # an ahead value whose update reads the induction variable or a shadowed value advances
    # where the copies are issued, from the values of the iteration they copy
    current = {body.args[0]} | {body.args[i + 1] for i in shadowed}
    recomputed = [i for i in sorted(carried) if i in shadowed or any(
        v in current for op in _backward_slice([yield_op.operands[i]], body) for v in _reads(op))]  # fmt: skip
    return _Plan(loads, slice_ops, sorted(carried), update_ops, shadowed, recomputed)


def _only_addresses(values: set[SSAValue], body: Block, allowed: set[Operation],
                    carried: set[int]) -> bool:  # fmt: skip
    """Whether `values` feed only the ops in `allowed` (at any depth in them), and the yield
    only at the `carried` positions."""
    for value in values:
        for use in value.uses:
            op = _top(use.operation, body)
            if op not in allowed or (op is body.last_op and use.index not in carried):
                return False
    return True


def _feeds_local_alloc(load: tt.LoadOp) -> ttg.LocalAllocOp | None:
    uses = list(load.result.uses)
    if len(uses) == 1 and isinstance(uses[0].operation, ttg.LocalAllocOp):
        return uses[0].operation
    return None


def _copyable(load: tt.LoadOp, shared, analysis) -> bool:
    """Each thread's accesses can be cp.async copies of at least 4 bytes: runs contiguous and
    aligned in global memory (AxisInfo), under one mask bit, and inside one `vec` group of the
    swizzled shared buffer; a tile a multiple of 16 bytes, so every ring slot stays aligned."""
    if load.is_volatile is not None and load.is_volatile.value.data:
        return False
    encoding = ttg.encoding_of(load.result.type)
    if not isinstance(encoding, ttg.BlockedEncodingAttr):
        return False
    order = list(encoding.order)
    per_thread = encoding.size_per_thread[order[0]]
    elems = min(
        per_thread,
        analysis.ptr_vector_elems(load.ptr, order),
        analysis.mask_alignment(load.mask, order),
    )
    if tuple(shared.order) != tuple(order):
        elems = 1  # a thread's run is strided in the buffer
    elif isinstance(shared, ttg.NVMMASharedEncodingAttr):
        elems = min(elems, 128 // shared.element_bits)  # inside one 16-byte swizzle chunk
    elif shared.max_phase > 1:
        elems = min(elems, shared.vec)
    nbytes = element_bytes(load.result.type)
    return elems * nbytes >= MIN_COPY_BYTES and tile_bytes(load.result.type) % 16 == 0


def _zero_other(load: tt.LoadOp) -> bool:
    other = load.other
    if other is None:
        return True
    owner = other.owner
    if not isinstance(owner, arith.ConstantOp):
        return False
    value = owner.value
    values = getattr(value, "get_values", None)
    items = values() if values is not None else [value.value.data]
    return all(float(v) == 0.0 and str(float(v))[0] != "-" for v in items)


def _other_ok(load: tt.LoadOp) -> bool:
    """`other` is 0 (the copy's zero fill) or a value the select after the copy can use."""
    return load.other is None or _zero_other(load) or load.mask is not None


def _plain_shared(load: tt.LoadOp) -> ttg.SwizzledSharedEncodingAttr:
    """Written and read in one layout: each thread reads back its own runs, no swizzle needed."""
    return ttg.SwizzledSharedEncodingAttr(1, 1, 1, list(ttg.encoding_of(load.result.type).order))


def _address_operands(load) -> list[SSAValue]:
    if _is_tma(load):
        return list(load.offsets)
    return [v for v in (load.ptr, load.mask) if v is not None]


def _is_iter_arg(value: SSAValue, body: Block) -> bool:
    return isinstance(value, BlockArgument) and value.block is body and value.index > 0


def _backward_slice(roots: list[SSAValue], body: Block) -> list[Operation] | None:
    """The body ops `roots` are computed by, in body order; None if one has side effects (it
    could not be run for another iteration). An op with regions (a fused nest's prologue
    branch) is one of them when everything in it is pure; the values its regions read count
    as its operands."""
    seen: set[Operation] = set()
    stack = [v.owner for v in roots if isinstance(v.owner, Operation)]
    while stack:
        op = stack.pop()
        if op in seen or op.parent_block() is not body:
            continue
        if not is_side_effect_free(op):
            return None
        seen.add(op)
        stack.extend(v.owner for v in _reads(op) if isinstance(v.owner, Operation))
    return [op for op in body.ops if op in seen]


def _reads(op: Operation) -> list[SSAValue]:
    """The values `op` reads: its operands and those its regions use from outside it."""
    values = list(op.operands)
    for nested in op.walk():
        if nested is not op:
            values += [v for v in nested.operands if not _inside(v, op)]
    return values


def _inside(value: SSAValue, op: Operation) -> bool:
    owner = value.owner
    owner = owner.parent_op() if isinstance(owner, Block) else owner
    return owner is not None and op.is_ancestor(owner)


def _top(op: Operation, body: Block) -> Operation:
    """The op directly in `body` that is or holds `op`."""
    while op.parent_block() is not body:
        op = op.parent_op()
    return op


def _dependents(values: set[SSAValue], body: Block, replaced: set[Operation]) -> set[SSAValue]:
    """`values` and every body value computed from them (not through the `replaced` loads,
    whose results will come from the ring)."""
    out = set(values)
    for op in body.ops:
        if op not in replaced and any(v in out for v in _reads(op)):
            out.update(op.results)
    return out


# --------------------------------------------------------------------------- the rewrite


def _issue(b: OpBuilder, plan: _Plan, rings: list, slot: SSAValue, live: SSAValue, env: dict,
           barriers: SSAValue | None = None, full: SSAValue | None = None) -> None:  # fmt: skip
    """The copies of one iteration into ring `slot` and their commit group (TMA copies: the
    bytes announced on that slot's barrier; cp.async copies handed over by barriers: each
    thread's arrival on that slot's `full` barrier once its copies land); `env` maps the
    induction variable and the iter_args to that iteration's values, `live` (i1) says the
    iteration exists."""
    b.clone(plan.address_ops, env)
    if barriers is not None:
        bar = b.add(ttg.MemDescIndexOp(barriers, slot)).result
        nbytes = sum(tile_bytes(item.load.result.type) for item in plan.loads)
        b.add(ttng.BarrierExpectOp(bar, nbytes, live))
        for item, ring in zip(plan.loads, rings):
            view = b.add(ttg.MemDescIndexOp(ring, slot)).result
            offsets = [env.get(v, v) for v in item.offsets]
            b.add(ttng.AsyncTMACopyGlobalToLocalOp(item.tensor_map, offsets, view, bar, live))
        return
    tokens = []
    for item, ring in zip(plan.loads, rings):
        load = item.load
        ptr = env.get(load.ptr, load.ptr)
        mask = _splat(b, live, load.ptr.type)
        if load.mask is not None:
            mask = b.add(arith.AndiOp(env.get(load.mask, load.mask), mask)).result
        view = b.add(ttg.MemDescIndexOp(ring, slot)).result
        tokens.append(b.add(ttg.AsyncCopyGlobalToLocalOp(ptr, view, mask)).token)
    if full is not None:
        b.add(ttng.AsyncCopyMbarrierArriveOp(b.add(ttg.MemDescIndexOp(full, slot)).result))
    else:
        b.add(ttg.AsyncCommitGroupOp(tokens))


def _splat(b: OpBuilder, flag: SSAValue, like) -> SSAValue:
    shape = like.get_shape()
    return b.add(tt.SplatOp(flag, TensorType(i1, shape, like.encoding))).result


def _rewrite(loop: scf.ForOp, plan: _Plan, stages: int, threads: int, tight: bool = False,
             handed: bool = False) -> None:  # fmt: skip
    body = loop.body.block
    iv = body.args[0]
    iv_type = iv.type
    async_dot = _async_dot(body, plan, stages)
    if async_dot is not None:
        async_dot.tight = tight
    handed = handed and _handed_over(body, plan, async_dot)
    slots = _slots(body, async_dot, stages, handed)
    ahead = stages - 1  # iterations in flight beyond this one
    outer, preceding = loop.parent_block(), loop.prev_op
    before = OpBuilder(InsertPoint.before(loop))
    on_tma = _is_tma(plan.loads[0].load)
    for item in plan.loads if on_tma else ():
        item.tensor_map = tma.tensor_map(item.load)

    rings = []
    for item in plan.loads:
        t = item.load.result.type
        shape = item.alloc.result.type.get_shape() if item.alloc else t.get_shape()  # b.T: transposed
        ring_type = ttg.MemDescType((slots, *shape), tt.element_type(t), item.encoding, mutable=True)
        rings.append(before.add(ttg.LocalAllocOp(ring_type)).result)
    barriers = None
    if on_tma:  # one mbarrier per slot, initialised once
        barriers = before.add(ttg.LocalAllocOp(tma.barrier_type(slots))).result
        slot_bars = [before.add(ttg.MemDescIndexOp(barriers, before.const(i))).result for i in range(slots)]
        for slot_bar in slot_bars:  # in a row: one barrier publishes them all
            before.add(ttng.InitBarrierOp(slot_bar, 1))
    full = empty = None
    if handed:  # a slot's copies landed (every thread's) / its readers are done (every thread)
        full, empty = (before.add(ttg.LocalAllocOp(tma.barrier_type(slots))).result for _ in range(2))
        slot_bars = [before.add(ttg.MemDescIndexOp(ring, before.const(i))).result
                     for ring in (full, empty) for i in range(slots)]  # fmt: skip
        for slot_bar in slot_bars:
            before.add(ttng.InitBarrierOp(slot_bar, threads))

    # prologue: iterations 0..ahead-1 into slots 0..ahead-1
    carried = {body.args[i + 1]: loop.iter_args[i] for i in plan.ahead}
    for i in range(ahead):
        offset = before.add(arith.MuliOp(loop.step, before.const(i, iv_type))).result
        k = before.add(arith.AddiOp(loop.lb, offset)).result
        live = before.add(arith.CmpiOp("slt", k, loop.ub)).result
        env = {iv: k, **carried}
        _issue(before, plan, rings, before.const(i), live, env, barriers, full)
        nexts = _next_values(before, plan, body, env)
        carried = {body.args[j + 1]: nexts[j] for j in plan.ahead}

    # the loop: the ahead iter_args start `ahead` iterations in; slot counters are carried
    inits = list(loop.iter_args)
    for j in plan.ahead:
        if j not in plan.shadowed:
            inits[j] = carried[body.args[j + 1]]
    read_slot = body.insert_arg(i32, len(body.args))
    inits.append(before.const(0))
    write_slot = read_slot
    if ahead != slots:
        write_slot = body.insert_arg(i32, len(body.args))
        inits.append(before.const(ahead))
    if handed:
        # the slot this iteration's refill would take without the slot more: read `distance`
        # iterations ago, and done with once refill_after is (from iteration `distance` on)
        distance = slots - 1 - ahead
        released_slot = body.insert_arg(i32, len(body.args))
        inits.append(before.const(slots - distance))
        full_phase, empty_phase = (body.insert_arg(i32, len(body.args)) for _ in range(2))
        inits += [before.const(0), before.const(1)]  # a fresh slot's "previous phase" is done
        first_release = before.add(arith.AddiOp(
            loop.lb, before.add(arith.MuliOp(loop.step, before.const(distance, iv_type))).result)).result

    if handed:  # the read slot's copies have landed, every thread's
        at_start = OpBuilder(InsertPoint.at_start(body))
        bar = at_start.add(ttg.MemDescIndexOp(full, read_slot)).result
        wait = at_start.add(ttng.WaitBarrierOp(bar, full_phase, rings))
    elif on_tma:  # the read slot's barrier completes a phase per use; its parity flips per wrap
        phase = body.insert_arg(i32, len(body.args))
        inits.append(before.const(0))
        at_start = OpBuilder(InsertPoint.at_start(body))
        bar = at_start.add(ttg.MemDescIndexOp(barriers, read_slot)).result
        wait = at_start.add(ttng.WaitBarrierOp(bar, phase))
    else:
        wait = OpBuilder(InsertPoint.at_start(body)).add(ttg.AsyncWaitOp(ahead - 1))
    reads = [_read_slot(item, ring, read_slot) for item, ring in zip(plan.loads, rings)]
    previous_dot_done = _make_async(body, async_dot) if async_dot is not None else None
    if async_dot is not None and async_dot.waits_before_refill:  # the slot the previous dot read,
        refill_after = previous_dot_done  # once it is done (the lowering's barrier comes first)
    elif async_dot is not None and async_dot.drained_before_refill:  # the refill overlaps the
        refill_after = async_dot.dot  # running last dot, not the first dot's issue; its slot is free anyway
    elif _refills_first(body):  # the refilled slot was last read before the wait's barrier
        refill_after = wait
    elif previous_dot_done is not None:
        refill_after = previous_dot_done
    else:
        refill_after = _last_reader(body, reads)
    issue = OpBuilder(InsertPoint.after(refill_after))
    ahead_k = issue.add(
        arith.AddiOp(iv, issue.add(arith.MuliOp(loop.step, issue.const(ahead, iv_type))).result)
    ).result
    live = issue.add(arith.CmpiOp("slt", ahead_k, loop.ub)).result
    shadows = {}
    for j in plan.shadowed:
        shadows[body.args[j + 1]] = body.insert_arg(body.args[j + 1].type, len(body.args))
        inits.append(carried[body.args[j + 1]])
    env = {iv: ahead_k, **shadows}
    if handed:  # done with the released slot; the refilled one's readers are done with it
        released = issue.add(arith.CmpiOp("sge", iv, first_release)).result
        issue.add(ttng.ArriveBarrierOp(issue.add(ttg.MemDescIndexOp(empty, released_slot)).result, released))
        bar = issue.add(ttg.MemDescIndexOp(empty, write_slot)).result
        issue.add(ttng.WaitBarrierOp(bar, empty_phase, rings))
    _issue(issue, plan, rings, write_slot, live, env, barriers, full)
    yield_op = body.last_op
    yielded = list(yield_op.operands)
    nexts = _next_values(issue, plan, body, env, plan.recomputed)
    for j in plan.recomputed:
        if j not in plan.shadowed:
            yielded[j] = nexts[j]

    at_end = OpBuilder(InsertPoint.before(yield_op))
    counters = [_advance(at_end, read_slot, slots)]
    if write_slot is not read_slot:
        counters.append(_advance(at_end, write_slot, slots))
    if on_tma:
        counters.append(_flip_on_wrap(at_end, counters[0], phase))
    if handed:
        counters.append(_advance(at_end, released_slot, slots))
        counters.append(_flip_on_wrap(at_end, counters[0], full_phase))
        counters.append(_flip_on_wrap(at_end, counters[1], empty_phase))
    shadow_yields = [nexts[j] for j in plan.shadowed]
    Rewriter.replace_op(yield_op, scf.YieldOp(*yielded, *counters, *shadow_yields))

    new_loop = reinitialized_for(loop, inits)
    for old, new in zip(loop.results, new_loop.results):
        old.replace_all_uses_with(new)
    Rewriter.erase_op(loop)

    if on_tma:  # copies past the trip count were never issued: nothing is in flight
        drain = []
        for i in range(slots):
            index = arith.ConstantOp(IntegerAttr(i, i32))
            slot_bar = ttg.MemDescIndexOp(barriers, index.result)
            drain += [index, slot_bar]
        drain += [ttng.InvalBarrierOp(op.result) for op in drain if isinstance(op, ttg.MemDescIndexOp)]
        drain += [ttg.LocalDeallocOp(ring) for ring in (*rings, barriers)]
    elif handed:
        drain = [ttng.InvalBarrierOp(bar) for bar in slot_bars]
        drain += [ttg.LocalDeallocOp(ring) for ring in (*rings, full, empty)]
        first_inval = drain[0]
    else:
        drain = [ttg.AsyncWaitOp(0)] + [ttg.LocalDeallocOp(ring) for ring in rings]
    # a last dot still running after the loop is waited for before its result is read
    if async_dot is not None and not async_dot.waited_in_body:
        index = next(i for i, v in enumerate(new_loop.body.block.last_op.operands) if v is async_dot.yielded)
        result = new_loop.results[index]
        final = ttng.WarpGroupDotWaitOp(result, 0)
        result.replace_uses_with_if(final.result, lambda use: use.operation is not final)
        drain.insert(0, final)
    for op in reversed(drain):
        Rewriter.insert_op(op, InsertPoint.after(new_loop))
    if handed:  # every thread waits for the copies past the trip count too before the invals:
        # then nothing arrives on the barriers any more
        _drain_copies(OpBuilder(InsertPoint.before(first_inval)), full, rings,
                      new_loop.results[read_slot.index - 1], new_loop.results[full_phase.index - 1], ahead, slots)
    if not on_tma:
        _issue_early(outer, preceding, new_loop)


# Ops the prologue's copies may be issued ahead of: they only read memory or write a buffer of
# their own (loads, shared copies of a value, fences for the async proxy, warp-group dots and
# their waits); pure ops are passed as well. Anything else (stores, other copies and their
# groups and waits, barriers, loops and branches) keeps the copies behind it.
_PASSABLE = (tt.LoadOp, ttg.LocalAllocOp, ttg.LocalLoadOp, ttng.FenceAsyncSharedOp,
             ttng.WarpGroupDotOp, ttng.WarpGroupDotWaitOp)  # fmt: skip


def _passable(op: Operation, placed: Operation | None) -> bool:
    """Whether a prologue op with effects may move above `op` (never above `placed`, the one
    before it)."""
    return op is not placed and (is_side_effect_free(op) or isinstance(op, _PASSABLE))


def _issue_early(block: Block, preceding: Operation | None, loop: scf.ForOp) -> None:
    """Move the prologue (the ops between `preceding` and `loop`) up `block`, with the pure ops
    of the block it reads (the loop's bounds, say): each op right after the last op it must
    follow, in block order. That is what defines its operands and, for an op with effects, the
    prologue op with effects before it and the last op in between it may not pass
    (`_PASSABLE`). The first tiles' copies are then in flight while the work before the loop
    runs (attention loads Q, and in the overlapped order computes the first tile's scores and
    softmax) instead of starting after it; their rings are allocated earlier, so the buffers of
    that work take other shared memory."""
    movers, op = set(), preceding.next_op if preceding is not None else block.first_op
    while op is not loop:
        movers.add(op)
        op = op.next_op
    stack = [value for op in movers for value in _reads(op)]
    while stack:
        owner = stack.pop().owner
        if isinstance(owner, Operation) and owner.parent_block() is block and owner not in movers \
                and is_side_effect_free(owner) and not owner.regions:  # fmt: skip
            movers.add(owner)
            stack.extend(owner.operands)
    placed = None  # the last op with effects moved
    for op in [op for op in block.ops if op in movers]:
        pure = is_side_effect_free(op)
        defined = {value.owner for value in _reads(op)}
        target = op.prev_op
        while target is not None and target not in defined and (pure or _passable(target, placed)):
            target = target.prev_op
        if target is not op.prev_op:
            op.detach()
            where = InsertPoint.after(target) if target is not None else InsertPoint.at_start(block)
            Rewriter.insert_op(op, where)
        if not pure:
            placed = op


def _handed_over(body: Block, plan: _Plan, async_dot: _AsyncDot | None) -> bool:
    """Whether the loop's cp.async ring is handed between the copies and the readers by
    mbarriers rather than by the `bar.sync` after each wait: a loop of two or more warp-group
    dots (Hopper attention: Q·Kᵀ, the softmax, P·V) with no branch or loop in its body and no
    dot that waits for its predecessor before the refill. Each slot gets a `full` barrier (every
    thread arrives when its copies have landed: `cp.async.mbarrier.arrive.noinc`) and an
    `empty` one (every thread arrives where it is done reading the slot: where the refill used
    to come); the refill waits for the `empty` barrier of a slot one iteration older, a slot
    more per ring. So a warp may run up to an iteration ahead of the others, and the two warp
    groups of a program drift apart: one's softmax runs beside the other's dots instead of every
    warp waiting for the slowest at each iteration. That pays where the program is alone on its
    SM (`run` asks `SmBudget`): attention at head dim 128 on an H200, 1.02-1.04x. Beside another
    program (head dim 64: two per SM) the warp groups already overlap that program's, and the
    waits, arrivals and counters (about 20 instructions a thread per iteration) cost more: 0.99x
    without a mask. A loop of one dot has no such phases to overlap; it keeps its barrier."""
    return (
        not _is_tma(plan.loads[0].load)
        and sum(isinstance(op, ttng.WarpGroupDotOp) for op in body.ops) >= 2
        and not any(isinstance(op, (scf.IfOp, scf.ForOp, scf.WhileOp)) for op in body.ops)
        and (async_dot is None or not async_dot.waits_before_refill)
    )


# registers a thread needs beyond the loop's tensors: addresses, indices, predicates, counters
_SCALAR_REGISTERS = 32


def _estimated_registers(body: Block) -> int:
    """An estimate of the registers a thread needs in the loop, from the layouts: the tensors it
    carries and the results of its dots that neither accumulate into a carried tensor nor
    become one (`_becomes_carried`): the tutorial order's Q·Kᵀ scores. Each counts as many
    32-bit registers as the thread holds of it, plus `_SCALAR_REGISTERS`. Attention at head dim
    128 comes to 132-148 (159-200 measured): one program per SM; at 64, 100-116 (114-128): two."""
    values = [arg for arg in body.args[1:] if isinstance(arg.type, TensorType)]
    carried = set(body.last_op.operands)
    values += [op.d for op in body.ops
               if isinstance(op, DOTS) and op.c not in body.args and not _becomes_carried(op.d, carried)]  # fmt: skip
    words = 0
    for value in values:
        t = value.type
        held = from_encoding(t.encoding, t.get_shape()).num_registers
        words += -(-held * element_bytes(t.element_type) // 4)
    return words + _SCALAR_REGISTERS


def _becomes_carried(value: SSAValue, carried: set) -> bool:
    """Whether `value` is carried, or turns into a carried value of its own type through ops
    that are its only use (the causal mask's select): the same registers."""
    while value not in carried:
        uses = list(value.uses)
        if len(uses) != 1 or len(uses[0].operation.results) != 1:
            return False
        result = uses[0].operation.results[0]
        if result.type != value.type:
            return False
        value = result
    return True


def _buffers_across(loop: scf.ForOp) -> int:
    """Bytes of the shared buffers made before `loop` and read in it (attention's Q): live
    beside its rings (buffers used only before or after it may share their bytes)."""
    allocs = set()
    for op in loop.body.block.walk():
        for value in op.operands:
            while isinstance(value.type, ttg.MemDescType) and isinstance(value.owner, Operation) \
                    and not isinstance(value.owner, ttg.LocalAllocOp) and value.owner.operands:  # a view
                value = value.owner.operands[0]
            if isinstance(value.owner, ttg.LocalAllocOp) and not loop.is_ancestor(value.owner):
                allocs.add(value.owner)
    return sum(tile_bytes(alloc.result.type) for alloc in allocs)


def _slots(body: Block, async_dot: _AsyncDot | None, stages: int, handed: bool = False) -> int:
    """Slots of each ring: S-1, one per iteration whose copies are in flight (this one's
    included), where the refill reuses this iteration's slot after its last read; one more
    where the refill comes first (`_refills_first`: it writes the slot the previous
    iteration read, not this one's), and one more again under an asynchronous warp-group dot
    (the previous iteration's dot may still read its slot), as Triton gives an MMA v3 operand
    one buffer more; except where the dot's accumulator is read by an epilogue in the loop (a
    fused loop nest): its layout conversion's scratch is live beside the rings, so the refill
    waits for the previous dot instead (see `_async_dot`); except where a TMA store's
    buffer stays live across the loop (`tight`), for the same reason; and except behind other
    dots (attention's P·V), whose predecessor is drained before the refill. One more where the
    ring is `handed` over by mbarriers (`_handed_over`)."""
    extra = async_dot is not None and not (
        async_dot.waits_before_refill or async_dot.drained_before_refill or async_dot.waited_in_body
    )
    return stages - 1 + _refills_first(body) + extra + handed


def _refills_first(body: Block) -> bool:
    """Whether each iteration issues its refill right after its wait (a loop with a dot: the
    barrier that follows the wait already separates the refill from every earlier read of
    that slot, so none has to be added before it; a slot more per ring buys that). Other
    loops refill after their last read of the slot and keep their rings small: a row loop's
    occupancy is set by its shared memory."""
    return any(isinstance(op, DOTS) for op in body.ops)


@dataclass
class _AsyncDot:
    dot: ttng.WarpGroupDotOp
    yielded: SSAValue | None = None  # what the yield carries: the dot's result, its wait, or an epilogue's result
    epilogue: bool = False  # its result goes through a branch of the loop (a fused nest's epilogue)
    tight: bool = False  # the rings share shared memory with a TMA store kept in flight
    # Behind other dots (attention's P·V after Q·Kᵀ) the previous iteration's dot is done before
    # the refill: the first dot's own wait drains it (`_make_async`), the refill comes after
    # this dot's issue, and the lowering's barrier before the refill (the dots' reads of the
    # rings are pending) orders every warp's wait before any copy. So the refill may take the
    # slot that dot read: no slot beyond Triton's, which would cost attention a program per SM
    # (128x128 tiles on 4 warps: 2 programs of 112 KB, or 1 of 144 KB).
    drained_before_refill: bool = False
    # Read later in its own iteration (attention written to issue the next Q·Kᵀ before this
    # P·V, and to rescale the accumulator after it): it runs while the ops between its issue and
    # its first reader (the next tile's softmax) do, and is waited for there, so no slot beyond
    # Triton's is needed and nothing is in flight across the back edge.
    waited_in_body: bool = False

    @property
    def waits_before_refill(self) -> bool:
        """The refill reuses the slot the previous dot read, after waiting for it, rather than
        taking a slot more: Triton's ring of num_stages buffers."""
        return self.epilogue or self.tight


def _async_dot(body: Block, plan: _Plan, stages: int) -> _AsyncDot | None:
    """The loop's last warp-group dot, when it can run asynchronously. Either its result is read
    later in this iteration, after other work (`_first_reader`), and its shared operands are
    pipelined: it is waited for there. Or its result is only carried to the next iteration, its
    shared operands pipelined (or written before the loop), with at least 3 stages (one slot is
    still read by the running dot while another is refilled); a register operand A may then
    come from this iteration (attention's P): nothing writes it again before the next
    iteration's wait."""
    dots = [op for op in body.ops if isinstance(op, ttng.WarpGroupDotOp)]
    if not dots:
        return None
    dot = dots[-1]
    allocs = {item.alloc for item in plan.loads if item.alloc is not None}
    if dot.b.owner not in allocs:
        return None
    if _first_reader(dot, body) is not None and (
        not isinstance(dot.a.type, ttg.MemDescType) or dot.a.owner in allocs
    ):  # its slots are refilled only in later iterations, after the wait
        return _AsyncDot(dot, waited_in_body=True)
    if stages < 3:
        return None
    if not isinstance(dot.a.type, ttg.MemDescType):
        if len(dots) == 1 or not _computed_from_a_dot(dot.a, body):
            return None  # its registers would be rewritten while the dot still reads them
    elif dot.a.owner not in allocs and _defined_in(dot.a, body):
        return None
    uses = list(dot.d.uses)
    if len(uses) == 1 and uses[0].operation is body.last_op:
        return _AsyncDot(dot, drained_before_refill=len(dots) > 1)
    # a fused nest's epilogue: the result is read in an scf.if of the body (a tile's last K
    # step), which waits for the dot, and carried through it into the next iteration's C
    if len(dots) > 1 or not _is_iter_arg(dot.c, body):  # C read nowhere else while in flight
        return None
    carried = body.last_op.operands[dot.c.index - 1]
    branch = carried.owner
    if not isinstance(branch, scf.IfOp) or branch.parent_block() is not body:
        return None
    blocks = [region.block for region in branch.regions]
    if not all(_branch_of(use.operation, body) in blocks for use in uses):
        return None
    return _AsyncDot(dot, yielded=carried, epilogue=True)


def _first_reader(dot: ttng.WarpGroupDotOp, body: Block) -> Operation | None:
    """The op of `body` that first reads the dot's result, when there is work to overlap the dot
    with before it (an op between them that does not read it) and it is neither the loop's
    yield nor a branch (a result carried into the next iteration, directly or through a fused
    nest's epilogue, is one of the other cases of `_async_dot`)."""
    readers = {_top(use.operation, body) for use in dot.d.uses}
    between = 0
    op = dot.next_op
    while op is not None and op not in readers:
        between += 1
        op = op.next_op
    if op is None or op is body.last_op or op.regions or between == 0:
        return None  # carried on as it is, or read by a fused nest's epilogue branch
    return op


def _branch_of(op: Operation, body: Block) -> Block | None:
    """The block of an scf.if directly in `body` that holds `op` (at any depth), if any."""
    block = op.parent_block()
    while block is not None and block.parent_op() is not None:
        owner = block.parent_op()
        if owner.parent_block() is body:
            return block if isinstance(owner, scf.IfOp) else None
        block = owner.parent_block()
    return None


def _computed_from_a_dot(value: SSAValue, body: Block) -> bool:
    """Whether `value` is computed in `body` from an earlier warp-group dot's result: then the
    next iteration writes it only after that dot's wait, which also drains this one."""
    seen, stack = set(), [value]
    while stack:
        op = stack.pop().owner
        if not isinstance(op, Operation) or op in seen or op.parent_block() is not body:
            continue
        if isinstance(op, ttng.WarpGroupDotOp):
            return True
        seen.add(op)
        stack.extend(op.operands)
    return False


def _defined_in(value: SSAValue, body: Block) -> bool:
    """Whether `value` is made in `body` (or in a region nested in it)."""
    loop = body.parent_op()
    return value.owner is not loop and loop.is_ancestor(value.owner)


def _make_async(body: Block, async_dot: _AsyncDot) -> Operation | None:
    """Make the dot asynchronous. Alone in the loop, it waits right after issuing for the
    previous iteration's (whose slots the refill reuses); returns that wait. Behind other dots
    (attention's P·V after Q·Kᵀ), it stays in flight into the next iteration, across the back
    edge and the next dots' issue, and its carried result is waited for after the first of
    those dots (whose own wait has drained it anyway) or before its first use."""
    dot = async_dot.dot
    dot.properties["isAsync"] = UnitAttr()
    if async_dot.waited_in_body:
        reader = _first_reader(dot, body)
        keep = () if isinstance(dot.a.type, ttg.MemDescType) else (dot.a,)
        wait = ttng.WarpGroupDotWaitOp(dot.d, 0, keep)
        Rewriter.insert_op(wait, InsertPoint.before(reader))
        dot.d.replace_uses_with_if(wait.result, lambda use: use.operation is not wait)
        return None
    if sum(isinstance(op, ttng.WarpGroupDotOp) for op in body.ops) == 1:
        wait = ttng.WarpGroupDotWaitOp(dot.d, 1)
        Rewriter.insert_op(wait, InsertPoint.after(dot))
        dot.d.replace_uses_with_if(wait.result, lambda use: use.operation is not wait)
        if not async_dot.epilogue:
            async_dot.yielded = wait.result
            return wait
        drained = {}  # a branch that reads the result waits for the dot where it starts
        for use in list(wait.result.uses):
            branch = _branch_of(use.operation, body)
            if use.operation is branch.last_op:
                continue  # carried on, still running
            if branch not in drained:
                drained[branch] = ttng.WarpGroupDotWaitOp(wait.result, 0)
                Rewriter.insert_op(drained[branch], InsertPoint.at_start(branch))
            use.operation.operands[use.index] = drained[branch].result
        return wait
    async_dot.yielded = dot.d
    index = list(body.last_op.operands).index(dot.d)
    carried = body.args[index + 1]
    wait = ttng.WarpGroupDotWaitOp(carried, 0)
    for op in body.ops:
        if any(v is carried for v in op.operands):
            Rewriter.insert_op(wait, InsertPoint.before(op))
            break
        if isinstance(op, ttng.WarpGroupDotOp):
            Rewriter.insert_op(wait, InsertPoint.after(op))
            break
    carried.replace_uses_with_if(wait.result, lambda use: use.operation is not wait)
    return None


def _next_values(b: OpBuilder, plan: _Plan, body: Block, env: dict,
                 positions: list[int] | None = None) -> dict[int, SSAValue]:  # fmt: skip
    """The ahead iter_args' values (those at `positions`, else all) for the iteration after the
    one `env` describes."""
    positions = plan.ahead if positions is None else positions
    yielded = body.last_op.operands
    needed = set(_backward_slice([yielded[j] for j in positions], body) or ())
    b.clone([op for op in plan.update_ops if op in needed and op.results[0] not in env], env)
    return {j: env.get(yielded[j], yielded[j]) for j in positions}


def _last_reader(body: Block, reads: list[Operation]) -> Operation:
    """The last op of `body` that reads the slots through `reads` (the ops _read_slot placed):
    a local_load, or the dot a memdesc reaches through its local_load."""
    ops = list(body.ops)[:-1]  # not the yield
    readers = set(reads)
    for op in ops:
        if op not in readers and any(v.owner in readers for v in op.operands):
            readers.add(op)
    return [op for op in ops if op in readers][-1]


def _read_slot(item: _Load, ring: SSAValue, slot: SSAValue) -> Operation:
    """Replace the load (and the local_alloc it fed) by this iteration's slot of `ring`; the
    last op it placed."""
    load = item.load
    b = OpBuilder(InsertPoint.before(load))
    view = b.add(ttg.MemDescIndexOp(ring, slot)).result
    if item.staging is not None:
        item.staging.replace(view)
        return view.owner
    if item.alloc is not None:
        item.alloc.result.replace_all_uses_with(view)
        Rewriter.erase_op(item.alloc)
        Rewriter.erase_op(load)
        return view.owner
    value = b.add(ttg.LocalLoadOp(view, load.result.type)).result
    if not _is_tma(load) and not _zero_other(load):
        value = b.add(arith.SelectOp(load.mask, value, load.other)).result
    load.result.replace_all_uses_with(value)
    Rewriter.erase_op(load)
    return value.owner


def _flip_on_wrap(b: OpBuilder, slot: SSAValue, phase: SSAValue) -> SSAValue:
    """`phase` flipped when the advanced `slot` wrapped to 0: a ring barrier's parity."""
    wrapped = b.add(arith.CmpiOp("eq", slot, b.const(0))).result
    return b.add(arith.SelectOp(wrapped, b.add(arith.XoriOp(phase, b.const(1))).result, phase)).result


def _drain_copies(b: OpBuilder, full: SSAValue, rings: list, read_slot: SSAValue, phase: SSAValue,
                  ahead: int, slots: int) -> None:  # fmt: skip
    """After a loop whose copies the `full` barriers hand over: wait for the last `ahead` fills
    (copies past the trip count, masked off, that still arrive on their barriers), starting at
    the slot the loop would read next with parity `phase`."""
    for k in range(ahead):
        at = b.add(arith.AddiOp(read_slot, b.const(k))).result
        wrapped = b.add(arith.CmpiOp("sge", at, b.const(slots))).result
        slot = b.add(arith.SelectOp(wrapped, b.add(arith.SubiOp(at, b.const(slots))).result, at)).result
        parity = b.add(arith.SelectOp(wrapped, b.add(arith.XoriOp(phase, b.const(1))).result, phase)).result
        b.add(ttng.WaitBarrierOp(b.add(ttg.MemDescIndexOp(full, slot)).result, parity, rings))


def _advance(b: OpBuilder, slot: SSAValue, stages: int) -> SSAValue:
    """(slot + 1) mod stages, without a division."""
    nxt = b.add(arith.AddiOp(slot, b.const(1))).result
    wrap = b.add(arith.CmpiOp("sge", nxt, b.const(stages))).result
    return b.add(arith.SelectOp(wrap, b.const(0), nxt)).result
