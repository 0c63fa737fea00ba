"""``from byocc.script import relax as R``: ``@R.function`` and TVMScript's ``R`` names.

``@R.function`` (or ``@R.function(pure=False, private=True)``) on a top-level def parses
its source and returns the :class:`~byocc.ir.Function`; on a method of an
``@I.ir_module`` class it returns the def unchanged (the class decorator parses the whole
class).

Outside a script the names are Python values, as in TVM:

* types: ``R.Tensor((2, n), "float32")``, ``R.Tuple(...)``, ``R.Shape([...])``,
  ``R.Object()`` / ``R.Any()``, ``R.Prim("int64")``, ``R.Callable(params, ret)`` give byocc
  struct info. Python also evaluates them in the annotations of a decorated def, where a
  dimension may be a string (``R.Tensor(("m", "n"))``) that only the parser can resolve:
  then the value is a :class:`TypeProxy`, which is fine as an annotation and an error
  anywhere a real type is needed (evaluating an annotation never raises);
* expressions: ``R.shape([2, 3])``, ``R.const(1.0)``, ``R.prim_value(n)``, ``R.str("s")``,
  ``R.tuple(a, b)``, ``R.ExternFunc("f")``;
* operators: ``R.add(x, y)``, ``R.nn.relu(x)``... build typed calls (:mod:`byocc.relax.op`).
"""

from __future__ import annotations

import importlib
import typing

from byocc.ir import Expr
from byocc.ir import FuncStructInfo
from byocc.ir import Function
from byocc.ir import InputError
from byocc.ir import ObjectStructInfo
from byocc.ir import PrimExpr
from byocc.ir import PrimStructInfo
from byocc.ir import ShapeExpr
from byocc.ir import ShapeStructInfo
from byocc.ir import StructInfo
from byocc.ir import TensorStructInfo
from byocc.ir import TupleStructInfo
from byocc.ir import Var

from ._source import caller_scope
from ._source import parse_source


class AnnotationError(InputError, ValueError):
    """A :class:`TypeProxy` used where a real type is needed (TVM raises ``ValueError``)."""


class TypeProxy:
    """An ``R.<type>(...)`` whose arguments only a script can resolve (a dimension named by
    a string, ``R.Tensor(("n", 4))``): what Python's evaluation of an annotation gives. The
    parser reads the annotation from the source; :meth:`as_struct_info` (anything else
    wanting a type) raises :class:`AnnotationError` with ``reason``."""

    __slots__ = ("reason", "text")

    def __init__(self, text: str, reason: str) -> None:
        self.text = text
        self.reason = reason

    def as_struct_info(self) -> StructInfo:
        raise AnnotationError(f"{self.text} is not a type outside a script: {self.reason}")

    def __repr__(self) -> str:
        return f"<annotation {self.text}>"


_STRING_DIM = ("a dimension named by a string is only allowed in the parameter and return "
               "annotations of a script (outside one, use T.int64() or T.Var(\"n\", \"int64\"))")


def _type(value: typing.Any, what: str) -> StructInfo | TypeProxy:
    """A struct-info argument: struct info as is, a type name (``R.Tensor``) called."""
    if isinstance(value, (StructInfo, TypeProxy)):
        return value
    if callable(value) and getattr(value, "__module__", None) == __name__:
        return _type(value(), what)
    return TypeProxy(what, f"expected a type such as R.Tensor(...), got {value!r}")


def _dims(values: typing.Any, what: str) -> tuple | TypeProxy:
    if isinstance(values, ShapeExpr):
        return tuple(values.values)
    if not isinstance(values, (list, tuple)):
        return TypeProxy(what, f"a shape is a list or tuple, got {values!r}")
    for d in values:
        if isinstance(d, str):
            return TypeProxy(what, _STRING_DIM)
        if isinstance(d, bool) or not isinstance(d, (int, PrimExpr)):
            return TypeProxy(what, f"a dimension is an int or a symbolic variable, got {d!r}")
    return tuple(values)


def _dtype(dtype: typing.Any) -> str | None:
    if isinstance(dtype, PrimStructInfo):
        return dtype.dtype
    if dtype is None or dtype in ("void", ""):
        return None
    return str(dtype)


def Tensor(shape: typing.Any = None, dtype: typing.Any = None, vdevice: typing.Any = None,  # noqa: N802
           ndim: int = -1) -> TensorStructInfo | TypeProxy:
    """``R.Tensor(shape=None, dtype=None, vdevice=None, ndim=-1)``; ``R.Tensor("float32")``
    is a dtype alone. The shape may be a list of dims, a ShapeExpr or a Shape-typed Var."""
    what = "R.Tensor(...)"
    if isinstance(shape, str) and dtype is None:
        shape, dtype = None, shape
    if vdevice is not None:
        return TypeProxy(what, "virtual devices (vdevice=) are not supported by byocc")
    if shape is None:
        return TensorStructInfo(None, _dtype(dtype), ndim)
    if isinstance(shape, Var):
        if not isinstance(shape.struct_info, ShapeStructInfo):
            return TypeProxy(what, f"the shape variable '{shape.name_hint}' is not a shape")
        return TensorStructInfo(None, _dtype(dtype), shape.struct_info.ndim, shape)
    dims = _dims(shape, what)
    if isinstance(dims, TypeProxy):
        return dims
    return TensorStructInfo(dims, _dtype(dtype))


def Tuple(*fields: typing.Any) -> TupleStructInfo | TypeProxy:  # noqa: N802
    """``R.Tuple(a, b)`` or ``R.Tuple([a, b])``: fields are types (``R.Tensor`` alone is
    ``R.Tensor()``)."""
    if len(fields) == 1 and isinstance(fields[0], (list, tuple)):
        fields = tuple(fields[0])
    out = [_type(f, "R.Tuple(...)") for f in fields]
    for f in out:
        if isinstance(f, TypeProxy):
            return TypeProxy("R.Tuple(...)", f"field {f.text}: {f.reason}")
    return TupleStructInfo(tuple(typing.cast(StructInfo, f) for f in out))


def Shape(values: typing.Any = None, ndim: int = -1) -> ShapeStructInfo | TypeProxy:  # noqa: N802
    """``R.Shape([2, n])`` or ``R.Shape(ndim=2)``."""
    if values is None:
        return ShapeStructInfo(None, ndim)
    dims = _dims(values, "R.Shape(...)")
    return dims if isinstance(dims, TypeProxy) else ShapeStructInfo(dims)


def Object() -> ObjectStructInfo:  # noqa: N802
    """``R.Object()`` (printed ``R.Any``)."""
    return ObjectStructInfo()


def Any() -> ObjectStructInfo:  # noqa: N802
    """``R.Any()``: any value."""
    return ObjectStructInfo()


def Prim(dtype: typing.Any = None, value: typing.Any = None) -> PrimStructInfo | TypeProxy:  # noqa: N802
    """``R.Prim("int64")``: a scalar of that dtype (``value=`` a known value)."""
    dt = _dtype(dtype)
    if dt is None:
        return TypeProxy("R.Prim(...)", "a primitive type needs a dtype")
    return PrimStructInfo(dt, value)


def Callable(params: typing.Any = None, ret: typing.Any = None,  # noqa: N802
             purity: bool | None = None) -> FuncStructInfo | TypeProxy:
    """``R.Callable([param types], ret)``; no params: an opaque function (impure unless
    ``purity`` says)."""
    ret_si = _type(ret, "R.Callable(...)") if ret is not None else ObjectStructInfo()
    if isinstance(ret_si, TypeProxy):
        return ret_si
    if params is None:
        return FuncStructInfo(None, ret_si, bool(purity))
    if not isinstance(params, (list, tuple)):
        params = [params]
    ps = [_type(p, "R.Callable(...)") for p in params]
    for p in ps:
        if isinstance(p, TypeProxy):
            return p
    return FuncStructInfo(tuple(typing.cast(StructInfo, p) for p in ps), ret_si, True if purity is None else purity)


# ---------------------------------------------------------------------- expressions
def shape(values: typing.Any) -> Expr:
    """``R.shape([2, n])``: a ShapeExpr."""
    from byocc.relax import ShapeExpr as make_shape

    return make_shape(values)


def const(value: typing.Any, dtype: str | None = None) -> Expr:
    """``R.const(value, dtype=None)``: a tensor constant (see :func:`byocc.relax.const`)."""
    from byocc.relax import const as make_const

    return make_const(value, dtype)


def prim_value(value: typing.Any, dtype: str | None = None) -> Expr:
    """``R.prim_value(n)``: a primitive value (an int is ``int64``)."""
    from byocc.relax import prim_value as make_prim

    return make_prim(value, dtype)


def _tuple(*fields: Expr) -> Expr:
    """``R.tuple(a, b)``: a tuple expression."""
    from byocc.relax import Tuple as make_tuple

    return make_tuple(list(fields))


def ExternFunc(global_symbol: str, struct_info: StructInfo | None = None) -> Expr:  # noqa: N802
    """``R.ExternFunc("symbol")``: an external packed function."""
    from byocc.relax import extern

    return extern(global_symbol, struct_info)


def _string(value: str) -> Expr:
    from byocc.relax import StringImm

    return StringImm(value)


def __getattr__(name: str) -> typing.Any:
    """``R.str`` and ``R.tuple`` (builtin names), and the operator constructors of
    :mod:`byocc.relax.op` (``R.add``, ``R.nn.conv2d``...), loaded on first use."""
    if name == "str":
        return _string
    if name == "tuple":
        return _tuple
    if name.startswith("__"):
        raise AttributeError(name)
    ops = importlib.import_module("byocc.relax.op")
    value = getattr(ops, name, None)
    if value is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def function(f: object = None, *, pure: bool = True, private: bool = False,
             check_well_formed: bool = True) -> object:
    """Decorator for a Relax function written in TVMScript (see the module docstring)."""
    if f is None:
        scope = caller_scope()  # the namespace of the decorated def
        return lambda g: _function(g, scope)
    if _is_member(f):
        return f  # a method of a class; @I.ir_module parses the whole class
    return _function(f, caller_scope())


def _is_member(f: object) -> bool:
    parts = getattr(f, "__qualname__", "").split(".")
    return len(parts) > 1 and parts[-2] != "<locals>"


def _function(f: object, scope: dict) -> object:
    if not callable(f) or not hasattr(f, "__qualname__"):
        raise InputError("@R.function decorates a def")
    if _is_member(f):
        return f
    mod = parse_source(f, "@R.function", scope)
    func = mod[f.__name__] if f.__name__ in mod else next(iter(mod.functions.values()))
    if not isinstance(func, Function):
        raise InputError("@R.function: the source does not define a Relax function")
    return func


__all__ = [
    "AnnotationError", "Any", "Callable", "ExternFunc", "Object", "Prim", "Shape", "Tensor", "Tuple", "TypeProxy",
    "const", "function", "prim_value", "shape",
]

# The IRBuilder statements TVMScript's ``R`` also exports (byocc.script.ir_builder.relax):
# ``R.func_name``, ``R.arg``, ``R.emit``, ``with R.dataflow() as frame``, ``R.output``...
from .ir_builder.relax import arg  # noqa: E402
from .ir_builder.relax import dataflow  # noqa: E402
from .ir_builder.relax import emit  # noqa: E402
from .ir_builder.relax import emit_match_cast  # noqa: E402
from .ir_builder.relax import emit_var_binding  # noqa: E402
from .ir_builder.relax import emit_with_ty  # noqa: E402
from .ir_builder.relax import emit_with_type  # noqa: E402
from .ir_builder.relax import func_attr  # noqa: E402
from .ir_builder.relax import func_name  # noqa: E402
from .ir_builder.relax import func_ret_struct_info  # noqa: E402
from .ir_builder.relax import func_ret_ty  # noqa: E402
from .ir_builder.relax import func_ret_type  # noqa: E402
from .ir_builder.relax import func_ret_value  # noqa: E402
from .ir_builder.relax import output  # noqa: E402

__all__ += [
    "arg", "dataflow", "emit", "emit_match_cast", "emit_var_binding", "emit_with_ty", "emit_with_type",
    "func_attr", "func_name", "func_ret_struct_info", "func_ret_ty", "func_ret_type", "func_ret_value",
    "output",
]
