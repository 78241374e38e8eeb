"""LLVM IR → PTX (llvmlite) → cubin (nvJitLink) → SASS (nvdisasm), all without a GPU."""

import re

import pytest
from llvm_samples import SCALE_BIAS, VECTOR_ADD, WITH_LOCATIONS

import kernellab as kl
from kernellab.passes.manager import PassError
from kernellab.backends.nvidia import cubin as cubin_mod
from kernellab.backends.nvidia.backend import NvidiaOptions, resolve_target
from kernellab.backends.nvidia.cubin import PTXAssemblyError, make_cubin, parse_resources
from kernellab.backends.nvidia.pipeline import LLVM_PASSES, PTX_PASSES
from kernellab.backends.nvidia.pipeline import make_ptx as make_ptx_traced
from kernellab.backends.nvidia.ptx import PTXGenerationError, entry_points
from kernellab.backends.nvidia.sass import find_nvdisasm, make_sass

ARCHS = ["sm_80", "sm_90"]


def make_ptx(llir: str, options) -> str:
    return make_ptx_traced(llir, options)[0]


@pytest.mark.parametrize("arch", ARCHS)
def test_llvm_ir_becomes_ptx_for_the_target(arch):
    ptx = make_ptx(VECTOR_ADD, NvidiaOptions(target=arch))
    assert re.search(rf"^\.target {arch}$", ptx, re.M)
    assert re.search(r"^\.version 8\.5$", ptx, re.M)
    assert ".visible .entry add_kernel(" in ptx
    assert entry_points(ptx) == {"add_kernel": ["u64", "u64", "u64", "u32"]}
    # O3 ran: the bounds check became one predicated branch and the add a single f32 add
    assert len(re.findall(r"\badd\.rn\.f32\b", ptx)) == 1
    assert "ld.global" in ptx and "st.global" in ptx


def test_debug_locations_become_loc_lines_and_ptxas_still_optimizes():
    ptx = make_ptx(WITH_LOCATIONS, NvidiaOptions())
    assert '.file\t1 "/tmp/kernel.py"' in ptx
    assert {m for m in re.findall(r"\.loc\t1 (\d+) \d+", ptx)} >= {"11", "12"}
    assert re.search(r"^\.target sm_90$", ptx, re.M), "the ', debug' flag must be dropped"


def test_bad_llvm_ir_names_the_line_and_the_pass():
    broken = VECTOR_ADD.replace("%s = fadd float %vx, %vy", "%s = fadd float %vx, %undefined_value")
    with pytest.raises(PassError, match="pass 'llvm-verify' failed: PTXGenerationError") as info:
        make_ptx(broken, NvidiaOptions())
    assert isinstance(info.value.__cause__, PTXGenerationError)
    assert "undefined_value" in str(info.value)
    assert "> " in str(info.value)  # the offending IR line is shown with a marker


def test_each_llvm_pass_leaves_a_record_with_its_ir():
    ptx, records = make_ptx_traced(VECTOR_ADD, NvidiaOptions(target="sm_80"))
    assert [r.name for r in records] == [p.NAME for p in LLVM_PASSES + PTX_PASSES]
    assert [r.name for r in records] == ["llvm-verify", "link-extern-libs", "llvm-O3", "nvptx-codegen",
                                         "ptxas-workarounds", "occupancy"]  # fmt: skip
    assert [r.stage for r in records] == ["llir", "llir", "llir", "ptx", "ptx", "ptx"]
    verify, link, o3, codegen, workarounds, occupancy = records
    assert not occupancy.changed and occupancy.summary == "left to ptxas"  # no warp-group dot
    # a kernel that calls no library links nothing
    assert not link.changed and link.summary == "no library function called"
    # verifying changes nothing: its record shares the input text (not printed again)
    assert not verify.changed and verify.ir_after is VECTOR_ADD
    assert verify.summary == "valid LLVM IR"
    # the sample names no triple: O3 optimizes it for NVPTX's
    assert o3.changed and 'target triple = "nvptx64-nvidia-cuda"' in o3.ir_after
    assert re.fullmatch(r"\d+ → \d+ lines", o3.summary)
    assert codegen.ir_after is ptx and codegen.summary == f"{len(ptx.splitlines())} PTX lines for sm_80"
    assert not workarounds.changed and workarounds.summary == "none needed for sm_80"
    assert all(r.seconds >= 0 for r in records)


def test_untraced_llvm_passes_print_nothing_and_make_the_same_ptx():
    traced, _ = make_ptx_traced(SCALE_BIAS, NvidiaOptions())
    untraced, records = make_ptx_traced(SCALE_BIAS, NvidiaOptions(), trace=False)
    assert untraced == traced
    assert [r.ir_after for r in records] == [""] * len(LLVM_PASSES + PTX_PASSES)


@pytest.mark.parametrize("arch", ARCHS)
def test_ptx_assembles_to_a_cubin_with_resources(arch):
    options = NvidiaOptions(target=arch)
    binary, res = make_cubin(make_ptx(VECTOR_ADD, options), options, name="add_kernel")
    assert binary[:4] == b"\x7fELF"
    assert 4 <= res["registers"] <= 64
    assert res["spill_stores"] == res["spill_loads"] == 0
    assert res["static_shared"] == 0 and res["stack_bytes"] == 0
    assert res["max_threads"] == 1024
    assert f"for '{arch}'" in res["log"]


def test_resources_are_parsed_from_the_log():
    log = (
        "ptxas info    : Compiling entry function 'k' for 'sm_90'\n"
        "ptxas info    : Function properties for k\n"
        "ptxas         .     40 bytes stack frame, 24 bytes spill stores, 16 bytes spill loads\n"
        "ptxas info    : Used 168 registers, used 1 barriers, 8 bytes smem\n"
        "info    : used 168 registers, used 1 barriers, 40 stack, 1024 bytes smem, 380 bytes cmem[0], 40 bytes lmem\n"
    )
    res = parse_resources(log, "k")
    assert res["registers"] == 168 and res["barriers"] == 1
    assert (res["spill_stores"], res["spill_loads"], res["stack_bytes"]) == (24, 16, 40)
    assert res["static_shared"] == 1024 and res["local_bytes"] == 40
    # 168 registers round to 5376 per warp: 12 warps fit in 64K registers
    assert res["max_threads"] == 384


BROKEN_PTX = """//
.version 8.5
.target sm_90
.address_size 64

.visible .entry broken(.param .u64 p)
{
  .reg .b32 %r<3>;
  mov.u32 %r1, %tid.x;
  add.bogus.s32 %r2, %r1, %r1;
  ret;
}
"""


def test_broken_ptx_raises_with_the_log_and_the_line():
    with pytest.raises(PTXAssemblyError) as info:
        make_cubin(BROKEN_PTX, NvidiaOptions())
    error = info.value
    assert error.line == 10
    assert "bogus" in error.log
    message = str(error)
    assert "at PTX line 10" in message
    assert ">    10 |   add.bogus.s32 %r2, %r1, %r1;" in message


def test_maxnreg_caps_registers():
    options = NvidiaOptions(maxnreg=16)
    _, res = make_cubin(make_ptx(SCALE_BIAS, options), options)
    assert 0 < res["registers"] <= 16


@pytest.mark.skipif(find_nvdisasm() is None, reason="nvdisasm is not installed")
def test_sass_comes_from_nvdisasm():
    options = NvidiaOptions()
    binary, _ = make_cubin(make_ptx(VECTOR_ADD, options), options)
    sass = make_sass(binary)
    assert "add_kernel" in sass
    assert re.search(r"\bFADD\b", sass) and re.search(r"\bLDG\.E\b", sass) and re.search(r"\bSTG\.E\b", sass)


def test_sass_is_none_without_nvdisasm(monkeypatch):
    from kernellab.backends.nvidia import sass

    monkeypatch.setattr(sass, "find_nvdisasm", lambda: None)
    assert sass.make_sass(b"\x7fELF") is None
    assert sass.sass_status().startswith("unavailable")


def test_compile_from_llvm_ir_text_gives_every_later_stage():
    ck = kl.compile(VECTOR_ADD, target="sm_90", num_warps=8)
    assert list(ck.asm)[:3] == ["llir", "ptx", "cubin"] and "sass" in ck.asm
    assert ck.asm["cubin"][:4] == b"\x7fELF"
    md = ck.metadata
    assert md.name == "add_kernel" and md.target == "sm_90" and md.num_warps == 8
    assert md.params == ["u64", "u64", "u64", "u32"]
    assert md.registers > 0 and md.spills == 0 and md.shared_total == 0
    assert set(md.times) == {"ptx", "cubin"}
    assert [p.name for p in ck.passes] == ["llvm-verify", "link-extern-libs", "llvm-O3", "nvptx-codegen",
                                           "ptxas-workarounds", "occupancy", "ptxas"]  # fmt: skip
    if find_nvdisasm() is not None:
        assert "FADD" in ck.asm["sass"]
    else:
        assert ck.asm["sass"] is None and md.sass.startswith("unavailable")


def test_compile_resumes_from_ptx_text():
    ptx = make_ptx(SCALE_BIAS, NvidiaOptions(target="sm_80"))
    ck = kl.compile(ptx, target="sm_80")
    assert list(ck.asm)[:2] == ["ptx", "cubin"]
    assert ck.metadata.params == ["u64", "u8", "f32", "u64", "u64", "f64"]
    assert ck.arg_names == [f"arg{i}" for i in range(6)]


def test_generic_cuda_target_means_sm90_without_a_gpu():
    from kernellab.backends.nvidia import driver

    if driver.available():
        pytest.skip("a GPU is visible: 'cuda' means its architecture")
    assert resolve_target("cuda") == "sm_90"
    assert resolve_target("sm_80") == "sm_80"
    with pytest.raises(ValueError, match="unknown NVIDIA target"):
        resolve_target("sm_9x")


def test_linker_falls_back_to_cuda_core_when_nvjitlink_is_missing(monkeypatch):
    pytest.importorskip("cuda.core")
    monkeypatch.setattr(cubin_mod, "_load_nvjitlink", lambda: None)
    options = NvidiaOptions(target="sm_80")
    binary, res = make_cubin(make_ptx(VECTOR_ADD, options), options)
    assert binary[:4] == b"\x7fELF" and res["linker"] == "cuda.core" and res["registers"] > 0


def test_the_ctypes_nvjitlink_links_as_cuda_bindings_does():
    """The wheel's library through ctypes (what a first compile uses: it loads in milliseconds)
    gives the cubin and the resource report cuda.bindings.nvjitlink gives, and the same error
    for PTX that doesn't assemble."""
    path = cubin_mod._wheel_library()
    binding = pytest.importorskip("cuda.bindings.nvjitlink")
    if path is None:
        pytest.skip("the nvidia-nvjitlink wheel is not installed")
    ours = cubin_mod._NvJitLink(path)
    assert ours.version() == tuple(binding.version())
    options = NvidiaOptions(target="sm_90a")
    ptx = make_ptx(VECTOR_ADD, options).encode()
    flags = cubin_mod.link_options("sm_90a", ptx.decode())
    (cubin_ours, log_ours), (cubin_theirs, log_theirs) = (
        cubin_mod._link_nvjitlink(nj, ptx, flags) for nj in (ours, binding)
    )
    assert cubin_ours[:4] == b"\x7fELF" and cubin_ours == cubin_theirs
    assert parse_resources(log_ours) == parse_resources(log_theirs)
    bad = ptx.replace(b"add.rn.f32", b"add.bogus.f32")
    errors = []
    for nj in (ours, binding):
        with pytest.raises(PTXAssemblyError) as info:
            cubin_mod._link_nvjitlink(nj, bad, flags)
        errors.append((str(info.value), info.value.line))
    assert errors[0] == errors[1] and "ERROR_PTX_COMPILE (4)" in errors[0][0] and errors[0][1]
    with pytest.raises(ours.nvJitLinkError, match=r"ERROR_UNRECOGNIZED_OPTION \(1\)"):
        ours.create(1, ["-no-such-option"])


@kl.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: kl.language.constexpr):
    tl = kl.language
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


@pytest.mark.parametrize("arch", ARCHS)
def test_a_python_kernel_compiles_to_every_stage_without_a_gpu(arch, tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELLAB_CACHE_DIR", str(tmp_path))
    ck = kl.compile(add_kernel, signature="*fp32,*fp32,*fp32,i32", constexprs={"BLOCK": 1024},
                    target=arch, num_warps=4)  # fmt: skip
    assert list(ck.asm)[:5] == ["ttir", "ttgir", "llir", "ptx", "cubin"]
    assert "#ttg.blocked<{" in ck.asm["ttgir"]
    assert re.search(rf"^\.target {arch}$", ck.asm["ptx"], re.M)
    assert ck.asm["cubin"][:4] == b"\x7fELF"
    md = ck.metadata
    assert md.target == arch and md.threads_per_block == 128 and md.params == ["u64", "u64", "u64", "u32"]
    assert md.registers > 0 and md.spills == 0 and md.cache_hit is False
    assert {"frontend", "ttir", "ttgir", "llir", "ptx", "cubin"} <= set(md.times)
    # PTX .loc lines point back at this file's kernel lines
    lines = {int(n) for n in re.findall(r"\.loc\s+\d+ (\d+) \d+", ck.asm["ptx"])}
    start = add_kernel.start_line
    assert lines & set(range(start, start + 6))
    again = kl.compile(add_kernel, signature="*fp32,*fp32,*fp32,i32", constexprs={"BLOCK": 1024}, target=arch)
    assert again.metadata.cache_hit is True and again.asm["cubin"] == ck.asm["cubin"]


def test_a_compile_records_the_llvm_passes_between_the_lowering_and_ptxas():
    ck = kl.compile(add_kernel, signature="*fp32,*fp32,*fp32,i32", constexprs={"BLOCK": 256},
                    target="sm_90", force=True)  # fmt: skip
    llvm = [(r.name, r.stage) for r in ck.passes if r.name.startswith(("llvm", "nvptx"))]
    assert llvm == [("llvm-verify", "llir"), ("llvm-O3", "llir"), ("nvptx-codegen", "ptx")]
    verify = next(r for r in ck.passes if r.name == "llvm-verify")
    assert not verify.changed and verify.ir_after == ck.asm["llir"]  # shared, not printed
    assert next(r for r in ck.passes if r.name == "nvptx-codegen").ir_after == ck.asm["ptx"]


def test_loading_the_backend_for_a_cached_kernel_imports_no_compiler():
    """A disk-cache hit loads the backend (ptx.py and the pass manager's types with it) but
    never xDSL: the compiler is imported only when something is compiled."""
    import subprocess
    import sys

    probe = "import kernellab.backends.nvidia.backend, sys; print('xdsl' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
