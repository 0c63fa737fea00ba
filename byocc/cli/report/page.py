"""The HTML page: header, summary cards and tables, legend, one section per drawn function
(its parts' SVG), one ``<template>`` per offloaded function (its body, cloned when a
region is expanded), the details panel, the inline style and script (:mod:`.assets`).

Everything is escaped with :func:`html.escape`; the page loads nothing (no URL in it but
``#`` fragments), so it opens offline from disk.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

from .assets import SCRIPT
from .assets import STYLE
from .flops import format_flops
from .graph import Offloaded
from .stats import Stats

# (stroke, fill): registered backends take these in name order, so each keeps its colour in
# every report; backends that only a pattern file names take the next unused ones.
_PALETTE = [("#1864ab", "#d0ebff"), ("#2b8a3e", "#d3f9d8"), ("#9c36b5", "#f3d9fa"),
            ("#e67700", "#fff3bf"), ("#0b7285", "#c5f6fa"), ("#c2255c", "#ffdeeb"),
            ("#5f3dc4", "#e5dbff"), ("#5c940d", "#e9fac8")]


#: The most host operators listed in the summary (all are marked in the graph).
HEAVY_LISTED = 100


def backend_colours(backends: Sequence[str]) -> dict[str, tuple[str, str, str]]:
    """backend -> (css class, stroke, fill)."""
    from byocc.backends import registered_backends

    registered = registered_backends()
    known = {name: _PALETTE[i % len(_PALETTE)] for i, name in enumerate(registered)}
    spare = _PALETTE[len(registered):]
    out = {}
    for k, name in enumerate(sorted(set(backends))):
        colour = known.get(name) or (spare.pop(0) if spare else _PALETTE[k % len(_PALETTE)])
        out[name] = (f"bk{k + 1}", *colour)
    return out


@dataclass
class FunctionSection:
    name: str
    bindings: int
    parts: list[tuple[str, str, float, float]]
    """(header text, svg, width, height) per part."""
    note: str = ""


def _e(text: object) -> str:
    return escape(str(text), quote=True)


def _table(head: Sequence[str], rows: Sequence[Sequence[str]], numeric: frozenset[int] = frozenset()) -> str:
    """A table of already-escaped cells; ``numeric``: right-aligned columns."""
    cls = lambda i: ' class="r"' if i in numeric else ""  # noqa: E731
    out = ["<table><thead><tr>", *(f"<th{cls(i)}>{h}</th>" for i, h in enumerate(head)), "</tr></thead><tbody>"]
    for r in rows:
        out.append("<tr>" + "".join(f"<td{cls(i)}>{c}</td>" for i, c in enumerate(r)) + "</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def body_template(off: Offloaded, parts_svg: list[str], colours: dict[str, tuple[str, str, str]]) -> str:
    """The ``<template>`` a region expands to."""
    counts = Counter(off.composites)
    composites = ", ".join(f"{c} ×{n}" if n > 1 else c for c, n in counts.items()) or "none"
    ops = sum(1 for n in off.body.nodes if n.op is not None)
    meta = (f'<dl class="meta"><dt>backend</dt><dd>{_e(off.backend)}</dd><dt>composites</dt>'
            f'<dd>{_e(composites)}</dd><dt>operators</dt><dd>{ops}</dd><dt>calls</dt><dd>{off.calls}</dd>'
            + (f"<dt>FLOPs per call</dt><dd>{_e(format_flops(off.flops))}</dd>" if off.flops else "")
            + "</dl>")
    head = (f'<div class="eh"><b>{_e(off.backend)}</b><code title="{_e(off.name)}">{_e(_middle(off.name, 70))}'
            f'</code><span class="muted">{len(off.composites)} composite calls, {ops} operators</span>'
            f'<button class="x" title="collapse (Esc closes all)">×</button></div>')
    parts = "".join(f'<div class="part"><div class="canvas">{svg}</div></div>' for svg in parts_svg)
    return (f'<template data-body-of="{_e(off.name)}">{head}<div hidden>{meta}</div>{parts}</template>')


def _middle(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[: limit - 21] + "…" + text[-20:]


def render_page(title: str, subtitle: str, stats: Stats, sections: list[FunctionSection],
                templates: list[str], colours: dict[str, tuple[str, str, str]],
                functions_table: list[list[str]]) -> str:
    colour_css = "".join(f".{cls}{{--bk:{stroke};--bkf:{fill}}}" for cls, stroke, fill in colours.values())
    colour_css += ".bk0{--bk:#868e96;--bkf:#f1f3f5}"
    out = ['<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">',
           '<meta name="viewport" content="width=device-width, initial-scale=1">',
           f"<title>{_e(title)}</title><style>{STYLE}{colour_css}</style></head><body>",
           '<svg width="0" height="0" style="position:absolute" aria-hidden="true"><defs>'
           '<marker id="byocc-arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" '
           'markerHeight="7" orient="auto"><path d="M0,0L10,5L0,10z" fill="#8c95a6"/></marker></defs></svg>',
           f"<header><h1>{_e(title)}</h1><p>{_e(subtitle)}</p></header>",
           '<div class="layout"><div class="content">',
           _cards(stats), _legend(colours),
           '<div class="tools"><input id="find" type="search" placeholder="find a binding, function or '
           'operator (Enter)" aria-label="find"><span id="find-status" class="hint"></span>'
           '<button id="zoom-out" title="zoom out">−</button><span id="zoom-level" class="hint">100%</span>'
           '<button id="zoom-in" title="zoom in">+</button><button id="zoom-reset">1:1</button>'
           '<button id="zoom-fit" title="fit the widest part">fit</button>'
           '<button id="collapse-all" title="Esc">collapse all</button>'
           '<span class="hint">click a coloured box to open it</span></div>',
           '<div id="graphs">']
    for section in sections:
        out.append(f'<section class="fn" data-graph="{_e(section.name)}"><h2>{_e(section.name)} '
                   f'<small>{section.bindings} bindings'
                   + (f", drawn in {len(section.parts)} parts" if len(section.parts) > 1 else "")
                   + "</small></h2>" + (f'<p class="note">{_e(section.note)}</p>' if section.note else ""))
        for header, svg, w, h in section.parts:
            out.append(f'<div class="part" style="contain-intrinsic-size:auto {w + 18:g}px auto {h + 30:g}px">'
                       + (f'<div class="ph">{_e(header)}</div>' if header else "")
                       + f'<div class="canvas">{svg}</div></div>')
        out.append("</section>")
    out.append("</div>")
    out.extend(templates)
    out.append('</div><aside class="panel"><div id="summary"><h3>summary</h3>'
               + _tables(stats, functions_table)
               + '</div><div id="details" hidden><button id="back">← summary</button><div id="panel"></div></div>'
               "</aside></div>")
    out.append(f"<script>{SCRIPT}</script></body></html>\n")
    return "".join(out)


def _cards(stats: Stats) -> str:
    functions = sum(b.functions for b in stats.backends)
    calls = sum(b.calls for b in stats.backends)
    composites = sum(b.composites for b in stats.backends)
    off_ops = sum(b.operators for b in stats.backends)
    host_ops = sum(h for _, h, _ in stats.operators)
    per_backend = ", ".join(f"{b.backend} {b.functions}" for b in stats.backends) or "none"
    share = stats.offloaded_share
    total = stats.host_flops + stats.offloaded_flops
    flops = ("no matmul or convolution" if share is None else
             f"{format_flops(stats.offloaded_flops)} of {format_flops(total)}")
    unknown = f"; {stats.unknown_flops} symbolic, not counted" if stats.unknown_flops else ""
    bar = "" if share is None else f'<div class="bar"><i style="width:{share * 100:.1f}%"></i></div>'
    percent = ("–" if share is None else "<0.1%" if 0 < share < 0.001 else
               ">99.9%" if 0.999 < share < 1 else f"{share * 100:.1f}%")
    cards = [
        (str(functions), f"offloaded functions ({per_backend}), {calls} calls", ""),
        (str(composites), "composite calls offloaded", ""),
        (f"{off_ops} / {host_ops}", "operators offloaded / on the host", ""),
        (str(len(stats.heavy)), "heavy or patterned operators kept on the host", " warn" if stats.heavy else ""),
        (percent, f"of matmul/conv FLOPs offloaded ({flops}{unknown})", ""),
    ]
    out = ['<div class="cards">']
    for i, (value, label, cls) in enumerate(cards):
        out.append(f'<div class="card{cls}"><b>{_e(value)}</b><span>{_e(label)}</span>'
                   f'{bar if i == len(cards) - 1 else ""}</div>')
    out.append("</div>")
    return "".join(out)


def _legend(colours: dict[str, tuple[str, str, str]]) -> str:
    items = [f'<span><i class="sw region {cls}"></i>offloaded to {_e(name)} (click to open)</span>'
             for name, (cls, _, _) in sorted(colours.items())]
    items += ['<span><i class="sw"></i>host operator</span>',
              '<span><i class="sw heavy"></i>heavy, kept on the host (!: why)</span>',
              '<span><i class="sw param"></i>parameter, result</span>',
              '<span><i class="sw ref"></i>value from an earlier part</span>']
    return '<div class="legend"><b>legend</b>' + "".join(items) + "</div>"


def _tables(stats: Stats, functions_table: list[list[str]]) -> str:
    out = []
    if stats.backends:
        rows = [[_e(b.backend), str(b.functions), str(b.calls), str(b.composites), str(b.operators),
                 _e(format_flops(b.flops) if b.flops else "–")] for b in stats.backends]
        out.append('<details class="sum" open><summary>offloaded, per backend</summary>'
                   + _table(["backend", "func&shy;tions", "calls", "compo&shy;sites", "ops", "FLOPs"],
                            rows, frozenset({1, 2, 3, 4, 5}))
                   + _table(["composite", "calls"],
                            [[f"<code>{_e(c)}</code>", str(n)] for c, _, n in stats.composites],
                            frozenset({1}))
                   + "</details>")
    else:
        out.append('<p class="muted">Nothing in this module is offloaded.</p>')
    if stats.heavy:
        items = "".join(
            f'<li><a class="jump" data-goto="{_e(b)}" data-graph="{_e(f)}">{_e(f)}.{_e(b)}</a> '
            f"<code>{_e(op.removeprefix('relax.'))}</code>: {_e(reason)}</li>"
            for f, b, op, reason in stats.heavy[:HEAVY_LISTED])
        if len(stats.heavy) > HEAVY_LISTED:
            items += (f'<li class="muted">and {len(stats.heavy) - HEAVY_LISTED} more, marked in the graph '
                      "(find: the operator's name)</li>")
        out.append(f'<details class="sum" open><summary>kept on the host: {len(stats.heavy)} heavy or '
                   f'patterned operators</summary><ul class="heavy">{items}</ul></details>')
    if stats.operators:
        rows = [[f"<code>{_e(op.removeprefix('relax.'))}</code>", str(h), str(o)] for op, h, o in stats.operators]
        out.append('<details class="sum" open><summary>operators, calls per run</summary>'
                   + _table(["operator", "host", "offloaded"], rows, frozenset({1, 2})) + "</details>")
    if functions_table:
        out.append('<details class="sum"><summary>module functions</summary>'
                   + _table(["name", "kind", "params", "bindings", "backend", "composites"], functions_table,
                            frozenset({2, 3})) + "</details>")
    return "".join(out)


__all__ = ["FunctionSection", "backend_colours", "body_template", "render_page"]
