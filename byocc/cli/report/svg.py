"""Drawing laid-out parts as inline SVG, with the page's DOM contract (issue 12):

- every binding of a drawn function: an element with ``data-binding="<name>"``;
- a binding that calls an offloaded function also carries ``data-function="<name>"`` and
  ``data-backend="<backend>"`` (one element per call);
- a heavy or patterned operator kept on the host carries ``data-reason``;
- inside an offloaded function's body (shown when a region is expanded): operators carry
  ``data-inner-binding``, composite clusters ``data-composite``;
- parameter copies carry ``data-param``, references to a value of an earlier part
  ``data-ref`` (the name of the binding they stand for).

Text is drawn in a monospace font at 12 px, so a node's size follows from its label:
:data:`CHAR_W` pixels per character.
"""

from __future__ import annotations

from html import escape

from .graph import Graph
from .graph import Node
from .layout import Layout
from .parts import Part

CHAR_W = 7.25
LINE_H = 15.0
PAD_X = 9.0
PAD_Y = 6.0


def node_size(node: Node, copy: bool = False) -> tuple[float, float]:
    """Width and height in pixels of ``node`` (a copy shows only its name and shape)."""
    lines = copy_label(node) if copy else node.label
    chars = max(len(line) for line in lines)
    extra = 14.0 if node.kind == "region" or (node.heavy and not copy) else 0.0
    width = chars * CHAR_W + 2 * PAD_X + extra
    # buckets of three characters: names one digit longer still give the same layout
    width = -(-width // (3 * CHAR_W)) * (3 * CHAR_W)
    return round(width, 1), round(len(lines) * LINE_H + 2 * PAD_Y, 1)


def copy_label(node: Node) -> tuple[str, ...]:
    if node.kind == "param":
        return node.label
    return ("↑ " + node.name, node.label[-1])


def _attr(name: str, value: str) -> str:
    return f' {name}="{escape(value, quote=True)}"'


def part_svg(graph: Graph, part: Part, layout: Layout, backend_class: dict[str, str], inner: bool = False) -> str:
    """One part as an ``<svg>`` element. ``inner``: a body graph (inner-binding names)."""
    out = [f'<svg class="g" width="{layout.width:g}" height="{layout.height:g}" '
           f'viewBox="-2 -2 {layout.width + 4:g} {layout.height + 4:g}">']
    for (label, _), box in zip(part.clusters, layout.clusters):
        out.append(f'<g class="cl"{_attr("data-composite", label)}><rect x="{box.x:g}" y="{box.y:g}" '
                   f'width="{box.w:g}" height="{box.h:g}" rx="6"/><text x="{box.x + 8:g}" '
                   f'y="{box.y + 14:g}">{escape(label)}</text></g>')
    out.append('<g class="es">')
    out.extend(f'<path d="{d}"/>' for d in layout.paths if d)
    out.append('</g>')
    for k, box in enumerate(layout.boxes):
        node = graph.nodes[part.nodes[k]]
        out.append(_node_svg(node, box, part.copies[k], part.nodes[k] < graph.params, backend_class, inner))
    out.append('</svg>')
    return "".join(out)


def _node_svg(node: Node, box, copy: bool, is_param: bool, backend_class: dict[str, str], inner: bool) -> str:
    classes = ["n", node.kind if not copy or is_param else "ref"]
    attrs = ""
    if copy:
        attrs += _attr("data-param" if is_param else "data-ref", node.name)
        lines = copy_label(node)
    else:
        lines = node.label
        if node.kind not in ("param", "return"):
            attrs += _attr("data-inner-binding" if inner else "data-binding", node.name)
        elif node.kind == "param":
            attrs += _attr("data-param", node.name)
        if node.op:
            attrs += _attr("data-op", node.op)
        if node.function is not None and not inner:
            attrs += _attr("data-function", node.function) + _attr("data-backend", node.backend or "")
            classes.append(backend_class.get(node.backend or "", "bk0"))
        if node.heavy:
            classes.append("heavy")
            attrs += _attr("data-reason", node.reason or "")
        if node.flops is not None:
            attrs += _attr("data-flops", str(node.flops))
    title = node.title if not copy else (
        f"{node.name}: defined in an earlier part (click to go there)\n{node.label[-1]}"
        if not is_param else node.title)
    body = [f'<g class="{" ".join(classes)}"{attrs} transform="translate({box.x:g},{box.y:g})">',
            f'<title>{escape(title)}</title>',
            f'<rect width="{box.w:g}" height="{box.h:g}" rx="{9 if node.kind in ("param", "return") else 4}"/>']
    y = PAD_Y + 11.5
    for i, line in enumerate(lines):
        cls = ' class="h"' if i == 0 else (' class="s"' if i == len(lines) - 1 and len(lines) > 1 else "")
        body.append(f'<text x="{PAD_X:g}" y="{y:g}"{cls}>{escape(line)}</text>')
        y += LINE_H
    if node.kind == "region" and not copy and not inner:
        body.append(f'<text class="tog" x="{box.w - 14:g}" y="{PAD_Y + 11.5:g}">+</text>')
    elif node.heavy and not copy:
        body.append(f'<text class="warn" x="{box.w - 15:g}" y="{PAD_Y + 11.5:g}">!</text>')
    body.append('</g>')
    return "".join(body)


__all__ = ["CHAR_W", "LINE_H", "copy_label", "node_size", "part_svg"]
