"""Graphs drawn without Graphviz: a layered layout and an SVG, in pure Python.

The lab's graphs (kernellab.lab.graphs) are Graphviz Digraphs; where the `dot` program is
installed it draws them. Where it is not (a fresh `pip install`, a hosted notebook), this module
draws the same nodes, edges and clusters, recorded as typed data while the graph was built, so
the graphs never need a system binary:

- layers: each node one layer below the deepest node it depends on (edges marked
  `constraint=false`, like a loop's yield back to its header, don't count);
- order inside a layer: a few sweeps that move each node to the mean position of its
  neighbours (fewer crossings), keeping each cluster's nodes together;
- SVG: boxes (ellipses for arguments) with their label lines, edges as curves with arrows,
  clusters as dashed frames, and the legend's rows.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field

FONT_SIZE = 10
CHAR_WIDTH = 0.6 * FONT_SIZE  # Helvetica's mean advance, near enough to size the boxes
LINE_HEIGHT = 13
PAD_X, PAD_Y = 8, 5
GAP_X, GAP_Y = 18, 34
MARGIN = 16


@dataclass
class DrawnNode:
    name: str
    lines: list[str]
    attrs: dict[str, str]
    cluster: str | None  # the innermost cluster that holds it


@dataclass
class DrawnEdge:
    tail: str
    head: str
    attrs: dict[str, str]


@dataclass
class DrawnCluster:
    name: str
    label: str
    parent: str | None


@dataclass
class Drawing:
    """What a KernelGraph holds, for the SVG: nodes, edges, clusters, legend rows."""

    label: str = ""
    rankdir: str = "TB"
    nodes: dict[str, DrawnNode] = field(default_factory=dict)
    edges: list[DrawnEdge] = field(default_factory=list)
    clusters: dict[str, DrawnCluster] = field(default_factory=dict)
    legend: list[tuple[str, str]] = field(default_factory=list)  # (name, fill colour)

    def merge(self, sub: Drawing, cluster: str | None, label: str) -> None:
        """Add a subgraph's drawing; its nodes without a cluster of their own join `cluster`."""
        if cluster is not None:
            self.clusters[cluster] = DrawnCluster(cluster, label, None)
        for c in sub.clusters.values():
            self.clusters[c.name] = DrawnCluster(c.name, c.label, c.parent or cluster)
        for node in sub.nodes.values():
            self.nodes[node.name] = DrawnNode(node.name, node.lines, node.attrs, node.cluster or cluster)
        self.edges += sub.edges
        self.legend += sub.legend


def _size(node: DrawnNode) -> tuple[float, float]:
    width = max((len(line) for line in node.lines), default=1) * CHAR_WIDTH + 2 * PAD_X
    height = len(node.lines) * LINE_HEIGHT + 2 * PAD_Y
    if node.attrs.get("shape") == "ellipse":
        width, height = width * 1.2, height * 1.15
    return width, height


def _layers(d: Drawing) -> dict[str, int]:
    """Longest-path layering over the constraining edges (a cycle's closing edge is ignored)."""
    preds: dict[str, list[str]] = {n: [] for n in d.nodes}
    for e in d.edges:
        if e.attrs.get("constraint") != "false" and e.tail in d.nodes and e.head in d.nodes:
            preds[e.head].append(e.tail)
    layer: dict[str, int] = {}
    visiting: set[str] = set()

    def depth(n: str) -> int:
        if n in layer:
            return layer[n]
        visiting.add(n)
        deepest = max((depth(p) + 1 for p in preds[n] if p not in visiting), default=0)
        visiting.discard(n)
        layer[n] = deepest
        return deepest

    for n in d.nodes:
        depth(n)
    return layer


def _order(d: Drawing, layer: dict[str, int]) -> list[list[str]]:
    rows: list[list[str]] = [[] for _ in range(max(layer.values(), default=-1) + 1)]
    for n in d.nodes:  # insertion order: program order for the dataflow graph
        rows[layer[n]].append(n)
    neighbours: dict[str, list[str]] = {n: [] for n in d.nodes}
    for e in d.edges:
        if e.tail in d.nodes and e.head in d.nodes and e.tail != e.head:
            neighbours[e.tail].append(e.head)
            neighbours[e.head].append(e.tail)
    for _ in range(4):
        position = {n: i / max(len(row), 1) for row in rows for i, n in enumerate(row)}
        for row in rows:
            mean = {
                n: sum(position[m] for m in neighbours[n]) / len(neighbours[n])
                if neighbours[n] else position[n]
                for n in row
            }  # fmt: skip
            groups: dict[str | None, list[str]] = {}
            for n in row:
                groups.setdefault(d.nodes[n].cluster, []).append(n)
            group_mean = {c: sum(mean[n] for n in ns) / len(ns) for c, ns in groups.items()}
            row.sort(key=lambda n: (group_mean[d.nodes[n].cluster], mean[n]))
    return rows


def _place(d: Drawing, rows: list[list[str]]) -> dict[str, tuple[float, float, float, float]]:
    """Node → (x, y, width, height) of its box (top-left corner), laid out top to bottom."""
    sizes = {n: _size(d.nodes[n]) for n in d.nodes}
    across = "x" if d.rankdir == "TB" else "y"
    extent = [sum(sizes[n][0 if across == "x" else 1] for n in row) + GAP_X * (len(row) - 1)
              for row in rows]  # fmt: skip
    widest = max(extent, default=0)
    boxes = {}
    # room above the first row for the title and for the frames (and labels) of clusters
    top = MARGIN + (LINE_HEIGHT + 4 if d.label else 0) + (LINE_HEIGHT + 12 if d.clusters else 0)
    along = top if across == "x" else MARGIN + 12
    for row, span in zip(rows, extent):
        thickness = max((sizes[n][1 if across == "x" else 0] for n in row), default=0)
        pos = (MARGIN + 12 if across == "x" else top) + (widest - span) / 2
        for n in row:
            w, h = sizes[n]
            if across == "x":
                boxes[n] = (pos, along + (thickness - h) / 2, w, h)
                pos += w + GAP_X
            else:
                boxes[n] = (along + (thickness - w) / 2, pos, w, h)
                pos += h + GAP_X
        along += thickness + GAP_Y * (1 if across == "x" else 2)
    return boxes


def _cluster_boxes(d: Drawing, boxes) -> dict[str, tuple[float, float, float, float]]:
    members: dict[str, list[str]] = {c: [] for c in d.clusters}
    for n, node in d.nodes.items():
        c = node.cluster
        while c is not None and c in d.clusters:
            members[c].append(n)
            c = d.clusters[c].parent
    depth = {}
    for c in d.clusters:
        k, p = 0, d.clusters[c].parent
        while p is not None and p in d.clusters:
            k, p = k + 1, d.clusters[p].parent
        depth[c] = k
    out = {}
    for c, ns in members.items():
        if not ns:
            continue
        pad = 10 - 2 * min(depth[c], 3)
        x0 = min(boxes[n][0] for n in ns) - pad
        y0 = min(boxes[n][1] for n in ns) - pad - LINE_HEIGHT
        x1 = max(boxes[n][0] + boxes[n][2] for n in ns) + pad
        y1 = max(boxes[n][1] + boxes[n][3] for n in ns) + pad
        out[c] = (x0, y0, x1 - x0, y1 - y0)
    return out


def _stroke(attrs: dict[str, str], default: str = "#333333") -> str:
    style = attrs.get("style", "")
    parts = [f'stroke="{html.escape(attrs.get("color", default))}"']
    if "dashed" in style:
        parts.append('stroke-dasharray="4 3"')
    elif "dotted" in style:
        parts.append('stroke-dasharray="1 3"')
    width = attrs.get("penwidth") or ("2" if "bold" in style else "1")
    parts.append(f'stroke-width="{html.escape(width)}"')
    return " ".join(parts)


def to_svg(d: Drawing) -> str:
    """The drawing as a standalone SVG document."""
    layer = _layers(d)
    rows = _order(d, layer)
    boxes = _place(d, rows)
    clusters = _cluster_boxes(d, boxes)
    right = max((x + w for x, _, w, _ in [*boxes.values(), *clusters.values()]), default=0)
    bottom = max((y + h for _, y, _, h in [*boxes.values(), *clusters.values()]), default=0)
    legend_height = (len(d.legend) * (LINE_HEIGHT + 4) + 20) if d.legend else 0
    width = max(right + MARGIN, len(d.label) * CHAR_WIDTH * 1.1 + 2 * MARGIN, 160)
    height = bottom + MARGIN + legend_height
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
        f'viewBox="0 0 {width:.0f} {height:.0f}" font-family="Helvetica, Arial, sans-serif" '
        f'font-size="{FONT_SIZE}" class="kernellab-graph">',
        '<defs><marker id="kl-arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" '
        'markerHeight="7" orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" '
        'fill="#555555"/></marker></defs>',
        f'<rect width="{width:.0f}" height="{height:.0f}" fill="white"/>',
    ]
    if d.label:
        out.append(f'<text x="{min(width / 2, 400):.1f}" y="{MARGIN + 4}" text-anchor="middle" '
                   f'font-size="12">{html.escape(d.label)}</text>')  # fmt: skip
    for c in sorted(clusters, key=lambda c: clusters[c][2] * clusters[c][3], reverse=True):
        x, y, w, h = clusters[c]
        out.append(f'<g class="cluster"><rect x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" height="{h:.1f}" '
                   f'rx="6" fill="none" stroke="#888888" stroke-dasharray="5 3"/>'
                   f'<text x="{x + 6:.1f}" y="{y + LINE_HEIGHT - 2:.1f}" fill="#555555">'
                   f"{html.escape(d.clusters[c].label)}</text></g>")  # fmt: skip
    for e in d.edges:
        if e.tail not in boxes or e.head not in boxes:
            continue
        out.append(_edge_path(boxes[e.tail], boxes[e.head], e.attrs, d.rankdir))
    for n, (x, y, w, h) in boxes.items():
        out.append(_node_svg(d.nodes[n], x, y, w, h))
    if d.legend:
        y = bottom + MARGIN
        out.append(f'<text x="{MARGIN}" y="{y + 8:.1f}" fill="#555555">legend</text>')
        for i, (name, color) in enumerate(d.legend):
            top = y + 14 + i * (LINE_HEIGHT + 4)
            out.append(f'<rect x="{MARGIN}" y="{top:.1f}" width="14" height="{LINE_HEIGHT - 2}" '
                       f'fill="{html.escape(color)}" stroke="#333333"/><text x="{MARGIN + 20}" '
                       f'y="{top + LINE_HEIGHT - 4:.1f}">{html.escape(name)}</text>')  # fmt: skip
    out.append("</svg>")
    return "\n".join(out)


def _node_svg(node: DrawnNode, x: float, y: float, w: float, h: float) -> str:
    attrs = node.attrs
    style = attrs.get("style", "filled")
    fill = attrs.get("fillcolor", "white") if "filled" in style else "white"
    stroke = _stroke(attrs)
    if attrs.get("shape") == "ellipse":
        shape = (f'<ellipse cx="{x + w / 2:.1f}" cy="{y + h / 2:.1f}" rx="{w / 2:.1f}" '
                 f'ry="{h / 2:.1f}" fill="{html.escape(fill)}" {stroke}/>')  # fmt: skip
    else:
        rx = 6 if attrs.get("shape") in ("note", "folder") else 2
        shape = (f'<rect x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" height="{h:.1f}" rx="{rx}" '
                 f'fill="{html.escape(fill)}" {stroke}/>')  # fmt: skip
    color = html.escape(attrs.get("fontcolor", "#000000"))
    top = y + h / 2 - (len(node.lines) * LINE_HEIGHT) / 2 + LINE_HEIGHT - 3
    texts = "".join(
        f'<text x="{x + w / 2:.1f}" y="{top + i * LINE_HEIGHT:.1f}" text-anchor="middle" '
        f'fill="{color}">{html.escape(line)}</text>'
        for i, line in enumerate(node.lines)
    )
    name = html.escape(node.name)
    return f'<g class="node" data-node="{name}"><title>{name}</title>{shape}{texts}</g>'


def _edge_path(tail, head, attrs: dict[str, str], rankdir: str) -> str:
    tx, ty, tw, th = tail
    hx, hy, hw, hh = head
    if rankdir == "TB":
        x0, y0, x1, y1 = tx + tw / 2, ty + th, hx + hw / 2, hy
        if y1 <= y0:  # a back edge (a loop's yield to its header): leave and enter from the side
            x0, y0, x1, y1 = tx + tw, ty + th / 2, hx + hw, hy + hh / 2
            bend = 40 + abs(y1 - y0) * 0.1
            d = f"M {x0:.1f} {y0:.1f} C {x0 + bend:.1f} {y0:.1f}, {x1 + bend:.1f} {y1:.1f}, {x1:.1f} {y1:.1f}"
        else:
            mid = (y0 + y1) / 2
            d = f"M {x0:.1f} {y0:.1f} C {x0:.1f} {mid:.1f}, {x1:.1f} {mid:.1f}, {x1:.1f} {y1:.1f}"
    else:
        x0, y0, x1, y1 = tx + tw, ty + th / 2, hx, hy + hh / 2
        mid = (x0 + x1) / 2
        d = f"M {x0:.1f} {y0:.1f} C {mid:.1f} {y0:.1f}, {mid:.1f} {y1:.1f}, {x1:.1f} {y1:.1f}"
    return f'<path class="edge" d="{d}" fill="none" {_stroke(attrs, "#555555")} marker-end="url(#kl-arrow)"/>'


__all__ = ["DrawnCluster", "DrawnEdge", "DrawnNode", "Drawing", "to_svg"]
