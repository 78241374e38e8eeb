"""cubin → SASS text with nvdisasm, when it is installed (the `nvidia-cuda-nvdisasm` wheel ships it).

`make_sass(cubin)` returns the disassembly, or None when no nvdisasm can be found or it fails;
`sass_status()` says which nvdisasm is used or why there is none (the backend puts that in
metadata so the lab can tell the user).
"""

from __future__ import annotations

import functools
import glob
import os
import shutil
import sys
import tempfile


@functools.cache
def find_nvdisasm() -> str | None:
    """Path of an nvdisasm binary: $KERNELLAB_NVDISASM, the pip wheel's, $CUDA_HOME's, or $PATH's."""
    env = os.environ.get("KERNELLAB_NVDISASM")
    if env:
        return env if os.access(env, os.X_OK) else None
    candidates = []
    for base in {sys.prefix, *sys.path}:
        if base and os.path.isdir(base):
            candidates += sorted(glob.glob(os.path.join(base, "nvidia", "cu*", "bin", "nvdisasm")), reverse=True)
            candidates += glob.glob(os.path.join(base, "nvidia", "cuda_nvdisasm", "bin", "nvdisasm"))
    for home in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if home:
            candidates.append(os.path.join(home, "bin", "nvdisasm"))
    for path in candidates:
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return shutil.which("nvdisasm")


def sass_status() -> str:
    path = find_nvdisasm()
    if path is None:
        return "unavailable: nvdisasm not found (pip install nvidia-cuda-nvdisasm, or set KERNELLAB_NVDISASM)"
    return f"nvdisasm at {path}"


def make_sass(cubin: bytes, line_info: bool = True) -> str | None:
    """SASS of `cubin` (with source line comments when the cubin has line info), or None."""
    nvdisasm = find_nvdisasm()
    if nvdisasm is None or not cubin:
        return None
    import subprocess  # here: the cubin stage imports this module, the disassembly is lazy

    fd, path = tempfile.mkstemp(suffix=".cubin", prefix="kernellab-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(cubin)
        args = [nvdisasm, "-c"] + (["-g"] if line_info else []) + [path]
        proc = subprocess.run(args, capture_output=True, text=True, timeout=60)
        if proc.returncode != 0 and line_info:  # cubins without line info can make -g fail
            proc = subprocess.run([nvdisasm, "-c", path], capture_output=True, text=True, timeout=60)
        if proc.returncode != 0:
            return None
        return proc.stdout
    except (OSError, subprocess.SubprocessError):
        return None
    finally:
        try:
            os.unlink(path)
        except OSError:
            pass


__all__ = ["make_sass", "find_nvdisasm", "sass_status"]
