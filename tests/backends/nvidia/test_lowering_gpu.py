"""The lowering on a real GPU (`-m gpu`; skipped without one): every kernel of
test_lowering_cases.py runs through kl.jit on torch CUDA tensors and must agree with the
interpreter (or a numpy reference) on every element."""

from __future__ import annotations

import numpy as np
import pytest
from test_lowering_cases import BY_NAME, CASES, build, compare, expected

pytestmark = pytest.mark.gpu

_VIEWS = {2: "int16", 1: "int8"}


@pytest.fixture(scope="module")
def torch(cuda_torch):
    return cuda_torch


def _to_device(torch, a):
    if not isinstance(a, np.ndarray):
        return a
    if a.dtype.name in ("bfloat16", "float8_e4m3fn", "float8_e5m2"):
        t = torch.from_numpy(np.ascontiguousarray(a).view(_VIEWS[a.dtype.itemsize])).cuda()
        return t.view(getattr(torch, a.dtype.name))
    return torch.from_numpy(np.ascontiguousarray(a)).cuda()


def _to_host(torch, t, like: np.ndarray) -> np.ndarray:
    if like.dtype.name in ("bfloat16", "float8_e4m3fn", "float8_e5m2"):
        raw = t.view(getattr(torch, _VIEWS[like.dtype.itemsize])).cpu().numpy()
        return raw.view(like.dtype)
    return t.cpu().numpy()


def run_case(torch, case, rng):
    args, consts, grid = build(case, rng)
    want = expected(case, args, consts, grid)
    dev = [_to_device(torch, a) for a in args]
    case.kernel[grid](*dev, **consts, num_warps=case.num_warps)
    torch.cuda.synchronize()
    got = {i: _to_host(torch, dev[i], args[i]) for i in case.outputs}
    return got, want


@pytest.mark.parametrize("case", [c for c in CASES if c.outputs], ids=lambda c: c.name)
def test_case_matches_reference(torch, case):
    rng = np.random.default_rng()
    got, want = run_case(torch, case, rng)
    problems = compare(case, got, want)
    assert not problems, "\n".join(problems)


def test_device_print_prints_every_element_once(torch, capfd):
    case = BY_NAME["print"]
    args, consts, grid = build(case, np.random.default_rng())
    dev = [_to_device(torch, a) for a in args]
    case.kernel[grid](*dev, **consts)
    torch.cuda.synchronize()
    lines = [line for line in capfd.readouterr().out.splitlines() if line.startswith("pid")]
    expected_lines = {
        f"pid ({p}, 0, 0) idx ({i}) val: {args[0][i]:f}" for p in range(grid[0]) for i in range(args[0].size)
    }
    assert sorted(lines) == sorted(expected_lines)


def test_large_vector_add_is_exact(torch):
    from test_lowering_cases import vadd_k

    n = (1 << 24) + 3
    x = torch.randn(n, device="cuda")
    y = torch.randn(n, device="cuda")
    out = torch.full((n,), float("nan"), device="cuda")
    vadd_k[(-(-n // 1024),)](x, y, out, n, BLOCK=1024)
    torch.cuda.synchronize()
    assert torch.equal(out, x + y)


@pytest.mark.parametrize("elem", ["f16", "bf16"])
def test_16_bit_exchange_from_ttir(torch, elem):
    # PTX has no 16-bit atom.exch: the lowering's CAS loop, compiled from TTIR text
    from test_lowering_cases import xchg16_ttir

    import kernellab as kl

    dt = {"f16": torch.float16, "bf16": torch.bfloat16}[elem]
    p = torch.randn(256, device="cuda").to(dt)
    v = torch.randn(256, device="cuda").to(dt)
    old = torch.full((256,), float("nan"), device="cuda", dtype=dt)
    p0 = p.clone()
    kl.compile(xchg16_ttir(elem), target="cuda").run((1,), p, v, old)
    torch.cuda.synchronize()
    assert torch.equal(p[:250], v[:250]) and torch.equal(p[250:], p0[250:])
    assert torch.equal(old[:250], p0[:250]) and torch.isnan(old[250:]).all()


@pytest.mark.parametrize("kind", ["noop", "registers", "shuffle", "shuffle_select", "shared"])
def test_convert_layout_of_each_plan_kind_moves_every_element(torch, kind):
    # one ttg.convert_layout per conversion_plan kind (test_lowering.py checks the kind and
    # the PTX on the CPU); here the data must arrive: y == x element for element
    from test_lowering_cases import convert_ttgir

    import kernellab as kl

    x_host = np.random.default_rng().standard_normal((16, 64)).astype(np.float32)
    x = torch.from_numpy(x_host).cuda()
    y = torch.full((16, 64), float("nan"), device="cuda")
    kl.compile(convert_ttgir(kind), target="cuda").run((1,), x, y)
    torch.cuda.synchronize()
    np.testing.assert_array_equal(y.cpu().numpy(), x_host)
