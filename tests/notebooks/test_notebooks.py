"""The tutorial notebooks run top to bottom on a machine without a GPU (kernels on the interpreter).

Each notebook in notebooks/ is executed with nbclient in a fresh `python3` kernel: this test's own
interpreter, through a kernelspec written for the session, so the kernel sees the same packages.
A cell that raises fails the test, except cells tagged `raises-exception` (06 shows errors on
purpose), which must raise. A few outputs each notebook exists to show are checked too.

These tests take about a minute in all; deselect them with `-m "not notebooks"`.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")
pytest.importorskip("ipywidgets")
pytest.importorskip("matplotlib")

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK_DIR = ROOT / "notebooks"
EXPECTED = [
    "01-vector-add",
    "02-fused-softmax",
    "03-matmul-and-grouped-ordering",
    "04-layouts-and-swizzling",
    "05-inside-the-compiler",
    "06-debugging",
    "07-bring-your-triton-kernel",
    "08-autotuning",
    "09-jit-cache",
    "10-one-kernel-three-targets",
    "11-profiling",
    "exercises/puzzles",
]
MIME = "application/vnd.kernellab.compile+json"
CELL_TIMEOUT = 180  # seconds; every cell takes a few at most on two cores


def nvidia_available() -> bool:
    from kernellab.lab.compiling import nvidia_available as available

    return available()


# -- the committed files ---------------------------------------------------------------------


def test_the_notebooks_are_there():
    found = sorted(str(p.relative_to(NOTEBOOK_DIR).with_suffix("")) for p in NOTEBOOK_DIR.rglob("*.ipynb")
                   if ".ipynb_checkpoints" not in p.parts)  # fmt: skip
    assert found == sorted(EXPECTED)


@pytest.mark.parametrize("name", EXPECTED)
def test_committed_without_outputs(name):
    nb = nbformat.read(NOTEBOOK_DIR / f"{name}.ipynb", as_version=4)
    nbformat.validate(nb)
    assert nb.metadata["kernelspec"]["name"] == "python3"
    assert "widgets" not in nb.metadata, "saved widget state: clear it before committing"
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, (
                f"{name}: a cell was committed with its outputs:\n{cell.source[:200]}"
            )
    first = next(c for c in nb.cells if c.cell_type == "code")
    assert "%load_ext kernellab" in first.source


# -- executing them --------------------------------------------------------------------------


@pytest.fixture(scope="session")
def kernel_env(tmp_path_factory):
    """JUPYTER_PATH with a `python3` kernelspec running this interpreter, and the kernel's env."""
    share = tmp_path_factory.mktemp("jupyter")
    spec = share / "kernels" / "python3"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python 3 (kernellab tests)",
        "language": "python",
        "metadata": {"debugger": False},
    }))  # fmt: skip
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env["KERNELLAB_CACHE_DIR"] = str(tmp_path_factory.mktemp("kernellab-cache"))
    env["PYDEVD_DISABLE_FILE_VALIDATION"] = "1"
    return str(share), env


def execute(name: str, kernel_env, monkeypatch):
    from nbclient import NotebookClient

    share, env = kernel_env
    monkeypatch.setenv("JUPYTER_PATH", share)  # read when the kernel manager looks up "python3"
    nb = nbformat.read(NOTEBOOK_DIR / f"{name}.ipynb", as_version=4)
    client = NotebookClient(
        nb,
        timeout=CELL_TIMEOUT,
        kernel_name="python3",
        allow_errors=False,  # cells tagged raises-exception may (and here must) raise
        resources={"metadata": {"path": str((NOTEBOOK_DIR / name).parent)}},
    )
    client.execute(env=env)
    return nb


def text_of(nb) -> str:
    """Everything the notebook printed or displayed as text, errors included."""
    parts = []
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            if out.output_type == "stream":
                parts.append(out.text)
            elif out.output_type == "error":
                parts.append(f"{out.ename}: {out.evalue}")
            else:
                parts.append(out.get("data", {}).get("text/plain", ""))
    return "\n".join(parts)


def mimetypes_of(nb) -> set[str]:
    return {m for c in nb.cells for o in c.get("outputs", []) for m in o.get("data", {})}


def errors_of(nb) -> list[tuple[list[str], object]]:
    return [
        (cell.metadata.get("tags", []), out)
        for cell in nb.cells
        for out in cell.get("outputs", [])
        if out.output_type == "error"
    ]


NO_GPU = "kernels run on the interpreter (no GPU found)"  # what notebooks 01-03 print without one


def check_common(name: str, nb) -> None:
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        tagged = "raises-exception" in cell.metadata.get("tags", [])
        raised = any(o.output_type == "error" for o in cell.outputs)
        assert raised == tagged, (
            f"{name}: {'a cell meant to fail ran without error' if tagged else 'a cell failed'}:\n"
            f"{cell.source[:300]}"
        )
        for out in cell.outputs:
            if out.output_type == "stream" and out.name == "stderr":
                assert "Traceback" not in out.text, f"{name}: a traceback on stderr:\n{out.text[-2000:]}"
    # every picture a widget shows also comes as a static snapshot a saved notebook keeps
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            if "application/vnd.jupyter.widget-view+json" in data:
                assert "text/html" in data, f"{name}: a widget without its HTML snapshot"


@pytest.mark.notebooks
@pytest.mark.parametrize("name", EXPECTED)
def test_notebook_runs(name, kernel_env, monkeypatch):
    nb = execute(name, kernel_env, monkeypatch)
    check_common(name, nb)
    text = text_of(nb)
    CHECKS[name](nb, text)


# -- what each notebook must show ------------------------------------------------------------


def check_01(nb, text):
    assert MIME in mimetypes_of(nb), "the %%kernel viewer bundle is missing"
    assert "5 programs wrote all 5000 of 5000 elements" in text
    assert re.search(r"ran add_kernel\[\(5,\)\] on the (kernellab CPU backend|GPU)", text)  # %%kernel --grid
    assert "bench on the" in text and "out_d == x + y" in text
    assert "24 masked" in text  # the access view of n=1000 in blocks of 256
    assert "4 sectors = 128 bytes: 100%" in text
    assert "image/png" in mimetypes_of(nb)  # the pictures and the perf_report plot
    if nvidia_available():
        assert "sizePerThread = [4]" in text and "ld.global.v4.b32" in text
        # the first compiler view is the one a launch with real arrays compiles: vectorized
        first = next(o.data[MIME] for c in nb.cells for o in c.get("outputs", []) if MIME in o.get("data", {}))
        ttgir = next(st["text"] for st in first["stages"] if st["name"] == "ttgir")
        assert "sizePerThread = [4]" in ttgir
        # then the version without the facts, and the viewer says why coalesce changed nothing
        views = [o.data[MIME] for c in nb.cells for o in c.get("outputs", []) if MIME in o.get("data", {})]
        assert any(p["name"] == "coalesce" and p["why"] and "4-byte aligned" in p["why"]
                   for v in views for p in v["passes"])
    # without a GPU the CPU backend is timed next to numpy (the interpreter never is), and the
    # H100's numbers are a model
    assert "bench on the interpreter" not in text
    assert "bench on the GPU" in text or "the model's prediction for an H100" in text
    if NO_GPU in text:
        assert "bench on the kernellab CPU backend: add_kernel" in text and "add_kernel runs at" in text
        assert "vector-add on this CPU" in text and "kernellab CPU backend" in text


def check_02(nb, text):
    assert MIME in mimetypes_of(nb)
    assert re.search(r"300 programs, each one row of 781 in a block of 1024: max error \d", text)
    assert "OTHER = -inf" in text and "(right)" in text
    assert "reads 5MN + 2M, writes 3MN + 2M" in text and "4.0x faster" in text
    assert "interpreter timing" not in text
    if NO_GPU in text:
        assert "softmax on this CPU (1024 rows)" in text and "kernellab CPU backend" in text
    if nvidia_available():
        assert re.search(r"^\s+4\s+32\s+\d+\s+\d+\s+16$", text, re.MULTILINE), "4 warps: 16 bytes shared"
        assert "each of the 128 threads holds 8 elements of the row" in text  # the row picture
        assert "arith.maxnumf: a thread combines its 8 registers" in text


def check_03(nb, text):
    assert MIME in mimetypes_of(nb)
    assert "first 9 programs: row-major loads 90 blocks, grouped loads 54 blocks" in text
    assert "row-major loads 90 distinct blocks" in text  # the explorer's caption
    assert "programs computed a 200x168 result" in text
    assert "[ 0  3  6  9 12 15 18 21 24]" in text  # the kernel's own grouped order
    hit = re.findall(r"(row-major|grouped): L2 hit rate ([\d.]+)%", text)
    rates = dict(hit)
    assert float(rates["grouped"]) > float(rates["row-major"])
    html = "".join(o.get("data", {}).get("text/html", "") for c in nb.cells for o in c.get("outputs", []))
    assert "L2 holds everything" in html  # the 9 x 9 example's explorer says why its orders tie
    assert "row-major order moves" in html  # the default explorer: A and B exceed L2
    assert "bench on the GPU" in text or "the models' prediction for an H100" in text
    assert "step 3 of 16: loads A[0:128, 128:192] (16 KiB)" in html  # the tile walking along K
    if NO_GPU in text:
        assert re.search(r"^\s+512\s+\d+\.\d\s+\d+\.\d$", text, re.MULTILINE), "the CPU backend's GFLOP/s"
        assert "kernellab CPU backend" in text and "numpy (float32, BLAS)" in text
    if nvidia_available():
        assert "#mma = #ttg.nvidia_mma<{versionMajor = 2" in text and "mma.sync instructions in the PTX: 0" not in text
        assert re.search(r"shared buffer %\w+: 128x64", text)
        assert "async copies" in text  # pipelined or not, the cell says which from the TTGIR


def check_04(nb, text):
    assert "unswizzled 8-way conflict (256 wavefronts), swizzled 1-way (32 wavefronts)" in text
    assert "register 3 of lane 5 in warp 2 holds element (17, 11)" in text
    assert "same layout      -> noop" in text and "-> shuffle" in text
    assert re.search(r"row\s+access: 1-way", text) and re.search(r"column access: 1-way", text)
    if nvidia_available():
        assert "ttg.convert_layout" in text and "row_sum          -> shared" in text
        # the compiled matmul's buffers: the ldmatrix read conflicts less with the chosen swizzle
        reads = re.findall(r"read: ldmatrix into .*: (\d+) wavefronts unswizzled, (\d+) with #shared", text)
        assert len(reads) == 2 and all(int(after) < int(before) for before, after in reads)


def check_05(nb, text):
    for name in ("inline", "canonicalize", "cse", "licm", "dce"):
        assert re.search(rf"^{name}\s+(True|False)", text, re.MULTILINE), f"pass {name} not listed"
    assert "--- before licm" in text  # the diff of one pass
    assert "image/svg+xml" in mimetypes_of(nb)  # drawn by dot or, without it, by kernellab
    if nvidia_available():
        assert "target sm_90" in text
        for stage in ("ttgir", "llir", "ptx", "cubin"):
            assert re.search(rf"^  {stage}\s+\d+ (lines|bytes)", text, re.MULTILINE), stage
        assert "contiguity  1024, divisibility  16 bytes" in text and "ld.global.v4.b32" in text
        m = re.search(r"sum of the buffers: (\d+) bytes; the kernel needs (\d+)", text)
        assert m and int(m.group(2)) < int(m.group(1)), "liveness should let buffers share bytes"
        assert "warps per SM" in text
        # attention's two orders: nothing between a dot's issue and its wait, or the softmax
        assert "tutorial order    issue Q·Kᵀ → wait → 34 exp2 → issue P·V" in text
        assert "overlapped order  issue Q·Kᵀ → wait → issue P·V → 34 exp2 → wait" in text
        # the rings' mbarriers replace the loop's bar.sync, a slot more a ring
        assert "ring_mbarriers=False  2 slots a ring; the loop: 1 bar.sync, 1 cp.async.wait_group" in text
        assert ("ring_mbarriers=True   3 slots a ring; the loop: 2 wait, 1 arrive (done reading), "
                "1 arrive (copies landed)") in text
    else:
        assert "sm_90 is not available in this build" in text
        assert "sm_90a code is not available in this build" in text


def check_06(nb, text):
    errors = {out.ename: out.evalue for _, out in errors_of(nb)}
    assert set(errors) == {"OutOfBoundsError", "DeviceAssertionError", "CompilationError"}
    oob = errors["OutOfBoundsError"]
    assert "out-of-bounds load from argument 'x_ptr' in program (3, 0, 0)" in oob
    assert re.search(r":4: out-of-bounds", oob), "the error names the line of the load"
    assert "the input must be sorted" in errors["DeviceAssertionError"]
    assert "program (2, 0, 0)" in errors["DeviceAssertionError"]
    assert "cannot be broadcast" in errors["CompilationError"]
    (oob_cell,) = [out for _, out in errors_of(nb) if out.ename == "OutOfBoundsError"]
    shown = "\n".join(oob_cell.traceback)
    assert "while launching a kernel (Cell In[" in shown and "x = tl.load(x_ptr + offs)" in shown
    assert "kl.lab.access_view(add_no_mask, (kl.cdiv(n, 256),)" in shown
    assert "kernellab/runtime" not in shown and "/tmp/" not in shown
    assert "pid (1, 0, 0) idx (1) x: 5.0" in text  # device_print
    assert "448 of 1024 output elements were never written" in text
    assert "row sums right? False" in text


def check_07(nb, text):
    assert MIME in mimetypes_of(nb), "the viewer of the Triton kernel is missing"
    assert "kernellab kernellab.language | the target: GPUTarget(" in text  # `import triton` under as_triton
    assert re.search(r"max \|error\|: \d", text)
    assert "with residual  loads: 3  stores: 2" in text and "without        loads: 2  stores: 1" in text
    if "torch is not installed" not in text:
        assert "graphs: 1  graph breaks: 0" in text and "compiled and eager agree" in text


def check_exercises(nb, text):
    # every starter kernel is empty: each of the eight checks fails, showing its diff and hint;
    # so does the wrong attempt at the end, and no solution is imported into the learner's path
    assert text.count("FAIL: ") == 9 and text.count("hint: ") == 9 and "PASS: " not in text
    assert "z_ptr: 0 of 1000 elements right, 0 wrong, 1000 never written" in text
    assert "z_ptr: 0 of 128 elements right, 64 wrong, 64 never written" in text  # the attempt
    assert not any("solutions" in c.source for c in nb.cells if c.cell_type == "code")
    pages = [o["data"]["text/html"] for c in nb.cells for o in c.get("outputs", []) if "text/html" in o.get("data", {})]
    assert sum("kernellab-check" in p and "data:image/png;base64," in p for p in pages) == 9


def check_08(nb, text):
    pages = "\n".join(o["data"]["text/html"] for c in nb.cells for o in c.get("outputs", [])
                      if "text/html" in o.get("data", {}))  # fmt: skip
    assert "kernellab-autotune" in pages and "best: BLOCK_M" in pages  # the live table, finished
    assert "#dafbe1" in pages  # the best row highlighted
    assert "timed by: ['host worker 0', 'host worker 1']" in text  # the DevicePool of two host workers
    assert re.search(r"128x128x128: max error \d\.\d+e-0[5-9] with BLOCK_M", text)
    assert "tuned keys: [(128, 128, 128, 'float16', 'float16', 'float32')]" in text
    assert "step 3 of 16: loads A[0:64, 64:96] (4 KiB)" in pages  # the tile walking along K
    assert " 64x64  tile:   8192 bytes per step,  32.0 flops per byte" in text
    assert "image/png" in mimetypes_of(nb)  # kernel.plot()
    if not nvidia_available():
        return
    assert "interpreter time" in pages and "sm_90 compile (made without a GPU)" in pages
    assert re.search(r"the fastest config: \d+ registers per thread, \d+ bytes spilled", text)


def check_09(nb, text):
    assert "x_ptr        *fp32      16-byte aligned" in text and "BLOCK        constexpr  = 1024" in text
    assert "same compiled kernel: True" in text and "cached now: True" in text and "right: True" in text
    assert "x_ptr: *fp32 16-byte aligned -> *fp32 not 16-byte aligned" in text
    assert "n: i32 divisible by 16 -> constant == 1" in text and "-> *fp16 16-byte aligned" in text
    assert "scale: 4 compiled specialization(s)" in text
    if not nvidia_available():
        assert "sm_90 code is not available in this build" in text
        return
    assert "+#blocked = #ttg.blocked<{sizePerThread = [1]" in text  # the diff of the two TTGIRs
    assert "aligned  PTX loads: ld.global.v4.b32" in text and "shifted  PTX loads: ld.global.b32" in text
    assert "arith.constant dense<1>" in text  # n == 1 compiled in
    # float16: 8 halves per thread, widened to float32 for the multiply and narrowed for the store
    assert "+#blocked = #ttg.blocked<{sizePerThread = [8]" in text and "arith.extf" in text
    assert "float16  PTX loads: ld.global.v4.b32 | conversions: cvt.f32.f16, cvt.rn.f16.f32" in text
    assert len(re.findall(r"… scale for sm_90: cubin.cubin", text)) == 4 and "cache hit: True" in text


def check_11(nb, text):
    clock = "GPU time" if "kernels run on the interpreter" not in text else "interpreter time"
    assert f"{clock} (ms)" in text
    assert "matmul_kernel [M=" in text and "tflop16/s" in text  # named by its launch_metadata
    assert "schema kernellab.profile/1" in text and "TFLOP/s" in text
    assert "rows sum to 1: True" in text
    assert re.search(r"^\s+softmax_kernel \[kernel\]\s+3 ", text, re.MULTILINE)  # under step/softmax
    assert "image/png" in mimetypes_of(nb) or "data:image/png" in str(nb)  # the flame charts


def check_10(nb, text):
    assert "ld.global.v4.b32" in text and "global_load_dwordx4" in text  # the comparison
    assert re.search(r"cpu\s+v?mov\w*ps|cpu\s+ldr|cpu\s+ld1", text), "no vector load in the CPU column"
    assert re.search(r"max \|cpu - interpreter\| = \d", text)
    assert "out-of-bounds load" in text


CHECKS = {
    "01-vector-add": check_01,
    "02-fused-softmax": check_02,
    "03-matmul-and-grouped-ordering": check_03,
    "04-layouts-and-swizzling": check_04,
    "05-inside-the-compiler": check_05,
    "06-debugging": check_06,
    "07-bring-your-triton-kernel": check_07,
    "08-autotuning": check_08,
    "09-jit-cache": check_09,
    "10-one-kernel-three-targets": check_10,
    "11-profiling": check_11,
    "exercises/puzzles": check_exercises,
}
