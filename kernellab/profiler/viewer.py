"""`triton.profiler.viewer`'s two calls on kernellab profiles: `parse` and `print_tree`.

Triton's tutorial 09 ends with

    tree, metrics = proton_viewer.parse(["tflop16/s", "time/ms"], "matmul.hatchet")
    proton_viewer.print_tree(tree, metrics)

which runs here on the JSON `finalize()` wrote (a `.hatchet` name finds the `.json` beside it).
`parse` returns the profile record and the metric names; `print_tree` prints the tree with one
column per metric. Times come from the record's clock: on the interpreter they are wall-clock
interpreter times, and the header says so.
"""

from __future__ import annotations

import os

from kernellab.runtime.profiler import THROUGHPUT, read, walk

TIME_UNITS = {"s": 1e9, "ms": 1e6, "us": 1e3, "ns": 1.0}
# a rate column → (the derived rate it rescales, factor): gflop/s is 1000 x tflop/s, ...
RATES = {name: (name, 1.0) for name in THROUGHPUT.values()}
RATES.update({n.replace("tflop", "gflop"): (n, 1e3) for n in THROUGHPUT.values() if "flop" in n})
RATES["tbyte/s"] = ("gbyte/s", 1e-3)


def _check(metric: str) -> None:
    kind, _, unit = metric.partition("/")
    if kind in ("time", "avg_time") and unit in TIME_UNITS:
        return
    if metric in ("time/%", "count") or metric in RATES:
        return
    known = ["time/<s|ms|us|ns>", "avg_time/<s|ms|us|ns>", "time/%", "count", *RATES]
    raise ValueError(f"metric {metric!r}: kernellab's viewer knows {', '.join(known)}")


def value(record: dict, node: dict, metric: str):
    """One metric of one node; None where the node has no such value (a rate without metrics)."""
    kind, _, unit = metric.partition("/")
    if metric == "count":
        return node["count"]
    if metric == "time/%":
        return 100.0 * node["time_ns"] / (record["tree"]["time_ns"] or 1)
    if kind == "time":
        return node["time_ns"] / TIME_UNITS[unit]
    if kind == "avg_time":
        return node["time_ns"] / max(node["count"], 1) / TIME_UNITS[unit]
    derived, factor = RATES[metric]
    rate = node["derived"].get(derived)
    return None if rate is None else rate * factor


def parse(metrics: list[str], filename: str, include=None, exclude=None, threshold=None):
    """(the profile record, the metric names) for `print_tree`. `filename` may name the
    `.hatchet` file proton would have written: the `.json` of the same name is read."""
    for name, given in (("include", include), ("exclude", exclude), ("threshold", threshold)):
        if given is not None:
            raise ValueError(f"parse({name}=...): kernellab's viewer shows the whole tree")
    metrics = list(metrics)
    for metric in metrics:
        _check(metric)
    base, extension = os.path.splitext(filename)
    if extension == ".hatchet" and not os.path.exists(filename):
        filename = base + ".json"
    return read(filename), metrics


def print_tree(tree: dict, metrics: list[str], depth: int = 100, print_sorted: bool = False):
    """Print the profile: one line per node, indented by depth, with each metric's value
    (`print_sorted`: longest first)."""
    clocks = {"cuda": "GPU time", "interpreter": "interpreter time (wall clock)"}
    clock = clocks.get(tree["clock"], "nothing measured")
    print(f"{tree['name']}: {clock}" + (f" on {tree['device']}" if tree["device"] else ""))
    print("  ".join(f"{m:>12}" for m in metrics) + "  name")
    rows = [(d, node) for d, _, node in walk(tree) if d < depth]
    if print_sorted:
        rows.sort(key=lambda row: -row[1]["time_ns"])
    for d, node in rows:
        cells = []
        for metric in metrics:
            v = value(tree, node, metric)
            cells.append(f"{'-':>12}" if v is None else f"{v:>12.6g}")
        print("  ".join(cells) + "  " + "  " * d + node["name"])


__all__ = ["parse", "print_tree", "value"]
