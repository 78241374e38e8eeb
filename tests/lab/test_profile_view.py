"""The profile display: table rows, flame-chart boxes, and the static HTML a saved notebook keeps."""

import base64
import re

import numpy as np
import pytest

import kernellab as kl
import kernellab.profiler as proton
from kernellab.lab.widgets.profile_view import ProfileView, flame_boxes, profile_rows
from kernellab.runtime.profiler.tree import throughput


def node(name, kind, time_ns, children=(), metrics=None, clock="cuda", count=1):
    metrics = metrics or {}
    return {
        "name": name, "kind": kind, "count": count, "time_ns": time_ns, "clock": clock,
        "metrics": metrics, "derived": throughput(metrics, time_ns),
        "children": list(children),
    }  # fmt: skip


def record(rng):
    """A made-up GPU profile: a matmul scope at two sizes, each with its kernel, and a torch scope."""
    t = [int(v) for v in rng.integers(1_000, 1_000_000, size=4)]
    flops = [int(v) for v in rng.integers(10**9, 10**12, size=2)]
    big = node("matmul [M=4096]", "scope", t[0] + t[1], [node("matmul_kernel", "kernel", t[0])],
               {"flops": flops[0], "bytes": 3 * 2 * 4096**2})  # fmt: skip
    kernel = node("matmul_kernel", "kernel", t[2], metrics={"flops16": flops[1]})
    small = node("matmul [M=1024]", "scope", t[2], [kernel])
    torch_scope = node("torch", "scope", t[3])
    root = node("bench", "root", big["time_ns"] + small["time_ns"] + t[3], [big, small, torch_scope])
    rec = {"schema": proton.SCHEMA, "name": "bench", "clock": "cuda", "device": "NVIDIA H100"}
    return {**rec, "tree": root}, t, flops


def test_rows_follow_the_tree_with_shares_and_throughput(rng):
    rec, t, flops = record(rng)
    rows = profile_rows(rec)
    assert [(r["depth"], r["name"]) for r in rows] == [
        (0, "matmul [M=4096]"), (1, "matmul_kernel"), (0, "matmul [M=1024]"),
        (1, "matmul_kernel"), (0, "torch"),
    ]  # fmt: skip
    total = rec["tree"]["time_ns"]
    assert rows[0]["share"] == pytest.approx((t[0] + t[1]) / total)
    assert rows[0]["time_ms"] == pytest.approx((t[0] + t[1]) / 1e6)
    assert rows[0]["tflop/s"] == pytest.approx(flops[0] / (t[0] + t[1]) / 1e3)
    assert rows[3]["tflop16/s"] == pytest.approx(flops[1] / t[2] / 1e3)
    assert "tflop/s" not in rows[4]


def test_flame_boxes_nest_children_inside_their_parents(rng):
    rec, t, _ = record(rng)
    boxes = flame_boxes(rec)
    root = boxes[0]
    assert (root.depth, root.x, root.width) == (0, 0.0, rec["tree"]["time_ns"])
    by_name = [(b.depth, b.name) for b in boxes[1:]]
    assert by_name == [(1, "matmul [M=4096]"), (2, "matmul_kernel"), (1, "matmul [M=1024]"),
                       (2, "matmul_kernel"), (1, "torch")]  # fmt: skip
    big, big_kernel, small, small_kernel, torch_box = boxes[1:]
    assert big.x == 0 and small.x == big.width and torch_box.x == big.width + small.width
    assert big_kernel.x == big.x and big_kernel.width == t[0] < big.width
    assert small_kernel.width == small.width
    assert torch_box.x + torch_box.width == pytest.approx(root.width)


def test_children_longer_than_their_parent_are_squeezed_into_it():
    inner = [node("a", "kernel", 300), node("b", "kernel", 500)]
    rec = {"schema": proton.SCHEMA, "name": "p", "clock": "cuda", "device": None,
           "tree": node("p", "root", 400, [node("s", "scope", 400, inner)])}  # fmt: skip
    _, s, a, b = flame_boxes(rec)
    assert (a.x, a.width, b.x, b.width) == (0, 150, 150, 250) and b.x + b.width == s.width


def test_the_view_shows_a_table_and_a_chart_in_static_html(rng):
    rec, _, _ = record(rng)
    view = ProfileView(rec)
    bundle = view._repr_mimebundle_()
    page = bundle["text/html"]
    assert "<table" in page and "matmul [M=4096]" in page and "GPU time (ms)" in page
    assert "tflop/s" in page and "gbyte/s" in page and "NVIDIA H100" in page
    png = base64.b64decode(re.search(r"data:image/png;base64,([A-Za-z0-9+/=]+)", page).group(1))
    assert png.startswith(b"\x89PNG") and png == view.png
    assert "matmul_kernel [kernel]" in bundle["text/plain"]
    with pytest.raises(ValueError, match="choose one of"):
        ProfileView(rec, metric="speed")


def test_show_labels_interpreter_time(tmp_path, monkeypatch, rng):
    monkeypatch.chdir(tmp_path)
    x = rng.random(256, dtype=np.float32)
    out = np.full_like(x, np.nan)
    from kernellab.examples import add_kernel

    proton.start("cpu")
    with proton.scope("add"):
        add_kernel[(1,)](x, x, out, 256, BLOCK_SIZE=256)
    proton.finalize()
    np.testing.assert_array_equal(out, x + x)
    view = kl.profiler.show("cpu.json")
    text = view._repr_mimebundle_()["text/plain"]
    assert "interpreter time (ms)" in text and "no GPU" in text
    assert "interpreter time" in view.snapshot()
