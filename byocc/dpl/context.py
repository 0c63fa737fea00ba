"""Graph-level pattern matching: :class:`PatternContext` and ``match_dfb`` (TVM's names).

Inside ``with PatternContext() as ctx:`` every ``a ^ b`` / ``a.used_by(b, i)`` (``a`` is used
by ``b``, at variable position ``i`` of ``b``'s value when ``i`` is not -1), ``a >> b`` /
``only_used_by`` (``a`` has exactly one user), ``fork_to``, the argument edges of call
patterns built in the context and ``same_shape_as`` are recorded in ``ctx``.
``ctx.match_dfb(block)`` then looks for one assignment of a distinct bound variable (or
parameter) of the block to every pattern of the graph such that each pattern matches the
value of its variable and every edge holds between the variables; it returns
``{pattern: variable}`` or None. ``PatternContext(incremental=True)`` starts from a copy of
the edges of the enclosing context.

The search is TVM's (``MatchGraph``), so the same block and graph give the same answer:

* The use-def graph of the block: for each ``VarBinding`` the variables its value uses,
  in evaluation order (``callees``, repeats kept; an edge's position indexes this list),
  and for each variable its distinct users in binding order. ``MatchCast`` values record no
  uses. Candidate variables are the used ones, in order of first use.
* The pattern graph's roots (producers no edge points to, in the order their first edge
  was recorded) are matched in turn, each against every candidate not yet taken. From a
  matched producer, each consumer pattern takes the first user of the variable that
  satisfies the edge and matches recursively (no backtracking inside one root's tree);
  between roots the search backtracks. ``same_shape_as`` constraints are checked as soon as
  the variables they name are matched.

Cost: one expression match (the pattern's size) per (pattern, candidate) pair tried;
backtracking happens only between roots. The search runs on an explicit stack (no Python
recursion over the pattern graph or the block).
"""

from __future__ import annotations

from collections.abc import Generator
from collections.abc import Mapping
from collections.abc import Sequence
from types import TracebackType

from byocc.ir import Binding
from byocc.ir import BindingBlock
from byocc.ir import Call
from byocc.ir import Expr
from byocc.ir import If
from byocc.ir import MatchCast
from byocc.ir import PatternError
from byocc.ir import Var
from byocc.ir import VarBinding
from byocc.ir.arith import can_prove_equal
from byocc.ir.arith import provably_different
from byocc.ir.functor import operands
from byocc.ir.struct_info import ShapeStructInfo
from byocc.ir.struct_info import TensorStructInfo

from .matcher import Matcher
from .pattern import CONTEXTS
from .pattern import DFPattern
from .pattern import SameShapeConstraint

#: One edge's constraint: ``(only_used_by, index)``.
PairConstraint = tuple[bool, int]


class PatternContext:
    """A set of graph constraints between patterns, and the block matcher over them."""

    def __init__(self, incremental: bool = False) -> None:
        #: producer -> {consumer: [constraints]}, both in recording order
        self.edge_constraints: dict[DFPattern, dict[DFPattern, list[PairConstraint]]] = {}
        self.validation_constraints: list[SameShapeConstraint] = []
        if incremental:
            outer = PatternContext.current()
            if outer is None:
                raise PatternError("PatternContext(incremental=True) must be created inside another "
                                   "'with PatternContext():' (it starts from that context's constraints)")
            self.edge_constraints = {p: {c: list(cons) for c, cons in uses.items()}
                                     for p, uses in outer.edge_constraints.items()}

    # ------------------------------------------------------------------ scope
    def __enter__(self) -> PatternContext:
        CONTEXTS.stack.append(self)
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        stack = CONTEXTS.stack
        if not stack or stack[-1] is not self:
            raise PatternError("PatternContext: contexts must be exited in the reverse order they were entered")
        stack.pop()

    @staticmethod
    def current() -> PatternContext | None:
        """The innermost open context of this thread, or None."""
        stack = CONTEXTS.stack
        top = stack[-1] if stack else None
        return top if isinstance(top, PatternContext) else None

    # ------------------------------------------------------------------ recording
    def add_edge(self, producer: DFPattern, consumer: DFPattern, only: bool, index: int) -> None:
        uses = self.edge_constraints.setdefault(producer, {})
        cons = uses.setdefault(consumer, [])
        constraint = (bool(only), int(index))
        if constraint in cons:
            kind = "only_used_by" if only else "used_by"
            where = "" if index == -1 else f" at index {index}"
            raise PatternError(f"PatternContext: this {kind} constraint{where} between the two patterns "
                               "already exists")
        cons.append(constraint)

    def add_constraint(self, constraint: SameShapeConstraint) -> None:
        self.validation_constraints.append(constraint)

    # ------------------------------------------------------------------ matching
    def match_dfb(self, dfb: BindingBlock) -> dict[DFPattern, Var] | None:
        """Match the graph against a (dataflow) block: ``{pattern: variable}`` or None."""
        if not isinstance(dfb, BindingBlock):
            raise TypeError(f"match_dfb: expected a DataflowBlock, got {type(dfb).__name__}")
        var2val = {b.var: b.value for b in dfb.bindings if isinstance(b, VarBinding)}
        return match_graph(self, dfb.bindings, var2val)

    def __repr__(self) -> str:
        n = sum(len(u) for u in self.edge_constraints.values())
        return f"PatternContext({n} edge(s), {len(self.validation_constraints)} constraint(s))"


# ---------------------------------------------------------------------------- use-def graph
def _used_vars(value: Expr) -> list[Var]:
    """The variables ``value`` uses, in evaluation order, repeats kept (iterative)."""
    out: list[Var] = []
    stack: list[Expr] = [value]
    while stack:
        e = stack.pop()
        if isinstance(e, Var):
            out.append(e)
        elif isinstance(e, If):
            stack.append(e.cond)
        else:  # a call's callee comes before its arguments
            stack.extend(reversed(operands(e)))
            if isinstance(e, Call):
                stack.append(e.op)
    return out


class _UseDef:
    """``vars`` (used variables, first-use order), ``users`` (var -> distinct users in
    binding order) and ``callees`` (user -> the variables its value uses)."""

    def __init__(self, bindings: Sequence[Binding]) -> None:
        self.vars: list[Var] = []
        self.users: dict[Var, list[Var]] = {}
        self.callees: dict[Var, list[Var]] = {}
        for b in bindings:
            if isinstance(b, MatchCast) or not isinstance(b, VarBinding):
                continue
            used = _used_vars(b.value)
            self.callees[b.var] = used
            for v in used:
                users = self.users.get(v)
                if users is None:
                    self.users[v] = users = []
                    self.vars.append(v)
                if not users or users[-1] is not b.var:
                    users.append(b.var)


class _State:
    """A partial match: pattern -> variable and back, and the constraints already proven."""

    __slots__ = ("p2r", "r2p", "validated")

    def __init__(self) -> None:
        self.p2r: dict[DFPattern, Var] = {}
        self.r2p: dict[Var, DFPattern] = {}
        self.validated: set[int] = set()

    def copy(self) -> _State:
        new = _State()
        new.p2r = dict(self.p2r)
        new.r2p = dict(self.r2p)
        new.validated = set(self.validated)
        return new

    def add(self, p: DFPattern, r: Var) -> None:
        self.p2r[p] = r
        self.r2p[r] = p

    def merge(self, other: _State) -> None:
        """Entries of ``other`` whose key is not here yet."""
        for p, r in other.p2r.items():
            self.p2r.setdefault(p, r)
        for r, p in other.r2p.items():
            self.r2p.setdefault(r, p)
        self.validated |= other.validated


class _GraphMatcher:
    def __init__(self, ctx: PatternContext, bindings: Sequence[Binding], var2val: Mapping[Var, Expr]) -> None:
        self.ctx = ctx
        self.ud = _UseDef(bindings)
        self.matcher = Matcher(var2val)
        self.children: dict[DFPattern, dict[DFPattern, list[PairConstraint]]] = ctx.edge_constraints
        consumers = {c for uses in ctx.edge_constraints.values() for c in uses}
        self.roots = [p for p in ctx.edge_constraints if p not in consumers]
        self.patterns: dict[DFPattern, None] = {}
        for p, uses in ctx.edge_constraints.items():
            self.patterns[p] = None
            for c in uses:
                self.patterns[c] = None

    def run(self) -> dict[DFPattern, Var] | None:
        if not self.roots:
            return None
        found = self.match_roots(_State(), 0)
        if found is None:
            return None
        return {p: found.p2r[p] for p in self.patterns}

    def try_match(self, p: DFPattern, r: Var, current: _State) -> _State | None:
        """``p`` at ``r`` and, through the edges, every pattern below ``p``."""
        return _trampoline(self._try_match(p, r, current))

    def _try_match(self, p: DFPattern, r: Var, current: _State) -> _Search:
        if not self.matcher.match(p, r):
            return None
        new = _State()
        new.add(p, r)
        r_users = self.ud.users.get(r, [])
        for pchild, cons in self.children.get(p, {}).items():
            any_ok = False
            for rchild in r_users:
                if rchild in new.r2p:
                    continue
                fixed = current.p2r.get(pchild)
                if fixed is not None and fixed is not rchild:
                    continue
                if not self._edge_holds(r, rchild, cons, len(r_users)) or pchild in new.p2r:
                    continue
                any_ok = True
                rec = yield self._try_match(pchild, rchild, current)
                if rec is not None:
                    new.add(pchild, rchild)
                    new.merge(rec)
            if pchild not in new.p2r or not any_ok:
                return None
        return new

    def _edge_holds(self, r: Var, rchild: Var, cons: list[PairConstraint], n_users: int) -> bool:
        for only, index in cons:
            if only and n_users != 1:
                return False
            if index != -1:
                callees = self.ud.callees.get(rchild, [])
                if len(callees) <= index or callees[index] is not r:
                    return False
        return True

    def match_roots(self, current: _State, root_idx: int) -> _State | None:
        """Every root from ``root_idx`` on, each at a free candidate, backtracking."""
        return _trampoline(self._match_roots(current, root_idx))

    def _match_roots(self, current: _State, root_idx: int) -> _Search:
        roots = self.roots
        while root_idx < len(roots) and roots[root_idx] in current.p2r:
            root_idx += 1
        if root_idx >= len(roots):
            return current
        root = roots[root_idx]
        for var in self.ud.vars:
            if var in current.r2p:
                continue
            m = yield self._try_match(root, var, current)
            if m is None:
                continue
            new = current.copy()
            new.merge(m)
            if not self.validate(new):
                continue
            rest = yield self._match_roots(new, root_idx + 1)
            if rest is not None:
                return rest
        return None

    def validate(self, state: _State) -> bool:
        """Check the ``same_shape_as`` constraints whose patterns are all matched now (and
        fail early on one already known false); record the proven ones in ``state``."""
        for c in self.ctx.validation_constraints:
            if id(c) in state.validated:
                continue
            verdict = self._same_shape(c, state)
            if verdict is False:
                return False
            if verdict is True:
                state.validated.add(id(c))
        return True

    def _same_shape(self, c: SameShapeConstraint, state: _State) -> bool | None:
        """True (holds), False (fails, or cannot be proven once all are matched), None
        (not all matched yet and not known false)."""
        expected: tuple | None = None
        all_matched = True
        unknown = False
        for arg in c.args:
            if arg not in self.patterns:
                raise PatternError("same_shape_as names a pattern that appears in no edge of the "
                                   "PatternContext; connect it with used_by/only_used_by first")
            var = state.p2r.get(arg)
            if var is None:
                all_matched = False
                continue
            shape = _shape_of(var)
            if shape is None:
                return False
            if expected is None:
                expected = shape
                continue
            if len(shape) != len(expected):
                return False
            for a, b in zip(shape, expected):
                if can_prove_equal(a, b):
                    continue
                if provably_different(a, b):
                    return False
                unknown = True
        if not all_matched:
            return None
        return not unknown


#: A search step: a generator that yields the sub-searches it needs (their results are sent
#: back) and returns its own result; :func:`_trampoline` runs it without Python recursion.
_Search = Generator["_Search", "_State | None", "_State | None"]


def _trampoline(search: _Search) -> _State | None:
    """Run a search and its sub-searches with an explicit stack (the pattern graph may be a
    long chain; Python's recursion limit is not a bound on it)."""
    stack = [search]
    result: _State | None = None
    while stack:
        try:
            stack.append(stack[-1].send(result))
            result = None
        except StopIteration as done:
            stack.pop()
            result = done.value
    return result


def _shape_of(var: Var) -> tuple | None:
    si = var.struct_info
    if isinstance(si, TensorStructInfo):
        return tuple(si.shape) if si.shape is not None else None
    if isinstance(si, ShapeStructInfo):
        return tuple(si.values) if si.values is not None else None
    return None


def match_graph(ctx: PatternContext, bindings: Sequence[Binding],
                var2val: Mapping[Var, Expr]) -> dict[DFPattern, Var] | None:
    """Match ``ctx``'s pattern graph against ``bindings`` (patterns see through ``var2val``)."""
    return _GraphMatcher(ctx, bindings, var2val).run()


__all__ = ["PatternContext", "match_graph"]
