"""Evaluating an operator call with its numpy reference: the one entry point.

The interpreter (on run-time values), FoldConstant and the ONNX importer (on constant
operands) all evaluate calls here. The references come from one table
(:func:`byocc.ops.reference.reference_table`), built the first time one is asked for, so
importing ``byocc.ops`` imports neither numpy nor the reference modules; an
:class:`~byocc.ops.OpDef` is never changed to attach one (``OpDef.reference`` reads this
table). Calling convention (operands, attributes as keywords): :mod:`byocc.ops.reference`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from collections.abc import Sequence
from typing import Any

from byocc.ir import Call
from byocc.ir import Constant
from byocc.ir import DataTypeImm
from byocc.ir import Expr
from byocc.ir import Op
from byocc.ir import PrimValue
from byocc.ir import ShapeExpr
from byocc.ir import StringImm
from byocc.ir import TensorStructInfo
from byocc.ir import Tuple
from byocc.ir import TupleStructInfo
from byocc.ir import UnsupportedError

_TABLE: dict[str, Callable[..., Any]] = {}


def reference_of(name: str) -> Callable[..., Any] | None:
    """The numpy reference of operator ``name`` (``relax.nn.conv2d``), or None."""
    if not _TABLE:
        from .reference import reference_table

        _TABLE.update(reference_table())
    return _TABLE.get(name)


def bound_reference(call: Call) -> Callable[..., Any]:
    """``call``'s reference with its attributes bound: ``fn(*operands)`` evaluates it.
    UnsupportedError (located at the call) when the callee has no reference."""
    op = call.op
    fn = reference_of(op.name) if isinstance(op, Op) else None
    if fn is None:
        name = op.name if isinstance(op, Op) else type(op).__name__
        raise UnsupportedError(f"byocc has no numpy reference for {name}", call.span)
    if call.attrs is None:
        return fn
    kwargs = {k: (v.value if isinstance(v, PrimValue) else v) for k, v in call.attrs.items()}
    return functools.partial(fn, **kwargs)


# --------------------------------------------------------------------------- constant operands
_UNKNOWN = object()


def _known(expr: Expr) -> Any:
    if isinstance(expr, Constant):
        return expr.data if expr.data is not None else _UNKNOWN
    if isinstance(expr, ShapeExpr):
        return tuple(expr.values) if all(isinstance(d, int) for d in expr.values) else _UNKNOWN
    if isinstance(expr, PrimValue):
        return expr.value if isinstance(expr.value, (int, float, bool)) else _UNKNOWN
    if isinstance(expr, (StringImm, DataTypeImm)):
        return expr.value
    if isinstance(expr, Tuple):  # a tuple operand: its fields are leaves in the normal form
        out = []
        for f in expr.fields:
            v = _known(f) if isinstance(f, (Constant, PrimValue, ShapeExpr)) else _UNKNOWN
            if v is _UNKNOWN:
                return _UNKNOWN
            out.append(v)
        return out
    return _UNKNOWN


def constant_operands(args: Sequence[Expr]) -> list | None:
    """The values of ``args`` when every one is a known constant, else None."""
    out = []
    for a in args:
        v = _known(a)
        if v is _UNKNOWN:
            return None
        out.append(v)
    return out


# --------------------------------------------------------------------------- evaluation
def evaluate_call(call: Call, operands: Sequence[Any] | None = None) -> Any:
    """The value of ``call`` computed by its operator's reference: on ``operands`` (the
    values of ``call.args``), or on the constants ``call.args`` hold. Floating-point
    exceptions give IEEE results silently. UnsupportedError when the operator has no
    reference or an operand is not a known constant; a reference's own errors propagate."""
    import numpy as np

    fn = bound_reference(call)
    if operands is None:
        operands = constant_operands(call.args)
        if operands is None:
            raise UnsupportedError(f"{call.op.name}: an operand is not a known constant", call.span)
    with np.errstate(all="ignore"):
        return fn(*operands)


def constant_of(array) -> Constant:
    """A Constant holding ``array`` with its exact struct info."""
    import numpy as np

    from .reference import dtype_name

    array = np.asarray(array)
    if not array.flags.c_contiguous:
        array = array.copy(order="C")
    return Constant(array, TensorStructInfo(tuple(int(d) for d in array.shape), dtype_name(array.dtype)))


def fold_call(call: Call) -> Expr | None:
    """``call`` on constant operands evaluated into a Constant (a Tuple of Constants for a
    tuple-valued op), or None when it cannot be: an operand is not known, the operator has
    no reference, the reference raises, or its result disagrees with the call's struct
    info (a dtype of the same kind is cast, as the struct info says)."""
    operands = constant_operands(call.args)
    if operands is None or not isinstance(call.op, Op) or reference_of(call.op.name) is None:
        return None
    try:
        out = evaluate_call(call, operands)
    except Exception:  # noqa: BLE001  (a reference that cannot evaluate these operands: keep the call)
        return None
    si = call.struct_info
    if isinstance(si, TupleStructInfo):
        if not isinstance(out, (list, tuple)) or len(out) != len(si.fields):
            return None
        fields = [_as_constant(v, f) for v, f in zip(out, si.fields)]
        if any(f is None for f in fields):
            return None
        return Tuple(tuple(fields), TupleStructInfo(tuple(f.struct_info for f in fields)), call.span)
    return _as_constant(out, si)


def _as_constant(value: Any, si: Any) -> Constant | None:
    import numpy as np

    from .reference import np_dtype

    if not isinstance(si, TensorStructInfo) or si.dtype is None:
        return None
    arr = np.asarray(value)
    want = np_dtype(si.dtype)
    if arr.dtype != want:
        if arr.dtype.kind != want.kind:
            return None
        arr = arr.astype(want)
    if si.shape is not None:
        if len(si.shape) != arr.ndim or any(isinstance(d, int) and d != n for d, n in zip(si.shape, arr.shape)):
            return None
    elif si.ndim not in (-1, arr.ndim):
        return None
    return constant_of(arr)


__all__ = [
    "bound_reference", "constant_of", "constant_operands", "evaluate_call", "fold_call",
    "reference_of",
]
