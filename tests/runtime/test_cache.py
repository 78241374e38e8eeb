"""The disk cache: hits across processes, misses when anything in the key changes, corrupt
entries are misses that get rewritten, and writes are atomic.

Most tests use a small stand-in backend ("stamp": TTIR plus one binary stage) with the disk
cache switched on, so they test the cache and compile()'s use of it independently of the GPU
lowering; one test uses the real NVIDIA backend when its lowering is available.
"""

import hashlib
import importlib.util
import json
import os
import subprocess
import sys
import textwrap

import pytest

import kernellab as kl
import kernellab.language as tl
from kernellab.compiler import cache as disk

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

STAMP_BACKEND = '''
import hashlib
from kernellab.backends import Backend, StageOutput, _parse_ir, _ttir_stage, register_backend


class Stamp:
    def __init__(self, name, data):
        self.name, self.data = name, data

    def run(self, args, grid, trace=None):
        return ("ran", self.name)


def _stamp_stage(module, options):
    from kernellab.ir import print_module

    data = hashlib.sha256(print_module(module).encode()).digest() * 4
    name = next(op.sym_name.data for op in module.walk() if op.name == "tt.func")
    return StageOutput(Stamp(name, data), data, [], metadata={"stamp_bytes": len(data)})


register_backend(Backend(
    name="stamp", stages=lambda: {"ttir": _ttir_stage, "stamp": _stamp_stage},
    parsers={"ttir": _parse_ir}, launcher=lambda art: art, disk_cache=True,
    restore=lambda asm, md: Stamp(md.name, asm["stamp"]),
))
'''
exec(STAMP_BACKEND)  # the same backend in this process and in the subprocesses

SCRIPT = '''
import json, sys, time
import kernellab as kl
import kernellab.language as tl

SCALE = {scale}


@kl.jit
def axpy(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) {op} SCALE * tl.load(y_ptr + offs, mask=mask), mask=mask)


start = time.perf_counter()
ck = kl.compile(axpy, signature="*fp32,*fp32,i32", constexprs={{"BLOCK": 64}}, target="stamp")
seconds = time.perf_counter() - start
print(json.dumps({{
    "hit": ck.metadata["cache_hit"], "key": ck.metadata["cache_key"], "seconds": seconds,
    "xdsl_imported": "xdsl" in sys.modules, "ttir": ck.asm["ttir"],
    "stamp": ck.asm["stamp"].hex(), "passes": [(p.name, p.stage) for p in ck.passes],
    "source_map": sorted(ck.source_map.items()), "stamp_bytes": ck.metadata["stamp_bytes"],
    "ran": list(ck[(1,)](None, None, 3) or []),
}}))
'''


# REPO first, the existing PYTHONPATH kept (on the device xdsl comes from it)
PYTHONPATH = os.pathsep.join(p for p in (REPO, os.environ.get("PYTHONPATH", "")) if p)


def run_script(cache_dir, tmp_path, op="+", scale=2.0, env=None) -> dict:
    script = tmp_path / f"kernel_{hashlib.sha1((op + str(scale)).encode()).hexdigest()[:8]}.py"
    script.write_text(STAMP_BACKEND + SCRIPT.format(op=op, scale=scale))
    environment = {**os.environ, "KERNELLAB_CACHE_DIR": str(cache_dir), "PYTHONPATH": PYTHONPATH}
    environment.pop("KERNELLAB_ALWAYS_COMPILE", None)
    environment.update(env or {})
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=environment, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_a_new_process_reuses_the_disk_cache(tmp_path):
    for attempt in range(3):  # kernellab's sources are part of the key: retry if they changed meanwhile
        cache_dir = tmp_path / f"cache{attempt}"
        first = run_script(cache_dir, tmp_path)
        second = run_script(cache_dir, tmp_path)
        if first["key"] == second["key"]:
            break
    assert first["hit"] is False and second["hit"] is True
    assert first["key"] == second["key"]
    assert not second["xdsl_imported"], "a cache hit must not run (or even import) the compiler"
    for field in ("ttir", "stamp", "passes", "source_map", "stamp_bytes", "ran"):
        assert first[field] == second[field], field
    assert first["passes"] and first["source_map"]
    assert all(stage for _, stage in second["passes"]), "pass records keep their stage"
    assert os.path.isdir(cache_dir / first["key"][:2] / first["key"])


def test_changing_the_source_or_a_global_is_a_miss(tmp_path):
    cache_dir = tmp_path / "cache"
    base = run_script(cache_dir, tmp_path)
    changed_source = run_script(cache_dir, tmp_path, op="-")
    changed_global = run_script(cache_dir, tmp_path, scale=3.0)
    assert not changed_source["hit"] and not changed_global["hit"]
    assert len({base["key"], changed_source["key"], changed_global["key"]}) == 3
    assert "arith.subf" in changed_source["ttir"] and "arith.subf" not in base["ttir"]


def test_always_compile_bypasses_the_cache(tmp_path):
    cache_dir = tmp_path / "cache"
    run_script(cache_dir, tmp_path)
    again = run_script(cache_dir, tmp_path, env={"KERNELLAB_ALWAYS_COMPILE": "1"})
    assert again["hit"] is False


# -- in this process ------------------------------------------------------------------------


@kl.jit
def scale_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2.0, mask=offs < n)


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELLAB_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("KERNELLAB_ALWAYS_COMPILE", raising=False)
    return tmp_path / "cache"


def compile_stamp(**kwargs):
    return kl.compile(scale_kernel, signature="*fp32,i32", constexprs={"BLOCK": 32}, target="stamp", **kwargs)


def entry_dir(ck) -> str:
    return disk.default_cache().entry_path(ck.metadata["cache_key"])


def test_every_stage_is_stored_with_its_digest(cache_dir):
    ck = compile_stamp()
    path = entry_dir(ck)
    record = disk.default_cache().read_record(ck.metadata["cache_key"])
    assert set(record["files"]) == {"ttir", "stamp"}
    for stage, (name, kind, size, digest) in record["files"].items():
        data = open(os.path.join(path, name), "rb").read()
        assert len(data) == size and hashlib.sha256(data).hexdigest() == digest
        expected = ck.asm[stage] if kind == "bytes" else ck.asm[stage].encode()
        assert data == expected
    assert compile_stamp().metadata["cache_hit"] is True


@pytest.mark.parametrize("damage", ["truncate_artifact", "garbage_metadata", "delete_artifact", "wrong_key"])
def test_a_corrupt_entry_is_a_miss_and_is_rewritten(cache_dir, damage):
    ck = compile_stamp()
    path = entry_dir(ck)
    if damage == "truncate_artifact":
        with open(os.path.join(path, "stamp.txt"), "r+b") as f:
            f.truncate(5)
    elif damage == "garbage_metadata":
        with open(os.path.join(path, "metadata.json"), "wb") as f:
            f.write(b'{"mac": ')
    elif damage == "delete_artifact":
        os.unlink(os.path.join(path, "ttir.ttir"))
    else:  # a signed record of another key (entries are bound to their key)
        cache = disk.default_cache()
        record = cache.read_record(ck.metadata["cache_key"])
        record["key"] = "0" * 64
        cache.write_record(ck.metadata["cache_key"], record)
    again = compile_stamp()
    assert again.metadata["cache_hit"] is False
    assert again.asm["stamp"] == ck.asm["stamp"]
    third = compile_stamp()
    assert third.metadata["cache_hit"] is True and third.asm["stamp"] == ck.asm["stamp"]


def test_force_compiles_even_when_cached(cache_dir):
    compile_stamp()
    assert compile_stamp(force=True).metadata["cache_hit"] is False


def test_writes_are_atomic(cache_dir, monkeypatch):
    real_replace = os.replace
    calls = []

    def failing_replace(src, dst):
        calls.append(dst)
        if len(calls) == 2:  # the second file of the entry: the write dies mid-entry
            raise OSError("disk full")
        return real_replace(src, dst)

    monkeypatch.setattr(os, "replace", failing_replace)
    ck = compile_stamp()  # compiling still works when the cache can't be written
    monkeypatch.setattr(os, "replace", real_replace)
    path = entry_dir(ck)
    assert not os.path.exists(path)  # the half-written entry never took the entry's name
    assert os.listdir(os.path.dirname(path)) == [], "temporary files left behind"
    assert disk.default_cache().get(ck.metadata["cache_key"]) is None
    assert compile_stamp().metadata["cache_hit"] is False
    assert compile_stamp().metadata["cache_hit"] is True


def test_atomic_write_replaces_whole_files(tmp_path):
    target = tmp_path / "f.bin"
    disk.atomic_write(str(target), b"old contents")
    disk.atomic_write(str(target), b"new")
    assert target.read_bytes() == b"new"
    assert os.listdir(tmp_path) == ["f.bin"]


def test_the_interpreter_does_not_use_the_disk_cache(cache_dir):
    kl.compile(scale_kernel, signature="*fp32,i32", constexprs={"BLOCK": 32})
    assert not os.path.exists(cache_dir)


def test_specialization_and_options_are_in_the_key(cache_dir):
    a = compile_stamp()
    b = kl.compile(scale_kernel, signature="*fp32,i32", constexprs={"BLOCK": 64}, target="stamp")
    c = kl.compile(scale_kernel, signature="*fp16,i32", constexprs={"BLOCK": 32}, target="stamp")
    d = compile_stamp(num_warps=8)
    e = compile_stamp(attrs={"x_ptr": {"tt.divisibility": 16}})
    keys = {k.metadata["cache_key"] for k in (a, b, c, d, e)}
    assert len(keys) == 5


def _load_module(tmp_path, name, source):
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(source))
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


DEPENDENT = """
import kernellab as kl
import kernellab.language as tl

FACTOR = tl.constexpr({factor})


@kl.jit
def helper(x):
    return x {op} FACTOR


@kl.jit
def kernel(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, helper(tl.load(x_ptr + offs)))
"""


def test_called_functions_and_constexpr_globals_are_dependencies(tmp_path):
    def key(name, op, factor):
        module = _load_module(tmp_path, name, DEPENDENT.format(op=op, factor=factor))
        deps = disk.dependencies(module.kernel)
        return disk.kernel_key(module.kernel, "*fp32", {"BLOCK": 8}, None, None, "sm_90", "v"), deps

    base, deps = key("dep_a", "*", 2)
    assert ("global FACTOR", "2") in deps
    assert any(name.startswith("fn helper") for name, _ in deps)
    same, _ = key("dep_b", "*", 2)
    helper_changed, _ = key("dep_c", "+", 2)
    global_changed, _ = key("dep_d", "*", 3)
    assert same == base  # the same code in another module shares the entry
    assert len({base, helper_changed, global_changed}) == 3


def test_nvidia_compile_is_cached_across_processes(tmp_path):
    script = tmp_path / "nv.py"
    script.write_text(textwrap.dedent('''
        import json, time
        import kernellab as kl
        import kernellab.language as tl

        @kl.jit
        def add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            mask = offs < n
            tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)

        start = time.perf_counter()
        ck = kl.compile(add, signature="*fp32,*fp32,*fp32,i32", constexprs={"BLOCK": 1024}, target="sm_90")
        print(json.dumps({"hit": ck.metadata["cache_hit"], "cubin": ck.asm["cubin"].hex(),
                          "ptx": ck.asm["ptx"], "registers": ck.metadata["registers"]}))
    '''))
    env = {**os.environ, "KERNELLAB_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": PYTHONPATH}
    env.pop("KERNELLAB_ALWAYS_COMPILE", None)
    runs = []
    for _ in range(2):
        out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=300)
        assert out.returncode == 0, out.stderr
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    assert [r["hit"] for r in runs] == [False, True]
    assert runs[0]["cubin"] == runs[1]["cubin"] and runs[0]["ptx"] == runs[1]["ptx"]
    assert runs[1]["cubin"].startswith("7f454c46")
