"""The profile a session builds: a tree of scopes and kernel launches, and its JSON record.

A node is one scope path (`outer/inner`) or one kernel name under a scope; entering the same
path again adds to the same node (count, time, metrics). Its time is read from its intervals
when the record is made (`profile_record`), which is the only place the GPU is waited for.

The record (schema "kernellab.profile/1", documented in docs/profiler.md) is what `finalize()`
writes and `kl.profiler.show()` draws: plain JSON, one object per node:

    {"name", "kind": "root"|"scope"|"kernel", "count", "time_ns",
     "clock": "cuda"|"interpreter"|null, "metrics": {"flops": ..., "bytes": ...},
     "derived": {"tflop/s": ..., "gbyte/s": ...}, "children": [...]}
"""

from __future__ import annotations

import json
import numbers
from collections.abc import Iterator
from dataclasses import dataclass, field

from kernellab.runtime.profiler.clocks import CUDA, INTERPRETER, Interval

SCHEMA = "kernellab.profile/1"

# metric a scope or launch names → the throughput derived from it (proton's names)
THROUGHPUT = {
    "flops": "tflop/s", "flops8": "tflop8/s", "flops16": "tflop16/s", "flops32": "tflop32/s",
    "flops64": "tflop64/s", "bytes": "gbyte/s",
}  # fmt: skip
# units per nanosecond → the unit of the derived name: flop/ns = 1e-3 TFLOP/s, byte/ns = GB/s
_PER_NS = {name: (1e-3 if name.startswith("tflop") else 1.0) for name in THROUGHPUT.values()}


def check_metrics(metrics, where: str) -> dict:
    """The metrics as a dict of numbers, or a TypeError that says what a metric must be."""
    if metrics is None:
        return {}
    if not isinstance(metrics, dict):
        raise TypeError(
            f"{where}: metrics must be a dict such as {{'flops': 2 * M * N * K}}, "
            f"not {type(metrics).__name__}"
        )
    for key, value in metrics.items():
        number = isinstance(value, numbers.Real) and not isinstance(value, bool)
        if not isinstance(key, str) or not number:
            raise TypeError(f"{where}: metric {key!r} = {value!r}: metrics map names to numbers")
    return {k: v if isinstance(v, int) else float(v) for k, v in metrics.items()}


@dataclass(eq=False)
class Node:
    name: str
    kind: str  # "root", "scope" or "kernel"
    count: int = 0
    metrics: dict = field(default_factory=dict)
    children: dict = field(default_factory=dict)  # (kind, name) → Node, in first-seen order
    intervals: list[Interval] = field(default_factory=list)

    def child(self, name: str, kind: str) -> Node:
        node = self.children.get((kind, name))
        if node is None:
            node = self.children[kind, name] = Node(name, kind)
        return node

    def add(self, metrics: dict) -> None:
        for key, value in metrics.items():
            self.metrics[key] = self.metrics.get(key, 0) + value


def throughput(metrics: dict, time_ns: int) -> dict:
    """Achieved rates from the metrics a node names: TFLOP/s per flops metric, GB/s for bytes."""
    if not time_ns:
        return {}
    derived = {}
    for metric, value in metrics.items():
        name = THROUGHPUT.get(metric)
        if name is not None:
            derived[name] = value / time_ns * _PER_NS[name]
    return derived


def node_record(node: Node) -> dict:
    """The node's JSON record, its intervals read (waiting for their GPU events)."""
    children = [node_record(c) for c in node.children.values()]
    clocks = {iv.clock for iv in node.intervals} | {c["clock"] for c in children if c["clock"]}
    clock = INTERPRETER if INTERPRETER in clocks else (CUDA if clocks else None)
    if node.kind == "root":
        time_ns = sum(c["time_ns"] for c in children)
    else:
        times = [iv.read() for iv in node.intervals if iv.ended]
        time_ns = sum(wall if clock == INTERPRETER else gpu for wall, gpu in times)
    return {
        "name": node.name,
        "kind": node.kind,
        "count": node.count,
        "time_ns": int(time_ns),
        "clock": clock,
        "metrics": dict(node.metrics),
        "derived": throughput(node.metrics, time_ns),
        "children": children,
    }


def profile_record(name: str, root: Node, device: str | None) -> dict:
    tree = node_record(root)
    return {"schema": SCHEMA, "name": name, "clock": tree["clock"], "device": device, "tree": tree}


def walk(record: dict) -> Iterator[tuple[int, tuple[str, ...], dict]]:
    """(depth, path of names, node) for every node below a record's root, depth first."""

    def visit(node, depth, path):
        for child in node["children"]:
            here = (*path, child["name"])
            yield depth, here, child
            yield from visit(child, depth + 1, here)

    yield from visit(record["tree"], 0, ())


def write(record: dict, path: str) -> None:
    with open(path, "w", encoding="utf-8") as f:
        json.dump(record, f, indent=1)
        f.write("\n")


def read(path: str) -> dict:
    """A profile record from a file `finalize()` wrote; a ValueError for any other JSON."""
    with open(path, encoding="utf-8") as f:
        record = json.load(f)
    if not isinstance(record, dict) or record.get("schema") != SCHEMA:
        raise ValueError(f"{path} is not a kernellab profile (expected \"schema\": \"{SCHEMA}\")")
    return record


__all__ = [
    "SCHEMA", "THROUGHPUT", "Node", "check_metrics", "throughput", "profile_record", "walk", "read",
    "write",
]  # fmt: skip
