"""Testing and benchmarking helpers with Triton's names: assert_close, do_bench, perf_report.

    compare    assert_close (any array type, any device, compared on the host)
    timing     do_bench (CUDA events with a cold L2 on a GPU, the host clock otherwise),
               do_bench_interleaved (a comparison in interleaved rounds), copy_bandwidth
    gpu_state  GpuState: the GPU's clock and power while code runs (nvidia-smi)
    sweeps     perf_report, Benchmark, Mark: sweeps, their tables, CSV files and plots
    plots      plot_sweep (matplotlib, imported only then; a roofline for GB/s, ratios to torch)
    results    SweepResult: a sweep's measurements and its table of ratios to torch
    progress   a sweep's progress in a notebook or on a terminal
    tables     format_table
"""

from kernellab.testing.compare import assert_close
from kernellab.testing.plots import plot_sweep
from kernellab.testing.results import SweepResult
from kernellab.testing.sweeps import Benchmark, Mark, perf_report
from kernellab.testing.tables import format_table
from kernellab.testing.gpu_state import GpuState
from kernellab.testing.timing import copy_bandwidth, do_bench, do_bench_interleaved

__all__ = ["assert_close", "do_bench", "do_bench_interleaved", "GpuState", "Benchmark", "perf_report", "Mark", "SweepResult",
           "format_table", "copy_bandwidth", "plot_sweep"]  # fmt: skip
