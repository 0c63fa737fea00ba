"""Value-level predicates of the matcher: attribute equality (``has_attr``), structural
equality of expressions (``is_expr``) and struct-info compatibility (``has_ty``).
docs/partitioning.md#pattern-language."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from byocc.ir import Call
from byocc.ir import Constant
from byocc.ir import DataTypeImm
from byocc.ir import Expr
from byocc.ir import ExternFunc
from byocc.ir import GlobalVar
from byocc.ir import Op
from byocc.ir import PrimValue
from byocc.ir import ShapeExpr
from byocc.ir import StringImm
from byocc.ir import TirVar
from byocc.ir import Tuple
from byocc.ir import TupleGetItem
from byocc.ir import Var
from byocc.ir.arith import can_prove_equal
from byocc.ir.arith import linear_difference
from byocc.ir.arith import provably_different
from byocc.ir.prim import substitute_dim
from byocc.ir.struct_info import FuncStructInfo
from byocc.ir.struct_info import ObjectStructInfo
from byocc.ir.struct_info import PrimStructInfo
from byocc.ir.struct_info import ShapeStructInfo
from byocc.ir.struct_info import StructInfo
from byocc.ir.struct_info import TensorStructInfo
from byocc.ir.struct_info import TupleStructInfo

from .printing import op_display_name


def is_dtype_field(op: object, field: str) -> bool:
    """True if an operator attribute holds a dtype (a string never equals one, docs/partitioning.md#pattern-language)."""
    op_def = getattr(op, "op_def", None)
    schema = getattr(op_def, "attrs", None) if op_def is not None else None
    if schema:
        try:
            for entry in schema:
                name = getattr(entry, "name", None)
                if name is None and isinstance(entry, tuple) and entry:
                    name = entry[0]
                if name == field:
                    kind = getattr(entry, "type", None) or getattr(entry, "kind", None)
                    if kind is None and isinstance(entry, tuple) and len(entry) > 1:
                        kind = entry[1]
                    if kind is not None:
                        return "dtype" in str(getattr(kind, "__name__", kind)).lower()
                    break
        except TypeError:
            pass
    return field == "dtype" or field.endswith("_dtype")


def _norm(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_norm(v) for v in value)
    if isinstance(value, tuple):
        return tuple(_norm(v) for v in value)
    return value


def values_equal(a: Any, b: Any) -> bool:
    """Structural equality of attribute values (any kind: literals, tuples, dims...):
    type-strict for bool/int/float."""
    a, b = _norm(a), _norm(b)
    if isinstance(a, tuple) or isinstance(b, tuple):
        return (isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b)
                and all(values_equal(x, y) for x, y in zip(a, b)))
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        # an int subclass (``T.int64(2)``) is an int; an int never equals a float
        return isinstance(a, int) == isinstance(b, int) and a == b
    if a is None or b is None:
        return a is b
    if isinstance(a, str) or isinstance(b, str):
        return type(a) is type(b) and a == b
    return can_prove_equal(a, b)  # symbolic dims


def match_call_attrs(call: Call, wanted: Mapping[str, Any]) -> tuple[bool, str]:
    """``(ok, reason)``: does ``call`` carry every wanted attribute with an equal value?"""
    attrs = call.attrs
    if not wanted:
        return True, ""
    if attrs is None:
        return False, f"{op_display_name(getattr(call.op, 'name', '?'))} has no attributes"
    for key, value in wanted.items():
        if key not in attrs:
            return False, f"no attribute {key!r}"
        have = attrs[key]
        if isinstance(value, str) and is_dtype_field(call.op, key):
            return False, f"attribute {key!r} is a dtype; a string never equals it"
        if not values_equal(value, have):
            return False, f"attribute {key}={have!r}, expected {value!r}"
    return True, ""


def match_dict(have: Mapping[str, Any], wanted: Mapping[str, Any]) -> tuple[bool, str]:
    """``(ok, reason)`` for function attributes (a plain dict)."""
    for key, value in wanted.items():
        if key not in have:
            return False, f"no attribute {key!r}"
        if not values_equal(value, have[key]):
            return False, f"attribute {key}={have[key]!r}, expected {value!r}"
    return True, ""


def expr_equal_same_vars(a: Expr, b: Expr) -> bool:
    """Structural equality of two expressions (variables by identity, spans ignored)."""
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    o: Any = b  # an expression of the type of a (checked)
    if isinstance(a, (Op, Var)):
        return False
    if isinstance(a, GlobalVar):
        return a.name_hint == o.name_hint
    if isinstance(a, Constant):
        if a.struct_info != o.struct_info or a.data is None or o.data is None:
            return False
        return a.data.dtype == o.data.dtype and a.data.shape == o.data.shape and a.data.tobytes() == o.data.tobytes()
    if isinstance(a, ShapeExpr):
        return len(a.values) == len(o.values) and all(values_equal(x, y) for x, y in zip(a.values, o.values))
    if isinstance(a, PrimValue):
        return a.dtype == o.dtype and values_equal(a.value, o.value)
    if isinstance(a, (StringImm, DataTypeImm)):
        return a.value == o.value
    if isinstance(a, ExternFunc):
        return a.global_symbol == o.global_symbol
    if isinstance(a, Tuple):
        return len(a.fields) == len(o.fields) and all(expr_equal_same_vars(x, y) for x, y in zip(a.fields, o.fields))
    if isinstance(a, TupleGetItem):
        return a.index == o.index and expr_equal_same_vars(a.tuple_value, o.tuple_value)
    if isinstance(a, Call):
        return (expr_equal_same_vars(a.op, o.op) and len(a.args) == len(o.args)
                and all(expr_equal_same_vars(x, y) for x, y in zip(a.args, o.args))
                and a.attrs == o.attrs and a.sinfo_args == o.sinfo_args)
    return False


def dims_agree(x: Any, y: Any, bound: dict[TirVar, Any] | None) -> bool:
    """Can pattern dimension ``x`` equal value dimension ``y``? With ``bound`` (the shape
    variables the match has fixed so far), a bare shape variable of the pattern is fixed to
    ``y`` the first time and must agree with it afterwards, and other dimensions are read
    with the fixed variables (``2 * m`` once ``m`` is 4). False when the two provably differ
    or ``k * v + c == y`` has no integer solution (TVM's simplifier rules), true otherwise.

    TVM 0.27 accumulates these equalities as one condition and simplifies it; its
    simplifier misses some contradictions (``k == 4`` and ``k == 8`` when another equality
    sorts between them; ``m == 1`` with ``2 * m == 4``) and then matches. byocc does not."""
    if bound is not None and isinstance(x, TirVar):
        have = bound.get(x)
        if have is None:
            bound[x] = y
            return True
        x = have
    elif bound and not isinstance(x, int):
        x = substitute_dim(x, bound)
    if isinstance(x, int) and isinstance(y, int):
        return x == y
    if can_prove_equal(x, y):
        return True
    if provably_different(x, y):
        return False
    return not _no_integer_solution(x, y)


def _no_integer_solution(x: Any, y: Any) -> bool:
    """``x - y`` is ``k * v + c`` (one variable) and ``k`` does not divide ``c``."""
    diff = linear_difference(x, y)
    if diff is None:
        return False
    nonzero, const = diff
    return len(nonzero) == 1 and const % nonzero[0] != 0


def struct_info_base_of(base: StructInfo | None, derived: StructInfo | None,
                        bound: dict[TirVar, Any] | None = None) -> bool:
    """Is ``derived`` acceptable where ``base`` is expected? Symbolic dims that are not
    provably different are accepted (TVM keeps them as a run-time condition)."""
    if isinstance(base, ObjectStructInfo):
        return True
    if derived is None:
        return False
    if isinstance(base, TensorStructInfo):
        if not isinstance(derived, TensorStructInfo):
            return False
        if base.dtype is not None and base.dtype != derived.dtype:
            return False
        if base.ndim != -1 and base.ndim != derived.ndim:
            return False
        if base.shape is not None:
            if derived.shape is None or len(derived.shape) != len(base.shape):
                return False
            for x, y in zip(base.shape, derived.shape):
                if not dims_agree(x, y, bound):
                    return False
        return True
    if isinstance(base, TupleStructInfo):
        return (isinstance(derived, TupleStructInfo) and len(base.fields) == len(derived.fields)
                and all(struct_info_base_of(x, y, bound) for x, y in zip(base.fields, derived.fields)))
    if isinstance(base, ShapeStructInfo):
        if not isinstance(derived, ShapeStructInfo):
            return False
        if base.ndim != -1 and base.ndim != derived.ndim:
            return False
        if base.values is not None and derived.values is not None:
            return all(dims_agree(x, y, bound) for x, y in zip(base.values, derived.values))
        return base.values is None
    if isinstance(base, PrimStructInfo):
        return isinstance(derived, PrimStructInfo) and base.dtype == derived.dtype
    if isinstance(base, FuncStructInfo):
        return isinstance(derived, FuncStructInfo)
    return base == derived
