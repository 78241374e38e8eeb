"""`@kl.jit(launch_metadata=...)` and launch hooks: what a profiler sees of each launch."""

import numpy as np
import pytest

import kernellab as kl
import kernellab.language as tl
from kernellab.runtime.launch_hooks import ENTER_HOOKS, on_launch

CALLS = []


def add_metadata(grid, kernel, args):
    CALLS.append(grid)
    n = args["n"]
    return {"name": f"{kernel.name} [n={n}]", "flops": n, "bytes": 3 * n * args["x_ptr"].itemsize}


@kl.jit(launch_metadata=add_metadata)
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


def test_hooks_receive_the_kernels_launch_metadata(rng):
    CALLS.clear()
    n = int(rng.integers(300, 900))
    x, y = rng.random((2, n), dtype=np.float32)
    out = np.full(n, np.nan, np.float32)
    add_kernel[(kl.cdiv(n, 128),)](x, y, out, n, BLOCK=128)
    assert CALLS == []  # no hook: launch_metadata is not even called
    seen = []
    with on_launch(seen.append):
        add_kernel[lambda meta: (kl.cdiv(n, meta["BLOCK"]),)](x, y, out, n, BLOCK=128)
    assert ENTER_HOOKS == []
    np.testing.assert_array_equal(out, (x.astype(np.float64) + y).astype(np.float32))  # one rounding
    (launch,) = seen
    assert launch.name == f"add_kernel [n={n}]" and launch.grid == (kl.cdiv(n, 128), 1, 1)
    assert launch.metadata == {"name": launch.name, "flops": n, "bytes": 12 * n}
    assert launch.args["BLOCK"] == 128 and launch.args["out_ptr"] is out
    assert launch.kernel.name == "add_kernel"


def test_a_kernel_without_launch_metadata_is_named_after_itself(rng):
    plain = kl.jit(add_kernel.fn)
    x = rng.random(64, dtype=np.float32)
    seen = []
    with on_launch(seen.append):
        plain[(1,)](x, x, np.empty_like(x), 64, BLOCK=64)
    assert [(s.name, s.metadata) for s in seen] == [("add_kernel", {})]


def test_bad_launch_metadata_says_what_to_return():
    with pytest.raises(TypeError, match="must be a function"):
        kl.jit(launch_metadata={"name": "x"})(add_kernel.fn)
    bad = kl.jit(launch_metadata=lambda grid, kernel, args: ["flops"])(add_kernel.fn)
    x = np.ones(16, np.float32)
    with on_launch(lambda launch: None), pytest.raises(TypeError, match="must return a dict"):
        bad[(1,)](x, x, np.empty_like(x), 16, BLOCK=16)
