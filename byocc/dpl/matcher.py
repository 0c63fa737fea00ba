"""The pattern matcher: docs/partitioning.md#matching-algorithm (TVM's ``DFPatternMatcher``).

``match_expr(pattern, expr, var2val)`` returns ``None`` or the *memo*: an insertion-ordered
dict pattern node -> matched expression, for every pattern node that matched (children
before parents, like TVM's ``matched_nodes_``). Rules, in TVM's order:

1. Before every pattern node is tested, the expression is unwrapped: a variable with an
   entry in ``var2val`` becomes its bound value (alias chains are followed), a sequence
   expression without bindings becomes its body.
2. A pattern node (by identity) already in the memo only matches the very same object.
   A failing node removes every memo entry added while it was being tried.
3. Calls: callee, then arguments left to right; on failure, for the operators
   ``relax.add``/``relax.multiply`` only, the arguments once more in reverse order. When the
   callee does not match, TVM's divide/multiply re-association is tried.
4. Or: left, else right. And: both. Not: the inner pattern fails.
5. ``has_ty``: a bare shape variable in the pattern's struct info is fixed by the first
   value it meets and must agree with the later ones (TVM accumulates these equalities as
   one condition over the match); a failing node forgets the variables it fixed.

Cost: linear in the pattern size per attempt, times the commutative retries. Recursion
depth is bounded by the pattern depth (small); expression unwrapping is a loop.

With ``trace=True`` the matcher also records the failure that happened after the most
progress (the deepest point reached), for ``--explain``.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Mapping
from typing import Any

from byocc.ir import Call
from byocc.ir import Constant
from byocc.ir import DataflowVar
from byocc.ir import Expr
from byocc.ir import ExternFunc
from byocc.ir import Function
from byocc.ir import GlobalVar
from byocc.ir import Op
from byocc.ir import SeqExpr
from byocc.ir import ShapeExpr
from byocc.ir import Tuple
from byocc.ir import TupleGetItem
from byocc.ir import Var
from byocc.ir.arith import can_prove_equal
from byocc.ir.struct_info import TensorStructInfo

from . import pattern as P
from .predicates import expr_equal_same_vars
from .predicates import match_call_attrs
from .predicates import match_dict
from .predicates import struct_info_base_of
from .printing import describe_expr
from .printing import describe_pattern

_COMMUTATIVE = frozenset(("relax.add", "relax.multiply"))

#: What a match gives: pattern node -> the (unwrapped) expression it matched.
Memo = dict[P.DFPattern, Expr]


class MatchFailure:
    """Where a traced match went wrong: ``path`` (outermost first) and ``message``."""

    __slots__ = ("progress", "path", "message")

    def __init__(self, progress: int, path: tuple[str, ...], message: str) -> None:
        self.progress = progress
        self.path = path
        self.message = message

    def __str__(self) -> str:
        if self.path:
            return f"{self.path[-1]}: {self.message}"
        return self.message

    def __repr__(self) -> str:
        return f"MatchFailure({self.progress}, {self.path!r}, {self.message!r})"


def unwrap_bound(expr: Expr, var2val: Mapping[Var, Expr] | None) -> Expr:
    """What a pattern is matched against for ``expr``: a variable's bound value (through
    ``var2val``, repeatedly), a sequence without bindings its body."""
    while True:
        if var2val and isinstance(expr, Var):
            value = var2val.get(expr)
            if value is not None:
                expr = value
                continue
        if isinstance(expr, SeqExpr) and not expr.blocks:
            expr = expr.body
            continue
        return expr


class Matcher:
    """One matching session. ``memo`` and ``order`` hold the current partial match."""

    def __init__(self, var2val: Mapping[Var, Expr] | None = None, trace: bool = False) -> None:
        self.var2val: Mapping[Var, Expr] = var2val if var2val else {}
        self.memo: Memo = {}
        self.order: list[P.DFPattern] = []
        #: shape variables of ``has_ty`` patterns fixed by this match (insertion-ordered)
        self.bound: dict[Any, Any] = {}
        self.trace = trace
        self.failure: MatchFailure | None = None
        self._path: list[str] = []
        self._raw: Expr | None = None

    # ------------------------------------------------------------------ driver
    def match(self, pattern: P.DFPattern, expr: Expr) -> bool:
        self.memo.clear()
        self.order.clear()
        self.bound.clear()
        return self.visit(pattern, expr)

    def unwrap(self, expr: Expr) -> Expr:
        return unwrap_bound(expr, self.var2val)

    def visit(self, pattern: P.DFPattern, expr0: Expr) -> bool:
        expr = self.unwrap(expr0)
        memo = self.memo
        if pattern in memo:
            if memo[pattern] is expr:
                return True
            if self.trace:
                self._fail(f"this sub-pattern already matched {describe_expr(memo[pattern])}, "
                           f"so it cannot also match {self._got(expr0, expr)}")
            return False
        watermark = len(self.order)
        bound = self.bound
        n_bound = len(bound)
        if self.trace:
            self._raw = expr0
        method = _DISPATCH.get(type(pattern))
        if method is None:
            method = _dispatch_subclass(type(pattern))
        out: bool = method(self, pattern, expr)
        if out:
            memo[pattern] = expr
            self.order.append(pattern)
        else:
            self.clear(watermark)
            while len(bound) > n_bound:
                bound.popitem()
        return out

    def clear(self, watermark: int) -> None:
        order = self.order
        if len(order) > watermark:
            memo = self.memo
            for p in order[watermark:]:
                memo.pop(p, None)
            del order[watermark:]

    # ------------------------------------------------------------------ tracing
    def _fail(self, message: str) -> None:
        progress = len(self.order)
        if self.failure is None or progress > self.failure.progress:
            self.failure = MatchFailure(progress, tuple(self._path), message)

    def _got(self, raw: Expr | None, expr: Expr) -> str:
        if raw is not expr and isinstance(raw, Var):
            return f"{raw.name_hint} = {describe_expr(expr)}"
        if isinstance(expr, Var) and not isinstance(expr, DataflowVar) and expr not in self.var2val:
            return f"{expr.name_hint} (a variable without a visible binding)"
        return describe_expr(expr)

    # ------------------------------------------------------------------ node kinds
    def _wildcard(self, p: P.WildcardPattern, expr: Expr) -> bool:
        return True

    def _expr(self, p: P.ExprPattern, expr: Expr) -> bool:
        if expr_equal_same_vars(p.expr, expr):
            return True
        if self.trace:
            self._fail(f"expected {describe_expr(p.expr)}, got {self._got(self._raw, expr)}")
        return False

    def _var(self, p: P.VarPattern, expr: Expr) -> bool:
        if isinstance(expr, Var) and (not p.name or p.name == expr.name_hint):
            return True
        if self.trace:
            what = f"a variable named {p.name!r}" if p.name else "an unbound variable"
            self._fail(f"expected {what}, got {self._got(self._raw, expr)}")
        return False

    def _dfv(self, p: P.DataflowVarPattern, expr: Expr) -> bool:
        if isinstance(expr, DataflowVar) and (not p.name or p.name == expr.name_hint):
            return True
        if self.trace:
            what = f"a dataflow variable named {p.name!r}" if p.name else "an unbound dataflow variable"
            self._fail(f"expected {what}, got {self._got(self._raw, expr)}")
        return False

    def _gv(self, p: P.GlobalVarPattern, expr: Expr) -> bool:
        if isinstance(expr, GlobalVar) and (not p.name or p.name in expr.name_hint):
            return True
        if self.trace:
            what = f"a global function whose name contains {p.name!r}" if p.name else "a global function"
            self._fail(f"expected {what}, got {self._got(self._raw, expr)}")
        return False

    def _extern(self, p: P.ExternFuncPattern, expr: Expr) -> bool:
        if isinstance(expr, ExternFunc) and (not p.global_symbol or p.global_symbol == expr.global_symbol):
            return True
        if self.trace:
            self._fail(f"expected an extern function {p.global_symbol!r}, got {self._got(self._raw, expr)}")
        return False

    def _const(self, p: P.ConstantPattern, expr: Expr) -> bool:
        if isinstance(expr, Constant):
            return True
        if self.trace:
            self._fail(f"expected a constant, got {self._got(self._raw, expr)}")
        return False

    def _call(self, p: P.CallPattern, expr: Expr) -> bool:
        if not isinstance(expr, Call):
            if self.trace:
                self._fail(f"expected {describe_pattern(p)}, got {self._got(self._raw, expr)}")
            return False
        raw = self._raw
        watermark = len(self.order)
        before = self.failure
        if self.visit(p.op, expr.op):
            watermark2 = len(self.order)
            n_pat, n_expr = len(p.args), len(expr.args)
            if (n_expr < n_pat) if p.varg_default_wildcard else (n_expr != n_pat):
                if self.trace:
                    self._fail(f"{describe_pattern(p)} with {n_pat} argument(s) cannot match "
                               f"{self._got(raw, expr)} with {n_expr}")
                return False
            if self._match_args(p.args, expr, False, watermark2):
                return True
            op = expr.op
            if isinstance(op, Op) and op.name in _COMMUTATIVE:
                if self._match_args(p.args, expr, True, watermark2):
                    return True
            return False
        self.clear(watermark)
        if self.trace and self.failure is not before and self.failure is not None:
            # the callee failed just now: say what the call was, not only the callee
            self.failure.message = f"expected {describe_pattern(p)}, got {self._got(raw, expr)}"
        return self._reassociate(p, expr, watermark)

    def _match_args(self, pargs: tuple[P.DFPattern, ...], call: Call, reverse: bool, watermark: int) -> bool:
        eargs = call.args[::-1] if reverse else call.args
        trace = self.trace
        n = len(call.args)
        for i, (pa, ea) in enumerate(zip(pargs, eargs)):
            if trace:
                idx = n - 1 - i if reverse else i
                self._path.append(f"argument {idx} of {describe_expr(call.op)}")
                ok = self.visit(pa, ea)
                self._path.pop()
            else:
                ok = self.visit(pa, ea)
            if not ok:
                self.clear(watermark)
                return False
        return True

    def _reassociate(self, p: P.CallPattern, call: Call, watermark: int) -> bool:
        """TVM's divide/multiply re-association, tried when the callee did not match.

        ``divide(multiply(a, b), c)`` may match ``multiply(x, y)`` when one raw argument of
        the call is itself a call to divide, as ``multiply(b, divide(a, c))`` then
        ``multiply(a, divide(b, c))``; ``multiply(divide(a, c), b)`` (either argument) may
        match ``divide(x, y)`` with a multiply argument as ``divide(multiply(a, b), c)``.
        The raw arguments are tested without unwrapping, as TVM does.
        """
        if _pattern_op_is(p, "relax.divide") and p.args:
            inner = p.args[0]
            if (isinstance(inner, P.CallPattern) and _pattern_op_is(inner, "relax.multiply")
                    and len(inner.args) >= 2 and len(p.args) >= 2
                    and _call_op_is(call, "relax.multiply") and len(call.args) >= 2
                    and (_call_op_is(call.args[0], "relax.divide") or _call_op_is(call.args[1], "relax.divide"))):
                out = False
                for arg_id in (0, 1):
                    div = P.CallPattern(p.op, (inner.args[arg_id], p.args[1]), add_constraint=False)
                    mul = P.CallPattern(inner.op, (inner.args[(arg_id + 1) % 2], div), add_constraint=False)
                    out = self.visit(mul, call)
                    if out:
                        return True
                    self.clear(watermark)
                return out
        if _pattern_op_is(p, "relax.multiply"):
            for arg_id in (0, 1):
                if arg_id >= len(p.args):
                    break
                inner = p.args[arg_id]
                if (isinstance(inner, P.CallPattern) and _pattern_op_is(inner, "relax.divide")
                        and len(inner.args) >= 2 and len(p.args) >= 2
                        and _call_op_is(call, "relax.divide") and len(call.args) >= 2
                        and (_call_op_is(call.args[0], "relax.multiply") or _call_op_is(call.args[1], "relax.multiply"))):
                    mul = P.CallPattern(p.op, (inner.args[0], p.args[(arg_id + 1) % 2]), add_constraint=False)
                    div = P.CallPattern(inner.op, (mul, inner.args[1]), add_constraint=False)
                    return self.visit(div, call)
        return False

    def _function(self, p: P.FunctionPattern, expr: Expr) -> bool:
        if not isinstance(expr, Function):
            if self.trace:
                self._fail(f"expected a function, got {self._got(self._raw, expr)}")
            return False
        if p.params is not None:
            if len(p.params) != len(expr.params):
                if self.trace:
                    self._fail(f"expected a function of {len(p.params)} parameter(s), got one of "
                               f"{len(expr.params)}")
                return False
            for pp, ep in zip(p.params, expr.params):
                if not self.visit(pp, ep):
                    return False
        return self.visit(p.body, expr.body)

    def _tuple(self, p: P.TuplePattern, expr: Expr) -> bool:
        if not isinstance(expr, Tuple) or len(expr.fields) != len(p.fields):
            if self.trace:
                self._fail(f"expected a tuple of {len(p.fields)} field(s), got {self._got(self._raw, expr)}")
            return False
        trace = self.trace
        for i, (fp, fe) in enumerate(zip(p.fields, expr.fields)):
            if trace:
                self._path.append(f"field {i} of the tuple")
            ok = self.visit(fp, fe)
            if trace:
                self._path.pop()
            if not ok:
                return False
        return True

    def _unordered_tuple(self, p: P.UnorderedTuplePattern, expr: Expr) -> bool:
        if not isinstance(expr, Tuple) or len(expr.fields) != len(p.fields):
            if self.trace:
                self._fail(f"expected a tuple of {len(p.fields)} field(s), got {self._got(self._raw, expr)}")
            return False
        used = [False] * len(expr.fields)
        return self._try_unordered(0, p.fields, expr.fields, used)

    def _try_unordered(self, idx: int, pats: tuple[P.DFPattern, ...], fields: tuple[Expr, ...],
                       used: list[bool]) -> bool:
        # TVM's search: no memo clean-up when backtracking (docs/partitioning.md#q10-unordered-tuples-cache-nothing).
        if idx >= len(pats):
            return True
        for i, field in enumerate(fields):
            if used[i]:
                continue
            if self.visit(pats[idx], field):
                used[i] = True
                if self._try_unordered(idx + 1, pats, fields, used):
                    return True
                used[i] = False
        return False

    def _tuple_get_item(self, p: P.TupleGetItemPattern, expr: Expr) -> bool:
        if not isinstance(expr, TupleGetItem):
            if self.trace:
                self._fail(f"expected a tuple item, got {self._got(self._raw, expr)}")
            return False
        if p.index != -1 and p.index != expr.index:
            if self.trace:
                self._fail(f"expected item {p.index}, got {self._got(self._raw, expr)}")
            return False
        if self.trace:
            self._path.append(f"the tuple of {describe_expr(expr)}")
            ok = self.visit(p.tuple, expr.tuple_value)
            self._path.pop()
            return ok
        return self.visit(p.tuple, expr.tuple_value)

    def _or(self, p: P.OrPattern, expr: Expr) -> bool:
        return self.visit(p.left, expr) or self.visit(p.right, expr)

    def _and(self, p: P.AndPattern, expr: Expr) -> bool:
        return self.visit(p.left, expr) and self.visit(p.right, expr)

    def _not(self, p: P.NotPattern, expr: Expr) -> bool:
        raw = self._raw
        if self.visit(p.reject, expr):
            if self.trace:
                self._fail(f"{self._got(raw, expr)} matches the rejected pattern {describe_pattern(p.reject)}")
            return False
        return True

    def _attr(self, p: P.AttrPattern, expr: Expr) -> bool:
        raw = self._raw
        if not self.visit(p.pattern, expr):
            return False
        if isinstance(expr, Call):
            ok, why = match_call_attrs(expr, p.attrs)
        elif isinstance(expr, Function):
            ok, why = match_dict(expr.attrs, p.attrs)
        elif isinstance(expr, Op):
            ok, why = (not p.attrs), "operator attributes are not available"
        else:
            ok, why = False, "only calls and functions have attributes"
        if not ok and self.trace:
            self._fail(f"{self._got(raw, expr)}: {why}")
        return ok

    def _dtype(self, p: P.DataTypePattern, expr: Expr) -> bool:
        si = expr.struct_info
        if isinstance(si, TensorStructInfo) and si.dtype == p.dtype:
            return self.visit(p.pattern, expr)
        if self.trace:
            have = si.dtype if isinstance(si, TensorStructInfo) else "not a tensor"
            self._fail(f"expected dtype {p.dtype}, got {have} ({self._got(self._raw, expr)})")
        return False

    def _shape(self, p: P.ShapePattern, expr: Expr) -> bool:
        si = expr.struct_info
        if isinstance(si, TensorStructInfo) and si.shape is not None:
            if len(si.shape) == len(p.shape) and all(can_prove_equal(a, b) for a, b in zip(p.shape, si.shape)):
                return self.visit(p.pattern, expr)
        if self.trace:
            have = tuple(si.shape) if isinstance(si, TensorStructInfo) and si.shape is not None else "unknown"
            self._fail(f"expected shape {tuple(p.shape)}, got {have} ({self._got(self._raw, expr)})")
        return False

    def _prim_arr(self, p: P.PrimArrPattern, expr: Expr) -> bool:
        if isinstance(expr, ShapeExpr) and len(expr.values) == len(p.fields) and all(
                can_prove_equal(a, b) for a, b in zip(p.fields, expr.values)):
            return True
        if self.trace:
            self._fail(f"expected R.shape({list(p.fields)}), got {self._got(self._raw, expr)}")
        return False

    def _struct_info(self, p: P.StructInfoPattern, expr: Expr) -> bool:
        raw = self._raw
        if not self.visit(p.pattern, expr):
            return False
        if struct_info_base_of(p.struct_info, expr.struct_info, self.bound):
            return True
        if self.trace:
            self._fail(f"{self._got(raw, expr)} has incompatible struct info {expr.struct_info!r}")
        return False


#: How the matcher tests a node kind: ``method(matcher, pattern node, unwrapped expr)``.
MatchMethod = Callable[[Matcher, Any, Expr], bool]

_DISPATCH: dict[type, MatchMethod] = {
    P.WildcardPattern: Matcher._wildcard,
    P.ExprPattern: Matcher._expr,
    P.VarPattern: Matcher._var,
    P.DataflowVarPattern: Matcher._dfv,
    P.GlobalVarPattern: Matcher._gv,
    P.ExternFuncPattern: Matcher._extern,
    P.ConstantPattern: Matcher._const,
    P.CallPattern: Matcher._call,
    P.FunctionPattern: Matcher._function,
    P.TuplePattern: Matcher._tuple,
    P.UnorderedTuplePattern: Matcher._unordered_tuple,
    P.TupleGetItemPattern: Matcher._tuple_get_item,
    P.OrPattern: Matcher._or,
    P.AndPattern: Matcher._and,
    P.NotPattern: Matcher._not,
    P.AttrPattern: Matcher._attr,
    P.DataTypePattern: Matcher._dtype,
    P.ShapePattern: Matcher._shape,
    P.PrimArrPattern: Matcher._prim_arr,
    P.StructInfoPattern: Matcher._struct_info,
}


def _dispatch_subclass(cls: type) -> MatchMethod:
    for base in cls.__mro__[1:]:
        method = _DISPATCH.get(base)
        if method is not None:
            _DISPATCH[cls] = method
            return method
    raise TypeError(f"not a pattern: {cls.__name__}")


def register_pattern_kind(cls: type, method: MatchMethod) -> None:
    """Let a new pattern class (a subclass defined elsewhere) reuse a matcher method."""
    _DISPATCH[cls] = method


def match_expr(pattern: P.DFPattern, expr: Expr, var2val: Mapping[Var, Expr] | None = None) -> Memo | None:
    """Match ``pattern`` against ``expr``; the memo (pattern -> unwrapped expr) or None."""
    m = Matcher(var2val)
    if not m.match(pattern, expr):
        return None
    return m.memo


def match_with_trace(pattern: P.DFPattern, expr: Expr, var2val: Mapping[Var, Expr] | None = None
                     ) -> tuple[Memo | None, MatchFailure | None]:
    """Like :func:`match_expr`, also returning the deepest :class:`MatchFailure` (or None)."""
    m = Matcher(var2val, trace=True)
    if m.match(pattern, expr):
        return m.memo, None
    return None, m.failure


# ---------------------------------------------------------------------------- helpers
def _pattern_op_is(p: P.CallPattern, name: str) -> bool:
    op = p.op
    return isinstance(op, P.ExprPattern) and isinstance(op.expr, Op) and op.expr.name == name


def _call_op_is(expr: Expr, name: str) -> bool:
    return isinstance(expr, Call) and isinstance(expr.op, Op) and expr.op.name == name
