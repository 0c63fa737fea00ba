"""Layered layout by Graphviz ``dot``: byocc gives it node sizes, edges and clusters and
draws the result itself (:mod:`.svg`).

Each :class:`Job` becomes one ``dot -Tjson0`` run; jobs with the same input text share one
run (a transformer's repeated layers are laid out once), and distinct runs go in parallel,
one process per CPU. Coordinates come back in points, used as CSS pixels, with y pointing
down. dot's cost grows faster than linearly with the graph (measured on a transformer
chain: 400 nodes 0.15 s, 800 nodes 0.56 s, 1600 nodes 8.7 s), so callers keep jobs to a few
hundred nodes (:mod:`.parts`).

A missing ``dot`` or a failed run is an :class:`~byocc.ir.ExternalToolError` (exit 3).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from dataclasses import field

from byocc.ir import ExternalToolError

#: Label font of clusters: dot measures Courier (0.6 em per character), as the page's
#: monospace font draws it.
CLUSTER_FONT_PT = 11

DOT_MISSING = ("Graphviz's 'dot' was not found on PATH; the HTML report and --format html "
               "need it to lay out the graph (Debian/Ubuntu: apt-get install graphviz; "
               "macOS: brew install graphviz; conda: conda install graphviz)")


@dataclass(slots=True)
class Box:
    x: float
    y: float
    w: float
    h: float


@dataclass(slots=True)
class Job:
    """One graph to lay out: node sizes in pixels, edges between node indices, clusters
    (label, member indices)."""

    sizes: list[tuple[float, float]]
    edges: list[tuple[int, int]]
    clusters: list[tuple[str, list[int]]] = field(default_factory=list)

    def dot_text(self) -> str:
        lines = ['digraph G {',
                 'graph [rankdir=TB, nodesep=0.22, ranksep=0.32, margin=0, '
                 f'fontname=Courier, fontsize={CLUSTER_FONT_PT}];',
                 'node [shape=box, fixedsize=true, label=""];',
                 'edge [arrowsize=0.7];']
        clustered = set()
        for k, (label, members) in enumerate(self.clusters):
            lines.append(f'subgraph cluster_{k} {{ label="{_quote(label)}"; margin=10;')
            for i in members:
                w, h = self.sizes[i]
                lines.append(f'n{i} [width={w / 72:.4f}, height={h / 72:.4f}];')
                clustered.add(i)
            lines.append('}')
        for i, (w, h) in enumerate(self.sizes):
            if i not in clustered:
                lines.append(f'n{i} [width={w / 72:.4f}, height={h / 72:.4f}];')
        lines.extend(f'n{u} -> n{v};' for u, v in self.edges)
        lines.append('}')
        return "\n".join(lines) + "\n"


@dataclass(slots=True)
class Layout:
    width: float
    height: float
    boxes: list[Box]
    """One per node of the job, top-left corner and size."""
    paths: list[str]
    """One SVG path (``d``) per edge of the job, ending at the arrow's tip."""
    clusters: list[Box]


def _quote(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def find_dot() -> str:
    """The ``dot`` executable; :class:`ExternalToolError` when Graphviz is not installed."""
    path = shutil.which("dot")
    if path is None:
        raise ExternalToolError(DOT_MISSING)
    return path


def layout_all(jobs: list[Job], workers: int | None = None) -> list[Layout]:
    """Lay out every job (same input text: one dot run; distinct runs in parallel)."""
    dot = find_dot()
    texts = [job.dot_text() for job in jobs]
    unique = list(dict.fromkeys(texts))
    workers = max(1, min(len(unique), workers or os.cpu_count() or 1))
    if workers == 1:
        results = [_run(dot, t) for t in unique]
    else:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            results = list(pool.map(lambda t: _run(dot, t), unique))
    raw = dict(zip(unique, results))
    return [_parse(raw[t], job) for t, job in zip(texts, jobs)]


def _run(dot: str, text: str) -> dict:
    try:
        done = subprocess.run([dot, "-Tjson0"], input=text.encode(), capture_output=True, check=False)
    except OSError as err:
        raise ExternalToolError(f"cannot run {dot}: {err.strerror or err}") from None
    if done.returncode != 0:
        first = (done.stderr.decode(errors="replace").strip().splitlines() or ["no message"])[0]
        raise ExternalToolError(f"dot failed (exit {done.returncode}): {first}")
    try:
        return json.loads(done.stdout)
    except ValueError:
        raise ExternalToolError("dot printed something that is not JSON (is it Graphviz 2.40 or newer?)") from None


def _floats(text: str) -> list[float]:
    return [float(v) for v in text.split(",")]


def _parse(data: dict, job: Job) -> Layout:
    x0, y0, x1, y1 = _floats(data.get("bb", "0,0,0,0"))
    height = y1 - y0

    def point(text: str) -> tuple[float, float]:
        x, y = _floats(text)[:2]
        return round(x - x0, 1), round(height - (y - y0), 1)

    boxes = [Box(0, 0, w, h) for w, h in job.sizes]
    clusters: list[Box] = []
    gvid: dict[int, int] = {}
    for obj in data.get("objects", []):
        name = obj.get("name", "")
        if name.startswith("cluster_"):
            bx0, by0, bx1, by1 = _floats(obj["bb"])
            clusters.append(Box(round(bx0 - x0, 1), round(height - (by1 - y0), 1), bx1 - bx0, by1 - by0))
        elif name.startswith("n") and "pos" in obj:
            i = int(name[1:])
            gvid[obj["_gvid"]] = i
            cx, cy = point(obj["pos"])
            w, h = float(obj["width"]) * 72, float(obj["height"]) * 72
            boxes[i] = Box(round(cx - w / 2, 1), round(cy - h / 2, 1), round(w, 1), round(h, 1))
    paths = [""] * len(job.edges)
    slot: dict[tuple[int, int], list[int]] = {}
    for k, edge in enumerate(job.edges):
        slot.setdefault(edge, []).append(k)
    for edge in data.get("edges", []):
        tail, head = gvid.get(edge["tail"]), gvid.get(edge["head"])
        free = slot.get((tail, head)) if tail is not None and head is not None else None
        if free:
            paths[free.pop(0)] = _path(edge.get("pos", ""), point)
    return Layout(round(x1 - x0, 1), round(height, 1), boxes, paths, clusters)


def _path(pos: str, point) -> str:
    """An SVG path from dot's ``pos`` (``e,x,y`` arrow tip, then B-spline control points)."""
    end = None
    pts = []
    for item in pos.split():
        if item.startswith("e,"):
            end = point(item[2:])
        elif item.startswith("s,"):
            continue
        else:
            pts.append(point(item))
    if not pts:
        return ""
    d = [f"M{pts[0][0]:g},{pts[0][1]:g}"]
    for i in range(1, len(pts) - 2, 3):
        (ax, ay), (bx, by), (cx, cy) = pts[i], pts[i + 1], pts[i + 2]
        d.append(f"C{ax:g},{ay:g} {bx:g},{by:g} {cx:g},{cy:g}")
    if end is not None:
        d.append(f"L{end[0]:g},{end[1]:g}")
    return "".join(d)


__all__ = ["Box", "DOT_MISSING", "Job", "Layout", "find_dot", "layout_all"]
