"""Constructor functions of the pattern language (TVM's ``relax/dpl/pattern.py`` names):
``wildcard``, ``is_op``, ``is_const``, ... spec/partitioning.md section 3.1."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from byocc.ir import Expr, Op, PatternError

from .pattern import (
    AttrPattern,
    CallPattern,
    ConstantPattern,
    DataflowVarPattern,
    DataTypePattern,
    DFPattern,
    ExprPattern,
    ExternFuncPattern,
    GlobalVarPattern,
    NotPattern,
    PrimArrPattern,
    ShapePattern,
    TupleGetItemPattern,
    TuplePattern,
    UnorderedTuplePattern,
    VarPattern,
    WildcardPattern,
)


def wildcard() -> WildcardPattern:
    return WildcardPattern()


def is_op(op_name: str) -> ExprPattern:
    """The operator ``op_name`` as a callee pattern (``is_op("relax.add")(a, b)``).

    An unregistered name raises, as TVM's ``Op.get`` does (a misspelt name would match
    nothing, silently); the message names the closest registered operators."""
    if not isinstance(op_name, str):
        raise PatternError(f"is_op takes an operator name, got {op_name!r}")
    import byocc.ops  # noqa: F401  (registers every operator)

    try:
        return ExprPattern(Op.get(op_name))
    except KeyError:
        pass
    import difflib

    known = Op.registered()
    close = difflib.get_close_matches(op_name, known, n=3, cutoff=0.6)
    if not close and "." not in op_name:
        close = difflib.get_close_matches("relax." + op_name, known, n=3, cutoff=0.6)
    hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
    raise PatternError(f"is_op: operator {op_name!r} is not registered{hint}")


def is_expr(expr: Expr) -> ExprPattern:
    return ExprPattern(expr)


def is_const() -> ConstantPattern:
    return ConstantPattern()


def is_var(name: str = "") -> VarPattern:
    return VarPattern(name)


def is_dfv(name: str = "") -> DataflowVarPattern:
    return DataflowVarPattern(name)


def is_gv(name: str = "") -> GlobalVarPattern:
    return GlobalVarPattern(name)


def is_tuple(fields: Sequence[DFPattern], unordered: bool = False):
    if not isinstance(fields, (list, tuple)):
        raise PatternError("fields must be a list or tuple")
    if unordered:
        return UnorderedTuplePattern(fields)
    return TuplePattern(fields)


def is_tuple_get_item(tuple_value: DFPattern, index: int | None = None) -> TupleGetItemPattern:
    return TupleGetItemPattern(tuple_value, index)


def is_shape(shape: Sequence) -> PrimArrPattern:
    if not isinstance(shape, (list, tuple)):
        raise PatternError("is_shape takes a list or tuple as input")
    return PrimArrPattern(shape)


def reject(pattern: DFPattern) -> NotPattern:
    return NotPattern(pattern)


def has_attr(attrs: Mapping[str, Any], pattern: DFPattern | None = None) -> AttrPattern:
    return (pattern if pattern is not None else wildcard()).has_attr(attrs)


def has_dtype(dtype: str, pattern: DFPattern | None = None) -> DataTypePattern:
    return DataTypePattern(pattern if pattern is not None else wildcard(), dtype)


def has_shape(shape: Sequence, pattern: DFPattern | None = None) -> ShapePattern:
    return (pattern if pattern is not None else wildcard()).has_shape(shape)


def is_call_tir(func_name: str, args=None) -> CallPattern:
    """``R.call_tir(cls.<name containing func_name>, args)``; ``args=None``: any argument."""
    if args is None:
        args = wildcard()
    elif isinstance(args, (list, tuple)):
        args = TuplePattern(args)
    return is_op("relax.call_tir")(GlobalVarPattern(func_name), args, add_constraint=False)


def is_call_dps_packed(func_name: str, args=None) -> CallPattern:
    if args is None:
        args = wildcard()
    elif isinstance(args, (list, tuple)):
        args = TuplePattern(args)
    return is_op("relax.call_dps_packed")(ExternFuncPattern(func_name), args, add_constraint=False)


def is_call_packed(func_name: str, args=None) -> CallPattern:
    if args is None:
        return ExternFuncPattern(func_name)(varg_default_wildcard=True, add_constraint=False)
    return ExternFuncPattern(func_name)(*args)


def make_fused_bias_activation_pattern(op_name: str, with_bias: bool = False,
                                       activation: str | None = None,
                                       allow_reshape: bool = False) -> DFPattern:
    """``op(wc, wc)``, then ``relax.add(that, wc)`` if ``with_bias``, then ``activation(that)``.

    This is the DPL version (one pattern); ``byocc.backends.patterns`` has the version
    returning ``(pattern, annotations)``.
    """
    out = is_op(op_name)(wildcard(), wildcard())
    if with_bias:
        bias = wildcard()
        if allow_reshape:
            reshaped = is_op("relax.reshape")(bias, wildcard(), varg_default_wildcard=True)
            out = is_op("relax.add")(out, reshaped, varg_default_wildcard=True)
        else:
            out = is_op("relax.add")(out, bias)
    if activation:
        return is_op(activation)(out)
    return out
