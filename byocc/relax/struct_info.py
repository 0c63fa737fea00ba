"""Struct info ("types") with TVM's constructor signatures and defaults.

TVM 0.27 names them ``TensorType``, ``TupleType``, ``ShapeType``, ``ObjectType``,
``PrimType``, ``FuncType``; older releases ``TensorStructInfo``... Both spellings are
offered. Each call returns the value-equal byocc node (:mod:`byocc.ir.struct_info`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from byocc.ir import FuncStructInfo as _Func
from byocc.ir import InputError
from byocc.ir import ObjectStructInfo as _Object
from byocc.ir import PrimExpr
from byocc.ir import PrimStructInfo as _Prim
from byocc.ir import ShapeExpr
from byocc.ir import ShapeStructInfo as _Shape
from byocc.ir import StructInfo
from byocc.ir import TensorStructInfo as _Tensor
from byocc.ir import TupleStructInfo as _Tuple
from byocc.ir import UnsupportedError
from byocc.ir import Var

from ._factory import Factory


def to_dims(values: Any, what: str) -> tuple:
    """A shape given as a list or tuple of ints / symbolic dims, checked."""
    if isinstance(values, ShapeExpr):
        return tuple(values.values)
    if not isinstance(values, (list, tuple)):
        raise InputError(f"{what}: expected a list of dimensions, got {type(values).__name__}")
    dims = []
    for d in values:
        if isinstance(d, bool) or not isinstance(d, (int, PrimExpr)):
            raise InputError(f"{what}: a dimension must be an int or a symbolic dimension, got {d!r}")
        dims.append(d)
    return tuple(dims)


def _dtype(dtype: Any) -> str | None:
    if isinstance(dtype, _Prim):
        return dtype.dtype
    if dtype is None or dtype == "void" or dtype == "":
        return None
    if not isinstance(dtype, str):
        raise InputError(f"a dtype must be a string such as \"float32\", got {dtype!r}")
    return dtype


class TensorStructInfo(Factory):
    """``TensorStructInfo(shape=None, dtype="float32", vdevice=None, ndim=-1)``.

    ``shape``: a list of dims, a :class:`~byocc.ir.ShapeExpr`, or a shape-typed Var.
    ``dtype=None`` means unknown (TVM's ``void``). Virtual devices are not supported.
    """

    target = _Tensor

    def __new__(cls, shape: Any = None, dtype: Any = "float32", vdevice: Any = None, ndim: int = -1,
                span: Any = None) -> _Tensor:  # type: ignore[misc]
        if vdevice is not None:
            raise UnsupportedError("virtual devices (vdevice=) are not supported by byocc")
        dt = _dtype(dtype)
        if shape is None:
            return _Tensor(None, dt, ndim)
        if isinstance(shape, Var):
            si = shape.struct_info
            if not isinstance(si, _Shape):
                raise InputError(f"TensorStructInfo: variable '{shape.name_hint}' is not a shape")
            return _Tensor(None, dt, si.ndim, shape)
        return _Tensor(to_dims(shape, "TensorStructInfo"), dt)


class ShapeStructInfo(Factory):
    """``ShapeStructInfo(values=None, ndim=-1)``."""

    target = _Shape

    def __new__(cls, values: Sequence | None = None, ndim: int = -1, span: Any = None) -> _Shape:  # type: ignore[misc]
        if values is None:
            return _Shape(None, ndim)
        return _Shape(to_dims(values, "ShapeStructInfo"))


class TupleStructInfo(Factory):
    """``TupleStructInfo(fields)``."""

    target = _Tuple

    def __new__(cls, fields: Sequence[StructInfo] = (), span: Any = None) -> _Tuple:  # type: ignore[misc]
        fields = tuple(fields)
        for f in fields:
            if not isinstance(f, StructInfo):
                raise InputError(f"TupleStructInfo: fields must be struct info, got {f!r}")
        return _Tuple(fields)


class ObjectStructInfo(Factory):
    """``ObjectStructInfo()`` (printed ``R.Any``)."""

    target = _Object

    def __new__(cls, span: Any = None) -> _Object:  # type: ignore[misc]
        return _Object()


class PrimStructInfo(Factory):
    """``PrimStructInfo(dtype=None, value=None)``: a scalar (``T.int64``...)."""

    target = _Prim

    def __new__(cls, dtype: str | None = None, value: Any = None, span: Any = None) -> _Prim:  # type: ignore[misc]
        if dtype is None:
            if isinstance(value, bool):
                dtype = "bool"
            elif isinstance(value, float):
                dtype = "float64"
            elif value is not None:
                dtype = "int64"
            else:
                raise InputError("PrimStructInfo needs a dtype or a value")
        return _Prim(dtype, value)


class FuncStructInfo(Factory):
    """``FuncStructInfo(params, ret, purity=True)``; ``opaque_func(ret=None, purity=True)``."""

    target = _Func

    def __new__(cls, params: Sequence[StructInfo], ret: StructInfo, purity: bool = True,
                span: Any = None) -> _Func:  # type: ignore[misc]
        return _Func(tuple(params), ret, purity)

    @staticmethod
    def opaque_func(ret: StructInfo | None = None, purity: bool = True) -> _Func:
        return _Func(None, ret if ret is not None else _Object(), purity)


# TVM 0.27 names
TensorType = TensorStructInfo
ShapeType = ShapeStructInfo
TupleType = TupleStructInfo
ObjectType = ObjectStructInfo
PrimType = PrimStructInfo
FuncType = FuncStructInfo

__all__ = [
    "FuncStructInfo", "FuncType", "ObjectStructInfo", "ObjectType", "PrimStructInfo", "PrimType",
    "ShapeStructInfo", "ShapeType", "TensorStructInfo", "TensorType", "TupleStructInfo", "TupleType",
]
