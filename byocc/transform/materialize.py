"""Group materialisation: turn groups of bindings into functions and calls (spec/partitioning.md
sections 5.3 and 5.4, reused by MergeCompositeFunctions in section 6.2).

Public API (the contract MergeCompositeFunctions codes against)::

    materialize_groups(mod, func_names, group_of, group_attrs, *,
                       lift_constants, supply=None, table=None) -> IRModule

* ``mod``: the module; it is not modified, a new one is returned.
* ``func_names``: global names of the Relax functions to rewrite, in this order (TVM visits
  them sorted by name). Only their **dataflow blocks** are rewritten (also dataflow blocks of
  local functions nested in them); everything else is copied, with uses of replaced
  variables redirected.
* ``group_of``: ``{Var: group}`` for the variables of those functions (parameters and bound
  variables; ``Var`` hashes by identity). ``group`` is any hashable key compared by identity
  or equality (an int, a small object): the *root* of the variable's group. A variable
  missing from the map is a singleton group of its own.
* ``group_attrs``: ``{group: attrs}``. A group with an entry is *materialised*: its bindings
  inside one dataflow block become one private function with attributes ``attrs`` plus
  ``Primitive: True`` (FuseOpsByPattern passes ``{"Composite": name, ...attrs_getter}``,
  MergeCompositeFunctions ``{"Codegen": backend}``). Groups without an entry are left alone.
* ``lift_constants``: True: tensor constants used by a group become parameters
  ``param_<k>`` and the caller passes them (FuseOpsByPattern's ``bind_constants=False``;
  always True for MergeCompositeFunctions); False: they stay inline in the function body.
* ``supply``: the :class:`~byocc.ir.NameSupply` for the new call variables (``lv``/``gv``) and
  for the new function names (``add_function``), shared by all functions of ``func_names``.
  Pass your own to continue a supply; default: a fresh one (one per call, as TVM's
  OperatorFusor has one builder per run).
* ``table``: an optional :class:`FunctionTable` over ``mod`` to reuse (de-duplication index).

Behaviour per dataflow block (exactly TVM 0.27's OperatorFusor):
1. Collect each materialised group's bindings (block order) and its *outputs*: bindings whose
   variable is a Var (block output) first, then variables of the group used by a binding of
   another group (scan order: bindings in order, each value's variables in post-order).
2. Record group dependencies while scanning (persisting across blocks and functions of the
   same call, as in TVM). A cyclic dependency (any length) raises :class:`PassError`; callers
   that must avoid it test with :func:`find_group_cycle` first.
3. Emission order: depth-first over the recorded dependencies, groups in first-binding order.
4. A group with no outputs is dead: its bindings are deleted and a warning goes to stderr
   (``There are dead codes in the current IRModule, please run the DeadCodeElimination Pass
   before FuseOps``).
5. The function (section 5.4: name hint ``fused_<op>_<op>...``, parameters in first-occurrence
   order with the caller's actual names, shape/prim literals inline, tuple parameters used
   only through ``t[i]`` split into ``t_<i>``, trailing ``tir_vars`` for free symbolic dims,
   body one dataflow block with outputs named ``gv``, ``gv1``... by the function's own
   supply) is added with :meth:`FunctionTable.add` (structural de-duplication against every
   function of the module, smallest name wins; else ``fresh(hint)`` until unused), then called
   as ``gv = f(...)`` (single Var output) or ``lv = f(...)`` followed by ``old := lv[i]``
   bindings in the original binding order of the outputs.

Also here:

* :class:`FunctionTable`: a module under construction with TVM's ``add_function`` (2.3)
  de-duplication index; ``add(func, hint, supply) -> name``, ``update(name, func)``,
  ``remove(name)``, ``module()``.
* :func:`find_group_cycle`: the first dependency cycle materialisation would meet, or None.
* :func:`fused_name_hint`: the ``fused_...`` hint of a list of bindings.

Cost: linear in the number of bindings of the rewritten functions plus the size of the
created functions; dependency lists are insertion-ordered sets.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from byocc.ir import (
    Binding,
    Call,
    Constant,
    DataflowBlock,
    DataflowVar,
    Expr,
    Function,
    GlobalVar,
    If,
    IRModule,
    MatchCast,
    NameSupply,
    Op,
    PassError,
    PrimValue,
    SeqExpr,
    ShapeExpr,
    ShapeStructInfo,
    Tuple,
    TupleGetItem,
    TupleStructInfo,
    Var,
    VarBinding,
)
from byocc.ir.analysis import analyze_var2value

from .function_table import FunctionTable
from .symbolic import free_symbolic_vars, has_symbolic, renew_symbolic_vars

DEAD_CODE_WARNING = ("There are dead codes in the current IRModule, please run the "
                     "DeadCodeElimination Pass before FuseOps")
_CALL_TIR = frozenset({"relax.call_tir", "relax.call_tir_inplace"})


# ============================================================================ planning
@dataclass(eq=False)
class BlockPlan:
    """What materialisation does with one dataflow block (sections 5.3 steps 1-4)."""

    block: DataflowBlock
    groups: list  # group key of each binding
    members: dict  # materialised group -> binding indices in block order
    outputs: dict  # materialised group -> {Var: None} in output order
    order: list  # emission order (binding indices)


@dataclass(eq=False)
class FunctionPlan:
    """Plans of every dataflow block of a function (keyed by block identity), or the first
    dependency cycle found: ``(binding var, used var)``."""

    blocks: dict = field(default_factory=dict)
    cycle: tuple | None = None
    cycle_groups: tuple = ()

    @property
    def changes(self) -> bool:
        return any(p.members for p in self.blocks.values())


def _var_uses(expr: Expr, out: list) -> None:
    """Variables used by ``expr`` in post-order, left to right (TVM PostOrderVisit)."""
    t = type(expr)
    if t is Var or t is DataflowVar:
        out.append(expr)
    elif t is Call:
        _var_uses(expr.op, out)
        for a in expr.args:
            _var_uses(a, out)
    elif t is Tuple:
        for f in expr.fields:
            _var_uses(f, out)
    elif t is TupleGetItem:
        _var_uses(expr.tuple_value, out)
    elif t is If:
        _var_uses(expr.cond, out)
        _var_uses(expr.true_branch, out)
        _var_uses(expr.false_branch, out)
    elif t is SeqExpr:
        for block in expr.blocks:
            for b in block.bindings:
                _var_uses(b.value, out)
        _var_uses(expr.body, out)
    elif t is Function:
        _var_uses(expr.body, out)


_VAR_TYPES = (Var, DataflowVar)
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
                _var_uses(a, out)
        return out
    out = []
    _var_uses(value, out)
    return out


def _nested_seqs(expr: Expr, out: list) -> None:
    """SeqExprs directly nested in a binding value (If branches, local function bodies)."""
    t = type(expr)
    if t is Function:
        out.append(expr.body)
    elif t is If:
        _nested_seqs(expr.true_branch, out)
        _nested_seqs(expr.false_branch, out)
    elif t is SeqExpr:
        out.append(expr)


def plan_function(func: Function, group_of: Mapping[Var, Hashable],
                  group_attrs: Mapping[Hashable, Any]) -> FunctionPlan:
    """Plan every dataflow block of ``func`` (outer blocks before the blocks nested in their
    bindings). Stops at the first dependency cycle (``plan.cycle``), else every block has its
    emission order. Cost: linear in the bindings of dataflow blocks holding materialised
    groups (other blocks are only scanned when a group spans several blocks)."""
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
                _nested_seqs(b.value, nested_all)
        stack.extend(reversed(nested_all))
    # a group with bindings in several blocks makes dependencies of earlier blocks matter
    seen_in: dict = {}
    multi_block = False
    for block in blocks:
        for b in block.bindings:
            g = group_of.get(b.var, b.var)
            if g in group_attrs:
                prev = seen_in.setdefault(g, block)
                if prev is not block:
                    multi_block = True
    for block in blocks:
        bp = _plan_block(block, group_of, group_attrs, deps, multi_block, plan)
        if plan.cycle is not None:
            return plan
        if bp is not None:
            plan.blocks[id(block)] = bp
    return plan


def _plan_block(block: DataflowBlock, group_of: Mapping, group_attrs: Mapping, deps: dict,
                multi_block: bool, plan: FunctionPlan) -> BlockPlan | None:
    bindings = block.bindings
    groups = [group_of.get(b.var, b.var) for b in bindings]
    members: dict = {}
    outputs: dict = {}
    for i, g in enumerate(groups):
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
    # step 2-3: outputs used by other groups, dependencies
    get_group = group_of.get
    for i, b in enumerate(bindings):
        cur = groups[i]
        uses = _value_uses(b.value)
        if not uses:
            continue
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
    if not members:
        return None
    # step 4: depth-first emission order over recorded dependencies, cycle detection
    per_group: dict = {}
    for i, g in enumerate(groups):
        per_group.setdefault(g, []).append(i)
    order: list[int] = []
    visited: set = set()
    on_stack: set = set()
    for g0 in groups:
        if g0 in visited:
            continue
        visited.add(g0)
        on_stack.add(g0)
        stack = [(g0, iter(deps.get(g0, ())))]
        while stack:
            g, it = stack[-1]
            nxt = None
            for d in it:
                if d in on_stack:
                    plan.cycle = _describe_cycle(g, d, bindings, groups, group_of)
                    plan.cycle_groups = tuple(x for x, _ in stack[[s[0] for s in stack].index(d):])
                    return None
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
                stack.append((nxt, iter(deps.get(nxt, ()))))
    return BlockPlan(block, groups, members, outputs, order)


def _describe_cycle(g: Hashable, d: Hashable, bindings: tuple, groups: list, group_of: Mapping) -> tuple:
    """A (binding var, used var) pair naming the cycle, for the error message."""
    for i, b in enumerate(bindings):
        if groups[i] == g:
            uses: list = []
            _var_uses(b.value, uses)
            for v in uses:
                if group_of.get(v, v) == d:
                    return (b.var, v)
    for i, b in enumerate(bindings):
        if groups[i] == d:
            return (b.var, b.var)
    return (None, None)


# ============================================================================ the composite
def fused_name_hint(bindings: Sequence[Binding]) -> str:
    """``fused`` + ``_<op name>`` / ``_<callee global>`` per call binding (section 5.4)."""
    hint = "fused"
    for b in bindings:
        v = b.value
        if not isinstance(b, VarBinding) or type(v) is not Call:
            continue
        op = v.op
        if isinstance(op, Op):
            if op.name in _CALL_TIR and v.args and isinstance(v.args[0], GlobalVar):
                hint += "_" + v.args[0].name_hint
            else:
                hint += "_" + op.name
        elif isinstance(op, GlobalVar):
            name = op.name_hint
            hint += "_" + (name.removeprefix("fused_"))
    return hint


def _sinfo(e: Expr):
    si = e.struct_info
    if si is None and isinstance(e, Tuple):
        return TupleStructInfo(tuple(_sinfo(f) for f in e.fields))
    return si


def _inlinable(e: Expr) -> bool:
    """Shape/prim literals without symbolic variables, and tuples of them (TVM
    ``IsInlinableConstants``)."""
    if isinstance(e, Tuple):
        return all(_inlinable(f) for f in e.fields)
    if isinstance(e, PrimValue):
        return isinstance(e.value, (int, float, bool))
    if isinstance(e, ShapeExpr):
        return all(isinstance(d, int) for d in e.values)
    return False


class _GroupFunction:
    """Builds the function of one group in one block (TVM FunctionCreator, section 5.4)."""

    def __init__(self, bindings: list, outputs: list, outer: Mapping[Var, Expr], lift: bool):
        self.bindings = bindings
        self.outputs = outputs
        self.outer = outer
        self.lift = lift
        self.defined: set = set()
        self.args: list = []
        self.params: list = []
        self.arg_pos: dict[int, int] = {}
        self.inlined: dict = {}
        self.n_const = 0
        self.partial: dict[int, list] = {}  # id(tuple arg) -> indices accessed through t[i]
        self.tuple_pos: dict[int, int] = {}
        for b in bindings:
            self._append(b)

    def _check_def(self, e: Expr) -> None:
        if id(e) in self.arg_pos:
            return
        is_var = isinstance(e, Var)
        if is_var and e not in self.defined:
            bound: Any = e
            seen: set = set()
            while isinstance(bound, Var) and bound not in seen:
                seen.add(bound)
                nxt = self.outer.get(bound)
                if nxt is None:
                    break
                bound = nxt
            if bound is not e and _inlinable(bound):
                self.inlined[e] = bound
                return
        if (not is_var or e not in self.defined) and (self.lift or not isinstance(e, Constant)):
            if is_var:
                name = e.name_hint
            else:
                name = f"param_{self.n_const}"
                self.n_const += 1
            si = _sinfo(e)
            if not _inlinable(e):
                self.arg_pos[id(e)] = len(self.args)
                self.args.append(e)
                self.params.append(Var(name, si))
            if isinstance(si, TupleStructInfo):
                self.partial[id(e)] = []
                self.tuple_pos[id(e)] = len(self.args) - 1

    def _append(self, b: Binding) -> None:
        if not isinstance(b, VarBinding):
            return
        v = b.value
        if type(v) is Call:
            if isinstance(v.op, Op) and v.op.name in _CALL_TIR and len(v.args) > 1 \
                    and isinstance(v.args[1], Tuple):
                for a in v.args[1].fields:
                    self._check_def(a)
            else:
                for a in v.args:
                    if isinstance(a, Tuple):
                        for f in a.fields:
                            self._check_def(f)
                    else:
                        self._check_def(a)
                    if isinstance(_sinfo(a), TupleStructInfo):
                        self.partial.pop(id(a), None)  # the whole tuple is used
        elif type(v) is TupleGetItem:
            self._check_def(v.tuple_value)
            acc = self.partial.get(id(v.tuple_value))
            if acc is not None:
                acc.append(v.index)
        self.defined.add(b.var)

    def build(self, attrs: Mapping[str, Any]) -> tuple[Function, list, Any]:
        """The function, the caller-side arguments and the caller-side return struct info."""
        args, params = self.args, self.params
        # split tuple parameters used only through t[i] (highest position first, so the
        # recorded positions stay valid)
        split: dict[int, dict[int, Var]] = {}
        for key, idxs in sorted(self.partial.items(), key=lambda kv: -self.tuple_pos[kv[0]]):
            if not idxs:
                continue
            pos = self.tuple_pos[key]
            tup, param = args[pos], params[pos]
            fields = _sinfo(tup).fields
            new_args, new_params, remap = [], [], {}
            for k in idxs:
                p = Var(f"{param.name_hint}_{k}", fields[k])
                new_args.append(TupleGetItem(tup, k, fields[k]))
                new_params.append(p)
                remap[k] = p
            args[pos:pos + 1] = new_args
            params[pos:pos + 1] = new_params
            split[key] = remap
        self.arg_pos = {id(a): i for i, a in enumerate(args)}
        supply = NameSupply()
        out_index = {v: i for i, v in enumerate(self.outputs)}
        results: list = [None] * len(self.outputs)
        self.remap: dict = {}
        new_bindings: list = []
        for b in self.bindings:
            v = b.value
            if type(v) is TupleGetItem and id(v.tuple_value) in split:
                p = split[id(v.tuple_value)][v.index]
                self.remap[b.var] = p
                if b.var in out_index:
                    results[out_index[b.var]] = p
                continue
            value = self._visit(v)
            # the variable's own struct info: it equals the value's (the parser checked it)
            # and stays precise where the value's is unknown (constants without values)
            si = b.var.struct_info or _sinfo(value)
            if b.var in out_index:
                nv = Var(supply.fresh("gv"), si)
                results[out_index[b.var]] = nv
            else:
                nv = type(b.var)(b.var.name_hint, si, b.var.span)
            self.remap[b.var] = nv
            new_bindings.append(VarBinding(nv, value, b.span))
        if len(results) == 1:
            body_expr = results[0]
            ret = _sinfo(body_expr)
        else:
            ret = TupleStructInfo(tuple(_sinfo(r) for r in results))
            body_expr = Tuple(tuple(results), ret)
        blocks = (DataflowBlock(tuple(new_bindings)),) if new_bindings else ()
        fattrs = dict(attrs)
        fattrs["Primitive"] = True
        func = Function(tuple(params), SeqExpr(blocks, body_expr), ret, True, fattrs)
        if not has_symbolic(func):
            return func, args, ret
        free = free_symbolic_vars(func)
        if free:
            params.append(Var("tir_vars", ShapeStructInfo(tuple(free))))
            args.append(ShapeExpr(tuple(free)))
            func = Function(tuple(params), func.body, ret, True, fattrs)
        return renew_symbolic_vars(func, check=False), args, ret

    def _visit(self, e: Expr) -> Expr:
        pos = self.arg_pos.get(id(e))
        if pos is not None and self.args[pos] is e:
            return self.params[pos]
        t = type(e)
        if t is Var or t is DataflowVar:
            hit = self.inlined.get(e)
            if hit is not None:
                return hit
            return self.remap.get(e, e)
        if t is Call:
            new_args = tuple(self._visit(a) for a in e.args)
            new_op = self._visit(e.op) if isinstance(e.op, Var) else e.op
            if new_op is e.op and all(a is b for a, b in zip(new_args, e.args)):
                return e
            return Call(new_op, new_args, e.attrs, e.sinfo_args, e.struct_info, e.span)
        if t is Tuple:
            fields = tuple(self._visit(f) for f in e.fields)
            if all(a is b for a, b in zip(fields, e.fields)):
                return e
            return Tuple(fields, e.struct_info, e.span)
        if t is TupleGetItem:
            tv = self._visit(e.tuple_value)
            return e if tv is e.tuple_value else TupleGetItem(tv, e.index, e.struct_info, e.span)
        return e


# ============================================================================ emission
class Materializer:
    """Rewrites planned functions: creates the group functions in ``table`` and replaces the
    groups' bindings by calls. One instance per TVM OperatorFusor run (one ``supply``)."""

    def __init__(self, table: FunctionTable, group_attrs: Mapping[Hashable, Mapping[str, Any]],
                 *, lift_constants: bool, supply: NameSupply | None = None,
                 warn: Callable[[str], None] | None = None):
        self.table = table
        self.group_attrs = group_attrs
        self.lift = lift_constants
        self.supply = supply if supply is not None else NameSupply()
        self.warn = warn if warn is not None else _warn_stderr
        # group shape -> (function name, return struct info): a group shaped like an earlier
        # one yields a structurally equal function, which add_function would de-duplicate
        self._shapes: dict = {}

    def rewrite(self, func: Function, plan: FunctionPlan,
                var2val: Mapping[Var, Expr] | None = None) -> Function:
        """``func`` with every planned dataflow block materialised (``plan`` from
        :func:`plan_function` on the same ``func``, without a cycle). ``var2val``: every
        ``VarBinding`` of ``func`` (computed when not given)."""
        if plan.cycle is not None:
            raise PassError(_cycle_message(plan.cycle))
        self.plan = plan
        self.outer = var2val if var2val is not None else analyze_var2value(func)
        self.var_remap: dict = {}
        body = self._seq(func.body)
        if body is func.body:
            return func
        return Function(func.params, body, func.ret_struct_info, func.is_pure, dict(func.attrs),
                        func.span)

    # ------------------------------------------------------------------ remapping
    def _remap(self, e: Expr) -> Expr:
        t = type(e)
        if t is Var or t is DataflowVar:
            return self.var_remap.get(e, e)
        if t is Call:
            op = self._remap(e.op) if isinstance(e.op, (Var, Function)) else e.op
            args = tuple(self._remap(a) for a in e.args)
            if op is e.op and all(a is b for a, b in zip(args, e.args)):
                return e
            return Call(op, args, e.attrs, e.sinfo_args, e.struct_info, e.span)
        if t is Tuple:
            fields = tuple(self._remap(f) for f in e.fields)
            if all(a is b for a, b in zip(fields, e.fields)):
                return e
            return Tuple(fields, e.struct_info, e.span)
        if t is TupleGetItem:
            tv = self._remap(e.tuple_value)
            return e if tv is e.tuple_value else TupleGetItem(tv, e.index, e.struct_info, e.span)
        if t is SeqExpr:
            return self._seq(e)
        if t is If:
            c, a, b = self._remap(e.cond), self._remap(e.true_branch), self._remap(e.false_branch)
            if c is e.cond and a is e.true_branch and b is e.false_branch:
                return e
            return If(c, a, b, e.struct_info, e.span)
        if t is Function:
            body = self._seq(e.body)
            if body is e.body:
                return e
            return Function(e.params, body, e.ret_struct_info, e.is_pure, dict(e.attrs), e.span)
        return e

    def _rebind(self, b: Binding) -> Binding:
        value = self._remap(b.value)
        if value is b.value:
            return b
        if isinstance(b, MatchCast):
            return MatchCast(b.var, value, b.struct_info, b.span)
        return VarBinding(b.var, value, b.span)

    def _seq(self, seq: SeqExpr) -> SeqExpr:
        blocks = []
        changed = False
        for block in seq.blocks:
            bp = self.plan.blocks.get(id(block)) if isinstance(block, DataflowBlock) else None
            if bp is not None and bp.block is block:
                new = self._fuse_block(bp)
            else:
                out = [self._rebind(b) for b in block.bindings]
                new = block if all(a is b for a, b in zip(out, block.bindings)) \
                    else type(block)(tuple(out), block.span)
            changed |= new is not block
            if new.bindings:
                blocks.append(new)
            else:
                changed = True
        body = self._remap(seq.body)
        if not changed and body is seq.body:
            return seq
        return SeqExpr(tuple(blocks), body, seq.span)

    # ------------------------------------------------------------------ one block
    def _fuse_block(self, bp: BlockPlan) -> DataflowBlock:
        bindings = bp.block.bindings
        out: list = []
        last = {g: idx[-1] for g, idx in bp.members.items()}
        dead = set()
        for g in bp.members:  # TVM creates every function before emitting (warnings first)
            if not bp.outputs[g]:
                dead.add(g)
                self.warn(DEAD_CODE_WARNING)
        pending: dict = {}
        for i in bp.order:
            g = bp.groups[i]
            b = bindings[i]
            if g not in bp.members:
                out.append(self._rebind(b))
                continue
            if g in dead:
                continue
            outs = bp.outputs[g]
            if len(outs) > 1 and b.var in outs:
                pending.setdefault(g, []).append(b.var)
            if i != last[g]:
                continue
            self._emit_group(g, [bindings[j] for j in bp.members[g]], list(outs),
                             pending.get(g, []), out)
        return DataflowBlock(tuple(out), bp.block.span)

    def _shape_key(self, g: Hashable, members: list, outputs: list) -> tuple | None:
        """``(key, arguments)`` of a *simple* group (operator calls on variables only, no
        parameter that would be inlined), or None. Equal keys give structurally equal
        functions: same operators, attributes, types, wiring, outputs and parameter types."""
        index: dict = {}
        ext: dict = {}
        args: list = []
        parts = []
        outer = self.outer
        for j, b in enumerate(members):
            v = b.value
            if type(v) is not Call or type(v.op) is not Op or v.op.name in _CALL_TIR:
                return None
            refs = []
            for a in v.args:
                t = type(a)
                if t is not Var and t is not DataflowVar:
                    return None
                k = index.get(a)
                if k is None:
                    k = ext.get(a)
                    if k is None:
                        bound = outer.get(a)
                        if bound is not None and type(bound) is not Call:
                            return None  # may be inlined (shape literal) or an alias
                        k = ext[a] = -1 - len(args)
                        args.append(a)
                refs.append(k)
            parts.append((v.op, v.attrs, v.sinfo_args, type(b.var), b.var.struct_info, tuple(refs)))
            index[b.var] = j
        try:
            attrs = tuple(sorted(self.group_attrs[g].items()))
            key = (tuple(parts), tuple(index[o] for o in outputs),
                   tuple(a.struct_info for a in args), attrs)
            hash(key)
        except (TypeError, KeyError):
            return None
        return key, args

    def _emit_group(self, g: Hashable, members: list, outputs: list, pending: list, out: list) -> None:
        shape = self._shape_key(g, members, outputs)
        hit = self._shapes.get(shape[0]) if shape is not None else None
        if hit is not None:
            name, ret = hit
            args = list(shape[1])
        else:
            creator = _GroupFunction(members, outputs, self.outer, self.lift)
            func, args, ret = creator.build(self.group_attrs[g])
            name = self.table.add(func, fused_name_hint(members), self.supply)
            if shape is not None and len(args) == len(shape[1]) and \
                    all(a is b for a, b in zip(args, shape[1])):
                self._shapes[shape[0]] = (name, ret)
        gvar = self.table.global_var(name)
        call_args = []
        for a in args:
            a = self._remap(a)
            if isinstance(a, TupleGetItem):  # normalisation binds non-leaf arguments first
                v = DataflowVar(self.supply.fresh("lv"), a.struct_info)
                out.append(VarBinding(v, a))
                a = v
            call_args.append(a)
        call = Call(gvar, tuple(call_args), None, (), ret)
        if len(outputs) == 1 and not isinstance(outputs[0], DataflowVar):
            new_var: Var = Var(self.supply.fresh("gv"), ret)
        else:
            new_var = DataflowVar(self.supply.fresh("lv"), ret)
        out.append(VarBinding(new_var, call))
        if len(outputs) == 1:
            self.var_remap[outputs[0]] = new_var
            return
        index = {v: k for k, v in enumerate(outputs)}
        done: set = set()
        for v in list(pending) + [o for o in outputs if o not in pending]:
            if v in done:
                continue
            done.add(v)
            k = index[v]
            si = ret.fields[k]
            item = TupleGetItem(new_var, k, si)
            nv = DataflowVar(self.supply.fresh("lv"), si) if isinstance(v, DataflowVar) \
                else Var(self.supply.fresh("gv"), si)
            out.append(VarBinding(nv, item))
            self.var_remap[v] = nv


def _warn_stderr(message: str) -> None:
    sys.stderr.write(f"Warning: {message}\n")


def _cycle_message(cycle: tuple) -> str:
    a, b = cycle
    an = a.name_hint if a is not None else "?"
    bn = b.name_hint if b is not None else "?"
    return (f"cyclic dependency between fused groups: the group of {an!r} uses {bn!r}, whose "
            "group depends on it; the groups cannot be materialised")


# ============================================================================ the API
def find_group_cycle(func: Function, group_of: Mapping[Var, Hashable],
                     group_attrs: Mapping[Hashable, Any]) -> tuple | None:
    """``(binding var, used var)`` of the first group dependency cycle materialising ``func``
    would meet (any length; TVM 0.27 only catches 2-cycles), or None."""
    return plan_function(func, group_of, group_attrs).cycle


def materialize_groups(mod: IRModule, func_names: Sequence[str], group_of: Mapping[Var, Hashable],
                       group_attrs: Mapping[Hashable, Mapping[str, Any]], *, lift_constants: bool,
                       supply: NameSupply | None = None,
                       table: FunctionTable | None = None) -> IRModule:
    """Materialise the groups of ``func_names`` (see the module docstring). Raises
    :class:`PassError` on a cyclic group dependency."""
    table = table if table is not None else FunctionTable(mod)
    mat = Materializer(table, group_attrs, lift_constants=lift_constants, supply=supply)
    for name in func_names:
        func = table.get(name)
        if not isinstance(func, Function):
            continue
        plan = plan_function(func, group_of, group_attrs)
        if plan.cycle is not None:
            raise PassError(_cycle_message(plan.cycle))
        if not plan.changes:
            continue
        new = mat.rewrite(func, plan)
        if new is not func:
            table.update(name, new)
    return table.module()


__all__ = [
    "DEAD_CODE_WARNING", "BlockPlan", "FunctionPlan", "FunctionTable", "Materializer",
    "find_group_cycle", "fused_name_hint", "materialize_groups", "plan_function",
]
