"""graphviz pictures of a kernel: its dataflow graph (TTIR or TTGIR) and its compile pipeline.

    kl.lab.dataflow_graph(ck)             # TTGIR when compiled for a GPU, else TTIR
    kl.lab.dataflow_graph(ck, "ttir")
    kl.lab.pipeline_graph(ck)             # stages -> passes, changed passes filled, times

Both return a `graphviz.Digraph` (a `KernelGraph`), which renders inline as SVG: drawn by
Graphviz's `dot` program where it is installed, else by kernellab.lab.graph_svg's own layered
layout (no system binary needed). `.source` is the DOT text, `.svg()` the picture.

In the dataflow graph every op is a node labelled with its name and result (`%offs :
tensor<1024xi32, #blocked>`), every SSA use an edge, each loop or region op a cluster.
Layout conversions (`ttg.convert_layout`) are orange, shared-memory ops (`ttg.local_alloc`,
`local_load`, `local_store`, ...) blue, global memory ops green, `tt.dot` purple.
"""

from __future__ import annotations

import html
import io
import shutil

CONVERT_OPS = {"ttg.convert_layout"}
SHARED_OPS = {"ttg.local_alloc", "ttg.local_load", "ttg.local_store", "ttg.local_dealloc",
              "ttg.async_copy_global_to_local", "ttg.memdesc_subview", "ttg.memdesc_trans"}  # fmt: skip
GLOBAL_MEMORY_OPS = {"tt.load", "tt.store", "tt.atomic_rmw", "tt.atomic_cas"}
STYLES = {
    "convert": {"fillcolor": "#ffb347", "style": "filled,bold", "penwidth": "2"},
    "shared": {"fillcolor": "#9ecae1", "style": "filled,bold", "penwidth": "2"},
    "global": {"fillcolor": "#c7e9c0", "style": "filled"},
    "dot": {"fillcolor": "#d4b9da", "style": "filled"},
    "constant": {
        "fillcolor": "#f5f5f5",
        "style": "filled",
        "fontcolor": "#666666",
        "fontsize": "9",
    },
    "op": {"fillcolor": "white", "style": "filled"},
    "argument": {"shape": "ellipse", "fillcolor": "#fff7bc", "style": "filled"},
}


def dot_available() -> bool:
    return shutil.which("dot") is not None


def _graphviz():
    try:
        import graphviz
    except ImportError:
        raise ImportError(
            "the graphs need the graphviz Python package: pip install -e '.[lab]' "
            "(Graphviz's `dot` program is optional: without it the lab draws the graph itself)"
        ) from None
    return graphviz


def _kernel_graph_class():
    graphviz = _graphviz()
    from kernellab.lab.graph_svg import Drawing, DrawnEdge, DrawnNode, to_svg

    class KernelGraph(graphviz.Digraph):
        """A Digraph that draws itself without Graphviz when `dot` is missing.

        Every node, edge and cluster is also recorded as typed data (`drawing`), from which
        kernellab.lab.graph_svg lays the graph out in pure Python. `nodes_info` maps node id ->
        (kind, op name); `edges_info` lists (tail, head) pairs.
        """

        @property
        def drawing(self) -> Drawing:
            if "_drawing" not in self.__dict__:
                self._drawing = Drawing()
            return self._drawing

        def node(self, name, label=None, _attributes=None, **attrs):
            super().node(name, label, _attributes=_attributes, **attrs)
            if not str(label or "").startswith("<"):  # an HTML-like label: the legend, kept apart
                text = name if label is None else str(label)
                self.drawing.nodes[name] = DrawnNode(name, text.split("\n"), dict(attrs), None)

        def edge(self, tail_name, head_name, label=None, _attributes=None, **attrs):
            super().edge(tail_name, head_name, label, _attributes=_attributes, **attrs)
            self.drawing.edges.append(DrawnEdge(tail_name, head_name, dict(attrs)))

        def attr(self, kw=None, _attributes=None, **attrs):
            super().attr(kw, _attributes=_attributes, **attrs)
            if kw is None:
                if "label" in attrs:
                    self.drawing.label = str(attrs["label"])
                if "rankdir" in attrs:
                    self.drawing.rankdir = str(attrs["rankdir"])

        def subgraph(self, graph=None, **kwargs):
            if graph is not None:
                name = graph.name or ""
                self.drawing.merge(graph.drawing, name if name.startswith("cluster") else None,
                                   graph.drawing.label)  # fmt: skip
            return super().subgraph(graph, **kwargs)

        def svg(self) -> str:
            """The graph as SVG: drawn by `dot` where it is installed, else by graph_svg."""
            if dot_available():
                return self.pipe(format="svg", encoding="utf-8")
            return to_svg(self.drawing)

        def _repr_mimebundle_(self, include=None, exclude=None, **kwargs):
            if not dot_available():
                return {"image/svg+xml": to_svg(self.drawing), "text/plain": repr(self)}
            return super()._repr_mimebundle_(include=include, exclude=exclude, **kwargs)

        @property
        def highlighted(self) -> dict[str, list[str]]:
            """Node ids of layout conversions ('convert') and shared-memory ops ('shared')."""
            out: dict[str, list[str]] = {"convert": [], "shared": []}
            for node, (kind, _) in self.nodes_info.items():
                if kind in out:
                    out[kind].append(node)
            return out

    return KernelGraph


def _new_graph(name: str, **attrs):
    cls = _kernel_graph_class()
    g = cls(name=name, graph_attr={"rankdir": "TB", "fontname": "Helvetica", "fontsize": "11", **attrs},
            node_attr={"shape": "box", "fontname": "Helvetica", "fontsize": "10", "style": "filled",
                       "fillcolor": "white", "margin": "0.08,0.04"},
            edge_attr={"arrowsize": "0.6", "color": "#555555"})  # fmt: skip
    g.drawing.rankdir = attrs.get("rankdir", "TB")
    g.nodes_info = {}
    g.edges_info = []
    return g


# -- IR access ----------------------------------------------------------------------------------


def compiled_kernel(obj):
    """`obj` if it is a CompiledKernel; a @kl.jit kernel's most recent specialization; else None."""
    if hasattr(obj, "asm"):
        return obj
    cache = getattr(obj, "cache", None)
    if isinstance(cache, dict) and hasattr(obj, "binder"):
        if not cache:
            raise ValueError(
                f"{getattr(obj, '__name__', 'the kernel')} has not been compiled yet: launch it once, "
                "or pass kl.compile(kernel, signature=..., constexprs=...)"
            )
        return list(cache.values())[-1]
    return None


def _stage_text(kernel, stage: str | None) -> tuple[str, str]:
    """(stage, IR text) from a CompiledKernel (or @kl.jit kernel), IR text or an xDSL module."""
    kernel = compiled_kernel(kernel) or kernel
    asm = getattr(kernel, "asm", None)
    if asm is not None:
        if stage is None:
            stage = "ttgir" if "ttgir" in asm else "ttir"
        if stage not in asm:
            have = ", ".join(k for k in asm if k in ("ttir", "ttgir"))
            why = " (compile with target='sm_90' or 'sm_80' for TTGIR)" if stage == "ttgir" else ""
            raise ValueError(f"this kernel has no {stage} stage{why}; available IR stages: {have}")
        if stage not in ("ttir", "ttgir"):
            raise ValueError(f"dataflow graphs are drawn for ttir or ttgir, not {stage}")
        return stage, asm[stage]
    if isinstance(kernel, str):
        return (stage or ("ttgir" if "ttg." in kernel else "ttir")), kernel
    from xdsl.dialects.builtin import ModuleOp

    if isinstance(kernel, ModuleOp):
        from kernellab.ir import print_module

        text = print_module(kernel)
        return (stage or ("ttgir" if "ttg." in text else "ttir")), text
    raise TypeError(
        f"dataflow_graph takes a CompiledKernel (kl.compile(...)), IR text or a module, not "
        f"{type(kernel).__name__}; for a @kl.jit kernel, compile it first"
    )


def value_names(module) -> dict:
    """SSAValue -> printed name (without '%'), exactly as the module prints."""
    from xdsl.printer import Printer

    printer = Printer(stream=io.StringIO())
    printer.print_op(module)
    return dict(getattr(printer, "_ssa_values", {}))


class _TypePrinter:
    """Prints types with encodings by alias name (`tensor<1024xi32, #blocked>`) as the TTGIR text."""

    def __init__(self, module):
        from xdsl.printer import Printer

        from kernellab.ir import aliases_of

        aliases = aliases_of(module)

        class AliasPrinter(Printer):
            def print_attribute(self, attribute):
                name = aliases.get(attribute) if type(attribute) in _alias_types() else None
                if name is not None:
                    self.print_string(name)
                    return
                super().print_attribute(attribute)

        self._cls = AliasPrinter
        self._cache: dict = {}

    def __call__(self, attr) -> str:
        text = self._cache.get(attr)
        if text is None:
            out = io.StringIO()
            self._cls(stream=out).print_attribute(attr)
            text = self._cache[attr] = out.getvalue()
        return text


def _alias_types() -> tuple:
    try:
        from kernellab.ir import ttg
    except ImportError:
        return ()
    names = ("BlockedEncodingAttr", "NvidiaMmaEncodingAttr", "SwizzledSharedEncodingAttr",
             "SharedMemorySpaceAttr")  # fmt: skip
    return tuple(getattr(ttg, n) for n in names if hasattr(ttg, n))


def _kind(op_name: str) -> str:
    if op_name in CONVERT_OPS:
        return "convert"
    if op_name in SHARED_OPS or op_name.startswith(("ttg.local_", "ttg.async_copy", "ttng.async_tma")):
        return "shared"  # TMA copies, too: a tile between global and shared memory
    if op_name in GLOBAL_MEMORY_OPS:
        return "global"
    if op_name == "tt.dot":
        return "dot"
    if op_name == "arith.constant":
        return "constant"
    return "op"


def _short(text: str, limit: int = 90) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


# -- the dataflow graph -------------------------------------------------------------------------


def dataflow_graph(
    kernel, stage: str | None = None, show_constants: bool = True, max_ops: int = 400
):
    """The dataflow graph of `kernel`'s TTIR or TTGIR (default: TTGIR when present) as a Digraph.

    Nodes: function arguments (ellipses) and ops (boxes: op name, result name and type); edges:
    SSA uses; clusters: ops with regions (scf.for, scf.if, tt.reduce, ...), whose header node
    stands for the op's results and its body's block arguments. `show_constants=False` drops
    arith.constant nodes (their uses are then unconnected).
    """
    from kernellab.ir import parse_module

    stage, text = _stage_text(kernel, stage)
    module = parse_module(text)
    names = value_names(module)
    type_str = _TypePrinter(module)
    g = _new_graph(f"{stage}-dataflow")
    g.attr(label=f"{stage.upper()} dataflow", labelloc="t")
    producer: dict = {}  # SSAValue -> node id
    counter = [0]

    def label_of(op, extra: str = "") -> str:
        lines = [op.name + extra]
        if op.name == "arith.constant":
            value = op.properties.get("value")
            if value is None:
                value = op.attributes.get("value")
            if value is not None:
                lines = [f"constant {_short(_constant_text(value, type_str), 30)}"]
        for r in op.results:
            lines.append(_short(f"%{names.get(r, '?')} : {type_str(r.type)}"))
        return "\n".join(lines)

    def add_node(graph, op, extra="") -> str:
        counter[0] += 1
        if counter[0] > max_ops:
            raise ValueError(
                f"the {stage} has more than {max_ops} ops; pass max_ops= to draw it anyway"
            )
        node = f"op{counter[0]}"
        kind = _kind(op.name)
        graph.node(node, label_of(op, extra), **STYLES[kind])
        g.nodes_info[node] = (kind, op.name)
        for r in op.results:
            producer[r] = node
        return node

    def connect(op, node) -> None:
        for operand in op.operands:
            tail = producer.get(operand)
            if tail is not None:
                g.edge(tail, node)
                g.edges_info.append((tail, node))

    def walk_block(graph, block, header=None) -> None:
        for arg in block.args:
            if header is not None:
                producer[arg] = header
        for op in block.ops:
            if op.name in ("tt.return",) and not op.operands:
                continue
            if op.name == "arith.constant" and not show_constants:
                continue
            if op.regions:
                counter[0] += 1
                cluster_name = f"cluster_{counter[0]}"
                with graph.subgraph(name=cluster_name) as sub:
                    sub.attr(label=op.name, style="rounded,dashed", color="#888888", fontsize="10")
                    head = add_node(sub, op, "  (results, block arguments)" if op.results else "")
                    connect(op, head)
                    for region in op.regions:
                        for inner in region.blocks:
                            walk_block(sub, inner, head)
                continue
            node = add_node(graph, op)
            connect(op, node)
            if header is not None and op.name in (
                "scf.yield",
                "tt.reduce.return",
                "tt.scan.return",
            ):
                g.edge(node, header, style="dashed", color="#aa3333", constraint="false")
                g.edges_info.append((node, header))

    from kernellab.ir.tt import FuncOp

    funcs = [op for op in module.walk() if isinstance(op, FuncOp)]
    for func in funcs:
        for arg in func.args:
            node = f"arg_{names.get(arg, len(producer))}"
            g.node(node, f"%{names.get(arg, '?')}\n{type_str(arg.type)}", **STYLES["argument"])
            g.nodes_info[node] = ("argument", "argument")
            producer[arg] = node
        walk_block(g, func.body.block)
    _add_legend(g, stage)
    return g


def _constant_text(value, type_str) -> str:
    data = getattr(value, "value", None)
    inner = getattr(data, "data", None)
    if inner is not None and not isinstance(inner, (list, tuple)):
        return str(inner)
    text = type_str(value)
    return text.split(":")[0].strip()


def _add_legend(g, stage: str) -> None:
    rows = [("layout conversion", STYLES["convert"]["fillcolor"]),
            ("shared memory", STYLES["shared"]["fillcolor"]),
            ("global memory", STYLES["global"]["fillcolor"]), ("tt.dot", STYLES["dot"]["fillcolor"])]  # fmt: skip
    if stage == "ttir":
        rows = rows[2:]
    cells = "".join(
        f'<TR><TD BGCOLOR="{color}">{html.escape(name)}</TD></TR>' for name, color in rows
    )
    g.drawing.legend = rows
    with g.subgraph(name="cluster_legend") as legend:
        legend.attr(label="legend", style="dotted", fontsize="9")
        legend.node("legend", f'<<TABLE BORDER="0" CELLBORDER="1" CELLSPACING="0">{cells}</TABLE>>',
                    shape="plaintext", fontsize="9", style="")  # fmt: skip


# -- the pipeline ---------------------------------------------------------------------------------

STAGES = ("ttir", "ttgir", "llir", "ptx", "cubin", "sass")


def _stage_of_pass_text(text: str) -> str | None:
    """The stage whose artifact `text` (a pass's IR or log) looks like, if any."""
    head = text[:4000]
    if "ptxas" in head:
        return "cubin"
    if ".version" in head and (".target" in head or "NVPTX" in head):
        return "ptx"
    if "define " in head and ("target triple" in head or "declare " in head or "@" in head):
        return "llir"
    if "ttg." in head or "#ttg" in head:
        return "ttgir"
    if "tt." in head:
        return "ttir"
    return None


def passes_by_stage(ck) -> dict[str, list]:
    """ck.passes grouped by the stage that ran them: a PassRecord's `stage` when it has one,
    else read off its IR (TTGIR once `ttg.` appears, LLVM IR for `define`, PTX for `.version`,
    the ptxas log for cubin); stages only move forward."""
    stages = [s for s in ck.asm if s in STAGES] or ["ttir"]
    groups: dict[str, list] = {s: [] for s in stages}
    order = list(STAGES)
    current = stages[0]
    for record in ck.passes:
        stage = getattr(record, "stage", None)  # set by kl.compile; "" or absent: guess
        if not stage:
            found = _stage_of_pass_text(record.ir_after or "")
            if found in groups and order.index(found) > order.index(current):
                current = found
            stage = current
        current = stage
        groups.setdefault(stage, []).append(record)
    return groups


def pipeline_graph(ck, show_unchanged: bool = True):
    """The compile pipeline of a CompiledKernel: source → stages (clusters) → their passes.

    Changed passes are filled; each pass shows its time and summary, each stage its time.
    Stages the kernel was not compiled to are drawn greyed out with the reason.
    """
    ck = compiled_kernel(ck) or ck
    if not hasattr(ck, "asm") or not hasattr(ck, "passes"):
        raise TypeError(
            f"pipeline_graph takes a CompiledKernel (kl.compile(...)), not {type(ck).__name__}"
        )
    metadata = ck.metadata
    times = dict(metadata.get("times", {}))
    cached = bool(metadata.get("cache_hit")) and "compile_times" in metadata
    if cached:  # loaded from the disk cache: show the times of the compile that filled it
        times = dict(metadata["compile_times"])
    groups = passes_by_stage(ck)
    g = _new_graph("pipeline", rankdir="LR")
    g.attr(label=f"compile pipeline of {getattr(ck, 'name', 'kernel')} (target {metadata.get('target', '?')})"
                 + ("\nloaded from the disk cache; times are those of the original compile" if cached else ""),
           labelloc="t")  # fmt: skip
    front_ms = times.get("frontend")
    g.node("source", "Python source" + (f"\nfrontend {front_ms * 1e3:.1f} ms" if front_ms is not None else ""),
           shape="note", fillcolor="#fff7bc", style="filled")  # fmt: skip
    g.nodes_info["source"] = ("source", "source")
    previous = "source"
    present = [s for s in dict.keys(ck.asm) if s in STAGES and dict.get(ck.asm, s) is not None]
    on_demand = [
        s for s in STAGES if s not in present and s not in dict.keys(ck.asm) and s in ck.asm
    ]
    missing = [s for s in STAGES if s not in present and s not in on_demand]
    target = metadata.get("target", "")
    if missing:
        if target == "interpreter":
            why = (
                "not compiled: the interpreter target stops at TTIR; use target='sm_90' or 'sm_80'"
            )
        else:
            why = "not produced" + (
                f" ({metadata['sass']})" if missing == ["sass"] and metadata.get("sass") else ""
            )
        g.node("missing", f"{' → '.join(missing)}\n({why})", shape="box", style="dashed",
               color="#999999", fontcolor="#999999")  # fmt: skip
        g.nodes_info["missing"] = ("missing-stages", ",".join(missing))
    for stage in present:
        node = f"stage_{stage}"
        ms = times.get(stage)
        records = groups.get(stage, [])
        with g.subgraph(name=f"cluster_{stage}") as sub:
            sub.attr(label=f"{stage}" + (f"  {ms * 1e3:.1f} ms" if ms is not None else ""),
                     style="rounded", color="#4a6fa5", fontsize="11", rankdir="TB")  # fmt: skip
            entry = previous
            for j, record in enumerate(records):
                if not show_unchanged and not record.changed:
                    continue
                pnode = f"pass_{stage}_{j}"
                label = f"{record.name}\n{record.seconds * 1e3:.2f} ms"
                if record.summary:
                    label += f"\n{record.summary}"
                style = ({"fillcolor": "#ffd166", "style": "filled,bold"} if record.changed
                         else {"fillcolor": "white", "style": "filled", "fontcolor": "#777777"})  # fmt: skip
                sub.node(pnode, label, **style)
                g.nodes_info[pnode] = ("changed-pass" if record.changed else "pass", record.name)
                g.edge(entry, pnode)
                g.edges_info.append((entry, pnode))
                entry = pnode
            sub.node(node, f"{stage}\n{_artifact_size(ck.asm[stage])}", shape="folder",
                     fillcolor="#dbe9f6", style="filled")  # fmt: skip
            g.nodes_info[node] = ("stage", stage)
            g.edge(entry, node)
            g.edges_info.append((entry, node))
        previous = node
    for stage in on_demand:  # e.g. SASS: nvdisasm runs when ck.asm["sass"] is first read
        node = f"stage_{stage}"
        g.node(node, f"{stage}\n(made on demand: ck.asm[{stage!r}])", shape="folder", style="dashed",
               color="#4a6fa5")  # fmt: skip
        g.nodes_info[node] = ("on-demand-stage", stage)
        g.edge(previous, node, style="dashed")
        g.edges_info.append((previous, node))
        previous = node
    if missing:
        g.edge(previous, "missing", style="dashed", color="#bbbbbb")
        g.edges_info.append((previous, "missing"))
    return g


def _artifact_size(artifact) -> str:
    if isinstance(artifact, bytes):
        return f"{len(artifact):,} bytes"
    return f"{artifact.count(chr(10)) + 1:,} lines"


__all__ = [
    "compiled_kernel",
    "dataflow_graph",
    "dot_available",
    "passes_by_stage",
    "pipeline_graph",
    "value_names",
]  # fmt: skip
