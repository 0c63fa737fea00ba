"""Well-formedness of Relax modules and functions (docs/partitioning.md#well-formedness).

:func:`well_formed` returns *every* problem found (TVM stops at the first), each a
:class:`~byocc.ir.WellFormedError` carrying TVM's message text and the best span known (the
binding or node where the problem shows, else the enclosing function). An empty list means
the module is well formed; :func:`check_well_formed` is the boolean form (TVM's
``check_well_formed``; TVM 0.27's ``well_formed`` itself returns None and raises, docs/partitioning.md#q8-well_formed-returns-none).

Rules: variables defined before use and exactly once; DataflowVars defined and used only
inside their dataflow block; global references name module functions; ``global_symbol`` equals
the global name; no parameter object shared by two functions; every expression typed (with
``check_ty``); normal form (call callee/arguments, tuple fields and tuple-get-item tuples are
leaves, ``SeqExpr`` only as function/branch body, its result a leaf); no ``If`` and no impure
call inside dataflow blocks; pure functions contain no impure call; functions declare their
return type; symbolic dims in shape values are defined; a binding's annotated type does not
provably contradict its value's type.

One pass over the IR; scopes are undone with logs instead of set copies, so the cost is
linear in the number of nodes.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .analysis import find_impure_call
from .analysis import is_impure_call
from .diagnostics import Span
from .diagnostics import WellFormedError
from .expr import Binding
from .expr import Call
from .expr import Constant
from .expr import DataflowBlock
from .expr import DataflowVar
from .expr import DataTypeImm
from .expr import Expr
from .expr import ExternFunc
from .expr import Function
from .expr import GlobalVar
from .expr import If
from .expr import MatchCast
from .expr import Op
from .expr import PrimValue
from .expr import SeqExpr
from .expr import ShapeExpr
from .expr import StringImm
from .expr import Tuple
from .expr import TupleGetItem
from .expr import Var
from .expr import VarBinding
from .module import IRModule
from .prim import Dim
from .prim import TirVar
from .prim import dim_text
from .prim import dim_vars
from .struct_info import FuncStructInfo
from .struct_info import ObjectStructInfo
from .struct_info import PrimStructInfo
from .struct_info import ShapeStructInfo
from .struct_info import StructInfo
from .struct_info import TensorStructInfo
from .struct_info import TupleStructInfo
from .struct_info import struct_info_vars

_LEAVES = (Var, GlobalVar, Constant, ShapeExpr, PrimValue, StringImm, DataTypeImm, ExternFunc, Op, Tuple)
_TYPE_KEYS = {
    Call: "relax.expr.Call", SeqExpr: "relax.expr.SeqExpr", If: "relax.expr.If",
    Function: "relax.expr.Function", TupleGetItem: "relax.expr.TupleGetItem",
}
# expression kinds whose struct info is derived, never missing
_ALWAYS_TYPED = (Op, GlobalVar, ExternFunc, ShapeExpr, PrimValue, StringImm, DataTypeImm, SeqExpr, Function)


def _type_key(e: Expr) -> str:
    return _TYPE_KEYS.get(type(e), f"relax.expr.{type(e).__name__}")


def _show(e: Expr) -> str:
    """Short text of a node for messages: names for variables, TVM's GlobalVar form, else
    the printer's text (first line)."""
    if isinstance(e, Var):
        return e.name_hint
    if isinstance(e, GlobalVar):
        return f'I.GlobalVar("{e.name_hint}")'
    if isinstance(e, Op):
        return f"Op({e.name})"
    try:
        text = str(e)
    except ImportError:  # printer not available
        return type(e).__name__
    return text.strip().splitlines()[0] if text.strip() else type(e).__name__


def sinfo_text(si: StructInfo | None) -> str:
    """TVMScript-like text of a struct info, for messages."""
    if si is None:
        return "None"
    if isinstance(si, TensorStructInfo):
        dt = f'dtype="{si.dtype}"' if si.dtype else 'dtype="void"'
        if si.shape is not None:
            dims = ", ".join(dim_text(d) for d in si.shape)
            if len(si.shape) == 1:
                dims += ","
            return f"R.Tensor(({dims}), {dt})"
        return f"R.Tensor(ndim={si.ndim}, {dt})" if si.ndim != -1 else f"R.Tensor({dt})"
    if isinstance(si, TupleStructInfo):
        return "R.Tuple(" + ", ".join(sinfo_text(f) for f in si.fields) + ")"
    if isinstance(si, ShapeStructInfo):
        if si.values is not None:
            return "R.Shape([" + ", ".join(dim_text(d) for d in si.values) + "])"
        return f"R.Shape(ndim={si.ndim})"
    if isinstance(si, PrimStructInfo):
        return f'R.Prim("{si.dtype}")'
    if isinstance(si, FuncStructInfo):
        return "R.Callable"
    return "R.Object"


def _conflicts(base: StructInfo | None, derived: StructInfo | None) -> bool:
    """True only when ``derived`` can provably not be a value of type ``base``."""
    if base is None or derived is None or isinstance(base, ObjectStructInfo):
        return False
    if type(base) is not type(derived):
        return True
    if isinstance(base, TensorStructInfo):
        assert isinstance(derived, TensorStructInfo)
        if base.dtype and derived.dtype and base.dtype != derived.dtype:
            return True
        if base.ndim != -1 and derived.ndim != -1 and base.ndim != derived.ndim:
            return True
        if base.shape is not None and derived.shape is not None:
            return any(isinstance(a, int) and isinstance(b, int) and a != b
                       for a, b in zip(base.shape, derived.shape))
        return False
    if isinstance(base, TupleStructInfo):
        assert isinstance(derived, TupleStructInfo)
        if len(base.fields) != len(derived.fields):
            return True
        return any(_conflicts(a, b) for a, b in zip(base.fields, derived.fields))
    if isinstance(base, ShapeStructInfo):
        assert isinstance(derived, ShapeStructInfo)
        return base.ndim != -1 and derived.ndim != -1 and base.ndim != derived.ndim
    if isinstance(base, PrimStructInfo):
        assert isinstance(derived, PrimStructInfo)
        return base.dtype != derived.dtype
    return False


class _Checker:
    def __init__(self, mod: IRModule | None, check_ty: bool) -> None:
        self.mod = mod
        self.check_ty = check_ty
        self.problems: list[WellFormedError] = []
        self._seen: set[tuple[str, Any]] = set()
        self.defined: set[Var] = set()           # visible Vars
        self.defined_log: list[Var] = []         # definition order, for undoing scopes
        self.df_defined: set[Var] = set()        # DataflowVars of the current block
        self.dims: set[TirVar] = set()           # visible symbolic dims
        self.dims_log: list[TirVar] = []
        self.in_dataflow = False
        self.recur: set[Var] = set()             # local functions being defined (may self-call)
        self.param_owner: dict[Var, str] = {}    # parameter Var -> top-level function name
        self.func_name = "(anonymous function)"
        self.spans: list[Span | None] = []

    # ---------------------------------------------------------------- reporting
    def report(self, message: str, *nodes: object, key: object = None) -> None:
        dedup = (message, key if key is not None else tuple(id(n) for n in nodes))
        if dedup in self._seen:
            return
        self._seen.add(dedup)
        span: Span | None = None
        for n in nodes:
            span = getattr(n, "span", None)
            if span is not None:
                break
        if span is None:
            span = next((s for s in reversed(self.spans) if s is not None), None)
        self.problems.append(WellFormedError(message, span))

    # ---------------------------------------------------------------- scopes
    def _mark(self) -> tuple[int, int]:
        return len(self.defined_log), len(self.dims_log)

    def _undo(self, mark: tuple[int, int]) -> None:
        n, m = mark
        while len(self.defined_log) > n:
            self.defined.discard(self.defined_log.pop())
        while len(self.dims_log) > m:
            self.dims.discard(self.dims_log.pop())

    def _define_dims(self, si: StructInfo | None) -> None:
        if si is None:
            return
        for d in struct_info_vars(si):
            if d not in self.dims:
                self.dims.add(d)
                self.dims_log.append(d)

    # ---------------------------------------------------------------- module
    def check_module(self, mod: IRModule) -> None:
        for name, func in mod.items():
            if not isinstance(func, Function):
                continue
            gsym = func.attrs.get("global_symbol")
            if gsym is not None and gsym != name:
                self.report(f'Name in GlobalVar is not equal to name in gsymbol: '
                            f'I.GlobalVar("{name}") != {gsym}', func)
            self.func_name = f'"{name}"'
            self.visit_function(func, top=True)

    # ---------------------------------------------------------------- functions
    def visit_function(self, f: Function, top: bool = False) -> None:
        self.spans.append(f.span)
        mark = self._mark()
        saved_df, saved_df_set = self.in_dataflow, self.df_defined
        self.in_dataflow, self.df_defined = False, set()
        if f.attrs.get("relax.force_pure") and not f.is_pure:
            self.report(f"Function {self.func_name} has true for relax.force_pure but false for "
                        "is_pure; relax.force_pure should be true only if is_pure is also true.", f)
        for p in f.params:
            self._define_dims(p.struct_info)
        for p in f.params:
            if isinstance(p, DataflowVar):
                self.report(f"DataflowVar {p.name_hint} is defined outside DataflowBlock.", p)
            self._define_var(p)
            owner = self.param_owner.get(p)
            if owner is not None and owner != self.func_name:
                self.report(f"Relax variable {p.name_hint} is used as a parameter in both function "
                            f"{owner} and function {self.func_name}.", p)
            self.param_owner.setdefault(p, self.func_name)
            self._check_typed(p)
        if f.ret_struct_info is None:
            self.report("Function must have defined ret_ty", f)
        if self.check_ty and f.is_pure and not f.attrs.get("relax.force_pure"):
            impure = find_impure_call(f)
            if impure is not None:
                self.report(f"Function {self.func_name} is annotated as pure but contains an impure "
                            f"call: {_show(impure)}.  Please set relax.force_pure to true or use a "
                            "pure operator variant (e.g., call_pure_packed) if it is necessary to "
                            "override this judgment.", impure, f)
        if isinstance(f.body, SeqExpr):
            self.visit_seq(f.body)
        else:
            self.report("SeqExpr bodies must be leaf expressions.", f)
        self.in_dataflow, self.df_defined = saved_df, saved_df_set
        self._undo(mark)
        self.spans.pop()

    def visit_seq(self, seq: SeqExpr) -> None:
        for block in seq.blocks:
            is_df = isinstance(block, DataflowBlock)
            saved = self.in_dataflow
            self.in_dataflow = is_df or saved
            self.spans.append(getattr(block, "span", None))
            for b in block.bindings:
                self.visit_binding(b)
            self.spans.pop()
            self.in_dataflow = saved
            if is_df:
                self.df_defined = set()
        if not isinstance(seq.body, _LEAVES):
            self.report("SeqExpr bodies must be leaf expressions.", seq.body)
        else:
            self.visit_expr(seq.body)

    def visit_binding(self, b: Binding) -> None:
        self.spans.append(getattr(b, "span", None))
        value = b.value
        if isinstance(b, VarBinding):
            is_lambda = isinstance(value, Function)
            if is_lambda:
                self.recur.add(b.var)
            self.visit_expr(value)
            self._define_var(b.var)
            if self.check_ty and _conflicts(b.var.struct_info, getattr(value, "struct_info", None)):
                self.report(f"Expression of type {sinfo_text(value.struct_info)} cannot be assigned "
                            f"to a variable of type {sinfo_text(b.var.struct_info)}", b, b.var)
            if is_lambda:
                self.recur.discard(b.var)
        elif isinstance(b, MatchCast):
            self.visit_expr(value)
            self._define_dims(b.struct_info)
            self._define_var(b.var)
        self.spans.pop()

    def _define_var(self, var: Var) -> None:
        if isinstance(var, DataflowVar):
            if not self.in_dataflow:
                self.report(f"DataflowVar {var.name_hint} is defined outside DataflowBlock.", var)
            if var in self.df_defined:
                self.report(f"DataflowVar {var.name_hint} is defined more than once.", var)
            self.df_defined.add(var)
        else:
            if var in self.defined:
                self.report(f"Var {var.name_hint} is defined more than once.", var)
            else:
                self.defined.add(var)
                self.defined_log.append(var)
        self._define_dims(var.struct_info)
        self._check_typed(var)

    def _check_typed(self, e: Expr) -> None:
        if self.check_ty and not isinstance(e, _ALWAYS_TYPED) and getattr(e, "struct_info", None) is None:
            self.report(f"The ty of Expr {_show(e)} is missing.", e)

    # ---------------------------------------------------------------- expressions
    def visit_expr(self, e: Expr) -> None:
        self._check_typed(e)
        if isinstance(e, DataflowVar):
            if not self.in_dataflow:
                self.report(f"DataflowVar {e.name_hint} is used outside DataflowBlock.", e)
            elif e not in self.df_defined:
                self.report(f"DataflowVar {e.name_hint} is not defined.", e)
        elif isinstance(e, Var):
            if e not in self.defined and e not in self.recur:
                self.report(f"Var {e.name_hint} is not defined.", key=("var", id(e)))
        elif isinstance(e, GlobalVar):
            if self.mod is not None and e.name_hint not in self.mod:
                self.report(f"GlobalVar {_show(e)} is not defined.", e)
        elif isinstance(e, Tuple):
            for i, f in enumerate(e.fields):
                if isinstance(f, _LEAVES):
                    self.visit_expr(f)
                else:
                    self.report(f"Tuple is not in ANF form, field {i} gets {_type_key(f)}", f, e)
        elif isinstance(e, TupleGetItem):
            if isinstance(e.tuple_value, _LEAVES):
                self.visit_expr(e.tuple_value)
            else:
                self.report("The tuple value in a TupleGetItem node must be a leaf expression.", e)
        elif isinstance(e, Call):
            self.visit_call(e)
        elif isinstance(e, If):
            self.visit_if(e)
        elif isinstance(e, ShapeExpr):
            self._check_dims(e.values, e)
        elif isinstance(e, PrimValue):
            self._check_dims((e.value,), e)
        elif isinstance(e, SeqExpr):
            self.report("SeqExpr only serves as the function body in FunctionNode, "
                        "or the true/false branch body in IfNode.", e)
        elif isinstance(e, Function):
            self.visit_function(e)

    def _check_dims(self, values: Iterable[Dim | float | None], node: Expr) -> None:
        for v in values:
            if isinstance(v, (bool, int, float)) or v is None:
                continue
            for d in dim_vars(v):
                if d not in self.dims:
                    self.report(f"Var {d.name} is not defined.", node, key=("dim", id(d)))

    def visit_call(self, c: Call) -> None:
        if isinstance(c.op, _LEAVES):
            if not isinstance(c.op, Op):
                self.visit_expr(c.op)
        else:
            self.report("The called expression must be a leaf expression", c)
        for i, a in enumerate(c.args):
            if isinstance(a, _LEAVES):
                self.visit_expr(a)
            else:
                self.report(f"Call is not in ANF form, arg {i} gets {_type_key(a)}", a, c)
        if self.in_dataflow and self.check_ty and is_impure_call(c):
            self.report(f"Impure function call {_show(c)} occurs within a dataflow block.", c)

    def visit_if(self, e: If) -> None:
        if self.in_dataflow:
            self.report("If nodes are not allowed to appear in dataflow blocks.", e)
        if isinstance(e.cond, _LEAVES):
            self.visit_expr(e.cond)
        else:
            self.report("The condition for an if node must be a leaf expression.", e)
        for branch in (e.true_branch, e.false_branch):
            mark = self._mark()
            if isinstance(branch, SeqExpr):
                self.visit_seq(branch)
            else:
                self.report("SeqExpr bodies must be leaf expressions.", e)
            self._undo(mark)


def well_formed(obj: IRModule | Function, check_ty: bool = True) -> list[WellFormedError]:
    """Every well-formedness problem of a module or a function, in walk order (empty: fine)."""
    if isinstance(obj, IRModule):
        checker = _Checker(obj, check_ty)
        checker.check_module(obj)
    else:
        checker = _Checker(None, check_ty)
        checker.visit_function(obj, top=True)
    return checker.problems


def check_well_formed(obj: IRModule | Function, check_ty: bool = True) -> bool:
    """True when :func:`well_formed` finds no problem (TVM ``check_well_formed``)."""
    return not well_formed(obj, check_ty)


__all__ = ["check_well_formed", "sinfo_text", "well_formed"]
