"""Proton's calls on kernellab: sessions, scopes, and a launch hook that times every kernel.

    import kernellab.profiler as proton

    proton.start("matmul", hook="triton")        # session 0, active
    with proton.scope(f"matmul [M={M}]", {"flops": 2 * M * N * K}):
        matmul(a, b)                             # a kernel node under the scope
    proton.finalize()                            # writes matmul.json

Scopes form one stack per process (the shadow context): a node's path is the names of the
scopes open around it. Every active session records each scope entered and each kernellab
launch made while it is active: a scope gets CUDA events on the current stream at entry and exit (so torch
and cuBLAS work inside it counts), a launch gets events on its launch stream around it; without
a GPU both get wall-clock time, labelled interpreter time. Nothing waits for the GPU until a
profile is read (`finalize`, `read`).

With `hook="triton"` a launch is named and measured by its kernel's `launch_metadata` (its
"name", "flops", "bytes", ...), as Triton's hook does; without it, by the kernel's name alone.
"""

from __future__ import annotations

import functools
import itertools
import os
import warnings
from dataclasses import dataclass, field

from kernellab.runtime.launch_hooks import ENTER_HOOKS, Launch
from kernellab.runtime.profiler import clocks
from kernellab.runtime.profiler.tree import Node, check_metrics, profile_record, write
from kernellab.runtime.profiler.tree import read as read_file

HOOKS = (None, "triton")
CONTEXTS = ("shadow",)
BACKENDS = (None, "cupti", "cuda_events")
OUTPUT_FORMATS = ("json", "hatchet")
DEFAULT_NAME = "proton"


@dataclass(eq=False)
class _Frame:
    """One open scope of the shared stack."""

    id: int
    name: str


@dataclass(eq=False)
class Session:
    """One profile being recorded: its tree, whether it records now, the scopes it is timing."""

    id: int
    name: str  # the output path without extension
    hook: str | None
    active: bool = True
    root: Node = field(init=False)
    open: dict = field(default_factory=dict)  # frame id → the Node of each scope it times
    devices: set = field(default_factory=set)

    def __post_init__(self):
        self.root = Node(os.path.basename(self.name), "root")

    def here(self) -> Node:
        """The node of the scopes open now (the root when none is)."""
        node = self.root
        for frame in _stack:
            node = node.child(frame.name, "scope")
        return node

    def record(self) -> dict:
        device = None
        if self.devices:
            device = ", ".join(sorted({clocks.device_name(d) for d in self.devices}))
        return profile_record(os.path.basename(self.name), self.root, device)


_sessions: dict[int, Session] = {}
_stack: list[_Frame] = []
_ids = itertools.count()
_opened: dict[int, clocks.Interval] = {}  # frame id → the interval its entry started
_last: dict | None = None  # the last finalized profile, for `read()` and `show()`


def _session(session: int) -> Session:
    found = _sessions.get(session)
    if found is None:
        known = ", ".join(map(str, _sessions)) or "none: call start() first"
        raise ValueError(f"no profiling session {session!r} (sessions: {known})")
    return found


def _chosen(session: int | None) -> list[Session]:
    return list(_sessions.values()) if session is None else [_session(session)]


def _sync_hook() -> None:
    """The launch hook is installed while some session is active, so launches pay nothing
    (they keep the JIT's warm path) while every session is off."""
    want = any(s.active for s in _sessions.values())
    if want and _on_launch not in ENTER_HOOKS:
        ENTER_HOOKS.append(_on_launch)
    elif not want and _on_launch in ENTER_HOOKS:
        ENTER_HOOKS.remove(_on_launch)


def start(name: str | None = None, *, context: str = "shadow", data: str = "tree",
          backend: str | None = None, mode=None, hook: str | None = None) -> int:  # fmt: skip
    """Start an active profiling session; returns its id: the smallest not in use, so 0 when no
    other session is open (tutorial code that calls `activate(0)` runs again after `finalize`).

    `name` is the output path without extension (finalize writes `<name>.json`; proton's
    `<name>.hatchet` becomes `<name>.json`). `hook="triton"` names and measures launches by
    their kernel's `launch_metadata`. kernellab has one context ("shadow": the scope stack),
    one data layout ("tree") and measures with CUDA events (`backend` None, "cupti" or
    "cuda_events" all mean that).
    """
    for value, allowed, what in (
        (hook, HOOKS, "hook"), (context, CONTEXTS, "context"), (backend, BACKENDS, "backend"),
        (data, ("tree",), "data"), (mode, (None,), "mode"),
    ):  # fmt: skip
        if value not in allowed:
            raise ValueError(
                f"start({what}={value!r}): kernellab's profiler supports {what} in {allowed}"
            )
    name = DEFAULT_NAME if name is None else str(name)
    for extension in (".json", ".hatchet"):
        name = name.removesuffix(extension)
    session = Session(next(i for i in itertools.count() if i not in _sessions), name, hook)
    _sessions[session.id] = session
    _sync_hook()
    return session.id


def activate(session: int | None = None) -> None:
    """Record again in `session` (every session when None)."""
    for s in _chosen(session):
        s.active = True
    _sync_hook()


def deactivate(session: int | None = None) -> None:
    """Stop recording in `session` (every session when None) until `activate`."""
    for s in _chosen(session):
        s.active = False
    _sync_hook()


def finalize(session: int | None = None, output_format: str = "json") -> list[str]:
    """End `session` (every session when None): wait for its GPU events, write `<name>.json`,
    and return the paths written. ("hatchet" is accepted for proton's calls; the file is JSON.)"""
    global _last
    if output_format not in OUTPUT_FORMATS:
        raise ValueError(f"finalize(output_format={output_format!r}): use one of {OUTPUT_FORMATS}")
    paths = []
    for s in _chosen(session):
        if s.open:
            names = "/".join(frame.name for frame in _stack)
            warnings.warn(
                f"profiling session {s.id} finalized inside open scopes ({names}): "
                "their unfinished entries are not counted",
                stacklevel=2,
            )
        del _sessions[s.id]
        _last = s.record()
        path = f"{s.name}.json"
        write(_last, path)
        paths.append(path)
    _sync_hook()
    return paths


def read(source: int | str | None = None) -> dict:
    """A profile record: of a running session (by id; waits for its GPU events), of a file
    finalize wrote (by path), or (None) the running session if there is one, else the last
    finalized profile."""
    if isinstance(source, str):
        return read_file(source)
    if source is None:
        if _sessions:
            source = max(_sessions)
        elif _last is not None:
            return _last
        else:
            raise ValueError("no profile yet: start() a session (or pass a file finalize wrote)")
    return _session(source).record()


def enter_scope(name: str, *, triton_op: bool = False, metrics: dict | None = None) -> int:
    """Open a scope named `name` (metrics such as {"flops": ..., "bytes": ...} are added to it);
    returns the scope's id. (`triton_op` is proton's flag for scopes its compiler opens; it
    changes nothing here.)"""
    metrics = check_metrics(metrics, f"scope {name!r}")
    frame = _Frame(next(_ids), str(name))
    _stack.append(frame)
    active = [s for s in _sessions.values() if s.active]
    if active:
        interval = clocks.Interval(clocks.scope_stream())
        for s in active:
            node = s.here()
            node.count += 1
            node.add(metrics)
            node.intervals.append(interval)
            s.open[frame.id] = node
            if interval.device is not None:
                s.devices.add(interval.device)
        _opened[frame.id] = interval
    return frame.id


def exit_scope(triton_op: bool = False, metrics: dict | None = None) -> int:
    """Close the innermost open scope (metrics given here are added to it); returns its id."""
    if not _stack:
        raise RuntimeError("exit_scope() without an open scope: call enter_scope(name) first")
    frame = _stack[-1]
    metrics = check_metrics(metrics, f"scope {frame.name!r}")
    interval = _opened.pop(frame.id, None)
    if interval is not None:
        interval.end()
    _stack.pop()
    for s in _sessions.values():
        node = s.open.pop(frame.id, None)
        if node is not None:
            node.add(metrics)
    return frame.id


class scope:
    """`with scope(name, metrics): ...` or `@scope(name, metrics)` on a function: time what
    runs inside, kernels and torch work alike, under `name`."""

    def __init__(self, name: str, metrics: dict | None = None):
        self.name = name
        self.metrics = check_metrics(metrics, f"scope {name!r}")

    def __enter__(self):
        self.id = enter_scope(self.name, metrics=self.metrics)
        return self

    def __exit__(self, *exc) -> None:
        exit_scope()

    def __call__(self, fn):
        @functools.wraps(fn)
        def scoped(*args, **kwargs):
            with scope(self.name, self.metrics):
                return fn(*args, **kwargs)

        return scoped


def _on_launch(launch: Launch):
    """The launch hook: a kernel node under the open scopes of every active session, timed
    around the launch (CUDA events on its stream, or the interpreter's wall clock)."""
    active = [s for s in _sessions.values() if s.active]
    if not active:
        return None
    stream = clocks.launch_stream(launch.where) if launch.where is not None else None
    interval = clocks.Interval(stream)
    for s in active:
        metrics = {}
        name = launch.kernel.name
        if s.hook == "triton":
            name = launch.name
            metrics = check_metrics(
                {k: v for k, v in launch.metadata.items() if k != "name"},
                f"launch_metadata of {launch.kernel.name}",
            )
        node = s.here().child(name, "kernel")
        node.count += 1
        node.add(metrics)
        node.intervals.append(interval)
        if stream is not None:
            s.devices.add(stream[0])
    return interval.end


__all__ = [
    "start", "activate", "deactivate", "finalize", "read", "scope", "enter_scope", "exit_scope",
    "Session",
]  # fmt: skip
