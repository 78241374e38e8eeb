"""The host side of a warm GPU launch, measured on any machine: what `kernel[grid](...)` costs in
Python before the driver takes over.

    python3 benchmarks/launch_path.py          # about 20 s (the kernels compile for sm_90a first)

`gpu.py`'s "warm launch" section times launches on a GPU, where the driver's own work and the
queue are part of the figure; this one takes them out. The GPU is stood in for: the tensors are
objects with torch's surface (`get_device`, `data_ptr`, `dtype`; Python methods, a little
slower than torch's C ones), the device facts are an H100's, and cuLaunchKernelEx is libm's
`fegetround` called through ctypes with the same four arguments (a C function that returns 0
and does nothing else), so each launch still binds the arguments, finds the specialization,
reads torch's stream, packs the buffer and makes one ctypes call (the last two rows: that call
alone, with `c_void_p` arguments and with the prepared ones the launcher passes). Each figure
is the best of 100 runs of 2,000 launches, in µs per launch; the cases take turns, run by run,
so a busy machine slows them alike, and short runs let the best one fall between other
processes' work. Results go to benchmarks/results/launch-path-<host>-<date>.json.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import datetime
import json
import os
import platform
import socket
import sys
import tempfile
import timeit
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
os.environ.setdefault("KERNELLAB_CACHE_DIR", tempfile.mkdtemp(prefix="kl-launch-path-"))

import kernellab as kl
from kernellab.backends.nvidia import driver
from kernellab.backends.nvidia.launcher import pointer_argument
from kernellab.examples import add_kernel, layer_norm_kernel

LAUNCHES, REPEATS = 2_000, 100


class StandInDtype:
    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return f"torch.{self.name}"


class StandInTensor:
    """What the runtime reads of a torch CUDA tensor."""

    def __init__(self, ptr: int, dtype: StandInDtype):
        self.ptr, self.dtype = ptr, dtype

    def get_device(self) -> int:
        return 0

    def data_ptr(self) -> int:
        return self.ptr


StandInTensor.__module__ = "torch.stand_in"  # the runtime takes a torch-module class for a tensor


def stand_in_driver():
    """Replace the driver calls a launch makes; returns the no-op C function used as
    cuLaunchKernelEx."""
    noop_c = ctypes.CDLL(ctypes.util.find_library("m")).fegetround
    noop = ctypes.CFUNCTYPE(ctypes.c_int)(ctypes.cast(noop_c, ctypes.c_void_p).value)
    info = driver.DeviceInfo(
        index=0, name="stand-in H100", capability=(9, 0), sm_count=132, max_threads_per_block=1024,
        max_shared_per_block=48 * 1024, max_shared_per_block_optin=227 * 1024, shared_per_sm=228 * 1024,
        registers_per_sm=65536, registers_per_block=65536, max_grid=(2**31 - 1, 65535, 65535),
    )  # fmt: skip
    attributes = {"CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK": 1024, "CU_FUNC_ATTRIBUTE_NUM_REGS": 32,
                  "CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES": 0}  # fmt: skip
    # the binding, which a kernel's first launch (through `run`) calls
    driver._driver = lambda: types.SimpleNamespace(cuLaunchKernel=lambda *args: (0,))
    driver.device_info = lambda index=0: info
    driver.device_count = lambda: 1
    driver.make_current = lambda index=0, force=False: None
    driver.load_module = lambda cubin, index=0: "module"
    driver.get_function = lambda module, name: 0xF00D
    driver.function_attribute = lambda fn, name: attributes[name]
    driver.raw_launch_function = lambda: noop
    # torch's current stream: a C builtin that returns 0 for device 0, as cheap as torch's own
    sys.modules["torch"] = types.SimpleNamespace(_C=types.SimpleNamespace(_cuda_getCurrentRawStream=abs))
    return noop


def per_launch_us(launches: list) -> list[float]:
    """The best time per launch of each function, the functions taking turns run by run."""
    for launch in launches:  # compile and load outside the timing
        launch()
        launch()
    best = [float("inf")] * len(launches)
    for _ in range(REPEATS):
        for i, launch in enumerate(launches):
            best[i] = min(best[i], timeit.timeit(launch, number=LAUNCHES) / LAUNCHES * 1e6)
    return best


def cases(noop) -> list[tuple[str, object]]:
    ptrs = iter(range(0x7F0000000000, 0x7F0010000000, 0x100000))
    f32, f16 = StandInDtype("float32"), StandInDtype("float16")
    x, y, out = (StandInTensor(next(ptrs), f32) for _ in range(3))
    n = 256
    X, Y, W, B = (StandInTensor(next(ptrs), f16) for _ in range(4))
    mean, rstd = (StandInTensor(next(ptrs), f32) for _ in range(2))

    def by_meta(meta):
        return (kl.cdiv(meta["n_elements"], meta["BLOCK_SIZE"]),)

    pointer = ctypes.c_void_p(0x7F0000000000)
    prepared = pointer_argument(0x7F0000000000)  # a byref: ctypes passes it without converting
    return [
        ("vector add, grid (1,) (gpu.py's case)", lambda: add_kernel[(1,)](x, y, out, n, BLOCK_SIZE=1024)),
        ("vector add, grid function", lambda: add_kernel[by_meta](x, y, out, n, BLOCK_SIZE=1024)),
        ("vector add, num_warps=4", lambda: add_kernel[(1,)](x, y, out, n, BLOCK_SIZE=1024, num_warps=4)),
        ("vector add, n_elements=1 (a constant)", lambda: add_kernel[(1,)](x, y, out, 1, BLOCK_SIZE=1024)),
        ("layer norm forward, 9 arguments", lambda: layer_norm_kernel[(4,)](X, Y, W, B, mean, rstd, 4096, 4096, 1e-5, BLOCK_SIZE=1024)),
        ("the driver call alone (ctypes, 4 pointers)", lambda: noop(pointer, pointer, pointer, None)),
        ("the driver call as the launcher makes it", lambda: noop(prepared, prepared, prepared, None)),
    ]  # fmt: skip


def main() -> None:
    noop = stand_in_driver()
    results = []
    width = 44
    print(f"{'warm launch, host side':{width}} {'µs/launch':>10}")
    print("-" * (width + 11))
    named = cases(noop)
    for (name, _), us in zip(named, per_launch_us([launch for _, launch in named])):
        results.append({"case": name, "us_per_launch": us})
        print(f"{name:{width}} {us:10.2f}")
    host, date = socket.gethostname(), datetime.date.today().isoformat()
    out = Path(__file__).parent / "results" / f"launch-path-{host}-{date}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    meta = {"host": host, "date": date, "machine": platform.machine(), "cpus": os.cpu_count(),
            "python": platform.python_version(), "launches": LAUNCHES, "repeats": REPEATS}  # fmt: skip
    out.write_text(json.dumps({"meta": meta, "results": results}, indent=2) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
