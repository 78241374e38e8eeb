"""assert_close: compare a result with a reference on the host, whatever device and array type
each lives on, and say where they differ."""

from __future__ import annotations

import sys

import numpy as np

from kernellab.backends.arguments import as_numpy


def torch_to_host(t) -> np.ndarray:
    """A torch tensor (any device) as a host numpy array: detached, and upcast to float32 on its
    device first when numpy has no dtype for it (bf16, the fp8 formats)."""
    import torch  # already imported: `t` is a torch tensor

    t = t.detach()
    if t.is_floating_point() and t.dtype not in (torch.float16, torch.float32, torch.float64):
        t = t.to(torch.float32)
    return t.cpu().numpy()


def host_float64(x) -> np.ndarray:
    """`x` (numpy, torch on any device, a GPU array, a scalar or list) as a float64 host array."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(x, torch.Tensor):
        return torch_to_host(x).astype(np.float64)
    if hasattr(x, "__cuda_array_interface__") and not hasattr(x, "__array_interface__"):
        try:
            import torch
        except ImportError:
            raise TypeError(
                f"can't compare a {type(x).__name__} (a GPU array): copying it to the host needs "
                "torch; install torch, or copy it to the host first (CuPy: x.get(), Numba: "
                "x.copy_to_host())"
            ) from None
        return torch_to_host(torch.as_tensor(x, device="cuda")).astype(np.float64)
    array = as_numpy(x)  # CPU arrays of other libraries become numpy views
    return (np.asarray(x) if array is None else array).astype(np.float64)


def assert_close(actual, expected, atol=None, rtol=None, err_msg: str = "") -> None:
    """Fail unless |actual - expected| <= atol + rtol * |expected| everywhere (NaNs must match).

    Defaults follow Triton: atol=1e-2, rtol=0. The message counts the mismatches and shows the
    worst one with its index, so a failure says where to look.
    """
    atol = 1e-2 if atol is None else atol
    rtol = 0.0 if rtol is None else rtol
    a, e = host_float64(actual), host_float64(expected)
    if a.shape != e.shape:
        a, e = np.broadcast_arrays(a, e)
    with np.errstate(invalid="ignore"):
        err = np.abs(a - e)
        tol = atol + rtol * np.abs(e)
        bad = ~(err <= tol)
    same_nan = np.isnan(a) & np.isnan(e)
    same_inf = np.isinf(a) & (a == e)
    bad &= ~(same_nan | same_inf)
    if not bad.any():
        return
    count = int(bad.sum())
    excess = np.where(bad, np.nan_to_num(err - tol, nan=np.inf), -np.inf)
    worst = np.unravel_index(int(np.argmax(excess)), a.shape) if a.ndim else ()
    index = tuple(int(i) for i in worst)
    lines = [
        f"{err_msg}: " * bool(err_msg) + f"{count} of {a.size} elements differ "
        f"(atol={atol}, rtol={rtol})",
        f"worst at index {index}: actual {a[index]!r}, expected {e[index]!r}, "
        f"|diff| {err[index]!r}",
    ]
    finite = bad & np.isfinite(err)
    if finite.any():
        lines.append(f"max |diff| among mismatches: {err[finite].max()!r}")
    raise AssertionError("\n".join(lines))
