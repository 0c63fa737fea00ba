"""Converting "raw" values (what the parser or a pass hands over) to operands and attributes.

Raw values are Expr nodes, Python scalars (int, float, bool, str, None), lists/tuples of
raw values and symbolic dims. Operand converters turn them into Expr nodes by *kind*
(tensor, shape, prim, tuple...); attribute converters into the Python-typed values stored
in :class:`~byocc.ir.Attrs` (ints, floats, bools, strings, ``None``, tuples of ints).
Every converter raises :class:`ValueError` with a short reason; the registry turns that
into a located :class:`~byocc.ir.TypeInferenceError`.
"""

from __future__ import annotations

import struct

from byocc.ir import Constant
from byocc.ir import DataTypeImm
from byocc.ir import Expr
from byocc.ir import ExternFunc
from byocc.ir import PrimExpr
from byocc.ir import PrimValue
from byocc.ir import ShapeExpr
from byocc.ir import StringImm
from byocc.ir import TensorStructInfo
from byocc.ir import Tuple
from byocc.ir import TupleStructInfo


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


# --------------------------------------------------------------------------- operands
def make_scalar_constant(value, dtype: str | None = None) -> Constant:
    """``R.const(value)``: a rank-0 Constant (default dtypes bool / int32 / float32)."""
    import numpy as np

    if dtype is None:
        if isinstance(value, bool):
            dtype = "bool"
        elif isinstance(value, int):
            dtype = "int32"
        else:
            dtype = "float32"
    return Constant(np.array(value, dtype=dtype), TensorStructInfo((), dtype))


def tuple_struct_info(fields) -> TupleStructInfo:
    return TupleStructInfo(tuple(getattr(f, "struct_info", None) for f in fields))


def make_tuple(fields, span=None) -> Tuple:
    fields = tuple(fields)
    return Tuple(fields, tuple_struct_info(fields), span)


def to_tensor(v):
    if isinstance(v, Expr):
        return v
    if isinstance(v, (bool, int, float)):
        return make_scalar_constant(v)
    raise ValueError(f"expected a tensor expression, got {_describe(v)}")


def to_dim(v):
    if _is_int(v) or isinstance(v, PrimExpr):
        return v
    if isinstance(v, PrimValue) and (_is_int(v.value) or isinstance(v.value, PrimExpr)):
        return v.value
    raise ValueError(f"expected an integer dimension, got {_describe(v)}")


def to_shape(v):
    if isinstance(v, (list, tuple)):
        return ShapeExpr(tuple(to_dim(d) for d in v))
    if isinstance(v, Expr):
        return v
    raise ValueError(f"expected a shape, got {_describe(v)}")


def _constant_scalar(v):
    """The Python value of a rank-0 Constant with known data, else None."""
    if isinstance(v, Constant) and v.data is not None and getattr(v.data, "ndim", None) == 0:
        return v.data.item()
    return None


def to_prim(v):
    if isinstance(v, PrimValue):
        return v
    scalar = _constant_scalar(v)
    if scalar is not None:
        v = scalar
    if isinstance(v, bool):
        return PrimValue(v, "bool")
    if _is_int(v) or isinstance(v, PrimExpr):
        return PrimValue(v, "int64")
    if isinstance(v, float):
        return PrimValue(v, "float64")
    if isinstance(v, Expr):
        return v
    raise ValueError(f"expected a primitive value, got {_describe(v)}")


def to_prim_tuple(v):
    if isinstance(v, (list, tuple)):
        return make_tuple(to_prim(x) for x in v)
    if isinstance(v, Tuple):
        if any(not isinstance(f, PrimValue) for f in v.fields):
            return make_tuple((to_prim(f) for f in v.fields), v.span)
        return v if v.struct_info is not None else make_tuple(v.fields, v.span)
    if _is_int(v) or isinstance(v, PrimExpr):
        return make_tuple([to_prim(v)])
    if isinstance(v, Expr):
        return v
    raise ValueError(f"expected a tuple of integers, got {_describe(v)}")


def to_tuple(v):
    if isinstance(v, (list, tuple)):
        return make_tuple(to_tensor(x) for x in v)
    if isinstance(v, Tuple) and v.struct_info is None:
        return make_tuple((to_tensor(f) for f in v.fields), v.span)
    if isinstance(v, Expr) and isinstance(getattr(v, "struct_info", None), TensorStructInfo):
        return make_tuple([v])  # a lone tensor argument is wrapped, as TVM's Python API does
    if isinstance(v, Expr):
        return v
    raise ValueError(f"expected a tuple, got {_describe(v)}")


def to_extern(v):
    if isinstance(v, str):
        return ExternFunc(v)
    if isinstance(v, StringImm):
        return ExternFunc(v.value)
    if isinstance(v, Expr):
        return v
    raise ValueError(f"expected a function or a symbol name, got {_describe(v)}")


def to_any(v):
    if isinstance(v, Expr):
        return v
    if isinstance(v, (list, tuple)):
        return make_tuple(to_any(x) for x in v)
    if isinstance(v, str):
        return StringImm(v)
    if isinstance(v, (bool, int, float)) or isinstance(v, PrimExpr):
        return to_prim(v)
    raise ValueError(f"expected an expression, got {_describe(v)}")


def to_dtype_imm(v):
    if isinstance(v, str):
        return DataTypeImm(v)
    if isinstance(v, Expr):
        return v
    raise ValueError(f"expected a dtype, got {_describe(v)}")


def to_str_imm(v):
    if isinstance(v, str):
        return StringImm(v)
    if isinstance(v, Expr):
        return v
    raise ValueError(f"expected a string, got {_describe(v)}")


OPERAND_KINDS = {
    "dtype_imm": to_dtype_imm,
    "str_imm": to_str_imm,
    "tensor": to_tensor,
    "shape": to_shape,
    "prim": to_prim,
    "prim_tuple": to_prim_tuple,
    "tuple": to_tuple,
    "extern": to_extern,
    "any": to_any,
}


# --------------------------------------------------------------------------- attributes
def _unwrap(v):
    """Literal Expr wrappers (PrimValue, StringImm, DataTypeImm) -> their Python value."""
    if isinstance(v, PrimValue):
        return v.value
    if isinstance(v, (StringImm, DataTypeImm)):
        return v.value
    return v


def attr_int(v):
    v = _unwrap(v)
    if _is_int(v):
        return v
    if isinstance(v, float) and v.is_integer():
        return int(v)
    raise ValueError(f"expected an integer, got {_describe(v)}")


def attr_float(v):
    v = _unwrap(v)
    if _is_number(v):
        return float(v)
    if isinstance(v, str) and v in ("inf", "-inf", "nan"):
        return float(v)
    raise ValueError(f"expected a number, got {_describe(v)}")


def attr_bool(v):
    v = _unwrap(v)
    if isinstance(v, bool):
        return v
    if _is_int(v) and v in (0, 1):
        return bool(v)
    raise ValueError(f"expected True or False, got {_describe(v)}")


def attr_str(v):
    v = _unwrap(v)
    if isinstance(v, str):
        return v
    raise ValueError(f"expected a string, got {_describe(v)}")


def attr_dtype(v):
    v = _unwrap(v)
    if isinstance(v, str) and v not in ("", "void"):
        return v
    raise ValueError(f"expected a dtype string, got {_describe(v)}")


def attr_opt_dtype(v):
    v = _unwrap(v)
    if v is None or v in ("", "void"):
        return None  # legacy spelling of "unset"
    return attr_dtype(v)


def attr_ints(v):
    v = _unwrap(v)
    if _is_int(v):
        return (v,)
    if isinstance(v, ShapeExpr):
        v = v.values
    if isinstance(v, Tuple):
        v = v.fields
    if isinstance(v, (list, tuple)):
        return tuple(attr_int(x) for x in v)
    raise ValueError(f"expected a list of integers, got {_describe(v)}")


def _optional(conv):
    def f(v):
        if v is None:
            return None
        return conv(v)

    return f


def attr_float32_imm(v):
    """``Optional<FloatImm>`` (attention ``scale``): stored as a float32 PrimValue, printed
    ``T.float32(0.125)``."""
    if v is None:
        return None
    if isinstance(v, PrimValue) and isinstance(v.value, float):
        return v
    if _is_number(v):
        return PrimValue(float(v), "float32")
    if isinstance(v, PrimValue) and _is_number(v.value):
        return PrimValue(float(v.value), v.dtype if v.dtype.startswith("float") else "float32")
    raise ValueError(f"expected a float, got {_describe(v)}")


def attr_float32_imms(v):
    """``Array<FloatImm>`` (resize2d ``roi``): a tuple of float32 PrimValues."""
    v = _unwrap(v)
    if _is_number(v) or isinstance(v, PrimValue):
        v = (v,)
    if isinstance(v, Tuple):
        v = v.fields
    if isinstance(v, (list, tuple)):
        return tuple(attr_float32_imm(x) for x in v)
    raise ValueError(f"expected a list of floats, got {_describe(v)}")


def attr_int_or_ints(v):
    """split's ``indices_or_sections``: an int (sections) or a tuple of ints (indices)."""
    v = _unwrap(v)
    if _is_int(v):
        return v
    return attr_ints(v)


def attr_any(v):
    if isinstance(v, list):
        return tuple(attr_any(x) for x in v)
    if isinstance(v, tuple):
        return tuple(attr_any(x) for x in v)
    return v


ATTR_KINDS = {
    "int": attr_int,
    "float": attr_float,
    "bool": attr_bool,
    "str": attr_str,
    "dtype": attr_dtype,
    "opt_dtype": attr_opt_dtype,
    "ints": attr_ints,
    "opt_ints": _optional(attr_ints),
    "opt_int": _optional(attr_int),
    "opt_str": _optional(attr_str),
    "opt_float": _optional(attr_float),
    "float32_imm": attr_float32_imm,
    "float32_imms": lambda v: None if v is None else attr_float32_imms(v),
    "int_or_ints": attr_int_or_ints,
    "any": attr_any,
}


def _describe(v) -> str:
    if isinstance(v, Expr):
        return type(v).__name__
    if isinstance(v, str):
        return f"string {v!r}"
    if v is None:
        return "None"
    return f"{type(v).__name__} {v!r}"


# --------------------------------------------------------------------------- memo keys
_LIST = object()  # key tags: a list, a tuple, a float (1 == 1.0 == True hash alike)
_TUPLE = object()
_FLOAT = object()
_TRUE = object()
_FALSE = object()
_NONE = object()
_pack_float = struct.Struct("<d").pack  # a float's exact bits: -0.0 and 0.0 differ


def literal_key(v: object) -> object:
    """A hashable key of a raw attribute or keyword value, equal only for values of the same
    type and value (nested lists and tuples included), for memo tables; None for a value
    that is not a plain Python literal (an Expr, a struct info, an array...)."""
    t = type(v)
    if t is str or t is int:
        return v
    if t is bool:
        return _TRUE if v else _FALSE
    if v is None:
        return _NONE
    if t is float:
        return (_FLOAT, _pack_float(v))
    if t is list or t is tuple:
        parts: list[object] = [_LIST if t is list else _TUPLE]
        for x in v:  # type: ignore[attr-defined]
            tx = type(x)
            if tx is int or tx is str:
                parts.append(x)
                continue
            k = literal_key(x)
            if k is None:
                return None
            parts.append(k)
        return tuple(parts)
    return None
