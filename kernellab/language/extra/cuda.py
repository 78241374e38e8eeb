"""`tl.extra.cuda`: NVIDIA-specific builtins, under Triton's names.

Programmatic dependent launch (Hopper): a kernel launched with `launch_pdl=True` may start
while the previous kernel on the stream is still running; `gdc_wait()` blocks until that
kernel's memory is visible, and `gdc_launch_dependents()` lets the next such kernel start
early. Before sm_90, and on the interpreter (which runs kernels one after another), both do
nothing. `globaltimer()` reads the GPU's nanosecond clock (the host's on the interpreter),
`smid()` the multiprocessor the program runs on (0 on the interpreter).
"""

from kernellab.language.core import builtin
from kernellab.language.extra import libdevice


@builtin
def gdc_wait():
    """Wait until the grid this one depends on (launch_pdl=True) has finished writing memory."""


@builtin
def gdc_launch_dependents():
    """Let the next kernel on the stream (launched with launch_pdl=True) start."""


@builtin
def globaltimer():
    """The GPU's global nanosecond timer, an int64 scalar."""


@builtin
def smid():
    """The index of the multiprocessor running this program, an int32 scalar."""


__all__ = ["gdc_launch_dependents", "gdc_wait", "globaltimer", "libdevice", "smid"]
