"""Group materialisation: turn groups of bindings into functions and calls (docs/partitioning.md#materialisation and #composite-function, reused by MergeCompositeFunctions in docs/partitioning.md#merged-functions-and-names).

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
5. The function (docs/partitioning.md#composite-function: name hint ``fused_<op>_<op>...``, parameters in first-occurrence
   order with the caller's actual names, shape/prim literals inline, tuple parameters used
   only through ``t[i]`` split into ``t_<i>``, trailing ``tir_vars`` for free symbolic dims,
   body one dataflow block with outputs named ``gv``, ``gv1``... by the function's own
   supply) is added with :meth:`FunctionTable.add` (structural de-duplication against every
   function of the module, smallest name wins; else ``fresh(hint)`` until unused), then called
   as ``gv = f(...)`` (single Var output) or ``lv = f(...)`` followed by ``old := lv[i]``
   bindings in the original binding order of the outputs.

Also exported here:

* :class:`FunctionTable` (``function_table.py``): a module under construction with TVM's
  ``add_function`` (docs/partitioning.md#add_function-de-duplication) de-duplication index; ``add(func, hint, supply) -> name``,
  ``update(name, func)``, ``remove(name)``, ``module()``.
* :func:`find_group_cycle`: the first dependency cycle materialisation would meet, or None;
  :func:`plan_function` (``group_plan.py``) the whole plan, which :class:`Materializer`
  consumes (FuseOpsByPattern plans, backs out cyclic matches, then materialises).
* :func:`fused_name_hint` (``group_function.py``): the ``fused_...`` hint of bindings.

Cost: linear in the number of bindings of the rewritten functions plus the size of the
created functions; dependency lists are insertion-ordered sets.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from collections.abc import Hashable
from collections.abc import Mapping
from collections.abc import Sequence
from typing import Any

from byocc.dpl import VarUsages
from byocc.ir import Binding
from byocc.ir import BindingBlock
from byocc.ir import ByoccError
from byocc.ir import Call
from byocc.ir import DataflowBlock
from byocc.ir import DataflowVar
from byocc.ir import Expr
from byocc.ir import ExprMutator
from byocc.ir import Function
from byocc.ir import GlobalVar
from byocc.ir import IRModule
from byocc.ir import NameSupply
from byocc.ir import Op
from byocc.ir import PassError
from byocc.ir import Tuple
from byocc.ir import TupleGetItem
from byocc.ir import TupleStructInfo
from byocc.ir import Var
from byocc.ir import VarBinding
from byocc.ir import sinfo_of
from byocc.ir.analysis import analyze_var2value
from byocc.ir.arith import simplify_struct_info_dims
from byocc.ops.registry import infer_struct_info

from .function_table import FunctionTable
from .group_function import CALL_TIR
from .group_function import GroupFunction
from .group_function import fused_name_hint
from .group_plan import BlockPlan
from .group_plan import FunctionPlan
from .group_plan import UsesMemo
from .group_plan import is_flat
from .group_plan import plan_function

DEAD_CODE_WARNING = ("There are dead codes in the current IRModule, please run the "
                     "DeadCodeElimination Pass before FuseOps")


class Materializer:
    """Rewrites planned functions: creates the group functions in ``table`` and replaces the
    groups' bindings by calls. One instance per TVM OperatorFusor run (one ``supply``)."""

    def __init__(self, table: FunctionTable, group_attrs: Mapping[Hashable, Mapping[str, Any]],
                 *, lift_constants: bool, supply: NameSupply | None = None,
                 warn: Callable[[str], None] | None = None, uses: UsesMemo | None = None):
        self.table = table
        self.uses = uses if uses is not None else UsesMemo()
        self.group_attrs = group_attrs
        self.lift = lift_constants
        self.supply = supply if supply is not None else NameSupply()
        self.warn = warn if warn is not None else _warn_stderr
        # group shape -> (function name, return struct info): a group shaped like an earlier
        # one yields a structurally equal function, which add_function would de-duplicate
        self._shapes: dict = {}
        self._simplified: dict = {}  # id(struct info) -> (it, simplified): kept, so ids stay
        #: id(new block) -> (new block, its use lists), for the blocks whose plan came with
        #: use lists and whose rewrite could carry them over (:func:`_carry_usages`)
        self.carried_usages: dict[int, tuple[DataflowBlock, VarUsages]] = {}
        self._carry = False
        self._emitted: list = []

    def rewrite(self, func: Function, plan: FunctionPlan,
                var2val: Mapping[Var, Expr] | None = None) -> Function:
        """``func`` with every planned dataflow block materialised (``plan`` from
        :func:`plan_function` on the same ``func``, without a cycle). ``var2val``: every
        ``VarBinding`` of ``func`` (computed when not given)."""
        if plan.cycle is not None:
            raise PassError(_cycle_message(plan.cycle))
        self.plan = plan
        self.outer = var2val if var2val is not None else analyze_var2value(func)
        self.remapper = _Remapper(self)
        self.var_remap = self.remapper.var_remap
        body = self.remapper.visit_seq_expr_(func.body)
        if body is func.body:
            return func
        return Function(func.params, body, func.ret_struct_info, func.is_pure, dict(func.attrs),
                        func.span)

    # ------------------------------------------------------------------ remapping
    def _remap(self, e: Expr) -> Expr:
        return self.remapper.visit_expr(e)

    def _rebind(self, b: Binding) -> Binding:
        value = b.value
        if type(b) is VarBinding and is_flat(value):  # the common case, without a rewrite
            remap = self.var_remap
            for v in self.uses.of(value):
                if v in remap:
                    break
            else:
                return b
            if type(value) is Call:
                call = value
                op_type = type(call.op)
                if (op_type is Op or op_type is GlobalVar) and (
                        call.struct_info is b.var.struct_info or call.struct_info == b.var.struct_info):
                    # An operator call whose remapped operands keep their types: inference
                    # would give it its own type again (_rederive keeps it). A call of a
                    # global (a composite) is not inferred again. Either way the variable
                    # keeps its type.
                    same = _same_type_operands(call, remap, op_type is Op)
                    if same is not None:
                        return VarBinding(b.var, Call(call.op, same, call.attrs, call.sinfo_args,
                                                      call.struct_info, call.span), b.span)
        new = self.remapper.visit_binding(b)
        if new[0].var is not b.var:
            self._carry = False  # a retyped variable: the use lists are computed afresh
        return new[0]

    def _block(self, block: BindingBlock) -> BindingBlock:
        """A planned dataflow block fused, any other block with its uses remapped."""
        bp = self.plan.blocks.get(id(block)) if isinstance(block, DataflowBlock) else None
        if bp is not None and bp.block is block:
            return self._fuse_block(bp)
        out = [self._rebind(b) for b in block.bindings]
        return block if all(a is b for a, b in zip(out, block.bindings)) else type(block)(tuple(out), block.span)

    # ------------------------------------------------------------------ one block
    def _fuse_block(self, bp: BlockPlan) -> DataflowBlock:
        bindings = bp.block.bindings
        self._carry = bp.usages is not None
        self._emitted = []
        out: list = []
        last = {g: idx[-1] for g, idx in bp.members.items()}
        dead = set()
        for g in bp.members:  # TVM creates every function before emitting (warnings first)
            if not bp.outputs[g]:
                dead.add(g)
                self.warn(DEAD_CODE_WARNING)
                self._carry = False
        pending: dict = {}
        groups = bp.groups
        members = bp.members
        outputs = bp.outputs
        rebind = self._rebind
        append = out.append
        for i in bp.order:
            g = groups[i]
            b = bindings[i]
            if g not in members:
                append(rebind(b))
                continue
            if g in dead:
                continue
            outs = outputs[g]
            if len(outs) > 1 and b.var in outs:
                pending.setdefault(g, []).append(b.var)
            if i != last[g]:
                continue
            self._emit_group(g, [bindings[j] for j in bp.members[g]], list(outs),
                             pending.get(g, []), out)
        block = DataflowBlock(tuple(out), bp.block.span)
        if self._carry and bp.usages is not None:
            self.carried_usages[id(block)] = (block, _carry_usages(bp.usages, self._emitted, self.var_remap,
                                                                  block.bindings, self.uses))
        return block

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
            if type(v) is not Call:
                return None
            op_type = type(v.op)
            # a global callee (a composite called from a merged group) is inlined from the
            # one function its GlobalVar names, so equal callees give equal functions too
            if op_type is not GlobalVar and (op_type is not Op or v.op.name in CALL_TIR):  # type: ignore[attr-defined]  # an Op
                return None
            refs = []
            for a in v.args:
                if type(a) is not Var and type(a) is not DataflowVar:
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
        if hit is not None and shape is not None:
            name, ret = hit
            args = list(shape[1])
        else:
            creator = GroupFunction(members, outputs, self.outer, self.lift)
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
                self._carry = False
                v = DataflowVar(self.supply.fresh("lv"), a.struct_info)
                out.append(VarBinding(v, a))
                a = v
            call_args.append(a)
        # TVM derives the call's type by substituting the callee's symbolic variables and
        # simplifying every dim that changed (so ``4 * n`` prints ``n * 4`` at the call site)
        simple = self._simplified.get(id(ret))
        if simple is None or simple[0] is not ret:  # groups of one shape share ``ret``
            simple = self._simplified[id(ret)] = (ret, simplify_struct_info_dims(ret))
        ret = simple[1]
        call = Call(gvar, tuple(call_args), None, (), ret)
        if len(outputs) == 1 and not isinstance(outputs[0], DataflowVar):
            new_var: Var = Var(self.supply.fresh("gv"), ret)
        else:
            new_var = DataflowVar(self.supply.fresh("lv"), ret)
        out.append(VarBinding(new_var, call))
        items: list = []
        self._emitted.append((members, new_var, outputs, items))
        if len(outputs) == 1:
            self.var_remap[outputs[0]] = new_var
            return
        index = {v: k for k, v in enumerate(outputs)}
        assert isinstance(ret, TupleStructInfo)  # several outputs: the group returns a tuple
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
            items.append(nv)
            self.var_remap[v] = nv


class _Remapper(ExprMutator):
    """Redirects uses of replaced variables (``var_remap``) everywhere, re-deriving the
    struct info of what changed (:func:`_rederive`); dataflow blocks the plan fuses are
    rewritten by the :class:`Materializer`. No memo: ``var_remap`` grows as groups are
    emitted."""

    def __init__(self, materializer: Materializer):
        super().__init__()
        self.materializer = materializer

    def visit_expr(self, expr: Expr) -> Expr:
        if type(expr) is Var or type(expr) is DataflowVar:
            return self.var_remap.get(expr, expr)
        return self._table[type(expr)](self, expr)

    def visit_call_(self, e: Call) -> Expr:
        new = super().visit_call_(e)
        return e if new is e else _rederive(new)

    def visit_tuple_(self, e: Tuple) -> Expr:
        new = super().visit_tuple_(e)
        return e if new is e else _rederive(new)

    def visit_tuple_getitem_(self, e: TupleGetItem) -> Expr:
        new = super().visit_tuple_getitem_(e)
        return e if new is e else _rederive(new)

    def visit_binding_block(self, block: BindingBlock) -> BindingBlock:
        return self.materializer._block(block)


def _carry_usages(old: VarUsages, emitted: list, remap: Mapping, bindings: tuple,
                  uses: UsesMemo) -> VarUsages:
    """The use lists (``block_usages``) of a block rewritten from one whose ``old`` lists
    are known, when each group was a run of consecutive bindings emitted in place, no
    variable was retyped and no binding was added but the groups' calls and their tuple
    items (``emitted``: per group, its member bindings, call variable, outputs and item
    variables). Only the lists that name a group's member change: a member user becomes
    its group's call (a run, so it replaces the member at the same place in the list),
    members are no longer defined, an output's users pass to its replacement."""
    call_of: dict = {}
    for members, call_var, _, _ in emitted:
        for b in members:
            call_of[b.var] = call_var

    def moved(users: list, own: Any = None) -> list:
        out: list = []
        last = None
        for u in users:
            n = call_of.get(u, u)
            if n is own or n is last:  # a use inside the group; the rest of a run
                continue
            out.append(n)
            last = n
        return out

    new = dict(old)
    uses_of = uses.of
    inputs: dict = {}  # each once: a weight may feed every group
    for members, _, _, _ in emitted:
        for b in members:
            for x in uses_of(b.value):
                if x not in call_of:
                    inputs[x] = None
    for x in inputs:
        new[x] = moved(old[x])
    for members, call_var, outputs, items in emitted:
        for b in members:
            new.pop(b.var, None)
        for o in outputs:
            new[remap[o]] = moved(old[o], call_var)
        if items:
            new[call_var] = list(items)
        elif call_var not in new:
            new[call_var] = []
    return VarUsages(new, {b.var: i for i, b in enumerate(bindings)})


def _same_type_operands(call: Call, remap: Mapping, same_types: bool) -> tuple | None:
    """The operands of ``call`` (variables and leaves only) with ``remap`` applied; None if
    ``same_types`` and a remapped variable's replacement has another struct info."""
    out = []
    for a in call.args:
        t = type(a)
        if t is Var or t is DataflowVar:
            new = remap.get(a)
            if new is not None:
                if same_types and new.struct_info != a.struct_info:
                    return None
                a = new
        out.append(a)
    return tuple(out)


def _rederive(e: Expr) -> Expr:
    """``e``, whose operands were remapped, with its struct info derived again as TVM's
    normaliser does (a fused call site's simplified dims flow into the bindings that use it):
    operator calls re-inferred (kept as they were if inference fails), tuples from their
    fields, tuple items from their tuple."""
    si = e.struct_info
    if isinstance(e, Call):
        if not isinstance(e.op, Op):
            return e
        try:
            si = infer_struct_info(e)
        except ByoccError:
            return e
    elif isinstance(e, Tuple):
        if all(f.struct_info is not None for f in e.fields):
            si = TupleStructInfo(tuple(sinfo_of(f) for f in e.fields))
    elif isinstance(e, TupleGetItem):
        tsi = e.tuple_value.struct_info
        if isinstance(tsi, TupleStructInfo) and 0 <= e.index < len(tsi.fields):
            si = tsi.fields[e.index]
    if si == e.struct_info:
        return e
    if isinstance(e, Call):
        return Call(e.op, e.args, e.attrs, e.sinfo_args, si, e.span)
    if isinstance(e, Tuple):
        return Tuple(e.fields, si, e.span)
    assert isinstance(e, TupleGetItem)  # the remapper rederives calls, tuples and items
    return TupleGetItem(e.tuple_value, e.index, si, e.span)


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
