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


@functools.cache
def vector_registers() -> tuple[int, int]:
    """(how many, bytes each) of the host's vector registers, for register-blocked code (tl.dot's
    micro-tile): AVX-512 32 x 64, AVX 16 x 32, AArch64 NEON 32 x 16, else SSE's 16 x 16."""
    llvm = binding()
    features = llvm.get_host_cpu_features()
    if features.get("avx512f"):
        return 32, 64
    if features.get("avx"):
        return 16, 32
    if llvm.get_process_triple().startswith(("aarch64", "arm64")):
        return 32, 16
    return 16, 16


def host_description() -> str:
    """'x86_64-unknown-linux-gnu (znver5)': what compiled code runs on."""
    llvm = binding()
    return f"{llvm.get_process_triple()} ({llvm.get_host_cpu_name()})"


__all__ = ["host_machine", "new_host_machine", "host_description", "vector_registers"]
