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
