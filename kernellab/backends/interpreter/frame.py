"""The execution state of a group of programs that run together.

Every value in `env` has a leading program axis of size `P` (one entry per program of the
group) or of size 1 when it is the same in every program (constants, ranges, arguments); numpy
broadcasting stretches the latter lazily. Divergent control flow runs a region on a subset of
the programs: `subset` builds a smaller frame whose live-in values are sliced to that subset.
"""

from __future__ import annotations

import numpy as np


class Frame:
    __slots__ = ("env", "P", "pid", "prog", "grid", "mem", "trace")

    def __init__(self, env, pid, prog, grid, mem, trace):
        self.env = env
        self.pid = pid  # (x, y, z): int32 arrays of shape (P,)
        self.prog = prog  # linear program ids of shape (P,), for errors and traces
        self.P = len(prog)
        self.grid = grid
        self.mem = mem
        self.trace = trace

    def subset(self, idx: np.ndarray, live_ins: tuple[int, ...]) -> Frame:
        """A frame for the programs `idx` (indices into this frame) sharing this frame's values."""
        env = list(self.env)
        for s in live_ins:
            v = env[s]
            if v is not None and v.shape[0] != 1:
                env[s] = v[idx]
        pid = tuple(p[idx] for p in self.pid)
        return Frame(env, pid, self.prog[idx], self.grid, self.mem, self.trace)

    def program_of(self, row: int) -> tuple[int, int, int]:
        """(x, y, z) of the program in row `row` of this frame's program axis."""
        return tuple(int(p[row]) for p in self.pid)


def rows(v: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """`v` restricted to the programs `idx` (uniform values are left as they are)."""
    return v if v.shape[0] == 1 else v[idx]


def full(v: np.ndarray, P: int) -> np.ndarray:
    """A writable copy of `v` with its program axis stretched to P."""
    return np.array(np.broadcast_to(v, (P,) + v.shape[1:]))
