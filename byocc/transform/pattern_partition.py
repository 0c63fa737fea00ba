"""The partition walk of FuseOpsByPattern: one pattern, one function
(docs/partitioning.md#partition-walk, #q1-overlap-reads-the-original-group).

Steps, per call binding in program order (blocks in order, nested blocks at the position of
the binding holding them): match the pattern at the binding's value, call ``check``, run the
overlap test against earlier groups, then move every fusible matched binding (call and
tuple-get-item pattern entries) into the root binding's group.

Groups are TVM's union-find records: each variable gets its own group when first needed;
``members`` is the list of variables *added directly* to a group (the overlap test reads the
touched variable's original group, not its root: Q1). ``num_nodes`` counts as TVM does.

Cost: a :class:`FunctionIndex` (built once per function object, reused by every pattern)
lists call bindings by operator, so a pattern only visits bindings whose operator can be its
root (``byocc.dpl.pattern_root_ops``); ``var2val``, ``value_to_bound_var`` and block use
lists are dicts keyed by identity, block use lists are computed on first need.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from collections.abc import Mapping
from typing import Any
from typing import cast

from byocc.dpl import AndPattern
from byocc.dpl import AttrPattern
from byocc.dpl import CallPattern
from byocc.dpl import DataTypePattern
from byocc.dpl import ExprPattern
from byocc.dpl import FusionPattern
from byocc.dpl import OrPattern
from byocc.dpl import PatternCheckContext
from byocc.dpl import ShapePattern
from byocc.dpl import StructInfoPattern
from byocc.dpl import TupleGetItemPattern
from byocc.dpl import VarUsages
from byocc.dpl import match_expr
from byocc.dpl import pattern_root_ops
from byocc.dpl import unwrap_bound
from byocc.ir import Call
from byocc.ir import DataflowBlock
from byocc.ir import DataflowVar
from byocc.ir import Function
from byocc.ir import If
from byocc.ir import Op
from byocc.ir import PatternError
from byocc.ir import SeqExpr
from byocc.ir import Var
from byocc.ir import VarBinding
from byocc.transform.group_plan import UsesMemo


class Group:
    """TVM's ``GraphPartitioner::Group``: parent pointer, node count, attributes."""

    __slots__ = ("accepted", "attrs", "members", "num_nodes", "parent", "var")

    def __init__(self, var: Var) -> None:
        self.parent: Group | None = None
        self.num_nodes = 1
        self.attrs: dict = {}
        self.members: list = [var]
        self.var = var
        self.accepted = -1  # order of the match that made this group a root with attributes

    def find_root(self) -> Group:
        root = self
        while root.parent is not None:
            root = root.parent
        node = self
        nxt = node.parent
        while nxt is not None:  # path compression: every node below the root points at it
            node.parent = root
            node = nxt
            nxt = node.parent
        return root


class FunctionIndex:
    """Facts about one function every pattern pass reads (built once per function object).

    ``calls``: ``(binding, block)`` for every call binding in TVM's visiting order, ``block``
    being the dataflow block whose use lists a check sees (None outside dataflow blocks);
    ``by_op``: op name -> positions in ``calls`` (``None`` key: callees that are not operators);
    ``var2val`` and ``value_to_bound_var`` over every ``VarBinding``.
    """

    def __init__(self, func: Function, uses: UsesMemo | None = None) -> None:
        self.func = func
        self.uses = uses if uses is not None else UsesMemo()
        self.calls: list[tuple[VarBinding, DataflowBlock | None]] = []
        self.by_op: dict[str | None, list[int]] = {}
        self.var2val: dict = {}
        self.value_to_bound_var: dict = {}
        self._usages: dict[int, tuple[DataflowBlock, dict]] = {}
        #: ids of the dataflow blocks holding a binding whose uses :func:`block_usages` does
        #: not record (``match_cast``, a local function)
        self.irregular: set[int] = set()
        self._walk(func)
        self._sigs: list = [None] * len(self.calls)

    def _walk(self, func: Function) -> None:
        # TVM's visiting order: bindings in program order, the sequences nested in a binding
        # (local function bodies, if branches) at its position. ``current``: entering a
        # dataflow block sets it, leaving one clears it (also when back in an outer block).
        var2val = self.var2val
        v2b = self.value_to_bound_var
        by_op = self.by_op
        calls = self.calls
        current: DataflowBlock | None = None
        frames: list[list] = [[func.body.blocks, 0, 0]]  # blocks, block index, binding index
        while frames:
            frame = frames[-1]
            blocks, bi, ji = frame
            if bi == len(blocks):
                frames.pop()
                continue
            block = blocks[bi]
            is_df = isinstance(block, DataflowBlock)
            if ji == 0 and is_df:
                current = block
            bindings = block.bindings
            n = len(bindings)
            nested: list = []
            while ji < n:
                b = bindings[ji]
                ji += 1
                if not isinstance(b, VarBinding):
                    if is_df:
                        self.irregular.add(id(block))
                    continue
                v = b.value
                var2val[b.var] = v
                v2b[v] = b.var
                if type(v) is Call:
                    op = v.op
                    key = op.name if isinstance(op, Op) else None
                    lst = by_op.get(key)
                    if lst is None:
                        by_op[key] = [len(calls)]
                    else:
                        lst.append(len(calls))
                    calls.append((b, current))
                    continue
                if is_df and type(v) is Function:
                    self.irregular.add(id(block))
                nested = _nested(v)
                if nested:
                    break
            if nested:
                frame[1], frame[2] = bi, ji
                for s in reversed(nested):
                    frames.append([s.blocks, 0, 0])
                continue
            if is_df:
                current = None
            frame[1], frame[2] = bi + 1, 0

    def signature(self, pos: int) -> tuple:
        """For the call at ``pos``, its *argument signature*: per argument, None unless it is
        bound (following variables through ``var2val``) to a call of an operator, then
        ``(operator, that call's argument signature)``, to :data:`SIGNATURE_DEPTH` levels
        of calls (the last level's signature None)."""
        sigs = self._sigs
        sig = sigs[pos]
        if sig is None:
            call = cast(Call, self.calls[pos][0].value)  # calls holds call bindings
            sig = sigs[pos] = _arg_signature(call, self.var2val, SIGNATURE_DEPTH)
        return sig

    def usages(self, block: DataflowBlock | None) -> dict:
        """TVM ``DataflowBlockUseDef`` of ``block`` ({} outside dataflow blocks)."""
        if block is None:
            return {}
        hit = self._usages.get(id(block))
        if hit is None or hit[0] is not block:
            hit = self._usages[id(block)] = (block, block_usages(block, self.uses))
        return hit[1]

    def seed_usages(self, known: Mapping[int, tuple[DataflowBlock, VarUsages]]) -> None:
        """Take the use lists of blocks already known (by block identity) instead of
        computing them."""
        self._usages.update(known)

    def complete_usages(self, block: DataflowBlock) -> VarUsages | None:
        """:meth:`usages` of ``block`` when they name every user a binding of it can have
        (no ``match_cast``, no local function in the block); else None."""
        if id(block) in self.irregular:
            return None
        return cast(VarUsages, self.usages(block))

    def candidates(self, pattern: Any) -> list[int]:
        """Positions in ``calls`` whose binding may match ``pattern`` at the root, in order."""
        ops = pattern_root_ops(pattern)
        if ops is None:
            return list(range(len(self.calls)))
        lists = [self.by_op.get(op.name if isinstance(op, Op) else op, ()) for op in ops]
        lists = [lst for lst in lists if lst]
        if not lists:
            return []
        if len(lists) == 1:
            return list(lists[0])
        return list(heapq.merge(*lists))


def block_usages(block: DataflowBlock, memo: UsesMemo | None = None) -> dict:
    """TVM ``DataflowBlockUseDef``: every variable used or defined in ``block`` -> the
    block variables whose binding uses it (first-use order, once each); variables used only
    by the block's outputs get ``[]``. ``match_cast`` values and nested functions record no
    user (TVM's use-def chains treat them as outputs). The result is a
    :class:`~byocc.dpl.VarUsages`: it also knows each binding's index in the block."""
    users: dict = {}
    position: dict = {}
    uses_of = (memo if memo is not None else UsesMemo()).of
    for i, b in enumerate(block.bindings):
        var = b.var
        position[var] = i
        if isinstance(b, VarBinding) and type(b.value) is not Function:
            for v in uses_of(b.value):
                u = users.get(v)
                if u is None:
                    users[v] = [var]
                elif not u or u[-1] is not var:  # ``var``'s appends are the latest: once each
                    u.append(var)
        if var not in users:
            users[var] = []
    return VarUsages(users, position)


def _nested(v: Any) -> list:
    if isinstance(v, Function):
        return [v.body]
    if isinstance(v, If):
        out = []
        for br in (v.true_branch, v.false_branch):
            if isinstance(br, SeqExpr):
                out.append(br)
        return out
    return []


class Partition:
    """The groups one pattern formed in one function."""

    def __init__(self) -> None:
        self.group_of_var: dict[Var, Group] = {}
        self.accepted = 0

    def group(self, var: Var) -> Group:
        g = self.group_of_var.get(var)
        if g is None:
            g = self.group_of_var[var] = Group(var)
        return g

    def add_to_group(self, var: Var, to: Group) -> None:
        g = self.group(var)
        if g is not to:
            g.num_nodes -= 1
            g.parent = to
            to.members.append(var)
            to.num_nodes += 1

    def resolve(self) -> tuple[dict, dict]:
        """``group_of`` (var -> root group) and ``group_attrs`` (root -> attrs) for
        materialisation; variables never touched are left out (singletons)."""
        group_of: dict = {}
        attrs: dict = {}
        for var, g in self.group_of_var.items():
            root = g.find_root()
            group_of[var] = root
            if root.attrs:
                attrs[root] = root.attrs
        return group_of, attrs


# ---------------------------------------------------------------------------- pre-filter
_WRAPPERS = (AttrPattern, DataTypePattern, ShapePattern, StructInfoPattern)
_COMMUTATIVE = frozenset({"relax.add", "relax.multiply"})
_REASSOCIATING = frozenset({"relax.multiply", "relax.divide"})


def _call_only(p: Any) -> bool:
    """Whether ``p`` can only match a call (so an argument bound to anything else fails)."""
    while isinstance(p, _WRAPPERS):
        p = p.pattern
    if isinstance(p, CallPattern):
        return True
    if isinstance(p, OrPattern):
        return _call_only(p.left) and _call_only(p.right)
    if isinstance(p, AndPattern):
        return _call_only(p.left) or _call_only(p.right)
    return False


def _unwrap(e: Any, var2val: Mapping) -> Any:
    while isinstance(e, Var):
        v = var2val.get(e)
        if v is None:
            break
        e = v
    return e


#: How many levels of calls an argument signature describes (three: a residual pattern's
#: root, its add, that add's operands).
SIGNATURE_DEPTH = 3


def _arg_signature(call: Call, var2val: Mapping, depth: int) -> tuple:
    out: list[tuple | None] = []
    for a in call.args:
        v = _unwrap(a, var2val)
        if type(v) is Call and type(v.op) is Op:
            out.append((v.op, _arg_signature(v, var2val, depth - 1) if depth > 1 else None))
        else:
            out.append(None)
    return tuple(out)


def prefilter(pattern: Any, depth: int = SIGNATURE_DEPTH) -> Callable[[tuple[Any, ...]], bool] | None:
    """A cheap necessary condition for ``pattern`` to match a call, or None. The condition
    reads the call's *argument signature* (:meth:`FunctionIndex.signature`: the operator of
    each argument's bound value and, down to ``depth`` levels, that value's own argument
    signature).

    For a call pattern with a fixed operator, each argument pattern that only matches calls
    of known operators (``pattern_root_ops``) requires the argument's bound value to be such
    a call, whose own arguments meet the argument pattern's condition, in the given order
    or, for ``relax.add``/``relax.multiply``, reversed (the matcher's commutative retry).
    Multiply/divide patterns are left to the matcher (TVM's re-association rewrites them).
    Never rejects a call the matcher would accept.
    """
    while isinstance(pattern, _WRAPPERS):
        pattern = pattern.pattern
    if isinstance(pattern, OrPattern):
        left, right = prefilter(pattern.left, depth), prefilter(pattern.right, depth)
        if left is None or right is None:
            return None
        return lambda sig: left(sig) or right(sig)
    if isinstance(pattern, AndPattern):
        first, second = prefilter(pattern.left, depth), prefilter(pattern.right, depth)
        if first is None or second is None:
            return first or second
        return lambda sig: first(sig) and second(sig)
    if not isinstance(pattern, CallPattern):
        return None
    op = pattern.op
    if not (isinstance(op, ExprPattern) and isinstance(op.expr, Op)) or op.expr.name in _REASSOCIATING:
        return None
    n_pat = len(pattern.args)
    varg = pattern.varg_default_wildcard
    needs = []
    for i, a in enumerate(pattern.args):
        ops = pattern_root_ops(a) if _call_only(a) else None  # re-associated roots included
        if ops is not None:
            inner = prefilter(a, depth - 1) if depth > 1 else None
            needs.append((i, frozenset(ops), inner))
    needs_t = tuple(needs)
    commutative = op.expr.name in _COMMUTATIVE

    def meets(entry: tuple | None, ops: frozenset, inner: Callable[[tuple], bool] | None) -> bool:
        if entry is None or entry[0] not in ops:
            return False
        return inner is None or entry[1] is None or inner(entry[1])

    def check(sig: tuple) -> bool:
        n = len(sig)
        if (n < n_pat) if varg else (n != n_pat):
            return False
        for i, ops, inner in needs_t:
            if not meets(sig[i], ops, inner):
                break
        else:
            return True
        if commutative:
            last = n - 1
            for i, ops, inner in needs_t:
                if not meets(sig[last - i], ops, inner):
                    return False
            return True
        return False

    return check


def deep_prefilter(pattern: Any) -> _Condition | None:
    """A necessary condition for ``pattern`` to match a call, over the whole pattern tree,
    or None: ``check(call, var2val)``. Where :func:`prefilter` reads only the operators of a
    call's arguments, this one follows the arguments through their bindings as the matcher
    does (``var2val``, empty sequence expressions) and requires, for every call sub-pattern
    with a fixed operator, a call of that operator with an acceptable argument count whose
    arguments satisfy their own conditions, in order or, for ``relax.add``/``relax.multiply``,
    reversed (the matcher's commutative retry); a multiply/divide sub-pattern only when the
    call has its operator (otherwise TVM's re-association may apply). Or-patterns need one
    side, and-patterns both; other kinds of pattern impose nothing. Never rejects a call the matcher would accept; costs a few dictionary
    lookups per pattern node instead of a match attempt."""
    return _condition(pattern)


_BOUND = frozenset({Var, DataflowVar})

#: A necessary condition on a value (read through ``var2val``) for a pattern to match it.
_Condition = Callable[[Any, Mapping[Var, Any]], bool]


def _condition(p: Any) -> _Condition | None:
    while isinstance(p, _WRAPPERS):
        p = p.pattern
    if isinstance(p, OrPattern):
        left, right = _condition(p.left), _condition(p.right)
        if left is None or right is None:
            return None
        return lambda e, var2val: left(e, var2val) or right(e, var2val)
    if isinstance(p, AndPattern):
        first, second = _condition(p.left), _condition(p.right)
        if first is None or second is None:
            return first or second
        return lambda e, var2val: first(e, var2val) and second(e, var2val)
    if not isinstance(p, CallPattern):
        return None
    op = p.op
    if not (isinstance(op, ExprPattern) and isinstance(op.expr, Op)):
        return None
    op_expr = op.expr  # the matcher compares operators by identity (dpl.expr_equal_same_vars)
    n_pat = len(p.args)
    varg = p.varg_default_wildcard
    subs = tuple((i, c) for i, c in ((i, _condition(a)) for i, a in enumerate(p.args)) if c is not None)
    commutative = op_expr.name in _COMMUTATIVE
    # a multiply/divide pattern whose operator differs from the call's may still match
    # through TVM's re-association: then nothing is known
    other_op = op_expr.name in _REASSOCIATING
    unwrap = unwrap_bound

    def check(e: Any, var2val: Mapping) -> bool:
        if not isinstance(e, Call):
            return False
        op = e.op
        if type(op) is not Op:
            op = unwrap(op, var2val)
        if op is not op_expr:
            return other_op
        args = e.args
        n = len(args)
        if (n < n_pat) if varg else (n != n_pat):
            return False
        for i, cond in subs:
            a = args[i]
            if type(a) in _BOUND:  # the common case: a variable bound to a call
                a = var2val.get(a, a)
                if type(a) in _BOUND or type(a) is SeqExpr:
                    a = unwrap(a, var2val)
            else:
                a = unwrap(a, var2val)
            if not cond(a, var2val):
                break
        else:
            return True
        if commutative:
            last = n - 1
            for i, cond in subs:
                if not cond(unwrap(args[last - i], var2val), var2val):
                    return False
            return True
        return False

    return check


def _is_fusible(pat: Any) -> bool:
    return isinstance(pat, (CallPattern, TupleGetItemPattern))


def partition(index: FunctionIndex, entry: FusionPattern, skip: frozenset = frozenset()) -> Partition:
    """Run ``entry`` over the function of ``index`` (docs/partitioning.md#partition-walk). ``skip``: root variables
    whose match is not taken (used to back out matches that would create a cycle)."""
    part = Partition()
    pattern = entry.pattern
    var2val = index.var2val
    v2b = index.value_to_bound_var
    calls = index.calls
    quick = prefilter(pattern)
    deep = deep_prefilter(pattern)
    verdicts: dict = {}  # signature -> prefilter verdict (few distinct signatures)
    sigs = index._sigs
    for pos in index.candidates(pattern):
        binding, block = calls[pos]
        root_var = binding.var
        if skip and root_var in skip:
            continue
        call: Call = binding.value  # type: ignore[assignment]  # calls holds call bindings
        if quick is not None:
            sig = sigs[pos]
            if sig is None:
                sig = index.signature(pos)
            ok = verdicts.get(sig)
            if ok is None:
                ok = verdicts[sig] = quick(sig)
            if not ok:
                continue
        if deep is not None and not deep(call, var2val):
            continue
        memo = match_expr(pattern, call, var2val)
        if memo is None:
            continue
        ctx = _context(index, entry, call, memo, block)
        if entry.check is not None and not _run_check(entry, ctx):
            continue
        bound = [v2b.get(m) for p, m in memo.items()
                 if (isinstance(p, CallPattern) and m is not call) or isinstance(p, TupleGetItemPattern)]
        fusible = [v for v in bound if v is not None]
        matched = set(ctx.matched_bindings)
        if not _subsumes(part, fusible, matched):
            continue
        parent = part.group(root_var).find_root()
        parent.attrs["Composite"] = entry.name
        if entry.attrs_getter is not None:
            parent.attrs.update(_run_attrs_getter(entry, ctx.annotated_expr))
        parent.accepted = part.accepted
        part.accepted += 1
        for v in fusible:
            part.add_to_group(v, parent)
    return part


def _subsumes(part: Partition, fusible: list, matched: set) -> bool:
    """TVM's overlap test (Q1): a touched variable whose root group has several nodes must
    have every variable recorded on its *own original* group matched."""
    for v in fusible:
        g = part.group_of_var.get(v)
        if g is None or g.find_root().num_nodes <= 1:
            continue
        for m in g.members:
            if m not in matched:
                return False
    return True


def _context(index: FunctionIndex, entry: FusionPattern, call: Call, memo: Mapping,
             block: DataflowBlock | None) -> PatternCheckContext:
    annotated = {key: memo[sub] for key, sub in entry.annotation_patterns.items() if sub in memo}
    v2b = index.value_to_bound_var
    bindings: dict = {}
    for p, m in memo.items():
        if _is_fusible(p):
            var = v2b.get(m)
            if var is not None:
                bindings[var] = m
    usages = index.usages(block) if entry.check is not None else {}
    return PatternCheckContext(call, annotated, bindings, usages, v2b)


def _run_check(entry: FusionPattern, ctx: PatternCheckContext) -> bool:
    check = entry.check
    if check is None:
        return True
    try:
        return bool(check(ctx))
    except PatternError:
        raise
    except Exception as err:  # a user's check function failed: report it as a pattern error
        raise PatternError(f"the check function of pattern {entry.name!r} raised "
                           f"{type(err).__name__}: {err}") from err


def _run_attrs_getter(entry: FusionPattern, annotated: Mapping[str, Any]) -> dict[str, Any]:
    getter = entry.attrs_getter
    if getter is None:
        return {}
    try:
        out = getter(dict(annotated))
        return dict(out or {})
    except PatternError:
        raise
    except Exception as err:
        raise PatternError(f"the attrs_getter of pattern {entry.name!r} raised "
                           f"{type(err).__name__}: {err}") from err


__all__ = ["FunctionIndex", "Group", "Partition", "partition"]
