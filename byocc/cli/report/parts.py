"""Splitting a graph into parts that dot lays out separately (large modules, issue 12).

A graph's bindings are in a topological order, so any cut of that order leaves edges only
from earlier parts to later ones. Cuts go where the fewest values cross (the residual
stream between two transformer layers, the skip tensor between two ResNet blocks): among
the positions ``MIN_PART..MAX_PART`` nodes after the previous cut, the last one crossed by
the fewest values. Same-sized repeated layers then give parts with the same shape, whose
layout dot computes once (:func:`.layout.layout_all`).

Inside a part, a value from an earlier part is a *reference* node (``ref``), and every
parameter it reads gets its own copy, so no edge leaves a part; a value read far below
where it is drawn is read through a further copy (:func:`split`). Cost: linear in nodes plus
edges (one difference array for the crossing counts, one window scan).
"""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field

from .graph import Graph

#: Most bindings of a part. dot's cost grows with a part's height (ranks) times its width:
#: measured on the 5 000-binding transformer, parts of 60 / 100 / 160 bindings took
#: 0.08 / 0.22 / 0.52 s each, and one of 400 (274 ranks) 10 s in dot's x positioning.
MAX_PART = 100
MIN_PART = 50
#: The longest edge, in bindings; later uses of a value read a copy of it.
REACH = 40
#: A parameter read by more bindings than this (a weight shared by every layer) is not
#: drawn; the function's header names it, and every binding's text shows its arguments.
SHARED = 3


@dataclass(slots=True)
class Part:
    """One part of a graph: ``nodes[k]`` is the graph's node index of local node ``k``;
    ``copies[k]`` says that local node ``k`` is a parameter copy or a reference."""

    index: int
    count: int
    nodes: list[int] = field(default_factory=list)
    copies: list[bool] = field(default_factory=list)
    edges: list[tuple[int, int]] = field(default_factory=list)
    clusters: list[tuple[str, list[int]]] = field(default_factory=list)
    first: int = 0
    """The graph index of the part's first own node."""


def cut_points(graph: Graph, max_part: int = MAX_PART, min_part: int = MIN_PART) -> list[int]:
    """Graph indices where parts start (the first is ``graph.params``)."""
    start, end = graph.params, len(graph.nodes)
    if end - start <= max_part:
        return [start]
    # crossing[c]: values bound before c and read at c or later (parameters never count)
    last = list(range(end))
    for v in range(start, end):
        for u in graph.nodes[v].inputs:
            if u >= start and v > last[u]:
                last[u] = v
    diff = [0] * (end + 1)
    for u in range(start, end):
        if last[u] > u:
            diff[u + 1] += 1
            diff[last[u] + 1] -= 1
    crossing = [0] * (end + 1)
    run = 0
    for c in range(end + 1):
        run += diff[c]
        crossing[c] = run
    cuts = [start]
    while end - cuts[-1] > max_part:
        lo, hi = cuts[-1] + min_part, min(cuts[-1] + max_part, end - 1)
        best = hi
        for c in range(hi, lo - 1, -1):
            if crossing[c] < crossing[best]:
                best = c
        cuts.append(best)
    return cuts


def shared_params(graph: Graph, shared: int = SHARED) -> dict[int, int]:
    """Parameters read by more than ``shared`` bindings: index -> number of readers."""
    counts: dict[int, int] = {}
    for node in graph.nodes[graph.params:]:
        for u in node.inputs:
            if u < graph.params:
                counts[u] = counts.get(u, 0) + 1
    return {u: n for u, n in sorted(counts.items()) if n > shared}


def split(graph: Graph, max_part: int = MAX_PART, min_part: int = MIN_PART, reach: int = REACH) -> list[Part]:
    """The parts of ``graph`` (one when it is small), with copies and local edges.

    A value's uses are served in windows of ``reach`` bindings: the value itself (or, for a
    parameter or a value of an earlier part, a copy placed at its first use) serves the
    uses up to ``reach`` bindings on; a later use gets a new copy (a reference). No edge is
    then longer than ``reach`` bindings, which keeps dot fast (a weight read by every layer
    of a part would otherwise be one node with edges down the whole part: a 320-node part
    took dot 100 s instead of 0.2 s) and the picture readable.
    """
    cuts = cut_points(graph, max_part, min_part)
    bounds = list(zip(cuts, cuts[1:] + [len(graph.nodes)]))
    hidden = shared_params(graph)
    member_of: dict[int, int] = {}
    for k, (_, members) in enumerate(graph.clusters):
        for i in members:
            member_of[i] = k
    parts = []
    for number, (lo, hi) in enumerate(bounds):
        part = Part(number, len(bounds), first=lo)
        own: dict[int, int] = {}
        serving: dict[int, tuple[int, int]] = {}  # value -> (local node, graph index it sits at)
        for v in range(lo, hi):
            sources = []
            for u in graph.nodes[v].inputs:
                if u in hidden:
                    continue
                got = serving.get(u)
                if got is None and u in own:
                    got = (own[u], u)
                if got is None or v - got[1] > reach:
                    got = (len(part.nodes), v)
                    part.nodes.append(u)
                    part.copies.append(True)
                serving[u] = got
                sources.append(got[0])
            own[v] = len(part.nodes)
            part.nodes.append(v)
            part.copies.append(False)
            part.edges.extend((k, own[v]) for k in sources)
        grouped: dict[int, list[int]] = {}
        for v, k in own.items():
            c = member_of.get(v)
            if c is not None:
                grouped.setdefault(c, []).append(k)
        part.clusters = [(graph.clusters[c][0], members) for c, members in grouped.items()]
        parts.append(part)
    return parts


__all__ = ["MAX_PART", "MIN_PART", "REACH", "SHARED", "Part", "cut_points", "shared_params", "split"]
