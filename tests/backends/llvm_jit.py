"""Host JIT of one function of an llvmlite module, for tests of the lowering core's own
algorithms (what the GPU targets run) on the CPU."""

import ctypes

import llvmlite.binding as llvm

_engines = []  # the JIT engines stay alive while their functions are called


def jit_function(module, name: str, ctype):
    """`name` in `module`, compiled for the host, as a ctypes function of `ctype` arguments
    returning `ctype`."""
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    parsed = llvm.parse_assembly(str(module))
    parsed.verify()
    engine = llvm.create_mcjit_compiler(parsed, llvm.Target.from_default_triple().create_target_machine())
    engine.finalize_object()
    _engines.append(engine)
    fn = module.get_global(name)
    return ctypes.CFUNCTYPE(ctype, *[ctype] * len(fn.args))(engine.get_function_address(name))
