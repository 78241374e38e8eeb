"""The compile+json bundle: schema, line mapping per stage, resources, fallbacks, kl.lab.show."""

from __future__ import annotations

import inspect
import json
import re

import numpy as np
import pytest

import kernellab as kl
import kernellab.language as tl
from kernellab.lab import bundle as B
from kernellab.lab import compiling, kernel_view, line_maps
from kernellab.lab.kernel_resources import occupancy, resources

pytest.importorskip("pygments")


@kl.jit
def scale_kernel(x_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr):
    pid = tl.program_id(axis=0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    acc = x
    for _ in range(2):
        acc = acc * alpha
    tl.store(out_ptr + offs, acc, mask=mask)


SIG = "*fp32,*fp32,i32,fp32"


def source_line(fn, needle: str) -> int:
    lines, first = inspect.getsourcelines(fn.fn)
    return first + next(i for i, line in enumerate(lines) if needle in line)


@pytest.fixture(scope="module")
def ck():
    return kl.compile(scale_kernel, signature=SIG, constexprs={"BLOCK": 128}, target="interpreter")


def test_schema_keys_and_json(ck):
    data = B.compile_data(B.ViewInput(ck, fn=scale_kernel))
    json.loads(json.dumps(data))
    assert data["version"] == B.SCHEMA_VERSION == 1
    assert set(data) >= {
        "version",
        "name",
        "target",
        "source",
        "stages",
        "passes",
        "metadata",
        "timings",
        "notes",
    }
    assert data["name"] == "scale_kernel" and data["target"] == "interpreter"
    src = data["source"]
    assert (
        src["filename"] == __file__
        and src["first_line"] == inspect.getsourcelines(scale_kernel.fn)[1]
    )
    assert src["text"].splitlines()[1].startswith("def scale_kernel(")
    for stage in data["stages"]:
        assert set(stage) >= {"name", "language", "text", "lines"}
        assert len(stage["lines"]) == len(stage["text"].splitlines())
        assert stage["language"] == B.STAGE_LANGUAGES[stage["name"]]
    assert [s["name"] for s in data["stages"]] == ["source", "ttir"]
    for p in data["passes"]:
        assert set(p) >= {"name", "stage", "ir", "changed", "seconds", "summary"}
        assert p["stage"] == "ttir" and "tt.func" in p["ir"]
    assert [p["name"] for p in data["passes"]] == [r.name for r in ck.passes]
    md = data["metadata"]
    assert md["signature"] == SIG and md["constexprs"] == {"BLOCK": 128}
    assert md["threads_per_block"] == 128 and md["num_warps"] == 4
    assert md["registers"] is None and "occupancy" not in md  # the interpreter has no registers
    t = data["timings"]
    assert set(t["stages"]) >= {"frontend", "ttir"} and t["cache_hit"] is False
    assert t["total"] == pytest.approx(sum(t["stages"].values()))


def test_ttir_lines_map_to_source_lines(ck):
    data = B.compile_data(B.ViewInput(ck, fn=scale_kernel))
    ttir = next(s for s in data["stages"] if s["name"] == "ttir")
    text = ttir["text"].splitlines()
    load = next(i for i, line in enumerate(text) if "tt.load" in line)
    mul = next(i for i, line in enumerate(text) if "arith.mulf" in line)
    loop = next(i for i, line in enumerate(text) if "scf.for" in line)
    assert ttir["lines"][load] == source_line(scale_kernel, "x = tl.load")
    assert ttir["lines"][mul] == source_line(scale_kernel, "acc = acc * alpha")
    assert ttir["lines"][loop] == source_line(scale_kernel, "for _ in range(2)")
    source = data["stages"][0]
    assert source["lines"][0] == data["source"]["first_line"]


def test_mapping_ignores_other_files_and_strips_locations():
    located = (
        'builtin.module {\n'
        '  %0 = tt.get_program_id x : i32 loc("/k.py":7:3)\n'
        '  %1 = arith.addi %0, %0 : i32 loc("/other.py":2:1)\n'
        '  tt.return loc("/k.py":9:0)\n'
        '} loc(unknown)\n'
    )  # fmt: skip
    assert line_maps.mlir_lines(located, "/k.py") == [None, 7, None, 9, None]
    assert "loc(" not in line_maps.strip_locations(located)
    assert line_maps.strip_locations(located).splitlines()[1] == "  %0 = tt.get_program_id x : i32"


def test_llvm_lines_from_dbg_metadata():
    llir = "\n".join([
        "define void @k(ptr %p) !dbg !3 {",
        "  %a = load float, ptr %p, align 4, !dbg !8",
        "  %b = fadd float %a, %a, !dbg !9",
        "  store float %b, ptr %p, !dbg !10",
        "  ret void",
        "}",
        '!1 = !DIFile(filename: "k.py", directory: "/src")',
        '!2 = !DIFile(filename: "lib.py", directory: "/src")',
        '!3 = distinct !DISubprogram(name: "k", scope: !1, file: !1, line: 3)',
        '!4 = distinct !DISubprogram(name: "h", scope: !2, file: !2, line: 1)',
        "!8 = !DILocation(line: 5, column: 8, scope: !3)",
        "!9 = !DILocation(line: 6, column: 4, scope: !3)",
        "!10 = !DILocation(line: 2, column: 4, scope: !4)",
    ])  # fmt: skip
    lines = line_maps.llvm_lines(llir, "/src/k.py")
    assert lines[:6] == [None, 5, 6, None, None, None]
    assert all(v is None for v in lines[6:])


def test_ptx_lines_from_loc_directives():
    ptx = "\n".join([
        ".version 8.0",
        ".target sm_90",
        '.file 1 "/src/k.py"',
        '.file 2 "/src/lib.py"',
        ".visible .entry k(",
        "  .param .u64 k_param_0",
        ")",
        "{",
        "  .loc 1 5 8",
        "  ld.param.u64 %rd1, [k_param_0];",
        "  ld.global.f32 %f1, [%rd1];",
        "  .loc 2 9 1",
        "  add.f32 %f2, %f1, %f1;",
        "  .loc 1 7 4",
        "$L__BB0_1:",
        "  st.global.f32 [%rd1], %f2;",
        "  ret;",
        "}",
    ])  # fmt: skip
    lines = line_maps.ptx_lines(ptx, "/src/k.py")
    text = ptx.splitlines()
    assert lines[text.index("  ld.global.f32 %f1, [%rd1];")] == 5
    assert lines[text.index("  ld.param.u64 %rd1, [k_param_0];")] == 5
    assert lines[text.index("  add.f32 %f2, %f1, %f1;")] is None  # another file
    assert lines[text.index("  st.global.f32 [%rd1], %f2;")] == 7
    assert lines[text.index("$L__BB0_1:")] is None and lines[text.index(".target sm_90")] is None


def test_sass_lines_from_nvdisasm_line_info():
    sass = "\n".join([
        "\tFunction : k",
        '\t//## File "/src/k.py", line 5',
        "        /*0000*/                   MOV R1, c[0x0][0x28] ;",
        "        /*0010*/                   LDG.E R2, [R2.64] ;",
        '\t//## File "/src/lib.py", line 2',
        "        /*0020*/                   FADD R3, R2, R2 ;",
        '\t//## File "/src/k.py", line 7',
        "        /*0030*/                   STG.E [R4.64], R3 ;",
    ])  # fmt: skip
    assert line_maps.sass_lines(sass, "/src/k.py") == [None, None, 5, 5, None, None, None, 7]


def test_stages_without_location_info_map_to_none():
    assert line_maps.ptx_lines(".version 8.0\n{\n  ret;\n}", "/k.py") == [None, None, None, None]
    assert line_maps.llvm_lines("define void @k() {\n  ret void\n}", "/k.py") == [None, None, None]
    assert line_maps.sass_lines("        /*0000*/ EXIT ;", "/k.py") == [None]


def test_occupancy_estimates():
    full = occupancy("sm_90", num_warps=4, registers=32, shared=0)
    assert (
        full["occupancy"] == 1.0 and full["blocks_per_sm"] == 16 and full["limited_by"] == "warps"
    )
    regs = occupancy("sm_90", num_warps=4, registers=128)
    assert regs["warps_per_sm"] == 16 and regs["limited_by"] == "registers"
    assert regs["occupancy"] == pytest.approx(0.25)
    smem = occupancy("sm_90", num_warps=8, registers=32, shared=100 * 1024)
    assert smem["blocks_per_sm"] == 2 and smem["limited_by"] == "shared memory"
    # the A100 has less shared memory per SM than the H100
    a100 = occupancy("sm_80", num_warps=8, registers=32, shared=80 * 1024)
    h100 = occupancy("sm_90", num_warps=8, registers=32, shared=80 * 1024)
    assert a100["blocks_per_sm"] == 2 and h100["blocks_per_sm"] == 2
    assert occupancy("sm_80", num_warps=8, shared=60 * 1024)["blocks_per_sm"] == 2
    assert occupancy("sm_90", num_warps=8, shared=60 * 1024)["blocks_per_sm"] == 3
    assert occupancy("sm_90", num_warps=4, shared=300 * 1024)["blocks_per_sm"] == 0
    assert occupancy("interpreter", num_warps=4) is None
    assert occupancy("sm_90", num_warps=4)["registers_known"] is False


def test_resources_read_gpu_metadata(ck):
    from kernellab.backends.metadata import KernelMetadata
    from kernellab.backends.nvidia.backend import NvidiaOptions

    class Fake:
        name = "k"
        metadata = KernelMetadata(name="k", target="sm_80", options=NvidiaOptions(target="sm_80", num_warps=8),
                                  registers=64, spills=0, shared=4096)  # fmt: skip

    res = resources(Fake())
    assert res["registers"] == 64 and res["shared"] == 4096 and res["threads_per_block"] == 256
    assert res["occupancy"]["device"].startswith("A100")
    assert res["occupancy"]["warps_per_sm"] == 32 and res["occupancy"]["limited_by"] == "registers"


def test_compile_for_view_falls_back_to_ttir_with_a_note(monkeypatch):
    real = kl.compile

    def broken(fn, target=None, **kwargs):
        if target != "interpreter":
            raise RuntimeError("lowering is missing tt.frobnicate")
        return real(fn, target=target, **kwargs)

    monkeypatch.setattr(kl, "compile", broken)
    monkeypatch.setattr(compiling, "nvidia_available", lambda: True)
    ck, notes = compiling.compile_for_view(
        scale_kernel, signature=SIG, constexprs={"BLOCK": 64}, target="sm_90"
    )
    assert ck.metadata["target"] == "interpreter" and "ttir" in ck.asm
    assert len(notes) == 1 and "tt.frobnicate" in notes[0] and "sm_90" in notes[0]

    monkeypatch.setattr(compiling, "nvidia_available", lambda: False)
    ck, notes = compiling.compile_for_view(scale_kernel, signature=SIG, constexprs={"BLOCK": 64})
    assert ck.metadata["target"] == "interpreter" and "NVIDIA backend" in notes[0]


def test_compile_for_view_never_swallows_kernel_errors():
    @kl.jit
    def broken(x_ptr, BLOCK: tl.constexpr):
        tl.store(x_ptr + tl.arange(0, 3), 1.0)

    with pytest.raises(kl.CompilationError):
        compiling.compile_for_view(broken, signature="*fp32", constexprs={"BLOCK": 4})


def test_whatever_stages_exist_are_shown():
    """With the NVIDIA backend, every text stage appears (mapped where it can be); without it,
    TTIR alone, with a note that says why."""
    ck, notes = compiling.compile_for_view(scale_kernel, signature=SIG, constexprs={"BLOCK": 128})
    data = B.compile_data(B.ViewInput(ck, fn=scale_kernel, notes=notes))
    names = [s["name"] for s in data["stages"]]
    text_stages = [s for s in ck.asm if s in B.STAGE_LANGUAGES and isinstance(ck.asm[s], str)]
    assert names == ["source"] + [s for s in B.IR_STAGES if s in text_stages]
    if ck.metadata["target"] == "interpreter":
        assert names == ["source", "ttir"] and data["notes"]
    ttir = next(s for s in data["stages"] if s["name"] == "ttir")
    load = next(i for i, line in enumerate(ttir["text"].splitlines()) if "tt.load" in line)
    assert ttir["lines"][load] == source_line(scale_kernel, "x = tl.load")


def test_view_and_show_for_jit_kernels(capsys):
    @kl.jit
    def fresh_kernel(x_ptr, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(x_ptr + offs, offs.to(tl.float32) + 1.0, mask=offs < n)

    with pytest.raises(TypeError, match="not been compiled"):
        kernel_view.view(fresh_kernel)
    out = np.full(50, np.nan, dtype=np.float32)
    fresh_kernel[(1,)](out, 50, BLOCK=64)
    np.testing.assert_array_equal(out, np.arange(50) + 1.0)
    v = kernel_view.view(fresh_kernel)
    assert v.data["name"] == "fresh_kernel" and v.data["timings"]["cache_hit"] is True
    compiled = kernel_view.view(
        fresh_kernel, signature="*fp16,i32", constexprs={"BLOCK": 32}, target="interpreter"
    )
    assert compiled.data["metadata"]["signature"] == "*fp16,i32"
    only_ttir = kernel_view.view(compiled.input.ck, stages="ttir").data["stages"]
    assert [s["name"] for s in only_ttir] == ["source", "ttir"]
    kl.lab.show(fresh_kernel)  # no IPython running: prints the text summary
    assert "fresh_kernel" in capsys.readouterr().out
    with pytest.raises(TypeError):
        kernel_view.view(42)


def test_bundle_has_three_mime_types(ck):
    bundle = kernel_view.KernelView(ck, fn=scale_kernel)._repr_mimebundle_()
    assert set(bundle) == {B.MIME, "text/html", "text/plain"}
    assert bundle[B.MIME]["name"] == "scale_kernel"
    assert "tt.load" in bundle["text/plain"] and "scale_kernel" in bundle["text/plain"]
    # the text/html shows the panels of this very payload: one section per stage, then the rest
    html = bundle["text/html"]
    panels = re.findall(r'data-kl-panel="([a-z]+)"', html)
    stages = [s["name"] for s in bundle[B.MIME]["stages"]]
    assert panels == stages + ["passes", "resources", "timings"]
    assert 'data-kl-viewer="1"' in html


@pytest.mark.parametrize("cached", [False, True], ids=["fresh", "cache-hit"])
def test_show_of_a_compiled_kernel_links_every_stage_to_its_source(cached, monkeypatch, tmp_path):
    """kl.lab.show(ck) on a GPU compile (no KernelFunction passed): the source and every stage's
    line links come from the CompiledKernel itself, fresh or from the disk cache, and the viewer
    compiles nothing again."""
    if not compiling.nvidia_available():
        pytest.skip("the NVIDIA backend is not in this build")
    monkeypatch.setenv("KERNELLAB_CACHE_DIR", str(tmp_path))
    kwargs = dict(signature=SIG, constexprs={"BLOCK": 128}, target="sm_90")
    ck = kl.compile(scale_kernel, force=True, **kwargs)
    if cached:
        ck = kl.compile(scale_kernel, **kwargs)
        assert ck.metadata.cache_hit
    monkeypatch.setattr(kl, "compile", lambda *a, **k: pytest.fail("the viewer compiled again"))
    data = kernel_view.view(ck).data
    assert "x = tl.load(x_ptr + offs, mask=mask)" in data["source"]["text"]
    load_line = source_line(scale_kernel, "x = tl.load")
    by_stage = {s["name"]: s for s in data["stages"]}
    for stage, needle in (("ttir", "tt.load"), ("ttgir", "tt.load"), ("ptx", "ld.global")):
        text, lines = by_stage[stage]["text"].splitlines(), by_stage[stage]["lines"]
        hits = [lines[i] for i, line in enumerate(text) if needle in line]
        assert hits and set(hits) == {load_line}, (stage, hits)
    source = by_stage["source"]
    assert source["lines"][0] == inspect.getsourcelines(scale_kernel.fn)[1]


def test_stages_without_a_function_or_locations_map_to_none(ck):
    """IR text compiled on its own has no source: the lines are None, nothing fails."""

    class LaterStage:
        name = ck.name
        asm = {"ttir": ck.asm["ttir"], "ttgir": "builtin.module {\n}\n"}
        metadata = ck.metadata
        passes = []
        module = None
        located_asm: dict = {}
        source_maps: dict = {}

    data = B.compile_data(B.ViewInput(LaterStage()))
    assert [s["name"] for s in data["stages"]] == ["source", "ttir", "ttgir"]
    assert all(v is None for s in data["stages"] for v in s["lines"])


FAKE_LLIR = "; ModuleID = 'fake'\ndefine void @scale_kernel() {\n  ret void\n}\n"


def _backend_failing_at_ptx(message: str):
    """The interpreter's TTIR stage, a stand-in LLIR stage, then a PTX stage that fails."""
    import dataclasses

    from kernellab.backends import INTERPRETER, StageOutput, _ttir_stage
    from kernellab.passes.manager import PassRecord

    def llir(module, options):
        return StageOutput(object(), FAKE_LLIR, [PassRecord("lower", FAKE_LLIR, 0.001, True)])

    def ptx(artifact, options):
        raise RuntimeError(message)

    return dataclasses.replace(
        INTERPRETER, name="fake", stages=lambda: {"ttir": _ttir_stage, "llir": llir, "ptx": ptx}
    )


def test_compile_for_view_keeps_the_stages_that_compiled(monkeypatch):
    from kernellab import compiler

    backend = _backend_failing_at_ptx("ptxas fatal: unresolved extern function 'frobnicate'")
    monkeypatch.setattr(compiler, "get_backend", lambda target: backend)
    monkeypatch.setattr(compiling, "nvidia_available", lambda: True)
    ck, notes = compiling.compile_for_view(
        scale_kernel, signature=SIG, constexprs={"BLOCK": 64}, target="sm_90"
    )
    assert list(ck.asm) == ["ttir", "llir"] and ck.metadata["failed_stage"] == "ptx"
    (note,) = notes
    assert "failed in the PTX stage" in note and "frobnicate" in note and "(TTIR, LLIR)" in note
    data = B.compile_data(B.ViewInput(ck, fn=scale_kernel, notes=notes))
    assert [s["name"] for s in data["stages"]] == ["source", "ttir", "llir"]
    assert data["notes"] == notes
    ttir = data["stages"][1]
    load = next(i for i, line in enumerate(ttir["text"].splitlines()) if "tt.load" in line)
    assert ttir["lines"][load] == source_line(scale_kernel, "x = tl.load")
    assert [p["stage"] for p in data["passes"]][-2:] == ["ttir", "llir"]
    asked = B.compile_data(
        B.ViewInput(ck, fn=scale_kernel, notes=notes, stages=["source", "ttir", "ptx"])
    )
    assert "PTX: not compiled: the ptx stage failed." in asked["notes"]


def test_pass_stage_uses_the_record_and_else_reads_the_ir():
    from types import SimpleNamespace

    def rec(ir, stage=""):
        return SimpleNamespace(ir_after=ir, stage=stage)

    ptx = "//\n.version 8.0\n.target sm_90\n.visible .entry k()\n"
    assert B._pass_stage(rec(ptx, stage="ptx"), "ttgir") == "ptx"
    assert (
        B._pass_stage(rec("tt.func @k", stage="llir"), "ttir") == "llir"
    )  # recorded beats guessed
    # records without a stage (an older disk-cache entry): read off the IR, never going back
    assert B._pass_stage(rec(ptx), "ttgir") == "ptx"
    assert B._pass_stage(rec("ptxas info    : Used 12 registers"), "ptx") == "cubin"
    assert B._pass_stage(rec("#blocked = #ttg.blocked<{}>\ntt.func"), "ttir") == "ttgir"
    assert B._pass_stage(rec("tt.func @k"), "ttgir") == "ttgir"
    assert B._pass_stage(rec(""), "llir") == "llir"


def test_gpu_compile_labels_llvm_and_ptxas_passes(monkeypatch, tmp_path):
    if not compiling.nvidia_available():
        pytest.skip("the NVIDIA backend is not in this build")
    monkeypatch.setenv("KERNELLAB_CACHE_DIR", str(tmp_path))
    ck = kl.compile(
        scale_kernel, signature=SIG, constexprs={"BLOCK": 128}, target="sm_90", force=True
    )
    data = B.compile_data(B.ViewInput(ck, fn=scale_kernel))
    stages = {p["name"]: p["stage"] for p in data["passes"]}
    assert (
        stages["llvm-O3"] == "llir"
        and stages["nvptx-codegen"] == "ptx"
        and stages["ptxas"] == "cubin"
        and stages["inline"] == "ttir"
    )
    assert "ttgir" in stages.values()
    html = kernel_view.view(ck).bundle["text/html"]
    heads = re.findall(r'kl-pass-name"[^>]*>\d+\. ([\w.+-]+)</span> <span class="kl-pass-stage"[^>]*>\[(\w+)\]', html)
    assert ("llvm-O3", "llir") in heads and ("nvptx-codegen", "ptx") in heads and ("ptxas", "cubin") in heads


def test_viewer_says_why_coalesce_changed_nothing(monkeypatch, tmp_path):
    """Without alignment facts coalesce keeps 1 element per thread; the viewer says which facts
    (alignment, mask constancy) limited it. With them it changes the IR and needs no reason."""
    if not compiling.nvidia_available():
        pytest.skip("the NVIDIA backend is not in this build")
    monkeypatch.setenv("KERNELLAB_CACHE_DIR", str(tmp_path))
    kwargs = dict(signature=SIG, constexprs={"BLOCK": 1024}, target="sm_90")
    plain = kernel_view.view(kl.compile(scale_kernel, **kwargs))
    (coalesce,) = [p for p in plain.data["passes"] if p["name"] == "coalesce"]
    assert not coalesce["changed"]
    assert "1 element per thread" in coalesce["why"] and "4-byte aligned" in coalesce["why"]
    assert "mask is known constant only in runs of 1" in coalesce["why"]
    assert "Why no change: the axis analysis gives tt.load" in plain.bundle["text/html"]
    attrs = {n: {"tt.divisibility": 16} for n in ("x_ptr", "out_ptr", "n")}
    aligned = kernel_view.view(kl.compile(scale_kernel, attrs=attrs, **kwargs))
    (coalesce,) = [p for p in aligned.data["passes"] if p["name"] == "coalesce"]
    assert coalesce["changed"] and coalesce["why"] is None
    assert all(p["why"] is None for p in aligned.data["passes"] if p["changed"])
