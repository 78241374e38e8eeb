"""kl.compile: stages, pass records, metadata, source map, resuming from TTIR text, launching."""

import inspect

import numpy as np
import pytest

import kernellab as kl
import kernellab.language as tl
from kernellab.passes.ttir import TTIR_PASSES

SIGNATURE = "*fp32,*fp32,*fp32,i32"


@kl.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(axis=0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)


SCALE_TTIR = """
module {
  tt.func public @scale(%x_ptr: !tt.ptr<f32>, %out_ptr: !tt.ptr<f32>, %n: i32) {
    %pid = tt.get_program_id x : i32
    %c64 = arith.constant 64 : i32
    %start = arith.muli %pid, %c64 : i32
    %range = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %starts = tt.splat %start : i32 -> tensor<64xi32>
    %offs = arith.addi %starts, %range : tensor<64xi32>
    %ns = tt.splat %n : i32 -> tensor<64xi32>
    %mask = arith.cmpi slt, %offs, %ns : tensor<64xi32>
    %xs = tt.splat %x_ptr : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
    %xp = tt.addptr %xs, %offs : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
    %x = tt.load %xp, %mask : tensor<64x!tt.ptr<f32>>
    %two = arith.constant dense<2.0> : tensor<64xf32>
    %y = arith.mulf %x, %two : tensor<64xf32>
    %os = tt.splat %out_ptr : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
    %op = tt.addptr %os, %offs : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
    tt.store %op, %y, %mask : tensor<64x!tt.ptr<f32>>
    tt.return
  }
}
"""


@pytest.fixture(scope="module")
def ck():
    return kl.compile(add_kernel, signature=SIGNATURE, constexprs={"BLOCK": 128})


def inputs(n):
    rng = np.random.default_rng()
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    return x, y, np.full(n, np.nan, np.float32)


def test_ttir_reads_like_triton(ck):
    ttir = ck.asm["ttir"]
    assert "tt.func public @add_kernel(%x_ptr: !tt.ptr<f32>" in ttir
    for op in ("tt.get_program_id x", "tt.make_range", "tt.splat", "tt.addptr", "tt.load",
               "tt.store", "arith.cmpi slt", "arith.addf"):  # fmt: skip
        assert op in ttir, op
    assert "%pid" in ttir and "%offs" in ttir and "%mask" in ttir
    assert "BLOCK" not in ttir  # a constexpr is not an argument
    assert "tensor<128xf32>" in ttir
    assert list(ck.asm) == ["ttir"]


def test_every_ttir_pass_is_recorded(ck):
    assert [p.name for p in ck.passes] == [p.NAME for p in TTIR_PASSES]
    for record in ck.passes:
        assert "tt.func public @add_kernel" in record.ir_after
        assert record.seconds >= 0 and isinstance(record.changed, bool)
    assert ck.passes[-1].ir_after == ck.asm["ttir"]


def test_metadata(ck):
    md = ck.metadata
    assert ck.name == md["name"] == "add_kernel"
    assert (md["num_warps"], md["num_stages"], md["target"]) == (4, 3, "interpreter")
    assert md["signature"] == SIGNATURE and md["constexprs"] == {"BLOCK": 128}
    assert len(md["hash"]) == 64
    assert set(md["times"]) == {"frontend", "ttir"}
    assert "add_kernel" in repr(ck) and SIGNATURE in repr(ck) and "BLOCK=128" in repr(ck)
    # the same facts as typed attributes (Triton style)
    assert (md.name, md.num_warps, md.options.num_stages, md.target) == ("add_kernel", 4, 3, "interpreter")
    assert list(md.signature) == ["x_ptr", "y_ptr", "out_ptr", "n"] and md.signature["n"] == tl.int32
    assert "shared" not in md and md.get("registers") is None  # the interpreter reports no resources


def test_hash_depends_on_what_was_compiled(ck):
    same = kl.compile(add_kernel, signature=SIGNATURE, constexprs={"BLOCK": 128})
    other = kl.compile(add_kernel, signature=SIGNATURE, constexprs={"BLOCK": 256})
    warps = kl.compile(add_kernel, signature=SIGNATURE, constexprs={"BLOCK": 128}, num_warps=8)
    assert same.metadata["hash"] == ck.metadata["hash"]
    assert len({ck.metadata["hash"], other.metadata["hash"], warps.metadata["hash"]}) == 3
    assert warps.metadata["num_warps"] == 8


def test_signature_spellings_agree(ck):
    per_param = kl.compile(add_kernel, signature="*fp32,*fp32,*fp32,i32,constexpr", constexprs={"BLOCK": 128})
    as_dict = kl.compile(
        add_kernel,
        signature={"n": "i32", "out_ptr": tl.pointer_type(tl.float32), "x_ptr": "*fp32", "y_ptr": "*fp32"},
        constexprs={"BLOCK": 128},
    )
    assert per_param.asm["ttir"] == as_dict.asm["ttir"] == ck.asm["ttir"]
    for kernel in (per_param, as_dict):  # the dict's order doesn't matter: parameter order does
        assert str(kernel.metadata.signature) == SIGNATURE
        assert kernel.arg_names == ["x_ptr", "y_ptr", "out_ptr", "n"]
        assert kernel.metadata.hash == ck.metadata.hash


def test_attrs_become_argument_attributes():
    ck = kl.compile(add_kernel, signature=SIGNATURE, constexprs={"BLOCK": 64},
                    attrs={"x_ptr": {"tt.divisibility": 16}, "n": {"tt.divisibility": 16}})  # fmt: skip
    header = ck.asm["ttir"].splitlines()[1]
    assert "%x_ptr: !tt.ptr<f32> {tt.divisibility = 16 : i32}" in header
    assert "%n: i32 {tt.divisibility = 16 : i32}" in header
    assert "%y_ptr: !tt.ptr<f32>," in header


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        ({"signature": "*fp32,*fp32,i32", "constexprs": {"BLOCK": 4}}, TypeError, "has 3 entries"),
        ({"signature": "*fp32,*fp32,*fp32,int", "constexprs": {"BLOCK": 4}}, TypeError, "parameter 'n': unknown type 'int'"),
        ({"signature": SIGNATURE}, TypeError, "pass constexprs={'BLOCK': ...}"),
        ({"signature": SIGNATURE, "constexprs": {"BLOCK": 4, "BLK": 2}}, TypeError, "no parameter 'BLK'"),
        ({"constexprs": {"BLOCK": 4}}, TypeError, "no type for x_ptr, y_ptr, out_ptr, n"),
        ({"signature": SIGNATURE, "constexprs": {"BLOCK": 4}, "target": "sm_90", "num_warps": 3}, ValueError, "num_warps must be a power of two"),
        ({"signature": SIGNATURE, "constexprs": {"BLOCK": 4}, "target": "sm_9"}, ValueError, "unknown target 'sm_9'"),
        ({"signature": SIGNATURE, "constexprs": {"BLOCK": 4}, "target": "tpu"}, ValueError, "unknown target 'tpu'"),
        ({"signature": SIGNATURE, "constexprs": {"BLOCK": 4}, "num_wraps": 4}, TypeError, "unknown compile option(s) num_wraps"),
    ],
)  # fmt: skip
def test_bad_compile_requests_say_what_to_change(kwargs, error, message):
    with pytest.raises(error) as info:
        kl.compile(add_kernel, **kwargs)
    assert message in str(info.value)


def test_source_map_points_at_the_kernel_lines(ck):
    lines, start = inspect.getsourcelines(add_kernel.fn)
    load_line = start + next(i for i, l in enumerate(lines) if "x = tl.load" in l)
    ttir_lines = ck.asm["ttir"].splitlines()
    load_ir = next(i for i, l in enumerate(ttir_lines, 1) if "tt.load" in l)
    filename, line = ck.source_map[load_ir]
    assert filename.endswith("test_compile.py") and line == load_line
    assert all(1 <= k <= len(ttir_lines) for k in ck.source_map)


def test_compiled_kernel_runs(ck):
    n = 1000
    x, y, out = inputs(n)
    ck[(kl.cdiv(n, 128),)](x, y, out, n)
    np.testing.assert_allclose(out, x.astype(np.float64) + y, rtol=1e-6)
    with pytest.raises(TypeError, match=r"takes 4 arguments \(x_ptr, y_ptr, out_ptr, n\), got 3"):
        ck.run((1,), x, y, out)


def test_a_bound_launch_checks_its_arguments_once_and_launches_each_call(ck):
    n = 700
    x, y, out = inputs(n)
    launch = ck.bound((kl.cdiv(n, 128),), x, y, out, n)
    launch()
    np.testing.assert_allclose(out, x.astype(np.float64) + y, rtol=1e-6)
    x += 1  # the same arrays, new values: the next call reads them
    launch()
    np.testing.assert_allclose(out, x.astype(np.float64) + y, rtol=1e-6)
    with pytest.raises(TypeError, match="takes 4 arguments"):
        ck.bound((1,), x, y, out)


def test_resume_from_ttir_text_of_a_compiled_kernel(ck):
    again = kl.compile(ck.asm["ttir"])
    assert again.asm["ttir"] == ck.asm["ttir"] and again.passes == []
    assert again.name == "add_kernel" and again.metadata["signature"] == SIGNATURE
    n = 300
    x, y, out = inputs(n)
    again[(3,)](x, y, out, n)
    np.testing.assert_allclose(out, x.astype(np.float64) + y, rtol=1e-6)


def test_resume_from_a_hand_written_ttir_file(tmp_path):
    path = tmp_path / "scale.ttir"
    path.write_text(SCALE_TTIR)
    ck = kl.compile(str(path))
    assert ck.name == "scale" and ck.metadata["signature"] == "*fp32,*fp32,i32"
    assert "%offs = arith.addi %starts, %range" in ck.asm["ttir"]
    n = 100
    x, _, out = inputs(n)
    ck[(2,)](x, out, n)
    np.testing.assert_array_equal(out, x * 2)


def test_resume_refuses_python_only_arguments():
    with pytest.raises(TypeError, match="IR text already fixes them"):
        kl.compile(SCALE_TTIR, signature="*fp32")
    with pytest.raises(TypeError, match="@kl.jit kernel, IR text or a path"):
        kl.compile(42)


def test_pass_records_name_the_stage_that_ran_them(ck):
    assert [p.stage for p in ck.passes] == ["ttir"] * len(TTIR_PASSES)


def _fake_backend(later_stages: dict):
    """The interpreter backend with more stages after TTIR (a stand-in for a GPU backend)."""
    import dataclasses

    from kernellab.backends import INTERPRETER, _ttir_stage

    return dataclasses.replace(
        INTERPRETER, name="fake", stages=lambda: {"ttir": _ttir_stage, **later_stages}
    )


FAKE_LLIR = "; ModuleID = 'fake'\ndefine void @add_kernel() {\n  ret void\n}\n"


def test_a_failing_later_stage_raises_with_the_stages_that_compiled(ck, monkeypatch):
    from kernellab import compiler
    from kernellab.backends import StageOutput
    from kernellab.passes.manager import PassRecord

    def llir_stage(module, options):
        return StageOutput(object(), FAKE_LLIR, [PassRecord("lower", FAKE_LLIR, 0.001, True)], {"shared": 96})

    def ptx_stage(artifact, options):
        raise RuntimeError("ptxas fatal: unresolved extern function 'frobnicate'")

    backend = _fake_backend({"llir": llir_stage, "ptx": ptx_stage})
    monkeypatch.setattr(compiler, "get_backend", lambda target: backend)
    with pytest.raises(RuntimeError, match="frobnicate") as info:
        kl.compile(add_kernel, signature=SIGNATURE, constexprs={"BLOCK": 128}, target="fake")
    partial = info.value.partial
    assert list(partial.asm) == ["ttir", "llir"]
    assert partial.asm["ttir"] == ck.asm["ttir"] and partial.asm["llir"] == FAKE_LLIR
    assert [(p.name, p.stage) for p in partial.passes] == [(p.NAME, "ttir") for p in TTIR_PASSES] + [("lower", "llir")]
    md = partial.metadata
    assert partial.name == md["name"] == "add_kernel" and md["signature"] == SIGNATURE
    assert md["failed_stage"] == "ptx" and "RuntimeError: ptxas fatal" in md["error"]
    assert set(md["times"]) == {"frontend", "ttir", "llir"} and md["shared"] == 96
    assert md["constexprs"] == {"BLOCK": 128} and md["num_warps"] == 4
    load = next(i for i, line in enumerate(partial.asm["ttir"].splitlines(), 1) if "tt.load" in line)
    assert partial.source_maps["ttir"][load] == ck.source_map[load]
    assert "tt.load" in str(partial.module)
    x, y, out = inputs(10)
    with pytest.raises(RuntimeError, match="did not compile past llir"):
        partial[(1,)](x, y, out, 10)


def test_a_failing_first_stage_has_nothing_partial(monkeypatch):
    from kernellab import compiler

    def ttir_stage(module, options):
        raise ValueError("broken pass")

    import dataclasses

    from kernellab.backends import INTERPRETER

    backend = dataclasses.replace(INTERPRETER, stages=lambda: {"ttir": ttir_stage})
    monkeypatch.setattr(compiler, "get_backend", lambda target: backend)
    with pytest.raises(ValueError, match="broken pass") as info:
        kl.compile(add_kernel, signature=SIGNATURE, constexprs={"BLOCK": 128})
    assert not hasattr(info.value, "partial")


def test_gpu_stages_label_their_passes_and_keep_them_when_ptxas_fails(monkeypatch, tmp_path):
    """With the NVIDIA backend (no GPU needed): llvm-verify and llvm-O3 leave LLVM IR (llir),
    nvptx-codegen the PTX, ptxas runs in the cubin stage; when the cubin stage fails, every
    stage through PTX is still there."""
    from kernellab.lab.compiling import nvidia_available

    if not nvidia_available():
        pytest.skip("the NVIDIA backend is not in this build")
    from kernellab.backends.nvidia import backend

    monkeypatch.setenv("KERNELLAB_CACHE_DIR", str(tmp_path))
    good = kl.compile(add_kernel, signature=SIGNATURE, constexprs={"BLOCK": 128}, target="sm_90", force=True)
    stages = {p.name: p.stage for p in good.passes}
    assert stages["llvm-verify"] == stages["llvm-O3"] == "llir"
    assert stages["nvptx-codegen"] == "ptx" and stages["ptxas"] == "cubin"
    assert stages["inline"] == "ttir" and "ttgir" in {p.stage for p in good.passes}

    def cubin_stage(art, options):
        raise RuntimeError("ptxas error: Entry function uses too much shared data")

    monkeypatch.setattr(backend, "_cubin_stage", cubin_stage)
    with pytest.raises(RuntimeError, match="too much shared data") as info:
        kl.compile(add_kernel, signature=SIGNATURE, constexprs={"BLOCK": 128}, target="sm_90", force=True)
    partial = info.value.partial
    assert list(partial.asm) == ["ttir", "ttgir", "llir", "ptx"]
    assert partial.asm["ptx"] == good.asm["ptx"] and partial.metadata["failed_stage"] == "cubin"
    assert [p.name for p in partial.passes] == [p.name for p in good.passes][:-1]
