"""Optional record of every memory access, for the lab's access views.

Recording happens only when a trace is passed to `run`; without one the interpreter does not
compute anything extra.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class AccessRecord:
    """One load/store/atomic executed by a group of programs, restricted to one argument.

    `programs[i]` is the (x, y, z) id of row i; `indices[i]` are the element indices (within
    the argument's buffer) its lanes accessed and `mask[i]` which lanes were active (indices of
    inactive lanes are meaningless).
    """

    op_index: int
    location: str
    kind: str  # "load", "store" or "atomic"
    arg: str
    programs: np.ndarray  # (n, 3) int
    indices: np.ndarray  # (n, *shape) int64
    mask: np.ndarray  # (n, *shape) bool


@dataclass
class AccessTrace:
    records: list[AccessRecord] = field(default_factory=list)

    def record(self, site, fr, shape, groups) -> None:
        full = (fr.P,) + tuple(shape[1:])
        programs = np.stack(fr.pid, axis=1).astype(np.int64)
        for buf, idx, lanes in groups:
            mask = np.ones(full, bool) if lanes is None else np.broadcast_to(lanes, full).copy()
            self.records.append(AccessRecord(
                site.op_index, site.location, site.kind, buf.name, programs,
                np.broadcast_to(idx, full).astype(np.int64), mask,
            ))  # fmt: skip
