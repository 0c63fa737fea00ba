"""A summary of a module for ``byocc show`` on a terminal: functions, op counts, offloading.

Pure IR analysis (no printing, no rich): :func:`summarize` walks every function once with an
:class:`~byocc.ir.ExprVisitor` (bindings in loops; recursion only as deep as expressions and
functions nest), so its cost is linear in the size of the module.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from dataclasses import field

from byocc.ir import Call
from byocc.ir import ExprVisitor
from byocc.ir import ExternFunc
from byocc.ir import Function
from byocc.ir import IRModule
from byocc.ir import Op
from byocc.ir import StringImm

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


class _Census(ExprVisitor):
    """Adds every op call (nested functions included) to ``summary.op_counts`` and every
    external symbol called to ``summary.packed_calls``; collects the Composite names of
    nested functions in the order they appear."""

    def __init__(self, summary: ModuleSummary):
        self.summary = summary
        self.composites: list[str] = []

    def visit_call_(self, e: Call) -> None:
        op, summary = e.op, self.summary
        if isinstance(op, Op):
            summary.op_counts[op.name] += 1
            first = e.args[0] if e.args else None
            if op.name in _PACKED_CALLS and isinstance(first, StringImm):
                summary.packed_calls[first.value] += 1
            elif op.name in _PACKED_CALLS and isinstance(first, ExternFunc):
                summary.packed_calls[first.global_symbol] += 1
        elif isinstance(op, ExternFunc):
            summary.packed_calls[op.global_symbol] += 1
        super().visit_call_(e)

    def visit_function_(self, e: Function) -> None:
        composite = (e.attrs or {}).get("Composite")
        if composite is not None:
            self.composites.append(str(composite))
        super().visit_function_(e)


def _walk(func: Function, summary: ModuleSummary) -> tuple[int, tuple[str, ...]]:
    """Count ``func``'s own bindings; add its calls to ``summary`` (:class:`_Census`);
    return the Composite names of nested functions."""
    own = sum(len(block.bindings) for block in func.body.blocks)
    census = _Census(summary)
    census.visit_expr(func.body)
    return own, tuple(census.composites)


__all__ = ["FunctionRow", "ModuleSummary", "summarize"]
