"""CanonicalizeBindings (spec/partitioning.md section 8), function by function.

Two steps, as TVM 0.27:

1. **Symbolic variables fixed by ``match_cast``** (``R.match_cast(x, R.Tensor((n, 4)))`` with
   ``x: R.Tensor((8, 4))`` fixes ``n = 8``) are substituted in every later struct info and
   shape literal of the function (inside an ``if`` branch only within that branch).
2. **Bindings.** A plan is collected in one walk, then applied:

   * trivial bindings ``a = b`` (var to var, or a ``match_cast`` that does not change the
     type; also ``t[i]`` of a known tuple literal and a tuple literal ``(t[0], ..., t[n-1])``
     rebuilding a known tuple) are removed and uses redirected to the earliest source, except
     when ``a`` is a Var used outside its dataflow block and the source is a DataflowVar:
     then the *source's* binding is renamed to ``a`` (the seed: ``lv = multiply; gv = lv``
     gives ``gv = multiply``);
   * a Var bound in a dataflow block and used only inside it becomes a DataflowVar;
   * uses of a variable bound to a constant become the constant (the binding stays);
   * in each dataflow block, ``gv = lv`` where ``lv`` is used nowhere else is folded into
     ``lv``'s binding.

Other bindings are never deleted (dead ones stay). Cost: linear in the bindings; bindings
are walked in loops, recursion only follows nested functions and ``if`` branches.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from byocc.ir import (
    BindingBlock,
    Call,
    Constant,
    DataflowBlock,
    DataflowVar,
    Expr,
    Function,
    If,
    IRModule,
    MatchCast,
    PassError,
    PrimStructInfo,
    PrimValue,
    SeqExpr,
    ShapeStructInfo,
    TensorStructInfo,
    TirVar,
    Tuple,
    TupleGetItem,
    TupleStructInfo,
    Var,
    VarBinding,
)
from byocc.ir.analysis import free_vars
from byocc.ir.functor import map_operands, rebuild_seq
from byocc.ir.structural import structural_equal

from .pass_manager import Pass, map_functions
from .symbolic import _Renew


# ============================================================================ step 1
def _infer_symbolic(target: Any, value: Any, out: dict) -> None:
    """Symbolic vars of ``target`` (bare dims) -> the matching dims of ``value``."""
    if isinstance(target, TensorStructInfo) and isinstance(value, TensorStructInfo):
        if target.shape is not None and value.shape is not None and len(target.shape) == len(value.shape):
            for t, v in zip(target.shape, value.shape):
                if isinstance(t, TirVar) and v is not t:
                    out.setdefault(t, v)
    elif isinstance(target, ShapeStructInfo) and isinstance(value, ShapeStructInfo):
        if target.values is not None and value.values is not None and len(target.values) == len(value.values):
            for t, v in zip(target.values, value.values):
                if isinstance(t, TirVar) and v is not t:
                    out.setdefault(t, v)
    elif isinstance(target, PrimStructInfo) and isinstance(value, PrimStructInfo):
        if isinstance(target.value, TirVar) and value.value is not None and value.value is not target.value:
            out.setdefault(target.value, value.value)
    elif isinstance(target, TupleStructInfo) and isinstance(value, TupleStructInfo):
        for t, v in zip(target.fields, value.fields):
            _infer_symbolic(t, v, out)


def _prim_value_vars(expr: Any, out: set) -> None:
    """TirVars used by prim values (runtime uses: such a match_cast cannot be folded)."""
    t = type(expr)
    if t is PrimValue and not isinstance(expr.value, (int, float, bool)):
        from byocc.ir import dim_vars

        out.update(dim_vars(expr.value))
    elif t is Call:
        for a in expr.args:
            _prim_value_vars(a, out)
    elif t is Tuple:
        for f in expr.fields:
            _prim_value_vars(f, out)


class _SymbolicCanonicalizer(_Renew):
    """Substitutes symbolic variables fixed by match_cast (a ``_Renew`` whose mapping grows
    while walking; restored around ``if`` branches and nested functions)."""

    def __init__(self, runtime_uses: set):
        super().__init__({})
        self.runtime_uses = runtime_uses

    def var(self, v: Var) -> Var:
        si = self.sinfo(v.struct_info)
        if si == v.struct_info and not self.vars:
            return v
        nv = type(v)(v.name_hint, si, v.span) if si != v.struct_info else v
        if nv is not v:
            self.vars[v] = nv
        return nv

    def seq(self, s: SeqExpr) -> SeqExpr:
        blocks = []
        for block in s.blocks:
            out = []
            for b in block.bindings:
                if isinstance(b, MatchCast):
                    value = self.expr(b.value)
                    found: dict = {}
                    _infer_symbolic(b.struct_info, value.struct_info, found)
                    for tv, dim in found.items():
                        if tv in self.m:
                            known = self.m[tv]
                            if isinstance(known, int) and isinstance(dim, int) and known != dim:
                                raise PassError(
                                    f"MatchCast statements must be consistent: symbolic variable "
                                    f"{tv.name} is {known} earlier but {dim} at {b.var.name_hint}")
                        elif tv not in self.runtime_uses:
                            self.m[tv] = dim
                    var = self.var(b.var)
                    out.append(MatchCast(var, value, self.sinfo(b.struct_info), b.span))
                else:
                    value = self.expr(b.value)
                    out.append(VarBinding(self.var(b.var), value, b.span))
            blocks.append(type(block)(tuple(out), block.span))
        return SeqExpr(tuple(blocks), self.expr(s.body), s.span)

    def expr(self, e: Expr) -> Expr:
        if type(e) is If:
            saved = dict(self.m)
            cond = self.expr(e.cond)
            tb = self.expr(e.true_branch)
            self.m = dict(saved)
            fb = self.expr(e.false_branch)
            self.m = saved
            return If(cond, tb, fb, self.sinfo(e.struct_info), e.span)
        if type(e) is Function:
            saved = dict(self.m)
            out = self.function(e)
            self.m = saved
            return out
        return super().expr(e)

    def function(self, f: Function) -> Function:
        params = tuple(self.var(p) for p in f.params)
        body = self.seq(f.body)
        return Function(params, body, self.sinfo(f.ret_struct_info), f.is_pure, dict(f.attrs), f.span)


def _has_match_cast(func: Function) -> bool:
    stack = [func.body]
    while stack:
        s = stack.pop()
        for block in s.blocks:
            for b in block.bindings:
                if isinstance(b, MatchCast):
                    return True
                if isinstance(b.value, Function):
                    stack.append(b.value.body)
                elif isinstance(b.value, If):
                    stack.extend(x for x in (b.value.true_branch, b.value.false_branch)
                                 if isinstance(x, SeqExpr))
    return False


def canonicalize_symbolic(func: Function) -> Function:
    """Step 1 on one function (unchanged object when it has no ``match_cast``)."""
    if not _has_match_cast(func):
        return func
    runtime: set = set()
    stack = [func.body]
    while stack:
        s = stack.pop()
        for block in s.blocks:
            for b in block.bindings:
                _prim_value_vars(b.value, runtime)
                if isinstance(b.value, Function):
                    stack.append(b.value.body)
    return _SymbolicCanonicalizer(runtime).function(func)


# ============================================================================ step 2: plan
class _Planner:
    """Collects the canonicalisation plan of one function (TVM CanonicalizePlanner)."""

    def __init__(self) -> None:
        self.block: BindingBlock | None = None
        self.def_block: dict = {}
        self.trivial: dict = {}
        self.known: dict = {}
        self.constants: dict = {}
        self.defined_in_dataflow: dict = {}
        self.used_outside: set = set()

    def inside_dataflow(self) -> bool:
        return isinstance(self.block, DataflowBlock)

    # ------------------------------------------------------------------ walking
    def function(self, f: Function) -> None:
        saved = self.block
        self.block = None
        for v in free_vars(f):
            self.used_outside.add(v)
        for p in f.params:
            self.var_def(p)
        self.seq(f.body)
        self.block = saved

    def seq(self, s: SeqExpr) -> None:
        saved = self.block
        self.block = None
        for block in s.blocks:
            self.block = block
            for b in block.bindings:
                self.binding(b)
            self.block = None
        self.use(s.body)
        self.block = saved

    def var_def(self, v: Var) -> None:
        if self.inside_dataflow():
            self.defined_in_dataflow[v] = None

    def binding(self, b: Any) -> None:
        same_ty = True
        if isinstance(b, MatchCast):
            same_ty = structural_equal(b.var.struct_info, b.value.struct_info)
        value = b.value
        unwrapped = self.unwrap_known(value)
        if unwrapped is not None:
            value = unwrapped
        if isinstance(value, Var) and same_ty:
            self.trivial[b.var] = value
        if isinstance(value, Constant):
            self.constants[b.var] = value
        self.known[b.var] = value
        self.def_block[b.var] = self.block
        self.use(b.value)
        self.var_def(b.var)

    def use(self, e: Any) -> None:
        t = type(e)
        if t is Var or t is DataflowVar:
            home = self.def_block.get(e)
            if not self.inside_dataflow() or (home is not None and self.block is not home):
                self.used_outside.add(e)
        elif t is Call:
            self.use(e.op)
            for a in e.args:
                self.use(a)
        elif t is Tuple:
            for f in e.fields:
                self.use(f)
        elif t is TupleGetItem:
            self.use(e.tuple_value)
        elif t is If:
            self.use(e.cond)
            self.use(e.true_branch)
            self.use(e.false_branch)
        elif t is SeqExpr:
            self.seq(e)
        elif t is Function:
            self.function(e)

    # ------------------------------------------------------------------ known values
    def _unwrap_var(self, e: Any) -> Any:
        seen = 0
        while isinstance(e, Var):
            nxt = self.known.get(e)
            if nxt is None or nxt is e or seen > len(self.known):
                break
            e = nxt
            seen += 1
        return e

    def unwrap_known(self, e: Any) -> Any:
        if type(e) is TupleGetItem:
            tup = self._unwrap_var(e.tuple_value)
            if type(tup) is Tuple and 0 <= e.index < len(tup.fields):
                return tup.fields[e.index]
        if type(e) is Tuple and e.fields:
            first = self._unwrap_var(e.fields[0])
            if type(first) is not TupleGetItem:
                return None
            tsi = first.tuple_value.struct_info
            if not isinstance(tsi, TupleStructInfo) or len(tsi.fields) != len(e.fields):
                return None
            source = self._unwrap_var(first.tuple_value)
            for i, f in enumerate(e.fields):
                item = self._unwrap_var(f)
                if type(item) is not TupleGetItem or item.index != i:
                    return None
                if self._unwrap_var(item.tuple_value) is not source:
                    return None
            return source
        return None

    # ------------------------------------------------------------------ the plan
    def plan(self) -> tuple[dict, dict, set, dict]:
        replace_usage: dict = {}
        replace_binding: dict = {}
        remove: set = set()
        for var in self.defined_in_dataflow:
            if not isinstance(var, DataflowVar) and var not in self.used_outside:
                new = DataflowVar(var.name_hint, var.struct_info, var.span)
                replace_binding[var] = new
                replace_usage[var] = new
        for bound_var, bound_to in self.trivial.items():
            guard = 0
            while bound_to in self.trivial and guard <= len(self.trivial):
                bound_to = self.trivial[bound_to]
                guard += 1
            while bound_to in replace_binding:
                bound_to = replace_binding[bound_to]
            if isinstance(bound_var, DataflowVar) or not isinstance(bound_to, DataflowVar) \
                    or bound_var not in self.used_outside:
                replace_usage[bound_var] = bound_to
            else:
                replace_binding[bound_to] = bound_var
                replace_usage[bound_to] = bound_var
            remove.add(bound_var)
        return replace_usage, replace_binding, remove, dict(self.constants)


# ============================================================================ step 2: apply
class _Apply:
    """Applies a plan (TVM BindingCanonicalizer)."""

    def __init__(self, plan: tuple[dict, dict, set, dict]):
        self.replace_usage, self.replace_binding, self.remove, self.constants = plan
        self.var_remap: dict = {}

    def var_def(self, v: Var) -> Var:
        seen = 0
        while v in self.replace_binding and seen <= len(self.replace_binding):
            v = self.replace_binding[v]
            seen += 1
        return v

    def use_var(self, v: Var) -> Expr:
        seen = 0
        while v in self.replace_usage and seen <= len(self.replace_usage):
            v = self.replace_usage[v]
            seen += 1
        c = self.constants.get(v)
        if c is not None:
            return c
        return self.var_remap.get(v, v)

    def expr(self, e: Any) -> Any:
        t = type(e)
        if t is Var or t is DataflowVar:
            return self.use_var(e)
        if t is Call or t is Tuple or t is TupleGetItem:
            return map_operands(e, self.expr, (Var, Function))
        if t is If:
            c, a, b = self.expr(e.cond), self.expr(e.true_branch), self.expr(e.false_branch)
            if c is e.cond and a is e.true_branch and b is e.false_branch:
                return e
            return If(c, a, b, e.struct_info, e.span)
        if t is SeqExpr:
            return self.seq(e)
        if t is Function:
            return self.function(e)
        return e

    def function(self, f: Function) -> Function:
        params = tuple(self.var_def(p) for p in f.params)
        body = self.seq(f.body)
        if body is f.body and all(a is b for a, b in zip(params, f.params)):
            return f
        return Function(params, body, f.ret_struct_info, f.is_pure, dict(f.attrs), f.span)

    def seq(self, s: SeqExpr) -> SeqExpr:
        new_blocks = []
        for block in s.blocks:
            out = []
            for b in block.bindings:
                if b.var in self.remove:
                    continue
                value = self.expr(b.value)
                var = self.var_def(b.var)
                if isinstance(b, MatchCast):
                    out.append(b if value is b.value and var is b.var
                               else MatchCast(var, value, b.struct_info, b.span))
                else:
                    out.append(b if value is b.value and var is b.var else VarBinding(var, value, b.span))
            if isinstance(block, DataflowBlock):
                out = _fold_output_aliases(out)
            new_blocks.append(block if len(out) == len(block.bindings) and all(
                a is b for a, b in zip(out, block.bindings)) else type(block)(tuple(out), block.span))
        return rebuild_seq(s, s.blocks, new_blocks, self.expr(s.body))


def _df_vars(value: Any, whole_function: bool) -> list:
    from byocc.ir.analysis import all_vars

    vs = all_vars(value) if whole_function else free_vars(value)
    return [v for v in vs if isinstance(v, DataflowVar)]


def _fold_output_aliases(bindings: list) -> list:
    """``lv = value; ...; gv = lv`` with ``lv`` used nowhere else -> ``gv = value``."""
    if not any(not isinstance(b.var, DataflowVar) and isinstance(b.value, DataflowVar)
               for b in bindings):
        return bindings
    disqualified: set = set()
    outputs: set = set()
    candidates: dict = {}
    for b in reversed(bindings):
        value = b.value
        if isinstance(b.var, DataflowVar):
            for v in _df_vars(value, isinstance(value, Function)):
                disqualified.add(v)
            if b.var not in disqualified and b.var in outputs:
                candidates[b.var] = value
        elif isinstance(value, DataflowVar):
            if value in outputs:
                disqualified.add(value)
            outputs.add(value)
        else:
            for v in _df_vars(value, not isinstance(value, Function)):
                disqualified.add(v)
    if not candidates:
        return bindings
    out = []
    for b in bindings:
        if isinstance(b.var, DataflowVar) and b.var in candidates:
            continue
        if not isinstance(b.var, DataflowVar) and isinstance(b.value, DataflowVar) \
                and b.value in candidates:
            value = candidates[b.value]
            if isinstance(b, MatchCast):
                out.append(MatchCast(b.var, value, b.struct_info, b.span))
            else:
                out.append(VarBinding(b.var, value, b.span))
            continue
        out.append(b)
    return out


# ============================================================================ the pass
def canonicalize_bindings(func: Function) -> Function:
    """CanonicalizeBindings on one function."""
    func = canonicalize_symbolic(func)
    planner = _Planner()
    planner.function(func)
    return _Apply(planner.plan()).function(func)


@dataclass(frozen=True)
class CanonicalizeBindings(Pass):
    """TVM ``relax.transform.CanonicalizeBindings`` (spec/partitioning.md section 8)."""

    name: ClassVar[str] = "CanonicalizeBindings"
    opt_level: ClassVar[int] = 1

    def run(self, mod: IRModule) -> IRModule:
        return map_functions(mod, canonicalize_bindings)


__all__ = ["CanonicalizeBindings", "canonicalize_bindings", "canonicalize_symbolic"]
