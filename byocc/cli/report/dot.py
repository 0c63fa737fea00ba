"""``byocc show MODEL --format dot``: the report's graph as Graphviz text.

One ``cluster_f<k>`` per drawn function (its parameters, bindings and result; a region per
offloaded call, filled with its backend's colour), one ``cluster_o<k>`` per offloaded
function (its body, one sub-cluster per composite call). Node ids are ``f<k>_<i>`` /
``o<k>_<i>``; every node has its whole text as ``tooltip`` (shown by the SVG Graphviz
makes). Pipe it to ``dot -Tsvg`` (or -Tpng); large modules take dot a while.
"""

from __future__ import annotations

from .graph import Graph
from .graph import ModuleGraphs


def _q(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _graph_lines(graph: Graph, prefix: str, colours: dict[str, tuple[str, str, str]]) -> list[str]:
    lines = []
    cluster_of = {}
    for k, (_, members) in enumerate(graph.clusters):
        for i in members:
            cluster_of[i] = k
    opened: int | None = None
    for i, node in enumerate(graph.nodes):
        k = cluster_of.get(i)
        if k != opened:
            if opened is not None:
                lines.append("    }")
            if k is not None:
                lines.append(f"    subgraph cluster_{prefix}c{k} {{ label={_q(graph.clusters[k][0])}; "
                             "style=dashed; fontname=Courier; fontsize=10;")
            opened = k
        attrs = [f"label={_q(chr(10).join(node.label))}", f"tooltip={_q(node.title)}"]
        if node.kind in ("param", "return"):
            attrs.append('shape=box, style="rounded,filled", fillcolor="#eef1f5", color="#aab2bf"')
        elif node.kind == "region" and node.backend in colours:
            _, stroke, fill = colours[node.backend]
            attrs.append(f'style=filled, fillcolor="{fill}", color="{stroke}", penwidth=2')
        elif node.heavy:
            attrs.append('style=filled, fillcolor="#fff4e6", color="#d9480f", penwidth=2')
        lines.append(f"    {prefix}_{i} [{', '.join(attrs)}];")
    if opened is not None:
        lines.append("    }")
    for i, node in enumerate(graph.nodes):
        lines.extend(f"    {prefix}_{u} -> {prefix}_{i};" for u in node.inputs)
    return lines


def module_dot(graphs: ModuleGraphs, colours: dict[str, tuple[str, str, str]]) -> str:
    out = ["digraph byocc {",
           '  graph [rankdir=TB, nodesep=0.22, ranksep=0.32, fontname="Helvetica"];',
           '  node [shape=box, fontname="Courier", fontsize=10, style=filled, fillcolor=white];',
           '  edge [color="#8c95a6", arrowsize=0.7];']
    for k, graph in enumerate(graphs.drawn):
        out.append(f"  subgraph cluster_f{k} {{")
        out.append(f"    label={_q(graph.name)};")
        out.extend(_graph_lines(graph, f"f{k}", colours))
        out.append("  }")
    for k, off in enumerate(graphs.offloaded.values()):
        out.append(f"  subgraph cluster_o{k} {{")
        out.append(f"    label={_q(off.name + ' (' + off.backend + ')')};")
        if off.backend in colours:
            out.append(f'    color="{colours[off.backend][1]}";')
        out.extend(_graph_lines(off.body, f"o{k}", colours))
        out.append("  }")
    out.append("}")
    return "\n".join(out) + "\n"


__all__ = ["module_dot"]
