"""`import kernellab` stays light: no Jupyter, torch or matplotlib, and no compiler until used."""

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
