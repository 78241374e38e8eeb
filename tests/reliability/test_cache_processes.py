"""The disk cache under real processes (issue 14, item 11): a compile SIGKILLed at any point of
writing its entry leaves a cache that later compiles use correctly, and processes compiling the
same kernel into one cache at once all get the same, correct code."""

import json
import os
import signal
import subprocess
import sys
import textwrap

import pytest

from kernellab.backends.nvidia import cubin

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

pytestmark = pytest.mark.skipif(cubin._load_nvjitlink() is None, reason="needs nvJitLink (ptxas)")

CHILD = """
import json, sys
import kernellab as kl
import kernellab.language as tl
from kernellab.compiler import cache

write = cache.atomic_write


def announced(path, data):  # says which file of the entry it is about to write
    print("write", flush=True)
    sys.stdin.readline()  # the parent kills the process here, or lets it go on
    write(path, data)


if sys.argv[1] == "announce":
    cache.atomic_write = announced


@kl.jit
def scale(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 3, mask=offs < n)


ck = kl.compile(scale, signature="*fp32,i32", constexprs={"BLOCK": 256}, target="sm_90")
print("RESULT " + json.dumps({"hit": ck.metadata["cache_hit"], "cubin": ck.asm["cubin"].hex()}), flush=True)
"""


def _script(tmp_path):
    script = tmp_path / "child.py"
    script.write_text(textwrap.dedent(CHILD))
    env = {**os.environ, "KERNELLAB_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": REPO}
    env.pop("KERNELLAB_ALWAYS_COMPILE", None)
    return script, env


def _result(out: str) -> dict:
    return json.loads([line for line in out.splitlines() if line.startswith("RESULT ")][-1][7:])


def test_a_compile_killed_at_every_write_of_its_entry_leaves_a_usable_cache(tmp_path):
    script, env = _script(tmp_path)
    reference = _result(subprocess.run([sys.executable, str(script), "plain"], capture_output=True, text=True,
                                       env={**env, "KERNELLAB_CACHE_DIR": str(tmp_path / "reference")},
                                       timeout=300).stdout)  # fmt: skip
    writes = 0
    for kill_at in range(1, 20):  # kill before the 1st write, the 2nd, ... until a run completes
        child = subprocess.Popen([sys.executable, str(script), "announce"], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, text=True, env=env)  # fmt: skip
        seen = 0
        for line in child.stdout:
            if line.startswith("write"):
                seen += 1
                if seen == kill_at:
                    child.send_signal(signal.SIGKILL)
                    break
                child.stdin.write("\n")
                child.stdin.flush()
        child.wait(timeout=300)
        if seen < kill_at:  # the entry was complete before this write: every point was killed
            writes = seen
            break
        # a fresh process after the kill compiles correctly, from a miss or a whole entry
        after = _result(subprocess.run([sys.executable, str(script), "plain"], capture_output=True, text=True,
                                       env=env, timeout=300).stdout)  # fmt: skip
        assert after["cubin"] == reference["cubin"]
        assert not after["hit"] or seen > 1  # a hit only once the earlier run had written its record
        for entry in (tmp_path / "cache").rglob("metadata.json"):  # start the next round empty
            for f in entry.parent.iterdir():
                f.unlink()
    assert writes >= 3  # the stages' files and metadata.json: every one was a kill point


FLOCK = 6


def test_processes_compiling_one_kernel_at_once_all_get_the_same_code(tmp_path):
    script, env = _script(tmp_path)
    children = [subprocess.Popen([sys.executable, str(script), "plain"], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True, env=env) for _ in range(FLOCK)]  # fmt: skip
    results = []
    for child in children:
        out, err = child.communicate(timeout=600)
        assert child.returncode == 0, err[-2000:]
        results.append(_result(out))
    assert len({r["cubin"] for r in results}) == 1 and results[0]["cubin"].startswith("7f454c46")
    after = _result(subprocess.run([sys.executable, str(script), "plain"], capture_output=True, text=True,
                                   env=env, timeout=300).stdout)  # fmt: skip
    assert after["hit"] and after["cubin"] == results[0]["cubin"]
