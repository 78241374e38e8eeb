"""`import kernellab` stays light: no Jupyter, torch or matplotlib, and no compiler until used."""

import os
import subprocess
import sys

HEAVY = ("torch", "matplotlib", "IPython", "ipywidgets", "jupyter", "jupyterlab", "notebook")


def imported_after(code: str) -> set[str]:
    probe = f"{code}\nimport sys\nprint('\\n'.join(sys.modules))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return {name.split(".")[0] for name in out.stdout.split()}


def test_import_kernellab_pulls_in_no_heavy_modules():
    loaded = imported_after("import kernellab as kl\nkl.jit; kl.autotune; kl.testing; kl.compile")
    assert not loaded & set(HEAVY), loaded & set(HEAVY)


def test_language_import_pulls_in_no_heavy_modules():
    loaded = imported_after("import kernellab.language as tl")
    assert not loaded & set(HEAVY)


def test_public_names():
    import kernellab as kl

    for name in ("jit", "compile", "CompiledKernel", "autotune", "Config", "heuristics", "cdiv",
                 "next_power_of_2", "CompilationError", "testing", "language"):  # fmt: skip
        assert hasattr(kl, name), name
    assert kl.cdiv(1000, 128) == 8 and kl.next_power_of_2(1000) == 1024 and kl.next_power_of_2(1) == 1
    assert issubclass(kl.CompilationError, Exception)


def test_import_kernellab_stays_lazy():
    """The compiler's heavy parts load on first use, not at `import kernellab` (issue 13's
    host-path speed): no xDSL dialects, LLVM, CUDA bindings, frontend, IR, lab or testing, and
    none of the Triton interop or torch operator modules."""
    probe = "import kernellab\nimport sys\nprint('\\n'.join(sys.modules))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    loaded = set(out.stdout.split())
    lazy = ("xdsl", "llvmlite", "cuda", "cuda.bindings", "kernellab.frontend", "kernellab.ir",
            "kernellab.lab", "kernellab.testing", "kernellab.layouts", "kernellab.backends.llvm",
            "kernellab.backends.interpreter", "kernellab.backends.nvidia.lowering",
            "kernellab.triton_compat", "kernellab.torch", "torch", "triton")  # fmt: skip
    assert not loaded & set(lazy), sorted(loaded & set(lazy))


def test_a_triton_style_program_header_stays_lazy(tmp_path):
    """What a Triton program does at import (`import kernellab as triton`, `import
    kernellab.language as tl`, decorate its kernels with `@jit`, `@autotune`, `@heuristics`)
    loads none of the heavy modules: no numpy or ml_dtypes (only CPU arrays and the compiler
    need them), no process pools (only tuning does), no compiler, no CUDA, no torch."""
    program = '''
import kernellab as triton
import kernellab.language as tl

@triton.autotune(configs=[triton.Config({"BLOCK": 128}, num_warps=4)], key=["n"])
@triton.heuristics({"EVEN": lambda args: args["n"] % args["BLOCK"] == 0})
@triton.jit
def add(x_ptr, y_ptr, n, BLOCK: tl.constexpr, EVEN: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)

assert add.fn.fn.__name__ == "add" and triton.cdiv(10, 4) == 3
import sys
print("\\n".join(sys.modules))
'''
    script = tmp_path / "program.py"  # a file: @jit reads the kernel's source
    script.write_text(program)
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, check=True)
    loaded = {name.split(".")[0] for name in out.stdout.split()}
    heavy = {"numpy", "ml_dtypes", "multiprocessing", "concurrent", "xdsl", "llvmlite", "cuda",
             "torch", "matplotlib", "ipywidgets", "IPython"}  # fmt: skip
    assert not loaded & heavy, sorted(loaded & heavy)


_FIRST_COMPILE = '''
import sys
import kernellab as kl
import kernellab.language as tl

@kl.jit
def add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)

ck = kl.compile(add, signature="*fp32,*fp32,*fp32,i32", constexprs={"BLOCK": 1024}, target=sys.argv[1], num_warps=4)
assert ".entry add" in ck.asm["ptx"]
print("\\n".join(sys.modules))
'''


def modules_after_first_compile(tmp_path, target: str) -> set[str]:
    """The modules a fresh process has loaded after compiling vector add for `target`."""
    script = tmp_path / "program.py"
    script.write_text(_FIRST_COMPILE)
    env = {**os.environ, "KERNELLAB_CACHE_DIR": str(tmp_path / "cache")}
    out = subprocess.run([sys.executable, str(script), target], capture_output=True, text=True, check=True, env=env)
    return set(out.stdout.split())


def test_a_compile_with_nothing_to_fold_loads_no_numpy(tmp_path):
    """numpy and ml_dtypes load only where a compile needs them (folding constants, layout
    tables, float literals), so the first compile of vector add in a fresh process, as the
    benchmarks time it, pays for neither."""
    loaded = {name.split(".")[0] for name in modules_after_first_compile(tmp_path, "sm_90")}
    assert not loaded & {"numpy", "ml_dtypes"}, sorted(loaded & {"numpy", "ml_dtypes"})


def test_an_nvidia_compile_loads_no_other_backend_no_autotuner_and_no_libdevice(tmp_path):
    """The backend table loads the CPU and AMD backends only for their own targets, `import
    kernellab` loads the autotuner only when a program uses `kl.autotune`, `kl.heuristics` or
    `kl.Config`, and `tl.extra`'s libraries load when a kernel names them (issue 13: the first
    compile in a fresh process)."""
    loaded = modules_after_first_compile(tmp_path, "sm_90a")
    unneeded = {"kernellab.backends.cpu.backend", "kernellab.backends.amd.backend", "kernellab.runtime.autotuner",
                "kernellab.language.extra.libdevice", "kernellab.language.extra.cuda"}  # fmt: skip
    assert not loaded & unneeded, sorted(loaded & unneeded)


def test_the_lazy_names_still_resolve():
    """What moved behind a lazy import is still there under its old names."""
    probe = """
import kernellab as kl
from kernellab.backends import AMD, CPU, get_backend
from kernellab.backends.cpu import CpuOptions
from kernellab.runtime.autotuner import Config, autotune, heuristics
assert kl.Config is Config and kl.autotune is autotune and kl.heuristics is heuristics
assert get_backend("cpu") is CPU and get_backend("host") is CPU and CPU.name == "cpu"
assert get_backend("gfx942") is AMD and get_backend("gfx950") is AMD and AMD.name == "amd"
assert isinstance(CPU.make_options("cpu"), CpuOptions)
import kernellab.language as tl
from kernellab.language.extra import cuda, libdevice
assert tl.extra.libdevice is libdevice and tl.extra.cuda is cuda and cuda.libdevice is libdevice
assert callable(libdevice.asin) and callable(cuda.gdc_wait)
"""
    subprocess.run([sys.executable, "-c", probe], check=True)


def test_a_kernel_naming_tl_extra_loads_it_and_runs(tmp_path):
    """A kernel that reaches libdevice and tl.extra.cuda through `tl.extra` in a fresh process
    (nothing loaded them before) compiles for the GPU and runs on the interpreter, fp32 asin
    within an ulp-sized bound of numpy's float64 arcsin on fresh random inputs."""
    program = '''
import sys
import numpy as np
import kernellab as kl
import kernellab.language as tl
assert "kernellab.language.extra.libdevice" not in sys.modules

@kl.jit
def asin(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.extra.cuda.gdc_wait()
    tl.store(y_ptr + offs, tl.extra.libdevice.asin(tl.load(x_ptr + offs)))

ck = kl.compile(asin, signature="*fp32,*fp32", constexprs={"BLOCK": 128}, target="sm_90a")
assert ".entry asin" in ck.asm["ptx"]
x = np.random.default_rng().uniform(-1, 1, 128).astype(np.float32)
y = np.full(128, np.nan, np.float32)
asin[(1,)](x, y, BLOCK=128)
error = np.abs(y.astype(np.float64) - np.arcsin(x.astype(np.float64)))
assert np.all(error <= 2 * np.spacing(np.abs(np.arcsin(x)).astype(np.float32))), error.max()
'''
    script = tmp_path / "program.py"
    script.write_text(program)
    env = {**os.environ, "KERNELLAB_CACHE_DIR": str(tmp_path / "cache")}
    subprocess.run([sys.executable, str(script)], check=True, env=env)
