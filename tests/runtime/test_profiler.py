"""kernellab.profiler: proton's calls, the scope tree, launch timing, throughput, the JSON file.

On the CPU every kernel runs on the interpreter, so times are wall clock and labelled
"interpreter"; the tests marked gpu check CUDA-event times on torch tensors.
"""

import json

import numpy as np
import pytest

import kernellab as kl
import kernellab.language as tl
import kernellab.profiler as proton
from kernellab.examples import matmul_kernel
from kernellab.runtime.launch_hooks import ENTER_HOOKS
from kernellab.runtime.profiler import clocks, sessions


def add_metadata(grid, kernel, args):
    n = args["n"]
    return {"name": f"add [n={n}]", "flops": n, "bytes": 3 * n * args["x_ptr"].itemsize}


@kl.jit(launch_metadata=add_metadata)
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + tl.load(y_ptr + offs, mask=mask), mask=mask)


@pytest.fixture(autouse=True)
def fresh_profiler(tmp_path, monkeypatch):
    """Each test writes its files in its own folder and leaves no session, hook or (stand-in)
    event behind."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(clocks, "_free_events", {})
    yield
    leftover = list(sessions._sessions)
    sessions._sessions.clear()
    sessions._stack.clear()
    sessions._sync_hook()
    assert not leftover, f"the test left sessions {leftover} open"


def launch_add(rng, n):
    x, y = rng.random((2, n), dtype=np.float32)
    out = np.full(n, np.nan, np.float32)
    add_kernel[(kl.cdiv(n, 128),)](x, y, out, n, BLOCK=128)
    np.testing.assert_array_equal(out, (x.astype(np.float64) + y).astype(np.float32))


def child(node, name):
    (found,) = [c for c in node["children"] if c["name"] == name]
    return found


def test_scopes_nest_and_count_and_time_their_kernels_on_the_interpreter(rng):
    n = int(rng.integers(200, 700))
    proton.start("nested")
    assert ENTER_HOOKS == [sessions._on_launch]
    with proton.scope("outer"):
        launch_add(rng, n)
        for _ in range(2):
            with proton.scope("inner"):
                launch_add(rng, n)
    assert proton.finalize() == ["nested.json"]
    assert ENTER_HOOKS == []

    record = proton.read("nested.json")
    assert record["clock"] == "interpreter" and record["device"] is None
    outer = child(record["tree"], "outer")
    inner = child(outer, "inner")
    direct = child(outer, "add_kernel")  # without hook="triton": the kernel's own name, no metrics
    assert [c["name"] for c in outer["children"]] == ["add_kernel", "inner"]
    assert (outer["count"], inner["count"], direct["count"]) == (1, 2, 1)
    assert child(inner, "add_kernel")["count"] == 2
    assert direct["kind"] == "kernel" and direct["metrics"] == {} and direct["derived"] == {}
    for node in (outer, inner, direct):
        assert node["clock"] == "interpreter" and node["time_ns"] > 0
    # wall clock: a scope encloses what ran inside it
    assert outer["time_ns"] >= direct["time_ns"] + inner["time_ns"]
    assert inner["time_ns"] >= child(inner, "add_kernel")["time_ns"]
    assert record["tree"]["time_ns"] == outer["time_ns"]


def test_hook_triton_names_launches_by_launch_metadata_and_derives_throughput(rng):
    n = int(rng.integers(300, 900))
    proton.start("hooked", hook="triton")
    with proton.scope("sum", {"flops": 7 * n, "bytes": 5 * n}):
        launch_add(rng, n)
        launch_add(rng, n)
    proton.finalize()
    scope = child(proton.read("hooked.json")["tree"], "sum")
    kernel = child(scope, f"add [n={n}]")
    assert kernel["count"] == 2
    assert kernel["metrics"] == {"flops": 2 * n, "bytes": 2 * 12 * n}
    assert scope["metrics"] == {"flops": 7 * n, "bytes": 5 * n}
    for node in (scope, kernel):
        t = node["time_ns"]
        assert node["derived"] == {
            "tflop/s": pytest.approx(node["metrics"]["flops"] / t * 1e-3, rel=1e-12),
            "gbyte/s": pytest.approx(node["metrics"]["bytes"] / t, rel=1e-12),
        }


def test_scope_is_a_decorator_and_enter_exit_scope_pair_up(rng):
    @proton.scope("step", {"flops16": 10})
    def step(n):
        launch_add(rng, n)
        return n

    session = proton.start("decorated")
    assert [step(64), step(64)] == [64, 64]
    first = proton.enter_scope("manual", metrics={"flops8": 3})
    assert proton.exit_scope(metrics={"flops8": 4}) == first
    with pytest.raises(RuntimeError, match="without an open scope"):
        proton.exit_scope()
    tree = proton.read(session)["tree"]  # a running session reads too
    proton.finalize()
    assert child(tree, "step")["count"] == 2 and child(tree, "step")["metrics"] == {"flops16": 20}
    assert set(child(tree, "step")["derived"]) == {"tflop16/s"}
    assert child(tree, "manual")["metrics"] == {"flops8": 7}
    assert child(child(tree, "step"), "add_kernel")["count"] == 2


def test_deactivated_sessions_record_nothing_and_launches_keep_the_warm_path(rng):
    first = proton.start("first", hook="triton")
    second = proton.start("second")
    assert (first, second) == (0, 1)
    proton.deactivate()
    assert ENTER_HOOKS == []  # nobody listens: launches are not slowed down
    with proton.scope("ignored"):
        launch_add(rng, 100)
    proton.activate(second)
    with proton.scope("kept"):
        launch_add(rng, 100)
    proton.deactivate(second)
    proton.activate(first)
    launch_add(rng, 100)
    proton.finalize()
    first, other = (proton.read(f"{name}.json")["tree"] for name in ("first", "second"))
    assert [c["name"] for c in first["children"]] == ["add [n=100]"]
    assert [c["name"] for c in other["children"]] == ["kept"]
    assert [c["name"] for c in child(other, "kept")["children"]] == ["add_kernel"]


def test_the_file_is_named_like_protons_and_follows_the_schema(rng):
    proton.start("run.hatchet", hook="triton")
    with proton.scope("s", {"bytes": 1}):
        launch_add(rng, 50)
    assert proton.finalize(output_format="hatchet") == ["run.json"]
    with open("run.json") as f:
        record = json.load(f)
    assert set(record) == {"schema", "name", "clock", "device", "tree"}
    assert record["schema"] == proton.SCHEMA and record["name"] == "run"

    def check(node):
        fields = {"name", "kind", "count", "time_ns", "clock", "metrics", "derived", "children"}
        assert set(node) == fields
        assert node["kind"] in ("root", "scope", "kernel") and isinstance(node["time_ns"], int)
        assert all(isinstance(v, (int, float)) for v in node["metrics"].values())
        for c in node["children"]:
            check(c)

    check(record["tree"])
    assert proton.read() == record  # the last finalized profile
    with open("other.json", "w") as f:
        json.dump({"tree": {}}, f)
    with pytest.raises(ValueError, match="not a kernellab profile"):
        proton.read("other.json")


def test_a_failing_launch_is_still_closed_and_counted(rng):
    x = rng.random(64, dtype=np.float32)
    proton.start("failing")
    with pytest.raises(Exception, match="out-of-bounds load"), proton.scope("oops"):
        add_kernel[(2,)](x, x, np.empty_like(x), 128, BLOCK=64)  # n passes the arrays' end
    with proton.scope("after"):
        launch_add(rng, 64)
    proton.finalize()
    tree = proton.read("failing.json")["tree"]
    assert [c["name"] for c in tree["children"]] == ["oops", "after"]
    failed = child(child(tree, "oops"), "add_kernel")
    assert failed["count"] == 1 and failed["time_ns"] > 0
    assert child(child(tree, "after"), "add_kernel")["count"] == 1


def test_bad_calls_say_what_to_change():
    with pytest.raises(ValueError, match="hook"):
        proton.start(hook="tritonn")
    with pytest.raises(ValueError, match="context"):
        proton.start(context="python")
    with pytest.raises(ValueError, match="no profiling session 3"):
        proton.activate(3)
    with pytest.raises(TypeError, match="metrics map names to numbers"):
        proton.scope("x", {"flops": "many"})
    with pytest.raises(TypeError, match="must be a dict"):
        proton.scope("x", [1])
    with pytest.raises(ValueError, match="no profile yet"):
        sessions._last = None
        proton.read()


def test_tutorial_09_style_calls_profile_a_matmul_on_the_interpreter(rng):
    """Triton's tutorial 09 shape: start with the hook, deactivate while warming up, activate
    around the measured calls, one scope per size with its flops, finalize."""

    def matmul(a, b):
        M, K = a.shape
        N = b.shape[1]
        c = np.full((M, N), np.nan, np.float16)
        grid = (kl.cdiv(M, 16) * kl.cdiv(N, 16),)
        matmul_kernel[grid](a, b, c, M, N, K, a.strides[0] // 2, 1, b.strides[0] // 2, 1,
                            c.strides[0] // 2, 1, BLOCK_SIZE_M=16, BLOCK_SIZE_N=16,
                            BLOCK_SIZE_K=16, GROUP_SIZE_M=2, ACTIVATION="")  # fmt: skip
        return c

    session = proton.start("matmul", hook="triton")
    assert session == 0  # no other session is open: tutorial 09 calls activate(0)
    proton.deactivate(session)
    sizes = [(32, 48, 40), (48, 32, 24)]
    for M, N, K in sizes:
        a = rng.standard_normal((M, K)).astype(np.float16)
        b = rng.standard_normal((K, N)).astype(np.float16)
        matmul(a, b)  # warm-up, not recorded
        proton.activate(session)
        with proton.scope(f"kernel [M={M}, N={N}, K={K}]", {"flops": 2 * M * N * K}):
            c = matmul(a, b)
        proton.deactivate(session)
        expected = a.astype(np.float64) @ b.astype(np.float64)
        np.testing.assert_allclose(c.astype(np.float64), expected, rtol=1e-2, atol=1e-2 * np.sqrt(K))
    proton.finalize()
    tree = proton.read("matmul.json")["tree"]
    names = [f"kernel [M={M}, N={N}, K={K}]" for M, N, K in sizes]
    assert [c["name"] for c in tree["children"]] == names
    for (M, N, K), node in zip(sizes, tree["children"]):
        assert node["count"] == 1 and [c["name"] for c in node["children"]] == ["matmul_kernel"]
        assert node["derived"]["tflop/s"] == pytest.approx(2 * M * N * K / node["time_ns"] * 1e-3)


# -- the CUDA-event path, on a stand-in driver ------------------------------------------------


class FakeEvent:
    pass


class FakeDriver:
    """Events that read a clock advancing 1.5 ms per record; counts the calls made."""

    def __init__(self):
        self.calls, self.now = [], 0.0

    def available(self):
        return True

    def current_device_index(self):
        return 0

    def make_current(self, index):
        assert index == 0

    def device_info(self, index):
        return type("Info", (), {"name": "Fake GPU"})

    def call(self, name, *args):
        self.calls.append(name)
        if name == "cuEventCreate":
            return FakeEvent()
        if name == "cuEventRecord":
            self.now += 1.5
            args[0].ms, args[0].stream = self.now, args[1]
        if name == "cuEventElapsedTime":
            return args[1].ms - args[0].ms
        return None


def test_scopes_and_gpu_launches_are_timed_by_events_read_only_at_the_end(monkeypatch):
    from kernellab.runtime.launch_hooks import Launch

    fake = FakeDriver()
    monkeypatch.setattr(clocks, "_driver", lambda: fake)
    proton.start("events", hook="triton")
    with proton.scope("outer", {"bytes": 3_000_000}):  # records at 1.5 and (last) 7.5 ms
        with proton.scope("inner"):  # 3.0 and 6.0 ms
            kernel = type("CompiledKernel", (), {"name": "k"})
            launch = Launch("k [n=8]", (1, 1, 1), kernel, {}, {"flops": 9}, where=(0, False))
            done = sessions._on_launch(launch)  # what the JIT does around a GPU launch: 4.5 ms
            done()  # 6.0 ms
    assert "cuEventSynchronize" not in fake.calls  # recording never waits for the GPU
    assert fake.calls.count("cuEventCreate") == 6
    proton.finalize()
    record = proton.read("events.json")
    assert (record["clock"], record["device"]) == ("cuda", "Fake GPU")
    outer = child(record["tree"], "outer")
    inner = child(outer, "inner")
    kernel = child(inner, "k [n=8]")
    assert (outer["time_ns"], inner["time_ns"], kernel["time_ns"]) == (7_500_000, 4_500_000, 1_500_000)
    assert all(n["clock"] == "cuda" for n in (outer, inner, kernel))
    assert outer["derived"] == {"gbyte/s": pytest.approx(0.4)}
    assert kernel["derived"] == {"tflop/s": pytest.approx(9 / 1.5e6 * 1e-3)}

    created = fake.calls.count("cuEventCreate")
    proton.start("again")
    with proton.scope("reused"):
        pass
    proton.finalize()
    assert fake.calls.count("cuEventCreate") == created  # the read events went back to the pool
    assert child(proton.read("again.json")["tree"], "reused")["time_ns"] == 1_500_000


def test_a_scope_around_interpreter_launches_is_timed_by_the_wall_clock_beside_a_gpu(monkeypatch, rng):
    fake = FakeDriver()
    monkeypatch.setattr(clocks, "_driver", lambda: fake)
    proton.start("mixed")
    with proton.scope("numpy kernels"):
        launch_add(rng, 200)
    proton.finalize()
    record = proton.read("mixed.json")
    scope = child(record["tree"], "numpy kernels")
    assert record["clock"] == scope["clock"] == "interpreter"
    assert scope["time_ns"] >= child(scope, "add_kernel")["time_ns"] > 0


# -- on the GPU ------------------------------------------------------------------------------


def cuda_torch():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device visible")
    return torch


@pytest.mark.gpu
def test_cuda_events_time_kernels_and_torch_work_in_scopes(rng):
    torch = cuda_torch()
    n = 1 << 24
    x = torch.rand(n, device="cuda")
    y = torch.rand(n, device="cuda")
    out = torch.full_like(x, float("nan"))
    add_kernel[(kl.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)  # compile outside the profile
    proton.start("gpu", hook="triton")
    for _ in range(5):
        with proton.scope("add", {"bytes": 12 * n}):
            add_kernel[(kl.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
    with proton.scope("torch"):
        z = torch.sin(x) @ torch.ones(n, device="cuda")  # torch work only
    proton.finalize()
    torch.testing.assert_close(out, x + y, rtol=0, atol=0)
    assert torch.isfinite(z)
    record = proton.read("gpu.json")
    assert record["clock"] == "cuda" and torch.cuda.get_device_name() in record["device"]
    add = child(record["tree"], "add")
    kernel = child(add, f"add [n={n}]")
    assert add["count"] == kernel["count"] == 5 and kernel["clock"] == "cuda"
    assert add["time_ns"] >= kernel["time_ns"] * 0.99 > 0  # a scope's span holds its kernels
    for node in (add, kernel):  # 3 arrays of n floats per launch, against DRAM's few TB/s
        assert 100 < node["derived"]["gbyte/s"] < 10_000
    assert child(record["tree"], "torch")["time_ns"] > 0


@pytest.mark.gpu
def test_a_matmul_scope_reaches_a_sane_tflops_on_the_gpu():
    torch = cuda_torch()
    M = N = K = 4096
    a = torch.randn(M, K, device="cuda", dtype=torch.float16)
    b = torch.randn(K, N, device="cuda", dtype=torch.float16)
    c = a @ b  # cuBLAS warm-up
    proton.start("cublas")
    for _ in range(10):
        with proton.scope(f"cublas [M={M}]", {"flops16": 2 * M * N * K}):
            c = a @ b
    proton.finalize()
    node = child(proton.read("cublas.json")["tree"], f"cublas [M={M}]")
    tflops = node["derived"]["tflop16/s"]
    assert node["clock"] == "cuda" and node["count"] == 10
    assert 50 < tflops < 2000, f"{tflops:.1f} TFLOP/s is no fp16 matmul on an H100/H200"
    torch.testing.assert_close(c.float(), a.float() @ b.float(), rtol=2e-2, atol=0.5)


def test_the_viewer_prints_the_tree_tutorial_09_asks_for(rng, capsys):
    import kernellab.profiler.viewer as proton_viewer

    n = int(rng.integers(100, 400))
    proton.start("viewed", hook="triton")
    for _ in range(2):
        with proton.scope("add scope", {"flops16": 4 * n}):
            launch_add(rng, n)
    proton.finalize()
    tree, metrics = proton_viewer.parse(["tflop16/s", "time/ms", "count"], "viewed.hatchet")
    assert metrics == ["tflop16/s", "time/ms", "count"] and tree["name"] == "viewed"
    proton_viewer.print_tree(tree, metrics)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "viewed: interpreter time (wall clock)"
    scope = child(tree["tree"], "add scope")
    rate, ms, count, name = lines[2].split(maxsplit=3)
    assert name == "add scope" and int(count) == 2
    assert float(ms) == pytest.approx(scope["time_ns"] / 1e6, rel=1e-5)
    assert float(rate) == pytest.approx(8 * n / scope["time_ns"] * 1e-3, rel=1e-5)
    rate, ms, count, name = lines[3].split(maxsplit=3)
    assert (rate, int(count), name) == ("-", 2, f"add [n={n}]")  # no flops16 named
    with pytest.raises(ValueError, match="knows"):
        proton_viewer.parse(["speed"], "viewed.json")


@pytest.mark.gpu
def test_a_kernellab_matmul_is_named_and_rated_by_its_launch_metadata_on_the_gpu():
    torch = cuda_torch()

    def metadata(grid, kernel, args):
        M, N, K = args["M"], args["N"], args["K"]
        traffic = 2 * (M * K + K * N + M * N)
        return {"name": f"matmul [M={M}]", "flops16": 2 * M * N * K, "bytes": traffic}

    profiled = kl.jit(launch_metadata=metadata)(matmul_kernel.fn)
    M = N = K = 2048
    a = torch.randn(M, K, device="cuda", dtype=torch.float16)
    b = torch.randn(K, N, device="cuda", dtype=torch.float16)
    c = torch.full((M, N), float("nan"), device="cuda", dtype=torch.float16)

    def run():
        grid = (kl.cdiv(M, 128) * kl.cdiv(N, 128),)
        profiled[grid](a, b, c, M, N, K, *a.stride(), *b.stride(), *c.stride(), BLOCK_SIZE_M=128,
                       BLOCK_SIZE_N=128, BLOCK_SIZE_K=32, GROUP_SIZE_M=8, ACTIVATION="")  # fmt: skip

    run()  # compile outside the profile
    proton.start("kl-matmul", hook="triton")
    for _ in range(5):
        run()
    proton.finalize()
    torch.testing.assert_close(c.float(), a.float() @ b.float(), rtol=2e-2, atol=0.5)
    kernel = child(proton.read("kl-matmul.json")["tree"], f"matmul [M={M}]")
    assert kernel["kind"] == "kernel" and kernel["count"] == 5 and kernel["clock"] == "cuda"
    assert kernel["metrics"]["flops16"] == 5 * 2 * M * N * K
    tflops = kernel["derived"]["tflop16/s"]
    assert 1 < tflops < 1000, f"{tflops:.1f} TFLOP/s: no fp16 matmul runs at that rate on an H100/H200"
    assert 0 < kernel["derived"]["gbyte/s"] < 10_000
