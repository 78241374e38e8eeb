"""Values a kernel reads from outside its arguments (issue 14, item 1): each is in the compile
cache's key (plain globals, closures, attributes of classes like `Cfg.SCALE`), a read the key
could not follow is refused at compile time, and a global rebound after compilation is an error
at the next launch instead of a silent run of code built for the old value."""

import importlib.util
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import kernellab as kl
import kernellab.language as tl
from kernellab.compiler import cache as disk
from kernellab.frontend.errors import CompilationError

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

SCALED = """
import kernellab as kl
import kernellab.language as tl

SCALE = 2.0


class Cfg:
    SHIFT = 1.0


@kl.jit
def scaled(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs) * SCALE + Cfg.SHIFT)
"""


def _module(tmp_path, name, source):
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(source))
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _run(kernel, x):
    out = np.full_like(x, np.nan)
    kernel[(1,)](x, out, BLOCK=x.size)
    return out


@pytest.mark.parametrize("rebind", ["SCALE", "Cfg.SHIFT"])
def test_a_rebound_global_is_an_error_at_the_next_launch(tmp_path, rebind):
    module = _module(tmp_path, f"scaled_{rebind.replace('.', '_')}", SCALED)
    x = np.random.default_rng().standard_normal(16).astype(np.float32)
    np.testing.assert_allclose(_run(module.scaled, x), x.astype(np.float64) * 2 + 1, rtol=1e-6)
    if rebind == "SCALE":
        module.SCALE = 3.0
    else:
        module.Cfg.SHIFT = 5.0
    with pytest.raises(RuntimeError, match=rf"global {rebind} changed .*from .* to .*argument or a tl.constexpr"):
        _run(module.scaled, x)
    with pytest.raises(RuntimeError, match=rebind):  # a new specialization too
        _run(module.scaled, np.ones(8, np.float32))


def test_rebinding_to_an_equal_value_is_not_an_error(tmp_path):
    module = _module(tmp_path, "scaled_equal", SCALED)
    x = np.random.default_rng().standard_normal(8).astype(np.float32)
    _run(module.scaled, x)
    module.SCALE = float("2.0")
    np.testing.assert_allclose(_run(module.scaled, x), x.astype(np.float64) * 2 + 1, rtol=1e-6)


def test_a_closure_variable_is_watched_too():
    factor = 2.0

    @kl.jit
    def times(x_ptr, out_ptr, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(out_ptr + offs, tl.load(x_ptr + offs) * factor)

    x = np.random.default_rng().standard_normal(8).astype(np.float32)
    np.testing.assert_allclose(_run(times, x), x.astype(np.float64) * 2, rtol=1e-6)
    factor = 4.0  # noqa: F841 (the kernel's closure cell sees it)
    with pytest.raises(RuntimeError, match="global factor changed"):
        _run(times, x)


def test_class_attributes_and_called_functions_globals_are_in_the_key(tmp_path):
    module = _module(tmp_path, "scaled_key", SCALED)
    deps = dict(disk.dependencies(module.scaled))
    assert deps["global SCALE"] == "2.0" and deps["global Cfg.SHIFT"] == "1.0"
    key = disk.kernel_key(module.scaled, "*fp32,*fp32", {"BLOCK": 8}, None, None, "sm_90", "v")
    module.Cfg.SHIFT = 1.5
    assert disk.kernel_key(module.scaled, "*fp32,*fp32", {"BLOCK": 8}, None, None, "sm_90", "v") != key


CROSS_PROCESS = """
import json, os, sys
sys.path.insert(0, os.path.dirname(__file__))
import kernellab as kl
import kernellab.language as tl


class Cfg:
    SCALE = float(os.environ["SCALE"])


@kl.jit
def scale(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs) * Cfg.SCALE)


ck = kl.compile(scale, signature="*fp32", constexprs={"BLOCK": 128}, target="sm_90")
print(json.dumps({"hit": ck.metadata["cache_hit"], "ptx": ck.asm["ptx"]}))
"""


def test_another_process_with_another_class_constant_gets_its_own_code(tmp_path):
    script = tmp_path / "cfg_kernel.py"
    script.write_text(textwrap.dedent(CROSS_PROCESS))
    env = {**os.environ, "KERNELLAB_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": REPO}
    env.pop("KERNELLAB_ALWAYS_COMPILE", None)
    runs = []
    for scale in ("3.0", "5.0", "3.0"):
        out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                             env={**env, "SCALE": scale}, timeout=300)  # fmt: skip
        assert out.returncode == 0, out.stderr
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    assert [r["hit"] for r in runs] == [False, False, True]
    assert "0f40400000" in runs[0]["ptx"].lower()  # 3.0 as a PTX float literal
    assert "0f40a00000" in runs[1]["ptx"].lower()  # 5.0


class Table:
    VALUES = [1.0, 2.0]  # mutable: a kernel must not bake it in
    SCALE = 2.0

    @classmethod
    def scale(cls):
        return cls.SCALE


def _kernel_reading(expression: str):
    source = f"""
def reads(x_ptr):
    tl.store(x_ptr, tl.load(x_ptr) * {expression})
"""
    namespace = {"tl": tl, "Table": Table, "kl": kl}
    exec(compile(source, "<reads>", "exec"), namespace)  # noqa: S102
    return kl.jit(_with_source(namespace["reads"], source))


def _with_source(fn, source):
    import linecache

    filename = f"<reads {id(fn)}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    fn.__code__ = fn.__code__.replace(co_filename=filename)
    return fn


@pytest.mark.parametrize(
    "expression, message",
    [("Table.VALUES[0]", "Table.VALUES"), ('getattr(Table, "SCALE")', "getattr"),
     ("Table.scale()", "Table.scale")],
)
def test_reads_the_key_cannot_follow_are_refused_at_compile_time(expression, message):
    kernel = _kernel_reading(expression)
    with pytest.raises(CompilationError, match="tl.constexpr") as error:
        kernel[(1,)](np.ones(1, np.float32))
    assert message in str(error.value) and "argument" in str(error.value)


HELPED = """
import kernellab as kl
import kernellab.language as tl


@kl.jit
def helper(x):
    return x * 2


@kl.jit
def helped(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, helper(tl.load(x_ptr + offs)))
"""


def test_a_called_kernel_function_redefined_after_compilation_is_an_error(tmp_path):
    module = _module(tmp_path, "helped", HELPED)
    x = np.random.default_rng().standard_normal(8).astype(np.float32)
    np.testing.assert_allclose(_run(module.helped, x), x.astype(np.float64) * 2, rtol=1e-6)

    @kl.jit
    def helper(x):
        return x * 3

    module.helper = helper  # what re-running the helper's notebook cell does
    with pytest.raises(RuntimeError, match="global helper changed .*re-run its cell"):
        _run(module.helped, x)
