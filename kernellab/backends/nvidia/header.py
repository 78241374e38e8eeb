"""The launch facts that travel with LLVM IR and PTX text, so a compile can resume from either.

Compiling a kernel keeps its facts (name, dynamic shared bytes, warps) in `KernelMetadata`;
only text a user edits and hands back to `kl.compile` needs them written into it. They go in
one JSON header line, written by `header_lines` and read by `read_header`:

    ; kernellab: {"name": "add_kernel", "shared": 0, "num_warps": 4}           (LLVM IR)
    module asm "// kernellab: {...}"                                          (LLVM IR → PTX)
    // kernellab: {"name": "add_kernel", "shared": 0, "num_warps": 4}         (PTX)

The `module asm` twin is how the header reaches the PTX: LLVM copies module asm into the PTX
verbatim, so the PTX of a resumed LLVM IR file carries it too.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass

_MARK = "kernellab:"
_LINE = re.compile(r'^\s*(?:;|//|module\s+asm\s+"//)\s*kernellab:\s*(\{.*\})"?\s*$', re.M)


@dataclass(frozen=True)
class LaunchHeader:
    """What a launcher needs that the IR text does not say: the kernel, its dynamic shared
    memory in bytes, its warps per block, and the global scratch each program needs (bytes;
    written only when there is some: the tensor maps a kernel builds)."""

    name: str
    shared: int
    num_warps: int
    global_scratch_size: int = 0

    @property
    def threads_per_block(self) -> int:
        return self.num_warps * 32


def header_lines(header: LaunchHeader) -> tuple[str, str]:
    """(first line of the LLVM IR, `module asm` line at its end that carries it into the PTX)."""
    fields = {k: v for k, v in asdict(header).items() if k != "global_scratch_size" or v}
    payload = json.dumps(fields, sort_keys=True)
    escaped = payload.replace("\\", "\\5C").replace('"', "\\22")  # LLVM string escapes
    return f"; {_MARK} {payload}", f'module asm "// {_MARK} {escaped}"'


def read_header(text: str) -> LaunchHeader | None:
    """The header of LLVM IR or PTX text, or None if it has none. Raises ValueError for a
    header that is not valid JSON with name, shared and num_warps."""
    m = _LINE.search(text)
    if m is None:
        return None
    payload = m.group(1).replace("\\22", '"').replace("\\5C", "\\")
    try:
        fields = json.loads(payload)
        return LaunchHeader(str(fields["name"]), int(fields["shared"]), int(fields["num_warps"]),
                            int(fields.get("global_scratch_size", 0)))  # fmt: skip
    except (ValueError, KeyError, TypeError) as e:
        raise ValueError(f"malformed kernellab header {m.group(0).strip()!r}: {e}") from None


__all__ = ["LaunchHeader", "header_lines", "read_header"]
