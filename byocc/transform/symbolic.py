"""Symbolic dimension variables of created functions (spec/partitioning.md section 5.4).

* :func:`free_symbolic_vars`: TirVars a function uses but does not define through its
  parameters (those become the trailing ``tir_vars`` parameter of a composite).
* :func:`renew_symbolic_vars`: a copy of a function whose TirVars are fresh objects with the
  same names (TVM ``SymbolicVarRenewMutator``), so no TirVar is shared between functions.
"""

from __future__ import annotations

from typing import Any

from byocc.ir import (
    Call,
    Constant,
    Expr,
    FuncStructInfo,
    Function,
    If,
    MatchCast,
    PrimBinary,
    PrimMinMax,
    PrimStructInfo,
    PrimValue,
    SeqExpr,
    ShapeExpr,
    ShapeStructInfo,
    TensorStructInfo,
    TirVar,
    Tuple,
    TupleGetItem,
    TupleStructInfo,
    Var,
    VarBinding,
    dim_vars,
    struct_info_vars,
    substitute_dim,
)


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


class _Renew:
    def __init__(self, mapping: dict):
        self.m = mapping
        self.vars: dict = {}

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

    def var(self, v: Var) -> Var:
        nv = type(v)(v.name_hint, self.sinfo(v.struct_info), v.span)
        self.vars[v] = nv
        return nv

    def expr(self, e: Expr) -> Expr:
        t = type(e)
        if isinstance(e, Var):
            return self.vars.get(e, e)
        if t is Call:
            op = self.expr(e.op) if isinstance(e.op, Var) else e.op
            return Call(op, tuple(self.expr(a) for a in e.args), e.attrs,
                        tuple(self.sinfo(s) for s in e.sinfo_args),
                        self.sinfo(e.struct_info), e.span)
        if t is Tuple:
            return Tuple(tuple(self.expr(f) for f in e.fields), self.sinfo(e.struct_info), e.span)
        if t is TupleGetItem:
            return TupleGetItem(self.expr(e.tuple_value), e.index, self.sinfo(e.struct_info), e.span)
        if t is ShapeExpr:
            return ShapeExpr(tuple(self.dim(d) for d in e.values), e.span)
        if t is PrimValue:
            return PrimValue(self.dim(e.value), e.dtype, e.span)
        if t is If:
            return If(self.expr(e.cond), self.expr(e.true_branch), self.expr(e.false_branch),
                      self.sinfo(e.struct_info), e.span)
        if t is SeqExpr:
            return self.seq(e)
        if t is Function:
            return self.function(e)
        if t is Constant:
            return e
        return e

    def seq(self, s: SeqExpr) -> SeqExpr:
        blocks = []
        for block in s.blocks:
            out = []
            for b in block.bindings:
                value = self.expr(b.value)
                var = self.var(b.var)
                if isinstance(b, MatchCast):
                    out.append(MatchCast(var, value, self.sinfo(b.struct_info), b.span))
                else:
                    out.append(VarBinding(var, value, b.span))
            blocks.append(type(block)(tuple(out), block.span))
        return SeqExpr(tuple(blocks), self.expr(s.body), s.span)

    def function(self, f: Function) -> Function:
        params = tuple(self.var(p) for p in f.params)
        body = self.seq(f.body)
        return Function(params, body, self.sinfo(f.ret_struct_info), f.is_pure, dict(f.attrs), f.span)


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
    return _Renew(mapping).function(func)


__all__ = ["free_symbolic_vars", "has_symbolic", "renew_symbolic_vars"]

