"""`KernelBinary`: a compiled kernel reduced to what launching it needs, so it can travel.

Autotuning on several GPUs times each config in a worker process that owns one GPU (and may sit
on another machine): the worker never sees the kernel's Python source, so the compile pool hands
over this picklable value instead: the stages its launcher reads (the cubin, the CPU object
code, the TTIR the interpreter runs: the backend's `launch_stages`) and the metadata.
`load_binary` rebuilds a launchable `CompiledKernel` from it without compiling anything.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from kernellab.backends import get_backend
from kernellab.backends.metadata import KernelMetadata
from kernellab.compiler.kernel import CompiledKernel, LazyAsm


@dataclass(frozen=True, eq=False)
class KernelBinary:
    """One compiled specialization as plain data: `asm` (stage → text or bytes, the stages
    made on demand left out), its `metadata` and the Python parameter names."""

    name: str
    asm: dict
    metadata: KernelMetadata
    param_names: tuple

    @property
    def target(self) -> str:
        return self.metadata.target

    @property
    def digest(self) -> str:
        """Identifies the code (a worker keeps one loaded module per digest)."""
        final = self.asm[list(self.asm)[-1]]
        return hashlib.sha256(final if isinstance(final, bytes) else final.encode()).hexdigest()[:16]


def binary_of(ck: CompiledKernel) -> KernelBinary:
    """What `load_binary` needs to launch `ck` elsewhere: the stages its backend's launcher
    reads (a matmul's cubin and PTX are 0.3 MB; its LLVM IR alone is 1 MB)."""
    wanted = get_backend(ck.metadata.target).launch_stages
    asm = {stage: text for stage, text in dict(ck.asm).items()
           if text is not None and (wanted is None or stage in wanted)}  # fmt: skip
    return KernelBinary(ck.name, asm, ck.metadata, tuple(ck.param_names))


def load_binary(binary: KernelBinary) -> CompiledKernel:
    """A launchable CompiledKernel from a KernelBinary (no stage runs). Backends that cache on
    disk restore their final artifact from the asm; the interpreter parses its TTIR again."""
    backend = get_backend(binary.target)
    asm = LazyAsm(dict(binary.asm), backend.lazy_asm)
    metadata = binary.metadata
    if backend.restore is not None:

        def make_launcher():
            return backend.launcher(backend.restore(asm, metadata))

    else:
        stage = list(backend.parsers)[-1]

        def make_launcher():
            return backend.launcher(backend.parsers[stage](asm[stage]))

    return CompiledKernel(binary.name, asm, metadata, [], None, list(binary.param_names), make_launcher)


__all__ = ["KernelBinary", "binary_of", "load_binary"]
