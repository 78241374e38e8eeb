"""The function the CPU launcher calls: a loop over a range of program ids around the kernel.

    void <kernel>_grid(ptr args, ptr scratch, ptr status, i32 gx, i32 gy, i32 gz, i64 first, i64 end)

runs programs first..end-1 (linear ids, x fastest) of a gx × gy × gz grid, each program's
warps one after another (the kernel's last hidden parameters are its warp and the phase to
run: a program whose warps meet at barriers runs each phase for every warp before the next,
phases.py). `args` holds one
8-byte slot per kernel argument (a pointer, or a scalar in the slot's low bytes); `scratch` is
the calling worker's shared memory; `status` the launch's status record (checks.py), which also
stops the loop once a program failed. The launcher splits the grid into ranges and calls this
from a thread pool through ctypes, which releases the GIL, so the ranges run on all cores.
"""

from __future__ import annotations

import llvmlite.ir as ir

from kernellab.backends.cpu.lowering.phases import phase_count_name
from kernellab.backends.llvm.types import I1, I8, I32, I64, PTR, SPTR, VOID

SLOT_BYTES = 8
GRID_PARAMS = (PTR, PTR, PTR, I32, I32, I32, I64, I64)


def grid_function_name(kernel: str) -> str:
    return f"{kernel}_grid"


def define_grid_loop(ctx, fn: ir.Function, nhidden: int, warps: int) -> ir.Function:
    own = fn.function_type.args[: len(fn.function_type.args) - nhidden]
    loop = ir.Function(ctx.mod, ir.FunctionType(VOID, GRID_PARAMS), grid_function_name(fn.name))
    loop.attributes.add("nounwind")
    args, scratch, status, gx, gy, gz, first, end = loop.args
    entry = loop.append_basic_block("entry")
    head = loop.append_basic_block("next_program")
    body = loop.append_basic_block("program")
    done = loop.append_basic_block("done")

    b = ir.IRBuilder(entry)
    b.debug_metadata = ctx.debug.wrapper_location(loop)
    values = []
    for i, ty in enumerate(own):
        slot = b.gep(args, [I64(i * SLOT_BYTES)], source_etype=I8)
        if ty == I1:
            values.append(b.trunc(b.load(slot, typ=I8), I1))
        else:
            values.append(b.load(slot, typ=ty))
    shared = b.addrspacecast(scratch, SPTR)
    b.branch(head)

    b.position_at_end(head)
    p = b.phi(I64, "pid")
    p.add_incoming(first, entry)
    failed = b.icmp_unsigned("!=", b.load(status, typ=I64), I64(0))
    go = b.and_(b.icmp_signed("<", p, end), b.not_(failed))
    b.cbranch(go, body, done)

    b.position_at_end(body)
    gx64, gy64 = b.zext(gx, I64), b.zext(gy, I64)
    x = b.trunc(b.urem(p, gx64), I32)
    rest = b.udiv(p, gx64)
    y = b.trunc(b.urem(rest, gy64), I32)
    z = b.trunc(b.udiv(rest, gy64), I32)
    args = [*values, x, y, z, gx, gy, gz, shared, status]
    if warps == 1:
        b.call(fn, [*args, I32(0), I32(0)])
    else:  # each phase (phases.py) for every warp in turn, then the next phase
        phases = ir.GlobalVariable(ctx.mod, I32, phase_count_name(fn.name))
        phases.linkage = "internal"
        phases.global_constant = True
        phases.initializer = I32(1)  # phases.split counts the barriers
        phase_head = loop.append_basic_block("phase")
        warp_body = loop.append_basic_block("warp")
        phase_end = loop.append_basic_block("phase.end")
        next_program = loop.append_basic_block("program.end")
        b.branch(phase_head)
        b.position_at_end(phase_head)
        ph = b.phi(I32, "phase")
        ph.add_incoming(I32(0), body)
        b.branch(warp_body)
        b.position_at_end(warp_body)
        w = b.phi(I32, "warp")
        w.add_incoming(I32(0), phase_head)
        b.call(fn, [*args, w, ph])
        w_next = b.add(w, I32(1))
        w.add_incoming(w_next, warp_body)
        b.cbranch(b.icmp_unsigned("<", w_next, I32(warps)), warp_body, phase_end)
        b.position_at_end(phase_end)
        ph_next = b.add(ph, I32(1))
        ph.add_incoming(ph_next, phase_end)
        b.cbranch(b.icmp_unsigned("<", ph_next, b.load(phases, typ=I32)), phase_head, next_program)
        body = next_program
        b.position_at_end(next_program)
    p.add_incoming(b.add(p, I64(1)), body)
    b.branch(head)

    b.position_at_end(done)
    b.ret_void()
    return loop


__all__ = ["define_grid_loop", "grid_function_name", "SLOT_BYTES"]
