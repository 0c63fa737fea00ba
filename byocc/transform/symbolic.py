"""Symbolic dimension variables of created functions (docs/partitioning.md#composite-function).

* :func:`free_symbolic_vars`: TirVars a function uses but does not define through its
  parameters (those become the trailing ``tir_vars`` parameter of a composite).
* :func:`renew_symbolic_vars`: a copy of a function whose TirVars are fresh objects with the
  same names (TVM ``SymbolicVarRenewMutator``), so no TirVar is shared between functions.
"""

from __future__ import annotations

from typing import Any
from typing import cast

from byocc.ir import Binding
from byocc.ir import BindingBlock
from byocc.ir import Call
from byocc.ir import Expr
from byocc.ir import ExprMutator
from byocc.ir import FuncStructInfo
from byocc.ir import Function
from byocc.ir import If
from byocc.ir import MatchCast
from byocc.ir import PrimBinary
from byocc.ir import PrimMinMax
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
from byocc.ir import VarBinding
from byocc.ir import dim_vars
from byocc.ir import struct_info_vars
from byocc.ir import substitute_dim


def _expr_dims(e: Any, out: list) -> None:
    t = type(e)
    if t is ShapeExpr:
        for d in e.values:
            dim_vars(d, out)
    elif t is PrimValue:
        if isinstance(e.value, (TirVar, PrimBinary, PrimMinMax)):
            dim_vars(e.value, out)
    elif t is Call:
        for a in e.args:
            _expr_dims(a, out)
        for s in e.sinfo_args:
            struct_info_vars(s, out)
        if e.struct_info is not None:
            struct_info_vars(e.struct_info, out)
    elif t is Tuple:
        for f in e.fields:
            _expr_dims(f, out)
    elif t is TupleGetItem:
        _expr_dims(e.tuple_value, out)


def _definable(si: Any, out: list) -> None:
    """TirVars a parameter of this struct info defines (bare dimensions)."""
    if isinstance(si, TensorStructInfo) and si.shape is not None:
        out.extend(d for d in si.shape if isinstance(d, TirVar))
    elif isinstance(si, ShapeStructInfo) and si.values is not None:
        out.extend(d for d in si.values if isinstance(d, TirVar))
    elif isinstance(si, PrimStructInfo) and isinstance(si.value, TirVar):
        out.append(si.value)
    elif isinstance(si, TupleStructInfo):
        for f in si.fields:
            _definable(f, out)


_SYMBOLIC_CACHE: dict = {}


def _sinfo_symbolic(si: Any) -> bool:
    """Whether a struct info mentions a symbolic dimension (cached: struct info is a value)."""
    try:
        hit = _SYMBOLIC_CACHE.get(si)
    except TypeError:  # unhashable content: answer without caching
        return bool(struct_info_vars(si))
    if hit is None:
        hit = bool(struct_info_vars(si))
        if len(_SYMBOLIC_CACHE) < 65536:
            _SYMBOLIC_CACHE[si] = hit
    return hit


def _expr_symbolic(e: Any) -> bool:
    t = type(e)
    if t is ShapeExpr:
        return any(not isinstance(d, int) for d in e.values)
    if t is PrimValue:
        return not isinstance(e.value, (int, float, bool))
    if t is Call:
        return any(_expr_symbolic(a) for a in e.args) or any(_sinfo_symbolic(x) for x in e.sinfo_args)
    if t is Tuple:
        return any(_expr_symbolic(f) for f in e.fields)
    return False


def has_symbolic(func: Function) -> bool:
    """Whether ``func`` (a flat function: one level of blocks) mentions a symbolic dim."""
    if any(_sinfo_symbolic(p.struct_info) for p in func.params) or _sinfo_symbolic(func.ret_struct_info):
        return True
    for block in func.body.blocks:
        for b in block.bindings:
            if _sinfo_symbolic(b.var.struct_info) or _expr_symbolic(b.value):
                return True
            if isinstance(b.value, (Function, If, SeqExpr)):
                return True  # nested code: let the full walk decide
    return False


def free_symbolic_vars(func: Function) -> list[TirVar]:
    """TirVars used in ``func`` (parameter and binding types, shape and prim literals, the
    return type) that no parameter type defines, in first-use order."""
    defined: list = []
    for p in func.params:
        _definable(p.struct_info, defined)
    used: list = []
    for p in func.params:
        struct_info_vars(p.struct_info, used)
    body = func.body
    if isinstance(body, SeqExpr):
        for block in body.blocks:
            for b in block.bindings:
                struct_info_vars(b.var.struct_info, used)
                _expr_dims(b.value, used)
                if isinstance(b, MatchCast):
                    _definable(b.struct_info, defined)
    struct_info_vars(func.ret_struct_info, used)
    ids = {id(v) for v in defined}
    return [v for v in used if id(v) not in ids]


def _all_dims(func: Function) -> list:
    out: list = []
    for p in func.params:
        struct_info_vars(p.struct_info, out)
    for block in func.body.blocks:
        for b in block.bindings:
            struct_info_vars(b.var.struct_info, out)
            _expr_dims(b.value, out)
    struct_info_vars(func.ret_struct_info, out)
    return out


class _Renew(ExprMutator):
    """Rebuilds every node with the symbolic dims of ``m`` (TirVar -> dim) substituted in its
    struct info, shape and prim literals; each variable is defined anew with its substituted
    type. No memo: a subclass grows ``m`` while walking, so a node shared by two places may
    rebuild differently."""

    def __init__(self, mapping: dict):
        super().__init__()
        self.m = mapping

    def dim(self, d: Any) -> Any:
        return substitute_dim(d, self.m)

    def sinfo(self, si: Any) -> Any:
        if isinstance(si, TensorStructInfo):
            if si.shape is None:
                return si
            return TensorStructInfo(tuple(self.dim(d) for d in si.shape), si.dtype, si.ndim, si.shape_var)
        if isinstance(si, ShapeStructInfo):
            if si.values is None:
                return si
            return ShapeStructInfo(tuple(self.dim(d) for d in si.values), si.ndim)
        if isinstance(si, PrimStructInfo):
            return si if si.value is None else PrimStructInfo(si.dtype, self.dim(si.value))
        if isinstance(si, TupleStructInfo):
            return TupleStructInfo(tuple(self.sinfo(f) for f in si.fields))
        if isinstance(si, FuncStructInfo):
            params = None if si.params is None else tuple(self.sinfo(p) for p in si.params)
            return FuncStructInfo(params, self.sinfo(si.ret), si.purity)
        return si

    def visit_expr(self, expr: Expr) -> Expr:
        return self._table[type(expr)](self, expr)

    def visit_var_def(self, var: Var) -> Var:
        nv = type(var)(var.name_hint, self.sinfo(var.struct_info), var.span)
        self.var_remap[var] = nv
        return nv

    def visit_call_(self, e: Call) -> Expr:
        op = self.visit_expr(e.op) if isinstance(e.op, Var) else e.op
        return Call(op, tuple(self.visit_expr(a) for a in e.args), e.attrs,
                    tuple(self.sinfo(s) for s in e.sinfo_args), self.sinfo(e.struct_info), e.span)

    def visit_tuple_(self, e: Tuple) -> Expr:
        return Tuple(tuple(self.visit_expr(f) for f in e.fields), self.sinfo(e.struct_info), e.span)

    def visit_tuple_getitem_(self, e: TupleGetItem) -> Expr:
        return TupleGetItem(self.visit_expr(e.tuple_value), e.index, self.sinfo(e.struct_info), e.span)

    def visit_shape_expr_(self, e: ShapeExpr) -> Expr:
        return ShapeExpr(tuple(self.dim(d) for d in e.values), e.span)

    def visit_prim_value_(self, e: PrimValue) -> Expr:
        return PrimValue(self.dim(e.value), e.dtype, e.span)

    def visit_if_(self, e: If) -> Expr:
        return If(self.visit_expr(e.cond), self.visit_expr(e.true_branch), self.visit_expr(e.false_branch),
                  self.sinfo(e.struct_info), e.span)

    def visit_binding(self, binding: Binding) -> list[Binding]:
        value = self.visit_expr(binding.value)
        var = self.visit_var_def(binding.var)
        if isinstance(binding, MatchCast):
            return [MatchCast(var, value, self.sinfo(binding.struct_info), binding.span)]
        return [VarBinding(var, value, binding.span)]

    def visit_binding_block(self, block: BindingBlock) -> BindingBlock:
        return type(block)(tuple(new for b in block.bindings for new in self.visit_binding(b)), block.span)

    def visit_seq_expr_(self, e: SeqExpr) -> SeqExpr:
        blocks = tuple(self.visit_binding_block(block) for block in e.blocks)
        return SeqExpr(blocks, self.visit_expr(e.body), e.span)

    def visit_function_(self, e: Function) -> Function:
        params = tuple(self.visit_var_def(p) for p in e.params)
        body = cast(SeqExpr, self.visit_expr(e.body))  # visit_seq_expr_ gives a SeqExpr
        return Function(params, body, self.sinfo(e.ret_struct_info), e.is_pure, dict(e.attrs), e.span)


def renew_symbolic_vars(func: Function, check: bool = True) -> Function:
    """``func`` with fresh TirVars (same names); ``func`` itself when it has none
    (``check=False``: the caller knows it has some)."""
    if check and not has_symbolic(func):
        return func
    dims = _all_dims(func)
    if not dims:
        return func
    mapping = {}
    for d in dims:
        if d not in mapping:
            mapping[d] = TirVar(d.name, d.dtype, d.span)
    return _Renew(mapping).visit_function_(func)


__all__ = ["free_symbolic_vars", "has_symbolic", "renew_symbolic_vars"]

