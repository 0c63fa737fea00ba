"""Planning the materialisation of groups in dataflow blocks (docs/partitioning.md#materialisation, steps 1-4): each materialised group's bindings and outputs, the recorded group dependencies,
the emission order, and dependency cycles (TVM 0.27 only catches 2-cycles; any length is
found here). Used by :mod:`byocc.transform.materialize`.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Hashable
from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field
from typing import Any

from byocc.dpl import VarUsages
from byocc.ir import Call
from byocc.ir import Constant
from byocc.ir import DataflowBlock
from byocc.ir import DataflowVar
from byocc.ir import Expr
from byocc.ir import Function
from byocc.ir import GlobalVar
from byocc.ir import If
from byocc.ir import Op
from byocc.ir import PrimValue
from byocc.ir import SeqExpr
from byocc.ir import ShapeExpr
from byocc.ir import Tuple
from byocc.ir import TupleGetItem
from byocc.ir import Var


@dataclass(eq=False)
class BlockPlan:
    """What materialisation does with one dataflow block (docs/partitioning.md#materialisation, steps 1-4)."""

    block: DataflowBlock
    groups: list  # group key of each binding
    members: dict  # materialised group -> binding indices in block order
    outputs: dict  # materialised group -> {Var: None} in output order
    order: list  # emission order (binding indices)
    #: the block's use lists when the plan was made from them (:func:`_plan_runs`: every
    #: group a run of consecutive bindings, emitted in block order); else None
    usages: VarUsages | None = None


@dataclass(eq=False)
class FunctionPlan:
    """Plans of every dataflow block of a function (keyed by block identity). ``cycles``: the
    dependency cycles found, each ``((binding var, used var), groups on the cycle)``; a plan
    with cycles cannot be materialised. ``cycle``: the first pair, or None."""

    blocks: dict = field(default_factory=dict)
    cycles: list = field(default_factory=list)

    @property
    def cycle(self) -> tuple | None:
        return self.cycles[0][0] if self.cycles else None

    @property
    def changes(self) -> bool:
        return any(p.members for p in self.blocks.values())


def var_uses(expr: Expr, out: list) -> None:
    """Variables used by ``expr`` in post-order, left to right (TVM PostOrderVisit);
    nested functions are not entered (their uses have no user in TVM's use-def chains)."""
    if type(expr) is Var or type(expr) is DataflowVar:
        out.append(expr)
    elif type(expr) is Call:
        var_uses(expr.op, out)
        for a in expr.args:
            var_uses(a, out)
    elif type(expr) is Tuple:
        for f in expr.fields:
            var_uses(f, out)
    elif type(expr) is TupleGetItem:
        var_uses(expr.tuple_value, out)
    elif type(expr) is If:
        var_uses(expr.cond, out)
        var_uses(expr.true_branch, out)
        var_uses(expr.false_branch, out)
    elif type(expr) is SeqExpr:
        for block in expr.blocks:
            for b in block.bindings:
                var_uses(b.value, out)
        var_uses(expr.body, out)
    elif type(expr) is Function:
        var_uses(expr.body, out)



_LEAF_TYPES = frozenset({Constant, ShapeExpr, PrimValue, GlobalVar, Op})


def _value_uses(value: Expr) -> list:
    """:func:`_var_uses` of a binding value, with a fast path for calls of leaves."""
    if type(value) is Call and type(value.op) is Op:
        out = []
        for a in value.args:
            t = type(a)
            if t is Var or t is DataflowVar:
                out.append(a)
            elif t not in _LEAF_TYPES:
                var_uses(a, out)
        return out
    out = []
    var_uses(value, out)
    return out


def is_flat(value: Expr) -> bool:
    """A call of an operator, a global or a variable, or a tuple, whose operands are all
    leaves (variables, constants, shapes, prim values, globals): nothing nested to rewrite."""
    t = type(value)
    if t is Call:
        ot = type(value.op)  # type: ignore[attr-defined]  # a Call
        if ot is not Op and ot is not GlobalVar and ot is not Var and ot is not DataflowVar:
            return False
        operands = value.args  # type: ignore[attr-defined]
    elif t is Tuple:
        operands = value.fields  # type: ignore[attr-defined]
    else:
        return False
    for a in operands:
        ta = type(a)
        if ta is not Var and ta is not DataflowVar and ta not in _LEAF_TYPES:
            return False
    return True


class UsesMemo:
    """The variables each binding value uses (:func:`var_uses`), remembered by the value's
    identity for one pass run: FuseOpsByPattern plans and indexes the same unchanged
    bindings once per pattern, and materialisation leaves most of them unchanged.
    The lists are shared: callers must not modify them."""

    __slots__ = ("_memo",)

    def __init__(self) -> None:
        self._memo: dict[int, tuple[Expr, list]] = {}

    def of(self, value: Expr) -> list:
        hit = self._memo.get(id(value))
        if hit is not None and hit[0] is value:
            return hit[1]
        uses = _value_uses(value)
        self._memo[id(value)] = (value, uses)  # the value is kept: its id stays its own
        return uses


_NESTING = frozenset({Function, If, SeqExpr})  # the values nested_seqs looks into


def nested_seqs(expr: Expr, out: list) -> None:
    """SeqExprs directly nested in a binding value (If branches, local function bodies)."""
    if type(expr) is Function:
        out.append(expr.body)
    elif type(expr) is If:
        nested_seqs(expr.true_branch, out)
        nested_seqs(expr.false_branch, out)
    elif type(expr) is SeqExpr:
        out.append(expr)


def plan_function(func: Function, group_of: Mapping[Var, Hashable],
                  group_attrs: Mapping[Hashable, Any], uses: UsesMemo | None = None,
                  usages: Callable[[DataflowBlock], VarUsages | None] | None = None) -> FunctionPlan:
    """Plan every dataflow block of ``func`` (outer blocks before the blocks nested in their
    bindings). Dependency cycles are collected in ``plan.cycles`` (the depth-first search
    steps over the edge closing each one and goes on); without any, every block has its
    emission order. Cost: linear in the bindings of dataflow blocks holding materialised
    groups (other blocks are only scanned when a group spans several blocks).

    ``usages`` (optional): the block's use lists (``block_usages``) where every user a
    binding can be is in them (no ``match_cast``, no local function); with them a block
    whose materialised groups are each a run of consecutive bindings is planned from the
    groups' members and their users alone (:func:`_plan_runs`)."""
    plan = FunctionPlan()
    deps: dict = {}  # group -> {producer group: None}; persists across blocks (TVM)
    blocks: list[DataflowBlock] = []
    stack: list[SeqExpr] = [func.body]
    while stack:  # pre-order: a block, then the blocks nested in its bindings
        seq = stack.pop()
        nested_all: list = []
        for block in seq.blocks:
            if isinstance(block, DataflowBlock):
                blocks.append(block)
            for b in block.bindings:
                if type(b.value) in _NESTING:
                    nested_seqs(b.value, nested_all)
        stack.extend(reversed(nested_all))
    # a group with bindings in several blocks makes dependencies of earlier blocks matter
    seen_in: dict = {}
    multi_block = False
    for block in blocks if len(blocks) > 1 else ():
        for b in block.bindings:
            g = group_of.get(b.var, b.var)
            if g in group_attrs:
                prev = seen_in.setdefault(g, block)
                if prev is not block:
                    multi_block = True
    memo = uses if uses is not None else UsesMemo()
    for block in blocks:
        bp: BlockPlan | None | bool = False
        if usages is not None and not multi_block:
            known = usages(block)
            if known is not None:
                bp = _plan_runs(block, group_of, group_attrs, known, memo)
        if bp is False:
            bp = _plan_block(block, group_of, group_attrs, deps, multi_block, plan, memo)
        if bp is not None:
            assert isinstance(bp, BlockPlan)
            plan.blocks[id(block)] = bp
    return plan


def _plan_runs(block: DataflowBlock, group_of: Mapping, group_attrs: Mapping, usages: VarUsages,
               memo: UsesMemo) -> BlockPlan | None | bool:
    """:func:`_plan_block`'s plan when every materialised group of ``block`` is a run of
    consecutive bindings (and the other groups are single bindings); False otherwise.

    Then no group can depend on a later one: the emission order is the block's order and
    there is no cycle. Each group's outputs are, as there, its members bound to a ``Var``
    (block order), then its members used by a binding outside the group, in the order the
    block's scan meets those uses: by the user's position, then by the use's place in the
    user's value. Cost: the groups' members and their users, plus one pass building the
    per-binding group list the plan carries."""
    position = usages.position
    members: dict = {}
    plain: set = set()
    for var, g in group_of.items():
        if g in group_attrs:
            i = position.get(var)
            if i is not None:
                members.setdefault(g, []).append(i)
        elif g in plain:
            return False  # a group of several bindings that is not materialised
        else:
            plain.add(g)
    if not members:
        return None
    runs = True
    for idx in members.values():
        idx.sort()
        if idx[-1] - idx[0] + 1 != len(idx):
            runs = False
    members = dict(sorted(members.items(), key=lambda kv: kv[1][0]))
    bindings = block.bindings
    groups = [group_of.get(b.var, b.var) for b in bindings]
    uses_of = memo.of
    order: list[int] | None = list(range(len(bindings))) if runs else \
        _order_with_hoisting(bindings, groups, members, group_attrs, position, uses_of)
    if order is None:
        return False
    outputs: dict = {}
    for g, idx in members.items():
        out: dict = {}
        for i in idx:
            var = bindings[i].var
            if not isinstance(var, DataflowVar):
                out[var] = None
        used_outside = []
        for i in idx:
            var = bindings[i].var
            for user in usages.get(var, ()):
                j = position[user]
                if groups[j] != g:  # users are in block order: the first one outside
                    used_outside.append((j, uses_of(bindings[j].value).index(var), var))
                    break
        used_outside.sort(key=lambda t: (t[0], t[1]))
        for _, _, var in used_outside:
            if var not in out:
                out[var] = None
        outputs[g] = out
    return BlockPlan(block, groups, members, outputs, order, usages if runs else None)


def _order_with_hoisting(bindings: tuple, groups: list, members: dict, group_attrs: Mapping,
                         position: Mapping, uses_of: Callable) -> list[int] | None:
    """:func:`_plan_block`'s emission order when groups have other bindings between their
    members (no other group's): each group is emitted at its first member, after the
    bindings between its members that it depends on (hoisted, depth-first in the order of
    first use, as the general search visits them); the others follow the group in block
    order. None when a group's span holds another group's member or a hoisted binding
    depends on the group (a cycle: the general plan reports it)."""
    hoisted: set = set()
    order: list[int] = []
    first = {idx[0]: g for g, idx in members.items()}
    for i in range(len(bindings)):
        if i in hoisted:
            continue
        g = groups[i]
        if g not in group_attrs:
            order.append(i)
            continue
        if first.get(i) is not g:
            continue  # emitted with its group
        idx = members[g]
        start, end = idx[0], idx[-1]
        if end - start + 1 != len(idx):
            for p in range(start + 1, end):
                if groups[p] != g and groups[p] in group_attrs:
                    return None  # spans that overlap
            got = _hoist(bindings, groups, g, idx, start, position, uses_of)
            if got is None:
                return None
            order.extend(got)
            hoisted.update(got)
        order.extend(idx)
    return order


def _hoist(bindings: tuple, groups: list, g: Hashable, idx: list[int], start: int,
           position: Mapping, uses_of: Callable) -> list[int] | None:
    """The bindings after ``start`` that group ``g`` depends on, in post-order of a
    depth-first search from the group's dependencies (first-use order); None on a cycle."""

    def producers(uses: list) -> list[int]:
        out: dict = {}
        for v in uses:
            p = position.get(v)
            if p is not None:
                out[p] = None
        return list(out)

    deps: dict = {}
    for i in idx:
        for p in producers(uses_of(bindings[i].value)):
            if groups[p] != g:
                deps[p] = None
    done: set = set()
    out: list[int] = []
    for root in deps:
        if root <= start or root in done:
            continue
        done.add(root)
        stack = [(root, iter(producers(uses_of(bindings[root].value))))]
        while stack:
            p, it = stack[-1]
            nxt = None
            for q in it:
                if groups[q] == g:
                    return None  # it uses the group, which uses it
                if q > start and q not in done:
                    nxt = q
                    break
            if nxt is None:
                stack.pop()
                out.append(p)
            else:
                done.add(nxt)
                stack.append((nxt, iter(producers(uses_of(bindings[nxt].value)))))
    return out


def _plan_block(block: DataflowBlock, group_of: Mapping, group_attrs: Mapping, deps: dict,
                multi_block: bool, plan: FunctionPlan, memo: UsesMemo) -> BlockPlan | None:
    bindings = block.bindings
    groups = [group_of.get(b.var, b.var) for b in bindings]
    members: dict = {}
    outputs: dict = {}
    per_group: dict = {}
    for i, g in enumerate(groups):
        idx = per_group.get(g)
        if idx is None:
            per_group[g] = [i]
        else:
            idx.append(i)
        if g in group_attrs:
            members.setdefault(g, []).append(i)
            out = outputs.setdefault(g, {})
            var = bindings[i].var
            if not isinstance(var, DataflowVar):
                out[var] = None
    if not members and not multi_block:
        return None
    # only variables bound in this block can be outputs of its part of a group
    defined_here = {bindings[i].var for idx in members.values() for i in idx}
    # step 2-3: outputs used by other groups, dependencies. Without groups spanning blocks,
    # the dependencies of a one-binding group that is not materialised are needed only when
    # the depth-first search below reaches it from a group, and are found then.
    get_group = group_of.get
    uses_of = memo.of
    for i, b in enumerate(bindings):
        cur = groups[i]
        uses = uses_of(b.value)
        if not uses:
            continue
        if multi_block or cur in group_attrs or len(per_group[cur]) > 1:
            d = deps.get(cur)
            if d is None:
                d = deps[cur] = {}
            for v in uses:
                prod = get_group(v, v)
                if prod == cur:
                    continue
                d[prod] = None
                out = outputs.get(prod)
                if out is not None and v not in out and v in defined_here:
                    out[v] = None
        else:
            for v in uses:
                out = outputs.get(get_group(v, v))
                if out is not None and v not in out and v in defined_here:
                    out[v] = None
    if not members:
        return None

    def deps_of(g: Hashable) -> Any:
        d = deps.get(g)
        if d is None:
            d = deps[g] = {}
            idx = per_group.get(g)
            if idx is not None and not multi_block:  # a one-binding group (see above)
                for v in uses_of(bindings[idx[0]].value):
                    prod = get_group(v, v)
                    if prod != g:
                        d[prod] = None
        return d

    # step 4: depth-first emission order over recorded dependencies, cycle detection. A
    # one-binding group first met in binding order has every dependency emitted already.
    order: list[int] = []
    visited: set = set()
    on_stack: set = set()
    for g0 in groups:
        if g0 in visited:
            continue
        visited.add(g0)
        if not multi_block and g0 not in group_attrs and len(per_group[g0]) == 1:
            order.extend(per_group[g0])
            continue
        on_stack.add(g0)
        stack = [(g0, iter(deps_of(g0)))]
        while stack:
            g, it = stack[-1]
            nxt = None
            for d in it:
                if d in on_stack:
                    start = next(k for k in range(len(stack) - 1, -1, -1) if stack[k][0] == d)
                    plan.cycles.append((_describe_cycle(g, d, bindings, groups, group_of),
                                        tuple(x for x, _ in stack[start:])))
                    continue
                if d not in visited and (multi_block or d in per_group):
                    nxt = d
                    break
            if nxt is None:
                stack.pop()
                on_stack.discard(g)
                order.extend(per_group.get(g, ()))
            else:
                visited.add(nxt)
                on_stack.add(nxt)
                stack.append((nxt, iter(deps_of(nxt))))
    return BlockPlan(block, groups, members, outputs, order)


def _describe_cycle(g: Hashable, d: Hashable, bindings: tuple, groups: list, group_of: Mapping) -> tuple:
    """A (binding var, used var) pair naming the cycle, for the error message."""
    for i, b in enumerate(bindings):
        if groups[i] == g:
            uses: list = []
            var_uses(b.value, uses)
            for v in uses:
                if group_of.get(v, v) == d:
                    return (b.var, v)
    for i, b in enumerate(bindings):
        if groups[i] == d:
            return (b.var, b.var)
    return (None, None)



__all__ = ["BlockPlan", "FunctionPlan", "UsesMemo", "is_flat", "nested_seqs", "plan_function"]
