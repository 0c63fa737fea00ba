"""Execution plans: a body's bindings in order and, per binding, the variables to drop.

A variable bound in a body is dropped right after the last binding that uses it (a use
inside a nested local function or ``If`` branch counts at the enclosing binding);
variables the body's result uses are kept. Plans and free-variable sets are cached by
node identity, so a function called many times is analysed once. Cost: linear in the
size of the body (an :class:`~byocc.ir.ExprVisitor`: bindings in loops, recursion only as
deep as expressions and functions nest). The caches belong to one interpreter (identity keys stay valid while
it holds the module).
"""

from __future__ import annotations

from byocc.ir import Call
from byocc.ir import Constant
from byocc.ir import DataflowVar
from byocc.ir import ExprVisitor
from byocc.ir import Function
from byocc.ir import Op
from byocc.ir import SeqExpr
from byocc.ir import Var


class Plan:
    """``drop_after`` maps a binding index to the variables to drop once it is bound."""

    __slots__ = ("bindings", "body", "drop_after")

    def __init__(self, bindings: tuple, drop_after: list, body):
        self.bindings = bindings
        self.drop_after = drop_after
        self.body = body


class _Uses(ExprVisitor):
    """Variables used (``uses``, an ordered dict as a set) and defined (``defs``: parameters
    and bound variables) in what it visits, nested functions and branches included."""

    def __init__(self) -> None:
        self.uses: dict = {}
        self.defs: set = set()

    def visit_var_(self, e: Var) -> None:
        self.uses[e] = None

    def visit_var_def(self, var: Var) -> None:
        self.defs.add(var)


def uses(expr, out: dict | None = None) -> dict:
    """Variables used in ``expr`` (an ordered dict used as a set), nested functions and
    branches included."""
    if out is None:
        out = {}
    t = type(expr)
    if t is Call:  # the common case, a call on leaves: no walk needed
        for a in expr.args:
            ta = type(a)
            if ta is Var or ta is DataflowVar:
                out[a] = None
            elif ta is not Constant:
                break
        else:
            if type(expr.op) is Op:
                return out
    walk = _Uses()
    walk.uses = out
    walk.visit_expr(expr)
    return out


def free_vars(func: Function, cache: dict) -> tuple:
    """Variables a function uses but does not define (what a closure must capture)."""
    hit = cache.get(id(func))
    if hit is not None and hit[0] is func:
        return hit[1]
    walk = _Uses()
    walk.visit_expr(func)
    result = tuple(v for v in walk.uses if v not in walk.defs)
    cache[id(func)] = (func, result)
    return result


def plan_of(body, cache: dict) -> Plan:
    """The plan of a function body or branch (a non-SeqExpr is a bare result), cached in
    ``cache`` by identity."""
    hit = cache.get(id(body))
    if hit is not None and hit[0] is body:
        return hit[1]
    if isinstance(body, SeqExpr):
        bindings = tuple(b for block in body.blocks for b in block.bindings)
        result_expr = body.body
    else:
        bindings = ()
        result_expr = body
    last: dict = {}
    defined: set = set()
    for i, b in enumerate(bindings):
        for v in uses(b.value):
            last[v] = i
        defined.add(b.var)
        last.setdefault(b.var, i)
    keep = uses(result_expr)
    drop_after: dict[int, list] = {}
    for v, i in last.items():
        if v in defined and v not in keep:
            drop_after.setdefault(i, []).append(v)
    plan = Plan(bindings, drop_after, result_expr)
    cache[id(body)] = (body, plan)
    return plan


__all__ = ["Plan", "free_vars", "plan_of", "uses"]
