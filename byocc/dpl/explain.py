"""Why was a call not offloaded? (``byocc partition --explain``)

:func:`pattern_root_ops` says which operators a pattern can match at its root (used to
pick candidate patterns, and by FuseOpsByPattern to index bindings, docs/partitioning.md#cost-model). :func:`explain_no_match` re-runs the candidate patterns on one call with the
tracing matcher and returns the closest pattern and the first thing that failed: a
sub-pattern (with its path, e.g. ``argument 1 of R.matmul``) or the check function's reason.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Mapping
from collections.abc import Sequence

from byocc.ir import Call
from byocc.ir import Op

from . import pattern as P
from .fusion import FusionPattern
from .fusion import as_fusion_pattern
from .fusion import check_reason
from .matcher import match_with_trace
from .printing import op_display_name

_ANY = None


def pattern_root_ops(pattern: P.DFPattern) -> frozenset | None:
    """Operators a call must have for ``pattern`` to match it at the root.

    ``None`` means "any call may match" (wildcard root, a callee that is not a fixed
    operator, ``~p``...). An empty set means no call can match (a tuple pattern).
    Includes the operators reachable through TVM's divide/multiply re-association.
    """
    return _root_ops(pattern, 0)


def _root_ops(p: P.DFPattern, depth: int) -> frozenset | None:
    if depth > 64:
        return _ANY
    if isinstance(p, P.CallPattern):
        op = p.op
        if isinstance(op, P.ExprPattern) and isinstance(op.expr, Op):
            ops = {op.expr}
            name = op.expr.name
            if name == "relax.divide" and p.args and _is_call_of(p.args[0], "relax.multiply"):
                ops.add(Op.get("relax.multiply", create=True))
            if name == "relax.multiply" and any(_is_call_of(a, "relax.divide") for a in p.args[:2]):
                ops.add(Op.get("relax.divide", create=True))
            return frozenset(ops)
        return _callee_ops(op, depth + 1)
    if isinstance(p, P.OrPattern):
        left, right = _root_ops(p.left, depth + 1), _root_ops(p.right, depth + 1)
        if left is _ANY or right is _ANY:
            return _ANY
        return left | right
    if isinstance(p, P.AndPattern):
        left, right = _root_ops(p.left, depth + 1), _root_ops(p.right, depth + 1)
        if left is _ANY:
            return right
        if right is _ANY:
            return left
        return left & right
    if isinstance(p, (P.AttrPattern, P.DataTypePattern, P.ShapePattern, P.StructInfoPattern)):
        return _root_ops(p.pattern, depth + 1)
    if isinstance(p, (P.TuplePattern, P.UnorderedTuplePattern, P.TupleGetItemPattern, P.VarPattern,
                      P.GlobalVarPattern, P.ExternFuncPattern, P.ConstantPattern, P.PrimArrPattern,
                      P.FunctionPattern)):
        return frozenset()
    if isinstance(p, P.ExprPattern):
        return _ANY if isinstance(p.expr, Call) else frozenset()
    return _ANY  # wildcard, Not, unknown kinds


def _callee_ops(p: P.DFPattern, depth: int) -> frozenset | None:
    """Operators a callee pattern admits (``(is_op(a) | is_op(b))(...)``), None = any."""
    if depth > 64:
        return _ANY
    if isinstance(p, P.ExprPattern):
        return frozenset((p.expr,)) if isinstance(p.expr, Op) else _ANY
    if isinstance(p, P.OrPattern):
        left, right = _callee_ops(p.left, depth + 1), _callee_ops(p.right, depth + 1)
        return _ANY if left is _ANY or right is _ANY else left | right
    if isinstance(p, P.AndPattern):
        left, right = _callee_ops(p.left, depth + 1), _callee_ops(p.right, depth + 1)
        if left is _ANY:
            return right
        return left if right is _ANY else left & right
    if isinstance(p, (P.AttrPattern, P.DataTypePattern, P.ShapePattern, P.StructInfoPattern)):
        return _callee_ops(p.pattern, depth + 1)
    return _ANY


def _is_call_of(p: P.DFPattern, name: str) -> bool:
    return (isinstance(p, P.CallPattern) and isinstance(p.op, P.ExprPattern)
            and isinstance(p.op.expr, Op) and p.op.expr.name == name)


def explain_no_match(patterns: Sequence, call_expr: Call, var2val: Mapping | None = None,
                     context_factory: Callable | None = None) -> tuple:
    """``(closest_pattern_name, reason)`` for a call that no pattern offloaded.

    Candidates are the patterns (in priority order) whose root can be the call's operator.
    Preference: a candidate that matches and passes its check (then it lost to an overlap
    or a cycle); else the first candidate whose check rejected the match (its reason);
    else the candidate whose match got furthest, with the failing sub-pattern.
    ``context_factory(entry, memo)`` builds the :class:`PatternCheckContext` for a check;
    without it checks are not run. ``closest_pattern_name`` is None without candidates.
    """
    entries = [as_fusion_pattern(p) for p in patterns]
    op = call_expr.op if isinstance(call_expr, Call) else None
    candidates = []
    for entry in entries:
        roots = pattern_root_ops(entry.pattern)
        if roots is _ANY or (op is not None and op in roots):
            candidates.append(entry)
    op_text = op_display_name(op.name) if isinstance(op, Op) else "this call"
    if not candidates:
        return None, f"no pattern has {op_text} at its root"

    rejected: tuple | None = None
    best_failure = None
    best_entry: FusionPattern | None = None
    for entry in candidates:
        memo, failure = match_with_trace(entry.pattern, call_expr, var2val)
        if memo is None:
            if failure is not None and (best_failure is None or failure.progress > best_failure.progress):
                best_failure, best_entry = failure, entry
            continue
        if entry.check is None or context_factory is None:
            if entry.check is not None:
                if rejected is None:
                    rejected = (entry.name, "the pattern matches; its check was not evaluated")
                continue
            return entry.name, ("the pattern matches here, but the match was not used (an "
                                "overlapping higher-priority group or a dependency cycle)")
        try:
            result = entry.check(context_factory(entry, memo))
        except Exception as exc:  # a user check may raise anything; report it
            if rejected is None:
                rejected = (entry.name, f"the check function raised {type(exc).__name__}: {exc}")
            continue
        if result:
            return entry.name, ("the pattern matches and its check accepts, but the match was not "
                                "used (an overlapping higher-priority group or a dependency cycle)")
        if rejected is None:
            reason = check_reason(result)
            if reason is None:
                fname = getattr(entry.check, "__name__", "check")
                reason = f"check function {fname} returned False"
            rejected = (entry.name, reason)
    if rejected is not None:
        return rejected
    if best_entry is not None:
        return best_entry.name, str(best_failure)
    return candidates[0].name, "the pattern does not match"
