"""`python -m kernellab`: the tour, `compile FILE.py:kernel`, and `doctor`."""

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from kernellab.cli import main

ROOT = Path(__file__).resolve().parent.parent


def test_tour_compiles_prints_and_checks():
    result = subprocess.run([sys.executable, "-m", "kernellab"], capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "tt.func public @add_kernel" in out and "tt.load" in out
    assert "canonicalize" in out and "result matches numpy" in out
    # the GPU stages too, compiled for sm_90 without a GPU: layouts in TTGIR, vector loads in PTX
    assert "== TTGIR for sm_90" in out and "#ttg.blocked<" in out
    assert ".target sm_90" in out and "ld.global.v4.b32" in out


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


def test_doctor_reports_versions_and_tools(capsys):
    assert main(["doctor"]) == 0
    out = capsys.readouterr().out
    assert "xdsl" in out and "numpy" in out and "GPU visible" in out
    for tool in ("nvJitLink", "nvdisasm", "graphviz", "JupyterLab extension"):
        assert tool in out, tool


def test_doctor_says_graphs_need_no_dot(capsys, monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    assert main(["doctor"]) == 0
    line = next(ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("graphviz"))
    assert "no `dot`" in line and "own SVG layout" in line


# -- ordinary mistakes: a short message naming the problem and the fix, exit status 2 ----------

KERNELS = textwrap.dedent("""
    import kernellab as kl
    import kernellab.language as tl

    NOT_A_KERNEL = 3

    @kl.jit
    def fill(out_ptr, value, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(out_ptr + offs, tl.full((BLOCK,), value, tl.float32))

    @kl.jit
    def broken(out_ptr, BLOCK: tl.constexpr):
        tl.store(out_ptr + tl.arange(0, BLOCK), undefined_name)
""")


@pytest.fixture
def files(tmp_path):
    (tmp_path / "kernels.py").write_text(KERNELS)
    (tmp_path / "folder.py").mkdir()
    (tmp_path / "binary.py").write_bytes(bytes(range(256)))
    (tmp_path / "syntax.py").write_text("import kernellab as kl\n\ndef f(:\n    pass\n")
    (tmp_path / "imports.py").write_text("import kernellab as kl\nimport no_such_module_for_kernellab\n")
    return tmp_path


FILL = ["--signature", "*fp32,fp32", "--constexprs", "BLOCK=64"]
MISTAKES = {
    "a directory": ("folder.py:fill", FILL, ["is a directory", "Python file"]),
    "a binary file": ("binary.py:fill", FILL, ["not Python source", "the .py file"]),
    "a missing file": ("nothere.py:fill", FILL, ["no such file", "path"]),
    "not FILE:kernel": ("kernels.py", FILL, ["FILE.py:kernel"]),
    "a missing name": ("kernels.py:nope", FILL, ["defines no 'nope'", "fill"]),
    "not a kernel": ("kernels.py:NOT_A_KERNEL", ["--signature", "i32"], ["not a @kl.jit kernel", "int", "fill"]),
    "an unknown target": ("kernels.py:fill", FILL + ["--target", "sm_12x"], ["unknown target 'sm_12x'", "sm_90"]),
    "a bad signature": ("kernels.py:fill", ["--signature", "*fp33,fp32", "--constexprs", "BLOCK=64"], ["fp33", "--signature"]),
    "a short signature": ("kernels.py:fill", ["--signature", "*fp32", "--constexprs", "BLOCK=64"], ["out_ptr, value", "--signature"]),
    "a missing constexpr": ("kernels.py:fill", ["--signature", "*fp32,fp32"], ["BLOCK", "--constexprs"]),
    "--num-warps 3": ("kernels.py:fill", FILL + ["--num-warps", "3", "--target", "sm_90"], ["num_warps", "power of two", "--num-warps"]),
    "a compile error": ("kernels.py:broken", ["--signature", "*fp32", "--constexprs", "BLOCK=64"], ["undefined_name", "kernels.py:14"]),
    "a syntax error": ("syntax.py:f", ["--signature", "i32"], ["syntax.py:3", "syntax"]),
    "an import error": ("imports.py:f", ["--signature", "i32"], ["no_such_module_for_kernellab", "imports.py:2", "install"]),
    "an unknown stage": ("kernels.py:fill", FILL + ["--stage", "nope"], ["no stage 'nope'", "ttir"]),
    "ptx without --target": ("kernels.py:fill", FILL + ["--stage", "ptx"], ["--target sm_90", "interpreter", "ttir"]),
}  # fmt: skip


@pytest.mark.parametrize("mistake", list(MISTAKES))
def test_an_ordinary_mistake_is_a_short_message_and_status_2(files, capsys, mistake):
    target, options, words = MISTAKES[mistake]
    assert main(["compile", str(files / target), *options]) == 2
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    assert len(captured.err.strip().splitlines()) <= 8, captured.err
    for word in words:
        assert word in captured.err, (word, captured.err)
    assert "--traceback" in captured.err


def test_traceback_shows_the_whole_story(files, capsys):
    assert main(["compile", str(files / "kernels.py:fill"), "--signature", "*fp32,fp32", "--traceback"]) == 2
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err and "BLOCK" in err


def test_the_exit_status_reaches_the_shell(files):
    result = subprocess.run([sys.executable, "-m", "kernellab", "compile", str(files / "folder.py:fill"), *FILL],
                            capture_output=True, text=True, cwd=ROOT)  # fmt: skip
    assert result.returncode == 2 and "Traceback" not in result.stderr


def test_a_kernel_file_named_like_a_standard_module_works(tmp_path):
    (tmp_path / "json.py").write_text(KERNELS)
    result = subprocess.run(
        [sys.executable, "-m", "kernellab", "compile", f"{tmp_path / 'json.py'}:fill", *FILL, "--target", "sm_90", "--stage", "ttgir"],
        capture_output=True, text=True, cwd=ROOT,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "tt.func public @fill" in result.stdout and "#ttg.blocked" in result.stdout
