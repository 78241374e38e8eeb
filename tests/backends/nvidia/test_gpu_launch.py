"""Launches on a real NVIDIA GPU (run with `-m gpu`; skipped without a GPU or torch).

Hand-written LLVM IR kernels go through PTX and cubin and run on torch tensors, so these tests
check the driver layer and the launcher independently of the TTGIR lowering; the last ones
launch @kl.jit kernels end to end when the lowering is available.
"""

import os
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest
from llvm_samples import SCALE_BIAS, SHARED_64K, VECTOR_ADD

import kernellab as kl
from kernellab.backends.nvidia import driver
from kernellab.backends.arguments import ArgumentError

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not driver.available(), reason="no NVIDIA GPU/driver visible"),
]

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


@pytest.fixture(scope="module")
def torch(cuda_torch):
    return cuda_torch


def randn(torch, rng, n, dtype=np.float32):
    return torch.from_numpy(rng.standard_normal(n).astype(dtype)).cuda()


def test_the_visible_gpu_is_described():
    info = driver.device_info(0)
    assert info.sm_count > 0 and info.capability[0] >= 7
    assert info.max_shared_per_block_optin >= info.max_shared_per_block == 48 * 1024
    assert kl.compile(VECTOR_ADD, target="cuda").metadata.target == info.arch


def test_llvm_ir_vector_add_runs_on_torch_tensors(torch):
    rng = np.random.default_rng()
    ck = kl.compile(VECTOR_ADD, target="cuda", num_warps=4)
    for n in (1, 1000, 1 << 20):
        x, y = randn(torch, rng, n), randn(torch, rng, n)
        out = torch.full((n,), float("nan"), device="cuda")
        ck[(kl.cdiv(n, 128),)](x, y, out, n)
        torch.cuda.synchronize()
        assert torch.equal(out, x + y)


def test_scalars_of_every_width_reach_the_kernel(torch):
    rng = np.random.default_rng()
    ck = kl.compile(SCALE_BIAS, target="cuda", num_warps=2)
    n = 3000
    x = randn(torch, rng, n)
    out = torch.full((n,), float("nan"), device="cuda")
    scale, bias, flag = float(rng.uniform(0.5, 2)), float(rng.uniform(-3, 3)), 3
    ck[(kl.cdiv(n, 64),)](x, flag, scale, out, n, bias)
    torch.cuda.synchronize()
    expected = x.cpu().numpy() * np.float32(scale) + np.float32(bias) * np.float32(flag)
    np.testing.assert_allclose(out.cpu().numpy(), expected, rtol=1e-6, atol=1e-6)


def test_launches_go_on_torchs_current_stream(torch, monkeypatch):
    rng = np.random.default_rng()
    ck = kl.compile(VECTOR_ADD, target="cuda")
    n = 1 << 16
    x, y = randn(torch, rng, n), randn(torch, rng, n)
    out = torch.full((n,), float("nan"), device="cuda")
    ck[(kl.cdiv(n, 128),)](x, y, out, n)  # loads the module
    launcher = ck._launcher
    seen = []
    real = launcher._launch

    def spy(*args):
        seen.append(args[8])
        return real(*args)

    monkeypatch.setattr(launcher, "_launch", spy)
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        y2 = y * 2  # queued on `stream`: the kernel must run after it
        ck[(kl.cdiv(n, 128),)](x, y2, out, n)
    stream.synchronize()
    assert seen == [stream.cuda_stream]
    assert torch.equal(out, x + y * 2)
    ck[(kl.cdiv(n, 128),)](x, y, out, n)
    assert seen[-1] == torch.cuda.current_stream().cuda_stream


def test_cuda_array_interface_and_dlpack_objects_are_accepted(torch):
    rng = np.random.default_rng()
    ck = kl.compile(VECTOR_ADD, target="cuda")
    n = 4096
    x, y = randn(torch, rng, n), randn(torch, rng, n)
    out = torch.full((n,), float("nan"), device="cuda")

    class CAI:
        def __init__(self, t):
            self.t = t

        @property
        def __cuda_array_interface__(self):
            return self.t.__cuda_array_interface__

    class DLPack:
        def __init__(self, t):
            self.t = t

        def __dlpack__(self, **kwargs):
            return self.t.__dlpack__(**kwargs)

        def __dlpack_device__(self):
            return self.t.__dlpack_device__()

    torch.cuda.synchronize()
    ck[(kl.cdiv(n, 128),)](CAI(x), DLPack(y), CAI(out), n)
    torch.cuda.synchronize()
    assert torch.equal(out, x + y)


def test_a_cpu_tensor_in_a_gpu_launch_is_named(torch):
    ck = kl.compile(VECTOR_ADD, target="cuda")
    x = torch.ones(16, device="cuda")
    with pytest.raises(ArgumentError) as info:
        ck[(1,)](x, torch.ones(16), x, 16)
    assert "'arg1' is a CPU array but 'arg0' is on cuda:0" in str(info.value)


def test_shared_memory_past_48kb_is_opted_into(torch):
    ck = kl.compile(SHARED_64K, target="cuda", num_warps=4)
    assert ck.metadata.shared == 65536
    out = torch.full((128,), float("nan"), device="cuda")
    ck[(1,)](out)
    torch.cuda.synchronize()
    expected = (np.arange(128) + 1) % 128
    np.testing.assert_array_equal(out.cpu().numpy(), expected.astype(np.float32))


def test_too_much_shared_memory_is_refused_before_launch(torch):
    from kernellab.backends.nvidia.launcher import OutOfResources

    limit = driver.device_info(0).max_shared_per_block_optin
    ck = kl.compile(SHARED_64K.replace('"shared": 65536', f'"shared": {limit + 4096}'), target="cuda")
    with pytest.raises(OutOfResources, match="Reduce the BLOCK sizes or num_stages"):
        ck[(1,)](torch.empty(128, device="cuda"))


def test_an_illegal_address_says_the_context_is_lost():
    # in a child process: the error poisons the CUDA context for good
    code = textwrap.dedent(f'''
        import sys
        sys.path.insert(0, {os.path.dirname(__file__)!r})
        import torch
        import kernellab as kl
        from kernellab.backends.nvidia import driver
        from llvm_samples import WILD_STORE
        ck = kl.compile(WILD_STORE, target="cuda")
        out = torch.empty(4, device="cuda")
        try:
            ck[(1,)](out)
            driver.synchronize()
        except driver.CudaError as e:
            print("ERROR:", e)
            print("STICKY:", e.sticky)
    ''')
    # REPO first, the existing PYTHONPATH kept (on the device xdsl comes from it)
    path = os.pathsep.join(p for p in (REPO, os.environ.get("PYTHONPATH", "")) if p)
    env = {**os.environ, "PYTHONPATH": path}
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert "ERROR:" in run.stdout, run.stdout + run.stderr
    assert "CUDA_ERROR_ILLEGAL_ADDRESS" in run.stdout
    assert "context is lost" in run.stdout and "restart" in run.stdout
    assert "STICKY: True" in run.stdout




@kl.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: kl.language.constexpr):
    tl = kl.language
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


def test_jit_kernel_on_cuda_tensors_compiles_once_and_is_right(torch):
    rng = np.random.default_rng()
    add_kernel.cache.clear()
    for n in (100, 98432):
        x, y = randn(torch, rng, n), randn(torch, rng, n)
        out = torch.full((n,), float("nan"), device="cuda")
        add_kernel[lambda meta, n=n: (kl.cdiv(n, meta["BLOCK"]),)](x, y, out, n, BLOCK=1024)
        torch.cuda.synchronize()
        assert torch.equal(out, x + y)
    kernels = list(add_kernel.cache.values())
    assert all(k.metadata.target == driver.device_info(0).arch for k in kernels)
    assert len(kernels) <= 2  # n = 100 vs 98432 differ only in divisibility by 16


def test_jit_mixing_cpu_and_cuda_tensors_is_an_error(torch):
    x = torch.ones(64, device="cuda")
    with pytest.raises(ArgumentError, match="'y_ptr' is a CPU array but 'x_ptr' is on cuda:0"):
        add_kernel[(1,)](x, torch.ones(64), x, 64, BLOCK=64)


@kl.jit(do_not_specialize=["n"], do_not_specialize_on_alignment=["n"])
def scaled_add_kernel(x_ptr, y_ptr, out_ptr, n, alpha, BLOCK: kl.language.constexpr):
    tl = kl.language
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + tl.load(y_ptr + offs, mask=mask) * alpha, mask=mask)


def test_warm_launches_pass_each_calls_arguments(torch):
    """Repeated launches take the warm path (a generated binder, one cached launch per key) and
    each one computes with its own arguments: sizes on and off multiples of 16 (n is in both
    do_not_specialize lists: one compile for all of them), misaligned views, scalars, grids."""
    rng = np.random.default_rng()
    for table in (scaled_add_kernel.cache, scaled_add_kernel._launches):
        table.clear()
    base_x, base_y = randn(torch, rng, 1 << 16), randn(torch, rng, 1 << 16)
    for _ in range(40):
        n = int(rng.integers(1, 1 << 15))
        offset = int(rng.choice([0, 1, 4, 16]))  # element offsets: 4-, 16- and 64-byte aligned views
        x, y = base_x[offset : offset + n], base_y[offset : offset + n]
        alpha = float(rng.choice([0.5, 2.0, -4.0, 1.0]))  # powers of two: y * alpha is exact
        out = torch.full((n,), float("nan"), device="cuda")
        scaled_add_kernel[(kl.cdiv(n, 512),)](x, y, out, n, alpha, BLOCK=512)
        torch.cuda.synchronize()
        # y * alpha is exact, so the kernel rounds once: the float64 sum rounded to float32
        expected = (x.double() + y.double() * alpha).float()
        assert torch.equal(out, expected), (n, offset, alpha)
    assert 1 <= len(scaled_add_kernel.cache) <= 4  # x and y aligned to 16 bytes or not
    assert 1 <= len(scaled_add_kernel._launches) <= 4


def test_threads_launching_one_warm_kernel_each_pass_their_own_arguments(torch):
    """Four threads launch the same warm kernel at once, each with its own outputs and scales:
    every output is its own launch's (each thread packs its own parameter buffer, which the
    driver reads while the call has let the other threads run)."""
    rng = np.random.default_rng()
    n, threads, launches = 4096, 4, 200
    x, y = randn(torch, rng, n), randn(torch, rng, n)
    grid = (kl.cdiv(n, 512),)
    scaled_add_kernel[grid](x, y, torch.empty_like(x), n, 0.5, BLOCK=512)  # compiled and bound: warm
    torch.cuda.synchronize()
    outs = [[torch.full((n,), float("nan"), device="cuda") for _ in range(launches)] for _ in range(threads)]
    alphas = [[float(2.0 ** int(rng.integers(-6, 7))) for _ in range(launches)] for _ in range(threads)]
    start, errors = threading.Barrier(threads), []

    def launch_many(t: int):
        try:
            start.wait()
            for out, alpha in zip(outs[t], alphas[t]):
                scaled_add_kernel[grid](x, y, out, n, alpha, BLOCK=512)
        except BaseException as e:  # reported below, in the test's thread
            errors.append(e)

    workers = [threading.Thread(target=launch_many, args=(t,)) for t in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    torch.cuda.synchronize()
    assert not errors, errors
    for t in range(threads):
        for out, alpha in zip(outs[t], alphas[t]):
            # y * alpha is exact (a power of two), so the kernel rounds once
            assert torch.equal(out, (x.double() + y.double() * alpha).float()), (t, alpha)
