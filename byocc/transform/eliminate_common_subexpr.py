"""EliminateCommonSubexpr (TVM 0.27 ``relax.transform.EliminateCommonSubexpr``), function by function.

Bindings are walked in order. Each value is first rewritten with the replacements found
so far; then, unless it must stay (below), a value bound earlier to a *structurally equal*
value under the same ``match_cast`` type (or both plain bindings) turns the binding into
the trivial ``var = first_var``: the binding stays, later uses of ``var`` become
``first_var``. Variables keep their own type annotation.

A binding is never de-duplicated when ``call_only`` is set and its value is not a call,
when its value contains an impure call (a local function: its body), or when it calls an
allocator (``R.builtin.alloc_tensor``, ``R.memory.alloc_*``, ``R.vm.alloc_*``).

Scoping, as TVM's (including its quirks):

* at the end of a dataflow block the dataflow variables are forgotten (values bound to
  output variables stay known) and the replacements made inside the block are dropped, so
  later uses of a de-duplicated output variable keep it;
* ``if`` branches start from the state before them and leave it unchanged;
* a local function is processed from a clean state -- unless nothing has been remembered
  yet, in which case it shares the enclosing state both ways (what it binds may replace
  later outer bindings, as TVM 0.27 does).

Keys are canonical forms (:mod:`byocc.ir.structural`) in which free variables and free
symbolic dimensions compare by identity, held in a dict: linear in the size of the values.
Undo logs (not copies) restore the state after blocks and branches, so the pass stays
linear in the number of bindings; nothing recurses per binding.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from typing import ClassVar

from byocc.ir import ByoccError
from byocc.ir import Call
from byocc.ir import DataflowBlock
from byocc.ir import DataflowVar
from byocc.ir import Expr
from byocc.ir import Function
from byocc.ir import If
from byocc.ir import IRModule
from byocc.ir import MatchCast
from byocc.ir import Op
from byocc.ir import SeqExpr
from byocc.ir import TirVar
from byocc.ir import Tuple
from byocc.ir import TupleGetItem
from byocc.ir import Var
from byocc.ir import VarBinding
from byocc.ir.analysis import contains_impure_call
from byocc.ir.functor import rebuild_seq
from byocc.ir.struct_info import TupleStructInfo
from byocc.ir.struct_info import erase_to_well_defined
from byocc.ir.struct_info import is_base_of
from byocc.ir.struct_info import struct_info_vars
from byocc.ir.structural import _Canon

from .pass_manager import Pass
from .pass_manager import map_functions

# Operators TVM 0.27 marks ``TAllocator``: their results are fresh buffers, never shared.
ALLOCATOR_OPS = frozenset({
    "relax.builtin.alloc_tensor", "relax.memory.alloc_storage", "relax.memory.alloc_tensor",
    "relax.vm.alloc_storage", "relax.vm.alloc_tensor",
})


# ============================================================================ keys
class _KeyCanon(_Canon):
    """Canonical forms for lookup keys. As TVM's StructuralEqual without ``map_free_vars``:
    a symbolic dimension is matched up to renaming only where a variable is defined inside
    the value (a local function's parameter, a binding in it); elsewhere it is free and
    compares by identity, so ``R.shape([m, n])`` and ``R.shape([p, q])`` differ."""

    __slots__ = ("defining",)

    def __init__(self) -> None:
        super().__init__(False)
        self.defining = 0

    def define(self, var: Var) -> tuple:
        self.defining += 1
        try:
            return super().define(var)
        finally:
            self.defining -= 1

    def seq(self, e: SeqExpr) -> tuple:
        blocks = []
        for block in e.blocks:
            out: list = [type(block) is DataflowBlock]
            for b in block.bindings:
                if type(b) is MatchCast:
                    value = self.expr(b.value)
                    self.defining += 1  # the cast type defines its new symbolic variables
                    si = self.sinfo(b.struct_info)
                    self.defining -= 1
                    out.append(("cast", self.define(b.var), value, si))
                elif isinstance(b.value, Function):  # a local function may call itself
                    var = self.define(b.var)
                    out.append(("bind", var, self.expr(b.value)))
                else:
                    value = self.expr(b.value)
                    out.append(("bind", self.define(b.var), value))
            blocks.append(tuple(out))
        return ("seq", tuple(blocks), self.expr(e.body))

    def dim(self, d: Any) -> Any:
        if isinstance(d, TirVar):
            hit = self.tirvars.get(id(d))
            if hit is not None and hit[0] is d:
                return ("t", d.dtype, hit[1])
            if self.defining:
                self.tirvars[id(d)] = (d, len(self.tirvars))
                return ("t", d.dtype, len(self.tirvars) - 1)
            return ("tfree", id(d))
        return super().dim(d)


def _key(value: Expr, value_ty: Any, cast: Any) -> tuple:
    """Lookup key of a binding: its value with the value's type (TVM compares an
    expression's type too; a variable is compared by identity alone), and the
    ``match_cast`` type (None for a plain binding)."""
    canon = _KeyCanon()
    form = canon.expr(value)  # first: symbolic variables the value defines are then known
    ty = None if isinstance(value, Var) or value_ty is None else canon.sinfo(value_ty)
    return (form, ty, None if cast is None else _KeyCanon().sinfo(cast))


def _is_allocator_call(value: Expr) -> bool:
    return type(value) is Call and type(value.op) is Op and value.op.name in ALLOCATOR_OPS


# ============================================================================ the mutator
class _Eliminator:
    """One CSE scope (TVM CommonSubexprEliminator). State:

    * ``remap``: replaced variable -> the first variable bound to its value;
    * ``memory``: key -> variables bound to that value, first one first;
    * ``remap_log``: variables added to ``remap``, in order (blocks and branches restore
      ``remap`` by truncating it);
    * ``mem_log``: undo records for ``memory`` while inside an ``if`` branch;
    * ``df_keys``: keys that got a dataflow variable in the current dataflow block.
    """

    def __init__(self, call_only: bool):
        self.call_only = call_only
        self.remap: dict[Var, Var] = {}
        self.memory: dict[tuple, list[Var]] = {}
        self.remap_log: list[Var] = []
        self.mem_log: list[tuple] | None = None
        self.df_keys: list[tuple] = []
        self.keep_alive: list[Any] = []  # keys hold ids of free variables: keep them alive

    # ------------------------------------------------------------------ expressions
    def expr(self, e: Any) -> Any:
        if type(e) is Var or type(e) is DataflowVar:
            return self.remap.get(e, e)
        if type(e) is Call:
            op = self.expr(e.op) if isinstance(e.op, (Var, Function)) else e.op
            args = tuple(self.expr(a) for a in e.args)
            if op is e.op and all(a is b for a, b in zip(args, e.args)):
                return e
            call = Call(op, args, e.attrs, e.sinfo_args, None, e.span)
            return Call(op, args, e.attrs, e.sinfo_args, _infer(call, e.struct_info), e.span)
        if type(e) is Tuple:
            fields = tuple(self.expr(f) for f in e.fields)
            if all(a is b for a, b in zip(fields, e.fields)):
                return e
            return Tuple(fields, TupleStructInfo(tuple(f.struct_info for f in fields)), e.span)
        if type(e) is TupleGetItem:
            tv = self.expr(e.tuple_value)
            if tv is e.tuple_value:
                return e
            tsi = tv.struct_info
            si = tsi.fields[e.index] if isinstance(tsi, TupleStructInfo) and \
                0 <= e.index < len(tsi.fields) else e.struct_info
            return TupleGetItem(tv, e.index, si, e.span)
        if type(e) is If:
            return self.if_(e)
        if type(e) is SeqExpr:
            return self.seq(e)
        if type(e) is Function:
            if self.memory or self.remap:
                return _Eliminator(self.call_only).function(e)
            return self.function(e)
        return e

    def if_(self, e: If) -> If:
        cond = self.expr(e.cond)
        then = self.inner_scope(e.true_branch)
        other = self.inner_scope(e.false_branch)
        if cond is e.cond and then is e.true_branch and other is e.false_branch:
            return e
        si = e.struct_info
        if then.struct_info == other.struct_info and then.struct_info is not None:
            si = then.struct_info
        return If(cond, then, other, si, e.span)

    def inner_scope(self, branch: Any) -> Any:
        """Visit an ``if`` branch, then put ``remap`` and ``memory`` back as they were."""
        remap_mark = len(self.remap_log)
        outer_log = self.mem_log
        self.mem_log = []
        try:
            return self.expr(branch)
        finally:
            self._truncate_remap(remap_mark)
            for rec in reversed(self.mem_log):
                if rec[0] == "append":
                    _, key, created = rec
                    if created:
                        del self.memory[key]
                    else:
                        self.memory[key].pop()
                else:  # ("filter", key, previous list)
                    self.memory[rec[1]] = rec[2]
            self.mem_log = outer_log

    def function(self, f: Function) -> Function:
        body = self.expr(f.body)
        if body is f.body:
            return f
        ret = f.ret_struct_info
        body_si = body.struct_info
        if body_si is not None and not is_base_of(body_si, ret):
            # TVM's mutator drops a return type the new body no longer refines; the
            # function then takes the body's type, erased to what the parameters define.
            defined: set = set()
            for p in f.params:
                if p.struct_info is not None:
                    defined.update(struct_info_vars(p.struct_info))
            ret = erase_to_well_defined(body_si, defined)
        return Function(f.params, body, ret, f.is_pure, dict(f.attrs), f.span)

    def seq(self, s: SeqExpr) -> SeqExpr:
        new_blocks = [self.block(block) for block in s.blocks]
        return rebuild_seq(s, s.blocks, new_blocks, self.expr(s.body))

    # ------------------------------------------------------------------ bindings
    def block(self, block: Any) -> Any:
        is_df = isinstance(block, DataflowBlock)
        remap_mark = len(self.remap_log)
        if is_df:
            outer_df_keys, self.df_keys = self.df_keys, []
        out = []
        changed = False
        for b in block.bindings:
            new = self.binding(b)
            changed |= new is not b
            out.append(new)
        if is_df:
            self._forget_dataflow_vars()
            self._truncate_remap(remap_mark)
            self.df_keys = outer_df_keys
        return type(block)(tuple(out), block.span) if changed else block

    def binding(self, b: Any) -> Any:
        value = self.expr(b.value)
        cast = b.struct_info if type(b) is MatchCast else None
        if self._may_share(value):
            # TVM's parser gives a bound call the binding's annotated type, and any other
            # value its own type, which the variable then takes: for an untouched binding
            # the value's type is the variable's. A rewritten value has its inferred type.
            value_ty = b.var.struct_info if value is b.value and cast is None else value.struct_info
            key = _key(value, value_ty, cast)
            known = self.memory.get(key)
            if known:
                first = known[0]
                self._remember(key, b.var, known)
                if b.var not in self.remap:
                    self.remap[b.var] = first
                    self.remap_log.append(b.var)
                return VarBinding(b.var, first, b.span)
            self.keep_alive.append(value)
            self._remember(key, b.var, known)
        if value is b.value:
            return b
        if cast is not None:
            return MatchCast(b.var, value, cast, b.span)
        return VarBinding(b.var, value, b.span)

    def _may_share(self, value: Expr) -> bool:
        if self.call_only and type(value) is not Call:
            return False
        return not (contains_impure_call(value) or _is_allocator_call(value))

    def _remember(self, key: tuple, var: Var, known: list | None) -> None:
        created = known is None
        if known is None:
            known = self.memory[key] = []
        known.append(var)
        if self.mem_log is not None:
            self.mem_log.append(("append", key, created))
        if isinstance(var, DataflowVar):
            self.df_keys.append(key)

    def _forget_dataflow_vars(self) -> None:
        seen: set = set()
        for key in self.df_keys:
            if key in seen:
                continue
            seen.add(key)
            old = self.memory.get(key)
            if old is None:
                continue
            kept = [v for v in old if not isinstance(v, DataflowVar)]
            if len(kept) != len(old):
                if self.mem_log is not None:
                    self.mem_log.append(("filter", key, old))
                self.memory[key] = kept

    def _truncate_remap(self, mark: int) -> None:
        log = self.remap_log
        while len(log) > mark:
            self.remap.pop(log.pop(), None)


def _infer(call: Call, fallback: Any) -> Any:
    """Struct info of a call whose arguments changed (re-normalization), else ``fallback``."""
    from byocc.ops import infer_struct_info

    try:
        return infer_struct_info(call)
    except ByoccError:
        return fallback


# ============================================================================ the pass
def eliminate_common_subexpr(func: Function, call_only: bool = False) -> Function:
    """EliminateCommonSubexpr on one function; ``func`` itself when nothing changes."""
    return _Eliminator(call_only).function(func)


@dataclass(frozen=True)
class EliminateCommonSubexpr(Pass):
    """TVM ``relax.transform.EliminateCommonSubexpr(call_only)``: de-duplicate bindings of
    structurally equal values within each function (only calls when ``call_only``)."""

    call_only: bool = False

    name: ClassVar[str] = "EliminateCommonSubexpr"
    opt_level: ClassVar[int] = 1

    def run(self, mod: IRModule) -> IRModule:
        return map_functions(mod, lambda f: eliminate_common_subexpr(f, self.call_only))


__all__ = ["ALLOCATOR_OPS", "EliminateCommonSubexpr", "eliminate_common_subexpr"]
