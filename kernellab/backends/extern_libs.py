"""`extern_libs`, Triton's compile option {library name: path to its LLVM bitcode}.

A backend that links a library (the NVIDIA backend links NVIDIA's `libdevice`) compiles the
kernel functions that name one of its functions (`tl.extra.libdevice.asin` → `__nv_asinf`) as
calls into it and links the bitcode into the kernel's LLVM module; every other backend, and any
backend when the file is missing, runs kernellab's own implementations. The options keep the
paths; the disk cache keys on the files' contents (`fingerprint`), so a rebuilt library
recompiles.
"""

from __future__ import annotations

import hashlib
import os
import sys
import warnings

# the library names extern_libs accepts, and what each is
KNOWN = {"libdevice": "NVIDIA's libdevice (the CUDA toolkit's nvvm/libdevice/libdevice.10.bc)"}
LIBDEVICE_HOME = "nvvm/libdevice/libdevice.10.bc"


def normalize(extern_libs) -> dict[str, str]:
    """{name: path as str} of a launch's `extern_libs` (a dict or its items, as a cache entry
    stores them). An unknown name is a ValueError naming the known ones; a path that is not a
    file is a UserWarning at the user's line (kernellab's own implementations run instead)."""
    try:
        pairs = dict(extern_libs)
    except (TypeError, ValueError):
        raise TypeError(
            f"extern_libs must be a dict {{library name: path}}, e.g. {{'libdevice': "
            f"'/usr/local/cuda/{LIBDEVICE_HOME}'}}; got {extern_libs!r}"
        ) from None
    out = {}
    for name, path in pairs.items():
        if name not in KNOWN:
            known = ", ".join(f"{k!r} ({v})" for k, v in KNOWN.items())
            raise ValueError(f"extern_libs names an unknown library {name!r}; known: {known}")
        if not isinstance(path, (str, os.PathLike)):
            raise TypeError(f"extern_libs[{name!r}] must be a path (str or pathlib.Path), got {path!r}")
        out[name] = os.fspath(path)
        if not os.path.isfile(out[name]):
            warnings.warn(
                f"extern_libs[{name!r}] = {out[name]!r} does not exist; kernellab's own {name} "
                f"implementations are used instead. NVIDIA's file is usually in the CUDA "
                f"toolkit: $CUDA_HOME/{LIBDEVICE_HOME} (e.g. /usr/local/cuda/{LIBDEVICE_HOME})",
                UserWarning,
                stacklevel=_caller_outside_kernellab(),
            )
    return out


def _caller_outside_kernellab() -> int:
    """The warning's stacklevel that names the user's line (the launch or kl.compile call)."""
    frame, level = sys._getframe(2), 2  # normalize's caller: stacklevel 2
    while frame is not None and frame.f_globals.get("__name__", "").startswith("kernellab."):
        frame, level = frame.f_back, level + 1
    return level


def linked(extern_libs: dict | None, supported) -> dict[str, str]:
    """The libraries of `extern_libs` a backend that links `supported` names links: those whose
    file exists."""
    return {n: p for n, p in (extern_libs or {}).items() if n in supported and os.path.isfile(p)}


def fingerprint(extern_libs: dict | None) -> dict[str, str]:
    """{name: sha256 of the file} ("missing" for an absent one): the cache key's part, so the
    same path with other contents compiles again."""
    out = {}
    for name, path in sorted((extern_libs or {}).items()):
        try:
            with open(path, "rb") as f:
                out[name] = hashlib.sha256(f.read()).hexdigest()
        except OSError:
            out[name] = "missing"
    return out


__all__ = ["KNOWN", "LIBDEVICE_HOME", "fingerprint", "linked", "normalize"]
