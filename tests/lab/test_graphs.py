"""graphviz pictures: the dataflow graph of TTIR/TTGIR and the compile pipeline."""

from __future__ import annotations

import re
from types import SimpleNamespace

import pytest

pytest.importorskip("graphviz")

import kernellab as kl
import kernellab.language as tl
from kernellab.lab import graphs

# A fixed TTIR (not the frontend's output, which may change as passes improve): 4 arguments,
# 9 ops besides tt.return, one loop.
TTIR = """
builtin.module {
  tt.func public @k(%x_ptr: !tt.ptr<f32>, %out_ptr: !tt.ptr<f32>, %n: i32, %steps: i32) {
    %zero = arith.constant 0 : i32
    %one = arith.constant 1 : i32
    %r = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %p = tt.splat %x_ptr : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
    %acc = scf.for %i = %zero to %steps step %one iter_args(%a = %r) -> (tensor<64xi32>) : i32 {
      %s = tt.splat %i : i32 -> tensor<64xi32>
      %b = arith.addi %a, %s : tensor<64xi32>
      scf.yield %b : tensor<64xi32>
    }
    %q = tt.addptr %p, %acc : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
    %v = tt.load %q : tensor<64x!tt.ptr<f32>>
    tt.store %q, %v : tensor<64x!tt.ptr<f32>>
    tt.return
  }
}
"""


def test_dataflow_graph_nodes_edges_and_loop_cluster():
    g = graphs.dataflow_graph(TTIR)
    kinds = [kind for kind, _ in g.nodes_info.values()]
    ops = sorted(name for kind, name in g.nodes_info.values() if kind != "argument")
    assert kinds.count("argument") == 4
    assert ops == sorted(["arith.constant", "arith.constant", "tt.make_range", "tt.splat", "scf.for", "tt.splat",
                          "arith.addi", "scf.yield", "tt.addptr", "tt.load", "tt.store"])  # fmt: skip
    # uses: for(zero, steps, one, r) splat(i) addi(a, s) yield(b) + back edge, splat(x_ptr),
    # addptr(p, acc), load(q), store(q, v)
    assert len(g.edges_info) == 4 + 1 + 2 + 1 + 1 + 1 + 2 + 1 + 2
    source = g.source
    assert source.count("subgraph cluster_") == 2  # the loop and the legend
    assert re.search(r'label="tt.load\n%v : tensor<64xf32>"', source)
    assert "style=dashed" in source  # the loop-carried back edge from scf.yield
    assert 'fillcolor="#c7e9c0"' in source  # global memory ops
    assert g.highlighted == {"convert": [], "shared": []}
    without_constants = graphs.dataflow_graph(TTIR, show_constants=False)
    assert len(without_constants.nodes_info) == len(g.nodes_info) - 2


TTGIR = """
#blocked = #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
#mma = #ttg.nvidia_mma<{versionMajor = 2, versionMinor = 0, warpsPerCTA = [2, 2], instrShape = [16, 8]}>
#shared = #ttg.swizzled_shared<{vec = 8, perPhase = 1, maxPhase = 8, order = [1, 0]}>
#smem = #ttg.shared_memory
builtin.module attributes {"ttg.num-warps" = 4 : i32} {
  tt.func public @k(%x_ptr: !tt.ptr<f16>) {
    %p = tt.splat %x_ptr : !tt.ptr<f16> -> tensor<64x64x!tt.ptr<f16>, #blocked>
    %a = tt.load %p : tensor<64x64x!tt.ptr<f16>, #blocked>
    %s = ttg.local_alloc %a : (tensor<64x64xf16, #blocked>) -> !ttg.memdesc<64x64xf16, #shared, #smem>
    %b = ttg.local_load %s : !ttg.memdesc<64x64xf16, #shared, #smem> -> tensor<64x64xf16, #ttg.dot_op<{opIdx = 0, parent = #mma, kWidth = 2}>>
    %c = ttg.convert_layout %a : tensor<64x64xf16, #blocked> -> tensor<64x64xf16, #mma>
    tt.return
  }
}
"""


def test_ttgir_graph_highlights_conversions_and_shared_memory():
    ck = SimpleNamespace(asm={"ttir": TTIR, "ttgir": TTGIR}, passes=[], metadata={})
    g = graphs.dataflow_graph(ck)  # TTGIR by default when the kernel has it
    hl = g.highlighted
    assert [g.nodes_info[n][1] for n in hl["convert"]] == ["ttg.convert_layout"]
    assert sorted(g.nodes_info[n][1] for n in hl["shared"]) == ["ttg.local_alloc", "ttg.local_load"]
    conv = hl["convert"][0]
    line = re.search(rf"\t{conv} \[.*?\]\n", g.source, re.DOTALL).group(0)
    assert "#ffb347" in line and "bold" in line and "#mma" in line  # types print with aliases
    assert (hl["shared"][0], hl["shared"][1]) in g.edges_info  # local_alloc -> local_load
    assert graphs.dataflow_graph(ck, "ttir").nodes_info != g.nodes_info
    with pytest.raises(ValueError, match="ttir or ttgir"):
        graphs.dataflow_graph(SimpleNamespace(asm={"ptx": ""}, passes=[], metadata={}), "ptx")


@kl.jit
def _loop_sum(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in range(0, n, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.store(out_ptr, tl.sum(acc, axis=0))


def test_graphs_of_a_compiled_kernel():
    ck = kl.compile(_loop_sum, signature="*fp32,*fp32,i32", constexprs={"BLOCK": 128})
    g = graphs.dataflow_graph(ck)
    names = [name for _, name in g.nodes_info.values()]
    assert {"scf.for", "tt.reduce", "tt.load", "tt.store"} <= set(names)
    assert "ttgir" not in ck.asm or names  # whichever stage it drew, it drew ops
    pipe = graphs.pipeline_graph(ck)
    passes = [
        (kind, name) for kind, name in pipe.nodes_info.values() if kind in ("pass", "changed-pass")
    ]
    assert [name for _, name in passes] == [p.name for p in ck.passes]
    assert [kind == "changed-pass" for kind, _ in passes] == [p.changed for p in ck.passes]
    stages = [name for kind, name in pipe.nodes_info.values() if kind == "stage"]
    assert stages == [s for s in ck.asm if s in graphs.STAGES]
    if list(ck.asm) == ["ttir"]:
        assert pipe.nodes_info["missing"] == ("missing-stages", "ttgir,llir,ptx,cubin,sass")
        assert "target='sm_90'" in pipe.source
    assert "ms" in pipe.source


def test_passes_are_grouped_by_stage():
    records = [SimpleNamespace(name="cse", ir_after="tt.func ...", seconds=0.001, changed=True, summary=""),
               SimpleNamespace(name="coalesce", ir_after="#blocked = #ttg.blocked<{...}>", seconds=0.002,
                               changed=False, summary=""),
               SimpleNamespace(name="optimize", ir_after="define void @k() {}", seconds=0.0, changed=True,
                               summary="", stage="llir")]  # fmt: skip
    ck = SimpleNamespace(
        asm={"ttir": "", "ttgir": "", "llir": ""}, passes=records, metadata={"times": {}}
    )
    groups = graphs.passes_by_stage(ck)
    assert {k: [r.name for r in v] for k, v in groups.items()} == {"ttir": ["cse"], "ttgir": ["coalesce"],
                                                                   "llir": ["optimize"]}  # fmt: skip


def test_recorded_stages_win_and_empty_ones_are_guessed():
    from kernellab.passes.manager import PassRecord

    ptx = "//\n.version 8.0\n.target sm_90\n.visible .entry k()\n"
    records = [
        PassRecord("dce", "tt.func @k", 0.001, True, stage="ttir"),
        PassRecord("coalesce", "#blocked = #ttg.blocked<{}>", 0.001, True),  # no stage: guessed
        PassRecord("llvm-O3+nvptx", ptx, 0.01, True, stage="ptx"),
        PassRecord("ptxas", "", 0.01, True, stage="cubin"),  # an empty log: nothing to guess from
    ]
    ck = SimpleNamespace(asm={s: "" for s in ("ttir", "ttgir", "llir", "ptx", "cubin")},
                         passes=records, metadata={"times": {}})  # fmt: skip
    groups = {k: [r.name for r in v] for k, v in graphs.passes_by_stage(ck).items()}
    assert groups == {"ttir": ["dce"], "ttgir": ["coalesce"], "llir": [], "ptx": ["llvm-O3+nvptx"],
                      "cubin": ["ptxas"]}  # fmt: skip
    assert "" not in groups


@kl.jit
def _scale(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)


def test_graphs_draw_without_dot(monkeypatch, tmp_path, capsys):
    """No Graphviz `dot` on PATH (a fresh pip install): the lab lays the graph out itself and
    the SVG has every node, edge and cluster the DOT text has."""
    import xml.etree.ElementTree as ET

    monkeypatch.setenv("PATH", str(tmp_path))  # an empty directory: no `dot` anywhere
    assert not graphs.dot_available()
    g = graphs.dataflow_graph(TTIR)
    assert capsys.readouterr().err == ""
    svg = g._repr_mimebundle_()["image/svg+xml"]
    assert svg == g.svg()
    root = ET.fromstring(svg)  # well-formed XML
    ns = "{http://www.w3.org/2000/svg}"
    drawn = {n.get("data-node") for n in root.iter(f"{ns}g") if n.get("class") == "node"}
    assert drawn == {n for n in g.nodes_info if n != "legend"}
    assert len([p for p in root.iter(f"{ns}path") if p.get("class") == "edge"]) == len(g.edges_info)
    frames = [c for c in root.iter(f"{ns}g") if c.get("class") == "cluster"]
    assert [f.find(f"{ns}text").text for f in frames] == ["scf.for"]
    assert "tt.make_range" in svg and "global memory" in svg  # an op and the legend
    assert "ttg.convert_layout" in graphs.dataflow_graph(TTGIR).svg()
    # every node box lies inside the picture and no two boxes overlap
    width, height = float(root.get("width")), float(root.get("height"))
    boxes = []
    for node in root.iter(f"{ns}g"):
        rect = node.find(f"{ns}rect") if node.get("class") == "node" else None
        if rect is not None:
            x, y, w, h = (float(rect.get(k)) for k in ("x", "y", "width", "height"))
            assert 0 <= x and x + w <= width and 0 <= y and y + h <= height
            boxes.append((x, y, w, h))
    for i, (x, y, w, h) in enumerate(boxes):
        for x2, y2, w2, h2 in boxes[i + 1 :]:
            assert x + w <= x2 or x2 + w2 <= x or y + h <= y2 or y2 + h2 <= y
    pipeline = graphs.pipeline_graph(kl.compile(_scale, signature="*fp32,i32", constexprs={"BLOCK": 64}))
    assert "canonicalize" in pipeline.svg() and "<svg" in pipeline._repr_mimebundle_()["image/svg+xml"]


@pytest.mark.skipif(not graphs.dot_available(), reason="Graphviz's dot is not installed")
def test_graph_renders_svg_inline():
    bundle = graphs.dataflow_graph(TTGIR)._repr_mimebundle_()
    assert "<svg" in bundle["image/svg+xml"] and "ttg.convert_layout" in bundle["image/svg+xml"]


def _compile_for_gpu(fn, **kwargs):
    try:
        return kl.compile(fn, target="sm_90", **kwargs)
    except (ValueError, ImportError) as e:  # a build without the NVIDIA backend
        pytest.skip(f"no sm_90 compile here: {e}")


def test_graphs_and_layouts_of_a_gpu_compile():
    from kernellab.lab.widgets import layout_explorer

    ck = _compile_for_gpu(_loop_sum, signature="*fp32,*fp32,i32", constexprs={"BLOCK": 256})
    g = graphs.dataflow_graph(ck)
    assert "TTGIR" in g.source and "#blocked" in g.source
    groups = graphs.passes_by_stage(ck)
    assert [r.name for r in groups["ttir"]] == [p.name for p in ck.passes[: len(groups["ttir"])]]
    assert "coalesce" in [r.name for r in groups["ttgir"]]
    pipe = graphs.pipeline_graph(ck)
    stages = [name for kind, name in pipe.nodes_info.values() if kind == "stage"]
    assert stages[:3] == ["ttir", "ttgir", "llir"]
    view = layout_explorer.layout(ck, "%offs")
    ll, value = layout_explorer.layout_of_value(ck, "%offs")
    assert value.shape == (256,)
    for lane in (0, 5, 31):
        expected = [c for c in ll.coords_of_thread(lane, 0)]
        assert view.data.elements_of_thread(lane) == sorted(set(expected), key=expected.index)


def test_a_jit_kernel_is_drawn_from_its_last_compile():
    @kl.jit
    def scale(x_ptr, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 3, mask=offs < n)

    with pytest.raises(ValueError, match="not been compiled yet"):
        graphs.dataflow_graph(scale)
    import numpy as np

    x = np.random.default_rng().standard_normal(40).astype(np.float32)
    expected = x * 3
    scale[(1,)](x, 40, BLOCK=64)
    np.testing.assert_allclose(x, expected)
    names = {name for _, name in graphs.dataflow_graph(scale).nodes_info.values()}
    assert {"tt.load", "tt.store", "arith.mulf"} <= names
