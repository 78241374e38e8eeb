"""`python -m kernellab`: the tour, `compile FILE.py:kernel`, and `doctor`."""

import subprocess
import sys
import textwrap
from pathlib import Path

from kernellab.cli import main

ROOT = Path(__file__).resolve().parent.parent


def test_tour_compiles_prints_and_checks():
    result = subprocess.run([sys.executable, "-m", "kernellab"], capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "tt.func public @add_kernel" in out and "tt.load" in out
    assert "canonicalize" in out and "result matches numpy" in out


def test_compile_prints_a_stage(tmp_path, capsys):
    source = tmp_path / "kernels.py"
    source.write_text(textwrap.dedent("""
        import kernellab as kl
        import kernellab.language as tl

        @kl.jit
        def fill(out_ptr, value, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            tl.store(out_ptr + offs, tl.full((BLOCK,), value, tl.float32))
    """))
    assert main(["compile", f"{source}:fill", "--signature", "*fp32,fp32", "--constexprs", "BLOCK=64", "--passes"]) == 0
    out = capsys.readouterr().out
    assert "tt.func public @fill(%out_ptr: !tt.ptr<f32>, %value: f32)" in out
    assert "tensor<64xf32>" in out and "dce" in out


def test_doctor_reports_versions(capsys):
    assert main(["doctor"]) == 0
    out = capsys.readouterr().out
    assert "xdsl" in out and "numpy" in out and "GPU visible" in out
