"""A picture of the partition (issue 12): one self-contained HTML page of what went where and
why, and the same graph as Graphviz text.

:func:`render_html` builds the page: the drawing model (:mod:`.graph`), the numbers
(:mod:`.stats`), parts of a few hundred nodes (:mod:`.parts`) laid out by Graphviz ``dot``
(:mod:`.layout`, in parallel, repeated parts once), drawn as inline SVG (:mod:`.svg`) in a
page with its own style and script (:mod:`.page`, :mod:`.assets`). :func:`render_dot` is
the ``--format dot`` text, laid out by whoever runs ``dot`` on it.

``dot`` missing is an :class:`~byocc.ir.ExternalToolError` (exit code 3); check it with
:func:`~.layout.find_dot` before any work so that nothing is written.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from byocc.ir import IRModule

from ..explain import HEAVY_OPS
from .graph import Graph
from .graph import ModuleGraphs
from .graph import build_graphs
from .labels import shorten
from .layout import Job
from .layout import find_dot
from .layout import layout_all
from .page import FunctionSection
from .page import backend_colours
from .page import body_template
from .page import render_page
from .parts import Part
from .parts import shared_params
from .parts import split
from .stats import compute_stats
from .svg import node_size
from .svg import part_svg

#: data-reason of heavy host operators when no pattern table is known (``byocc show``).
SHOW_REASON = ("not offloaded in this module (byocc show does not know the pattern table; "
               "byocc partition --explain or --report says why)")


def render_html(mod: IRModule, title: str, subtitle: str = "",
                explanation: Mapping[str, Any] | None = None, workers: int | None = None) -> str:
    """The report page of ``mod`` (a partitioned module, or any module).

    ``explanation``: :func:`byocc.cli.explain.explain_partition`'s report of the run that
    made ``mod``; its ``host`` rows give the reasons shown for heavy host operators.
    Without one, every heavy host operator is marked with :data:`SHOW_REASON`.
    """
    find_dot()
    rows = list(explanation["host"]) if explanation is not None else None
    graphs = build_graphs(mod, rows, HEAVY_OPS, SHOW_REASON)
    stats = compute_stats(graphs)
    colours = backend_colours([off.backend for off in graphs.offloaded.values()])
    classes = {name: cls for name, (cls, _, _) in colours.items()}

    plans: list[tuple[Graph, list[Part]]] = [(g, split(g)) for g in graphs.drawn]
    bodies: list[tuple[Graph, list[Part]]] = [(off.body, split(off.body)) for off in graphs.offloaded.values()]
    jobs = [_job(graph, part) for graph, parts in plans + bodies for part in parts]
    layouts = iter(layout_all(jobs, workers))

    sections = []
    for graph, parts in plans:
        drawn = []
        for part in parts:
            layout = next(layouts)
            drawn.append((_part_header(graph, part), part_svg(graph, part, layout, classes), layout.width,
                          layout.height))
        shared = shared_params(graph)
        note = ("parameters read by many bindings, not drawn: "
                + ", ".join(f"{graph.nodes[u].name} ({n} reads)" for u, n in shared.items())) if shared else ""
        sections.append(FunctionSection(graph.name, len(graph.nodes) - graph.params - 1, drawn, note))
    templates = []
    for off, (graph, parts) in zip(graphs.offloaded.values(), bodies):
        svgs = [part_svg(graph, part, next(layouts), classes, inner=True) for part in parts]
        templates.append(body_template(off, svgs, colours))
    return render_page(title, subtitle, stats, sections, templates, colours, _functions_table(mod))


def _job(graph: Graph, part: Part) -> Job:
    sizes = [node_size(graph.nodes[i], copy) for i, copy in zip(part.nodes, part.copies)]
    return Job(sizes, part.edges, part.clusters)


def _part_header(graph: Graph, part: Part) -> str:
    if part.count == 1:
        return ""
    own = [graph.nodes[i].name for i, copy in zip(part.nodes, part.copies) if not copy and graph.nodes[i].name]
    span = f"{own[0]} … {own[-1]}" if own else ""
    return f"{graph.name}, part {part.index + 1} of {part.count}: {span}"


def _functions_table(mod: IRModule) -> list[list[str]]:
    from html import escape

    from ..summary import summarize

    rows = []
    for row in summarize(mod).functions:
        name = f'<code title="{escape(row.name, quote=True)}">{escape(shorten(row.name, 60))}</code>'
        rows.append([name, escape(row.kind), str(row.params), str(row.bindings), escape(row.backend or ""),
                     escape(", ".join(row.composites))])
    return rows


def render_dot(mod: IRModule) -> str:
    """``mod`` as Graphviz text: one cluster per drawn function (regions collapsed, heavy host
    operators outlined, reasons as tooltips) and one per offloaded function (its body)."""
    from .dot import module_dot

    graphs = build_graphs(mod, None, HEAVY_OPS, SHOW_REASON)
    return module_dot(graphs, backend_colours([o.backend for o in graphs.offloaded.values()]))


__all__ = ["SHOW_REASON", "ModuleGraphs", "find_dot", "render_dot", "render_html"]
