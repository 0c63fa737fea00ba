"""Variable analyses over Relax expressions (TVM ``relax.analysis``): free, bound and all
variables, global references, use-def chains (:func:`collect_var_usage`), ``var2val`` and
purity of calls.

All walks loop over bindings (no recursion per binding); recursion depth is bounded by
expression nesting and function nesting. Results keep first-occurrence order, so anything
derived from them is deterministic.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import field
from typing import cast

from .expr import Binding
from .expr import Call
from .expr import Constant
from .expr import DataflowBlock
from .expr import DataflowVar
from .expr import Expr
from .expr import Function
from .expr import GlobalVar
from .expr import MatchCast
from .expr import Op
from .expr import SeqExpr
from .expr import Var
from .expr import VarBinding
from .functor import ExprVisitor
from .struct_info import FuncStructInfo

# Operators TVM registers as impure (FPurity false), used when the op registry attached to an
# ``Op`` says nothing about purity.
_IMPURE_OPS = frozenset({
    "relax.call_packed", "relax.print", "relax.assert_op", "relax.call_builtin_with_ctx",
    "relax.call_tir_inplace_impure", "relax.memory.alloc_storage", "relax.memory.alloc_tensor",
    "relax.memory.kill_storage", "relax.memory.kill_tensor", "relax.vm.alloc_storage",
    "relax.vm.alloc_tensor", "relax.vm.kill_object", "relax.vm.call_tir_dyn",
    "relax.to_vdevice", "relax.call_inplace_packed",
})


def is_impure_call(call: Call) -> bool:
    """Whether calling ``call.op`` may have side effects (TVM ``IsImpureCall``).

    Operators: the registry's ``pure``/``purity`` flag when present, else TVM's list of impure
    operators. Other callees: the purity of their callable struct info (unknown means pure).
    """
    op = call.op
    if isinstance(op, Op):
        op_def = op.op_def
        for attr in ("pure", "purity", "is_pure"):
            flag = getattr(op_def, attr, None) if op_def is not None else None
            if isinstance(flag, bool):
                return not flag
        return op.name in _IMPURE_OPS
    si = getattr(op, "struct_info", None)
    if isinstance(op, Function):
        return not op.is_pure
    if isinstance(si, FuncStructInfo):
        return not si.purity
    return False


def find_impure_call(expr: Expr) -> Call | None:
    """The first impure call in ``expr`` (the body, for a function), not entering nested
    functions (an impure call inside a local function does not make the caller impure)."""
    finder = _ImpureFinder()
    target = expr.body if isinstance(expr, Function) else expr
    finder.visit_expr(target)
    return finder.found


def contains_impure_call(expr: Expr) -> bool:
    return find_impure_call(expr) is not None


class _ImpureFinder(ExprVisitor):
    def __init__(self) -> None:
        self.found: Call | None = None

    def visit_expr(self, expr: Expr) -> None:
        if self.found is None:
            super().visit_expr(expr)

    def visit_function_(self, e: Function) -> None:
        pass  # nested functions are values, not executed here

    def visit_call_(self, e: Call) -> None:
        if is_impure_call(e):
            self.found = e
            return
        super().visit_call_(e)


_FLAT_OPERANDS = frozenset({Var, DataflowVar, Constant})


def _flat_call(call: Call) -> bool:
    """A call of an operator or a global on variables and constants: visiting it visits
    the callee (nothing for an operator) and each variable, and nothing else."""
    ot = type(call.op)
    if ot is not Op and ot is not GlobalVar:
        return False
    for a in call.args:
        if type(a) not in _FLAT_OPERANDS:
            return False
    return True


class _VarCollector(ExprVisitor):
    """Records variable definitions and uses in walk order."""

    def __init__(self) -> None:
        self.defs: dict[Var, None] = {}
        self.uses: dict[Var, None] = {}
        self.order: dict[Var, None] = {}
        self.gvars: dict[GlobalVar, None] = {}
        self.free: dict[Var, None] = {}
        self._scope: set[Var] = set()

    def visit_var_def(self, var: Var) -> None:
        self.defs.setdefault(var, None)
        self.order.setdefault(var, None)
        self._scope.add(var)

    def visit_var_binding_(self, binding: VarBinding) -> None:
        value = binding.value
        if type(value) is Call and _flat_call(value):  # what the visitor does, inline
            op = value.op
            if type(op) is GlobalVar:
                self.gvars.setdefault(op, None)
            for a in value.args:
                if type(a) is not Constant:
                    self.visit_var_(cast(Var, a))
            self.visit_var_def(binding.var)
        elif isinstance(value, Function):  # a local function may call itself
            self.visit_var_def(binding.var)
            self.visit_expr(value)
        else:
            super().visit_var_binding_(binding)

    def visit_var_(self, e: Var) -> None:
        self.uses.setdefault(e, None)
        self.order.setdefault(e, None)
        if e not in self._scope:
            self.free.setdefault(e, None)

    def visit_global_var_(self, e: GlobalVar) -> None:
        self.gvars.setdefault(e, None)


def free_vars(expr: Expr) -> list[Var]:
    """Variables used in ``expr`` but not defined inside it, in order of first use."""
    c = _VarCollector()
    c.visit_expr(expr)
    return [v for v in c.free if v not in c.defs]


def bound_vars(expr: Expr) -> list[Var]:
    """Variables defined in ``expr`` (parameters and bindings), in definition order."""
    c = _VarCollector()
    c.visit_expr(expr)
    return list(c.defs)


def all_vars(expr: Expr) -> list[Var]:
    """Every variable defined or used in ``expr``, in order of first appearance."""
    c = _VarCollector()
    c.visit_expr(expr)
    return list(c.order)


def all_global_vars(expr: Expr) -> list[GlobalVar]:
    """Global function references in ``expr``, in order of first appearance."""
    c = _VarCollector()
    c.visit_expr(expr)
    return list(c.gvars)


@dataclass
class VarUsageInfo:
    """Use-def facts of an expression (TVM ``VarUsageInfo``).

    ``downstream_usage[v]``: the variables whose binding uses ``v`` (first-use order, each
    once); every defined variable has an entry, possibly empty. ``outputs``: variables used
    where no binding is the user (a function's result, ``match_cast`` values).
    ``bound_values``: binding variable -> bound value (``VarBinding`` only).
    """

    bound_values: dict[Var, Expr] = field(default_factory=dict)
    downstream_usage: dict[Var, list[Var]] = field(default_factory=dict)
    outputs: list[Var] = field(default_factory=list)


class _UseDef(ExprVisitor):
    def __init__(self) -> None:
        self.bound: dict[Var, Expr] = {}
        self.users: dict[Var, dict[Var, None]] = {}
        self.outputs: dict[Var, None] = {}
        self.user: Var | None = None

    def _define(self, var: Var) -> None:
        self.users.setdefault(var, {})

    def visit_var_def(self, var: Var) -> None:
        self._define(var)

    def visit_var_binding_(self, binding: VarBinding) -> None:
        value = binding.value
        var = binding.var
        self.bound[var] = value
        if type(value) is Call and _flat_call(value):  # what the visitor does, inline
            users = self.users
            for a in value.args:
                if type(a) is not Constant:
                    users.setdefault(cast(Var, a), {})[var] = None
            users.setdefault(var, {})
            return
        saved = self.user
        self.user = binding.var
        if isinstance(binding.value, Function):  # may refer to itself
            self._define(binding.var)
            self.visit_expr(binding.value)
        else:
            self.visit_expr(binding.value)
            self._define(binding.var)
        self.user = saved

    def visit_match_cast_(self, binding: MatchCast) -> None:
        saved = self.user
        self.user = None  # TVM treats these uses as outputs: match_cast is never removed
        self.visit_expr(binding.value)
        self.user = saved
        self._define(binding.var)

    def visit_function_(self, e: Function) -> None:
        saved = self.user
        self.user = None
        super().visit_function_(e)
        self.user = saved

    def visit_var_(self, e: Var) -> None:
        if self.user is None:
            self.outputs.setdefault(e, None)
        else:
            self.users.setdefault(e, {})[self.user] = None


def collect_var_usage(expr: Expr) -> VarUsageInfo:
    """Use-def chains of ``expr`` (TVM ``CollectVarUsage``)."""
    v = _UseDef()
    v.visit_expr(expr)
    return VarUsageInfo(v.bound, {k: list(u) for k, u in v.users.items()}, list(v.outputs))


def analyze_var2value(expr: Expr) -> dict[Var, Expr]:
    """Every ``VarBinding`` variable of ``expr`` (nested functions included) -> its value."""
    out: dict[Var, Expr] = {}

    class _V(ExprVisitor):
        def visit_var_binding_(self, binding: VarBinding) -> None:
            value = binding.value
            out[binding.var] = value
            if type(value) is not Call or not _flat_call(value):  # a flat call binds nothing
                self.visit_expr(value)

    _V().visit_expr(expr)
    return out


def post_order_visit(expr: Expr, fn: Callable[[Expr], None]) -> None:
    """Call ``fn`` on every expression of ``expr`` after its children (TVM ``PostOrderVisit``):
    binding values in order, then the body; nested functions included; each node once."""
    seen: set[int] = set()

    class _V(ExprVisitor):
        def visit_expr(self, e: Expr) -> None:
            if id(e) in seen:
                return
            super().visit_expr(e)
            seen.add(id(e))
            fn(e)

        def visit_var_def(self, var: Var) -> None:
            pass

    _V().visit_expr(expr)


def block_bindings(func: Function) -> list[Binding]:
    """All top-level bindings of ``func`` in order (nested functions not entered)."""
    out: list[Binding] = []
    if isinstance(func.body, SeqExpr):
        for block in func.body.blocks:
            out.extend(block.bindings)
    return out


def has_dataflow_block(func: Function) -> bool:
    return isinstance(func.body, SeqExpr) and any(isinstance(b, DataflowBlock) for b in func.body.blocks)


__all__ = [
    "VarUsageInfo", "all_global_vars", "all_vars", "analyze_var2value", "block_bindings",
    "bound_vars", "collect_var_usage", "contains_impure_call", "find_impure_call",
    "free_vars", "has_dataflow_block", "is_impure_call", "post_order_visit",
]
