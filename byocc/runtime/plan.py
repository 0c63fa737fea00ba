"""Execution plans: a body's bindings in order and, per binding, the variables to drop.

A variable bound in a body is dropped right after the last binding that uses it (a use
inside a nested local function or ``If`` branch counts at the enclosing binding);
variables the body's result uses are kept. Plans and free-variable sets are cached by
node identity, so a function called many times is analysed once. Cost: linear in the
size of the body. The caches belong to one interpreter (identity keys stay valid while
it holds the module).
"""

from __future__ import annotations

from byocc.ir import (
    Call,
    Constant,
    DataflowVar,
    Function,
    If,
    Op,
    SeqExpr,
    Tuple,
    TupleGetItem,
    Var,
)


class Plan:
    """``drop_after`` maps a binding index to the variables to drop once it is bound."""

    __slots__ = ("bindings", "body", "drop_after")

    def __init__(self, bindings: tuple, drop_after: list, body):
        self.bindings = bindings
        self.drop_after = drop_after
        self.body = body


def uses(expr, out: dict | None = None) -> dict:
    """Variables used in ``expr`` (an ordered dict used as a set), nested functions and
    branches included. Iterative: an explicit stack, no recursion."""
    if out is None:
        out = {}
    t = type(expr)
    if t is Call:  # the common case, a call on leaves: no stack needed
        for a in expr.args:
            ta = type(a)
            if ta is Var or ta is DataflowVar:
                out[a] = None
            elif ta is not Constant:
                break
        else:
            if type(expr.op) is Op:
                return out
    stack = [expr]
    while stack:
        e = stack.pop()
        if isinstance(e, Var):
            out[e] = None
        elif isinstance(e, Call):
            stack.append(e.op)
            stack.extend(e.args)
        elif isinstance(e, Tuple):
            stack.extend(e.fields)
        elif isinstance(e, TupleGetItem):
            stack.append(e.tuple_value)
        elif isinstance(e, If):
            stack.extend((e.cond, e.true_branch, e.false_branch))
        elif isinstance(e, SeqExpr):
            for block in e.blocks:
                for b in block.bindings:
                    stack.append(b.value)
            stack.append(e.body)
        elif isinstance(e, Function):
            stack.append(e.body)
    return out


def _defs(expr, out: set) -> set:
    """Variables defined inside ``expr`` (parameters and bindings, nested included)."""
    stack = [expr]
    while stack:
        e = stack.pop()
        if isinstance(e, Function):
            out.update(e.params)
            stack.append(e.body)
        elif isinstance(e, SeqExpr):
            for block in e.blocks:
                for b in block.bindings:
                    out.add(b.var)
                    stack.append(b.value)
            stack.append(e.body)
        elif isinstance(e, If):
            stack.extend((e.true_branch, e.false_branch))
        elif isinstance(e, Call):
            stack.extend(a for a in e.args if isinstance(a, (Function, SeqExpr, If)))
    return out


def free_vars(func: Function, cache: dict) -> tuple:
    """Variables a function uses but does not define (what a closure must capture)."""
    hit = cache.get(id(func))
    if hit is not None and hit[0] is func:
        return hit[1]
    defined = _defs(func, set())
    result = tuple(v for v in uses(func.body) if v not in defined)
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
