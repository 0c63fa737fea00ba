"""The drawing model of a partitioned module: one graph per drawn function, one body graph
per offloaded function (issue 12).

A *drawn* function is a module member that is neither offloaded (``Codegen``) nor a
composite (``Composite``): ``main`` and the other functions the host runs. Its graph has a
node per parameter, a node per binding (in binding order, which is a topological order)
and a ``return`` node; an edge per data use (a variable read by a binding's value). A
binding that calls an offloaded function is one *region* node naming its backend and
composites. An offloaded function's *body* graph has its parameters, a node per operator
inside its composites (one cluster per composite call) or per other binding, and its
result; it is what a region expands to.

Cost: one pass over every binding; the variables a value reads are found with an explicit
stack (no recursion), so building is linear in the size of the module.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field
from typing import Any

from byocc.ir import Call
from byocc.ir import Constant
from byocc.ir import ExternFunc
from byocc.ir import Function
from byocc.ir import GlobalVar
from byocc.ir import If
from byocc.ir import IRModule
from byocc.ir import MatchCast
from byocc.ir import Op
from byocc.ir import PrimValue
from byocc.ir import SeqExpr
from byocc.ir import ShapeExpr
from byocc.ir import StringImm
from byocc.ir import Tuple
from byocc.ir import TupleGetItem
from byocc.ir import Var

from .flops import call_flops
from .labels import composite_lines
from .labels import fit as _fit
from .labels import head as _head
from .labels import shorten
from .labels import sinfo_text

_PACKED = frozenset(("relax.call_dps_packed", "relax.call_packed", "relax.call_pure_packed"))


@dataclass(slots=True)
class Node:
    """One drawn element: a parameter, a binding, an operator of an offloaded body, a result."""

    kind: str
    """``param``, ``op``, ``region`` (a call of an offloaded function), ``call`` (another
    function), ``extern`` (a packed call), ``value`` (tuples, projections, aliases,
    constants), ``return``."""
    name: str
    """The printed name (TVM's de-duplication: a repeated hint gets ``_1``, ``_2``, ...)."""
    label: tuple[str, ...]
    """The lines drawn, none longer than :data:`MAX_CHARS`."""
    title: str
    """The whole text, shown on hover and in the details panel."""
    inputs: list[int] = field(default_factory=list)
    """Indices (in the same graph) of the nodes whose values this one reads, in order."""
    op: str | None = None
    heavy: bool = False
    """A heavy operator (explain.HEAVY_OPS) or a patterned one, kept on the host."""
    reason: str | None = None
    """Why it stayed on the host (``--explain``'s reason), for :attr:`heavy` nodes."""
    function: str | None = None
    """The offloaded function a region calls."""
    backend: str | None = None
    flops: int | None = None
    """Matmul/convolution FLOPs of this operator (of the whole call, for a region)."""


@dataclass(slots=True)
class Graph:
    """The nodes of one function, parameters first, the result last."""

    name: str
    nodes: list[Node] = field(default_factory=list)
    params: int = 0
    """``nodes[:params]`` are the parameters; ``nodes[-1]`` is the result."""
    clusters: list[tuple[str, list[int]]] = field(default_factory=list)
    """Composite name and its nodes (body graphs only)."""


@dataclass(slots=True)
class Offloaded:
    """One offloaded function: its backend, composites and body graph."""

    name: str
    backend: str
    composites: list[str]
    """The composite calls of the body, in order (names repeat)."""
    body: Graph
    calls: int = 0
    flops: int = 0
    unknown_flops: int = 0
    """Matmul/convolution calls whose FLOPs are unknown (symbolic shapes)."""


@dataclass(slots=True)
class ModuleGraphs:
    drawn: list[Graph]
    offloaded: dict[str, Offloaded]


def build_graphs(mod: IRModule, host_rows: list[dict[str, Any]] | None, heavy_ops: frozenset[str],
                 default_reason: str) -> ModuleGraphs:
    """The graphs of ``mod``: every drawn function and every offloaded function.

    ``host_rows``: ``--explain``'s ``host`` rows (function, binding, op, location, pattern,
    reason); a host binding that matches one is marked heavy with its reason. Without rows
    (``byocc show``), every host call of a ``heavy_ops`` operator is marked, with
    ``default_reason``.
    """
    offloaded: dict[str, Offloaded] = {}
    for name in sorted(mod.names()):
        func = mod[name]
        if isinstance(func, Function) and "Codegen" in (func.attrs or {}):
            offloaded[name] = _offloaded(name, func)
    rows_of: dict[str, list[dict[str, Any]]] = {}
    for row in host_rows or ():
        rows_of.setdefault(row["function"], []).append(row)
    drawn = []
    for name in sorted(mod.names()):
        func = mod[name]
        if not isinstance(func, Function) or _is_outlined(func):
            continue
        graph = _function_graph(name, func, offloaded, mod)
        _mark_heavy(graph, func, rows_of.get(name), host_rows is not None, heavy_ops, default_reason)
        drawn.append(graph)
    return ModuleGraphs(drawn, offloaded)


# ---------------------------------------------------------------------------- functions
def _is_outlined(func: Function) -> bool:
    attrs = func.attrs or {}
    return "Codegen" in attrs or "Composite" in attrs


class _Names:
    """Printed names of one function: a repeated hint gets ``_1``, ``_2``, ... (TVM)."""

    def __init__(self) -> None:
        self.taken: set[str] = set()
        self.next: dict[str, int] = {}

    def take(self, hint: str) -> str:
        hint = hint or "v"
        if hint not in self.taken:
            self.taken.add(hint)
            return hint
        i = self.next.get(hint, 1)
        while f"{hint}_{i}" in self.taken:
            i += 1
        self.next[hint] = i + 1
        name = f"{hint}_{i}"
        self.taken.add(name)
        return name


def _with_params(name: str, func: Function) -> tuple[Graph, _Names, dict[Var, int]]:
    """A graph for ``func`` holding a node per parameter, the names taken so far and the
    node index of each parameter."""
    graph = Graph(name)
    names = _Names()
    index: dict[Var, int] = {}
    for p in func.params:
        pname = names.take(p.name_hint)
        index[p] = len(graph.nodes)
        graph.nodes.append(Node("param", pname, (_fit(pname), _fit(sinfo_text(p.struct_info))),
                                f"parameter {pname}: {sinfo_text(p.struct_info)}"))
    graph.params = len(graph.nodes)
    return graph, names, index


def _function_graph(name: str, func: Function, offloaded: Mapping[str, Offloaded], mod: IRModule) -> Graph:
    graph, names, index = _with_params(name, func)
    for block in func.body.blocks:
        for binding in block.bindings:
            bname = names.take(binding.var.name_hint)
            node = _binding_node(bname, binding, offloaded, mod)
            node.inputs = _uses(binding.value, index)
            index[binding.var] = len(graph.nodes)
            graph.nodes.append(node)
    graph.nodes.append(Node("return", "", ("return",), "the function's result",
                            _uses(func.body.body, index)))
    return graph


def _binding_node(name: str, binding, offloaded: Mapping[str, Offloaded], mod: IRModule | None) -> Node:
    value = binding.value
    shape = sinfo_text(binding.var.struct_info)
    text = _binding_text(name, binding)
    if isinstance(value, Call) and isinstance(value.op, GlobalVar):
        target = value.op.name_hint
        called = offloaded.get(target)
        if called is not None:
            called.calls += 1
            lines = (_head(name, called.backend), _fit(shorten(target)), *composite_lines(called.composites, called.backend),
                     _fit(shape))
            title = (f"{name} = {target}(...)\noffloaded to {called.backend}; composites: "
                     f"{', '.join(dict.fromkeys(called.composites)) or 'none'}\n{shape}")
            return Node("region", name, lines, title, function=target, backend=called.backend,
                        flops=called.flops)
        member = mod[target] if mod is not None and target in mod.names() else None
        composite = (member.attrs or {}).get("Composite") if isinstance(member, Function) else None
        head = _head(name, str(composite)) if composite else _head(name, f"call {shorten(target, 20)}")
        return Node("call", name, (head, _fit(shape)), text)
    if isinstance(value, Call) and isinstance(value.op, Op):
        op = value.op.name
        if op in _PACKED and value.args and isinstance(value.args[0], (StringImm, ExternFunc)):
            symbol = value.args[0].value if isinstance(value.args[0], StringImm) else value.args[0].global_symbol
            return Node("extern", name, (_head(name, op.removeprefix('relax.')), _fit(shorten(symbol)),
                                         _fit(shape)), text, op=op)
        return Node("op", name, (_head(name, op.removeprefix('relax.')), _fit(shape)), text, op=op,
                    flops=call_flops(value))
    if isinstance(value, Call) and isinstance(value.op, ExternFunc):
        return Node("extern", name, (_head(name, "call"), _fit(shorten(value.op.global_symbol)), _fit(shape)),
                    text)
    return Node("value", name, (_head(name, _value_kind(value)), _fit(shape)), text)


def _value_kind(value) -> str:
    if isinstance(value, TupleGetItem):
        return f"item {value.index}"
    if isinstance(value, Tuple):
        return f"tuple({len(value.fields)})"
    if isinstance(value, Var):
        return "alias"
    if isinstance(value, Constant):
        return "constant"
    if isinstance(value, Function):
        return "function"
    if isinstance(value, If):
        return "if"
    if isinstance(value, (ShapeExpr, PrimValue, StringImm)):
        return "literal"
    if isinstance(value, Call):
        return "call"
    return type(value).__name__.lower()


def _binding_text(name: str, binding) -> str:
    from byocc.text import print_expr

    if isinstance(binding.value, Function):
        return f"{name}: a local function"
    text = print_expr(binding.value)
    if len(text) > 600:
        text = text[:600] + " ..."
    cast = " (match_cast)" if isinstance(binding, MatchCast) else ""
    return f"{name} = {text}{cast}\n{sinfo_text(binding.var.struct_info)}"


def _mark_heavy(graph: Graph, func: Function, rows: list[dict[str, Any]] | None, explained: bool,
                heavy_ops: frozenset[str], default_reason: str) -> None:
    """Mark the host bindings ``--explain`` lists (``rows``, in binding order; matched by
    name hint and operator, and by location where both have one)."""
    hints = [b for block in func.body.blocks for b in block.bindings]
    pending = list(rows or ())
    j = 0
    for k, binding in enumerate(hints):
        node = graph.nodes[graph.params + k]
        if node.kind != "op":
            continue
        if not explained:
            if node.op in heavy_ops:
                node.heavy, node.reason = True, default_reason
            continue
        if j >= len(pending):
            break
        row = pending[j]
        if row["binding"] != binding.var.name_hint or row["op"] != node.op:
            continue
        span = getattr(binding, "span", None) or getattr(binding.value, "span", None)
        if row.get("location") and span is not None and row["location"] != f"{span.source}:{span.line}:{span.column}":
            continue
        j += 1
        node.heavy = True
        pattern = f"[{row['pattern']}] " if row.get("pattern") else ""
        node.reason = f"{pattern}{row['reason']}"
    for node in graph.nodes:
        if node.heavy:
            node.title += f"\nkept on the host: {node.reason}"


def _uses(expr, index: Mapping[Var, int]) -> list[int]:
    """Indices of the variables of ``index`` that ``expr`` reads, in first-use order."""
    found: dict[int, None] = {}
    stack = [expr]
    while stack:
        e = stack.pop()
        if isinstance(e, Var):
            i = index.get(e)
            if i is not None:
                found.setdefault(i, None)
        elif isinstance(e, Call):
            stack.extend(reversed(e.args))
            if not isinstance(e.op, (Op, GlobalVar, ExternFunc)):
                stack.append(e.op)
        elif isinstance(e, Tuple):
            stack.extend(reversed(e.fields))
        elif isinstance(e, TupleGetItem):
            stack.append(e.tuple_value)
        elif isinstance(e, If):
            stack.extend((e.false_branch, e.true_branch, e.cond))
        elif isinstance(e, SeqExpr):
            stack.append(e.body)
            stack.extend(b.value for blk in reversed(e.blocks) for b in reversed(blk.bindings))
        elif isinstance(e, Function):
            stack.append(e.body)
    return list(found)


# ---------------------------------------------------------------------------- offloaded
def _offloaded(name: str, func: Function) -> Offloaded:
    """The body graph of an offloaded function: composite calls opened into their
    operators (one cluster per call), other bindings as nodes."""
    backend = str(func.attrs["Codegen"])
    body, names, index = _with_params(name, func)
    local: dict[Var, Function] = {}
    composites: list[str] = []
    flops = unknown = 0
    for block in func.body.blocks:
        for binding in block.bindings:
            value = binding.value
            if isinstance(value, Function):
                local[binding.var] = value
                continue
            callee = None
            if isinstance(value, Call):
                callee = local.get(value.op) if isinstance(value.op, Var) else (
                    value.op if isinstance(value.op, Function) else None)
            composite = (callee.attrs or {}).get("Composite") if callee is not None else None
            if callee is None or composite is None:
                bname = names.take(binding.var.name_hint)
                node = _binding_node(bname, binding, {}, None)
                node.inputs = _uses(value, index)
                index[binding.var] = len(body.nodes)
                body.nodes.append(node)
                continue
            composites.append(str(composite))
            # the composite's parameters stand for the call's arguments
            inner: dict[Var, int] = {}
            for param, arg in zip(callee.params, value.args):
                got = _uses(arg, index)
                if got:
                    inner[param] = got[0]
            members: list[int] = []
            for blk in callee.body.blocks:
                for b in blk.bindings:
                    node = _binding_node(names.take(b.var.name_hint), b, {}, None)
                    node.inputs = _uses(b.value, {**index, **inner})
                    inner[b.var] = len(body.nodes)
                    members.append(len(body.nodes))
                    body.nodes.append(node)
                    if node.op is not None and _is_gemm(node.op):
                        if node.flops is None:
                            unknown += 1
                        else:
                            flops += node.flops
            result = _uses(callee.body.body, inner)
            if result:
                index[binding.var] = result[0]
            body.clusters.append((str(composite), members))
    body.nodes.append(Node("return", "", ("return",), "the function's result", _uses(func.body.body, index)))
    return Offloaded(name, backend, composites, body, flops=flops, unknown_flops=unknown)


def _is_gemm(op: str) -> bool:
    from .flops import FLOP_OPS

    return op in FLOP_OPS


__all__ = ["Graph", "ModuleGraphs", "Node", "Offloaded", "build_graphs"]
