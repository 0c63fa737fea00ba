"""Expression constructors with TVM's Python signatures (``relax.Var``, ``relax.const``...).

Each returns a byocc IR node (:mod:`byocc.ir.expr`) with its struct info filled in, so the
result can be emitted by :class:`~byocc.relax.BlockBuilder` or handed to a pass directly.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from byocc.ir import BindingBlock as _BindingBlock
from byocc.ir import Call as _Call
from byocc.ir import Constant
from byocc.ir import DataflowBlock as _DataflowBlock
from byocc.ir import DataflowVar as _DataflowVar
from byocc.ir import Expr
from byocc.ir import ExternFunc as _ExternFunc
from byocc.ir import Function as _Function
from byocc.ir import GlobalVar
from byocc.ir import InputError
from byocc.ir import MatchCast as _MatchCast
from byocc.ir import ObjectStructInfo
from byocc.ir import Op
from byocc.ir import PrimExpr
from byocc.ir import PrimValue as _PrimValue
from byocc.ir import SeqExpr as _SeqExpr
from byocc.ir import ShapeExpr as _ShapeExpr
from byocc.ir import StringImm as _StringImm
from byocc.ir import StructInfo
from byocc.ir import TensorStructInfo
from byocc.ir import Tuple as _Tuple
from byocc.ir import TupleGetItem as _TupleGetItem
from byocc.ir import TupleStructInfo
from byocc.ir import UnsupportedError
from byocc.ir import Var as _Var
from byocc.ir import VarBinding as _VarBinding

from ._factory import Factory
from .struct_info import to_dims


def _check_sinfo(sinfo: Any, what: str) -> StructInfo | None:
    convert = getattr(sinfo, "as_struct_info", None)  # an R.Tensor(...) annotation proxy
    if convert is not None and not isinstance(sinfo, StructInfo):
        sinfo = convert()
    if sinfo is not None and not isinstance(sinfo, StructInfo):
        raise InputError(f"{what}: expected struct info (e.g. relax.TensorStructInfo), got {sinfo!r}")
    return sinfo


class Var(Factory):
    """``Var(name_hint, struct_info=None)`` (TVM 0.27 also spells it ``Var(name, ty)``)."""

    target = _Var

    def __new__(cls, name_hint: str | None = None, struct_info: StructInfo | None = None,  # type: ignore[misc]
                span: Any = None, *, name: str | None = None, ty: StructInfo | None = None) -> _Var:
        return _make_var(_Var, name_hint, struct_info, name, ty)


class DataflowVar(Factory):
    """``DataflowVar(name_hint, struct_info=None)``: a variable local to a dataflow block."""

    target = _DataflowVar

    def __new__(cls, name_hint: str | None = None, struct_info: StructInfo | None = None,  # type: ignore[misc]
                span: Any = None, *, name: str | None = None, ty: StructInfo | None = None) -> _DataflowVar:
        return _make_var(_DataflowVar, name_hint, struct_info, name, ty)


def _make_var(kind: type, name_hint: Any, struct_info: Any, name: Any, ty: Any) -> Any:
    label = name_hint if name_hint is not None else name
    if not isinstance(label, str):
        raise InputError(f"{kind.__name__}: the name must be a string, got {label!r}")
    sinfo = _check_sinfo(struct_info if struct_info is not None else ty, kind.__name__)
    return kind(label, sinfo)


def const(value: Any, dtype: str | None = None) -> Constant:
    """A tensor constant from a Python scalar, a (nested) list or a numpy array.

    With no ``dtype``: a Python int gives ``int32``, a float ``float32``, a bool ``bool``;
    64-bit numpy data is narrowed the same way (TVM's rule); other numpy dtypes are kept.
    """
    import numpy as np

    if isinstance(dtype, StructInfo) and hasattr(dtype, "dtype"):
        dtype = dtype.dtype  # a PrimStructInfo given as the dtype
    if isinstance(value, (bool, int, float, list, tuple)):
        try:
            value = np.array(value, dtype=dtype)
        except (TypeError, ValueError) as e:
            raise InputError(f"const: cannot make a tensor of {value!r}: {e}") from None
    if not isinstance(value, (np.ndarray, np.generic)):
        raise InputError(f"const: expected a number, a list or a numpy array, got {type(value).__name__}")
    value = np.asarray(value)
    if dtype is None:
        narrowed = {np.dtype("int64"): "int32", np.dtype("float64"): "float32"}.get(value.dtype)
        if narrowed is not None:
            value = value.astype(narrowed)
    elif str(value.dtype) != dtype:
        value = value.astype(dtype)
    return Constant(value, TensorStructInfo(tuple(int(d) for d in value.shape), str(value.dtype)))


class ShapeExpr(Factory):
    """``ShapeExpr(values)``: ``R.shape([2, n])``."""

    target = _ShapeExpr

    def __new__(cls, values: Sequence, span: Any = None) -> _ShapeExpr:  # type: ignore[misc]
        return _ShapeExpr(to_dims(list(values) if not isinstance(values, _ShapeExpr) else values, "ShapeExpr"))


def get_shape_of(expr: Expr) -> Expr:
    """The shape of a tensor expression: ``R.shape([...])`` of its known dims, or the
    Shape-typed variable that shapes it (TVM's ``relax.get_shape_of``; byocc has no
    ``R.shape_of`` for a shape known only at run time)."""
    si = getattr(expr, "struct_info", None)
    if not isinstance(si, TensorStructInfo):
        raise InputError(f"get_shape_of: expected a tensor, got an expression of type {si}")
    if si.shape is not None:
        return _ShapeExpr(tuple(si.shape))
    if si.shape_var is not None:
        return si.shape_var
    raise UnsupportedError("get_shape_of: the tensor's shape is unknown and byocc has no R.shape_of")


def prim_value(value: Any, dtype: str | None = None) -> _PrimValue:
    """A primitive scalar value: int -> ``int64``, float -> ``float64``, bool -> ``bool``."""
    if dtype is None:
        if isinstance(value, bool):
            dtype = "bool"
        elif isinstance(value, float):
            dtype = "float64"
        elif isinstance(value, (int, PrimExpr)):
            dtype = "int64"
        else:
            raise InputError(f"prim_value: expected a number, got {value!r}")
    return _PrimValue(value, dtype)


PrimValue = prim_value


def StringImm(value: str, span: Any = None) -> _StringImm:
    """A string literal expression (``R.str("...")``)."""
    if not isinstance(value, str):
        raise InputError(f"StringImm: expected a string, got {value!r}")
    return _StringImm(value)


def extern(name: str, struct_info: StructInfo | None = None) -> _ExternFunc:
    """``R.ExternFunc(name)``: an external packed function."""
    if struct_info is None:
        return _ExternFunc(name)
    return _ExternFunc(name, struct_info)


ExternFunc = extern


class Tuple(Factory):
    """``Tuple(fields)``: its struct info is the tuple of its fields' struct info."""

    target = _Tuple

    def __new__(cls, fields: Sequence[Expr], span: Any = None) -> _Tuple:  # type: ignore[misc]
        fields = tuple(fields)
        for f in fields:
            if not isinstance(f, Expr):
                raise InputError(f"Tuple: fields must be expressions, got {f!r}")
        return _Tuple(fields, TupleStructInfo(tuple(f.struct_info for f in fields)))


class TupleGetItem(Factory):
    """``TupleGetItem(tuple_value, index)``."""

    target = _TupleGetItem

    def __new__(cls, tuple_value: Expr, index: int, span: Any = None) -> _TupleGetItem:  # type: ignore[misc]
        si = getattr(tuple_value, "struct_info", None)
        if isinstance(si, TupleStructInfo):
            if not 0 <= index < len(si.fields):
                raise InputError(f"TupleGetItem: index {index} is out of range for a tuple of "
                                 f"{len(si.fields)} fields")
            field = si.fields[index]
        elif si is None or isinstance(si, ObjectStructInfo):
            field = ObjectStructInfo()
        else:
            raise InputError("TupleGetItem: only tuples can be indexed")
        return _TupleGetItem(tuple_value, index, field)


class Call(Factory):
    """``Call(op, args, attrs=None, sinfo_args=None)``.

    An operator (an :class:`~byocc.ir.Op` or its name) goes through the op registry
    (attributes completed, struct info inferred); any other callee gets its return type.
    """

    target = _Call

    def __new__(cls, op: Any, args: Sequence[Expr], attrs: Any = None,  # type: ignore[misc]
                sinfo_args: Sequence[StructInfo] | None = None, span: Any = None) -> _Call:
        from byocc.ops import infer_struct_info
        from byocc.ops import make_call

        sinfo_args = [_check_sinfo(si, "Call") for si in sinfo_args or ()]
        if isinstance(op, str):
            op = Op.get(op, create=True)
        if isinstance(op, Op):
            return make_call(op, tuple(args), attrs, tuple(sinfo_args or ()))
        call = _Call(op, tuple(args), None, tuple(sinfo_args or ()))
        return _Call(call.op, call.args, None, call.sinfo_args, infer_struct_info(call))


class Function(Factory):
    """``Function(params, body, ret_struct_info=None, is_pure=True, attrs=None)``.

    A body that is not a :class:`~byocc.ir.SeqExpr` is wrapped in one; the return type
    defaults to the body's. ``ret_ty`` is TVM 0.27's name for ``ret_struct_info``.
    """

    target = _Function

    def __new__(cls, params: Sequence[_Var], body: Expr, ret_struct_info: StructInfo | None = None,  # type: ignore[misc]
                is_pure: bool = True, attrs: dict | None = None, span: Any = None, *,
                ret_ty: StructInfo | None = None) -> _Function:
        params = tuple(params)
        for p in params:
            if not isinstance(p, _Var):
                raise InputError(f"Function: parameters must be relax.Var, got {p!r}")
        if not isinstance(body, _SeqExpr):
            body = _SeqExpr((), body)
        ret = _check_sinfo(ret_struct_info if ret_struct_info is not None else ret_ty, "Function")
        if ret is None:
            ret = body.struct_info
        return _Function(params, body, ret, bool(is_pure), dict(attrs or {}))


def SeqExpr(blocks: Sequence[_BindingBlock], body: Expr, span: Any = None) -> _SeqExpr:
    """``SeqExpr(blocks, body)``."""
    return _SeqExpr(tuple(blocks), body)


def BindingBlock(bindings: Sequence, span: Any = None) -> _BindingBlock:
    """``BindingBlock(bindings)``."""
    return _BindingBlock(tuple(bindings))


def DataflowBlock(bindings: Sequence, span: Any = None) -> _DataflowBlock:
    """``DataflowBlock(bindings)``."""
    return _DataflowBlock(tuple(bindings))


def VarBinding(var: _Var, value: Expr, span: Any = None) -> _VarBinding:
    """``VarBinding(var, value)``."""
    return _VarBinding(var, value)


def MatchCast(var: _Var, value: Expr, struct_info: StructInfo, span: Any = None) -> _MatchCast:
    """``MatchCast(var, value, struct_info)``."""
    si = _check_sinfo(struct_info, "MatchCast")
    if si is None:
        raise InputError("MatchCast: the struct info to cast to is required")
    return _MatchCast(var, value, si)


__all__ = [
    "BindingBlock", "Call", "Constant", "DataflowBlock", "DataflowVar", "Expr", "ExternFunc", "Function",
    "GlobalVar", "MatchCast", "PrimValue", "SeqExpr", "ShapeExpr", "StringImm", "Tuple", "TupleGetItem",
    "Var", "VarBinding", "const", "extern", "get_shape_of", "prim_value",
]
