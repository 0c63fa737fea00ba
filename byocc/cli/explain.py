"""``byocc partition --explain``: what went where, and why the rest stayed on the host.

The report is a plain dict (also written by ``--explain-json``)::

    {"path": "merge", "patterns": 3,
     "offloaded": [{"function", "backend", "composites", "calls"}],
     "host": [{"function", "binding", "op", "location", "pattern", "reason"}]}

``host`` lists every call the partitioned module still computes itself, in the functions
that were partitioned, that is either a heavy operator (:data:`HEAVY_OPS`: matmul,
convolutions, attention, norms) or an operator some pattern of the table matched (whose
check, or an overlapping group, then kept it on the host);
``host_other`` counts the remaining (cheap, unpatterned) operator calls left on the host,
``host_other_ops`` counts them by operator (most frequent first). Its reason comes from :func:`byocc.dpl.explain_no_match`
run on the *input* module's binding of the same name (the graph the patterns saw): no
pattern rooted at that operator, the sub-pattern that failed, the check that rejected, or
a match that lost to an overlapping group. Calls outside dataflow blocks are never
partitioned, and say so. Cost: one pass over each function plus one traced match per
candidate pattern per host call.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import click

from byocc.ir import Call
from byocc.ir import DataflowBlock
from byocc.ir import Function
from byocc.ir import IRModule
from byocc.ir import Op
from byocc.ir import Var

_NOT_OPS = frozenset(("relax.call_dps_packed", "relax.call_packed", "relax.call_pure_packed", "relax.call_tir"))
# The operators worth offloading (issue: "every call to a heavy op ... NOT offloaded").
# Elementwise and data-movement ops left on the host are counted, not listed.
HEAVY_OPS = frozenset((
    "relax.matmul", "relax.nn.conv2d", "relax.nn.conv2d_transpose", "relax.nn.conv1d",
    "relax.nn.conv3d", "relax.nn.attention", "relax.nn.attention_bias",
    "relax.nn.attention_var_len", "relax.nn.layer_norm", "relax.nn.rms_norm",
    "relax.nn.group_norm", "relax.nn.batch_norm", "relax.nn.instance_norm",
))


def explain_partition(original: IRModule, partitioned: IRModule, patterns: Sequence,
                      path: str = "annotate", entries: Sequence[str] | None = None) -> dict[str, Any]:
    """The explanation of one ``partition`` run (module docstring)."""
    offloaded = _offloaded(partitioned)
    host: list[dict[str, Any]] = []
    for name in sorted(partitioned.names()):
        func = partitioned[name]
        if not isinstance(func, Function) or _is_outlined(func):
            continue
        if entries and name not in entries:
            continue
        source = original[name] if name in original and isinstance(original[name], Function) else None
        host += _host_calls(name, func, source, patterns)
    heavy = [row for row in host if row["op"] in HEAVY_OPS or row["pattern"] is not None]
    other: dict[str, int] = {}
    for row in host:
        if row["op"] not in HEAVY_OPS and row["pattern"] is None:
            other[row["op"]] = other.get(row["op"], 0) + 1
    return {"path": path, "patterns": len(patterns), "offloaded": offloaded, "host": heavy,
            "host_other": len(host) - len(heavy),
            "host_other_ops": dict(sorted(other.items(), key=lambda kv: (-kv[1], kv[0])))}


def render_explanation(report: dict[str, Any]) -> None:
    """Print the report for people, to stderr."""
    echo = lambda text="": click.echo(text, err=True)  # noqa: E731
    if report["offloaded"]:
        echo("offloaded:")
        for item in report["offloaded"]:
            times = "once" if item["calls"] == 1 else f"{item['calls']} times"
            echo(f"  {item['function']} -> {item['backend']} "
                 f"({', '.join(item['composites']) or 'no composite'}), called {times}")
    else:
        echo("offloaded: nothing")
    if report["host"]:
        echo("kept on the host:")
        for item in report["host"]:
            where = f"{item['location']}: " if item["location"] else ""
            pattern = f"[{item['pattern']}] " if item["pattern"] else ""
            echo(f"  {where}{item['function']}.{item['binding']} = {item['op']}: {pattern}{item['reason']}")
    else:
        echo("kept on the host: no heavy or patterned operator")
    if report.get("host_other"):
        ops = ", ".join(f"{n} {op}" for op, n in report.get("host_other_ops", {}).items())
        echo(f"({report['host_other']} other operator calls without a pattern stay on the host"
             + (f": {ops})" if ops else ")"))


# ---------------------------------------------------------------------------- helpers
def _is_outlined(func: Function) -> bool:
    attrs = func.attrs or {}
    return "Codegen" in attrs or "Composite" in attrs


def _offloaded(mod: IRModule) -> list[dict[str, Any]]:
    calls: dict[str, int] = {}
    for name in sorted(mod.names()):
        func = mod[name]
        if not isinstance(func, Function) or _is_outlined(func):
            continue
        for block in func.body.blocks:
            for binding in block.bindings:
                value = binding.value
                if isinstance(value, Call) and not isinstance(value.op, (Op, Var, Function)):
                    target = getattr(value.op, "name_hint", None)
                    if target is not None:
                        calls[target] = calls.get(target, 0) + 1
    out = []
    for name in sorted(mod.names()):
        func = mod[name]
        if isinstance(func, Function) and "Codegen" in (func.attrs or {}):
            composites = [str(b.value.attrs["Composite"]) for blk in func.body.blocks for b in blk.bindings
                          if isinstance(b.value, Function) and "Composite" in b.value.attrs]
            out.append({"function": name, "backend": str(func.attrs["Codegen"]),
                        "composites": composites, "calls": calls.get(name, 0)})
    return out


def _host_calls(name: str, func: Function, source: Function | None, patterns: Sequence) -> list:
    from byocc.dpl import as_fusion_pattern
    from byocc.dpl import explain_no_match
    from byocc.dpl import match_expr
    from byocc.ir.analysis import collect_var_usage

    # The input binding of each output binding: the same variable when the pass kept it,
    # else by name and operator, in order (names repeat: ConvertLayout's permute_dims and
    # the conv it feeds are both `lv`, so a name alone blames the wrong binding).
    by_var: dict[Any, Any] = {}
    by_name_op: dict[tuple, list] = {}
    var2val: dict = {}
    if source is not None:
        for block in source.body.blocks:
            for binding in block.bindings:
                var2val[binding.var] = binding.value
                entry = (binding, isinstance(block, DataflowBlock))
                by_var[binding.var] = entry
                op = binding.value.op.name if isinstance(binding.value, Call) and isinstance(binding.value.op, Op) else None
                by_name_op.setdefault((binding.var.name_hint, op), []).append(entry)
    taken: dict[tuple, int] = {}
    usage = collect_var_usage(source).downstream_usage if source is not None else {}
    rows = []
    for block in func.body.blocks:
        for binding in block.bindings:
            value = binding.value
            if not isinstance(value, Call) or not isinstance(value.op, Op) or value.op.name in _NOT_OPS:
                continue
            found = by_var.get(binding.var)
            if found is None:
                key = (binding.var.name_hint, value.op.name)
                same = by_name_op.get(key, [])
                k = taken.get(key, 0)
                taken[key] = k + 1
                found = same[k] if k < len(same) else None
            origin, in_dataflow = found or (binding, isinstance(block, DataflowBlock))
            call = origin.value if isinstance(origin.value, Call) else value
            if not in_dataflow:
                pattern, reason = None, "outside a dataflow block, where nothing is partitioned"
            elif not patterns:
                pattern, reason = None, "the pattern table is empty"
            elif found is None:  # no input binding of that name: explain on the output
                pattern, reason = explain_no_match(patterns, call, None)
            else:
                pattern, reason = explain_no_match(patterns, call, var2val,
                                                   _context_factory(call, var2val, usage))
            if value.op.name not in HEAVY_OPS and pattern is not None and in_dataflow:
                # a cheap op is worth listing only when some pattern matched it structurally
                # (then a check or an overlap kept it on the host), not for every near miss
                if not any(match_expr(as_fusion_pattern(p).pattern, call, var2val) is not None
                           for p in patterns):
                    pattern = None
            span = getattr(origin, "span", None) or getattr(call, "span", None)
            rows.append({
                "function": name, "binding": binding.var.name_hint, "op": value.op.name,
                "location": f"{span.source}:{span.line}:{span.column}" if span else None,
                "pattern": pattern, "reason": reason,
            })
    return rows


def _context_factory(call: Call, var2val: dict, usage: dict):
    """Builds the :class:`~byocc.dpl.PatternCheckContext` a check function sees for a match
    rooted at ``call`` (TVM's fields; var_usages over the whole function)."""
    from byocc.dpl import CallPattern
    from byocc.dpl import PatternCheckContext
    from byocc.dpl import TupleGetItemPattern

    value_to_bound_var = {value: var for var, value in var2val.items()}

    def make(entry, memo):
        bindings = {}
        for pat, expr in memo.items():
            var = value_to_bound_var.get(expr)
            if var is not None and isinstance(pat, (CallPattern, TupleGetItemPattern)):
                bindings[var] = expr
        annotated = {key: memo[pat] for key, pat in (entry.annotation_patterns or {}).items() if pat in memo}
        return PatternCheckContext(call, annotated, bindings, usage, value_to_bound_var)

    return make


__all__ = ["explain_partition", "render_explanation"]
