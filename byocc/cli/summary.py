"""A summary of a module for ``byocc show`` on a terminal: functions, op counts, offloading.

Pure IR analysis (no printing, no rich): :func:`summarize` walks every function once with
an explicit stack, so its cost is linear in the size of the module.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from byocc.ir import (
    Call,
    ExternFunc,
    Function,
    If,
    IRModule,
    Op,
    SeqExpr,
    StringImm,
    Tuple,
    TupleGetItem,
)

_PACKED_CALLS = ("relax.call_dps_packed", "relax.call_packed", "relax.call_pure_packed")


@dataclass(frozen=True)
class FunctionRow:
    """One module member."""

    name: str
    kind: str  # "function", "private function", "external", "composite", "extern"
    params: int
    bindings: int
    backend: str | None = None  # the Codegen attribute, if any
    composites: tuple[str, ...] = ()  # Composite attributes of the functions it wraps


@dataclass
class ModuleSummary:
    functions: list[FunctionRow] = field(default_factory=list)
    op_counts: Counter = field(default_factory=Counter)
    # external symbols called through R.call_dps_packed / R.call_packed (after RunCodegen)
    packed_calls: Counter = field(default_factory=Counter)

    @property
    def offloaded(self) -> list[FunctionRow]:
        return [row for row in self.functions if row.backend is not None]


def summarize(mod: IRModule) -> ModuleSummary:
    """Functions, op counts and offloaded functions of ``mod``."""
    summary = ModuleSummary()
    for name, func in sorted(mod.items(), key=lambda item: item[0]):
        if isinstance(func, ExternFunc):
            summary.functions.append(FunctionRow(name, "extern", 0, 0))
            continue
        bindings, composites = _walk(func, summary)
        attrs = func.attrs or {}
        backend = attrs.get("Codegen")
        if backend is not None:
            kind = "external"
        elif "Composite" in attrs:
            kind = "composite"
            composites = (str(attrs["Composite"]),) + composites
        elif "global_symbol" in attrs or not _is_private(func):
            kind = "function"
        else:
            kind = "private function"
        summary.functions.append(FunctionRow(
            name, kind, len(func.params), bindings,
            None if backend is None else str(backend), tuple(dict.fromkeys(composites)),
        ))
    return summary


def _is_private(func: Function) -> bool:
    # TVM prints members without a global_symbol as private; byocc's parser records the
    # decorator's private=True as the attribute's absence or an explicit flag.
    return bool((func.attrs or {}).get("private", False))


def _walk(func: Function, summary: ModuleSummary) -> tuple[int, tuple[str, ...]]:
    """Count ``func``'s own bindings; add every op call (nested functions included) to
    ``summary.op_counts``; return the Composite names of nested functions."""
    own = sum(len(block.bindings) for block in func.body.blocks)
    composites: list[str] = []
    stack: list[object] = [func.body]
    while stack:
        node = stack.pop()
        if isinstance(node, SeqExpr):
            for block in node.blocks:
                stack.extend(binding.value for binding in block.bindings)
            stack.append(node.body)
        elif isinstance(node, Call):
            op = node.op
            if isinstance(op, Op):
                summary.op_counts[op.name] += 1
                if op.name in _PACKED_CALLS and node.args and isinstance(node.args[0], StringImm):
                    summary.packed_calls[node.args[0].value] += 1
                elif op.name in _PACKED_CALLS and node.args and isinstance(node.args[0], ExternFunc):
                    summary.packed_calls[node.args[0].global_symbol] += 1
            elif isinstance(op, ExternFunc):
                summary.packed_calls[op.global_symbol] += 1
            elif isinstance(op, Function):
                stack.append(op)
            stack.extend(node.args)
        elif isinstance(node, Function):
            composite = (node.attrs or {}).get("Composite")
            if composite is not None:
                composites.append(str(composite))
            stack.append(node.body)
        elif isinstance(node, Tuple):
            stack.extend(node.fields)
        elif isinstance(node, TupleGetItem):
            stack.append(node.tuple_value)
        elif isinstance(node, If):
            stack.extend((node.cond, node.true_branch, node.false_branch))
    return own, tuple(composites)


__all__ = ["FunctionRow", "ModuleSummary", "summarize"]
