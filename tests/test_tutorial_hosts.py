"""The tutorials' host code on torch tensors, as the tutorials write it (only imports changed).

tests/test_tutorials.py checks the tutorial kernels on numpy arrays; this file runs the programs
around them: the device from `driver.active`, tutorial 02's occupancy arithmetic (`warmup`,
`_init_handles`, `n_regs`, `metadata.shared`, device properties) and its launch of the compiled
kernel, tutorial 03's autotuned matmul with its fp8 branch, tutorial 04's seeded dropout,
tutorial 05 as a `torch.autograd.Function` (forward and backward, its locks included), tutorial
07's libdevice asin with its `extern_libs` launch (whose path, inside Triton's source tree, is
missing here: kernellab warns and runs its own asin), tutorial 08's grouped GEMM (one persistent launch over tables of device addresses), tutorial 11's
programmatic dependent launch, and the `perf_report` benchmark tables. The device is the one `driver.active` gives:
the GPU where there is one (the lead's run), else the CPU and the interpreter; the `cpu`
variants run the interpreter on a GPU machine too.
"""

import inspect
import os
from pathlib import Path

import numpy as np
import pytest

import kernellab as triton
import kernellab.language as tl
from kernellab.language.extra import libdevice
from tests.test_tutorials import (
    _layer_norm_bwd_dwdb,
    _layer_norm_bwd_dx_fused,
    _layer_norm_fwd_fused,
    _seeded_dropout,
    add_kernel,
    matmul_kernel,
    softmax_kernel,
)

torch = pytest.importorskip("torch")

ACTIVE = triton.runtime.driver.active.get_active_torch_device()
DEVICES = [pytest.param(ACTIVE, id=ACTIVE.type, marks=[pytest.mark.gpu] if ACTIVE.type == "cuda" else [])]
if ACTIVE.type != "cpu":
    DEVICES.append(pytest.param(torch.device("cpu"), id="cpu"))


def is_cuda() -> bool:
    return triton.runtime.driver.active.get_current_target().backend == "cuda"


def small_bench(ms_of, x_name: str, x_vals, plot_name: str, ylabel: str, to_unit):
    """A tutorial-style `perf_report` sweep over `x_vals` of Triton against torch."""

    @triton.testing.perf_report(
        triton.testing.Benchmark(
            x_names=[x_name], x_vals=x_vals, x_log=True, line_arg="provider", line_vals=["triton", "torch"],
            line_names=["Triton", "Torch"], styles=[("blue", "-"), ("green", "-")], ylabel=ylabel,
            plot_name=plot_name, args={},
        )
    )  # fmt: skip
    def benchmark(provider, **x):
        quantiles = [0.5, 0.2, 0.8]
        ms, min_ms, max_ms = triton.testing.do_bench(ms_of(provider, **x), quantiles=quantiles, warmup=1, rep=5)
        return to_unit(ms, **x), to_unit(max_ms, **x), to_unit(min_ms, **x)

    return benchmark


def assert_table(capsys, plot_name: str, n_rows: int) -> None:
    out = capsys.readouterr().out
    assert f"{plot_name}:" in out and "Triton" in out and "Torch" in out, out
    table = out.split(f"{plot_name}:", 1)[1].strip().splitlines()
    assert len(table) >= n_rows + 1, out


# -- 01 --------------------------------------------------------------------------------------


def add(x, y):
    output = torch.empty_like(x)
    n_elements = output.numel()
    grid = lambda meta: (triton.cdiv(n_elements, meta["BLOCK_SIZE"]),)  # noqa: E731
    add_kernel[grid](x, y, output, n_elements, BLOCK_SIZE=1024)
    return output


@pytest.mark.parametrize("device", DEVICES)
def test_01_vector_add_host(device, capsys):
    torch.manual_seed(int(np.random.default_rng().integers(2**31)))
    x, y = torch.rand(9843, device=device), torch.rand(9843, device=device)
    torch.testing.assert_close(add(x, y), x + y, rtol=0, atol=0)

    def ms_of(provider, size):
        a, b = torch.rand(size, device=device), torch.rand(size, device=device)
        return (lambda: add(a, b)) if provider == "triton" else (lambda: a + b)

    bench = small_bench(ms_of, "size", [2**10, 2**12], "vector-add-performance", "GB/s",
                        lambda ms, size: 3 * size * 4 * 1e-9 / (ms * 1e-3))  # fmt: skip
    bench.run(print_data=True, show_plots=False)
    assert_table(capsys, "vector-add-performance", 2)


# -- 02 --------------------------------------------------------------------------------------


def softmax(x, properties):
    """Tutorial 02's host: size a persistent grid from occupancy, launch the compiled kernel."""
    n_rows, n_cols = x.shape
    BLOCK_SIZE = triton.next_power_of_2(n_cols)
    num_warps, num_stages = 8, 2
    y = torch.empty_like(x)
    kernel = softmax_kernel.warmup(y, x, x.stride(0), y.stride(0), n_rows, n_cols, BLOCK_SIZE=BLOCK_SIZE,
                                   num_stages=num_stages, num_warps=num_warps, grid=(1,))  # fmt: skip
    kernel._init_handles()
    n_regs = kernel.n_regs
    size_smem = kernel.metadata.shared
    occupancy = properties["max_num_regs"] // (n_regs * properties["warpSize"] * num_warps)
    occupancy = min(occupancy, properties["max_shared_mem"] // max(size_smem, 1))
    num_programs = min(properties["multiprocessor_count"] * occupancy, n_rows)
    kernel[(num_programs, 1, 1)](y, x, x.stride(0), y.stride(0), n_rows, n_cols, BLOCK_SIZE, num_stages)
    return y


@pytest.mark.parametrize("device", DEVICES)
def test_02_fused_softmax_host(device, capsys):
    properties = triton.runtime.driver.active.utils.get_device_properties(device.index)
    assert set(properties) >= {"multiprocessor_count", "max_num_regs", "max_shared_mem", "warpSize"}
    torch.manual_seed(int(np.random.default_rng().integers(2**31)))
    x = torch.randn(183, 781, device=device)
    torch.testing.assert_close(softmax(x, properties), torch.softmax(x, axis=1), rtol=1e-5, atol=1e-7)

    def ms_of(provider, N):
        a = torch.randn(64, N, device=device)
        return (lambda: softmax(a, properties)) if provider == "triton" else (lambda: torch.softmax(a, axis=-1))

    bench = small_bench(ms_of, "N", [256, 512], "softmax-performance", "GB/s",
                        lambda ms, N: 2 * 64 * N * 4 * 1e-9 / (ms * 1e-3))  # fmt: skip
    bench.run(print_data=True, show_plots=False)
    assert_table(capsys, "softmax-performance", 2)


# -- 03 --------------------------------------------------------------------------------------


def matmul(a, b):
    M, K = a.shape
    K, N = b.shape
    c = torch.empty((M, N), device=a.device, dtype=torch.float16)
    grid = lambda META: (triton.cdiv(M, META["BLOCK_SIZE_M"]) * triton.cdiv(N, META["BLOCK_SIZE_N"]),)  # noqa: E731
    matmul_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                        c.stride(0), c.stride(1), ACTIVATION="")  # fmt: skip
    return c


@pytest.mark.parametrize("device", DEVICES)
def test_03_matmul_host_with_the_fp8_branch(device):
    torch.manual_seed(int(np.random.default_rng().integers(2**31)))
    a = torch.randn((72, 48), device=device, dtype=torch.float16)
    b = torch.randn((48, 56), device=device, dtype=torch.float16)
    want = (a.double() @ b.double()).half()
    torch.testing.assert_close(matmul(a, b), want, atol=1e-2, rtol=2**-10)
    # the tutorial's fp8 branch (taken where the target is CUDA: driver.active says so without a GPU)
    if hasattr(torch, "float8_e5m2") and is_cuda():
        if device.type == "cuda" and torch.cuda.get_device_capability(device)[0] < 9:
            pytest.skip("fp8 tensor-core dots need sm_89 or newer")
        a8, b8 = a.to(torch.float8_e5m2), b.T.contiguous().T.to(torch.float8_e5m2)
        want8 = (a8.double() @ b8.double()).half()  # fp8 products are exact; one fp16 rounding
        torch.testing.assert_close(matmul(a8, b8), want8, atol=1e-2, rtol=2**-10)


# -- 04 --------------------------------------------------------------------------------------


@pytest.mark.parametrize("device", DEVICES)
def test_04_seeded_dropout_host(device):
    x = torch.randn(size=(10,), device=device)
    outputs = []
    for seed in (123, 123, 512):
        out = torch.empty_like(x)
        _seeded_dropout[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), 0.5, seed, BLOCK_SIZE=1024)
        outputs.append(out)
    torch.testing.assert_close(outputs[0], outputs[1], rtol=0, atol=0)  # same seed, same mask
    kept = outputs[0] != 0
    torch.testing.assert_close(outputs[0][kept], x[kept] * 2)
    assert not torch.equal(outputs[0] != 0, outputs[2] != 0) or x.numel() < 4


# -- 05 --------------------------------------------------------------------------------------


class LayerNorm(torch.autograd.Function):
    """Tutorial 05's host class: the fused forward, and the backward with locked group sums."""

    @staticmethod
    def forward(ctx, x, normalized_shape, weight, bias, eps):
        y = torch.empty_like(x)
        x_arg = x.reshape(-1, x.shape[-1])
        M, N = x_arg.shape
        mean = torch.empty((M,), dtype=torch.float32, device=x.device)
        rstd = torch.empty((M,), dtype=torch.float32, device=x.device)
        MAX_FUSED_SIZE = 65536 // x.element_size()
        BLOCK_SIZE = min(MAX_FUSED_SIZE, triton.next_power_of_2(N))
        if N > BLOCK_SIZE:
            raise RuntimeError("This layer norm doesn't support feature dim >= 64KB.")
        num_warps = min(max(BLOCK_SIZE // 256, 1), 8)
        _layer_norm_fwd_fused[(M,)](x_arg, y, weight, bias, mean, rstd, x_arg.stride(0), N, eps,
                                    BLOCK_SIZE=BLOCK_SIZE, num_warps=num_warps, num_ctas=1)  # fmt: skip
        ctx.save_for_backward(x, weight, bias, mean, rstd)
        ctx.BLOCK_SIZE, ctx.num_warps = BLOCK_SIZE, num_warps
        return y

    @staticmethod
    def backward(ctx, dy):
        x, w, b, m, v = ctx.saved_tensors
        N = w.shape[0]
        GROUP_SIZE_M = 64
        if N <= 8192:
            GROUP_SIZE_M = 96
        if N <= 4096:
            GROUP_SIZE_M = 128
        if N <= 1024:
            GROUP_SIZE_M = 256
        locks = torch.zeros(2 * GROUP_SIZE_M, dtype=torch.int32, device=w.device)
        _dw = torch.zeros((GROUP_SIZE_M, N), dtype=x.dtype, device=w.device)
        _db = torch.zeros((GROUP_SIZE_M, N), dtype=x.dtype, device=w.device)
        dw = torch.empty((N,), dtype=w.dtype, device=w.device)
        db = torch.empty((N,), dtype=w.dtype, device=w.device)
        dx = torch.empty_like(dy)
        x_arg = x.reshape(-1, x.shape[-1])
        M, N = x_arg.shape
        _layer_norm_bwd_dx_fused[(M,)](dx, dy, _dw, _db, x, w, m, v, locks, x_arg.stride(0), N,
                                       BLOCK_SIZE_N=ctx.BLOCK_SIZE, GROUP_SIZE_M=GROUP_SIZE_M,
                                       num_warps=ctx.num_warps)  # fmt: skip
        grid = lambda meta: (triton.cdiv(N, meta["BLOCK_SIZE_N"]),)  # noqa: E731
        _layer_norm_bwd_dwdb[grid](_dw, _db, dw, db, min(GROUP_SIZE_M, M), N, BLOCK_SIZE_M=32,
                                   BLOCK_SIZE_N=128, num_ctas=1)  # fmt: skip
        return dx, None, dw, db, None


@pytest.mark.parametrize("device", DEVICES)
def test_05_layer_norm_host(device):
    torch.manual_seed(int(np.random.default_rng().integers(2**31)))
    M, N = 24, 300
    x = -2.3 + 0.5 * torch.randn((M, N), dtype=torch.float16, device=device)
    weight = torch.rand((N,), dtype=torch.float16, device=device) + 0.5
    bias = torch.rand((N,), dtype=torch.float16, device=device) - 0.5
    x.requires_grad_(True)
    weight.requires_grad_(True)
    bias.requires_grad_(True)
    y = LayerNorm.apply(x, (N,), weight, bias, 1e-5)
    ref = [t.detach().double().requires_grad_() for t in (x, weight, bias)]
    want = torch.nn.functional.layer_norm(ref[0], (N,), ref[1], ref[2], 1e-5)
    torch.testing.assert_close(y.double(), want, rtol=2**-10, atol=2e-3)
    dy = 0.1 * torch.randn_like(x)
    y.backward(dy)
    want.backward(dy.double())
    # fp16 gradients: dx rounds once; dW and dB add M fp16-rounded terms in groups
    torch.testing.assert_close(x.grad.double(), ref[0].grad, rtol=2**-9, atol=2e-3)
    for got, expected in ((weight.grad, ref[1].grad), (bias.grad, ref[2].grad)):
        torch.testing.assert_close(got.double(), expected, rtol=2**-8, atol=1e-2)


# -- 07 extern functions: libdevice's asin, then the same launch with extern_libs --------------


@triton.jit
def asin_kernel(
    x_ptr,
    y_ptr,
    n_elements,
    BLOCK_SIZE: tl.constexpr,
):
    pid = tl.program_id(axis=0)
    block_start = pid * BLOCK_SIZE
    offsets = block_start + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    x = libdevice.asin(x)
    tl.store(y_ptr + offsets, x, mask=mask)


def is_hip() -> bool:
    return triton.runtime.driver.active.get_current_target().backend == "hip"


@pytest.mark.parametrize("device", DEVICES)
def test_07_extern_functions_host(device, capsys):
    torch.manual_seed(int(np.random.default_rng().integers(2**31)))
    size = 98432
    x = torch.rand(size, device=device)
    output_triton = torch.zeros(size, device=device)
    output_torch = torch.asin(x)
    n_elements = output_torch.numel()
    grid = lambda meta: (triton.cdiv(n_elements, meta["BLOCK_SIZE"]),)  # noqa: E731
    asin_kernel[grid](x, output_triton, n_elements, BLOCK_SIZE=1024)
    print(f"The maximum difference between torch and triton is {torch.max(torch.abs(output_torch - output_triton))}")
    plain = output_triton

    current_file = inspect.getfile(inspect.currentframe())
    current_dir = Path(os.path.dirname(os.path.abspath(current_file)))
    if is_cuda():
        libdir = current_dir.parent.parent / "third_party/nvidia/backend/lib"
        extern_libs = {"libdevice": str(libdir / "libdevice.10.bc")}
    elif is_hip():
        libdir = current_dir.parent.parent / "third_party/amd/backend/lib"
        extern_libs = {}
        libs = ["ocml", "ockl"]
        for lib in libs:
            extern_libs[lib] = str(libdir / f"{lib}.bc")
    else:
        raise RuntimeError("unknown backend")

    output_triton = torch.empty_like(x)
    with pytest.warns(UserWarning) as caught:
        asin_kernel[grid](x, output_triton, n_elements, BLOCK_SIZE=1024, extern_libs=extern_libs)
    print(f"The maximum difference between torch and triton is {torch.max(torch.abs(output_torch - output_triton))}")

    message = str(caught[0].message)
    assert extern_libs["libdevice"] in message and "kernellab's own libdevice implementations" in message
    assert caught[0].filename == __file__  # the launch's line, not kernellab's
    assert capsys.readouterr().out.count("The maximum difference between torch and triton is") == 2
    # both launches ran kernellab's asin: the same bits, within an ulp of asin in float64
    torch.testing.assert_close(output_triton, plain, rtol=0, atol=0)
    expected = np.arcsin(x.double().cpu().numpy())
    error = np.abs(output_triton.double().cpu().numpy() - expected)
    assert (error <= np.finfo(np.float32).eps * np.abs(expected)).all(), error.max()


# -- 08 grouped GEMM: one persistent launch for a group of matmuls of different shapes ---------
# The kernel reads each problem's A, B and C from tables of raw device addresses, which the
# interpreter refuses by design (it checks every access against the arguments' buffers), so it
# runs on the GPU only (the CPU backend runs it too, from torch CPU tensors' addresses).

def _grouped_configs():
    return [triton.Config({"BLOCK_SIZE_M": m, "BLOCK_SIZE_N": n, "BLOCK_SIZE_K": 32, "NUM_SM": sms})
            for m, n in ((64, 64), (128, 128)) for sms in (84, 128)]  # fmt: skip


@triton.autotune(configs=_grouped_configs(), key=["group_size"])
@triton.jit
def grouped_matmul_kernel(group_a_ptrs, group_b_ptrs, group_c_ptrs, group_gemm_sizes, g_lds, group_size,
                          NUM_SM: tl.constexpr, BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr,
                          BLOCK_SIZE_K: tl.constexpr):  # fmt: skip
    tile_idx = tl.program_id(0)
    last_problem_end = 0
    for g in range(group_size):
        gm = tl.load(group_gemm_sizes + g * 3)
        gn = tl.load(group_gemm_sizes + g * 3 + 1)
        gk = tl.load(group_gemm_sizes + g * 3 + 2)
        num_m_tiles = tl.cdiv(gm, BLOCK_SIZE_M)
        num_n_tiles = tl.cdiv(gn, BLOCK_SIZE_N)
        num_tiles = num_m_tiles * num_n_tiles
        # the tiles of problem g this program owns: every NUM_SM-th one
        while tile_idx >= last_problem_end and tile_idx < last_problem_end + num_tiles:
            lda = tl.load(g_lds + g * 3)
            ldb = tl.load(g_lds + g * 3 + 1)
            ldc = tl.load(g_lds + g * 3 + 2)
            a_ptr = tl.load(group_a_ptrs + g).to(tl.pointer_type(tl.float16))
            b_ptr = tl.load(group_b_ptrs + g).to(tl.pointer_type(tl.float16))
            c_ptr = tl.load(group_c_ptrs + g).to(tl.pointer_type(tl.float16))
            tile_in_gemm = tile_idx - last_problem_end
            tile_m = tile_in_gemm // num_n_tiles
            tile_n = tile_in_gemm % num_n_tiles
            offs_am = tile_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
            offs_bn = tile_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
            offs_k = tl.arange(0, BLOCK_SIZE_K)
            a_ptrs = a_ptr + offs_am[:, None] * lda + offs_k[None, :]
            b_ptrs = b_ptr + offs_k[:, None] * ldb + offs_bn[None, :]
            accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
            for kk in range(0, tl.cdiv(gk, BLOCK_SIZE_K)):
                a = tl.load(a_ptrs, mask=(offs_am[:, None] < gm) & (offs_k[None, :] < gk - kk * BLOCK_SIZE_K), other=0.0)
                b = tl.load(b_ptrs, mask=(offs_k[:, None] < gk - kk * BLOCK_SIZE_K) & (offs_bn[None, :] < gn), other=0.0)
                accumulator += tl.dot(a, b)
                a_ptrs += BLOCK_SIZE_K
                b_ptrs += BLOCK_SIZE_K * ldb
            c = accumulator.to(tl.float16)
            c_ptrs = c_ptr + ldc * offs_am[:, None] + offs_bn[None, :]
            tl.store(c_ptrs, c, mask=(offs_am[:, None] < gm) & (offs_bn[None, :] < gn))
            tile_idx += NUM_SM
        last_problem_end = last_problem_end + num_tiles


def group_gemm_fn(group_A, group_B, device):
    group_size = len(group_A)
    A_addrs, B_addrs, C_addrs, g_sizes, g_lds, group_C = [], [], [], [], [], []
    for A, B in zip(group_A, group_B):
        M, K = A.shape
        K, N = B.shape
        C = torch.full((M, N), float("nan"), device=device, dtype=A.dtype)
        group_C.append(C)
        A_addrs.append(A.data_ptr())
        B_addrs.append(B.data_ptr())
        C_addrs.append(C.data_ptr())
        g_sizes += [M, N, K]
        g_lds += [A.stride(0), B.stride(0), C.stride(0)]
    d_a_ptrs = torch.tensor(A_addrs, device=device)
    d_b_ptrs = torch.tensor(B_addrs, device=device)
    d_c_ptrs = torch.tensor(C_addrs, device=device)
    d_g_sizes = torch.tensor(g_sizes, dtype=torch.int32, device=device)
    d_g_lds = torch.tensor(g_lds, dtype=torch.int32, device=device)
    grid = lambda META: (META["NUM_SM"],)  # noqa: E731
    grouped_matmul_kernel[grid](d_a_ptrs, d_b_ptrs, d_c_ptrs, d_g_sizes, d_g_lds, group_size)
    return group_C


@pytest.mark.parametrize("device", [p for p in DEVICES if p.id == "cuda"])
def test_08_grouped_gemm_host(device):
    torch.manual_seed(int(np.random.default_rng().integers(2**31)))
    group_m, group_n, group_k = [160, 64, 256, 33], [96, 200, 64, 128], [64, 96, 128, 48]
    group_A = [torch.rand((m, k), device=device, dtype=torch.float16) for m, k in zip(group_m, group_k)]
    group_B = [torch.rand((k, n), device=device, dtype=torch.float16) for k, n in zip(group_k, group_n)]
    tri_out = group_gemm_fn(group_A, group_B, device)
    for A, B, C in zip(group_A, group_B, tri_out):
        want = A.double() @ B.double()
        # fp32 accumulation, one fp16 rounding of C
        torch.testing.assert_close(C.double(), want, rtol=2**-10, atol=1e-3 * A.shape[1] ** 0.5)


# -- 11 programmatic dependent launch: a kernel starts while the one before it finishes -------


@triton.jit
def pdl_add_kernel(x_ptr, y_ptr, output_ptr, n_elements, BLOCK_SIZE: tl.constexpr, USE_GDC: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    if USE_GDC:
        tl.extra.cuda.gdc_wait()  # what the previous kernel wrote is visible after this
    x = tl.load(x_ptr + offsets, mask=mask)
    if USE_GDC:
        tl.extra.cuda.gdc_launch_dependents()  # the next kernel may start now
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(output_ptr + offsets, x + y, mask=mask)


def pdl_add(x, y, launch_pdl=True):
    output = torch.empty_like(x)
    n_elements = output.numel()
    grid = lambda meta: (triton.cdiv(n_elements, meta["BLOCK_SIZE"]),)  # noqa: E731
    pdl_add_kernel[grid](x, y, output, n_elements, BLOCK_SIZE=1024, USE_GDC=launch_pdl, launch_pdl=launch_pdl)
    return output


def supports_pdl() -> bool:
    return is_cuda() and torch.cuda.get_device_capability()[0] >= 9


@pytest.mark.parametrize("device", DEVICES)
def test_11_programmatic_dependent_launch_host(device, capsys):
    torch.manual_seed(int(np.random.default_rng().integers(2**31)))
    pdl = device.type == "cuda" and supports_pdl()
    x = torch.rand(98432, device=device)
    y = torch.rand(98432, device=device)
    # a chain of launches, each reading what the one before wrote
    out = x
    for _ in range(4):
        out = pdl_add(out, y, launch_pdl=pdl)
    torch.testing.assert_close(out.double(), x.double() + 4 * y.double(), rtol=1e-6, atol=1e-6)

    def ms_of(provider, size):
        a = torch.rand(size, device=device)
        b = torch.rand(size, device=device)
        if provider == "triton":
            return lambda: pdl_add(pdl_add(a, b, launch_pdl=pdl), b, launch_pdl=pdl)
        return lambda: (a + b) + b

    bench = small_bench(ms_of, "size", [2**12, 2**16], "pdl-add", "GB/s",
                        lambda ms, size: 6 * size * 4 * 1e-9 / (ms * 1e-3))  # fmt: skip
    bench.run(print_data=True, show_plots=False)
    assert_table(capsys, "pdl-add", 2)
