"""MergeCompositeFunctions (docs/partitioning.md#mergecompositefunctions, #q4-merge-analyses-only-main, #q5-merged-names-end-in-1, #q7-dead-code-is-deleted).

Input: FuseOpsByPattern's output (``annotate_codegen=False``). Steps:

1. **Group assignment** (docs/partitioning.md#group-assignment) over the bindings of each analysed function, in program order.
   A call of a ``Composite`` global with backend B joins the first argument group of backend
   B that none of the argument groups depends on (directly or transitively), merging the
   other such groups into it; anything else starts a group (with backend B for a composite
   call, without one otherwise). Tuple-get-items (and tuple literals) used only through
   ``[i]`` join their tuple's backend group. Dependencies are transitive sets kept as Python
   int bitsets over group ids (``deps[root]``); a merged root owns the bits of every group
   merged into it (``members[root]``), so "R is in deps" is ``deps & members[R] != 0`` and a
   merge is two ORs (docs/partitioning.md#cost-model). Cost: O(bindings x groups / 64) word operations.
2. **Materialisation** (docs/partitioning.md#merged-functions-and-names) of every backend group through
   :func:`byocc.transform.materialize.materialize_groups` with attributes ``{Codegen: B}``
   (plus ``Primitive``), constants lifted to parameters, one name supply for the rewritten
   callers and the new function names (hence ``fused_relax_multiply1``).
3. **Annotation and inlining** (docs/partitioning.md#annotation-and-local-functions): each called ``Codegen`` function is renamed
   ``<name>_<backend>`` (public, ``Primitive`` dropped), its body made non-dataflow and every
   composite call replaced by a call of a fresh local copy of the composite, bound to ``gv``,
   ``gv1``... from one pass-wide supply.
4. **DeadCodeElimination** (docs/partitioning.md#clean-up) with entry ``main``.

TVM 0.27 analyses only ``main`` and crashes on a module without ``main`` or with another
non-primitive Relax function holding a dataflow block (Q4: "Variable lv could not be found in
any group"). byocc gives the well-formed generalisation instead: every Relax function that is
not ``Primitive``/``Codegen`` and has a dataflow block is analysed and materialised (in name
order), and the calls are annotated in ``main`` first, then in those functions (name order).
On modules TVM accepts the result is TVM's.
"""

from __future__ import annotations

from collections.abc import Hashable
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from byocc.ir import Binding
from byocc.ir import BindingBlock
from byocc.ir import Call
from byocc.ir import DataflowVar
from byocc.ir import Expr
from byocc.ir import ExprMutator
from byocc.ir import Function
from byocc.ir import GlobalVar
from byocc.ir import IRModule
from byocc.ir import MatchCast
from byocc.ir import NameSupply
from byocc.ir import PassError
from byocc.ir import SeqExpr
from byocc.ir import Span
from byocc.ir import TensorStructInfo
from byocc.ir import Tuple
from byocc.ir import TupleGetItem
from byocc.ir import TupleStructInfo
from byocc.ir import Var
from byocc.ir import VarBinding
from byocc.ir.analysis import collect_var_usage
from byocc.ir.analysis import has_dataflow_block

from .dead_code_elimination import dead_code_elimination
from .function_table import FunctionTable
from .materialize import materialize_groups
from .pass_manager import Pass


def codegen_name(composite: str, span: Span | None = None) -> str:
    """The backend of a pattern name: the text before the first ``.``."""
    if "." not in composite:
        raise PassError(f"The pattern name for a composite function should start with a compiler "
                        f"name followed by period: '{composite}'", span)
    return composite.split(".", 1)[0]


def _is_flat_tensor_tuple(expr: Expr) -> bool:
    si = getattr(expr, "struct_info", None)
    return (isinstance(si, TupleStructInfo) and len(si.fields) > 0
            and all(isinstance(f, TensorStructInfo) for f in si.fields))


class GroupBuilder:
    """Group assignment of one function (step 1 of the module docstring)."""

    def __init__(self, mod: IRModule, func: Function) -> None:
        self.mod = mod
        self.func = func
        self.parent: list[int] = []
        self.backend: list[str | None] = []
        self.deps: dict[int, int] = {}      # root -> bitset of group ids it depends on
        self.members: dict[int, int] = {}   # root -> bitset of group ids merged into it
        self.memo: dict[Expr, int] = {}     # expr (identity) -> group id
        self.usage = collect_var_usage(func)
        self.value_to_vars: dict[Expr, list[Var]] = {}
        for var, value in self.usage.bound_values.items():
            self.value_to_vars.setdefault(value, []).append(var)
        self._tgi_only: dict[Expr, bool] = {}
        self._backend_of_gvar: dict[str, str | None] = {}

    # ------------------------------------------------------------------ groups
    def new_group(self, backend: str | None = None) -> int:
        gid = len(self.parent)
        self.parent.append(gid)
        self.backend.append(backend)
        self.deps[gid] = 0
        self.members[gid] = 1 << gid
        return gid

    def find(self, g: int) -> int:
        parent = self.parent
        root = g
        while parent[root] != root:
            root = parent[root]
        while parent[g] != root:
            parent[g], g = root, parent[g]
        return root

    def merge(self, src: int, dst: int) -> None:
        fr, tr = self.find(src), self.find(dst)
        if fr == tr:
            return
        self.parent[fr] = tr
        self.deps[tr] |= self.deps.pop(fr)
        self.members[tr] |= self.members.pop(fr)

    def _arg_group(self, arg: Expr) -> int:
        g = self.memo.get(arg)
        if g is None:
            g = self.visit(arg)
        return g

    def update_deps(self, group: int, args: Sequence[Expr]) -> None:
        root = self.find(group)
        stack = list(reversed(args))
        while stack:
            a = stack.pop()
            if isinstance(a, GlobalVar):
                continue
            if isinstance(a, Tuple):
                stack.extend(reversed(a.fields))
                continue
            ar = self.find(self._arg_group(a))
            if ar != root:
                self.deps[root] |= (1 << ar) | self.deps[ar]

    # ------------------------------------------------------------------ analysis
    def composite_backend(self, op: Expr) -> str | None:
        if not isinstance(op, GlobalVar):
            return None
        name = op.name_hint
        if name not in self._backend_of_gvar:
            func = self.mod[name] if name in self.mod else None
            backend = None
            if isinstance(func, Function):
                composite = func.attrs.get("Composite")
                if isinstance(composite, str):
                    backend = codegen_name(composite, func.span)
            self._backend_of_gvar[name] = backend
        return self._backend_of_gvar[name]

    def only_tuple_get_item_users(self, tuple_expr: Expr) -> bool:
        """``tuple_expr`` (through aliases either way) is used only by ``[i]`` bindings, at
        least once, and never by the function result."""
        hit = self._tgi_only.get(tuple_expr)
        if hit is None:
            hit = self._tgi_only[tuple_expr] = self._compute_tgi_only(tuple_expr)
        return hit

    def _compute_tgi_only(self, tuple_expr: Expr) -> bool:
        if isinstance(tuple_expr, Var):
            start = tuple_expr
        else:
            bound = self.value_to_vars.get(tuple_expr)
            if not bound or len(bound) != 1:
                return False
            start = bound[0]
        outputs = set(self.usage.outputs)
        bound_values = self.usage.bound_values
        pending = [start]
        seen: set[Var] = set()
        has_tgi = False
        while pending:
            cur = pending.pop()
            if cur in seen:
                continue
            seen.add(cur)
            if cur in outputs:
                return False
            src = bound_values.get(cur)
            if isinstance(src, Var):
                pending.append(src)
            for user in self.usage.downstream_usage.get(cur, ()):
                value = bound_values.get(user)
                if value is None:
                    return False
                if isinstance(value, TupleGetItem):
                    if value.tuple_value is not cur:
                        return False
                    has_tgi = True
                elif isinstance(value, Var):
                    if value is not cur:
                        return False
                    pending.append(user)
                else:
                    return False
        return has_tgi

    # ------------------------------------------------------------------ visiting
    def visit(self, e: Expr) -> int:
        g = self.memo.get(e)
        if g is None:
            g = self._visit(e)
            self.memo[e] = g
        return g

    def _visit(self, e: Expr) -> int:
        if isinstance(e, Call):
            return self._visit_call(e)
        if isinstance(e, Tuple):
            return self._visit_tuple(e)
        if isinstance(e, TupleGetItem):
            return self._visit_tuple_get_item(e)
        # parameters, constants, shape/prim literals and anything TVM has no rule for
        # (undefined variables, local functions, if-expressions) stand alone
        return self.new_group()

    def _groups_to_merge(self, call: Call) -> list[int]:
        backend = self.composite_backend(call.op)
        if backend is None:
            return []
        args = [a for a in call.args if not isinstance(a, GlobalVar)]
        parents_deps = 0
        for a in args:
            parents_deps |= self.deps[self.find(self.memo[a])]
        out: list[int] = []
        for a in args:
            g = self.memo[a]
            root = self.find(g)
            if self.backend[root] == backend and not (parents_deps & self.members[root]):
                out.append(g)
        return out

    def _visit_call(self, call: Call) -> int:
        for a in call.args:
            if not isinstance(a, GlobalVar) and a not in self.memo:
                self.visit(a)
        to_merge = self._groups_to_merge(call)
        if not to_merge:
            group = self.new_group(self.composite_backend(call.op))
        else:
            group = to_merge[0]
            for other in to_merge[1:]:
                self.merge(other, group)
        self.update_deps(group, call.args)
        return group

    def _visit_tuple(self, t: Tuple) -> int:
        if not _is_flat_tensor_tuple(t):
            return self.new_group()
        for f in t.fields:
            if not isinstance(f, GlobalVar) and f not in self.memo:
                self.visit(f)
        if self.only_tuple_get_item_users(t):
            roots = {self.find(self.memo[f]) for f in t.fields if f in self.memo}
            if len(roots) == 1 and all(f in self.memo for f in t.fields):
                root = roots.pop()
                if self.backend[root] is not None:
                    return root
        group = self.new_group()
        self.update_deps(group, t.fields)
        return group

    def _visit_tuple_get_item(self, e: TupleGetItem) -> int:
        tup = e.tuple_value
        if not _is_flat_tensor_tuple(tup):
            return self.new_group()
        if not isinstance(tup, GlobalVar) and tup not in self.memo:
            self.visit(tup)
        if tup in self.memo and self.only_tuple_get_item_users(tup):
            root = self.find(self.memo[tup])
            if self.backend[root] is not None:
                return root
        group = self.new_group()
        self.update_deps(group, (tup,))
        return group

    def run(self) -> dict[Var, int]:
        """``{Var: root group id}`` for the parameters and bound variables of the function."""
        for p in self.func.params:
            self.memo[p] = self.new_group()
        body = self.func.body
        bound: list[Var] = []
        if isinstance(body, SeqExpr):
            for block in body.blocks:
                for b in block.bindings:
                    if isinstance(b, MatchCast):  # TVM has no rule: a group of its own
                        self.visit(b.value)
                        self.memo[b.var] = self.new_group()
                    else:
                        self.memo[b.var] = self.visit(b.value)
                    bound.append(b.var)
        out = {p: self.find(self.memo[p]) for p in self.func.params}
        for v in bound:
            out[v] = self.find(self.memo[v])
        return out


def assign_groups(mod: IRModule, func: Function) -> tuple[dict[Var, int], dict[int, str]]:
    """``({Var: group}, {group: backend})`` of ``func`` (groups with a backend only in the
    second map)."""
    builder = GroupBuilder(mod, func)
    group_of = builder.run()
    backends: dict[int, str] = {}
    for g in set(group_of.values()):
        backend = builder.backend[g]
        if backend is not None:
            backends[g] = backend
    return group_of, backends


# ---------------------------------------------------------------------- step 3
class _VarCopier(ExprMutator):
    """Copy a function with fresh variables (same names, types, spans)."""

    def visit_var_def(self, var: Var) -> Var:
        new = type(var)(var.name_hint, var.struct_info, var.span)
        self.var_remap[var] = new
        return new

    def visit_binding(self, binding: Binding) -> list[Binding]:
        value = self.visit_expr(binding.value)
        var = self.visit_var_def(binding.var)
        if isinstance(binding, MatchCast):
            return [MatchCast(var, value, binding.struct_info, binding.span)]
        return [VarBinding(var, value, binding.span)]


def copy_with_new_vars(func: Function) -> Function:
    """``func`` with every parameter and bound variable replaced by a fresh one of the same
    name (TVM ``CopyWithNewVars``)."""
    return _VarCopier().visit_function_(func)


def _to_non_dataflow(func: Function) -> tuple[list[Binding], dict[Var, Expr]]:
    """Top-level bindings of ``func`` in one plain list, DataflowVars replaced by Vars of the
    same name; returns ``(bindings, remap)``."""
    remap: dict[Var, Expr] = {}
    bindings: list[Binding] = []
    for block in func.body.blocks:
        for b in block.bindings:
            if isinstance(b.var, DataflowVar):
                remap[b.var] = Var(b.var.name_hint, b.var.struct_info, b.var.span)
            bindings.append(b)
    return bindings, remap


class _Remapper(ExprMutator):
    def __init__(self, remap: dict[Var, Expr]) -> None:
        super().__init__()
        self.var_remap = remap


def inline_composites(func: Function, mod: IRModule, supply: NameSupply) -> Function:
    """The body of a merged function made self-contained (docs/partitioning.md#annotation-and-local-functions): plain bindings,
    each composite global replaced by one local copy per function, bound with
    ``supply.fresh("gv")`` just before its first call."""
    bindings, remap = _to_non_dataflow(func)
    mapper = _Remapper(remap)
    local_vars: dict[Function, Var] = {}    # composite Function object -> local Var
    out: list[Binding] = []
    for b in bindings:
        value = mapper.visit_expr(b.value)
        var = remap.get(b.var, b.var)
        assert isinstance(var, Var)  # remap holds variables
        if isinstance(value, Call) and isinstance(value.op, GlobalVar) and value.op.name_hint in mod:
            callee = mod[value.op.name_hint]
            if isinstance(callee, Function) and "Composite" in callee.attrs:
                lv = local_vars.get(callee)
                if lv is None:
                    local = copy_with_new_vars(callee).with_attrs(Primitive=None)
                    lv = Var(supply.fresh("gv"), local.struct_info)
                    local_vars[callee] = lv
                    out.append(VarBinding(lv, local))
                value = Call(lv, value.args, value.attrs, value.sinfo_args, value.struct_info, value.span)
        if isinstance(b, MatchCast):
            out.append(MatchCast(var, value, b.struct_info, b.span))
        else:
            out.append(VarBinding(var, value, b.span))
    body = mapper.visit_expr(func.body.body)
    blocks = (BindingBlock(tuple(out), func.body.blocks[0].span if func.body.blocks else None),) if out else ()
    return Function(func.params, SeqExpr(blocks, body, func.body.span), func.ret_struct_info,
                    func.is_pure, dict(func.attrs), func.span)


class _Annotator(ExprMutator):
    """Redirect calls of ``Codegen`` functions to their renamed, inlined versions."""

    def __init__(self, state: _AnnotateState) -> None:
        super().__init__()
        self.state = state

    def visit_call_(self, e: Call) -> Expr:
        new = super().visit_call_(e)  # e, or e with new arguments
        if isinstance(e.op, GlobalVar) and isinstance(new, Call):
            gv = self.state.redirect(e.op)
            if gv is not None:
                return Call(gv, new.args, new.attrs, new.sinfo_args, new.struct_info, new.span)
        return new


class _AnnotateState:
    def __init__(self, snapshot: IRModule, table: FunctionTable, inline_supply: NameSupply) -> None:
        self.snapshot = snapshot            # the module after materialisation
        self.table = table                  # FunctionTable being built
        self.names = NameSupply()           # pass-wide supply of the renamed functions
        self.inline_supply = inline_supply  # pass-wide supply of local-function variables
        self.done: dict[str, GlobalVar] = {}

    def redirect(self, gv: GlobalVar) -> GlobalVar | None:
        name = gv.name_hint
        if name in self.done:
            return self.done[name]
        func = self.snapshot[name] if name in self.snapshot else None
        if not isinstance(func, Function) or not isinstance(func.attrs.get("Codegen"), str):
            return None
        self.table.remove(name)
        new_name = f"{name}_{func.attrs['Codegen']}"
        new_func = inline_composites(func, self.snapshot, self.inline_supply)
        new_func = new_func.with_attrs(global_symbol=new_name, Primitive=None)
        added = self.table.add(new_func, new_name, self.names)
        new_gv = self.table.global_var(added)
        self.done[name] = new_gv
        return new_gv


def _analysed_functions(mod: IRModule) -> list[str]:
    out: list[str] = []
    for name in sorted(mod.names()):
        func = mod[name]
        if not isinstance(func, Function):
            continue
        if func.attrs.get("Primitive") or "Codegen" in func.attrs:
            continue
        if has_dataflow_block(func):
            out.append(name)
    return out


def merge_composite_functions(mod: IRModule) -> IRModule:
    """Functional form of :class:`MergeCompositeFunctions` (module docstring)."""
    func_names = _analysed_functions(mod)
    group_of: dict[Var, Hashable] = {}
    group_attrs: dict[Hashable, dict[str, Any]] = {}
    for fname in func_names:
        func = mod[fname]
        assert isinstance(func, Function)  # _analysed_functions lists Relax functions only
        groups, backends = assign_groups(mod, func)
        for var, g in groups.items():
            group_of[var] = (fname, g)
        for g, backend in backends.items():
            group_attrs[(fname, g)] = {"Codegen": backend}
    if func_names:
        mod = materialize_groups(mod, func_names, group_of, group_attrs,
                                 lift_constants=True, supply=NameSupply())

    # annotation: main first (TVM's only function), then the other analysed functions
    walk = (["main"] if "main" in mod else []) + [n for n in func_names if n != "main"]
    table = FunctionTable(mod)
    state = _AnnotateState(mod, table, NameSupply())
    for fname in walk:
        member = mod[fname]
        if not isinstance(member, Function):
            continue
        new = _Annotator(state).visit_expr(member)
        if new is not member:
            table.update(fname, new)
    out = table.module()
    entries = ["main"] if "main" in out else [n for n in walk if n in out]
    return dead_code_elimination(out, entries)


@dataclass(frozen=True)
class MergeCompositeFunctions(Pass, name="MergeCompositeFunctions", transform=merge_composite_functions):
    """Merge neighbouring composite calls of one backend into ``Codegen`` functions."""


__all__ = [
    "GroupBuilder", "MergeCompositeFunctions", "assign_groups", "codegen_name",
    "copy_with_new_vars", "inline_composites", "merge_composite_functions",
]
