"""CanonicalizeBindings (docs/partitioning.md#canonicalizebindings), function by function.

Two steps, as TVM 0.27:

1. **Symbolic variables fixed by ``match_cast``** (``R.match_cast(x, R.Tensor((n, 4)))`` with
   ``x: R.Tensor((8, 4))`` fixes ``n = 8``) are substituted in every later struct info and
   shape literal of the function (inside an ``if`` branch only within that branch; a branch
   made more precise ends in a match_cast back to the ``if``'s type). Prim values keep the
   variable (they are run-time arguments), and so does a match_cast defining a variable a
   prim value uses. Two match_casts fixing one variable to provably different values are a
   :class:`~byocc.ir.PassError` (a ``ValueError``, as in TVM).
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

In both steps a rewritten call, tuple or tuple item has its type derived again and its
variable takes that type (TVM's normaliser and ReEmitBinding: ``C: R.Tensor(ndim=2) =
R.add(B, B)`` with ``B = A``, ``A: (n, 16)`` becomes ``C: (n, 16) = R.add(A, A)``), and a
function's return type is refined by its body's. Other bindings are never deleted (dead
ones stay). Cost: linear in the bindings; the walks
are :mod:`byocc.ir.functor` visitors and mutators (bindings in loops, recursion only as deep
as expressions, functions and ``if`` branches nest).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from typing import cast

from byocc.ir import Binding
from byocc.ir import BindingBlock
from byocc.ir import ByoccError
from byocc.ir import Call
from byocc.ir import Constant
from byocc.ir import DataflowBlock
from byocc.ir import DataflowVar
from byocc.ir import Expr
from byocc.ir import ExprMutator
from byocc.ir import ExprVisitor
from byocc.ir import FuncStructInfo
from byocc.ir import Function
from byocc.ir import If
from byocc.ir import IRModule
from byocc.ir import MatchCast
from byocc.ir import PassError
from byocc.ir import PrimStructInfo
from byocc.ir import PrimValue
from byocc.ir import SeqExpr
from byocc.ir import ShapeExpr
from byocc.ir import ShapeStructInfo
from byocc.ir import TensorStructInfo
from byocc.ir import TirVar
from byocc.ir import Tuple
from byocc.ir import TupleGetItem
from byocc.ir import TupleStructInfo
from byocc.ir import Var
from byocc.ir import dim_vars
from byocc.ir import sinfo_of
from byocc.ir import substitute_dim
from byocc.ir.analysis import free_vars
from byocc.ir.arith import provably_different
from byocc.ir.functor import rebound
from byocc.ir.functor import with_value
from byocc.ir.prim import dim_text
from byocc.ir.structural import structural_equal
from byocc.ops import infer_struct_info

from .pass_manager import Pass
from .pass_manager import map_functions


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
        for tf, vf in zip(target.fields, value.fields):
            _infer_symbolic(tf, vf, out)


class _SymbolicScan(ExprVisitor):
    """One walk of a function: whether it has a ``match_cast``, and the TirVars prim values
    use (runtime uses: a match_cast fixing one of them is not substituted)."""

    def __init__(self) -> None:
        self.has_match_cast = False
        self.runtime_uses: set = set()

    def visit_match_cast_(self, binding: MatchCast) -> None:
        self.has_match_cast = True
        super().visit_match_cast_(binding)

    def visit_prim_value_(self, e: PrimValue) -> None:
        if not isinstance(e.value, (int, float, bool)):
            self.runtime_uses.update(dim_vars(e.value))


class _SymbolicCanonicalizer(ExprMutator):
    """Substitutes symbolic variables fixed by match_cast (TVM SymbolicVarCanonicalizer).

    As TVM: every variable a match_cast fixes is known from there on (a later match_cast
    that provably disagrees is an error), and struct info and shape literals downstream use
    the known value; prim values (runtime arguments) keep the variable, and so does the
    whole match_cast that defines a variable some prim value uses (it must stay, to define
    it). Nodes are rebuilt only when something in them changed; a rebuilt call, tuple or
    tuple item has its type derived again and a rebound variable takes its new value's
    type (TVM's normaliser and ReEmitBinding). The mapping grows while walking and is
    restored around ``if`` branches and nested functions, so there is no memo."""

    def __init__(self, runtime_uses: set):
        super().__init__()
        self.m: dict = {}
        self.runtime_uses = runtime_uses
        self.source: dict = {}  # TirVar -> name of the variable whose match_cast fixed it
        self.frozen = False  # inside a match_cast kept for a runtime use: substitute nothing

    def visit_expr(self, expr: Expr) -> Expr:
        return self._table[type(expr)](self, expr)

    # ------------------------------------------------------------------ substitution
    def dim(self, d: Any) -> Any:
        return d if self.frozen or isinstance(d, int) else substitute_dim(d, self.m)

    def dims(self, values: tuple) -> tuple:
        out = tuple(self.dim(d) for d in values)
        return values if all(a is b for a, b in zip(out, values)) else out

    def sinfo(self, si: Any) -> Any:
        if not self.m or self.frozen or si is None:
            return si
        if isinstance(si, TensorStructInfo):
            if si.shape is None:
                return si
            shape = self.dims(si.shape)
            return si if shape is si.shape else TensorStructInfo(shape, si.dtype, si.ndim, si.shape_var)
        if isinstance(si, ShapeStructInfo):
            if si.values is None:
                return si
            values = self.dims(si.values)
            return si if values is si.values else ShapeStructInfo(values, si.ndim)
        if isinstance(si, PrimStructInfo):
            if si.value is None or isinstance(si.value, (int, float)):
                return si
            value = self.dim(si.value)
            return si if value is si.value else PrimStructInfo(si.dtype, value)
        if isinstance(si, TupleStructInfo):
            fields = tuple(self.sinfo(f) for f in si.fields)
            return si if all(a is b for a, b in zip(fields, si.fields)) else TupleStructInfo(fields)
        if isinstance(si, FuncStructInfo):
            params = None if si.params is None else tuple(self.sinfo(p) for p in si.params)
            ret = self.sinfo(si.ret)
            if ret is si.ret and (params is None or all(a is b for a, b in zip(params, si.params or ()))):
                return si
            return FuncStructInfo(params, ret, si.purity)
        return si

    # ------------------------------------------------------------------ nodes
    def visit_var_def(self, var: Var) -> Var:
        si = self.sinfo(var.struct_info)
        if si is var.struct_info:
            return var
        nv = type(var)(var.name_hint, si, var.span)
        self.var_remap[var] = nv
        return nv

    def visit_shape_expr_(self, e: ShapeExpr) -> Expr:
        values = self.dims(e.values)
        return e if values is e.values else ShapeExpr(values, e.span)

    def visit_prim_value_(self, e: PrimValue) -> Expr:
        return e

    def _retyped(self, new: Expr, old: Expr) -> Expr:
        """``new`` (``old`` rebuilt, or ``old`` itself) with its type derived again if it
        was rebuilt, then substituted."""
        if new is not old:
            new = rederive(new)
        si = self.sinfo(new.struct_info)
        if si is new.struct_info:
            return new
        if isinstance(new, Call):
            return Call(new.op, new.args, new.attrs, new.sinfo_args, si, new.span)
        if isinstance(new, Tuple):
            return Tuple(new.fields, si, new.span)
        if isinstance(new, TupleGetItem):
            return TupleGetItem(new.tuple_value, new.index, si, new.span)
        return new

    def visit_call_(self, e: Call) -> Expr:
        new = super().visit_call_(e)
        sinfo_args = tuple(self.sinfo(s) for s in e.sinfo_args)
        if any(a is not b for a, b in zip(sinfo_args, e.sinfo_args)):
            assert isinstance(new, Call)
            new = Call(new.op, new.args, new.attrs, sinfo_args, new.struct_info, new.span)
        return self._retyped(new, e)

    def visit_tuple_(self, e: Tuple) -> Expr:
        return self._retyped(super().visit_tuple_(e), e)

    def visit_tuple_getitem_(self, e: TupleGetItem) -> Expr:
        return self._retyped(super().visit_tuple_getitem_(e), e)

    def visit_function_(self, e: Function) -> Function:
        saved = dict(self.m)
        params = tuple(self.visit_var_def(p) for p in e.params)
        body = self.visit_expr(e.body)
        ret = self.sinfo(e.ret_struct_info)
        self.m = saved
        if body is e.body and ret is e.ret_struct_info and all(a is b for a, b in zip(params, e.params)):
            return e
        return Function(params, cast(SeqExpr, body), ret, e.is_pure, dict(e.attrs), e.span)

    def visit_binding(self, binding: Binding) -> list[Binding]:
        if not isinstance(binding, MatchCast):
            return super().visit_binding(binding)
        value = self.visit_expr(binding.value)
        found: dict = {}
        _infer_symbolic(binding.struct_info, value.struct_info, found)
        for tv, dim in found.items():
            known = self.m.get(tv)
            if known is None:
                self.m[tv] = dim
                self.source[tv] = binding.var.name_hint
            elif provably_different(known, dim):
                raise PassError(
                    f"MatchCast statements must be consistent: the match_cast of "
                    f"'{self.source.get(tv, '?')}' implies that {tv.name} is {dim_text(known)}, while "
                    f"the later one of '{binding.var.name_hint}' implies that it is {dim_text(dim)}",
                    binding.span)
        if any(tv in self.runtime_uses for tv in found):
            self.frozen = True
            try:
                var = self.visit_var_def(binding.var)
            finally:
                self.frozen = False
            return [rebound(binding, var, value)]
        var = self.visit_var_def(binding.var)
        si = self.sinfo(binding.struct_info)
        if var is binding.var and value is binding.value and si is binding.struct_info:
            return [binding]
        return [MatchCast(var, value, si, binding.span)]

    def visit_if_(self, e: If) -> Expr:
        saved = dict(self.m)
        cond = self.visit_expr(e.cond)
        tb = self.visit_expr(e.true_branch)
        self.m = dict(saved)
        fb = self.visit_expr(e.false_branch)
        self.m = saved
        if cond is e.cond and tb is e.true_branch and fb is e.false_branch:
            return e
        si = self.sinfo(e.struct_info)
        return If(cond, _cast_branch(tb, si, "then"), _cast_branch(fb, si, "else"), si, e.span)



def _cast_branch(branch: Expr, si: Any, which: str) -> Expr:
    """A branch whose type became more precise than the ``if``'s (a variable fixed inside
    it) ends in a match_cast back to the ``if``'s type, as TVM restores the symbolic form."""
    if si is None or branch.struct_info is None or structural_equal(branch.struct_info, si):
        return branch
    var = Var(f"{which}_branch_with_dyn", si)
    restore = MatchCast(var, branch.body if isinstance(branch, SeqExpr) else branch, si)
    if not isinstance(branch, SeqExpr):
        return SeqExpr((BindingBlock((restore,)),), var)
    blocks = list(branch.blocks)
    if blocks and type(blocks[-1]) is BindingBlock:
        blocks[-1] = BindingBlock(blocks[-1].bindings + (restore,), blocks[-1].span)
    else:
        blocks.append(BindingBlock((restore,)))
    return SeqExpr(tuple(blocks), var, branch.span)


def canonicalize_symbolic(func: Function) -> Function:
    """Step 1 on one function (unchanged object when it has no ``match_cast``)."""
    scan = _SymbolicScan()
    scan.visit_expr(func)
    if not scan.has_match_cast:
        return func
    out = _SymbolicCanonicalizer(scan.runtime_uses).visit_expr(func)
    assert isinstance(out, Function)
    return out


# ============================================================================ step 2: plan
class _Planner(ExprVisitor):
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
    def visit_function_(self, e: Function) -> None:
        saved = self.block
        self.block = None
        for v in free_vars(e):
            self.used_outside.add(v)
        super().visit_function_(e)
        self.block = saved

    def visit_seq_expr_(self, e: SeqExpr) -> None:
        saved = self.block
        for block in e.blocks:
            self.block = block
            self.visit_binding_block(block)
        self.block = None
        self.visit_expr(e.body)
        self.block = saved

    def visit_var_def(self, var: Var) -> None:
        if self.inside_dataflow():
            self.defined_in_dataflow[var] = None

    def visit_binding(self, binding: Binding) -> None:
        same_ty = True
        if isinstance(binding, MatchCast):
            same_ty = structural_equal(binding.var.struct_info, binding.value.struct_info)
        value = binding.value
        unwrapped = self.unwrap_known(value)
        if unwrapped is not None:
            value = unwrapped
        if isinstance(value, Var) and same_ty:
            self.trivial[binding.var] = value
        if isinstance(value, Constant):
            self.constants[binding.var] = value
        self.known[binding.var] = value
        self.def_block[binding.var] = self.block
        self.visit_expr(binding.value)
        self.visit_var_def(binding.var)

    def visit_var_(self, e: Var) -> None:
        home = self.def_block.get(e)
        if not self.inside_dataflow() or (home is not None and self.block is not home):
            self.used_outside.add(e)

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
class _Apply(ExprMutator):
    """Applies a plan (TVM BindingCanonicalizer)."""

    def __init__(self, plan: tuple[dict, dict, set, dict]):
        super().__init__()
        self.replace_usage, self.replace_binding, self.remove, self.constants = plan

    def visit_var_def(self, var: Var) -> Var:
        seen = 0
        while var in self.replace_binding and seen <= len(self.replace_binding):
            var = self.replace_binding[var]
            seen += 1
        return var

    def visit_var_(self, e: Var) -> Expr:
        seen = 0
        while e in self.replace_usage and seen <= len(self.replace_usage):
            e = self.replace_usage[e]
            seen += 1
        c = self.constants.get(e)
        if c is not None:
            return c
        return self.var_remap.get(e, e)

    def visit_binding(self, binding: Binding) -> list[Binding]:
        if binding.var in self.remove:
            return []
        value = self.visit_expr(binding.value)
        var = self.visit_var_def(binding.var)
        if (value is not binding.value or var is not binding.var) and not isinstance(binding, MatchCast):
            # TVM's ReEmitBinding: the variable takes its new value's type (a substitution
            # may have made it more precise); later uses of either old variable follow.
            si = value.struct_info
            if si is not None and not structural_equal(si, var.struct_info):
                new_var = type(var)(var.name_hint, si, var.span)
                self.var_remap[binding.var] = new_var
                self.var_remap[var] = new_var
                var = new_var
        return [rebound(binding, var, value)]

    def visit_call_(self, e: Call) -> Expr:
        new = super().visit_call_(e)
        return e if new is e else rederive(new)

    def visit_tuple_(self, e: Tuple) -> Expr:
        new = super().visit_tuple_(e)
        return e if new is e else rederive(new)

    def visit_tuple_getitem_(self, e: TupleGetItem) -> Expr:
        new = super().visit_tuple_getitem_(e)
        return e if new is e else rederive(new)

    def visit_binding_block(self, block: BindingBlock) -> BindingBlock:
        out = [new for b in block.bindings for new in self.visit_binding(b)]
        if isinstance(block, DataflowBlock):
            out = _fold_output_aliases(out)
        if len(out) == len(block.bindings) and all(a is b for a, b in zip(out, block.bindings)):
            return block
        return type(block)(tuple(out), block.span)


def rederive(e: Expr) -> Expr:
    """``e``, whose operands changed, with its struct info derived again as TVM's normaliser
    does: an operator call re-inferred (kept when inference fails), a call of a function
    value given the callee's return type, a tuple typed by its fields, a tuple item by its
    tuple. ``e`` itself when the type is the same."""
    si = e.struct_info
    if type(e) is Call:
        try:
            si = infer_struct_info(e)
        except ByoccError:
            return e
        if si == e.struct_info:
            return e
        return Call(e.op, e.args, e.attrs, e.sinfo_args, si, e.span)
    if type(e) is Tuple:
        if any(f.struct_info is None for f in e.fields):
            return e
        si = TupleStructInfo(tuple(sinfo_of(f) for f in e.fields))
        return e if si == e.struct_info else Tuple(e.fields, si, e.span)
    if type(e) is TupleGetItem:
        tsi = e.tuple_value.struct_info
        if isinstance(tsi, TupleStructInfo) and 0 <= e.index < len(tsi.fields):
            si = tsi.fields[e.index]
        return e if si == e.struct_info else TupleGetItem(e.tuple_value, e.index, si, e.span)
    return e


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
    out: list[Binding] = []
    for b in bindings:
        if isinstance(b.var, DataflowVar) and b.var in candidates:
            continue
        if not isinstance(b.var, DataflowVar) and isinstance(b.value, DataflowVar) \
                and b.value in candidates:
            out.append(with_value(b, candidates[b.value]))
            continue
        out.append(b)
    return out


# ============================================================================ the pass
def canonicalize_bindings(func: Function) -> Function:
    """CanonicalizeBindings on one function."""
    func = canonicalize_symbolic(func)
    planner = _Planner()
    planner.visit_expr(func)
    out = _Apply(planner.plan()).visit_expr(func)
    assert isinstance(out, Function)
    return out


def canonicalize_bindings_module(mod: IRModule) -> IRModule:
    """:func:`canonicalize_bindings` on every function of ``mod``."""
    return map_functions(mod, canonicalize_bindings)


@dataclass(frozen=True)
class CanonicalizeBindings(Pass, name="CanonicalizeBindings", opt_level=1,
                           transform=canonicalize_bindings_module):
    """TVM ``relax.transform.CanonicalizeBindings`` (docs/partitioning.md#canonicalizebindings)."""


__all__ = ["CanonicalizeBindings", "canonicalize_bindings", "canonicalize_symbolic", "rederive"]
