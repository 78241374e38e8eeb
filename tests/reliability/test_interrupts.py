"""Ctrl-C during a long compile (issue 14, item 7): a real SIGINT sent while ptxas works on a
big block stops the compile within a second, leaves no cache entry, and the process compiles
normally afterwards (a script here; a Jupyter kernel gets the same SIGINT)."""

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from kernellab.backends.nvidia import cubin

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def announcing(native: str) -> str:
    """Child-script lines that make the function `native` (a module attribute) print "native"
    when the step starts, from inside it (so the parent knows when to send the signal)."""
    return f"""
native = {native}


def announced(*args):
    print("native", flush=True)
    return native(*args)


{native} = announced
"""


KERNEL = """
import sys, time
import kernellab as kl
import kernellab.language as tl
from kernellab.backends.nvidia import cubin, ptx
from kernellab.compiler import cache


@kl.jit
def add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)
"""

CHILD = KERNEL + announcing("cubin._link_nvjitlink") + """
big = dict(signature="*fp32,*fp32,*fp32,i32", constexprs={"BLOCK": 2**16}, target="sm_90")
try:
    kl.compile(add, **big)
    print("finished", flush=True)
except KeyboardInterrupt:
    print("interrupted", flush=True)
cubin._link_nvjitlink = native
small = kl.compile(add, signature="*fp32,*fp32,*fp32,i32", constexprs={"BLOCK": 256}, target="sm_90")
print("recovered", small.asm["cubin"][:4].hex(), flush=True)
"""


def interrupted_child(tmp_path, source: str):
    """Start `source` as a script, wait until its announced native step runs, send SIGINT;
    (the child, when the signal was sent)."""
    script = tmp_path / "child.py"
    script.write_text(textwrap.dedent(source))
    env = {**os.environ, "KERNELLAB_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": REPO}
    env.pop("KERNELLAB_ALWAYS_COMPILE", None)
    child = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, env=env)  # fmt: skip
    try:
        assert child.stdout.readline().strip() == "native"
        time.sleep(0.2)
        sent = time.perf_counter()
        child.send_signal(signal.SIGINT)
    except BaseException:
        child.kill()
        raise
    return child, sent


@pytest.mark.skipif(cubin._load_nvjitlink() is None, reason="needs nvJitLink (ptxas)")
def test_sigint_during_ptxas_stops_the_compile_within_a_second(tmp_path):
    child, sent = interrupted_child(tmp_path, CHILD)
    try:
        line = child.stdout.readline().strip()
        acted = time.perf_counter() - sent
        rest, err = child.communicate(timeout=300)
    finally:
        child.kill()
    assert line == "interrupted", err
    assert acted < 1.0, f"Ctrl-C took {acted:.1f} s to act"
    assert rest.startswith("recovered 7f454c46"), err  # an ELF cubin: the process compiles again
    entries = [p for p in (tmp_path / "cache").rglob("metadata.json")]
    assert len(entries) == 1  # the small kernel's; the interrupted compile left none


JUPYTER_CELL = KERNEL + announcing("cubin._link_nvjitlink") + """
import time
try:
    kl.compile(add, signature="*fp32,*fp32,*fp32,i32", constexprs={"BLOCK": 2**16}, target="sm_90")
    print("finished", flush=True)
except KeyboardInterrupt:
    print(f"interrupted at {time.perf_counter()}", flush=True)  # one clock for all processes
    raise
finally:
    cubin._link_nvjitlink = native
"""


@pytest.mark.skipif(cubin._load_nvjitlink() is None, reason="needs nvJitLink (ptxas)")
def test_interrupting_a_jupyter_kernel_stops_the_compile_within_a_second(tmp_path):
    """What the notebook's stop button does: the kernel gets SIGINT, the cell ends with
    KeyboardInterrupt, and the kernel runs the next cell."""
    manager = pytest.importorskip("jupyter_client.manager")
    env = {**os.environ, "KERNELLAB_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": REPO}
    km, kc = manager.start_new_kernel(kernel_name="python3", env=env, cwd=str(tmp_path))
    try:
        # stop_on_error=False: after a failed cell ipykernel aborts the requests that reach it
        # within its stop_on_error window, and the next cell below may race that window; the
        # test is about kernellab leaving the kernel usable, not about ipykernel's queue.
        msg_id = kc.execute(textwrap.dedent(JUPYTER_CELL), stop_on_error=False)

        text = ""

        def output(word: str) -> str:
            """The rest of the cell's output line that starts with `word` (a printed line may
            reach the client in several stream messages)."""
            nonlocal text
            while True:
                after = text.split(word, 1)[1] if word in text else ""
                if "\n" in after:
                    return after.split("\n", 1)[0]
                msg = kc.get_iopub_msg(timeout=300)
                if msg["parent_header"].get("msg_id") == msg_id and msg["msg_type"] == "stream":
                    text += msg["content"]["text"]

        output("native")  # ptxas has started
        time.sleep(0.2)
        sent = time.perf_counter()
        km.interrupt_kernel()
        acted = float(output("interrupted at")) - sent
        reply = kc.get_shell_msg(timeout=60)
        while reply["parent_header"].get("msg_id") != msg_id:
            reply = kc.get_shell_msg(timeout=60)
        assert reply["content"]["status"] == "error" and reply["content"]["ename"] == "KeyboardInterrupt"
        assert acted < 1.0, f"the interrupt took {acted:.1f} s to act"
        after = kc.execute_interactive("print(1 + 1)", timeout=120)
        assert after["content"]["status"] == "ok"  # the kernel is usable
    finally:
        km.shutdown_kernel(now=True)


EXIT_CHILD = KERNEL + announcing("ptx.optimize") + """
try:
    kl.compile(add, signature="*fp32,*fp32,*fp32,i32", constexprs={"BLOCK": 2**20}, target="sm_90")
except KeyboardInterrupt:
    print("stopped", flush=True)  # and the script ends here, as one that handles Ctrl-C would
"""


def test_a_script_stopped_during_llvm_exits_at_once_without_crashing(tmp_path):
    """The script handles the Ctrl-C and ends while LLVM's O3 still runs in its thread: the
    process must neither crash at exit (LLVM torn down under the running step; it did, with
    LLVM assertions and segmentation faults) nor wait seconds for the step."""
    child, sent = interrupted_child(tmp_path, EXIT_CHILD)
    try:
        out, err = child.communicate(timeout=300)
        took = time.perf_counter() - sent
    finally:
        child.kill()
    assert out.strip() == "stopped" and child.returncode == 0, f"exit status {child.returncode}: {err[-2000:]}"
    assert took < 2.0, f"the process took {took:.1f} s to exit after Ctrl-C"


FORK_CHILD = KERNEL + """
import multiprocessing, threading
from kernellab.backends import toolchain

held, release = threading.Event(), threading.Event()


def native_step():  # stands in for an LLVM step running in a thread (compiling, or abandoned)
    with toolchain.llvm_lock, cubin._lock:
        held.set()
        release.wait(1.0)


def compile_in_child(queue):
    ck = kl.compile(add, signature="*fp32,*fp32,*fp32,i32", constexprs={"BLOCK": 256}, target="sm_90", force=True)
    queue.put(ck.asm["cubin"][:4].hex())


threading.Thread(target=native_step).start()
held.wait()
context = multiprocessing.get_context("fork")
queue = context.Queue()
child = context.Process(target=compile_in_child, args=(queue,))
child.start()  # while the step holds the locks: the fork waits for it
release.set()
try:
    print("child compiled", queue.get(timeout=60), flush=True)
finally:
    child.join(10)
    child.kill()
"""


@pytest.mark.skipif(cubin._load_nvjitlink() is None, reason="needs nvJitLink (ptxas)")
def test_a_process_forked_during_a_native_step_compiles(tmp_path):
    """A compile pool forked while a thread holds LLVM's or nvJitLink's lock used to inherit the
    lock held, by a thread that does not exist in the child, and hang on its first compile."""
    script = tmp_path / "child.py"
    script.write_text(textwrap.dedent(FORK_CHILD))
    env = {**os.environ, "KERNELLAB_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": REPO}
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=200)
    assert done.returncode == 0 and "child compiled 7f454c46" in done.stdout, done.stderr[-2000:]
