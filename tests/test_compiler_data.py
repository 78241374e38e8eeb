"""The typed data between the layers: Signature, KernelMetadata, options, the launch header,
and the backend table."""

import dataclasses

import pytest

import kernellab as kl
import kernellab.language as tl
from kernellab.backends import INTERPRETER, get_backend, register_backend, unregister_backend
from kernellab.backends.metadata import KernelMetadata
from kernellab.backends.nvidia.backend import NVIDIA, NvidiaOptions, _parse_llir, _parse_ptx
from kernellab.backends.nvidia.header import LaunchHeader, header_lines, read_header
from kernellab.backends.options import CompileOptions
from kernellab.compiler.specialization import match_parameters, resolve_signature
from kernellab.language.signature import Signature

# -- Signature ------------------------------------------------------------------------------


def test_signature_parses_and_prints_back():
    sig = Signature.parse(" *fp32, *bf16 ,i32,u64,i1", ["x", "y", "n", "m", "flag"])
    assert list(sig) == ["x", "y", "n", "m", "flag"]
    assert sig["x"] == tl.pointer_type(tl.float32) and sig["n"] == tl.int32 and sig["m"] == tl.uint64
    assert str(sig) == "*fp32,*bf16,i32,u64,i1" and sig.spellings()[1] == "*bf16"
    assert Signature.parse(str(sig), list(sig)) == sig
    assert list(Signature.parse("fp16,fp16")) == ["arg0", "arg1"] and str(Signature.parse("")) == ""


@pytest.mark.parametrize(
    "text, names, message",
    [
        ("*fp32,float", ["x", "y"], "parameter 'y': unknown type 'float'"),
        ("*fp32,,i32", ["x", "y", "z"], "has an empty entry"),
        ("*fp32,i32", ["x"], "has 2 entries for 1 parameters"),
        ("**", None, "parameter 'arg0': unknown type ''"),
    ],
)
def test_signature_parse_errors_say_what_is_wrong(text, names, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace("*", r"\*")):
        Signature.parse(text, names)


def test_resolve_signature_takes_text_per_parameter_or_per_runtime_parameter():
    @kl.jit
    def k(x_ptr, n, BLOCK: tl.constexpr):
        pass

    consts = {"BLOCK": 64}
    for given in ("*fp16,i64", "*fp16,i64,constexpr", {"x_ptr": "*fp16", "n": tl.int64},
                  Signature.parse("*fp16,i64", ["x_ptr", "n"])):  # fmt: skip
        sig = resolve_signature(k, given, consts)
        assert isinstance(sig, Signature) and str(sig) == "*fp16,i64" and list(sig) == ["x_ptr", "n"]
    with pytest.raises(TypeError, match="has 1 entries"):
        resolve_signature(k, "*fp16", consts)
    with pytest.raises(TypeError, match="k: parameter 'n': unknown type 'int'"):
        resolve_signature(k, "*fp16,int", consts)


def test_match_parameters():
    assert match_parameters(["a", "B", "c"], ["a", "c"], [1, 2]) == {"a": 1, "c": 2}
    assert match_parameters(["a", "B", "c"], ["a", "c"], [1, 9, 2]) == {"a": 1, "B": 9, "c": 2}
    assert match_parameters(["a", "B", "c"], ["a", "c"], [1]) is None


# -- KernelMetadata -------------------------------------------------------------------------


def test_metadata_reads_as_a_mapping_and_as_attributes():
    md = KernelMetadata(name="k", target="sm_90", options=NvidiaOptions(num_warps=8, target="sm_90"),
                        signature=Signature.parse("*fp32,i32", ["x", "n"]))  # fmt: skip
    md.record({"shared": 1024, "threads_per_block": 256, "name": "k", "num_warps": 8, "target": "sm_90", "mine": 7})
    assert md["shared"] == 1024 and md.shared == 1024 and md.get("registers") is None
    assert "shared" in md and "registers" not in md and "mine" in md and md.mine == 7
    assert md.num_warps == 8 and md["num_warps"] == 8 and md["target"] == "sm_90"
    assert md["signature"] == "*fp32,i32" and isinstance(md.signature, Signature)
    assert list(md)[:7] == ["name", "target", "num_warps", "num_stages", "num_ctas", "maxnreg", "debug"]
    assert dict(md.items())["threads_per_block"] == 256 and len(md) == len(list(md))
    with pytest.raises(KeyError):
        md["registers"]
    with pytest.raises(AttributeError, match="metadata has no 'nothing'"):
        md.nothing


def test_compiled_kernel_metadata_is_typed():
    @kl.jit
    def k(x_ptr, n, BLOCK: tl.constexpr):
        pass

    ck = kl.compile(k, signature="*fp32,i32", constexprs={"BLOCK": 16}, num_warps=2)
    md = ck.metadata
    assert isinstance(md, KernelMetadata) and type(md.options) is CompileOptions
    assert md.options.num_warps == 2 and md.num_warps == 2 and md["num_warps"] == 2
    assert str(md.signature) == "*fp32,i32" and ck.arg_names == ["x_ptr", "n"]
    assert md.constexprs == {"BLOCK": 16} and set(md.times) == {"frontend", "ttir"}


# -- options ---------------------------------------------------------------------------------


def test_nvidia_options_extend_the_base_without_copying_it():
    base = {f.name for f in dataclasses.fields(CompileOptions)}
    nvidia = [f.name for f in dataclasses.fields(NvidiaOptions)]
    assert issubclass(NvidiaOptions, CompileOptions) and len(nvidia) == len(set(nvidia))
    assert set(nvidia) - base == {"target"}
    assert NvidiaOptions(num_warps=8).threads_per_block == 256
    with pytest.raises(ValueError, match="num_warps must be a power of two"):
        NvidiaOptions(num_warps=3)


# -- the launch header ------------------------------------------------------------------------


def test_header_round_trips_through_llvm_ir_and_its_module_asm():
    header = LaunchHeader("add_kernel", 49152, 8)
    first, module_asm = header_lines(header)
    assert first.startswith("; kernellab: {") and module_asm.startswith('module asm "// kernellab: {')
    assert read_header(first + "\ndefine void @f() {\n}\n") == header
    assert read_header('target triple = "nvptx64"\n' + module_asm + "\n") == header
    ptx_line = "// " + first[2:]  # the module asm line as LLVM writes it into the PTX
    assert read_header(".version 8.0\n" + ptx_line + "\n.entry add_kernel()\n{\n}\n") == header
    assert read_header("define void @f() {\n}\n") is None
    with pytest.raises(ValueError, match="malformed kernellab header"):
        read_header('; kernellab: {"name": "k"}\n')


def test_resuming_from_text_reads_the_header_and_else_the_kernel_itself():
    first, module_asm = header_lines(LaunchHeader("k", 4096, 2))
    llir = first + '\ndefine ptx_kernel void @k(ptr %0) {\n  ret void\n}\n' + module_asm + "\n"
    assert _parse_llir(llir).metadata == {"name": "k", "shared": 4096, "threads_per_block": 64}
    bare = 'define ptx_kernel void @j(ptr %0) "nvvm.maxntid"="128" {\n  ret void\n}\n'
    assert _parse_llir(bare).metadata == {"name": "j", "shared": 0, "threads_per_block": 128}
    ptx = ".version 8.0\n.target sm_90\n.address_size 64\n" + "// " + first[2:] + "\n.visible .entry k(\n\t.param .u64 k_param_0\n)\n{\n\tret;\n}\n"
    art = _parse_ptx(ptx)
    assert art.name == "k" and art.metadata["shared"] == 4096 and art.metadata["params"] == ["u64"]


# -- the backend table ------------------------------------------------------------------------


def test_register_backend_adds_a_target_and_can_take_one_over():
    fake = dataclasses.replace(INTERPRETER, name="fake")
    with pytest.raises(ValueError, match="unknown target 'fake'"):
        get_backend("fake")
    register_backend(fake)
    try:
        assert get_backend("fake") is fake and get_backend(None) is INTERPRETER
        assert get_backend("sm_80") is NVIDIA
        register_backend(fake, matches=lambda name: name.startswith("sm_8"))
        assert get_backend("sm_80") is fake and get_backend("sm_90") is NVIDIA
    finally:
        unregister_backend(fake)
    assert get_backend("sm_80") is NVIDIA
    with pytest.raises(ValueError, match="unknown target 'fake'"):
        get_backend("fake")
    with pytest.raises(TypeError, match="takes a Backend"):
        register_backend("fake")


def test_an_unknown_target_lists_the_registered_ones():
    fake = dataclasses.replace(INTERPRETER, name="fake")
    register_backend(fake, matches={"fake", "fake2"}, hint="'fake' or 'fake2'")
    try:
        with pytest.raises(ValueError, match=r"'interpreter' \(the default\), 'sm_80'.*, 'fake' or 'fake2'$"):
            get_backend("nothing")
    finally:
        unregister_backend(fake)
    with pytest.raises(ValueError) as info:
        get_backend("nothing")
    assert "fake" not in str(info.value)


def test_compiling_edited_llvm_ir_takes_shared_memory_and_arguments_from_the_text():
    import os
    import sys

    from kernellab.backends.nvidia import cubin

    if cubin.nvjitlink_version() is None:
        pytest.skip("nvJitLink is not installed")
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "backends", "nvidia"))
    from llvm_samples import SHARED_64K

    ck = kl.compile(SHARED_64K, target="sm_90", force=True)
    md = ck.metadata
    assert md.shared == 65536 and md.threads_per_block == 128 and md.name == "smem_kernel"
    assert md.params == ["u64"] and str(md.signature) == "u64" and ck.arg_names == ["arg0"]
    assert md.shared_total == 65536 + md.static_shared and md.registers > 0


def test_the_header_reaches_the_ptx_through_module_asm():
    import os
    import sys

    from kernellab.backends.nvidia.pipeline import make_ptx

    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "backends", "nvidia"))
    from llvm_samples import VECTOR_ADD

    first, last = header_lines(LaunchHeader("add_kernel", 128, 2))
    ptx, _ = make_ptx(f"{first}\n{VECTOR_ADD}\n{last}\n", NvidiaOptions())
    assert read_header(ptx) == LaunchHeader("add_kernel", 128, 2)
    assert _parse_ptx(ptx).metadata["threads_per_block"] == 64


def test_located_asm_and_source_maps_are_public_per_stage(monkeypatch, tmp_path):
    from kernellab.backends.nvidia import cubin

    if cubin.nvjitlink_version() is None:
        pytest.skip("nvJitLink is not installed")
    monkeypatch.setenv("KERNELLAB_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("KERNELLAB_ALWAYS_COMPILE", raising=False)

    @kl.jit
    def copy(src, dst, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(dst + offs, tl.load(src + offs, mask=offs < n), mask=offs < n)

    def compile_it():
        return kl.compile(copy, signature="*fp32,*fp32,i32", constexprs={"BLOCK": 64}, target="sm_80")

    ck = compile_it()
    assert set(ck.located_asm) == {"ttir", "ttgir"} and "loc(" in ck.located_asm["ttgir"]
    for stage in ("ttir", "ttgir"):
        assert len(ck.located_asm[stage].splitlines()) == len(ck.asm[stage].splitlines())
        load = next(i for i, line in enumerate(ck.asm[stage].splitlines(), 1) if "tt.load" in line)
        assert ck.source_maps[stage][load][1] == copy.fn.__code__.co_firstlineno + 3
    hit = compile_it()
    assert hit.metadata.cache_hit and hit.located_asm == {} and hit.source_maps == ck.source_maps
    assert hit.metadata.signature == ck.metadata.signature and hit.metadata.options == ck.metadata.options
    assert hit.metadata.registers == ck.metadata.registers and hit.metadata.compile_times == ck.metadata.times
