"""NVIDIA backend: TTGIR → LLVM IR (lowering/), PTX (ptx.py), cubin (cubin.py), SASS (sass.py),
and the CUDA runtime side (driver.py, launcher.py). backend.py ties them into a stage dict.

Nothing here touches a GPU until a kernel is launched: compiling to cubin works on any machine.
"""
