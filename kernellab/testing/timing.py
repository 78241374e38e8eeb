"""do_bench: Triton's timing scheme (CUDA events with a cold L2 on a GPU, the host clock
otherwise), do_bench_interleaved for comparisons, and the copy bandwidth it measures for
rooflines. Results are in milliseconds."""

from __future__ import annotations

import statistics
import sys
import time

import numpy as np


def cuda_in_use() -> bool:
    """True when torch is loaded and has initialized CUDA (the program works on CUDA tensors).

    torch is never imported here: a program using CUDA tensors has imported it already.
    """
    torch = sys.modules.get("torch")
    if torch is None:
        return False
    try:
        return bool(torch.cuda.is_available() and torch.cuda.is_initialized())
    except (AttributeError, RuntimeError):  # a torch without CUDA support
        return False


def summarize(times, quantiles, return_mode):
    if quantiles is not None:
        result = np.quantile(np.asarray(times), quantiles).tolist()
        return result[0] if len(result) == 1 else result
    if return_mode == "all":
        return list(times)
    return {"min": min, "max": max, "mean": statistics.fmean, "median": statistics.median}[return_mode](times)


_L2_FLUSH_BYTES = 256 * 2**20  # larger than any current GPU's L2 (H100: 50 MB, B200: 126 MB)


def do_bench_cuda(fn, warmup, rep, grad_to_none, quantiles, return_mode):
    """Triton's scheme: estimate with a few runs, then time each run between two CUDA events,
    zeroing a 256 MB buffer before each so every run starts with a cold L2."""
    import torch

    flush = torch.empty(_L2_FLUSH_BYTES, dtype=torch.int8, device="cuda")
    fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(5):
        flush.zero_()
        fn()
    end.record()
    torch.cuda.synchronize()
    estimate_ms = max(start.elapsed_time(end) / 5, 1e-4)
    n_warmup = max(1, int(warmup / estimate_ms))
    n_repeat = max(1, int(rep / estimate_ms))
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(n_repeat)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(n_repeat)]
    for _ in range(n_warmup):
        fn()
    for i in range(n_repeat):
        if grad_to_none is not None:
            for x in grad_to_none:
                x.grad = None
        flush.zero_()
        starts[i].record()
        fn()
        ends[i].record()
    torch.cuda.synchronize()
    times = [s.elapsed_time(e) for s, e in zip(starts, ends)]
    return summarize(times, quantiles, return_mode)


def do_bench(fn, warmup=25, rep=100, grad_to_none=None, quantiles=None, return_mode="mean", device=None):
    """Time `fn()` in ms: estimate one call, then run ~`warmup` ms untimed and ~`rep` ms timed.

    On a GPU (torch with CUDA initialized, or `device="cuda"`) each run is timed with CUDA events
    after flushing L2; otherwise with the host clock (`device="cpu"` forces it).
    `quantiles` (e.g. [0.5, 0.2, 0.8]) returns those quantiles instead; `return_mode` is one of
    "min", "max", "mean", "median", "all". `grad_to_none`: tensors whose .grad is reset each run.
    """
    if return_mode not in ("min", "max", "mean", "median", "all"):
        raise ValueError(f"return_mode must be min, max, mean, median or all, not {return_mode!r}")
    if device not in (None, "cpu", "cuda"):
        raise ValueError(f"device must be None (automatic), 'cpu' or 'cuda', not {device!r}")
    if device == "cuda" or (device is None and cuda_in_use()):
        return do_bench_cuda(fn, warmup, rep, grad_to_none, quantiles, return_mode)
    start = time.perf_counter()
    fn()
    estimate_ms = max((time.perf_counter() - start) * 1e3, 1e-3)
    for _ in range(max(0, int(warmup / estimate_ms))):
        fn()
    times = []
    for _ in range(max(1, int(rep / estimate_ms))):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e3)
    return summarize(times, quantiles, return_mode)




def in_interleaved_rounds(measures, rounds: int = 4) -> list[list]:
    """Each of `measures` (callables returning one measurement) called once per round, in
    `rounds` rounds whose order is reversed every other round (A B, B A, A B, B A); returns each
    one's measurements. A GPU's clock follows its temperature and power, so two times taken one
    after the other compare two clocks as well as two kernels. Keep `rounds` even: then each
    measure is first in a round as often as last, and as often at an even place in the whole
    sequence as at an odd one (an H200 timed the persistent softmax about 4% slower at the even
    places of a run of measurements, whichever kernel it was, and with three rounds the measure
    listed first had two slow rounds of three)."""
    measures = list(measures)
    results = [[] for _ in measures]
    for r in range(max(1, rounds)):
        order = range(len(measures)) if r % 2 == 0 else reversed(range(len(measures)))
        for i in order:
            results[i].append(measures[i]())
    return results


def do_bench_interleaved(fns, rounds: int = 4, warmup=25, rep=100, device=None) -> list[float]:
    """Median times in ms of several callables compared with each other: each is timed with
    do_bench (its median run) in interleaved rounds (in_interleaved_rounds) and keeps the
    median of its rounds."""
    measures = [lambda fn=fn: float(do_bench(fn, warmup=warmup, rep=rep, return_mode="median", device=device))
                for fn in fns]  # fmt: skip
    return [statistics.median(ms) for ms in in_interleaved_rounds(measures, rounds)]


_COPY_BANDWIDTH: dict[str, float] = {}


def copy_bandwidth(device: str | None = None) -> float:
    """The measured copy bandwidth in GB/s (bytes read + written per second), cached per process.

    On a GPU (torch with CUDA in use, or `device="cuda"`): a device-to-device copy of 256 MB timed
    with CUDA events; on the CPU: numpy copying a 64 MB array.
    """
    device = device or ("cuda" if cuda_in_use() else "cpu")
    if device in _COPY_BANDWIDTH:
        return _COPY_BANDWIDTH[device]
    if device == "cuda":
        import torch

        src = torch.empty(256 * 2**20, dtype=torch.uint8, device="cuda")
        dst = torch.empty_like(src)
        ms = do_bench(lambda: dst.copy_(src), warmup=5, rep=20, return_mode="median", device="cuda")
        nbytes = 2 * src.numel()
    else:
        src = np.ones(8 * 2**20, dtype=np.float64)  # 64 MB: well beyond the CPU caches
        dst = np.empty_like(src)
        ms = do_bench(lambda: np.copyto(dst, src), warmup=5, rep=30, return_mode="median", device="cpu")
        nbytes = 2 * src.nbytes
    _COPY_BANDWIDTH[device] = nbytes / (ms * 1e-3) / 1e9
    return _COPY_BANDWIDTH[device]
