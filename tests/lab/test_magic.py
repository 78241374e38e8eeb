"""`%%kernel` through a real IPython InteractiveShell: bundle, namespace, flags, runs, errors."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

pytest.importorskip("IPython")

from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

MIME = "application/vnd.kernellab.compile+json"

ADD = """%%kernel {flags}
def {name}(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(axis=0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x {op} y, mask=mask)
"""


@pytest.fixture(scope="module")
def ip():
    shell = InteractiveShell.instance()
    shell.run_cell("%load_ext kernellab", store_history=False)
    return shell


def run(ip, cell: str):
    with capture_output() as captured:
        result = ip.run_cell(cell, store_history=False)
    return result, captured


def bundles(captured) -> list[dict]:
    return [o.data for o in captured.outputs if MIME in o.data]


def texts(captured) -> str:
    return "\n".join(o.data.get("text/plain", "") for o in captured.outputs) + captured.stdout


def cell_line(cell: str, needle: str) -> int:
    """1-based line of the cell (line 1 is the %%kernel line) that contains `needle`."""
    return next(i for i, line in enumerate(cell.splitlines(), start=1) if needle in line)


def test_cell_compiles_and_shows_one_bundle(ip):
    cell = ADD.format(
        flags='--signature "*fp32,*fp32,*fp32,i32" --constexprs BLOCK=1024', name="add_a", op="+"
    )
    result, captured = run(ip, cell)
    assert result.error_in_exec is None and result.error_before_exec is None
    (bundle,) = bundles(captured)
    assert set(bundle) >= {MIME, "text/html", "text/plain"}
    data = bundle[MIME]
    assert data["version"] == 1 and data["name"] == "add_a"
    names = [s["name"] for s in data["stages"]]
    assert names[0] == "source" and "ttir" in names
    ttir = next(s for s in data["stages"] if s["name"] == "ttir")
    assert "tt.load" in ttir["text"] and "tt.store" in ttir["text"]
    assert data["metadata"]["signature"] == "*fp32,*fp32,*fp32,i32"
    assert data["metadata"]["constexprs"] == {"BLOCK": 1024}
    assert data["source"]["filename"].startswith("<kernel-cell-")
    assert data["passes"] and all(p["ir"] for p in data["passes"])
    assert "add_a" in bundle["text/plain"] and "tt.load" in bundle["text/plain"]


def test_line_mapping_points_loads_at_their_cell_lines(ip):
    cell = ADD.format(
        flags='-s "*fp32,*fp32,*fp32,i32" -c BLOCK=256 --target interpreter', name="add_map", op="+"
    )
    _, captured = run(ip, cell)
    data = bundles(captured)[0][MIME]
    ttir = next(s for s in data["stages"] if s["name"] == "ttir")
    lines = ttir["text"].splitlines()
    assert len(ttir["lines"]) == len(lines)
    x_load = next(i for i, text in enumerate(lines) if "%x = tt.load" in text)
    y_load = next(i for i, text in enumerate(lines) if "%y = tt.load" in text)
    store = next(i for i, text in enumerate(lines) if "tt.store" in text)
    assert ttir["lines"][x_load] == cell_line(cell, "x = tl.load")
    assert ttir["lines"][y_load] == cell_line(cell, "y = tl.load")
    assert ttir["lines"][store] == cell_line(cell, "tl.store")
    assert ttir["lines"][x_load] != ttir["lines"][y_load]
    source = data["stages"][0]
    assert source["text"].splitlines()[ttir["lines"][x_load] - 1].strip().startswith("x = tl.load")
    # every stage that maps lines points inside the cell
    n_cell = len(cell.splitlines())
    for stage in data["stages"]:
        assert all(v is None or 1 <= v <= n_cell for v in stage["lines"]), stage["name"]


def test_kernel_lands_in_namespace_ready_to_launch(ip):
    cell = ADD.format(flags='-s "*fp32,*fp32,*fp32,i32" -c BLOCK=128', name="add_ns", op="+")
    result, _ = run(ip, cell)
    assert result.error_in_exec is None
    import kernellab as kl

    kernel = ip.user_ns["add_ns"]
    assert isinstance(kernel, kl.JITFunction)
    assert inspect.getsource(kernel.fn).startswith("def add_ns(")
    rng = np.random.default_rng()
    x, y = rng.standard_normal((2, 1000)).astype(np.float32)
    out = np.full_like(x, np.nan)
    ip.user_ns.update(x=x, y=y, out=out)
    result, _ = run(ip, "add_ns[(kl.cdiv(1000, 128),)](x, y, out, 1000, BLOCK=128)")
    assert result.error_in_exec is None
    np.testing.assert_allclose(out, x.astype(np.float64) + y, rtol=1e-6)


def test_plain_function_is_wrapped_in_jit(ip):
    cell = '%%kernel -s "*fp32,i32" -c BLOCK=64\ndef plain_k(p, n, BLOCK: tl.constexpr):\n    offs = tl.arange(0, BLOCK)\n    tl.store(p + offs, offs.to(tl.float32), mask=offs < n)\n'
    result, captured = run(ip, cell)
    assert result.error_in_exec is None
    import kernellab as kl

    assert isinstance(ip.user_ns["plain_k"], kl.JITFunction)
    assert bundles(captured)[0][MIME]["name"] == "plain_k"


TWO = """%%kernel -s "*fp32,i32" -c BLOCK=64 {flags}
@kl.jit
def first_k(p, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(p + offs, offs.to(tl.float32), mask=offs < n)

@kl.jit
def second_k(p, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(p + offs, (offs * 2).to(tl.float32), mask=offs < n)
"""


def test_several_kernels_need_name(ip):
    result, captured = run(ip, TWO.format(flags=""))
    assert isinstance(result.error_in_exec, UsageError)
    assert "first_k" in str(result.error_in_exec) and "second_k" in str(result.error_in_exec)
    assert "--name" in str(result.error_in_exec)
    assert not bundles(captured)

    result, captured = run(ip, TWO.format(flags="--name second_k"))
    assert result.error_in_exec is None
    data = bundles(captured)[0][MIME]
    assert data["name"] == "second_k"
    assert "arith.muli" in next(s["text"] for s in data["stages"] if s["name"] == "ttir")

    result, _ = run(ip, TWO.format(flags="--name third_k"))
    assert isinstance(result.error_in_exec, UsageError)
    assert "first_k, second_k" in str(result.error_in_exec)


def test_args_infer_signature_from_namespace(ip):
    rng = np.random.default_rng()
    ip.user_ns.update(
        xa=rng.standard_normal(999).astype(np.float16),
        ya=rng.standard_normal(999).astype(np.float16),
        outa=np.full(999, np.nan, dtype=np.float16),
        na=999,
    )
    cell = ADD.format(flags="--args xa,ya,outa,na --constexprs BLOCK=256", name="add_args", op="+")
    result, captured = run(ip, cell)
    assert result.error_in_exec is None, result.error_in_exec
    md = bundles(captured)[0][MIME]["metadata"]
    assert md["signature"] == "*fp16,*fp16,*fp16,i32"
    assert md["constexprs"] == {"BLOCK": 256}
    assert "tt.load" in bundles(captured)[0]["text/plain"]
    assert np.isnan(ip.user_ns["outa"]).all()  # no --grid: nothing ran


def _inputs(ip, n: int):
    rng = np.random.default_rng()
    x, y = rng.uniform(0.5, 4.0, (2, n)).astype(np.float32)
    out = np.full(n, np.nan, dtype=np.float32)
    ip.user_ns.update(x=x, y=y, out=out, n=n)
    return x, y, out


def test_grid_and_passing_check_run_on_the_interpreter(ip):
    x, y, out = _inputs(ip, 1500)
    cell = ADD.format(
        flags='--args x,y,out,n -c BLOCK=512 --grid "(kl.cdiv(n, BLOCK),)" --check "out=x+y" --atol 1e-6',
        name="add_run", op="+",
    )  # fmt: skip
    result, captured = run(ip, cell)
    assert result.error_in_exec is None, result.error_in_exec
    np.testing.assert_allclose(out, x.astype(np.float64) + y, rtol=1e-6)
    text = texts(captured)
    assert "interpreter" in text and "ok" in text and "1500 elements" in text


def test_failing_check_fails_the_cell_without_traceback(ip):
    x, y, out = _inputs(ip, 700)
    cell = ADD.format(
        flags='--args x,y,out,n -c BLOCK=256 --grid "(kl.cdiv(n, BLOCK),)" --check "out=x+y"',
        name="sub_run", op="-",
    )  # fmt: skip
    result, captured = run(ip, cell)
    assert result.error_in_exec is not None
    assert "failed" in str(result.error_in_exec)
    np.testing.assert_allclose(out, x.astype(np.float64) - y, rtol=1e-6)  # it ran, with x - y
    assert "Traceback" not in captured.stdout and "Traceback" not in captured.stderr
    assert "out == x + y" in captured.stdout
    assert bundles(captured)  # the viewer was shown before the check failed


def test_bench_shows_both_times_and_ratio(ip):
    _inputs(ip, 4096)
    cell = ADD.format(
        flags='--args x,y,out,n -c BLOCK=1024 --grid "(kl.cdiv(n, BLOCK),)" --bench "numpy: x + y" --warmup 1 --rep 2 -q',
        name="add_bench", op="+",
    )  # fmt: skip
    result, captured = run(ip, cell)
    assert result.error_in_exec is None, result.error_in_exec
    assert not bundles(captured)  # -q: no viewer
    from kernellab.lab.magic import BenchResult

    bench = [o for o in captured.outputs if o.data.get("text/plain", "").startswith("bench on")]
    assert len(bench) == 1
    plain, html = bench[0].data["text/plain"], bench[0].data["text/html"]
    assert "add_bench" in plain and "numpy" in plain and plain.count(" ms") == 2 and "×" in plain
    assert "<table" in html and "x + y" in html
    # on the interpreter the times are labelled as numpy's, and no speed is claimed
    assert "interpreter times" in plain and "runs at" not in plain and "says nothing" in html
    assert BenchResult("k", "ref", "e", 2.0, 1.0, "interpreter").ratio == 0.5
    gpu = BenchResult("k", "torch", "e", 2.0, 1.0, "GPU")._repr_mimebundle_()
    assert "k runs at 0.50× the speed of torch" in gpu["text/plain"]


def test_bench_on_the_cpu_backend_is_a_result(ip):
    """--target cpu times the native kernel: real CPU times next to numpy's, named as such."""
    _inputs(ip, 4096)
    cell = ADD.format(
        flags='--args x,y,out,n -c BLOCK=1024 --grid "(kl.cdiv(n, BLOCK),)" --bench "numpy: x + y" '
              '--warmup 1 --rep 2 -q --target cpu', name="add_cpu_bench", op="+",
    )  # fmt: skip
    result, captured = run(ip, cell)
    assert result.error_in_exec is None, result.error_in_exec
    (plain,) = [o.data["text/plain"] for o in captured.outputs if o.data.get("text/plain", "").startswith("bench on")]
    assert plain.startswith("bench on the kernellab CPU backend: add_cpu_bench")
    assert "add_cpu_bench runs at" in plain and "interpreter" not in plain


@pytest.mark.parametrize(
    "flags, fragment",
    [
        ("--num-warps banana", "num-warps"),
        ("--num-warps 3", "power of two"),
        ("--target sm_70", "sm_70"),
        ("--stages ttir,foo", "foo"),
        ("--bogus", "unrecognized"),
        ('--grid "(1,)"', "--args"),
        ('--check "out=x"', "--grid"),
        ('-s "*fp32,*fp32" -c BLOCK=64', "signature"),
        ('-s "*fp32,*fp32,*fp32,i32"', "--constexprs BLOCK="),
        ('-s "*fp32,*fp32,*fp32,i32" -c NOPE=3', "NOPE"),
        ('-s "*fp32,*fp32,*fp32,i32" -c "BLOCK=undefined_name"', "undefined_name"),
        ('-s "*fp32,*fp32,*fp32,i32" -c BLOCK=64 --args x,y --grid "(1,)"', "--args"),
        ('--signature "*fp32', "closing quotation"),
    ],
)
def test_bad_flags_are_usage_errors(ip, flags, fragment):
    _inputs(ip, 64)
    result, captured = run(ip, ADD.format(flags=flags, name="add_flags", op="+"))
    assert isinstance(result.error_in_exec, UsageError), result.error_in_exec
    assert fragment in str(result.error_in_exec)
    assert "Traceback" not in captured.stdout
    assert not bundles(captured)


def test_compilation_error_renders_caret_in_the_cell(ip):
    cell = (
        '%%kernel -s "*fp32,i32" -c BLOCK=1024\n'
        "def bad_k(x_ptr, n, BLOCK: tl.constexpr):\n"
        "    pid = tl.program_id(0)\n"
        "    offs = tl.arange(0, 1000)\n"
        "    tl.store(x_ptr + offs, offs)\n"
    )
    result, captured = run(ip, cell)
    import kernellab as kl

    error = result.error_in_exec
    assert isinstance(error, kl.CompilationError)
    assert error.line == 4 and error.filename.startswith("<kernel-cell-")
    out = captured.stdout
    assert "Traceback" not in out and "File " not in out
    lines = out.splitlines()
    src = next(i for i, line in enumerate(lines) if "offs = tl.arange(0, 1000)" in line)
    caret = lines[src + 1]
    assert caret.strip().startswith("^")
    assert caret.index("^") == lines[src].index("tl.arange")
    assert ":4:" in out and "power of 2" in out
    assert not bundles(captured)


def test_python_errors_in_the_cell_body_point_at_the_cell(ip):
    result, captured = run(ip, '%%kernel -s "i32"\ndef k(n):\n    pass\nraise ValueError("boom")\n')
    assert isinstance(result.error_in_exec, ValueError)
    assert "kernel-cell-" in captured.stdout


def test_help_lists_the_options(ip):
    doc = ip.find_cell_magic("kernel").__doc__
    for option in ("--signature", "--constexprs", "--args", "--name", "--target", "--num-warps",
                   "--num-stages", "--stages", "--grid", "--check", "--bench", "--force"):  # fmt: skip
        assert option in doc, option
    assert "%%kernel" in doc


def test_second_run_hits_the_cache_and_force_recompiles(ip, monkeypatch, tmp_path):
    monkeypatch.setenv("KERNELLAB_CACHE_DIR", str(tmp_path))  # empty: the first run must miss
    cell = ADD.format(flags='-s "*fp32,*fp32,*fp32,i32" -c BLOCK=32', name="add_cache", op="+")
    first = bundles(run(ip, cell)[1])[0][MIME]
    second = bundles(run(ip, cell)[1])[0][MIME]
    forced = bundles(run(ip, cell.replace("BLOCK=32", "BLOCK=32 -f", 1))[1])[0][MIME]
    assert first["timings"]["cache_hit"] is False
    assert second["timings"]["cache_hit"] is True
    assert forced["timings"]["cache_hit"] is False
    assert second["stages"][1]["text"] == first["stages"][1]["text"]


def test_stages_flag_chooses_tabs_and_explains_missing_ones(ip):
    cell = ADD.format(
        flags='-s "*fp32,*fp32,*fp32,i32" -c BLOCK=32 --target interpreter --stages ttir,ptx',
        name="add_tabs",
        op="+",
    )
    result, captured = run(ip, cell)
    assert result.error_in_exec is None
    data = bundles(captured)[0][MIME]
    assert [s["name"] for s in data["stages"]] == ["source", "ttir"]
    assert any("PTX" in note for note in data["notes"])
    assert data["target"] == "interpreter"


def test_a_failing_later_stage_shows_the_stages_that_compiled(ip, monkeypatch):
    """A GPU compile whose PTX stage fails (a stand-in backend, so no NVIDIA toolchain is needed):
    the viewer shows TTIR and LLIR with a note naming the failed stage and its error, the cell
    still succeeds, and the next run compiles again rather than replaying the failure."""
    import dataclasses

    from kernellab import compiler
    from kernellab.backends import INTERPRETER, StageOutput, _ttir_stage
    from kernellab.lab import compiling
    from kernellab.passes.manager import PassRecord

    llir_text = "; ModuleID = 'fake'\ndefine void @add_partial() {\n  ret void\n}\n"

    def llir(module, options):
        return StageOutput(object(), llir_text, [PassRecord("lower", llir_text, 0.001, True)])

    def ptx(artifact, options):
        raise RuntimeError("ptxas fatal: Unresolved extern function 'frobnicate'")

    fake = dataclasses.replace(
        INTERPRETER, name="fake", stages=lambda: {"ttir": _ttir_stage, "llir": llir, "ptx": ptx}
    )
    monkeypatch.setattr(compiler, "get_backend", lambda target: fake)
    monkeypatch.setattr(compiling, "nvidia_available", lambda: True)
    cell = ADD.format(
        flags='-s "*fp32,*fp32,*fp32,i32" -c BLOCK=64 --target sm_90', name="add_partial", op="+"
    )
    for _ in range(2):
        result, captured = run(ip, cell)
        assert result.error_in_exec is None
        (data,) = [b[MIME] for b in bundles(captured)]
        assert [s["name"] for s in data["stages"]] == ["source", "ttir", "llir"]
        assert data["stages"][2]["text"] == llir_text
        (note,) = data["notes"]
        assert "failed in the PTX stage" in note and "frobnicate" in note
        assert "frobnicate" in texts(captured)  # the text/plain rendering carries the note
        assert data["passes"][-1]["name"] == "lower" and data["passes"][-1]["stage"] == "llir"
        assert data["timings"]["cache_hit"] is False


@pytest.mark.parametrize("with_nvdisasm", [True, False], ids=["nvdisasm", "no-nvdisasm"])
def test_sass_tab_when_nvdisasm_exists_else_a_note(ip, monkeypatch, with_nvdisasm):
    from kernellab.backends.nvidia import sass
    from kernellab.lab.compiling import nvidia_available

    if not nvidia_available():
        pytest.skip("the NVIDIA backend is not in this build")
    if with_nvdisasm and sass.find_nvdisasm() is None:
        pytest.skip("nvdisasm is not installed (pip install nvidia-cuda-nvdisasm)")
    if not with_nvdisasm:
        monkeypatch.setattr(sass, "find_nvdisasm", lambda: None)
    name = f"add_sass_{with_nvdisasm}"
    cell = ADD.format(
        flags='-s "*fp32,*fp32,*fp32,i32" -c BLOCK=256 --target sm_90 --force', name=name, op="+"
    )
    result, captured = run(ip, cell)
    assert result.error_in_exec is None
    data = bundles(captured)[0][MIME]
    names = [s["name"] for s in data["stages"]]
    if with_nvdisasm:
        assert names[-1] == "sass"
        sass_stage = data["stages"][-1]
        assert "LDG" in sass_stage["text"] and "STG" in sass_stage["text"]
        text = sass_stage["text"].splitlines()
        stores = [sass_stage["lines"][i] for i, line in enumerate(text) if "STG" in line]
        assert set(stores) == {cell_line(cell, "tl.store")}
    else:
        assert "sass" not in names
        assert any("SASS" in n and "nvdisasm" in n for n in data["notes"]), data["notes"]


LAUNCHES = """@kl.jit
def add_unmasked(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, x)


@kl.jit
def assert_small(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.device_assert(x < 0.5, "x must be small")
"""


@pytest.mark.parametrize("launch, words", [
    ("add_unmasked[(kl.cdiv(n, 256),)](xs, np.empty_like(xs), n, BLOCK=256)",
     ["OutOfBoundsError while launching a kernel", "x = tl.load(x_ptr + offs)", "element index 1000",
      "kl.lab.access_view(add_unmasked, (kl.cdiv(n, 256),), xs, np.empty_like(xs), n, BLOCK=256)"]),
    ("assert_small[(1,)](xs + 1, n, BLOCK=16)",
     ["DeviceAssertionError while launching a kernel", 'tl.device_assert(x < 0.5, "x must be small")',
      "x must be small", "kl.lab.access_view(assert_small, (1,), xs + 1, n, BLOCK=16)"]),
    ("add_unmasked[(4,)](xs, np.empty_like(xs), BLOCK=256)",
     ["TypeError while launching a kernel", "is missing 'n'"]),
], ids=["out-of-bounds", "device-assert", "bad-arguments"])  # fmt: skip
def test_launch_errors_render_like_compile_errors(ip, launch, words):
    """The cell line with a caret, the kernel line, the message; no internal frames; the access
    view one call away; %xmode Verbose brings the frames back."""
    run(ip, "import numpy as np\nimport kernellab as kl\nimport kernellab.language as tl")
    run(ip, LAUNCHES)
    run(ip, "n = 1000\nxs = np.random.default_rng().random(n, dtype=np.float32)")
    cell = f"first = 1\n{launch}\n"
    result, captured = run(ip, cell)
    assert result.error_in_exec is not None
    text = captured.stdout + captured.stderr
    lines = text.splitlines()
    head = next(i for i, line in enumerate(lines) if "while launching a kernel" in line)
    assert "line 2)" in lines[head]  # the launch is line 2 of the cell
    assert lines[head + 1].strip() == launch and set(lines[head + 2].strip()) == {"^"}
    for word in words:
        assert word in text, (word, text)
    assert "kernellab/runtime" not in text and "Traceback" not in text and "/tmp/" not in text
    run(ip, "%xmode Verbose")
    try:
        _, verbose = run(ip, cell)
    finally:
        run(ip, "%xmode Context")
    assert "Traceback" in verbose.stdout + verbose.stderr
    assert "runtime" in verbose.stdout + verbose.stderr


GPU_FAULTS = {
    "illegal-address": ("CudaError('cuStreamSynchronize', 700, 'CUDA_ERROR_ILLEGAL_ADDRESS', "
                        "'an illegal memory access was encountered')",
                        ["CudaError while launching a kernel", "CUDA_ERROR_ILLEGAL_ADDRESS (700)",
                         "the launch: add_unmasked[grid](x_ptr=",
                         "drawn by the interpreter: kl.lab.access_view(add_unmasked, (4,), xs, ys, n, BLOCK=256)"]),
    "device-assert": ("CudaError('cuStreamSynchronize', 710, 'CUDA_ERROR_ASSERT', 'device-side assert triggered')",
                      ["CudaError while launching a kernel", "CUDA_ERROR_ASSERT (710)", "kl.lab.access_view("]),
    "out-of-resources": ("OutOfResources('add_unmasked', 'shared memory', 300000, 232448, 'use smaller blocks')",
                         ["OutOfResources while launching a kernel", "shared memory: needs 300000"]),
}  # fmt: skip


@pytest.mark.parametrize("fault", list(GPU_FAULTS))
def test_gpu_faults_render_like_compile_errors(ip, monkeypatch, fault):
    """A GPU fault raised by the driver under a launch shows as the interpreter's errors do. The
    fake launch raises it from a frame that reads as kernellab's (the driver's, on a GPU)."""
    import os

    import kernellab
    from kernellab.compiler.kernel import CompiledKernel

    raised, words = GPU_FAULTS[fault]
    code = ("from kernellab.backends.nvidia.driver import CudaError\n"
            "from kernellab.backends.nvidia.launcher import OutOfResources\n"
            f"def launch(self, args, grid, trace=None, where=None):\n    raise {raised}\n")  # fmt: skip
    namespace = {}
    exec(compile(code, os.path.join(os.path.dirname(kernellab.__file__), "backends", "nvidia", "fake_launch.py"), "exec"),
         namespace)  # fmt: skip
    monkeypatch.setattr(CompiledKernel, "launch", namespace["launch"])
    run(ip, "import numpy as np\nimport kernellab as kl\nimport kernellab.language as tl")
    run(ip, LAUNCHES)
    run(ip, "n = 1000\nxs = np.zeros(n, np.float32)\nys = np.zeros(n, np.float32)")
    launch = "add_unmasked[(4,)](xs, ys, n, BLOCK=256)"
    result, captured = run(ip, f"first = 1\n{launch}\n")
    assert result.error_in_exec is not None
    text = captured.stdout + captured.stderr
    lines = text.splitlines()
    head = next(i for i, line in enumerate(lines) if "while launching a kernel" in line)
    assert "line 2)" in lines[head]
    assert lines[head + 1].strip() == launch and set(lines[head + 2].strip()) == {"^"}
    for word in words:
        assert word in text, (word, text)
    assert "Traceback" not in text and "fake_launch" not in text and "kernellab/runtime" not in text
    run(ip, "%xmode Verbose")
    try:
        _, verbose = run(ip, f"first = 1\n{launch}\n")
    finally:
        run(ip, "%xmode Context")
    assert "Traceback" in verbose.stdout + verbose.stderr and "runtime" in verbose.stdout + verbose.stderr


def test_errors_in_the_users_own_code_keep_their_traceback(ip):
    result, captured = run(ip, "def f():\n    raise ValueError('mine')\nf()")
    assert isinstance(result.error_in_exec, ValueError)
    text = captured.stdout + captured.stderr
    assert "while launching a kernel" not in text and "mine" in text and "Traceback" in text
