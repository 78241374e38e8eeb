"""The machine the CPU backend compiles for: this process's host (triple, CPU name and
features, so LLVM uses every vector extension it has), as one cached llvmlite TargetMachine."""

from __future__ import annotations

import functools

from kernellab.backends.toolchain import binding


@functools.cache
def host_machine():
    """The TargetMachine for the host CPU at O3 (what the llir, asm and obj stages use)."""
    return new_host_machine()


def new_host_machine():
    """A fresh host TargetMachine (an MCJIT engine takes ownership of the one it is given)."""
    llvm = binding()
    target = llvm.Target.from_default_triple()
    return target.create_target_machine(
        cpu=llvm.get_host_cpu_name(),
        features=llvm.get_host_cpu_features().flatten(),
        opt=3,
        jit=True,
    )


def host_description() -> str:
    """'x86_64-unknown-linux-gnu (znver5)': what compiled code runs on."""
    llvm = binding()
    return f"{llvm.get_process_triple()} ({llvm.get_host_cpu_name()})"


__all__ = ["host_machine", "new_host_machine", "host_description"]
