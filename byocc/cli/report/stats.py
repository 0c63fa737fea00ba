"""The report's numbers: per backend, per composite, per operator, and the share of
matmul/convolution FLOPs that runs offloaded.

Counts are per run of the drawn functions: an offloaded function called three times
counts its operators and FLOPs three times (the work it does), while ``functions`` counts
it once.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from dataclasses import field

from .flops import FLOP_OPS
from .graph import ModuleGraphs


@dataclass
class BackendRow:
    backend: str
    functions: int = 0
    calls: int = 0
    composites: int = 0
    operators: int = 0
    flops: int = 0


@dataclass
class Stats:
    backends: list[BackendRow] = field(default_factory=list)
    composites: list[tuple[str, str, int]] = field(default_factory=list)
    """(composite, backend, calls), most called first."""
    operators: list[tuple[str, int, int]] = field(default_factory=list)
    """(operator, on the host, offloaded), most frequent first."""
    host_flops: int = 0
    offloaded_flops: int = 0
    unknown_flops: int = 0
    """matmul/conv calls whose FLOPs are unknown (symbolic shapes), host and offloaded."""
    drawn_bindings: int = 0
    heavy: list[tuple[str, str, str, str]] = field(default_factory=list)
    """(function, binding, operator, reason) of every marked host operator."""

    @property
    def offloaded_share(self) -> float | None:
        total = self.host_flops + self.offloaded_flops
        return None if total == 0 else self.offloaded_flops / total


def compute_stats(graphs: ModuleGraphs) -> Stats:
    stats = Stats()
    host_ops: Counter = Counter()
    off_ops: Counter = Counter()
    rows: dict[str, BackendRow] = {}
    composites: Counter = Counter()
    backend_of: dict[str, str] = {}
    for off in graphs.offloaded.values():
        row = rows.setdefault(off.backend, BackendRow(off.backend))
        row.functions += 1
        row.calls += off.calls
        row.composites += off.calls * len(off.composites)
        ops = [n.op for n in off.body.nodes if n.op is not None]
        row.operators += off.calls * len(ops)
        row.flops += off.calls * off.flops
        stats.offloaded_flops += off.calls * off.flops
        stats.unknown_flops += off.calls * off.unknown_flops
        for op in ops:
            off_ops[op] += off.calls
        for name in off.composites:
            composites[name] += off.calls
            backend_of[name] = off.backend
    for graph in graphs.drawn:
        for node in graph.nodes[graph.params:-1]:
            stats.drawn_bindings += 1
            if node.op is None:
                continue
            host_ops[node.op] += 1
            if node.op in FLOP_OPS:
                if node.flops is None:
                    stats.unknown_flops += 1
                else:
                    stats.host_flops += node.flops
            if node.heavy:
                stats.heavy.append((graph.name, node.name, node.op, node.reason or ""))
    stats.backends = [rows[b] for b in sorted(rows)]
    stats.composites = sorted(((c, backend_of[c], n) for c, n in composites.items()), key=lambda r: (-r[2], r[0]))
    names = set(host_ops) | set(off_ops)
    stats.operators = sorted(((op, host_ops[op], off_ops[op]) for op in names),
                             key=lambda r: (-(r[1] + r[2]), r[0]))
    return stats


__all__ = ["BackendRow", "Stats", "compute_stats"]
