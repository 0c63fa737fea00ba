"""``from byocc.script import tirx as T`` (also ``tvm.tir``): TIR scalar names as values.

* ``T.int64(2)``, ``T.float32(0.5)``: typed constants (:class:`IntImm` is an ``int``,
  :class:`FloatImm` a ``float``, each also carrying ``dtype`` and ``value``);
* ``T.int64()``: a fresh symbolic variable (a :class:`~byocc.ir.TirVar`, as TVM names it
  ``v``); ``T.Var("n", "int64")`` (or ``ty="int64"``) a named one; ``T.IntImm("int64", 2)``;
* ``T.min(a, b)`` / ``T.max(a, b)`` on dimensions.

Python also evaluates names of TIR code inside a decorated class (``@T.prim_func``,
``T.handle``, ``T.Buffer(...)``) that byocc does not model: any other attribute is an
inert placeholder the parser reads from the source instead.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any

from byocc.ir import Dim
from byocc.ir import InputError
from byocc.ir import PrimExpr
from byocc.ir import PrimMinMax
from byocc.ir import TirVar
from byocc.relax._factory import Factory

from ._source import Placeholder

_INT_DTYPES = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
_FLOAT_DTYPES = ("float16", "float32", "float64", "bfloat16")


class IntImm(int):
    """An integer constant of a dtype (``T.int64(2)``); ``IntImm("int64", 2)`` as TVM
    spells it. Behaves as the int it is."""

    dtype: str

    def __new__(cls, dtype: str, value: int) -> IntImm:
        if isinstance(value, bool) and dtype != "bool" or not isinstance(value, int):
            raise InputError(f"IntImm: expected an int value, got {value!r}")
        out = super().__new__(cls, value)
        out.dtype = dtype
        return out

    @property
    def value(self) -> int:
        return int(self)


class FloatImm(float):
    """A floating-point constant of a dtype (``T.float32(0.5)``)."""

    dtype: str

    def __new__(cls, dtype: str, value: float) -> FloatImm:
        out = super().__new__(cls, value)
        out.dtype = dtype
        return out

    @property
    def value(self) -> float:
        return float(self)


class Var(Factory):
    """``T.Var(name, dtype="int64")``: a symbolic variable; ``isinstance(v, T.Var)`` holds
    for every :class:`~byocc.ir.TirVar`."""

    target = TirVar

    def __new__(cls, name: str = "v", dtype: Any = "int64", span: Any = None, *,  # type: ignore[misc]
                ty: Any = None) -> TirVar:
        if ty is not None:  # TVM 0.27's keyword
            dtype = ty
        dtype = getattr(dtype, "__name__", dtype)  # T.Var("n", T.int64)
        if not isinstance(name, str) or not isinstance(dtype, str):
            raise InputError(f"T.Var: expected a name and a dtype string, got {name!r}, {dtype!r}")
        return TirVar(name, dtype)


def _scalar(dtype: str) -> Callable[..., Any]:
    def make(value: Any = None, is_size_var: bool = False) -> Any:
        if value is None:
            return TirVar("v", dtype)
        if dtype in _INT_DTYPES:
            return IntImm(dtype, value)
        if dtype == "bool":
            return bool(value)
        return FloatImm(dtype, value)

    make.__name__ = make.__qualname__ = dtype
    make.__doc__ = f"``T.{dtype}(value)``: a {dtype} constant; ``T.{dtype}()``: a fresh variable."
    return make


_SCALARS = {dt: _scalar(dt) for dt in (*_INT_DTYPES, *_FLOAT_DTYPES, "bool")}
globals().update({k: v for k, v in _SCALARS.items() if k != "bool"})


def min(a: Dim, b: Dim) -> Dim:  # noqa: A001  (TIR's name)
    """``T.min(a, b)`` of two dimensions (folded when both are ints)."""
    if isinstance(a, int) and isinstance(b, int):
        return a if a <= b else b
    return PrimMinMax("min", a, b)


def max(a: Dim, b: Dim) -> Dim:  # noqa: A001  (TIR's name)
    """``T.max(a, b)`` of two dimensions (folded when both are ints)."""
    if isinstance(a, int) and isinstance(b, int):
        return a if a >= b else b
    return PrimMinMax("max", a, b)


#: ``tvm.tirx.expr``: the expression classes under their module path (``tvm.tirx.expr.Var``).
expr = types.SimpleNamespace(Var=Var, IntImm=IntImm, FloatImm=FloatImm, PrimExpr=PrimExpr)


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    if name == "bool":
        return _SCALARS["bool"]
    return Placeholder(f"T.{name}")


__all__ = ["FloatImm", "IntImm", "PrimExpr", "Var", "max", "min", *_INT_DTYPES, *_FLOAT_DTYPES]
