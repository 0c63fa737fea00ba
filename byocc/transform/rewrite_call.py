"""``rewrite_call(pattern, rewriter, func)``: TVM 0.27's ``relax.dpl.rewrite_call``.

Every binding whose value matches ``pattern`` (the earlier bindings of its block visible
through the matcher's variable unwrapping) is handed to ``rewriter(value, matches)``;
``matches`` maps each pattern node to the (unwrapped) expression it matched. A returned
expression other than ``value`` replaces the binding's value; ``None`` or ``value`` itself
leaves it. A top-level ``a | b`` is tried as its alternatives in turn: ``a`` over the
scope's bindings, then ``b`` over those ``a`` did not rewrite, so a rewriter returning the
value unchanged for ``a`` lets ``b`` have its go (TVM's OrRewriter; the ``|`` pattern itself
maps to the matched value in ``matches``). ``rewrite_bindings(ctx, rewriter, func)`` is the
same driver with graph matches (:class:`~byocc.dpl.PatternContext`) in place of the
per-binding ones. What TVM's
``PatternMatchingMutator`` does, observable in the printed result:

1. Nested functions and ``if`` branches are rewritten before the sequence holding them.
2. A sequence is rewritten block by block. A dataflow block is one matching scope; a plain
   block is split into scopes at ``if`` bindings and impure calls. Inside a scope a
   rewritten binding is no longer visible to later matches (its old value is gone).
3. Rewritten bindings are re-ordered if a new value uses a later variable (TVM's minimal
   topological sort), then re-emitted: nested calls in a new value become bindings of their
   own, named ``lv``, ``lv1``... in a dataflow block (``gv``... elsewhere) from one counter per
   ``rewrite_call``.
4. If the sequence changed, ``CanonicalizeBindings``, ``EliminateCommonSubexpr`` and
   ``RemoveAllUnused`` run in turn until nothing changes, and the whole matching repeats
   until a round changes nothing. TVM 0.27 counts a sequence with a non-empty plain
   (non-dataflow) block as changed even when nothing matched, so the clean-up also runs on
   such functions (observed: dead bindings disappear from them).

Cost per round: one match attempt per binding and ``|`` alternative (the pattern's size
each; a graph match for ``rewrite_bindings``) plus the clean-up
passes, all linear in the bindings; rounds repeat only while rewrites happen.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Mapping
from typing import TYPE_CHECKING
from typing import Any

from byocc.dpl.matcher import match_expr
from byocc.dpl.matcher import unwrap_bound
from byocc.ir import Binding
from byocc.ir import BindingBlock
from byocc.ir import Call
from byocc.ir import DataflowBlock
from byocc.ir import DataflowVar
from byocc.ir import Expr
from byocc.ir import Function
from byocc.ir import If
from byocc.ir import MatchCast
from byocc.ir import Op
from byocc.ir import SeqExpr
from byocc.ir import Tuple
from byocc.ir import TupleGetItem
from byocc.ir import Var
from byocc.ir import VarBinding
from byocc.ir.analysis import contains_impure_call
from byocc.ir.analysis import free_vars
from byocc.ir.functor import map_operands
from byocc.ir.functor import map_values
from byocc.ir.functor import operands
from byocc.ir.functor import with_value
from byocc.ir.struct_info import ObjectStructInfo
from byocc.ir.structural import structural_equal

from .canonicalize_bindings import canonicalize_bindings
from .dead_code_elimination import merge_adjacent_blocks
from .dead_code_elimination import remove_all_unused
from .eliminate_common_subexpr import eliminate_common_subexpr

if TYPE_CHECKING:
    from byocc.dpl import DFPattern
    from byocc.dpl import PatternContext

#: ``rewriter(value, matches)``: the new value, or None (or ``value``) to keep the binding.
Rewriter = Callable[[Expr, dict[Any, Expr]], Expr | None]


#: ``rewriter(matches, bindings)``: new values for some of the matched variables.
BindingsRewriter = Callable[[dict[Any, Var], dict[Var, Expr]], Mapping[Var, Expr] | None]


def rewrite_call(pattern: DFPattern, rewriter: Rewriter, func: Function) -> Function:
    """Rewrite every match of ``pattern`` in ``func`` (see the module docstring)."""
    if not isinstance(func, Function):
        raise TypeError(f"rewrite_call: expected a relax Function, got {type(func).__name__}")
    return _PatternRewriter(pattern, rewriter).function(func)


def rewrite_bindings(ctx: PatternContext, rewriter: BindingsRewriter, func: Function) -> Function:
    """TVM's ``relax.dpl.rewrite_bindings``: in each scope (as for :func:`rewrite_call`), match
    the graph of ``ctx`` against the bindings (``ctx.match_dfb``); on a match, call
    ``rewriter(matches, bindings)`` with ``matches`` pattern -> variable and ``bindings``
    variable -> bound value, and give the variables of the mapping it returns their new
    values. The graph is then matched again among the bindings not rewritten yet, until it
    no longer matches. Rewritten scopes are re-emitted, cleaned up and matched again until
    nothing changes, as in :func:`rewrite_call`."""
    from byocc.dpl.context import PatternContext

    if not isinstance(ctx, PatternContext):
        raise TypeError(f"rewrite_bindings: expected a PatternContext, got {type(ctx).__name__}")
    if not isinstance(func, Function):
        raise TypeError(f"rewrite_bindings: expected a relax Function, got {type(func).__name__}")
    return _GraphRewriter(ctx, rewriter).function(func)


class _PatternRewriter:
    def __init__(self, pattern: DFPattern, rewriter: Rewriter) -> None:
        self.pattern = pattern
        self.rewriter = rewriter
        #: ``(alternative, its root operator or None, the enclosing '|' patterns)``
        self.alternatives = [(alt, _root_op(alt), ors) for alt, ors in _alternatives(pattern)]
        self.counters: dict[str, int] = {}
        self.really_changed = False

    # ------------------------------------------------------------------ traversal
    def function(self, func: Function) -> Function:
        body = self.seq(func.body)
        if body is func.body:
            return func
        return Function(func.params, body, func.ret_struct_info, func.is_pure, dict(func.attrs), func.span)

    def seq(self, seq: SeqExpr) -> SeqExpr:
        prev = self._children(seq)
        # TVM compares the first re-emitted sequence unequal to the original whenever a plain
        # block was re-emitted (see the module docstring), so the clean-up runs once.
        # TVM compares whole sequences before and after each step; byocc knows cheaper when
        # they differ: a round changed the sequence iff some rewritten value differs
        # structurally from the value it replaces (then the clean-up cannot restore the old
        # sequence either), and a clean-up step changed it iff it returned a new object that
        # is not structurally equal.
        forced = any(not isinstance(b, DataflowBlock) and b.bindings for b in prev.blocks)
        while True:
            self.really_changed = False
            nxt = self._try_rewrite(prev)
            if nxt is None or not (self.really_changed or forced):
                break
            forced = False
            cleaned_something = False
            while True:
                start = nxt
                nxt = _clean(nxt)
                if nxt is start or structural_equal(start, nxt):
                    nxt = start
                    break
                cleaned_something = True
            if not self.really_changed and not cleaned_something:
                break
            prev = nxt
        return prev

    def _children(self, seq: SeqExpr) -> SeqExpr:
        """``seq`` with nested functions and ``if`` branches rewritten first."""
        return map_values(seq, self._nested)

    def _nested(self, value: Expr) -> Expr:
        if isinstance(value, Function):
            return self.function(value)
        if isinstance(value, If):
            t = self.seq(value.true_branch) if isinstance(value.true_branch, SeqExpr) else value.true_branch
            f = self.seq(value.false_branch) if isinstance(value.false_branch, SeqExpr) else value.false_branch
            if t is value.true_branch and f is value.false_branch:
                return value
            return If(value.cond, t, f, value.struct_info, value.span)
        return value

    # ------------------------------------------------------------------ one round
    def _try_rewrite(self, seq: SeqExpr) -> SeqExpr | None:
        blocks = list(seq.blocks)
        dummy = None
        if not isinstance(seq.body, Var):
            dummy = Var("dummy_output_var", seq.body.struct_info)
            last = blocks.pop() if blocks else BindingBlock(())
            blocks.append(type(last)(last.bindings + (VarBinding(dummy, seq.body),), last.span))
        changed = False
        new_blocks: list[BindingBlock] = []
        for block in blocks:
            new = self._block(block)
            changed |= new is not block
            new_blocks.append(new)
        if not changed:
            return None
        body = seq.body
        if dummy is not None:
            last = new_blocks.pop()
            tail = last.bindings[-1]
            assert tail.var is dummy
            if len(last.bindings) > 1:
                new_blocks.append(type(last)(last.bindings[:-1], last.span))
            body = tail.value
        return merge_adjacent_blocks(SeqExpr(tuple(new_blocks), body, seq.span))

    def _block(self, block: BindingBlock) -> BindingBlock:
        if isinstance(block, DataflowBlock):
            bindings = self._scope(block.bindings)
            if bindings is None:
                return block
            return self._emit(block, bindings)
        # A plain block: scopes end at ``if`` and impure calls. TVM re-emits such a block even
        # when nothing in it matched.
        out: list[Binding] = []
        scope: list[Binding] = []
        for b in block.bindings:
            if isinstance(b.value, If) or (isinstance(b.value, Call) and contains_impure_call(b.value)):
                out.extend(self._scope(tuple(scope)) or scope)
                scope = []
                out.append(b)
            else:
                scope.append(b)
        out.extend(self._scope(tuple(scope)) or scope)
        if not out:
            return block
        return self._emit(block, out)

    def _scope(self, bindings: tuple[Binding, ...]) -> list[Binding] | None:
        """The bindings with matches rewritten (topologically re-sorted), or None."""
        rewrites = self._rewrites(bindings)
        if not rewrites:
            return None
        if not self.really_changed:
            values = {b.var: b.value for b in bindings}
            self.really_changed = any(not structural_equal(new, values[var]) for var, new in rewrites.items())
        out: list[Binding] = []
        for b in bindings:
            new = rewrites.get(b.var)
            if new is None:
                out.append(b)
            elif isinstance(b, MatchCast):
                out.append(MatchCast(b.var, new, b.struct_info, b.span))
            else:
                out.append(VarBinding(b.var, new, b.span))
        return _topological_sort(out)

    def _rewrites(self, bindings: tuple[Binding, ...]) -> dict[Var, Expr]:
        """New values for the bindings of one scope: each alternative of a top-level ``|``
        in turn, over the bindings no earlier alternative rewrote (TVM's OrRewriter); a
        binding left alone stays visible to later matches of the same alternative."""
        rewrites: dict[Var, Expr] = {}
        for alt, root_op, ors in self.alternatives:
            lookup: dict[Var, Expr] = {}
            for b in bindings:
                if b.var in rewrites:
                    continue
                new = self._rewrite(alt, root_op, ors, b.value, lookup)
                if new is not None:
                    rewrites[b.var] = new
                else:
                    lookup[b.var] = b.value
        return rewrites

    def _rewrite(self, alt: DFPattern, root_op: Op | None, ors: tuple[DFPattern, ...], value: Expr,
                 lookup: Mapping[Var, Expr]) -> Expr | None:
        if root_op is not None:
            v: Expr = value
            while isinstance(v, Var) and v in lookup:
                v = lookup[v]
            if not (isinstance(v, Call) and v.op is root_op):
                return None  # cannot match: cheaper than asking the matcher
        matches = match_expr(alt, value, lookup)
        if matches is None:
            return None
        if ors:
            matched = unwrap_bound(value, lookup)
            for p in ors:
                matches[p] = matched
        new = self.rewriter(value, matches)
        if new is None or new is value:
            return None
        return new

    # ------------------------------------------------------------------ re-emission
    def _emit(self, block: BindingBlock, bindings: list[Binding]) -> BindingBlock:
        is_dataflow = isinstance(block, DataflowBlock)
        out: list[Binding] = []
        cache: dict[int, Var] = {}  # TVM's per-block normalisation cache: one variable per operand object
        for b in bindings:
            out.append(with_value(b, self._normalize_value(b.value, out, is_dataflow, cache)))
        return type(block)(tuple(out), block.span)

    def _normalize_value(self, value: Expr, out: list[Binding], is_dataflow: bool, cache: dict[int, Var]) -> Expr:
        """``value`` with every non-leaf operand bound to a fresh variable (appended to
        ``out`` in evaluation order), as TVM's normaliser does. Iterative: operands are
        expanded with an explicit stack."""
        if not isinstance(value, (Call, Tuple, TupleGetItem)):
            return value
        # post-order over the operand tree; the root itself is not bound
        done: dict[int, Expr] = {}
        stack = [(value, False)]
        while stack:
            node, ready = stack.pop()
            if id(node) in done:
                continue
            kids = operands(node)
            if not ready:
                stack.append((node, True))
                for k in reversed(kids):
                    if isinstance(k, (Call, TupleGetItem, Tuple)) and id(k) not in done:
                        stack.append((k, False))
                continue
            rebuilt = map_operands(node, lambda k: done.get(id(k), k))
            if node is not value and not isinstance(node, Tuple):
                key = id(node)
                var = cache.get(key)
                if var is None:
                    var = self._fresh(rebuilt, is_dataflow)
                    out.append(VarBinding(var, rebuilt))
                    cache[key] = var
                done[id(node)] = var
            else:
                done[id(node)] = rebuilt
        return done[id(value)]

    def _fresh(self, value: Expr, is_dataflow: bool) -> Var:
        prefix = "lv" if is_dataflow else "gv"
        n = self.counters.get(prefix, 0)
        self.counters[prefix] = n + 1
        name = prefix if n == 0 else f"{prefix}{n}"
        return DataflowVar(name, value.struct_info) if is_dataflow else Var(name, value.struct_info)


class _GraphRewriter(_PatternRewriter):
    """:func:`rewrite_bindings`: graph matches over a scope instead of one match per binding."""

    def __init__(self, ctx: PatternContext, rewriter: BindingsRewriter) -> None:
        super().__init__(None, None)  # type: ignore[arg-type]
        self.ctx = ctx
        self.graph_rewriter = rewriter

    def _rewrites(self, bindings: tuple[Binding, ...]) -> dict[Var, Expr]:
        """Match, rewrite, and match again among the bindings not rewritten yet, until the
        graph no longer matches or the rewriter returns nothing (TVM's loop): each round
        removes at least one binding, so there are at most as many rounds as bindings."""
        from byocc.dpl.context import match_graph

        out: dict[Var, Expr] = {}
        remaining = bindings
        while remaining:
            lookup = {b.var: b.value for b in remaining}
            matches = match_graph(self.ctx, remaining, lookup)
            if matches is None:
                break
            new = self.graph_rewriter(matches, dict(lookup))
            if not new:
                break
            if not isinstance(new, Mapping):
                raise TypeError("rewrite_bindings: the rewriter must return a dict {variable: new value}, "
                                f"got {type(new).__name__}")
            for var, value in new.items():
                if not isinstance(var, Var) or var not in lookup:
                    what = getattr(var, "name_hint", repr(var))
                    raise ValueError(f"rewrite_bindings: the rewriter returned a new value for {what}, "
                                     "which is not a variable bound in the matched block (or was "
                                     "rewritten already)")
                if not isinstance(value, Expr):
                    raise TypeError(f"rewrite_bindings: the new value of {var.name_hint} is a "
                                    f"{type(value).__name__}, not a relax expression")
                out[var] = value
            remaining = tuple(b for b in remaining if b.var not in new)
        return out


def _alternatives(pattern: DFPattern | None) -> list[tuple[DFPattern, tuple[DFPattern, ...]]]:
    """The alternatives of the top-level ``|`` chain of ``pattern``, left to right, each
    with the ``|`` patterns around it (they are given the matched value too). Iterative."""
    from byocc.dpl.pattern import OrPattern

    out: list[tuple[DFPattern, tuple[DFPattern, ...]]] = []
    if pattern is None:
        return out
    stack: list[tuple[DFPattern, tuple[DFPattern, ...]]] = [(pattern, ())]
    while stack:
        p, ors = stack.pop()
        if isinstance(p, OrPattern):
            stack.append((p.right, ors + (p,)))
            stack.append((p.left, ors + (p,)))
        else:
            out.append((p, ors))
    return out


def _root_op(pattern: DFPattern) -> Op | None:
    """The operator a match's root call must have, when the pattern says so plainly (not
    for multiply/divide, which the matcher may re-associate)."""
    from byocc.dpl.pattern import CallPattern
    from byocc.dpl.pattern import ExprPattern

    if type(pattern) is CallPattern and type(pattern.op) is ExprPattern and isinstance(pattern.op.expr, Op):
        if pattern.op.expr.name not in ("relax.multiply", "relax.divide"):
            return pattern.op.expr
    return None


def _topological_sort(bindings: list[Binding]) -> list[Binding]:
    """TVM's minimal re-ordering: a binding that uses a later variable waits until that
    variable is bound; after each emitted binding the earliest ready waiting one follows."""
    remaining = {b.var for b in bindings}
    waiting: list[list[Any]] = []  # [binding, unmet set, emitted]
    out: list[Binding] = []

    def push(b: Binding) -> None:
        out.append(b)
        remaining.discard(b.var)
        for w in waiting:
            w[1].discard(b.var)

    for b in bindings:
        unmet = {v for v in free_vars(b.value) if v in remaining}
        if unmet:
            waiting.append([b, unmet, False])
        else:
            push(b)
        again = True
        while again:
            again = False
            for w in waiting:
                if not w[2] and not w[1]:
                    w[2] = True
                    again = True
                    push(w[0])
                    break
    return out


def _clean(seq: SeqExpr) -> SeqExpr:
    """One round of CanonicalizeBindings, EliminateCommonSubexpr and RemoveAllUnused on a
    sequence (run on a parameterless function around it: free variables stay free)."""
    func = Function((), seq, seq.body.struct_info or ObjectStructInfo(), True, {}, seq.span)
    func = canonicalize_bindings(func)
    func = eliminate_common_subexpr(func)
    func = remove_all_unused(func)
    return func.body


__all__ = ["rewrite_bindings", "rewrite_call"]
